//! Mean end-to-end latency per request: what a latency study ranks by. (pure)

use std::collections::BTreeMap;

use crate::metrics::MetricSet;

/// Mean end-to-end latency per request, in ms, under the run's definitions.
///
/// vLLM's `mean_e2el_ms` when the run has it. Published vLLM blocks print no
/// end-to-end rows unless asked (`--percentile-metrics e2el`); their pages'
/// "Mean latency" is then mean TTFT + mean TPOT × (generated tokens /
/// successful requests − 1): a request's first token, then its other tokens
/// at the mean TPOT. This reproduces 7 of the 8 cells of the Qwen3-8B H100
/// latency page to the printed digit (the eighth computes to 1.77 s where the
/// page prints 1.78 s). Under guidellm's definitions it is
/// `request_latency_mean`, which guidellm keeps in seconds.
pub fn mean_latency_ms(metrics: &BTreeMap<String, f64>, set: MetricSet) -> Option<f64> {
    match set {
        MetricSet::Vllm => metrics
            .get("mean_e2el_ms")
            .copied()
            .or_else(|| derived_mean_latency_ms(metrics)),
        MetricSet::Guidellm => metrics.get("request_latency_mean").map(|s| s * 1000.0),
    }
}

/// Mean TTFT + mean TPOT × (output tokens / completed − 1), when all are known.
fn derived_mean_latency_ms(metrics: &BTreeMap<String, f64>) -> Option<f64> {
    let get = |name: &str| metrics.get(name).copied();
    let completed = get("completed").filter(|n| *n > 0.0)?;
    let tokens_per_request = get("total_output_tokens")? / completed;
    Some(get("mean_ttft_ms")? + get("mean_tpot_ms")? * (tokens_per_request - 1.0).max(0.0))
}

/// The spread of the mean latency over samples, where it was measured directly.
pub fn mean_latency_sd(sd: &BTreeMap<String, f64>, set: MetricSet) -> Option<f64> {
    match set {
        MetricSet::Vllm => sd.get("mean_e2el_ms").copied(),
        MetricSet::Guidellm => sd.get("request_latency_mean").map(|s| s * 1000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(ttft: f64, tpot: f64) -> BTreeMap<String, f64> {
        [
            ("completed", 100.0),
            ("total_output_tokens", 22061.0),
            ("mean_ttft_ms", ttft),
            ("mean_tpot_ms", tpot),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    fn seconds(ms: f64) -> String {
        format!("{:.2}", ms / 1000.0)
    }

    /// The 8 cells of the conclusion of `qwen3-8b-h100-latency`: (BS, mean
    /// TTFT, mean TPOT of its block, "Mean latency" the page prints).
    #[test]
    fn the_latency_page_s_mean_latency_is_ttft_plus_tpot_per_further_token() {
        let baseline = [
            (1, 59.01, 7.28, "1.66"),
            (2, 63.78, 7.37, "1.68"),
            (4, 64.00, 7.38, "1.68"),
            // The page prints 1.78: the one cell the formula misses by a digit.
            (8, 74.57, 7.71, "1.77"),
        ];
        let optimized = [
            (1, 34.70, 2.67, "0.62"),
            (2, 39.41, 3.04, "0.71"),
            (4, 39.93, 3.34, "0.77"),
            (8, 42.27, 4.82, "1.10"),
        ];
        for (bs, ttft, tpot, page) in baseline.iter().chain(&optimized) {
            let ms = mean_latency_ms(&block(*ttft, *tpot), MetricSet::Vllm).unwrap();
            assert_eq!(seconds(ms), *page, "BS={bs}, TTFT {ttft}, TPOT {tpot}");
        }
    }

    #[test]
    fn a_measured_end_to_end_latency_is_used_as_is() {
        let mut m = block(59.01, 7.28);
        m.insert("mean_e2el_ms".into(), 2000.0);
        assert_eq!(mean_latency_ms(&m, MetricSet::Vllm), Some(2000.0));
        let guidellm = [("request_latency_mean".to_owned(), 2.62)].into();
        assert_eq!(
            mean_latency_ms(&guidellm, MetricSet::Guidellm),
            Some(2620.0)
        );
    }

    #[test]
    fn without_its_parts_there_is_no_latency() {
        let mut m = block(59.01, 7.28);
        m.remove("mean_tpot_ms");
        assert_eq!(mean_latency_ms(&m, MetricSet::Vllm), None);
        let mut none_done = block(59.01, 7.28);
        none_done.insert("completed".into(), 0.0);
        assert_eq!(mean_latency_ms(&none_done, MetricSet::Vllm), None);
    }
}
