//! `perfpipe plan`: every run, its key and status, and the GPU-hours the
//! missing ones would take. Writes nothing, unless asked to write the
//! material of the launches the missing runs need and the inputs they name
//! to the store (for `perfpipe realise`).

use serde_json::Value;
use std::collections::HashSet;
use std::time::Duration;

use super::realise::write_launches;
use super::{Error, Loaded, LockMode, Selection, Shell, load};
use crate::key::to_canonical_json;
use crate::launch::{LaunchKey, LaunchMaterial, LaunchOptions};
use crate::plan::{self, Estimate, Plan};
use crate::store::{StoreIndex, StoredSample};

/// What `plan` shows.
#[derive(Debug)]
pub struct Planned {
    pub loaded: Loaded,
    pub plan: Plan,
    pub estimate: Estimate,
    /// The most probes the searches take after their next ones: the
    /// estimate cannot time them (their loads are unknown), and they add no
    /// launch (a search's probes share its configuration's).
    pub later_probes: usize,
    /// Missing runs that trusted caches can supply.
    pub offers: std::collections::BTreeMap<crate::key::RunKey, crate::cache::Offer>,
    /// GPU-hours of the estimate that substituting them saves.
    pub saved_gpu_hours: f64,
    /// The engine launches the missing runs need, by key, in the order
    /// they run (`perfpipe realise <key>` runs one).
    pub launches: Vec<(LaunchKey, LaunchMaterial)>,
    /// What killed perfpipes left, which the next `run` stops (`plan` stops nothing).
    pub leftovers: Vec<crate::engine::leftovers::Found>,
}

/// What `plan` is asked to do.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub selection: Selection,
    /// Which trusted caches to ask for missing runs.
    pub substitution: super::cache::Substitution,
    /// Ask no network cache.
    pub offline: bool,
    /// Write the missing runs' launch material and inputs to the store.
    pub write_launches: bool,
    /// The process's runtime, which asks the caches.
    pub io: crate::tokio_runtime::Io,
}

/// Loads the experiment without writing its lockfile, plans its runs and
/// estimates the missing ones from earlier results of their workloads.
pub fn plan(options: &PlanOptions, shell: &dyn Shell) -> Result<Planned, Error> {
    let caches = super::cache::caches(&options.substitution, options.offline, &options.io, shell)?;
    let caches = caches.as_ref();
    let selection = &options.selection;
    let write_material = options.write_launches;
    let loaded = load(selection, LockMode::Read)?;
    for unreleased in super::workspace::load::unreleased_engines(
        &loaded.declared,
        loaded.runtime,
        loaded.lock.old.as_ref(),
    ) {
        say!(shell, "warning: {unreleased}");
    }
    let plan = build_plan(&loaded, selection)?;
    super::workspace::stored_runtimes::say_if_elsewhere(&loaded, selection, "plan", shell);
    // What a node needs to run each launch.
    let options = LaunchOptions {
        fresh_engine: selection.fresh_engine,
        startup_timeout: None,
        stall_timeout: Duration::from_secs(crate::harness::DEFAULT_STALL_TIMEOUT_SECS),
    };
    let launches = if write_material {
        // Asked for: a store it cannot write is an error.
        write_launches(&loaded.spec, &plan, &loaded.inputs, &options, &loaded.store)?
    } else {
        crate::plan::launches(&loaded.spec, &plan, &options)
            .into_iter()
            .map(|m| (m.key(), m))
            .collect()
    };
    // Read only when some run is missing: a cached plan estimates nothing.
    let earlier = earlier_durations(&loaded, &plan.missing())?;
    let earlier_seconds = |run: &plan::PlannedRun| {
        if earlier.is_empty() {
            return None;
        }
        earlier.seconds(&serde_json::to_value(&run.material).ok()?)
    };
    let estimate = plan::estimate(
        &loaded.spec,
        &plan,
        selection.fresh_engine,
        &earlier_seconds,
    );
    let offers = caches
        .map(|c| super::substitute::offers(c, &loaded.store, &plan, shell))
        .unwrap_or_default();
    // Nothing offered: the plan after substitution is the plan (not copied).
    let (offers, saved_gpu_hours) = if offers.is_empty() {
        (offers, 0.0)
    } else {
        let after = super::substitute::after_substitution(&plan, &offers, &loaded.store);
        let offers = super::substitute::substitutable(&after, offers);
        let saved = if offers.is_empty() {
            0.0
        } else {
            let left = plan::estimate(
                &loaded.spec,
                &after,
                selection.fresh_engine,
                &earlier_seconds,
            );
            estimate.gpu_hours - left.gpu_hours
        };
        (offers, saved)
    };
    Ok(Planned {
        later_probes: super::slo_search::later_probes(&loaded.searches),
        loaded,
        plan,
        estimate,
        offers,
        saved_gpu_hours,
        launches,
        leftovers: crate::engine::leftovers::find(&crate::engine::leftovers::dir()),
    })
}

