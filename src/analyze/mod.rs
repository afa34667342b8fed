//! Records of runs → rankings per comparison and the baseline-vs-optimized
//! table, computed with polars. (pure)

mod checks;
pub mod curves;
mod diff;
mod latency;
mod noise;
pub mod page;
mod records;
pub mod search;
mod stored;
mod summary;

use polars::prelude::*;

pub use checks::{Check, Verdict, checks};
pub use diff::{Delta, DeltaVerdict, deltas, higher_is_better};
pub use latency::mean_latency_ms;
pub use noise::{NoiseFloors, default_floor};
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
pub fn analyze(spec: &Spec, mut runs: Vec<RunRecord>) -> Result<Analysis, PolarsError> {
    for run in &mut runs {
        if let Some(w) = spec.workload(&run.workload) {
            run.load = RunLoad::of(w);
        }
        if let Some(step) = spec.step(&run.step) {
            run.point = SweepPoint::of(step);
        }
    }
    let frame = runs_frame(spec, &runs)?;
    let comparisons = spec
        .comparisons
        .iter()
        .map(|c| {
            let steps: Vec<&str> = std::iter::once(c.baseline.as_str())
                .chain(c.candidates.iter().map(String::as_str))
                .collect();
            rank(
                spec,
                &frame,
                &runs,
                &c.title,
                &c.baseline,
                &steps,
                &c.workload,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let conclusion = match &spec.conclusion {
        Some(c) => conclusion(spec, &frame, &c.baseline, &c.optimized)?,
        None => None,
    };
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
    Ok(Analysis {
        comparisons,
        conclusion,
        summary,
        checks,
        runs,
        scope: None,
        page,
        searches: Vec::new(),
    })
}

/// One row per successful run: step, workload, workload order, replicas, TPS,
/// TPOT, mean latency (under the definitions of the experiment's harness;
/// NaN where unknown).
fn runs_frame(spec: &Spec, runs: &[RunRecord]) -> PolarsResult<DataFrame> {
    let set = spec.harness.kind.metric_set();
    let (tps, tpot) = (set.tps(), set.tpot());
    // A run is ranked when it has the number the objective ranks by.
    let ok: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| match spec.objective {
            Objective::Throughput => r.metrics.contains_key(tps),
            Objective::Latency => mean_latency_ms(&r.metrics, set).is_some(),
        })
        .collect();
    let order = |w: &str| {
        spec.workloads
            .iter()
            .position(|x| x.name.value == w)
            .unwrap_or(usize::MAX) as u32
    };
    let replicas = |s: &str| spec.step(s).map_or(1, |s| s.report_factor());
    let gpus = |s: &str| spec.step(s).map_or(1, |s| s.gpus * s.replicas);
    df!(
        "step" => ok.iter().map(|r| r.step.clone()).collect::<Vec<_>>(),
        "workload" => ok.iter().map(|r| r.workload.clone()).collect::<Vec<_>>(),
        "order" => ok.iter().map(|r| order(&r.workload)).collect::<Vec<_>>(),
        "replicas" => ok.iter().map(|r| replicas(&r.step)).collect::<Vec<_>>(),
        "gpus" => ok.iter().map(|r| gpus(&r.step)).collect::<Vec<_>>(),
        "tps" => ok.iter().map(|r| r.metrics.get(tps).copied().unwrap_or(f64::NAN)).collect::<Vec<_>>(),
        "tps_sd" => ok.iter().map(|r| r.sd.get(tps).copied().unwrap_or(f64::NAN)).collect::<Vec<_>>(),
        "n" => ok.iter().map(|r| r.samples as u32).collect::<Vec<_>>(),
        "tpot" => ok.iter().map(|r| r.metrics.get(tpot).copied().unwrap_or(f64::NAN)).collect::<Vec<_>>(),
        "latency" => ok.iter().map(|r| mean_latency_ms(&r.metrics, set).unwrap_or(f64::NAN)).collect::<Vec<_>>(),
        "latency_sd" => ok.iter().map(|r| latency::mean_latency_sd(&r.sd, set).unwrap_or(f64::NAN)).collect::<Vec<_>>(),
    )
}

fn rank(
    spec: &Spec,
    frame: &DataFrame,
    runs: &[RunRecord],
    title: &str,
    baseline: &str,
    steps: &[&str],
    workload: &str,
) -> PolarsResult<ComparisonResult> {
    let in_comparison = steps
        .iter()
        .fold(lit(false), |acc, s| acc.or(col("step").eq(lit(*s))));
    let ranked = frame
        .clone()
        .lazy()
        .filter(col("workload").eq(lit(workload)).and(in_comparison))
        .with_column((col("tps") * col("replicas").cast(DataType::Float64)).alias("aggregate"))
        .sort(
            [objective_column(spec.objective)],
            SortMultipleOptions::default()
                .with_order_descending(spec.objective == Objective::Throughput)
                .with_maintain_order(true),
        )
        .collect()?;
    let step_col = ranked.column("step")?.str()?.clone();
    let replicas = ranked.column("replicas")?.u32()?.clone();
    let gpus = ranked.column("gpus")?.u32()?.clone();
    let tps = ranked.column("tps")?.f64()?.clone();
    let tps_sd = ranked.column("tps_sd")?.f64()?.clone();
    let n = ranked.column("n")?.u32()?.clone();
    let tpot = ranked.column("tpot")?.f64()?.clone();
    let latency = ranked.column("latency")?.f64()?.clone();
    let latency_sd = ranked.column("latency_sd")?.f64()?.clone();
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
    let ranking: Vec<Ranked> = (0..ranked.height())
        .map(|i| {
            let step = step_col.get(i).unwrap_or_default().to_owned();
            Ranked {
                label: label(&step),
                is_baseline: step == baseline,
                step,
                replicas: replicas.get(i).unwrap_or(1),
                gpus: gpus.get(i).unwrap_or(1),
                tps: tps.get(i).unwrap_or(f64::NAN),
                tps_sd: tps_sd.get(i).filter(|v| !v.is_nan()),
                n: n.get(i).unwrap_or(1),
                tpot_ms: tpot.get(i).unwrap_or(f64::NAN),
                latency_ms: latency.get(i).filter(|v| !v.is_nan()),
                latency_sd: latency_sd.get(i).filter(|v| !v.is_nan()),
            }
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
    Ok(ComparisonResult {
        title: title.to_owned(),
        workload: workload.to_owned(),
        ranking,
        failed,
        missing,
    })
}

fn conclusion(
    spec: &Spec,
    frame: &DataFrame,
    baseline: &str,
    optimized: &str,
) -> PolarsResult<Option<ConclusionTable>> {
    let side = |step: &str, suffix: &str| {
        frame
            .clone()
            .lazy()
            .filter(col("step").eq(lit(step)))
            .select([
                col("workload"),
                col("order"),
                (col("tps") * col("replicas").cast(DataType::Float64))
                    .alias(format!("aggregate{suffix}")),
                col("tps").alias(format!("tps{suffix}")),
                (col("tps_sd") * col("replicas").cast(DataType::Float64))
                    .alias(format!("sd{suffix}")),
                col("n").alias(format!("n{suffix}")),
                col("tpot").alias(format!("tpot{suffix}")),
                col("latency").alias(format!("latency{suffix}")),
                col("latency_sd").alias(format!("latency_sd{suffix}")),
            ])
    };
    let joined = side(baseline, "_base")
        .join(
            side(optimized, "_opt").select([
                col("workload"),
                col("aggregate_opt"),
                col("tps_opt"),
                col("sd_opt"),
                col("n_opt"),
                col("tpot_opt"),
                col("latency_opt"),
                col("latency_sd_opt"),
            ]),
            [col("workload")],
            [col("workload")],
            JoinArgs::new(JoinType::Inner),
        )
        .with_column(
            ((col("aggregate_opt") - col("aggregate_base")) / col("aggregate_base") * lit(100.0))
                .alias("delta"),
        )
        .sort(["order"], SortMultipleOptions::default())
        .collect()?;
    if joined.height() == 0 {
        return Ok(None);
    }
    let get = |name: &str| -> PolarsResult<Vec<f64>> {
        let values = joined.column(name)?.f64()?.clone();
        Ok((0..values.len())
            .map(|i| values.get(i).unwrap_or(f64::NAN))
            .collect())
    };
    let names = joined.column("workload")?.str()?.clone();
    let counts = |name: &str| -> PolarsResult<Vec<u32>> {
        let values = joined.column(name)?.u32()?.clone();
        Ok((0..values.len())
            .map(|i| values.get(i).unwrap_or(1))
            .collect())
    };
    let (base_n, opt_n) = (counts("n_base")?, counts("n_opt")?);
    let (base_sd, opt_sd) = (get("sd_base")?, get("sd_opt")?);
    let (base_agg, opt_agg) = (get("aggregate_base")?, get("aggregate_opt")?);
    let (base_lat, opt_lat) = (get("latency_base")?, get("latency_opt")?);
    let (base_lat_sd, opt_lat_sd) = (get("latency_sd_base")?, get("latency_sd_opt")?);
    let workloads: Vec<String> = (0..names.len())
        .map(|i| names.get(i).unwrap_or_default().to_owned())
        .collect();
    let (base_tps, base_tpot, opt_tps, opt_tpot, delta) = (
        get("tps_base")?,
        get("tpot_base")?,
        get("tps_opt")?,
        get("tpot_opt")?,
        get("delta")?,
    );
    let rows = workloads
        .into_iter()
        .enumerate()
        .map(|(i, workload)| ConclusionRow {
            workload,
            base_tps: base_tps[i],
            base_tpot_ms: base_tpot[i],
            opt_tps: opt_tps[i],
            opt_tpot_ms: opt_tpot[i],
            base_latency_ms: known(base_lat[i]),
            opt_latency_ms: known(opt_lat[i]),
            delta_pct: delta[i],
            base_n: base_n[i],
            opt_n: opt_n[i],
            within_noise: match spec.objective {
                Objective::Throughput => within_noise(
                    base_agg[i],
                    base_sd[i],
                    base_n[i],
                    opt_agg[i],
                    opt_sd[i],
                    opt_n[i],
                ),
                Objective::Latency => within_noise(
                    base_lat[i],
                    base_lat_sd[i],
                    base_n[i],
                    opt_lat[i],
                    opt_lat_sd[i],
                    opt_n[i],
                ),
            },
        })
        .collect();
    let replicas = |s: &str| spec.step(s).map_or(1, |s| s.report_factor());
    Ok(Some(ConclusionTable {
        baseline: baseline.to_owned(),
        optimized: optimized.to_owned(),
        baseline_replicas: replicas(baseline),
        optimized_replicas: replicas(optimized),
        rows,
    }))
}

/// The column a comparison ranks by: the aggregate throughput, or the mean latency.
fn objective_column(objective: Objective) -> &'static str {
    match objective {
        Objective::Throughput => "aggregate",
        Objective::Latency => "latency",
    }
}

/// A number, unless the frame marks it unknown (NaN).
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
