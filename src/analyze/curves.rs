//! The numbers behind a study's curves: latency
//! against throughput along each load axis (one line per configuration), the
//! frontier of throughput per GPU against throughput per user, and the TTFT
//! and ITL distributions of the per-request journals. (pure)
//!
//! A curve is made of the runs of one configuration (step) over workloads
//! that are equal except for their load, the `concurrency` cap or the
//! `rate`: such workloads form a [`LoadFamily`], whose points are ordered by
//! that load. A workload equal to no other is a family of one point.

use std::collections::BTreeMap;

use super::search::SearchResult;
use super::stored::{Stored, samples_of};
use super::{RunRecord, Source, mean_latency_ms};
use crate::key::RunKey;
use crate::metrics::{RequestRecord, Sorted};
use crate::spec::{RequestRate, Spec, Workload};

/// Every curve of a study.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Curves {
    pub families: Vec<LoadFamily>,
    /// One per workload with journals, in declared order.
    pub distributions: Vec<Distribution>,
}

impl Curves {
    pub fn is_empty(&self) -> bool {
        self.families.is_empty() && self.distributions.is_empty()
    }
}

/// Workloads equal except for their load, and the runs over them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LoadFamily {
    /// In load order.
    pub workloads: Vec<String>,
    pub axis: LoadAxis,
    /// One per configuration with a result on the family, in declared order.
    pub curves: Vec<LoadCurve>,
}

impl LoadFamily {
    /// The family's name in files and chart ids: its first workload's.
    pub fn id(&self) -> &str {
        &self.workloads[0]
    }

    /// Whether some configuration has two loads or more: a line, not dots.
    pub fn has_load_axis(&self) -> bool {
        self.curves.iter().any(|c| c.points.len() > 1)
    }

    /// The points on the frontier, by throughput per user.
    pub fn frontier(&self) -> Vec<(&LoadCurve, &CurvePoint)> {
        let mut on: Vec<(&LoadCurve, &CurvePoint)> = self
            .curves
            .iter()
            .flat_map(|c| c.points.iter().map(move |p| (c, p)))
            .filter(|(_, p)| p.on_frontier)
            .collect();
        on.sort_by(|a, b| a.1.per_user.total_cmp(&b.1.per_user));
        on
    }
}

/// What tells a family's workloads apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadAxis {
    /// The cap on requests in flight (none: ∞).
    Concurrency,
    /// Requests per second (all at once: ∞).
    Rate,
    /// Both vary: the declared order.
    Declared,
}

impl LoadAxis {
    pub fn title(self) -> &'static str {
        match self {
            Self::Concurrency => "concurrency",
            Self::Rate => "request rate (req/s)",
            Self::Declared => "load (declared order)",
        }
    }
}

/// One configuration along a load axis.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LoadCurve {
    pub step: String,
    /// The step and its engine with version: "tuned (vLLM 0.11.0)".
    pub label: String,
    /// In load order.
    pub points: Vec<CurvePoint>,
}

/// One run: its load, throughput and latencies (means, under the harness's
/// definitions; `NaN` where unknown).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CurvePoint {
    pub workload: String,
    /// The value on the family's load axis (∞ for no cap / all at once).
    pub load: f64,
    /// Total token throughput of all replicas (tok/s).
    pub tps: f64,
    pub ttft_ms: f64,
    pub tpot_ms: f64,
    pub e2el_ms: f64,
    /// `tps` per GPU of the configuration (InferenceX's `tput_per_gpu`).
    pub per_gpu: f64,
    /// Tokens per second a user sees: 1000 / mean TPOT in ms (InferenceX's interactivity).
    pub per_user: f64,
    /// No other point of the family has at least as much of both and more of one.
    pub on_frontier: bool,
}

/// The TTFT and ITL distributions of one workload, one line per configuration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Distribution {
    pub workload: String,
    pub lines: Vec<DistributionLine>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DistributionLine {
    pub step: String,
    pub label: String,
    pub ttft: Cdf,
    pub itl: Cdf,
}

