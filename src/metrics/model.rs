//! The metric set, named as `vllm bench serve --save-result` names them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One benchmark's numbers; field names are vLLM v0.11's JSON keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServingMetrics {
    pub completed: u64,
    pub failed: u64,
    /// Seconds from the first request sent to the last response finished.
    pub duration: f64,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    pub request_throughput: f64,
    /// Requests that met every `--goodput` SLO, per second; `None` without SLOs.
    #[serde(default)]
    pub request_goodput: Option<f64>,
    pub output_throughput: f64,
    /// (input + output tokens) / duration: the "Total TPS" of published tables.
    pub total_token_throughput: f64,
    /// vLLM v0.11's peak: the largest number of chunks in one 1-second bin.
    pub max_output_tokens_per_s: f64,
    /// vLLM v0.11's peak concurrency: the max over 1-second buckets.
    pub max_concurrent_requests: f64,
    /// perfpipe's peak: the largest number of output tokens in one 1-second
    /// bin, each chunk weighing its request's tokens / chunks (= 1 when every
    /// chunk carries one token), so multi-token chunks are not undercounted.
    /// `None` when the numbers came from a client that does not compute it.
    #[serde(default)]
    pub exact_max_output_tokens_per_s: Option<f64>,
    /// perfpipe's peak concurrency: the most requests in flight at one instant
    /// (a sweep over `[start, end)` intervals).
    #[serde(default)]
    pub exact_max_concurrent_requests: Option<f64>,
    /// Where `total_output_tokens` came from: `usage` (the server's),
    /// `tokenizer` (the streamed text, when the server sent no usage) or
    /// `mixed`. `None` when the numbers came from another client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_source: Option<super::compute::OutputTokensSource>,
    pub mean_ttft_ms: f64,
    pub median_ttft_ms: f64,
    pub std_ttft_ms: f64,
    pub p99_ttft_ms: f64,
    pub mean_tpot_ms: f64,
    pub median_tpot_ms: f64,
    pub std_tpot_ms: f64,
    pub p99_tpot_ms: f64,
    pub mean_itl_ms: f64,
    pub median_itl_ms: f64,
    pub std_itl_ms: f64,
    pub p99_itl_ms: f64,
    pub mean_e2el_ms: f64,
    pub median_e2el_ms: f64,
    pub std_e2el_ms: f64,
    pub p99_e2el_ms: f64,
    /// Further `--metric-percentiles`, by vLLM key (`p90_ttft_ms`, `p99.9_itl_ms`).
    #[serde(flatten, default)]
    pub percentiles: BTreeMap<String, f64>,
}

/// Metrics an experiment may state a published value for (the rows of vLLM's
/// block, and the settings it states: `max_concurrency`, the configured limit,
/// and `request_rate`, which a measured run has only as declared).
pub const METRIC_NAMES: &[&str] = &[
    "completed",
    "failed",
    "duration",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
    "total_token_throughput",
    "request_goodput",
    "exact_max_output_tokens_per_s",
    "exact_max_concurrent_requests",
    "mean_ttft_ms",
    "median_ttft_ms",
    "p95_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "median_tpot_ms",
    "p95_tpot_ms",
    "p99_tpot_ms",
    "mean_itl_ms",
    "median_itl_ms",
    "p95_itl_ms",
    "p99_itl_ms",
    "mean_e2el_ms",
    "median_e2el_ms",
    "p95_e2el_ms",
    "p99_e2el_ms",
    "max_concurrency",
    "request_rate",
];

/// The fields of [`ServingMetrics`] that hold a number (or may: the
/// `Option`s), by their `--save-result` names: what [`ServingMetrics::get`]
/// reads (a test checks they are all of its numbers, as serde writes them).
const NUMBER_FIELDS: [&str; 29] = [
    "completed",
    "failed",
    "duration",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
    "exact_max_output_tokens_per_s",
    "exact_max_concurrent_requests",
    "mean_ttft_ms",
    "median_ttft_ms",
    "std_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "median_tpot_ms",
    "std_tpot_ms",
    "p99_tpot_ms",
    "mean_itl_ms",
    "median_itl_ms",
    "std_itl_ms",
    "p99_itl_ms",
    "mean_e2el_ms",
    "median_e2el_ms",
    "std_e2el_ms",
    "p99_e2el_ms",
];

impl ServingMetrics {
    /// Every number by its `--save-result` name: the fields, then the
    /// further percentiles (one of which named as a field wins, as it does
    /// in the JSON, where it comes last). Read field by field, not through
    /// `serde_json::Value`: a report of 10,000 runs makes one per sample.
    pub fn metric_map(&self) -> BTreeMap<String, f64> {
        let fields = NUMBER_FIELDS
            .iter()
            .filter_map(|name| Some((name.to_string(), self.get(name)?)));
        let percentiles = self.percentiles.iter().map(|(k, v)| (k.clone(), *v));
        fields.chain(percentiles).collect()
    }

