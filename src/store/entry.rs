//! What one sample of a run holds (`result.json`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::metrics::{Provenance, ServingMetrics};

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
    pub engine_launch: Option<crate::exec::LaunchRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Success {
        metrics: Box<ServingMetrics>,
        /// What the harness noticed (e.g. fewer tokens generated than asked).
        warnings: Vec<String>,
    },
    Failure {
        kind: FailureKind,
        error: String,
        log_tail: String,
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
    pub fn metrics(&self) -> Option<&ServingMetrics> {
        match &self.result.outcome {
            Outcome::Success { metrics, .. } => Some(metrics),
            Outcome::Failure { .. } => None,
        }
    }
}
