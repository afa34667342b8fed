//! The runs table, failures, telemetry and harness warnings: every number
//! the report rests on, with where it came from. (pure)

use std::fmt::Write;

use super::inline::{cell_code, code, text};
use crate::analyze::RunRecord;
use crate::metrics::MetricSet;
use crate::metrics::telemetry::{self, TelemetrySummary};

/// The runs table's columns: (metric, header), under the client's own names.
pub(super) fn run_columns(set: MetricSet) -> &'static [(&'static str, &'static str)] {
    match set {
        MetricSet::Vllm => VLLM_COLUMNS,
        MetricSet::Guidellm => GUIDELLM_COLUMNS,
    }
}

const GUIDELLM_COLUMNS: &[(&str, &str)] = &[
    ("request_totals_successful", "Requests"),
    ("tokens_per_second_mean", "tokens_per_second mean"),
    (
        "output_tokens_per_second_mean",
        "output_tokens_per_second mean",
    ),
    ("time_to_first_token_ms_mean", "time_to_first_token_ms mean"),
    ("time_to_first_token_ms_p99", "time_to_first_token_ms p99"),
    (
        "time_per_output_token_ms_mean",
        "time_per_output_token_ms mean",
    ),
    ("inter_token_latency_ms_mean", "inter_token_latency_ms mean"),
    ("inter_token_latency_ms_p99", "inter_token_latency_ms p99"),
];

const VLLM_COLUMNS: &[(&str, &str)] = &[
    ("completed", "Requests"),
    ("duration", "Duration (s)"),
    ("total_token_throughput", "Total TPS"),
    ("output_throughput", "Output TPS"),
    ("mean_ttft_ms", "Mean TTFT (ms)"),
    ("p99_ttft_ms", "P99 TTFT (ms)"),
    ("mean_tpot_ms", "Mean TPOT (ms)"),
    ("p99_tpot_ms", "P99 TPOT (ms)"),
    ("mean_itl_ms", "Mean ITL (ms)"),
    ("p99_itl_ms", "P99 ITL (ms)"),
];

pub(super) fn runs(out: &mut String, columns: &[(&str, &str)], runs: &[RunRecord]) {
    out.push_str("## Runs\n\n| Step | Workload | Key | Source |");
    for (_, header) in columns {
        let _ = write!(out, " {header} |");
    }
    out.push_str("\n|---|---|---|---|");
    out.push_str(&"---:|".repeat(columns.len()));
    out.push('\n');
    for r in runs {
        let key = r
            .key
            .as_deref()
            .map_or("-".to_owned(), |k| format!("`{}`", &k[..12]));
        let source = match (r.source, r.samples) {
            (Some(s), n) if n > 1 => format!("{} (n={n})", s.label()),
            (Some(s), _) => s.label().to_owned(),
            (None, _) => "not run".to_owned(),
        };
        let _ = write!(
            out,
            "| {} | {} | {key} | {source} |",
            cell_code(&r.step),
            cell_code(&r.workload)
        );
        for (i, (name, _)) in columns.iter().enumerate() {
            match (r.metrics.get(*name), &r.failure) {
                // The first column counts requests.
                (Some(v), _) if i == 0 => {
                    let _ = write!(out, " {v:.0} |");
                }
                (Some(v), _) => {
                    let _ = write!(out, " {v:.2} |");
                }
                (None, Some(_)) if i == 0 => out.push_str(" failed |"),
                _ => out.push_str(" - |"),
            }
        }
        out.push('\n');
    }
    let failures: Vec<&RunRecord> = runs.iter().filter(|r| r.failure.is_some()).collect();
    if !failures.is_empty() {
        out.push_str("\nFailed runs:\n\n");
        for r in failures {
            let _ = writeln!(
                out,
                "- {} × {}: {}",
                code(&r.step),
                code(&r.workload),
                code(r.failure.as_deref().unwrap_or_default())
            );
        }
    }
    substituted(out, runs);
    super::slo::attainment(out, runs);
    telemetry(out, runs);
    let warned: Vec<&RunRecord> = runs.iter().filter(|r| !r.warnings.is_empty()).collect();
    if !warned.is_empty() {
        out.push_str("\nWarnings from the harness:\n\n");
        for r in warned {
            for w in &r.warnings {
                let _ = writeln!(
                    out,
                    "- {} × {}: {}",
                    code(&r.step),
                    code(&r.workload),
                    text(w)
                );
            }
        }
    }
}

