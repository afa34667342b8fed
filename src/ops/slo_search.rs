//! Searches of the largest load within an SLO, against the store: each
//! configuration's stored probes are replayed through its [`Search`](crate::plan::search::Search), and the
//! experiment gets the points it has probed and the one it probes next, as
//! ordinary runs (`chat@c=8`) that every command plans, runs and reports.
//! `run` then probes until no search needs another run ([`run_probes`](crate::ops::slo_search::run_probes)).

use std::collections::BTreeSet;

use super::Error;
use crate::analyze::search::SearchResult;
use crate::analyze::{SloResult, StoredSample};
use crate::exec::ExecSummary;
use crate::facts::Runtime;
use crate::inputs::ResolvedInputs;
use crate::key::{KeyMaterial, RunKey};
use crate::plan::search::{Domain, Search};
use crate::plan::{Plan, PlanOptions, PlannedRun, RunStatus};
use crate::spec::{SearchAxis, Spec, Workload};
use crate::store::{Sample, Store};

/// Replaces each searched workload of each step of `spec` by the points its
/// search has probed (in load order) and the one it probes next, adds those
/// points to `spec`'s workloads and `inputs`, and returns where each search
/// stands. Reads the store; writes nothing.
pub fn expand(
    spec: &mut Spec,
    runtime: Runtime,
    inputs: &mut ResolvedInputs,
    store: &Store,
    options: PlanOptions,
) -> Result<Vec<SearchResult>, Error> {
    let mut results = Vec::new();
    let mut lists = Vec::new();
    let mut points: Vec<Workload> = Vec::new();
    let mut failed_read = None;
    for step in &spec.steps {
        let mut list = Vec::new();
        for name in &step.workloads {
            let Some((workload, decl, slo)) = spec.workload(name).and_then(|w| {
                let decl = w.search.as_ref()?;
                Some((w, decl, w.slo.as_ref()?))
            }) else {
                list.push(name.clone());
                continue;
            };
            let domain = match decl.axis {
                SearchAxis::Concurrency => Domain::Integer,
                SearchAxis::Rate => Domain::Real {
                    precision: decl.rate_precision(),
                },
            };
            let mut known = |load: f64| {
                let point = workload.probe(load)?;
                // The point reads the searched workload's dataset.
                if let Some(dataset) = inputs.dataset(name).cloned() {
                    inputs.datasets.insert(point.name.value.clone(), dataset);
                }
                let material = KeyMaterial::new(spec, runtime, step, &point, inputs);
                let samples = match store.samples(&RunKey::of(&material).0) {
                    Ok(samples) => samples,
                    Err(e) => {
                        failed_read.get_or_insert(e);
                        return None;
                    }
                };
                match crate::plan::status(&samples, options) {
                    RunStatus::Cached { .. } => match passes(&samples, slo, decl.attainment_pct) {
                        Ok(passed) => Some(passed),
                        Err(e) => {
                            failed_read.get_or_insert(e);
                            None
                        }
                    },
                    RunStatus::Failed { .. } => Some(false),
                    RunStatus::Missing { .. } => None,
                }
            };
            let progress = Search::new(decl.from, decl.to, domain).progress(&mut known);
            let objectives = slo.describe();
            let result = SearchResult::new(&step.name.value, name, decl, objectives, progress);
            let mut loads: Vec<f64> = result.probes.iter().map(|p| p.load).collect();
            loads.extend(result.next);
            loads.sort_by(f64::total_cmp);
            for load in loads {
                let Some(point) = workload.probe(load) else {
                    continue;
                };
                list.push(point.name.value.clone());
                if !points.iter().any(|p| p.name.value == point.name.value) {
                    points.push(point);
                }
            }
            results.push(result);
        }
        lists.push(list);
    }
    if let Some(e) = failed_read {
        return Err(Error::Store(e));
    }
    for (step, list) in spec.steps.iter_mut().zip(lists) {
        step.workloads = list;
    }
    // Each searched workload's points follow it, in load order.
    points.sort_by(|a, b| load_of(a).total_cmp(&load_of(b)));
    for point in points {
        let declared = point.declared_name().to_owned();
        let at = spec
            .workloads
            .iter()
            .rposition(|w| w.declared_name() == declared)
            .map_or(spec.workloads.len(), |i| i + 1);
        spec.workloads.insert(at, point);
    }
    Ok(results)
}

/// The load a point was probed at, for ordering points.
fn load_of(point: &Workload) -> f64 {
    match (point.concurrency, point.rate) {
        (Some(c), _) => f64::from(c),
        (None, crate::spec::RequestRate::PerSecond(r)) => r,
        (None, crate::spec::RequestRate::Infinite) => f64::INFINITY,
    }
}

/// Whether a stored probe passed: `attainment_pct` of the requests its
/// successful samples sent met the SLO (a probe without a request journal
/// never passes).
fn passes(
    samples: &[Sample],
    slo: &crate::metrics::slo::Slo,
    attainment_pct: f64,
) -> Result<bool, crate::store::Error> {
    let mut ok = Vec::new();
    for sample in samples.iter().filter(|s| s.metrics().is_some()) {
        ok.push(StoredSample {
            journal: Some(sample.journal()?),
            ..StoredSample::of(sample.clone())
        });
    }
    let ok: Vec<&StoredSample> = ok.iter().collect();
    Ok(SloResult::of(slo, &ok).is_some_and(|r| r.attainment.passes(attainment_pct)))
}

