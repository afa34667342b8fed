//! `perfpipe plan`: every run, its key and status, and the GPU-hours the
//! missing ones would take; no side effects.

use serde_json::Value;

use super::{Error, Loaded, LockMode, Selection, load};
use crate::key::material_changes;
use crate::plan::{self, Estimate, Plan, PlanOptions};
use crate::store::StoreIndex;

/// What `plan` shows.
#[derive(Debug)]
pub struct Planned {
    pub loaded: Loaded,
    pub plan: Plan,
    pub estimate: Estimate,
}

/// Loads the experiment without writing its lockfile, plans its runs and
/// estimates the missing ones from earlier results of their workloads.
pub fn plan(selection: &Selection) -> Result<Planned, Error> {
    let loaded = load(selection, LockMode::Read)?;
    let plan = build_plan(&loaded, selection)?;
    // Read only when some run is missing: a cached plan estimates nothing.
    let earlier = if plan.missing().is_empty() {
        Vec::new()
    } else {
        earlier_durations(&loaded)?
    };
    let estimate = plan::estimate(&loaded.spec, &plan, selection.fresh_engine, &|run| {
        if earlier.is_empty() {
            return None;
        }
        let material = serde_json::to_value(&run.material).ok()?;
        earlier
            .iter()
            .filter(|(m, _)| m["workload"] == material["workload"])
            .min_by_key(|(m, _)| material_changes(m, &material).len())
            .map(|(_, seconds)| *seconds)
    });
    Ok(Planned {
        loaded,
        plan,
        estimate,
    })
}

/// Every stored configuration (its key material) with the mean benchmark
/// seconds of its successful samples.
fn earlier_durations(loaded: &Loaded) -> Result<Vec<(Value, f64)>, Error> {
    let mut out = Vec::new();
    for (key, text) in loaded.store.entries().map_err(Error::Store)? {
        let Ok(material) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let seconds: Vec<f64> = loaded
            .store
            .samples(&key)
            .map_err(Error::Store)?
            .iter()
            .filter(|s| s.metrics().is_some())
            .filter_map(|s| s.metric_map()?.get("duration").copied())
            .collect();
        if !seconds.is_empty() {
            out.push((material, seconds.iter().sum::<f64>() / seconds.len() as f64));
        }
    }
    Ok(out)
}

/// Looks every run's key up in the store.
pub fn build_plan(loaded: &Loaded, selection: &Selection) -> Result<Plan, Error> {
    Ok(plan_and_index(loaded, selection)?.0)
}

/// The plan, and what the store held for its keys (its results, for a report).
pub fn plan_and_index(loaded: &Loaded, selection: &Selection) -> Result<(Plan, StoreIndex), Error> {
    let index = loaded
        .store
        .index(loaded.runs.iter().map(|r| (&r.key, r.canonical.as_str())))
        .map_err(Error::Store)?;
    let plan = plan::build(
        loaded.runs.clone(),
        &index,
        PlanOptions {
            runtime: loaded.runtime,
            samples: selection.samples as usize,
            retry_failed: selection.retry_failed,
        },
    );
    Ok((plan, index))
}
