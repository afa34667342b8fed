//! What is known of each run, from the store or from published expectations.

use std::collections::BTreeMap;

use super::stored::{Stored, StoredSample, samples_of};
use crate::key::RunKey;
use crate::metrics::Provenance;
use crate::metrics::slo::{Attainment, Slo, attainment};
use crate::metrics::telemetry::TelemetrySummary;
use crate::plan::Plan;
use crate::spec::{ExpectedOutcome, RequestRate, Spec, Step, Workload};
use crate::store::Outcome;

/// Where a record's numbers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Measured,
    Simulated,
    Published,
}

impl Source {
    pub fn of(provenance: &Provenance) -> Self {
        match provenance {
            Provenance::Measured { .. } | Provenance::MeasuredOnCpu { .. } => Self::Measured,
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
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunRecord {
    pub step: String,
    pub workload: String,
    /// Where the run lies along its workload's load axes.
    #[serde(flatten)]
    pub load: RunLoad,
    /// Where the run's step lies in its sweep's matrix, if it is a point of one.
    #[serde(flatten)]
    pub point: SweepPoint,
    pub key: Option<String>,
    pub source: Option<Source>,
    /// Metrics by `--save-result` name; the mean over samples.
    pub metrics: BTreeMap<String, f64>,
    /// The sample standard deviation of each metric, when there are several samples.
    pub sd: BTreeMap<String, f64>,
    pub samples: usize,
    /// How many of the samples behind the numbers each signer signed, for
    /// samples substituted from a result cache (by signer name).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub signers: BTreeMap<String, usize>,
    /// Where the numbers came from (host, GPU, driver, CUDA), for measured ones.
    pub environment: Option<String>,
    pub failure: Option<String>,
    pub warnings: Vec<String>,
    /// What the GPUs and the engine did during the last sample.
    pub telemetry: Option<TelemetrySummary>,
    /// How its requests fared against its workload's SLO.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<SloResult>,
}

/// A run's requests against its SLO, over every sample that has a request
/// journal (requests of all samples pooled).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SloResult {
    /// The objectives, e.g. `ttft_ms<=500 tpot_ms<=50`.
    pub objectives: String,
    #[serde(flatten)]
    pub attainment: Attainment,
}

impl SloResult {
    /// `slo` over the requests of `samples`; `None` when one has no journal
    /// (or it was not loaded).
    pub fn of(slo: &Slo, samples: &[&StoredSample]) -> Option<Self> {
        let (mut records, mut duration) = (Vec::new(), 0.0);
        for stored in samples {
            let requests = stored.journal.as_ref().filter(|r| !r.is_empty())?;
            duration += stored.sample.metric_map()?.get("duration").copied()?;
            records.extend(requests.iter().cloned());
        }
        if records.is_empty() {
            return None;
        }
        let objectives = slo.describe();
        Some(Self {
            objectives,
            attainment: attainment(&records, duration, slo),
        })
    }
}

/// A run's load as plain fields, so that curves along a load axis need not
/// read `chat@c=8`; set from the experiment by [`crate::analyze::analyze`].
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RunLoad {
    /// The workload as declared: `chat` for the point `chat@c=8`.
    pub declared_workload: String,
    /// The cap on requests in flight; none is unlimited.
    pub concurrency: Option<u32>,
    /// Requests per second; none sends all at once.
    pub rate: Option<f64>,
}

impl RunLoad {
    pub fn of(workload: &Workload) -> Self {
        Self {
            declared_workload: workload.declared_name().to_owned(),
            concurrency: workload.concurrency,
            rate: match workload.rate {
                RequestRate::Infinite => None,
                RequestRate::PerSecond(r) => Some(r),
            },
        }
    }
}

/// A sweep point's settings as plain fields, so that a report can group a
/// matrix without reading `s@max-num-seqs=256`; set by [`crate::analyze::analyze`].
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SweepPoint {
    /// The sweep the step was expanded from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<String>,
    /// Each varied flag and its value at this point.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
}

impl SweepPoint {
    pub fn of(step: &Step) -> Self {
        match &step.sweep {
            Some(origin) => Self {
                sweep: Some(origin.sweep.clone()),
                settings: origin.settings.iter().cloned().collect(),
            },
            None => Self::default(),
        }
    }
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
                    load: RunLoad::default(),
                    point: SweepPoint::default(),
                    key: None,
                    source: expectation.map(|_| Source::Published),
                    samples: usize::from(expectation.is_some()),
                    signers: BTreeMap::new(),
                    metrics,
                    sd: BTreeMap::new(),
                    environment: None,
                    failure,
                    warnings: Vec::new(),
                    telemetry: None,
                    slo: None,
                }
            })
        })
        .collect()
}