/// An empirical distribution, as its percentiles 0, 1, …, 100 and 99.9
/// (ms; linear interpolation, as vLLM's percentiles), over `n` values.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Cdf {
    pub n: usize,
    pub percentiles: Vec<f64>,
    /// The 99.9th percentile: where a chart's axis may end when the last
    /// gaps are far longer than the rest (NaN without values).
    pub p99_9: f64,
}

impl Cdf {
    pub fn of(values: &[f64]) -> Self {
        // Sorted once: a run's ITLs number one per output token.
        let sorted = Sorted::new(values.to_vec());
        Self {
            n: values.len(),
            percentiles: if values.is_empty() {
                Vec::new()
            } else {
                (0..=100).map(|p| sorted.percentile(f64::from(p))).collect()
            },
            p99_9: if values.is_empty() {
                f64::NAN
            } else {
                sorted.percentile(99.9)
            },
        }
    }

    /// The value at percentile `p` (0..=100, whole).
    pub fn at(&self, p: usize) -> Option<f64> {
        self.percentiles.get(p).copied()
    }
}

/// The request times of one run's journals (its samples pooled), in ms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestTimes {
    pub ttft_ms: Vec<f64>,
    pub itl_ms: Vec<f64>,
}

impl RequestTimes {
    /// The successful requests' TTFTs and gaps between chunks.
    pub fn of(records: &[RequestRecord]) -> Self {
        let mut times = Self::default();
        times.add(records);
        times
    }

    /// Adds the successful requests of `records`.
    pub fn add(&mut self, records: &[RequestRecord]) {
        let ok = || records.iter().filter(|r| r.success);
        self.ttft_ms.extend(ok().map(|r| r.ttft * 1000.0));
        self.itl_ms
            .extend(ok().flat_map(|r| r.itl.secs().map(|s| s * 1000.0)));
    }
}

/// The journals' request times by (step, workload).
pub type Journals = BTreeMap<(String, String), RequestTimes>;

/// The runs whose journals the distributions show: measured (or simulated)
/// ones with results.
pub fn charted(run: &RunRecord) -> Option<RunKey> {
    let measured = matches!(run.source, Some(Source::Measured | Source::Simulated));
    if !measured || run.failure.is_some() {
        return None;
    }
    run.key.as_deref().and_then(RunKey::parse)
}

/// The request times of each charted run's measured samples, from their
/// journals as loaded in `stored`.
pub fn journals(runs: &[RunRecord], stored: &Stored) -> Journals {
    let mut journals = Journals::new();
    for run in runs {
        let Some(key) = charted(run) else { continue };
        let (mut times, mut requests) = (RequestTimes::default(), 0);
        for sample in samples_of(stored, &key) {
            if let Some(journal) = &sample.journal
                && sample.sample.metrics().is_some()
            {
                times.add(journal);
                requests += journal.len();
            }
        }
        if requests > 0 {
            journals.insert((run.step.clone(), run.workload.clone()), times);
        }
    }
    journals
}

