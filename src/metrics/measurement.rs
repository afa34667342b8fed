//! A measured run's numbers under the definitions of the client that measured
//! them: vLLM's (the built-in harness and `vllm bench serve`) or guidellm's.
//! (pure)

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{GuidellmMetrics, ServingMetrics};

/// Whose definitions a set of numbers follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricSet {
    /// `vllm bench serve`'s: TPOT excludes the first token; throughputs are totals / duration.
    #[default]
    Vllm,
    /// guidellm's: TPOT includes the TTFT; throughputs are means of rate distributions.
    Guidellm,
}

impl MetricSet {
    /// The name of the number a "Total TPS" column shows.
    pub fn tps(self) -> &'static str {
        match self {
            Self::Vllm => "total_token_throughput",
            Self::Guidellm => "tokens_per_second_mean",
        }
    }

    /// The name of the number a "Mean TTFT" column shows.
    pub fn ttft(self) -> &'static str {
        match self {
            Self::Vllm => "mean_ttft_ms",
            Self::Guidellm => "time_to_first_token_ms_mean",
        }
    }

    /// The name of the number a "Mean TPOT" column shows.
    pub fn tpot(self) -> &'static str {
        match self {
            Self::Vllm => "mean_tpot_ms",
            Self::Guidellm => "time_per_output_token_ms_mean",
        }
    }

    /// What a reader must know to compare these numbers with others.
    pub fn caveat(self) -> Option<&'static str> {
        match self {
            Self::Vllm => None,
            Self::Guidellm => Some(
                "Numbers are guidellm's, under its own definitions: Total TPS is `tokens_per_second_mean` \
                 (the mean of a rate distribution over time, not total tokens / duration) and Mean TPOT is \
                 `time_per_output_token_ms_mean`, which includes the time to first token \
                 (vLLM's TPOT is guidellm's `inter_token_latency_ms`).",
            ),
        }
    }
}

/// One sample's numbers, as its client defined them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
// `allow`, not `expect`: whether the lint fires depends on both sets' sizes.
#[allow(
    clippy::large_enum_variant,
    reason = "stored boxed in `Outcome`; vLLM's set is the common one"
)]
pub enum Measurement {
    Vllm(ServingMetrics),
    Guidellm(GuidellmMetrics),
}

impl Measurement {
    pub fn set(&self) -> MetricSet {
        match self {
            Self::Vllm(_) => MetricSet::Vllm,
            Self::Guidellm(_) => MetricSet::Guidellm,
        }
    }

    pub fn completed(&self) -> u64 {
        match self {
            Self::Vllm(m) => m.completed,
            Self::Guidellm(m) => m.completed(),
        }
    }

    pub fn failed(&self) -> u64 {
        match self {
            Self::Vllm(m) => m.failed,
            Self::Guidellm(m) => m.failed(),
        }
    }

    /// Every number by its name under the client's definitions.
    pub fn metric_map(&self) -> BTreeMap<String, f64> {
        match self {
            Self::Vllm(m) => m.metric_map(),
            Self::Guidellm(m) => m.metric_map(),
        }
    }

    /// One number by name.
    pub fn get(&self, name: &str) -> Option<f64> {
        match self {
            Self::Vllm(m) => m.get(name),
            Self::Guidellm(m) => m.metric_map().get(name).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_vllm_numbers_read_back_as_vllm_and_guidellm_as_guidellm() {
        let guidellm = GuidellmMetrics {
            guidellm_version: Some("0.7.2".into()),
            duration: None,
            request_totals: [("successful".to_owned(), 3)].into(),
            successful: [(
                "tokens_per_second".to_owned(),
                [("mean".to_owned(), 42.0)].into(),
            )]
            .into(),
        };
        let m = Measurement::Guidellm(guidellm);
        let back: Measurement = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.set(), MetricSet::Guidellm);
        assert_eq!(back.get(MetricSet::Guidellm.tps()), Some(42.0));
        assert_eq!(back.get(MetricSet::Vllm.tps()), None);
    }
}
