//! What one sample of a run holds (`result.json`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::metrics::{Measurement, Provenance, ServingMetrics};

/// `result.json` of one sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub key: String,
    pub outcome: Outcome,
    pub provenance: Provenance,
    /// The engine's argv as it was started.
    pub engine_command: Vec<String>,
    /// Which engine launch served the run, and its position in it.
    #[serde(default)]
    pub engine_launch: Option<crate::launch::LaunchRecord>,
    /// GPU and engine readings while the run measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::metrics::telemetry::TelemetrySummary>,
    /// The external harness's argv, when one measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub harness_command: Vec<String>,
    /// The Slurm job that measured it (`run --executor slurm`); absent
    /// from a local run's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<crate::metrics::SlurmJob>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Success {
        /// Under `measure=all`, the aggregate of every replica.
        metrics: Box<Measurement>,
        /// What the harness noticed (e.g. fewer tokens generated than asked).
        warnings: Vec<String>,
        /// Under `measure=all`, each replica's own numbers.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        per_instance: Vec<ServingMetrics>,
    },
    Failure {
        kind: FailureKind,
        error: String,
        log_tail: String,
    },
    /// Numbers read from a published result block (`perfpipe import`): what
    /// the block states, nothing more. Never makes a run count as measured.
    Imported {
        metrics: std::collections::BTreeMap<String, f64>,
        /// The block as it was read.
        block: String,
        /// The page's label of each number, by name (`Mean TPOT (ms)` for
        /// `time_per_output_token_ms_mean`), for display.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        labels: std::collections::BTreeMap<String, String>,
    },
}

/// Deterministic failures are cached; transient ones are retried and never stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Will fail again with the same inputs (unsupported kernel, bad flags, OOM at load).
    Deterministic,
    Transient,
}

/// A committed sample.
#[derive(Debug, Clone)]
pub struct Sample {
    pub id: String,
    pub dir: PathBuf,
    pub result: RunResult,
}

impl Sample {
    /// The measured (or simulated) metrics; `None` for failures and imports.
    pub fn metrics(&self) -> Option<&Measurement> {
        match &self.result.outcome {
            Outcome::Success { metrics, .. } => Some(metrics),
            Outcome::Failure { .. } | Outcome::Imported { .. } => None,
        }
    }

    /// Every number the sample has, by `--save-result` name.
    pub fn metric_map(&self) -> Option<std::collections::BTreeMap<String, f64>> {
        match &self.result.outcome {
            Outcome::Success { metrics, .. } => Some(metrics.metric_map()),
            Outcome::Imported { metrics, .. } => Some(metrics.clone()),
            Outcome::Failure { .. } => None,
        }
    }
}
