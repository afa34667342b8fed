//! The "Summary of optimization options": one row per comparison with the
//! gain it credits, as the experiment declares the page made it. (pure)

use super::{ComparisonResult, ConclusionTable, Ranked};
use crate::spec::{Credit, Objective, Spec, SummaryRowDecl};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SummaryRow {
    pub title: String,
    /// The gain in % the row shows; `None` prints "-".
    pub shown: Option<f64>,
    /// What the comparison's own data gives: its best candidate over its baseline.
    pub data: Option<Gain>,
    /// Why the row does not show the comparison's data, when it does not.
    pub note: Option<SummaryNote>,
}

/// The best candidate's gain over the baseline of a comparison, in % of the
/// objective: more throughput, or a speedup of the mean latency (1.23x faster: +23%).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Gain {
    pub step: String,
    pub pct: f64,
    /// The gain lies within run-to-run noise (known only with several samples).
    pub within_noise: bool,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SummaryNote {
    /// The row credits the conclusion's gain on `workload`, not the comparison's.
    CreditsConclusion { pct: f64, workload: String },
    /// A gain at or below the declared threshold prints as "-".
    BelowThreshold { threshold_pct: f64 },
    /// A gain within run-to-run noise prints as "-".
    WithinNoise,
    /// No declared comparison measures the row.
    NoData,
}

/// Each declared row (or one per comparison), with what it shows and why.
pub fn summary(
    spec: &Spec,
    comparisons: &[ComparisonResult],
    conclusion: Option<&ConclusionTable>,
) -> Vec<SummaryRow> {
    let declared: Vec<SummaryRowDecl> = spec.report.summary.clone().unwrap_or_else(|| {
        spec.comparisons
            .iter()
            .map(|c| SummaryRowDecl {
                title: c.title.clone(),
                comparison: None,
                credits: Credit::Comparison,
                threshold_pct: 0.0,
                printed: Vec::new(),
                optimized: None,
                per_gpu: false,
            })
            .collect()
    });
    declared
        .into_iter()
        .map(|row| {
            let title = row.comparison.as_deref().unwrap_or(&row.title);
            let comparison = comparisons.iter().find(|c| c.title == title);
            let data = comparison.and_then(|c| best_gain(c, spec.objective, row.per_gpu));
            let credited = match row.credits {
                Credit::Comparison => data.as_ref().map(|g| g.pct),
                Credit::Conclusion => conclusion.and_then(|t| {
                    // The comparison's workload; another workload's gain is not this row's.
                    let row = match comparison {
                        Some(c) => t.rows.iter().find(|r| r.workload == c.workload)?,
                        None => t.rows.first()?,
                    };
                    match spec.objective {
                        Objective::Throughput => Some(row.delta_pct),
                        Objective::Latency => {
                            Some(latency_gain_pct(row.base_latency_ms?, row.opt_latency_ms?))
                        }
                    }
                }),
            };
            let (shown, note) = match (credited, &data) {
                (None, _) if comparison.is_none() => (None, Some(SummaryNote::NoData)),
                (None, _) => (None, None),
                (Some(pct), _) if pct <= 0.0 => (None, None),
                (Some(_), Some(g)) if g.within_noise && row.credits == Credit::Comparison => {
                    (None, Some(SummaryNote::WithinNoise))
                }
                (Some(pct), _) if pct <= row.threshold_pct => (
                    None,
                    Some(SummaryNote::BelowThreshold {
                        threshold_pct: row.threshold_pct,
                    }),
                ),
                (Some(pct), _) => {
                    let note = (row.credits == Credit::Conclusion).then(|| {
                        SummaryNote::CreditsConclusion {
                            pct,
                            workload: comparison
                                .map(|c| c.workload.clone())
                                .or(conclusion
                                    .and_then(|t| t.rows.first().map(|r| r.workload.clone())))
                                .unwrap_or_default(),
                        }
                    });
                    (Some(pct), note)
                }
            };
            SummaryRow {
                title: row.title,
                shown,
                data,
                note,
            }
        })
        .collect()
}

/// A speedup as a gain in %: 1.23x faster is +23%, 1.25x slower is −20%.
fn latency_gain_pct(base_ms: f64, new_ms: f64) -> f64 {
    (super::speedup(base_ms, new_ms) - 1.0) * 100.0
}