/// Marks the probes `ran` holds (step, point) as run by this command.
pub fn mark_ran(searches: &mut [SearchResult], ran: &BTreeSet<(String, String)>) {
    for search in searches {
        search.mark_ran(ran);
    }
}

/// What `run` says of its searches before it runs: how many still probe.
pub fn note(searches: &[SearchResult]) -> Option<String> {
    let open = searches.iter().filter(|s| s.next.is_some()).count();
    let what = crate::plural::count(
        searches.len(),
        "search of the largest load within an SLO",
        "searches of the largest load within an SLO",
    );
    match open {
        _ if searches.is_empty() => None,
        0 => Some(format!(
            "perfpipe: {what}; none needs another probe (the store holds every probe each takes)"
        )),
        _ => Some(format!(
            "perfpipe: {what}, {open} still probing: each next probe is known once the last one ends"
        )),
    }
}

/// The most probes `searches` may take after the next one of each: runs no
/// plan lists yet (which loads they probe depends on results), each on its
/// configuration's launch.
pub fn later_probes(searches: &[SearchResult]) -> usize {
    searches.iter().map(|s| s.most_left.saturating_sub(1)).sum()
}

/// `run`'s executions: the missing runs of `first`, a configuration (step)
/// at a time while a search still probes, so that its probes run one after
/// another on one engine launch as the runs of a step do (`execute` keeps
/// the engine from one execution to the next; a search's next probe is
/// known only once its last one is stored, and a real engine takes
/// minutes to start). Up to `at_once` configurations run together (each on
/// its own GPUs). After each execution with a search still probing, the
/// experiment is reloaded: each search then plans its next probe. Stops
/// when nothing is missing that was not run already (a run whose result was
/// not stored is not run again: that would loop).
///
/// `execute` gets the plan to run, the most runs all executions may
/// start (for progress), and whether to keep its engines for the next.
pub fn run_probes<L>(
    first: (L, Plan),
    searches: impl Fn(&L) -> &[SearchResult],
    at_once: usize,
    mut reload: impl FnMut() -> Result<(L, Plan), Error>,
    mut execute: impl FnMut(&L, &Plan, usize, bool) -> Result<ExecSummary, Error>,
) -> Result<Probed<L>, Error> {
    let mut last = first;
    let mut tried: BTreeSet<RunKey> = BTreeSet::new();
    let mut ran = BTreeSet::new();
    let mut summary = ExecSummary::default();
    loop {
        let probing = searches(&last.0).iter().any(|s| s.next.is_some());
        let untried: Vec<&PlannedRun> = last
            .1
            .missing()
            .into_iter()
            .filter(|r| !tried.contains(&r.key))
            .collect();
        let chosen = choose(&untried, probing, at_once);
        if chosen.is_empty() {
            if tried.is_empty() {
                // Nothing to run: the executor still stops what killed
                // perfpipes left.
                let none = execute(&last.0, &last.1, 0, false)?;
                summary.failed += none.failed;
            }
            break;
        }
        let at_most = tried.len() + untried.len() + later_probes(searches(&last.0));
        let now = Plan {
            runs: (last.1.runs.iter())
                .filter(|r| chosen.contains(&r.key))
                .cloned()
                .collect(),
            options: last.1.options,
        };
        tried.extend(chosen);
        ran.extend(
            now.runs
                .iter()
                .map(|r| (r.step.clone(), r.workload.clone())),
        );
        // While a search probes, its configuration's engine serves the next execution.
        let more = execute(&last.0, &now, at_most, probing)?;
        summary.succeeded += more.succeeded;
        summary.failed += more.failed;
        summary.unstored.extend(more.unstored);
        if probing {
            last = reload()?;
        }
    }
    let (loaded, plan) = last;
    Ok(Probed {
        loaded,
        plan,
        summary,
        ran,
    })
}

/// The keys of the runs of `untried` to execute now: every one, or, while
/// a search probes, those of the first `at_once` steps that have any.
fn choose(untried: &[&PlannedRun], probing: bool, at_once: usize) -> BTreeSet<RunKey> {
    let mut steps: Vec<&str> = Vec::new();
    for run in untried {
        if !steps.contains(&run.step.as_str()) {
            steps.push(&run.step);
        }
    }
    steps.truncate(if probing { at_once.max(1) } else { steps.len() });
    untried
        .iter()
        .filter(|r| steps.contains(&r.step.as_str()))
        .map(|r| r.key.clone())
        .collect()
}

/// What [`run_probes`] leaves: the last reload, every execution's summary
/// added up, and the runs executed by (step, workload).
pub struct Probed<L> {
    pub loaded: L,
    pub plan: Plan,
    pub summary: ExecSummary,
    pub ran: BTreeSet<(String, String)>,
}
