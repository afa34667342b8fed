//! guidellm's metrics under guidellm's own definitions, read from its JSON
//! report (`--output kind=json`). They are never renamed into vLLM's: its
//! `time_per_output_token_ms` includes the TTFT (vLLM's TPOT does not; vLLM's
//! TPOT is guidellm's `inter_token_latency_ms`), and its throughputs are means
//! of rate distributions over time, not totals over the duration. (pure)

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The guidellm distributions perfpipe keeps, by guidellm's key in
/// `benchmarks[].metrics`. Each is summarized over successful requests.
pub const GUIDELLM_METRICS: &[&str] = &[
    "requests_per_second",
    "request_concurrency",
    "request_latency",
    "prompt_token_count",
    "output_token_count",
    "time_to_first_token_ms",
    "time_per_output_token_ms",
    "inter_token_latency_ms",
    "prompt_tokens_per_second",
    "output_tokens_per_second",
    "tokens_per_second",
];

/// The statistics kept of each distribution, by guidellm's key.
const STATS: &[&str] = &["mean", "median", "std_dev", "min", "max", "p95", "p99"];

/// Request counts, by guidellm's status.
const STATUSES: &[&str] = &["successful", "incomplete", "errored", "total"];

/// Numbers GPUStack's guidellm-era block prints that are not among the
/// statistics above: the benchmark's `duration` (s), the token counts summed
/// over successful requests (GPUStack prints mean × successful), and the
/// observed peak concurrency as its "Maximum request concurrency" row rounds
/// it. A measured run has them too, from the same report.
pub const GUIDELLM_BLOCK_NAMES: &[&str] = &[
    "duration",
    "prompt_token_count_total_sum",
    "output_token_count_total_sum",
    "request_concurrency_max_rounded",
];

/// Distributions whose sum over successful requests is kept (`<metric>_total_sum`).
const SUMMED: &[&str] = &["prompt_token_count", "output_token_count"];

/// Every name a guidellm result has (and an experiment may expect):
/// `<metric>_<stat>` (`tokens_per_second_mean`), `request_totals_<status>`,
/// and the numbers of GPUStack's block (`GUIDELLM_BLOCK_NAMES`).
pub static GUIDELLM_METRIC_NAMES: LazyLock<Vec<String>> = LazyLock::new(|| {
    STATUSES
        .iter()
        .map(|s| format!("request_totals_{s}"))
        .chain(
            GUIDELLM_METRICS
                .iter()
                .flat_map(|m| STATS.iter().map(move |s| format!("{m}_{s}"))),
        )
        .chain(GUIDELLM_BLOCK_NAMES.iter().map(|n| (*n).to_owned()))
        .collect()
});

/// One run's guidellm numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuidellmMetrics {
    /// `metadata.guidellm_version` when the report states it.
    pub guidellm_version: Option<String>,
    /// The benchmark's `duration` (s), when the report states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    /// `request_totals`: successful, incomplete, errored, total.
    pub request_totals: BTreeMap<String, u64>,
    /// Each kept distribution's statistics over successful requests.
    pub successful: BTreeMap<String, BTreeMap<String, f64>>,
}

impl GuidellmMetrics {
    pub fn completed(&self) -> u64 {
        self.request_totals.get("successful").copied().unwrap_or(0)
    }

    /// Requests that did not succeed: errored and incomplete alike.
    pub fn failed(&self) -> u64 {
        ["errored", "incomplete"]
            .iter()
            .filter_map(|s| self.request_totals.get(*s))
            .sum()
    }

    /// Every number by its flat name (`tokens_per_second_mean`).
    pub fn metric_map(&self) -> BTreeMap<String, f64> {
        let totals = self
            .request_totals
            .iter()
            .map(|(s, n)| (format!("request_totals_{s}"), *n as f64));
        let stats = self.successful.iter().flat_map(|(metric, stats)| {
            stats
                .iter()
                .map(move |(stat, v)| (format!("{metric}_{stat}"), *v))
        });
        let peak = self
            .successful
            .get("request_concurrency")
            .and_then(|s| s.get("max"))
            .map(|max| ("request_concurrency_max_rounded".to_owned(), max.round()));
        let duration = self.duration.map(|d| ("duration".to_owned(), d));
        totals.chain(stats).chain(peak).chain(duration).collect()
    }
}

