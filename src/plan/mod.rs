//! Steps × workloads → runs with keys, and what the store already holds. [pure]

use crate::inputs::ResolvedInputs;
use crate::key::{KeyMaterial, RunKey};
use crate::spec::{Runtime, Spec};
use crate::store::{Outcome, StoreIndex};

/// Every run of an experiment, in declared order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub runtime: Runtime,
    pub runs: Vec<PlannedRun>,
    /// Samples each key should hold (`run --samples N`).
    pub samples: usize,
}

#[derive(Debug, Clone)]
pub struct PlannedRun {
    pub step: String,
    pub workload: String,
    pub key: RunKey,
    pub material: KeyMaterial,
    /// The exact text `key` is the sha256 of.
    pub canonical: String,
    pub status: RunStatus,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunStatus {
    /// Enough successful samples are stored.
    Cached {
        samples: usize,
    },
    /// A deterministic failure is stored; it is not retried unless asked.
    Failed {
        error: String,
    },
    Missing {
        reason: String,
    },
}

impl RunStatus {
    pub fn label(&self) -> &'static str {
        match self {
            Self::Cached { .. } => "cached",
            Self::Failed { .. } => "failed",
            Self::Missing { .. } => "missing",
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct PlanOptions {
    pub runtime: Runtime,
    pub samples: usize,
    pub retry_failed: bool,
}

/// A run with its key, before the store is consulted.
#[derive(Debug, Clone)]
pub struct KeyedRun {
    pub step: String,
    pub workload: String,
    pub key: RunKey,
    pub material: KeyMaterial,
    pub canonical: String,
}

/// Every (step, workload) of the experiment with its key, in declared order.
pub fn keyed_runs(spec: &Spec, runtime: Runtime, inputs: &ResolvedInputs) -> Vec<KeyedRun> {
    spec.steps
        .iter()
        .flat_map(|step| {
            step.workloads.iter().filter_map(move |w| {
                let workload = spec.workload(w)?;
                let material = KeyMaterial::new(spec, runtime, step, workload, inputs);
                let (key, canonical) = RunKey::of(&material);
                Some(KeyedRun {
                    step: step.name.value.clone(),
                    workload: w.clone(),
                    key,
                    material,
                    canonical,
                })
            })
        })
        .collect()
}

/// The plan: each run's status against what `index` holds for its key.
pub fn build(runs: Vec<KeyedRun>, index: &StoreIndex, options: PlanOptions) -> Plan {
    let runs = runs
        .into_iter()
        .map(|r| PlannedRun {
            status: status(index, &r.key, options),
            step: r.step,
            workload: r.workload,
            key: r.key,
            material: r.material,
            canonical: r.canonical,
        })
        .collect();
    Plan {
        runtime: options.runtime,
        runs,
        samples: options.samples,
    }
}

fn status(index: &StoreIndex, key: &RunKey, options: PlanOptions) -> RunStatus {
    let samples = index.samples(key);
    let ok = samples.iter().filter(|s| s.metrics().is_some()).count();
    let failure = samples.iter().rev().find_map(|s| match &s.result.outcome {
        Outcome::Failure { error, .. } => Some(error.clone()),
        Outcome::Success { .. } => None,
    });
    match failure {
        Some(error) if ok == 0 && !options.retry_failed => return RunStatus::Failed { error },
        _ => {}
    }
    if ok >= options.samples {
        RunStatus::Cached { samples: ok }
    } else if ok > 0 {
        RunStatus::Missing {
            reason: format!("{ok} of {} samples stored", options.samples),
        }
    } else if failure.is_some() {
        RunStatus::Missing {
            reason: "stored failure, retried (--retry-failed)".into(),
        }
    } else {
        RunStatus::Missing {
            reason: "no result for this key".into(),
        }
    }
}

impl Plan {
    /// Runs to execute, one per key (two steps may share a configuration).
    pub fn missing(&self) -> Vec<&PlannedRun> {
        let mut seen = std::collections::HashSet::new();
        self.runs
            .iter()
            .filter(|r| matches!(r.status, RunStatus::Missing { .. }))
            .filter(|r| seen.insert(r.key.clone()))
            .collect()
    }
}
