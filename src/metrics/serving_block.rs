//! The "Serving Benchmark Result" block `vllm bench serve` v0.11 prints.

use std::fmt::Write;

use super::ServingMetrics;

/// Renders the block as vLLM v0.11 prints it (rows `{:<40} {:<10}`), plus the
/// `Failed requests:` row that later vLLM versions print, when any failed.
pub fn render_serving_block(m: &ServingMetrics) -> String {
    let mut out = String::new();
    let int = |out: &mut String, label: &str, v: u64| {
        let _ = writeln!(out, "{:<40} {:<10}", label, v);
    };
    let float = |out: &mut String, label: &str, v: f64| {
        let _ = writeln!(out, "{:<40} {:<10.2}", label, v);
    };
    let section = |out: &mut String, title: &str| {
        let _ = writeln!(out, "{:-^50}", title);
    };
    let _ = writeln!(out, "{:=^50}", " Serving Benchmark Result ");
    int(&mut out, "Successful requests:", m.completed);
    if m.failed > 0 {
        int(&mut out, "Failed requests:", m.failed);
    }
    float(&mut out, "Benchmark duration (s):", m.duration);
    int(&mut out, "Total input tokens:", m.total_input_tokens);
    int(&mut out, "Total generated tokens:", m.total_output_tokens);
    float(
        &mut out,
        "Request throughput (req/s):",
        m.request_throughput,
    );
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
    for (title, name, short) in [
        ("Time to First Token", "ttft", "TTFT"),
        ("Time per Output Token (excl. 1st token)", "tpot", "TPOT"),
        ("Inter-token Latency", "itl", "ITL"),
    ] {
        section(&mut out, title);
        for (stat, label) in [("mean", "Mean"), ("median", "Median"), ("p99", "P99")] {
            let v = m.get(&format!("{stat}_{name}_ms")).unwrap_or(f64::NAN);
            float(&mut out, &format!("{label} {short} (ms):"), v);
        }
    }
    let _ = writeln!(out, "{}", "=".repeat(50));
    out.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}
