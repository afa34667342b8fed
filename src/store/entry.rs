//! What one sample of a run holds (`result.json`).

use std::path::{Path, PathBuf};

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

/// Stored as an object tagged by its `status` (written first), read by
/// [`Outcome`]'s own deserializer (see `outcome_de`).
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// Reading an [`Outcome`] as serde's derive for an internally tagged enum
/// does would copy every field into a buffer before deserializing it (it
/// cannot know the variant before the tag, wherever that is): most of what
/// reading a `result.json` costs. A stored outcome has its `status` first,
/// so the rest is read straight into the variant's fields; only an object
/// whose tag comes later takes the buffered path. Either way the same
/// objects read as the same outcomes (`outcome_de`'s tests).
mod outcome_de {
    use std::collections::BTreeMap;

    use serde::de::value::MapAccessDeserializer;
    use serde::de::{Error as _, MapAccess, Visitor};
    use serde::{Deserialize, Deserializer};

    use super::{FailureKind, Outcome, Status};
    use crate::metrics::{Measurement, ServingMetrics};

    /// The fields of [`Outcome::Success`], as stored.
    #[derive(Deserialize)]
    struct Success {
        metrics: Box<Measurement>,
        warnings: Vec<String>,
        #[serde(default)]
        per_instance: Vec<ServingMetrics>,
    }

    /// The fields of [`Outcome::Failure`], as stored.
    #[derive(Deserialize)]
    struct Failure {
        kind: FailureKind,
        error: String,
        log_tail: String,
    }

    /// The fields of [`Outcome::Imported`], as stored.
    #[derive(Deserialize)]
    struct Imported {
        metrics: BTreeMap<String, f64>,
        block: String,
        #[serde(default)]
        labels: BTreeMap<String, String>,
    }

    /// The buffered path: an object whose `status` is not first.
    #[derive(Deserialize)]
    #[serde(tag = "status", rename_all = "snake_case")]
    enum Tagged {
        Success(Success),
        Failure(Failure),
        Imported(Imported),
    }

    impl From<Tagged> for Outcome {
        fn from(tagged: Tagged) -> Self {
            match tagged {
                Tagged::Success(s) => Outcome::Success {
                    metrics: s.metrics,
                    warnings: s.warnings,
                    per_instance: s.per_instance,
                },
                Tagged::Failure(f) => Outcome::Failure {
                    kind: f.kind,
                    error: f.error,
                    log_tail: f.log_tail,
                },
                Tagged::Imported(i) => Outcome::Imported {
                    metrics: i.metrics,
                    block: i.block,
                    labels: i.labels,
                },
            }
        }
    }

    impl<'de> Deserialize<'de> for Outcome {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_map(OutcomeVisitor)
        }
    }

    struct OutcomeVisitor;

    impl<'de> Visitor<'de> for OutcomeVisitor {
        type Value = Outcome;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an outcome: an object with its `status`")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Outcome, A::Error> {
            let Some(first) = map.next_key::<String>()? else {
                return Err(A::Error::missing_field("status"));
            };
            if first != "status" {
                // Buffered: the fields read so far and the rest, as an object.
                let mut object = serde_json::Map::new();
                object.insert(first, map.next_value()?);
                while let Some((name, value)) = map.next_entry()? {
                    object.insert(name, value);
                }
                return Tagged::deserialize(serde_json::Value::Object(object))
                    .map(Outcome::from)
                    .map_err(A::Error::custom);
            }
            let status: Status = map.next_value()?;
            let rest = MapAccessDeserializer::new(map);
            let tagged = match status {
                Status::Success => Tagged::Success(Success::deserialize(rest)?),
                Status::Failure => Tagged::Failure(Failure::deserialize(rest)?),
                Status::Imported => Tagged::Imported(Imported::deserialize(rest)?),
            };
            Ok(tagged.into())
        }
    }
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
    /// Known to have no `signature.json` (see [`Sample::signature`]): the
    /// index of results gave it, from a record taken when no sample of its
    /// entry was signed and whose stamps still match. perfpipe writes a
    /// signature only with a new sample, which changes `samples/`'s stamp.
    pub(super) unsigned: bool,
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

