//! What is known of each run, from the store or from published expectations.

use std::collections::BTreeMap;

use crate::metrics::Provenance;
use crate::metrics::telemetry::TelemetrySummary;
use crate::plan::Plan;
use crate::spec::{ExpectedOutcome, Spec};
use crate::store::{Outcome, Sample, StoreIndex};

/// Where a record's numbers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Measured,
    Simulated,
    Published,
}

impl Source {
    pub fn of(provenance: &Provenance) -> Self {
        match provenance {
            Provenance::Measured { .. } => Self::Measured,
            Provenance::Simulated { .. } => Self::Simulated,
            Provenance::Published { .. } => Self::Published,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Measured => "measured",
            Self::Simulated => "simulated",
            Self::Published => "published",
        }
    }
}

/// One (step, workload) and what is known of it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub step: String,
    pub workload: String,
    pub key: Option<String>,
    pub source: Option<Source>,
    /// Metrics by `--save-result` name; the mean over samples.
    pub metrics: BTreeMap<String, f64>,
    pub samples: usize,
    pub failure: Option<String>,
    pub warnings: Vec<String>,
    /// What the GPUs and the engine did during the last sample.
    pub telemetry: Option<TelemetrySummary>,
}

/// Records built from the published expectations alone.
pub fn from_expectations(spec: &Spec) -> Vec<RunRecord> {
    spec.steps
        .iter()
        .flat_map(|step| {
            step.workloads.iter().map(move |w| {
                let expectation = step.expectations.iter().find(|x| &x.workload == w);
                let (metrics, failure) = match expectation.map(|x| &x.outcome) {
                    Some(ExpectedOutcome::Metrics(m)) => {
                        (m.iter().map(|m| (m.name.clone(), m.value)).collect(), None)
                    }
                    Some(ExpectedOutcome::Failure(e)) => (BTreeMap::new(), Some(e.clone())),
                    None => (BTreeMap::new(), None),
                };
                RunRecord {
                    step: step.name.value.clone(),
                    workload: w.clone(),
                    key: None,
                    source: expectation.map(|_| Source::Published),
                    samples: usize::from(expectation.is_some()),
                    metrics,
                    failure,
                    warnings: Vec::new(),
                    telemetry: None,
                }
            })
        })
        .collect()
}

/// Records built from what the store holds for each run of `plan`: the mean
/// of its measured (or simulated) samples, else of its imported ones.
pub fn from_store(plan: &Plan, index: &StoreIndex) -> Vec<RunRecord> {
    plan.runs
        .iter()
        .map(|run| {
            let samples = index.samples(&run.key);
            let measured: Vec<&Sample> = samples.iter().filter(|s| s.metrics().is_some()).collect();
            let imported: Vec<&Sample> = samples
                .iter()
                .filter(|s| matches!(s.result.outcome, Outcome::Imported { .. }))
                .collect();
            let chosen = if measured.is_empty() {
                imported
            } else {
                measured
            };
            let mut metrics: BTreeMap<String, f64> = BTreeMap::new();
            for sample in &chosen {
                for (name, v) in sample.metric_map().unwrap_or_default() {
                    *metrics.entry(name).or_default() += v / chosen.len() as f64;
                }
            }
            let failure = if chosen.is_empty() {
                samples.iter().rev().find_map(|s| match &s.result.outcome {
                    Outcome::Failure { error, .. } => Some(error.clone()),
                    Outcome::Success { .. } | Outcome::Imported { .. } => None,
                })
            } else {
                None
            };
            let source = chosen
                .last()
                .copied()
                .or(samples.last())
                .map(|s| Source::of(&s.result.provenance));
            let mut warnings: Vec<String> = chosen
                .iter()
                .flat_map(|s| match &s.result.outcome {
                    Outcome::Success { warnings, .. } => warnings.clone(),
                    Outcome::Failure { .. } | Outcome::Imported { .. } => Vec::new(),
                })
                .collect();
            warnings.dedup();
            RunRecord {
                step: run.step.clone(),
                workload: run.workload.clone(),
                key: Some(run.key.to_string()),
                source,
                metrics,
                samples: chosen.len(),
                failure,
                warnings,
                telemetry: chosen.last().and_then(|s| s.result.telemetry.clone()),
            }
        })
        .collect()
}