    /// A metric by its `--save-result` name.
    pub fn get(&self, name: &str) -> Option<f64> {
        Some(match name {
            "completed" => self.completed as f64,
            "failed" => self.failed as f64,
            "duration" => self.duration,
            "total_input_tokens" => self.total_input_tokens as f64,
            "total_output_tokens" => self.total_output_tokens as f64,
            "request_throughput" => self.request_throughput,
            "output_throughput" => self.output_throughput,
            "total_token_throughput" => self.total_token_throughput,
            "max_output_tokens_per_s" => self.max_output_tokens_per_s,
            "max_concurrent_requests" => self.max_concurrent_requests,
            "mean_ttft_ms" => self.mean_ttft_ms,
            "median_ttft_ms" => self.median_ttft_ms,
            "std_ttft_ms" => self.std_ttft_ms,
            "p99_ttft_ms" => self.p99_ttft_ms,
            "mean_tpot_ms" => self.mean_tpot_ms,
            "median_tpot_ms" => self.median_tpot_ms,
            "std_tpot_ms" => self.std_tpot_ms,
            "p99_tpot_ms" => self.p99_tpot_ms,
            "mean_itl_ms" => self.mean_itl_ms,
            "median_itl_ms" => self.median_itl_ms,
            "std_itl_ms" => self.std_itl_ms,
            "p99_itl_ms" => self.p99_itl_ms,
            "mean_e2el_ms" => self.mean_e2el_ms,
            "median_e2el_ms" => self.median_e2el_ms,
            "std_e2el_ms" => self.std_e2el_ms,
            "p99_e2el_ms" => self.p99_e2el_ms,
            "exact_max_output_tokens_per_s" => self.exact_max_output_tokens_per_s?,
            "exact_max_concurrent_requests" => self.exact_max_concurrent_requests?,
            "request_goodput" => self.request_goodput?,
            other => return self.percentiles.get(other).copied(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every number serde writes of `m`, by name: what `metric_map` gave
    /// when it went through `serde_json::Value`.
    fn numbers_as_serialized(m: &ServingMetrics) -> BTreeMap<String, f64> {
        let value = serde_json::to_value(m).unwrap();
        (value.as_object().unwrap().iter())
            .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
            .collect()
    }

    #[test]
    fn the_metric_map_holds_every_number_serde_writes_and_nothing_else() {
        let mut json = serde_json::Map::new();
        for (name, value) in NUMBER_FIELDS.iter().zip(1u32..) {
            json.insert(name.to_string(), value.into());
        }
        json.insert("output_tokens_source".into(), "usage".into());
        json.insert("p90_ttft_ms".into(), 1.5.into());
        let full: ServingMetrics = serde_json::from_value(json.clone().into()).unwrap();
        assert_eq!(full.metric_map(), numbers_as_serialized(&full));
        assert_eq!(full.metric_map().len(), NUMBER_FIELDS.len() + 1);
        // The optional numbers absent, and a percentile named as a field.
        for name in [
            "request_goodput",
            "exact_max_output_tokens_per_s",
            "exact_max_concurrent_requests",
        ] {
            json.remove(name);
        }
        let mut partial: ServingMetrics = serde_json::from_value(json.into()).unwrap();
        partial.percentiles.insert("mean_ttft_ms".into(), 99.0);
        assert_eq!(partial.metric_map(), numbers_as_serialized(&partial));
        assert_eq!(partial.metric_map()["mean_ttft_ms"], 99.0);
    }

    #[test]
    fn every_expectable_metric_can_be_read() {
        // Settings, not measurements: only a published block states them.
        let settings = ["max_concurrency", "request_rate"];
        // Every field a distinct value, so an arm of `get` reading another
        // field's value fails; the spreads are fields no expectation names.
        let spreads = ["std_ttft_ms", "std_tpot_ms", "std_itl_ms", "std_e2el_ms"];
        let fields: Vec<(&str, u64)> = METRIC_NAMES
            .iter()
            .filter(|name| !settings.contains(name))
            .chain(spreads.iter())
            .zip(1..)
            .map(|(name, value)| (*name, value))
            .collect();
        let json: serde_json::Map<String, serde_json::Value> = fields
            .iter()
            .map(|(name, value)| (name.to_string(), (*value).into()))
            .collect();
        let m: ServingMetrics = serde_json::from_value(json.into()).unwrap();
        for (name, value) in &fields {
            assert_eq!(m.get(name), Some(*value as f64), "{name}");
        }
        for name in settings {
            assert_eq!(m.get(name), None, "{name}");
        }
    }
}