/// A sample as a reader of the store takes it: whole ([`Sample`]), or only
/// what decides a run's status ([`SampleStatus`], all `plan` reads).
pub trait StoredSample: Sized {
    /// Sample `id` from the exact bytes of its `result.json`, as the index
    /// of results holds them (sound as a result of `key` when recorded, and
    /// CRC-checked since); `None` when they do not read as `key`'s.
    /// `samples_dir` gives its entry's `samples/`, for those that keep it.
    fn from_indexed<'p>(
        id: &str,
        samples_dir: impl FnOnce() -> &'p Path,
        bytes: &[u8],
        key: &str,
    ) -> Option<Self>;
    /// From a sample read from its entry's files.
    fn from_sample(sample: Sample) -> Self;
    /// Whether it holds measured (or simulated) numbers.
    fn measured(&self) -> bool;
    /// A failure's error.
    fn failure(&self) -> Option<&str>;
}

impl StoredSample for Sample {
    fn from_indexed<'p>(
        id: &str,
        samples_dir: impl FnOnce() -> &'p Path,
        bytes: &[u8],
        key: &str,
    ) -> Option<Self> {
        let result = serde_json::from_slice::<RunResult>(bytes).ok()?;
        (result.key == key).then(|| Self {
            id: id.to_owned(),
            dir: samples_dir().join(id),
            result,
            // A record of an entry with a signed sample says to read its files.
            unsigned: true,
        })
    }

    fn from_sample(sample: Sample) -> Self {
        sample
    }

    fn measured(&self) -> bool {
        self.metrics().is_some()
    }

    fn failure(&self) -> Option<&str> {
        match &self.result.outcome {
            Outcome::Failure { error, .. } => Some(error),
            Outcome::Success { .. } | Outcome::Imported { .. } => None,
        }
    }
}

/// What decides a run's status of a sample: whether it holds numbers, and
/// a failure's error. Read from the index of results without the numbers,
/// provenance and commands (most of a `result.json`, and most of what
/// reading one costs): `plan` of 10,000 stored runs reads only this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleStatus {
    pub measured: bool,
    pub failure: Option<String>,
}

/// The part of a stored `result.json` a [`SampleStatus`] reads; serde skips
/// the rest without building it.
#[derive(Deserialize)]
struct StatusOnly<'a> {
    #[serde(borrow)]
    key: std::borrow::Cow<'a, str>,
    outcome: OutcomeStatus,
}

#[derive(Deserialize)]
struct OutcomeStatus {
    status: Status,
    #[serde(default)]
    error: Option<String>,
}

/// The `status` of a stored outcome.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Success,
    Failure,
    Imported,
}

