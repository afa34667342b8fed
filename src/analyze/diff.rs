//! Before and after of the same runs (two lockfiles): the change of each
//! metric, and whether it is more than noise: the spread of the samples
//! where both sides have several, else the metric's noise floor. (pure)

use super::{NoiseFloors, RunRecord};
use super::{percent_change, within_noise};

/// One metric of one run under two lockfiles.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Delta {
    pub step: String,
    pub workload: String,
    pub metric: String,
    pub before: f64,
    /// Sample standard deviation, with several samples.
    pub before_sd: Option<f64>,
    pub before_n: usize,
    pub after: f64,
    pub after_sd: Option<f64>,
    pub after_n: usize,
    /// (after − before) / before, in %.
    pub delta_pct: f64,
    pub verdict: DeltaVerdict,
    /// The floor applied, in %, when a side has no noise estimate (one
    /// sample): a change within it is noise.
    pub noise_floor_pct: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeltaVerdict {
    Better,
    Worse,
    /// The difference is within run-to-run noise: the spread of both
    /// sides, or the metric's noise floor where a side has one sample.
    WithinNoise,
    Unchanged,
}

impl DeltaVerdict {
    pub fn label(self) -> &'static str {
        match self {
            Self::Better => "better",
            Self::Worse => "worse",
            Self::WithinNoise => "within noise",
            Self::Unchanged => "unchanged",
        }
    }
}

impl Delta {
    /// A change for the worse by more than `threshold_pct` and more than noise.
    pub fn regresses_beyond(&self, threshold_pct: f64) -> bool {
        self.verdict == DeltaVerdict::Worse && self.delta_pct.abs() > threshold_pct
    }

    /// `worse`, or `within noise (n=1: no noise estimate, floor 20% applied)`.
    pub fn verdict_text(&self) -> String {
        match self.noise_floor_pct {
            Some(floor) if self.verdict != DeltaVerdict::Unchanged => format!(
                "{} (n={}: no noise estimate, floor {floor}% applied)",
                self.verdict.label(),
                self.before_n.min(self.after_n)
            ),
            _ => self.verdict.label().to_owned(),
        }
    }
}

/// Throughputs are better higher; times (`_ms`) lower.
pub fn higher_is_better(metric: &str) -> bool {
    metric.contains("throughput") || metric.contains("per_second") || metric.contains("goodput")
}

