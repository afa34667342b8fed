//! Records of runs → rankings per comparison and the baseline-vs-optimized
//! table. (pure)

mod checks;
pub mod curves;
mod diff;
mod latency;
mod noise;
mod outranked;
pub mod page;
mod records;
pub mod search;
mod stored;
mod summary;

pub use checks::{Check, Verdict, checks};
pub use diff::{Delta, DeltaVerdict, deltas, higher_is_better};
pub use latency::mean_latency_ms;
pub use noise::{NoiseFloors, default_floor};
pub use outranked::{Noise, Outranked, outranked};
pub use records::{
    RunLoad, RunRecord, SloResult, Source, SweepPoint, from_expectations, from_store, of_samples,
};
pub use stored::{Stored, StoredSample, samples_of};
pub use summary::{Gain, SummaryNote, SummaryRow, summary};

use crate::spec::{Objective, Spec};

/// Everything a report shows, computed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Analysis {
    pub comparisons: Vec<ComparisonResult>,
    pub conclusion: Option<ConclusionTable>,
    pub summary: Vec<SummaryRow>,
    /// Published numbers beside stored ones (none when the records are the published ones).
    pub checks: Vec<Check>,
    pub runs: Vec<RunRecord>,
    /// Whose results these are, for a report from the store (`None`: the
    /// published numbers); set by the caller that chose them.
    pub scope: Option<Scope>,
    /// The page reproduced from its own numbers, when the records are the
    /// published ones and the experiment records what the page printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<page::PageReproduction>,
    /// Each configuration's search of the largest load within an SLO, best
    /// first; set by the caller that knows the store.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<search::SearchResult>,
}