impl StoredSample for SampleStatus {
    fn from_indexed<'p>(
        _id: &str,
        _samples_dir: impl FnOnce() -> &'p Path,
        bytes: &[u8],
        key: &str,
    ) -> Option<Self> {
        let read = serde_json::from_slice::<StatusOnly>(bytes).ok()?;
        if read.key != key {
            return None;
        }
        Some(match read.outcome.status {
            Status::Success => Self {
                measured: true,
                failure: None,
            },
            Status::Failure => Self {
                measured: false,
                failure: Some(read.outcome.error?),
            },
            Status::Imported => Self {
                measured: false,
                failure: None,
            },
        })
    }

    fn from_sample(sample: Sample) -> Self {
        Self {
            measured: sample.measured(),
            failure: sample.failure().map(str::to_owned),
        }
    }

    fn measured(&self) -> bool {
        self.measured
    }

    fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::RunKey;
    use crate::metrics::{Gaps, MetricOptions, RequestRecord, compute};

    fn metrics() -> ServingMetrics {
        let request = RequestRecord {
            success: true,
            prompt_len: 10,
            output_tokens: 2,
            requested_output_tokens: 2,
            // Binary fractions: serde_json reads decimals to within an ulp only.
            ttft: 0.5,
            latency: 0.75,
            itl: Gaps::from_secs(&[0.25]),
            ..Default::default()
        };
        let options = MetricOptions {
            // A percentile beyond the fixed set: a flattened field.
            percentiles: vec![90.0, 99.0],
            ..Default::default()
        };
        compute(&[request], 2.0, &options)
    }

    /// One outcome of each variant, optional fields set and not.
    fn outcomes() -> Vec<Outcome> {
        vec![
            Outcome::Success {
                metrics: Box::new(Measurement::Vllm(metrics())),
                warnings: vec!["fewer tokens".into()],
                per_instance: vec![metrics(), metrics()],
            },
            Outcome::Success {
                metrics: Box::new(Measurement::Vllm(metrics())),
                warnings: vec![],
                per_instance: vec![],
            },
            Outcome::Failure {
                kind: FailureKind::Deterministic,
                error: "OOM at load".into(),
                log_tail: "CUDA out of memory".into(),
            },
            Outcome::Imported {
                metrics: [("mean_ttft_ms".to_owned(), 12.5)].into(),
                block: "Mean TTFT (ms): 12.5".into(),
                labels: [("mean_ttft_ms".to_owned(), "Mean TTFT (ms)".to_owned())].into(),
            },
            Outcome::Imported {
                metrics: [("mean_ttft_ms".to_owned(), 12.5)].into(),
                block: String::new(),
                labels: Default::default(),
            },
        ]
    }

    #[test]
    fn an_outcome_reads_back_as_written_with_its_status_first_or_last() {
        for outcome in outcomes() {
            let text = serde_json::to_string(&outcome).unwrap();
            assert!(text.starts_with(r#"{"status":"#), "{text}");
            assert_eq!(serde_json::from_str::<Outcome>(&text).unwrap(), outcome);
            // The tag last: the buffered path reads the same outcome.
            let serde_json::Value::Object(mut object) = serde_json::to_value(&outcome).unwrap()
            else {
                panic!("an outcome is an object");
            };
            let status = object.shift_remove("status").unwrap();
            object.insert("status".into(), status);
            let text = serde_json::to_string(&object).unwrap();
            assert!(!text.starts_with(r#"{"status":"#), "{text}");
            assert_eq!(serde_json::from_str::<Outcome>(&text).unwrap(), outcome);
            // Read from a value as from text.
            let value = serde_json::Value::Object(object);
            assert_eq!(serde_json::from_value::<Outcome>(value).unwrap(), outcome);
        }
    }

    #[test]
    fn a_status_read_from_a_result_s_bytes_is_that_of_the_whole_result() {
        let key = "ab".repeat(32);
        for outcome in outcomes() {
            let mut result = crate::store::testing::result(&RunKey::try_from(key.clone()).unwrap());
            result.outcome = outcome;
            let bytes = serde_json::to_vec_pretty(&result).unwrap();
            let dir = Path::new("samples");
            let whole = Sample::from_indexed("0001", || dir, &bytes, &key).unwrap();
            assert_eq!(whole.dir, Path::new("samples/0001"));
            let status = SampleStatus::from_indexed("0001", || dir, &bytes, &key).unwrap();
            assert_eq!(
                status,
                SampleStatus::from_sample(whole.clone()),
                "{result:?}"
            );
            assert_eq!(
                (status.measured(), status.failure()),
                (whole.measured(), whole.failure())
            );
            // Another key's result is neither.
            let other = "cd".repeat(32);
            assert!(Sample::from_indexed("0001", || dir, &bytes, &other).is_none());
            assert!(SampleStatus::from_indexed("0001", || dir, &bytes, &other).is_none());
        }
    }

    #[test]
    fn an_outcome_without_a_known_status_or_a_field_is_refused() {
        for text in [
            "{}",
            r#"{"status":"done","error":"x"}"#,
            r#"{"error":"x","kind":"transient","log_tail":""}"#,
            r#"{"status":"failure","error":"x","log_tail":""}"#,
            r#"{"error":"x","status":"failure","log_tail":""}"#,
            "[]",
        ] {
            assert!(serde_json::from_str::<Outcome>(text).is_err(), "{text}");
        }
    }
}