/// The change of each of `metrics` for each (before, after) pair of the same
/// run; a metric either side lacks is left out. Where a side has no spread,
/// a change within the metric's floor in `floors` is noise.
pub fn deltas(
    pairs: &[(RunRecord, RunRecord)],
    metrics: &[String],
    floors: &NoiseFloors,
) -> Vec<Delta> {
    pairs
        .iter()
        .flat_map(|(before, after)| {
            metrics.iter().filter_map(move |metric| {
                let (b, a) = (before.metrics.get(metric)?, after.metrics.get(metric)?);
                Some((before, after, metric.as_str(), *b, *a))
            })
        })
        .map(|(before, after, metric, b, a)| {
            let pct = percent_change(b, a);
            let sd = |r: &RunRecord| r.sd.get(metric).copied();
            let noise = match (sd(before), sd(after)) {
                (Some(sd_b), Some(sd_a)) => within_noise(
                    b,
                    sd_b,
                    before.samples as u32,
                    a,
                    sd_a,
                    after.samples as u32,
                ),
                _ => None,
            };
            // No noise estimate: the floor decides.
            let floor = noise.is_none().then(|| floors.of(metric));
            let noise = noise.or(floor.map(|floor| pct.abs() <= floor));
            let verdict = if a == b {
                DeltaVerdict::Unchanged
            } else if noise == Some(true) {
                DeltaVerdict::WithinNoise
            } else if (a > b) == higher_is_better(metric) {
                DeltaVerdict::Better
            } else {
                DeltaVerdict::Worse
            };
            Delta {
                step: after.step.clone(),
                workload: after.workload.clone(),
                metric: metric.to_owned(),
                before: b,
                before_sd: sd(before),
                before_n: before.samples,
                after: a,
                after_sd: sd(after),
                after_n: after.samples,
                delta_pct: pct,
                verdict,
                noise_floor_pct: floor,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn record(tps: f64, tpot: f64, sd: Option<(f64, f64)>, n: usize) -> RunRecord {
        RunRecord {
            step: "vllm".into(),
            workload: "chat".into(),
            load: Default::default(),
            point: Default::default(),
            slo: None,
            key: None,
            source: None,
            metrics: BTreeMap::from([
                ("total_token_throughput".into(), tps),
                ("mean_tpot_ms".into(), tpot),
            ]),
            sd: sd
                .map(|(a, b)| {
                    BTreeMap::from([
                        ("total_token_throughput".into(), a),
                        ("mean_tpot_ms".into(), b),
                    ])
                })
                .unwrap_or_default(),
            samples: n,
            signers: BTreeMap::new(),
            environment: None,
            failure: None,
            warnings: vec![],
            telemetry: None,
        }
    }

    #[test]
    fn each_metric_is_judged_in_its_own_direction_and_against_noise() {
        let metrics = [
            "total_token_throughput".to_owned(),
            "mean_tpot_ms".into(),
            "mean_ttft_ms".into(),
        ];
        let one = deltas(
            &[(record(1000.0, 20.0, None, 1), record(1100.0, 22.0, None, 1))],
            &metrics,
            &NoiseFloors::default(),
        );
        assert_eq!(one.len(), 2, "a metric neither side has is left out");
        assert!((one[0].delta_pct - 10.0).abs() < 1e-9);
        assert_eq!(
            one[0].verdict,
            DeltaVerdict::Better,
            "more tokens/s is better"
        );
        assert_eq!(
            one[1].verdict,
            DeltaVerdict::Worse,
            "a longer TPOT is worse"
        );
        assert!(one[1].regresses_beyond(5.0) && !one[1].regresses_beyond(10.0));

        // 3 samples each with sd 40: 2·√(40²/3·2) ≈ 65 > 50, so +5% is noise.
        let noisy = deltas(
            &[(
                record(1000.0, 20.0, Some((40.0, 0.1)), 3),
                record(1050.0, 20.0, Some((40.0, 0.1)), 3),
            )],
            &metrics,
            &NoiseFloors::default(),
        );
        assert_eq!(noisy[0].verdict, DeltaVerdict::WithinNoise);
        assert_eq!(noisy[0].before_sd, Some(40.0));
        assert_eq!(noisy[1].verdict, DeltaVerdict::Unchanged);
        assert!(!noisy[0].regresses_beyond(0.0));
    }

    #[test]
    fn with_one_sample_a_change_within_the_metrics_floor_is_noise() {
        let ttft = |ms: f64| {
            let mut r = record(1000.0, 20.0, None, 1);
            r.metrics.insert("mean_ttft_ms".into(), ms);
            r
        };
        let metrics = ["mean_ttft_ms".to_owned()];
        let judged = |after: f64, floors: &NoiseFloors| {
            deltas(&[(ttft(100.0), ttft(after))], &metrics, floors).remove(0)
        };
        // +18.8% under TTFT's default floor of 20%: noise, no regression.
        let within = judged(118.8, &NoiseFloors::default());
        assert_eq!(within.verdict, DeltaVerdict::WithinNoise);
        assert_eq!(within.noise_floor_pct, Some(20.0));
        assert!(!within.regresses_beyond(5.0));
        assert_eq!(
            within.verdict_text(),
            "within noise (n=1: no noise estimate, floor 20% applied)"
        );
        // Beyond it, a regression.
        let beyond = judged(121.0, &NoiseFloors::default());
        assert_eq!(beyond.verdict, DeltaVerdict::Worse);
        assert!(beyond.regresses_beyond(5.0));
        // A floor set lower makes +18.8% a regression too.
        let mut strict = NoiseFloors::default();
        strict.set("mean_ttft_ms", 10.0);
        let strictly = judged(118.8, &strict);
        assert!(strictly.regresses_beyond(5.0));
        assert_eq!(
            strictly.verdict_text(),
            "worse (n=1: no noise estimate, floor 10% applied)"
        );
    }
}
