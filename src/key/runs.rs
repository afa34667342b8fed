//! Every run of an experiment with its key: what `lock`, `plan` and the
//! launch material start from. (pure)

use super::{KeyMaterial, RunKey};
use crate::facts::Runtime;
use crate::inputs::ResolvedInputs;
use crate::metrics::slo::Slo;
use crate::spec::Spec;

/// A run with its key, before the store is consulted.
#[derive(Debug, Clone)]
pub struct KeyedRun {
    pub step: String,
    pub workload: String,
    pub key: RunKey,
    pub material: KeyMaterial,
    pub canonical: String,
    /// The workload's SLO: analysis of the stored requests, not key material.
    pub slo: Option<Slo>,
}

/// Every (step, workload) of the experiment with its key, in declared order.
pub fn keyed_runs(spec: &Spec, runtime: Runtime, inputs: &ResolvedInputs) -> Vec<KeyedRun> {
    spec.steps
        .iter()
        .flat_map(|step| {
            step.workloads.iter().filter_map(move |w| {
                // A searched workload is its probes, planned as the search goes.
                let workload = spec.workload(w).filter(|w| w.search.is_none())?;
                let material = KeyMaterial::new(spec, runtime, step, workload, inputs);
                let (key, canonical) = RunKey::of(&material);
                Some(KeyedRun {
                    step: step.name.value.clone(),
                    workload: w.clone(),
                    key,
                    material,
                    canonical,
                    slo: workload.slo.clone(),
                })
            })
        })
        .collect()
}