/// The runtime a report's results were run under, and the `--max-prompts`
/// cap of its workloads: a capped run is a smoke test, not the study.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Scope {
    pub runtime: String,
    pub max_prompts: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ComparisonResult {
    pub title: String,
    pub workload: String,
    /// Best first under the experiment's objective; only steps with a result
    /// on the workload.
    pub ranking: Vec<Ranked>,
    /// Steps that failed on the workload, with their error.
    pub failed: Vec<(String, String)>,
    /// Steps with no result yet.
    pub missing: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Ranked {
    pub step: String,
    pub label: String,
    /// What `tps` is multiplied by: the replicas when one was measured, else 1.
    pub replicas: u32,
    /// GPUs the whole configuration uses (all replicas).
    pub gpus: u32,
    /// Total token throughput of one instance (the mean over samples).
    pub tps: f64,
    /// Its sample standard deviation, with several samples.
    pub tps_sd: Option<f64>,
    /// Samples behind `tps`.
    pub n: u32,
    pub tpot_ms: f64,
    /// Mean end-to-end latency per request (see [`mean_latency_ms`]), when known.
    pub latency_ms: Option<f64>,
    /// Its sample standard deviation, where it was measured over several samples.
    pub latency_sd: Option<f64>,
    pub is_baseline: bool,
}

impl Ranked {
    /// Throughput of all replicas: the number compared.
    pub fn aggregate(&self) -> f64 {
        self.tps * f64::from(self.replicas)
    }

    /// Throughput per GPU, so TP8 and 2×TP4 compare fairly.
    pub fn per_gpu(&self) -> f64 {
        self.aggregate() / f64::from(self.gpus.max(1))
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConclusionTable {
    pub baseline: String,
    pub optimized: String,
    pub baseline_replicas: u32,
    pub optimized_replicas: u32,
    pub rows: Vec<ConclusionRow>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConclusionRow {
    pub workload: String,
    pub base_tps: f64,
    pub base_tpot_ms: f64,
    /// Per instance.
    pub opt_tps: f64,
    pub opt_tpot_ms: f64,
    /// Mean end-to-end latency per request of each side, when known.
    pub base_latency_ms: Option<f64>,
    pub opt_latency_ms: Option<f64>,
    /// (optimized aggregate − baseline aggregate) / baseline aggregate × 100.
    pub delta_pct: f64,
    /// Samples behind each side.
    pub base_n: u32,
    pub opt_n: u32,
    /// Whether the difference in the objective lies within run-to-run noise;
    /// `None` when a side has a single sample, so the noise is unknown.
    pub within_noise: Option<bool>,
}

/// Ranks every comparison and builds the conclusion table.
pub fn analyze(spec: &Spec, mut runs: Vec<RunRecord>) -> Analysis {
    for run in &mut runs {
        if let Some(w) = spec.workload(&run.workload) {
            run.load = RunLoad::of(w);
        }
        if let Some(step) = spec.step(&run.step) {
            run.point = SweepPoint::of(step);
        }
    }
    let rows = ranked_rows(spec, &runs);
    let comparisons = spec
        .comparisons
        .iter()
        .map(|c| {
            let steps: Vec<&str> = std::iter::once(c.baseline.as_str())
                .chain(c.candidates.iter().map(String::as_str))
                .collect();
            rank(
                spec,
                &rows,
                &runs,
                &c.title,
                &c.baseline,
                &steps,
                &c.workload,
            )
        })
        .collect::<Vec<_>>();
    let conclusion = spec
        .conclusion
        .as_ref()
        .and_then(|c| conclusion(spec, &rows, &c.baseline, &c.optimized));
    let summary = summary(spec, &comparisons, conclusion.as_ref());
    let from_store = runs.iter().any(|r| r.key.is_some());
    let checks = if from_store {
        checks(spec, &runs, spec.report.tolerance_pct, None)
    } else {
        Vec::new()
    };
    let page = Some(page::reproduce(spec, &runs, &comparisons, &summary)).filter(|p| {
        !from_store
            && (p.conclusion.is_some()
                || p.summary.is_some()
                || !p.sentences.is_empty()
                || !p.deltas.is_empty())
    });
    Analysis {
        comparisons,
        conclusion,
        summary,
        checks,
        runs,
        scope: None,
        page,
        searches: Vec::new(),
    }
}

/// A successful run's numbers as a comparison ranks them (under the
/// definitions of the experiment's harness; NaN where unknown).
struct Row<'a> {
    step: &'a str,
    workload: &'a str,
    /// The workload's declared position.
    order: usize,
    replicas: u32,
    gpus: u32,
    tps: f64,
    tps_sd: f64,
    n: u32,
    tpot: f64,
    latency: f64,
    latency_sd: f64,
}

impl Row<'_> {
    /// Throughput of all replicas.
    fn aggregate(&self) -> f64 {
        self.tps * f64::from(self.replicas)
    }

    /// The number a comparison ranks by: the aggregate throughput, or the mean latency.
    fn objective(&self, objective: Objective) -> f64 {
        match objective {
            Objective::Throughput => self.aggregate(),
            Objective::Latency => self.latency,
        }
    }
}

/// One row per run with the number the objective ranks by (tens of rows:
/// one per step and workload).
fn ranked_rows<'a>(spec: &Spec, runs: &'a [RunRecord]) -> Vec<Row<'a>> {
    let set = spec.harness.kind.metric_set();
    let (tps, tpot) = (set.tps(), set.tpot());
    let order = |w: &str| {
        spec.workloads
            .iter()
            .position(|x| x.name.value == w)
            .unwrap_or(usize::MAX)
    };
    let replicas = |s: &str| spec.step(s).map_or(1, |s| s.report_factor());
    let gpus = |s: &str| spec.step(s).map_or(1, |s| s.gpus * s.replicas);
    runs.iter()
        .filter(|r| match spec.objective {
            Objective::Throughput => r.metrics.contains_key(tps),
            Objective::Latency => mean_latency_ms(&r.metrics, set).is_some(),
        })
        .map(|r| Row {
            step: &r.step,
            workload: &r.workload,
            order: order(&r.workload),
            replicas: replicas(&r.step),
            gpus: gpus(&r.step),
            tps: r.metrics.get(tps).copied().unwrap_or(f64::NAN),
            tps_sd: r.sd.get(tps).copied().unwrap_or(f64::NAN),
            n: r.samples as u32,
            tpot: r.metrics.get(tpot).copied().unwrap_or(f64::NAN),
            latency: mean_latency_ms(&r.metrics, set).unwrap_or(f64::NAN),
            latency_sd: latency::mean_latency_sd(&r.sd, set).unwrap_or(f64::NAN),
        })
        .collect()
}

/// Orders two numbers, an unknown one (NaN) above every other.
fn by_value(a: f64, b: f64) -> std::cmp::Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