/// The stored configurations of the workloads of `missing` (their key
/// material) with the mean benchmark seconds of their successful samples,
/// read through the index of results; the samples of other workloads'
/// entries are not read.
fn earlier_durations(
    loaded: &Loaded,
    missing: &[&plan::PlannedRun],
) -> Result<plan::EarlierDurations, Error> {
    let workloads: HashSet<String> = (missing.iter())
        .filter_map(|run| serde_json::to_value(&run.material).ok())
        .map(|material| plan::workload_of(&material))
        .collect();
    let mut earlier = plan::EarlierBuilder::default();
    if workloads.is_empty() {
        return Ok(earlier.build());
    }
    let wanted = |text: &str| {
        serde_json::from_str::<WorkloadOnly>(text)
            .is_ok_and(|m| workloads.contains(&to_canonical_json(&m.workload)))
    };
    let each = |_: &crate::key::RunKey, text: &str, samples: Vec<crate::store::Sample>| {
        let seconds: Vec<f64> = samples
            .iter()
            .filter(|s| s.metrics().is_some())
            .filter_map(|s| s.metric_map()?.get("duration").copied())
            .collect();
        if seconds.is_empty() {
            return;
        }
        if let Ok(material) = serde_json::from_str::<Value>(text) {
            earlier.add(
                &material,
                seconds.iter().sum::<f64>() / seconds.len() as f64,
            );
        }
    };
    loaded
        .store
        .each_entry(wanted, each)
        .map_err(Error::Store)?;
    Ok(earlier.build())
}

/// A key material's workload alone (its other fields skipped unparsed).
#[derive(serde::Deserialize)]
struct WorkloadOnly {
    #[serde(default)]
    workload: Value,
}

/// Looks every run's key up in the store.
pub fn build_plan(loaded: &Loaded, selection: &Selection) -> Result<Plan, Error> {
    // A status needs no sample's numbers: only their statuses are read.
    let statuses = loaded
        .store
        .statuses(loaded.runs.iter().map(|r| (&r.key, r.canonical.as_str())))
        .map_err(Error::Store)?;
    Ok(plan_of(loaded, selection, &statuses))
}

/// The plan, and what the store held for its keys (its results, for a report).
pub fn plan_and_index(loaded: &Loaded, selection: &Selection) -> Result<(Plan, StoreIndex), Error> {
    let index = loaded
        .store
        .index(loaded.runs.iter().map(|r| (&r.key, r.canonical.as_str())))
        .map_err(Error::Store)?;
    Ok((plan_of(loaded, selection, &index), index))
}

/// The plan of `selection`'s runs, by what `index` holds of their keys.
fn plan_of<S: StoredSample>(loaded: &Loaded, selection: &Selection, index: &StoreIndex<S>) -> Plan {
    let runs = (loaded.runs.iter())
        .filter(|r| selection.wants_step(&r.step))
        .cloned()
        .collect();
    plan::build(
        runs,
        index,
        super::workspace::load::plan_options(selection, loaded.runtime),
    )
}