/// The best candidate against the baseline, when both have results; per GPU
/// when asked (the best then the one with most throughput per GPU).
fn best_gain(c: &ComparisonResult, objective: Objective, per_gpu: bool) -> Option<Gain> {
    let base = c.ranking.iter().find(|r| r.is_baseline)?;
    let candidates = c.ranking.iter().filter(|r| !r.is_baseline);
    let best = if per_gpu && objective == Objective::Throughput {
        candidates.max_by(|a, b| a.per_gpu().total_cmp(&b.per_gpu()))?
    } else {
        c.ranking.iter().find(|r| !r.is_baseline)?
    };
    if objective == Objective::Latency {
        let (base_ms, best_ms) = (base.latency_ms?, best.latency_ms?);
        return Some(Gain {
            step: best.step.clone(),
            pct: latency_gain_pct(base_ms, best_ms),
            within_noise: super::within_noise(
                base_ms,
                base.latency_sd.unwrap_or(f64::NAN),
                base.n,
                best_ms,
                best.latency_sd.unwrap_or(f64::NAN),
                best.n,
            )
            .unwrap_or(false),
        });
    }
    // Spreads are per instance; the compared number's scales with it.
    let scale = |r: &Ranked| {
        let gpus = if per_gpu {
            f64::from(r.gpus.max(1))
        } else {
            1.0
        };
        f64::from(r.replicas) / gpus
    };
    let (b, n) = (base.tps * scale(base), best.tps * scale(best));
    let pct = (n - b) / b * 100.0;
    Some(Gain {
        step: best.step.clone(),
        pct,
        within_noise: super::within_noise(
            b,
            base.tps_sd.map_or(f64::NAN, |sd| sd * scale(base)),
            base.n,
            n,
            best.tps_sd.map_or(f64::NAN, |sd| sd * scale(best)),
            best.n,
        )
        .unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::Ranked;

    fn ranked(step: &str, tps: f64, sd: Option<f64>, baseline: bool) -> Ranked {
        Ranked {
            step: step.into(),
            label: step.into(),
            replicas: 1,
            gpus: 1,
            tps,
            tps_sd: sd,
            n: 3,
            tpot_ms: 1.0,
            latency_ms: Some(100_000.0 / tps),
            latency_sd: None,
            is_baseline: baseline,
        }
    }

    fn comparison(ranking: Vec<Ranked>) -> ComparisonResult {
        ComparisonResult {
            title: "Batching".into(),
            workload: "w".into(),
            ranking,
            failed: Vec::new(),
            missing: Vec::new(),
        }
    }

    #[test]
    fn the_best_candidate_is_credited_unless_it_is_noise() {
        let clear = comparison(vec![
            ranked("b", 110.0, Some(1.0), false),
            ranked("a", 100.0, Some(1.0), true),
        ]);
        let gain = best_gain(&clear, Objective::Throughput, false).unwrap();
        assert_eq!((gain.step.as_str(), gain.pct.round()), ("b", 10.0));
        assert!(!gain.within_noise);
        let noisy = comparison(vec![
            ranked("b", 101.0, Some(2.0), false),
            ranked("a", 100.0, Some(2.0), true),
        ]);
        assert!(
            best_gain(&noisy, Objective::Throughput, false)
                .unwrap()
                .within_noise
        );
        let single = comparison(vec![
            ranked("b", 101.0, None, false),
            ranked("a", 100.0, None, true),
        ]);
        assert!(
            !best_gain(&single, Objective::Throughput, false)
                .unwrap()
                .within_noise,
            "one sample: noise unknown"
        );
        let baseline_wins = comparison(vec![
            ranked("a", 100.0, None, true),
            ranked("b", 90.0, None, false),
        ]);
        assert!(
            best_gain(&baseline_wins, Objective::Throughput, false)
                .unwrap()
                .pct
                < 0.0
        );
    }

    #[test]
    fn under_the_latency_objective_the_gain_is_the_speedup() {
        // 1000 → 800 ms: 1.25x faster, credited as +25%.
        let c = comparison(vec![
            ranked("fast", 125.0, None, false),
            ranked("base", 100.0, None, true),
        ]);
        let gain = best_gain(&c, Objective::Latency, false).unwrap();
        assert_eq!((gain.step.as_str(), gain.pct.round()), ("fast", 25.0));
        assert_eq!(latency_gain_pct(1000.0, 1250.0).round(), -20.0);
    }

    #[test]
    fn a_per_gpu_row_credits_the_best_candidate_per_gpu() {
        // gpt-oss-120b-h100: TP4 has the most throughput, TP2 the most per GPU.
        let on = |step: &str, tps: f64, gpus: u32, baseline: bool| Ranked {
            gpus,
            ..ranked(step, tps, None, baseline)
        };
        let c = comparison(vec![
            on("tp4", 23759.49, 4, false),
            on("tp2", 16042.19, 2, false),
            on("one", 6325.41, 1, true),
        ]);
        let whole = best_gain(&c, Objective::Throughput, false).unwrap();
        assert_eq!(whole.step, "tp4");
        let per_gpu = best_gain(&c, Objective::Throughput, true).unwrap();
        assert_eq!(per_gpu.step, "tp2");
        assert_eq!(format!("{:.1}", per_gpu.pct), "26.8");
    }
}