/// Which samples came from a result cache, and who signed them: numbers
/// from another machine are worth what their signer is.
fn substituted(out: &mut String, runs: &[RunRecord]) {
    let signed: Vec<&RunRecord> = runs.iter().filter(|r| !r.signers.is_empty()).collect();
    if signed.is_empty() {
        return;
    }
    out.push_str("\nSubstituted from a result cache:\n\n");
    for r in signed {
        let by: Vec<String> = r
            .signers
            .iter()
            .map(|(name, n)| {
                format!(
                    "{} signed by {}",
                    crate::plural::count(*n, "sample", "samples"),
                    code(name)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "- {} × {}: {}",
            code(&r.step),
            code(&r.workload),
            by.join(", ")
        );
    }
}

/// GPU and engine readings beside the numbers: power, heat, throttling, queues.
fn telemetry(out: &mut String, runs: &[RunRecord]) {
    let with: Vec<(&RunRecord, &TelemetrySummary)> = runs
        .iter()
        .filter_map(|r| Some((r, r.telemetry.as_ref()?)))
        .collect();
    if with.is_empty() {
        return;
    }
    out.push_str("\nTelemetry while measuring:\n\n");
    // Runs on a machine without GPUs: the engine's processes instead of GPUs.
    if with
        .iter()
        .all(|(_, t)| t.gpu_samples == 0 && t.process_samples > 0)
    {
        cpu_telemetry(out, &with);
        return;
    }
    out.push_str("| Step | Workload | Mean power (W) | Mean GPU util (%) | Max temp (°C) | Throttling | Mean KV cache | Max running | Max waiting | Preemptions |\n");
    out.push_str("|---|---|---:|---:|---:|---|---:|---:|---:|---:|\n");
    let num = |v: Option<f64>, digits: usize| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
    for (r, t) in with {
        let throttling = if t.gpu_samples == 0 {
            "-".to_owned()
        } else if t.throttling.is_empty() {
            "none".to_owned()
        } else {
            let mut names: Vec<String> = t
                .throttling
                .iter()
                .flat_map(|mask| telemetry::throttle_reason_names(mask))
                .collect();
            names.sort();
            names.dedup();
            text(&names.join(", "))
        };
        let kv = t
            .mean_kv_cache_usage
            .map_or("-".to_owned(), kv_cache_percent);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {throttling} | {kv} | {} | {} | {} |",
            cell_code(&r.step),
            cell_code(&r.workload),
            num(t.mean_power_w, 1),
            num(t.mean_gpu_utilization_pct, 0),
            num(t.max_temperature_c, 0),
            num(t.max_running, 0),
            num(t.max_waiting, 0),
            num(t.preemptions, 0)
        );
    }
}

/// Telemetry of runs without GPUs: the engine's CPU time and resident memory.
fn cpu_telemetry(out: &mut String, with: &[(&RunRecord, &TelemetrySummary)]) {
    out.push_str("| Step | Workload | Engine CPU (s) | Max engine RSS (MiB) | Mean KV cache | Max running | Max waiting | Preemptions |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|\n");
    let num = |v: Option<f64>, digits: usize| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
    for (r, t) in with {
        let kv = t
            .mean_kv_cache_usage
            .map_or("-".to_owned(), kv_cache_percent);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {kv} | {} | {} | {} |",
            cell_code(&r.step),
            cell_code(&r.workload),
            num(t.engine_cpu_seconds, 1),
            num(t.max_engine_rss_mib, 0),
            num(t.max_running, 0),
            num(t.max_waiting, 0),
            num(t.preemptions, 0)
        );
    }
}

/// A KV-cache usage (0..1) as a percentage with two significant digits, so
/// a small one is not "0%": a tiny model on a CPU uses 0.2 % of its cache.
fn kv_cache_percent(usage: f64) -> String {
    let percent = usage * 100.0;
    if percent <= 0.0 || !percent.is_finite() {
        return format!("{percent:.0}%");
    }
    let decimals = (1.0 - percent.log10().floor()).clamp(0.0, 6.0) as usize;
    format!("{percent:.decimals$}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_kv_cache_usage_keeps_digits_enough_to_be_non_zero() {
        let shown: Vec<String> = [0.473, 0.025, 0.002, 0.000_13, 0.0]
            .into_iter()
            .map(kv_cache_percent)
            .collect();
        assert_eq!(shown, ["47%", "2.5%", "0.20%", "0.013%", "0%"]);
    }
}