/// Every curve of `runs` (and of `journals`, for the distributions). A
/// search's probes are drawn as the search (see `report::figures`), not as
/// points of a load axis, whose curves they would zig-zag; its distribution
/// is each configuration's at the largest load that passed.
pub fn curves(
    spec: &Spec,
    runs: &[RunRecord],
    journals: &Journals,
    searches: &[SearchResult],
) -> Curves {
    let points = run_points(spec, runs);
    let mut families = Vec::new();
    for (workloads, axis) in load_families(spec) {
        let mut rows: Vec<(&RunPoint, f64)> = points
            .iter()
            .filter_map(|p| {
                let position = workloads.iter().position(|w| w == p.workload)?;
                let load = spec
                    .workload(p.workload)
                    .map_or(f64::NAN, |w| load_of(w, axis, position));
                Some((p, load))
            })
            .collect();
        // Stable: a step's runs at the same load keep their order.
        rows.sort_by(|(a, a_load), (b, b_load)| {
            a.step_order
                .cmp(&b.step_order)
                .then_with(|| super::by_value(*a_load, *b_load))
        });
        let mut curves: Vec<LoadCurve> = Vec::new();
        for (p, load) in rows {
            let point = CurvePoint {
                workload: p.workload.to_owned(),
                load,
                tps: p.tps,
                ttft_ms: p.ttft,
                tpot_ms: p.tpot,
                e2el_ms: p.e2el,
                per_gpu: p.tps / p.gpus,
                per_user: 1000.0 / p.tpot,
                on_frontier: false,
            };
            match curves.last_mut() {
                Some(curve) if curve.step == p.step => curve.points.push(point),
                _ => curves.push(LoadCurve {
                    step: p.step.to_owned(),
                    label: step_label(spec, p.step),
                    points: vec![point],
                }),
            }
        }
        mark_frontier(&mut curves);
        if !curves.is_empty() {
            let mut ordered = workloads.clone();
            let position = |w: &String| {
                curves
                    .iter()
                    .flat_map(|c| &c.points)
                    .find(|p| &p.workload == w)
                    .map_or(f64::INFINITY, |p| p.load)
            };
            ordered.sort_by(|a, b| position(a).total_cmp(&position(b)));
            families.push(LoadFamily {
                workloads: ordered,
                axis,
                curves,
            });
        }
    }
    Curves {
        families,
        distributions: distributions(spec, journals, searches),
    }
}

/// A run with a throughput, as a curve shows it (means under the harness's
/// definitions; NaN where unknown).
struct RunPoint<'a> {
    step: &'a str,
    /// The step's declared position.
    step_order: usize,
    workload: &'a str,
    /// Throughput of all replicas.
    tps: f64,
    ttft: f64,
    tpot: f64,
    e2el: f64,
    /// The configuration's GPUs (at least 1).
    gpus: f64,
}

/// One point per run with a throughput (tens: one per step and workload).
fn run_points<'a>(spec: &Spec, runs: &'a [RunRecord]) -> Vec<RunPoint<'a>> {
    let set = spec.harness.kind.metric_set();
    let get = |r: &RunRecord, name: &str| r.metrics.get(name).copied().unwrap_or(f64::NAN);
    let step_order = |s: &str| {
        spec.steps
            .iter()
            .position(|x| x.name.value == s)
            .unwrap_or(usize::MAX)
    };
    let factor = |s: &str| spec.step(s).map_or(1, |s| s.report_factor());
    let gpus = |s: &str| spec.step(s).map_or(1, |s| (s.gpus * s.replicas).max(1));
    runs.iter()
        .filter(|r| r.failure.is_none() && r.metrics.contains_key(set.tps()))
        .map(|r| RunPoint {
            step: &r.step,
            step_order: step_order(&r.step),
            workload: &r.workload,
            tps: get(r, set.tps()) * f64::from(factor(&r.step)),
            ttft: get(r, set.ttft()),
            tpot: get(r, set.tpot()),
            e2el: mean_latency_ms(&r.metrics, set).unwrap_or(f64::NAN),
            gpus: f64::from(gpus(&r.step)),
        })
        .collect()
}

fn load_of(workload: &Workload, axis: LoadAxis, position: usize) -> f64 {
    match axis {
        LoadAxis::Concurrency => workload.concurrency.map_or(f64::INFINITY, f64::from),
        LoadAxis::Rate => match workload.rate {
            RequestRate::Infinite => f64::INFINITY,
            RequestRate::PerSecond(r) => r,
        },
        LoadAxis::Declared => position as f64,
    }
}