fn rank(
    spec: &Spec,
    rows: &[Row],
    runs: &[RunRecord],
    title: &str,
    baseline: &str,
    steps: &[&str],
    workload: &str,
) -> ComparisonResult {
    let mut ranked: Vec<&Row> = rows
        .iter()
        .filter(|r| r.workload == workload && steps.contains(&r.step))
        .collect();
    // Stable: rows that tie keep the order of the runs.
    ranked.sort_by(|a, b| {
        let order = by_value(a.objective(spec.objective), b.objective(spec.objective));
        match spec.objective {
            Objective::Throughput => order.reverse(),
            Objective::Latency => order,
        }
    });
    let engines: Vec<&str> = steps
        .iter()
        .filter_map(|s| spec.step(s).map(|s| s.engine.display_name()))
        .collect();
    let label = |step: &str| match spec.step(step) {
        Some(s)
            if engines
                .iter()
                .filter(|e| **e == s.engine.display_name())
                .count()
                == 1 =>
        {
            s.engine.display_name().to_owned()
        }
        _ => step.to_owned(),
    };
    let ranking: Vec<Ranked> = ranked
        .iter()
        .map(|row| Ranked {
            label: label(row.step),
            is_baseline: row.step == baseline,
            step: row.step.to_owned(),
            replicas: row.replicas,
            gpus: row.gpus,
            tps: row.tps,
            tps_sd: known(row.tps_sd),
            n: row.n,
            tpot_ms: row.tpot,
            latency_ms: known(row.latency),
            latency_sd: known(row.latency_sd),
        })
        .collect();
    let mut failed = Vec::new();
    let mut missing = Vec::new();
    for step in steps {
        if ranking.iter().any(|r| r.step == *step) {
            continue;
        }
        match runs
            .iter()
            .find(|r| r.step == *step && r.workload == workload)
        {
            Some(RunRecord {
                failure: Some(error),
                ..
            }) => failed.push((step.to_string(), error.clone())),
            _ => missing.push(step.to_string()),
        }
    }
    ComparisonResult {
        title: title.to_owned(),
        workload: workload.to_owned(),
        ranking,
        failed,
        missing,
    }
}

/// The baseline beside the optimized step on each workload both ran, in
/// declared order; `None` when they share none.
fn conclusion(
    spec: &Spec,
    rows: &[Row],
    baseline: &str,
    optimized: &str,
) -> Option<ConclusionTable> {
    let mut pairs: Vec<(&Row, &Row)> = rows
        .iter()
        .filter(|base| base.step == baseline)
        .flat_map(|base| {
            rows.iter()
                .filter(move |opt| opt.step == optimized && opt.workload == base.workload)
                .map(move |opt| (base, opt))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    pairs.sort_by_key(|(base, _)| base.order);
    let rows = pairs
        .into_iter()
        .map(|(base, opt)| {
            let (base_agg, opt_agg) = (base.aggregate(), opt.aggregate());
            let spread = |row: &Row| row.tps_sd * f64::from(row.replicas);
            ConclusionRow {
                workload: base.workload.to_owned(),
                base_tps: base.tps,
                base_tpot_ms: base.tpot,
                opt_tps: opt.tps,
                opt_tpot_ms: opt.tpot,
                base_latency_ms: known(base.latency),
                opt_latency_ms: known(opt.latency),
                delta_pct: percent_change(base_agg, opt_agg),
                base_n: base.n,
                opt_n: opt.n,
                within_noise: match spec.objective {
                    Objective::Throughput => {
                        within_noise(base_agg, spread(base), base.n, opt_agg, spread(opt), opt.n)
                    }
                    Objective::Latency => within_noise(
                        base.latency,
                        base.latency_sd,
                        base.n,
                        opt.latency,
                        opt.latency_sd,
                        opt.n,
                    ),
                },
            }
        })
        .collect();
    let replicas = |s: &str| spec.step(s).map_or(1, |s| s.report_factor());
    Some(ConclusionTable {
        baseline: baseline.to_owned(),
        optimized: optimized.to_owned(),
        baseline_replicas: replicas(baseline),
        optimized_replicas: replicas(optimized),
        rows,
    })
}

/// (after − before) / before, in %.
pub(crate) fn percent_change(before: f64, after: f64) -> f64 {
    (after - before) / before * 100.0
}

/// A number, unless it is unknown (NaN).
fn known(value: f64) -> Option<f64> {
    (!value.is_nan()).then_some(value)
}

/// How many times faster `new` serves a request than `base` (> 1: faster),
/// from mean latencies.
pub fn speedup(base_ms: f64, new_ms: f64) -> f64 {
    base_ms / new_ms
}

/// Whether two means differ by no more than run-to-run noise: by at most
/// 2·√(sd_a²/n_a + sd_b²/n_b), the half-width of an approximate 95% interval
/// of their difference. `None` when a spread is unknown (one sample, NaN).
pub(crate) fn within_noise(
    a: f64,
    sd_a: f64,
    n_a: u32,
    b: f64,
    sd_b: f64,
    n_b: u32,
) -> Option<bool> {
    if sd_a.is_nan() || sd_b.is_nan() {
        return None;
    }
    let var = |sd: f64, n: u32| sd * sd / f64::from(n);
    Some((b - a).abs() <= 2.0 * (var(sd_a, n_a) + var(sd_b, n_b)).sqrt())
}