/// Records built from what the store holds for each run of `plan` (the
/// journals of the runs with an SLO loaded).
pub fn from_store(plan: &Plan, stored: &Stored) -> Vec<RunRecord> {
    plan.runs
        .iter()
        .map(|run| {
            let samples = samples_of(stored, &run.key);
            let mut record = of_samples(&run.step, &run.workload, &run.key, samples);
            if let Some(slo) = &run.slo {
                let measured: Vec<&StoredSample> = samples
                    .iter()
                    .filter(|s| s.sample.metrics().is_some())
                    .collect();
                record.slo = SloResult::of(slo, &measured);
            }
            record
        })
        .collect()
}

/// The record of one run from its key's samples: the mean of its measured
/// (or simulated) samples, else of its imported ones.
pub fn of_samples(step: &str, workload: &str, key: &RunKey, stored: &[StoredSample]) -> RunRecord {
    let samples: Vec<&StoredSample> = stored.iter().collect();
    let measured: Vec<&StoredSample> = samples
        .iter()
        .copied()
        .filter(|s| s.sample.metrics().is_some())
        .collect();
    let imported: Vec<&StoredSample> = samples
        .iter()
        .copied()
        .filter(|s| matches!(s.sample.result.outcome, Outcome::Imported { .. }))
        .collect();
    let chosen = if measured.is_empty() {
        imported
    } else {
        measured
    };
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for stored in &chosen {
        for (name, v) in stored.sample.metric_map().unwrap_or_default() {
            values.entry(name).or_default().push(v);
        }
    }
    let metrics = values.iter().map(|(k, v)| (k.clone(), mean(v))).collect();
    let sd = values
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, v)| (k.clone(), sample_sd(v)))
        .collect();
    let failure = if chosen.is_empty() {
        samples
            .iter()
            .rev()
            .find_map(|s| match &s.sample.result.outcome {
                Outcome::Failure { error, .. } => Some(error.clone()),
                Outcome::Success { .. } | Outcome::Imported { .. } => None,
            })
    } else {
        None
    };
    let last = chosen.last().or(samples.last()).map(|s| &s.sample.result);
    let mut warnings: Vec<String> = chosen
        .iter()
        .flat_map(|s| match &s.sample.result.outcome {
            Outcome::Success { warnings, .. } => warnings.clone(),
            Outcome::Failure { .. } | Outcome::Imported { .. } => Vec::new(),
        })
        .collect();
    warnings.dedup();
    // The failure shown is the last sample's, so is its signer.
    let behind: Vec<&StoredSample> = if chosen.is_empty() {
        samples.last().copied().into_iter().collect()
    } else {
        chosen.clone()
    };
    let mut signers: BTreeMap<String, usize> = BTreeMap::new();
    for signer in behind.iter().filter_map(|s| s.signer.as_ref()) {
        *signers.entry(signer.clone()).or_default() += 1;
    }
    RunRecord {
        step: step.to_owned(),
        workload: workload.to_owned(),
        load: RunLoad::default(),
        point: SweepPoint::default(),
        key: Some(key.to_string()),
        source: last.map(|r| Source::of(&r.provenance)),
        metrics,
        sd,
        samples: chosen.len(),
        signers,
        environment: last.map(|r| r.provenance.environment()),
        failure,
        warnings,
        telemetry: chosen
            .last()
            .and_then(|s| s.sample.result.telemetry.clone()),
        slo: None,
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The sample standard deviation (n − 1), of at least two values.
fn sample_sd(v: &[f64]) -> f64 {
    let m = mean(v);
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_the_sample_standard_deviation() {
        assert_eq!(mean(&[1.0, 2.0, 3.0]), 2.0);
        assert_eq!(sample_sd(&[1.0, 2.0, 3.0]), 1.0);
        assert_eq!(sample_sd(&[5.0, 5.0]), 0.0);
    }
}
