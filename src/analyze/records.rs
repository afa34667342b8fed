//! What is known of each run, from the store or from published expectations.

use std::collections::BTreeMap;

use crate::metrics::Provenance;
use crate::plan::Plan;
use crate::spec::{ExpectedOutcome, Spec};
use crate::store::{Outcome, StoreIndex};

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
                }
            })
        })
        .collect()
}

/// Records built from what the store holds for each run of `plan`.
pub fn from_store(plan: &Plan, index: &StoreIndex) -> Vec<RunRecord> {
    plan.runs
        .iter()
        .map(|run| {
            let samples = index.samples(&run.key);
            let ok: Vec<_> = samples
                .iter()
                .filter_map(|s| s.metrics().map(|m| (s, m)))
                .collect();
            let mut metrics: BTreeMap<String, f64> = BTreeMap::new();
            for (_, m) in &ok {
                let value = serde_json::to_value(m).expect("metrics are plain data");
                for (name, v) in value.as_object().into_iter().flatten() {
                    *metrics.entry(name.clone()).or_default() +=
                        v.as_f64().unwrap_or(f64::NAN) / ok.len() as f64;
                }
            }
            let failure = if ok.is_empty() {
                samples.iter().rev().find_map(|s| match &s.result.outcome {
                    Outcome::Failure { error, .. } => Some(error.clone()),
                    Outcome::Success { .. } => None,
                })
            } else {
                None
            };
            let source = samples.last().map(|s| Source::of(&s.result.provenance));
            let mut warnings: Vec<String> = ok
                .iter()
                .flat_map(|(s, _)| match &s.result.outcome {
                    Outcome::Success { warnings, .. } => warnings.clone(),
                    Outcome::Failure { .. } => Vec::new(),
                })
                .collect();
            warnings.dedup();
            RunRecord {
                step: run.step.clone(),
                workload: run.workload.clone(),
                key: Some(run.key.to_string()),
                source,
                metrics,
                samples: ok.len(),
                failure,
                warnings,
            }
        })
        .collect()
}