/// Reads guidellm's JSON report of one benchmark.
pub fn read_report(json: &str) -> Result<GuidellmMetrics, String> {
    let v: Value =
        serde_json::from_str(json).map_err(|e| format!("the guidellm report is not JSON: {e}"))?;
    let benchmarks = v
        .get("benchmarks")
        .and_then(Value::as_array)
        .ok_or("the guidellm report has no `benchmarks` list")?;
    let [benchmark] = benchmarks.as_slice() else {
        return Err(format!(
            "the guidellm report has {} benchmarks; perfpipe runs one profile per run",
            benchmarks.len()
        ));
    };
    let metrics = benchmark
        .get("metrics")
        .ok_or("the guidellm benchmark has no `metrics`")?;
    let mut request_totals = BTreeMap::new();
    for status in STATUSES {
        let n = metrics
            .pointer(&format!("/request_totals/{status}"))
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("the guidellm report has no `request_totals.{status}`"))?;
        request_totals.insert((*status).to_owned(), n);
    }
    let mut successful = BTreeMap::new();
    for metric in GUIDELLM_METRICS {
        let summary = metrics
            .pointer(&format!("/{metric}/successful"))
            .ok_or_else(|| format!("the guidellm report has no `{metric}.successful`"))?;
        let mut stats = BTreeMap::new();
        for stat in STATS {
            let path = match *stat {
                "p95" | "p99" => format!("/percentiles/{stat}"),
                _ => format!("/{stat}"),
            };
            let value = summary
                .pointer(&path)
                .and_then(Value::as_f64)
                .ok_or_else(|| {
                    format!(
                        "the guidellm report has no number `{metric}.successful{}`",
                        path.replace('/', ".")
                    )
                })?;
            stats.insert((*stat).to_owned(), value);
        }
        if SUMMED.contains(metric)
            && let Some(sum) = summary.get("total_sum").and_then(Value::as_f64)
        {
            stats.insert("total_sum".to_owned(), sum);
        }
        successful.insert((*metric).to_owned(), stats);
    }
    Ok(GuidellmMetrics {
        guidellm_version: v
            .pointer("/metadata/guidellm_version")
            .and_then(Value::as_str)
            .map(str::to_owned),
        duration: benchmark.get("duration").and_then(Value::as_f64),
        request_totals,
        successful,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A report shaped as guidellm writes it, each distribution's mean `m`.
    fn report(m: impl Fn(&str) -> f64) -> Value {
        let dist = |mean: f64| {
            json!({
                "mean": mean, "median": mean, "mode": mean, "variance": 0.0, "std_dev": 0.5,
                "min": 0.0, "max": 2.0 * mean, "count": 9, "total_sum": 9.0 * mean,
                "percentiles": {"p001": 0.0, "p01": 0.0, "p05": 0.0, "p10": 0.0, "p25": 0.0,
                    "p50": mean, "p75": mean, "p90": mean, "p95": 1.5 * mean,
                    "p99": 1.9 * mean, "p999": 2.0 * mean}
            })
        };
        let mut metrics = json!({
            "request_totals": {"successful": 9, "incomplete": 0, "errored": 1, "total": 10}
        });
        for name in GUIDELLM_METRICS {
            metrics[*name] = json!({
                "successful": dist(m(name)), "incomplete": dist(0.0),
                "errored": dist(0.0), "total": dist(m(name))
            });
        }
        json!({"metadata": {"version": 2, "guidellm_version": "0.7.2"},
               "args": {}, "benchmarks": [{"duration": 12.5, "metrics": metrics}]})
    }

    #[test]
    fn keeps_guidellm_names_and_definitions() {
        let v = report(|name| match name {
            "time_per_output_token_ms" => 30.0,
            "inter_token_latency_ms" => 20.0,
            "tokens_per_second" => 5000.0,
            _ => 1.0,
        });
        let m = read_report(&v.to_string()).unwrap();
        assert_eq!(m.guidellm_version.as_deref(), Some("0.7.2"));
        assert_eq!((m.completed(), m.failed()), (9, 1));
        let map = m.metric_map();
        assert_eq!(map["tokens_per_second_mean"], 5000.0);
        assert_eq!(map["time_per_output_token_ms_mean"], 30.0);
        assert_eq!(map["time_per_output_token_ms_p99"], 57.0);
        assert_eq!(map["inter_token_latency_ms_std_dev"], 0.5);
        assert_eq!(map["request_totals_errored"], 1.0);
        assert!(
            !map.contains_key("mean_tpot_ms"),
            "never renamed into vLLM's names"
        );
        // The numbers GPUStack's block prints besides the statistics.
        assert_eq!(map["duration"], 12.5);
        assert_eq!(map["output_token_count_total_sum"], 9.0);
        assert_eq!(map["request_concurrency_max_rounded"], 2.0);
        let names: Vec<&String> = map.keys().collect();
        let mut declared: Vec<&String> = GUIDELLM_METRIC_NAMES.iter().collect();
        declared.sort();
        assert_eq!(names, declared, "every name an experiment may expect");
    }

    #[test]
    fn a_missing_number_is_named() {
        let mut v = report(|_| 1.0);
        v["benchmarks"][0]["metrics"]["inter_token_latency_ms"]["successful"]["percentiles"]
            .as_object_mut()
            .unwrap()
            .remove("p99");
        assert_eq!(
            read_report(&v.to_string()).unwrap_err(),
            "the guidellm report has no number `inter_token_latency_ms.successful.percentiles.p99`"
        );
        v["benchmarks"] = json!([]);
        assert_eq!(
            read_report(&v.to_string()).unwrap_err(),
            "the guidellm report has 0 benchmarks; perfpipe runs one profile per run"
        );
        assert!(read_report("not json").is_err());
    }
}