/// The declared workloads grouped into families (each in declared order),
/// with the axis that tells each family's members apart.
fn load_families(spec: &Spec) -> Vec<(Vec<String>, LoadAxis)> {
    let mut groups: Vec<Vec<&Workload>> = Vec::new();
    // A searched workload is no run, and its probes are the search's.
    let charted = |w: &&Workload| w.search.is_none() && !is_probe(spec, w);
    for w in spec.workloads.iter().filter(charted) {
        match groups.iter_mut().find(|g| equal_but_load(g[0], w)) {
            Some(group) => group.push(w),
            None => groups.push(vec![w]),
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let same_rate = g.iter().all(|w| w.rate == g[0].rate);
            let same_cap = g.iter().all(|w| w.concurrency == g[0].concurrency);
            let axis = match (same_rate, same_cap) {
                (true, _) => LoadAxis::Concurrency,
                (false, true) => LoadAxis::Rate,
                (false, false) => LoadAxis::Declared,
            };
            (g.iter().map(|w| w.name.value.clone()).collect(), axis)
        })
        .collect()
}

/// Whether `w` is a probe of a search: a point of a searched workload.
fn is_probe(spec: &Spec, w: &Workload) -> bool {
    w.axis
        .as_deref()
        .and_then(|declared| spec.workload(declared))
        .is_some_and(|d| d.search.is_some())
}

/// Whether two workloads send the same requests, only at another load.
fn equal_but_load(a: &Workload, b: &Workload) -> bool {
    a.dataset == b.dataset && a.prompts == b.prompts && a.arrival == b.arrival
}

/// "step (Engine version)".
pub fn step_label(spec: &Spec, step: &str) -> String {
    match spec.step(step) {
        Some(s) => {
            let version = spec
                .engine(s.engine)
                .map(|e| format!(" {}", e.version))
                .unwrap_or_default();
            format!("{step} ({}{version})", s.engine.display_name())
        }
        None => step.to_owned(),
    }
}

/// Flags each point that no other point of the family dominates: none has
/// at least its throughput per GPU and per user, and more of one.
fn mark_frontier(curves: &mut [LoadCurve]) {
    let all: Vec<(f64, f64)> = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| (p.per_user, p.per_gpu)))
        .collect();
    let dominated = |(u, g): (f64, f64)| {
        all.iter()
            .any(|&(u2, g2)| u2 >= u && g2 >= g && (u2 > u || g2 > g))
    };
    for p in curves.iter_mut().flat_map(|c| c.points.iter_mut()) {
        let finite = p.per_user.is_finite() && p.per_gpu.is_finite();
        p.on_frontier = finite && !dominated((p.per_user, p.per_gpu));
    }
}

/// One distribution per workload with journals, in declared order; a
/// searched workload's lines are each configuration's largest passing probe.
fn distributions(spec: &Spec, journals: &Journals, searches: &[SearchResult]) -> Vec<Distribution> {
    spec.workloads
        .iter()
        .filter(|w| !is_probe(spec, w))
        .filter_map(|w| {
            let lines: Vec<DistributionLine> = spec
                .steps
                .iter()
                .filter_map(|s| {
                    let step = &s.name.value;
                    let (run, at) = if w.search.is_some() {
                        let search = searches
                            .iter()
                            .find(|r| &r.step == step && r.workload == w.name.value)?;
                        let load = search.bracket.as_ref()?.largest_passing?;
                        let probe = search.probes.iter().find(|p| p.load == load)?;
                        (
                            probe.workload.clone(),
                            format!(" at {}", probe_load(search, load)),
                        )
                    } else {
                        (w.name.value.clone(), String::new())
                    };
                    let times = journals
                        .get(&(step.clone(), run))
                        .filter(|t| !t.ttft_ms.is_empty())?;
                    Some(DistributionLine {
                        step: step.clone(),
                        label: format!("{}{at}", step_label(spec, step)),
                        ttft: Cdf::of(&times.ttft_ms),
                        itl: Cdf::of(&times.itl_ms),
                    })
                })
                .collect();
            (!lines.is_empty()).then(|| Distribution {
                workload: w.name.value.clone(),
                lines,
            })
        })
        .collect()
}

/// A search's load as its points are labelled: `c=16`, `2.5/s`.
pub fn probe_load(search: &SearchResult, load: f64) -> String {
    match search.axis {
        crate::spec::SearchAxis::Concurrency => format!("c={load}"),
        crate::spec::SearchAxis::Rate => format!("{load}/s"),
    }
}

#[cfg(test)]
mod tests;
