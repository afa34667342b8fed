//! The "Serving Benchmark Result" block `vllm bench serve` v0.11 prints.

use std::fmt::Write;

use super::{Latency, ServingMetrics, percentile_key};

/// Which optional rows and sections the block has, as vLLM decides them.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockOptions {
    /// `--percentile-metrics`, in vLLM's section order.
    pub percentile_metrics: Vec<Latency>,
    /// `--metric-percentiles`.
    pub percentiles: Vec<f64>,
    pub max_concurrency: Option<u32>,
    /// `None` for `inf`.
    pub request_rate: Option<f64>,
}

impl Default for BlockOptions {
    fn default() -> Self {
        Self {
            percentile_metrics: vec![Latency::Ttft, Latency::Tpot, Latency::Itl],
            percentiles: vec![99.0],
            max_concurrency: None,
            request_rate: None,
        }
    }
}

/// Renders the block as vLLM v0.11 prints it (rows `{:<40} {:<10}`, trailing
/// spaces trimmed as the published pages show it), plus the `Failed requests:`
/// row that later vLLM versions print, when any failed.
pub fn render_serving_block(m: &ServingMetrics, options: &BlockOptions) -> String {
    let mut out = String::new();
    let int = |out: &mut String, label: &str, v: u64| {
        let _ = writeln!(out, "{label:<40} {v:<10}");
    };
    let float = |out: &mut String, label: &str, v: f64| {
        let _ = writeln!(out, "{label:<40} {v:<10.2}");
    };
    let _ = writeln!(out, "{:=^50}", " Serving Benchmark Result ");
    int(&mut out, "Successful requests:", m.completed);
    if m.failed > 0 {
        int(&mut out, "Failed requests:", m.failed);
    }
    if let Some(c) = options.max_concurrency {
        int(&mut out, "Maximum request concurrency:", u64::from(c));
    }
    if let Some(r) = options.request_rate {
        float(&mut out, "Request rate configured (RPS):", r);
    }
    float(&mut out, "Benchmark duration (s):", m.duration);
    int(&mut out, "Total input tokens:", m.total_input_tokens);
    int(&mut out, "Total generated tokens:", m.total_output_tokens);
    float(
        &mut out,
        "Request throughput (req/s):",
        m.request_throughput,
    );
    if let Some(g) = m.request_goodput {
        float(&mut out, "Request goodput (req/s):", g);
    }
    float(
        &mut out,
        "Output token throughput (tok/s):",
        m.output_throughput,
    );
    float(
        &mut out,
        "Peak output token throughput (tok/s):",
        m.max_output_tokens_per_s,
    );
    float(
        &mut out,
        "Peak concurrent requests:",
        m.max_concurrent_requests,
    );
    float(
        &mut out,
        "Total Token throughput (tok/s):",
        m.total_token_throughput,
    );
    for latency in Latency::ALL
        .into_iter()
        .filter(|l| options.percentile_metrics.contains(l))
    {
        let (title, short) = match latency {
            Latency::Ttft => ("Time to First Token", "TTFT"),
            Latency::Tpot => ("Time per Output Token (excl. 1st token)", "TPOT"),
            Latency::Itl => ("Inter-token Latency", "ITL"),
            Latency::E2el => ("End-to-end Latency", "E2EL"),
        };
        let _ = writeln!(out, "{title:-^50}");
        let name = latency.name();
        float(
            &mut out,
            &format!("Mean {short} (ms):"),
            m.get(&format!("mean_{name}_ms")).unwrap_or(f64::NAN),
        );
        float(
            &mut out,
            &format!("Median {short} (ms):"),
            m.get(&format!("median_{name}_ms")).unwrap_or(f64::NAN),
        );
        for &p in &options.percentiles {
            let key = percentile_key(p, latency);
            let label = key
                .trim_end_matches(&format!("_{name}_ms"))
                .trim_start_matches('p')
                .to_owned();
            float(
                &mut out,
                &format!("P{label} {short} (ms):"),
                m.get(&key).unwrap_or(f64::NAN),
            );
        }
    }
    let _ = writeln!(out, "{}", "=".repeat(50));
    out.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{MetricOptions, RequestRecord, compute};

    #[test]
    fn layout_matches_vllm_v0_11() {
        let r = RequestRecord {
            success: true,
            prompt_len: 10,
            output_tokens: 3,
            requested_output_tokens: 3,
            start: 0.0,
            ttft: 0.1,
            latency: 0.3,
            itl: crate::metrics::Gaps::from_secs(&[0.1, 0.1]),
            ..Default::default()
        };
        let options = MetricOptions {
            percentiles: vec![90.0, 99.0],
            goodput: vec![],
        };
        let m = compute(&[r], 0.5, &options);
        let block = BlockOptions {
            percentile_metrics: vec![Latency::Ttft, Latency::E2el],
            percentiles: vec![90.0, 99.0],
            max_concurrency: Some(8),
            request_rate: None,
        };
        insta::assert_snapshot!(render_serving_block(&m, &block), @r"
        ============ Serving Benchmark Result ============
        Successful requests:                     1
        Maximum request concurrency:             8
        Benchmark duration (s):                  0.50
        Total input tokens:                      10
        Total generated tokens:                  3
        Request throughput (req/s):              2.00
        Output token throughput (tok/s):         6.00
        Peak output token throughput (tok/s):    3.00
        Peak concurrent requests:                1.00
        Total Token throughput (tok/s):          26.00
        ---------------Time to First Token----------------
        Mean TTFT (ms):                          100.00
        Median TTFT (ms):                        100.00
        P90 TTFT (ms):                           100.00
        P99 TTFT (ms):                           100.00
        ----------------End-to-end Latency----------------
        Mean E2EL (ms):                          300.00
        Median E2EL (ms):                        300.00
        P90 E2EL (ms):                           300.00
        P99 E2EL (ms):                           300.00
        ==================================================
        ");
    }
}
