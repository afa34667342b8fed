//! The markdown report, modelled on the published studies: conclusion first,
//! then one section per comparison, then every run's numbers.

use std::fmt::Write;

use crate::analyze::{Analysis, ComparisonResult, ConclusionTable, RunRecord, Source};
use crate::engine::command::display_command;
use crate::metrics::MetricSet;
use crate::metrics::telemetry::TelemetrySummary;
use crate::spec::Spec;

/// The whole report.
pub fn markdown(spec: &Spec, analysis: &Analysis) -> String {
    let mut out = String::new();
    let title = spec.title.as_deref().unwrap_or(&spec.name);
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(
        out,
        "Experiment `{}` · hardware {} × `{}` · numbers: {}\n",
        spec.name,
        spec.hardware.gpus,
        spec.hardware.gpu,
        sources(&analysis.runs)
    );
    if analysis
        .runs
        .iter()
        .any(|r| r.source == Some(Source::Simulated))
    {
        out.push_str(
            "> **Simulated.** These numbers come from perfpipe's simulated engine: they show that the \
             pipeline runs end to end and move with flags and workloads, but they do not predict any GPU.\n\n",
        );
    }
    let set = spec.harness.kind.metric_set();
    if let Some(caveat) = set.caveat() {
        let _ = writeln!(out, "> **Definitions.** {caveat}\n");
    }
    if let Some(table) = &analysis.conclusion {
        conclusion(&mut out, spec, table);
    }
    for comparison in &analysis.comparisons {
        section(&mut out, spec, comparison);
    }
    runs(&mut out, run_columns(set), &analysis.runs);
    out
}

/// Which kinds of numbers the report holds, e.g. "published" or "simulated, published".
fn sources(runs: &[RunRecord]) -> String {
    let mut kinds: Vec<&str> = runs
        .iter()
        .filter_map(|r| r.source.map(Source::label))
        .collect();
    kinds.sort();
    kinds.dedup();
    if kinds.is_empty() {
        "none yet".into()
    } else {
        kinds.join(", ")
    }
}

fn conclusion(out: &mut String, spec: &Spec, table: &ConclusionTable) {
    out.push_str("## Conclusion\n\n");
    if let Some(step) = spec.step(&table.optimized) {
        let replicas = match (step.replicas, step.measure_all) {
            (1, _) => String::new(),
            (n, false) => format!(
                ", {n} replicas of {} GPUs; one measured, its throughput reported ×{n}",
                step.gpus
            ),
            (n, true) => format!(", {n} replicas of {} GPUs, all measured", step.gpus),
        };
        let _ = writeln!(
            out,
            "Recommended configuration (`{}`{replicas}):\n",
            table.optimized
        );
        let _ = writeln!(
            out,
            "```bash\n{}\n```\n",
            display_command(step.engine, &step.model.id, &step.args)
        );
    }
    let times = |n: u32| {
        if n > 1 {
            format!(", ×{n}")
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        out,
        "| Benchmark Case | Baseline (`{}`{}) | Optimized (`{}`{}) |",
        table.baseline,
        times(table.baseline_replicas),
        table.optimized,
        times(table.optimized_replicas)
    );
    out.push_str("|---|---|---|\n");
    for row in &table.rows {
        let base_x = if table.baseline_replicas > 1 {
            format!("x{}", table.baseline_replicas)
        } else {
            String::new()
        };
        let opt_x = if table.optimized_replicas > 1 {
            format!("x{}", table.optimized_replicas)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "| **{}** | Total TPS: {:.2}{base_x}<br>Mean TPOT(ms): {:.2} | Total TPS: {:.2}{opt_x} ({:+.1}%)<br>Mean TPOT(ms): {:.2} |",
            row.workload,
            row.base_tps,
            row.base_tpot_ms,
            row.opt_tps,
            row.delta_pct,
            row.opt_tpot_ms
        );
    }
    out.push('\n');
}

fn section(out: &mut String, spec: &Spec, c: &ComparisonResult) {
    let _ = writeln!(out, "## {}\n", c.title);
    let _ = writeln!(
        out,
        "Ranked by total token throughput on `{}`.\n",
        c.workload
    );
    out.push_str("| Step | Serving command | Total TPS | TPS/GPU | Mean TPOT (ms) |\n|---|---|---|---|---|\n");
    for r in &c.ranking {
        let command = spec
            .step(&r.step)
            .map(|s| display_command(s.engine, &s.model.id, &s.args))
            .unwrap_or_default();
        let tps = if r.replicas > 1 {
            format!("{:.2}x{}", r.tps, r.replicas)
        } else {
            format!("{:.2}", r.tps)
        };
        let baseline = if r.is_baseline { " (baseline)" } else { "" };
        let _ = writeln!(
            out,
            "| `{}`{baseline} | `{command}` | {tps} | {:.2} | {:.2} |",
            r.step,
            r.per_gpu(),
            r.tpot_ms
        );
    }
    for (step, error) in &c.failed {
        let command = spec
            .step(step)
            .map(|s| display_command(s.engine, &s.model.id, &s.args))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "| `{step}` | `{command}` | failed: `{error}` | - | - |"
        );
    }
    for step in &c.missing {
        let _ = writeln!(out, "| `{step}` | | not run yet | - | - |");
    }
    if !c.ranking.is_empty() {
        let line: Vec<String> = c
            .ranking
            .iter()
            .map(|r| {
                let label = if r.replicas > 1 {
                    format!("{} ×{}", r.label, r.replicas)
                } else {
                    r.label.clone()
                };
                format!("{label} ({:.2} tok/s)", r.aggregate())
            })
            .collect();
        let _ = writeln!(out, "\nResult: {}", line.join(" > "));
    }
    out.push('\n');
}

/// The runs table's columns: (metric, header), under the client's own names.
fn run_columns(set: MetricSet) -> &'static [(&'static str, &'static str)] {
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

fn runs(out: &mut String, columns: &[(&str, &str)], runs: &[RunRecord]) {
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
            "| `{}` | `{}` | {key} | {source} |",
            r.step, r.workload
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
                "- `{}` × `{}`: `{}`",
                r.step,
                r.workload,
                r.failure.as_deref().unwrap_or_default()
            );
        }
    }
    telemetry(out, runs);
    let warned: Vec<&RunRecord> = runs.iter().filter(|r| !r.warnings.is_empty()).collect();
    if !warned.is_empty() {
        out.push_str("\nWarnings from the harness:\n\n");
        for r in warned {
            for w in &r.warnings {
                let _ = writeln!(out, "- `{}` × `{}`: {w}", r.step, r.workload);
            }
        }
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
    out.push_str("| Step | Workload | Mean power (W) | Max temp (°C) | Throttling | Mean KV cache | Max running | Max waiting | Preemptions |\n");
    out.push_str("|---|---|---:|---:|---|---:|---:|---:|---:|\n");
    let num = |v: Option<f64>, digits: usize| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
    for (r, t) in with {
        let throttling = if t.gpu_samples == 0 {
            "-".to_owned()
        } else if t.throttling.is_empty() {
            "none".to_owned()
        } else {
            t.throttling.join(", ")
        };
        let kv = t
            .mean_kv_cache_usage
            .map_or("-".to_owned(), |u| format!("{:.0}%", u * 100.0));
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} | {} | {throttling} | {kv} | {} | {} | {} |",
            r.step,
            r.workload,
            num(t.mean_power_w, 1),
            num(t.max_temperature_c, 0),
            num(t.max_running, 0),
            num(t.max_waiting, 0),
            num(t.preemptions, 0)
        );
    }
}
