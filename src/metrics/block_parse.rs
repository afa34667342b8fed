//! Reading a "Serving Benchmark Result" block back into numbers: every layout
//! the vLLM client has printed (with or without the Peak rows, `Failed
//! requests`, `Maximum request concurrency`, `Total Token`/`Total token
//! throughput`, P95 or other percentile rows, an End-to-end or Latency section,
//! `N/A` values), and GPUStack's rendering of a guidellm report under the same
//! labels (recognized by its `Mean Latency(s)` rows), and nothing else: any
//! other line is an error that names it. A block must have the rows every
//! layout prints, and each of its sections a row.
//!
//! A guidellm-era block's numbers are guidellm's, so they take guidellm's
//! names (`time_per_output_token_ms_mean` for the "Mean TPOT (ms)" row, which
//! includes the first token), never vLLM's; the page's labels are kept.

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

use super::MetricSet;

#[derive(Debug, Error, PartialEq)]
pub enum BlockError {
    #[error("no \"Serving Benchmark Result\" header")]
    NoHeader,
    #[error("line {line}: `{text}` is not a row of a Serving Benchmark Result block")]
    Unknown { line: usize, text: String },
    #[error("line {line}: `{value}` is not a number")]
    NotANumber { line: usize, value: String },
    #[error("line {line}: the block ends without its closing `====` line")]
    Unterminated { line: usize },
    #[error("line {line}: `{key}` appears twice")]
    Duplicate { line: usize, key: String },
    #[error("line {line}: the block ends without {}", rows_named(rows))]
    MissingRows {
        line: usize,
        rows: Vec<&'static str>,
    },
    #[error("line {line}: section `{section}` has no rows")]
    EmptySection { line: usize, section: &'static str },
    #[error("line {line}: `{label}` counts, so it is a whole number, not `{value}`")]
    NotACount {
        line: usize,
        label: &'static str,
        value: String,
    },
    #[error("line {line}: `{label}` cannot be negative: `{value}`")]
    Negative {
        line: usize,
        label: String,
        value: String,
    },
    #[error(
        "line {line}: this block differs from the block on line {first}; which one is the run's?"
    )]
    Differing { first: usize, line: usize },
}

impl BlockError {
    /// The line of the text the error is about; `None` when there is no block.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::NoHeader => None,
            Self::Unknown { line, .. }
            | Self::NotANumber { line, .. }
            | Self::Unterminated { line }
            | Self::Duplicate { line, .. }
            | Self::MissingRows { line, .. }
            | Self::EmptySection { line, .. }
            | Self::NotACount { line, .. }
            | Self::Negative { line, .. }
            | Self::Differing { line, .. } => Some(*line),
        }
    }
}

fn rows_named(rows: &[&str]) -> String {
    let names: Vec<String> = rows.iter().map(|r| format!("`{r}`")).collect();
    let rows = crate::plural::noun(rows.len(), "row", "rows");
    format!("the {rows} {}", names.join(", "))
}

/// A parsed block: metric name → value; `N/A` rows are absent, `0.00` is zero.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedBlock {
    /// Whose definitions the numbers follow: vLLM's (`vllm bench serve`'s
    /// block, `--save-result` keys) or guidellm's (GPUStack's rendering of a
    /// guidellm report, guidellm's names).
    pub set: MetricSet,
    pub metrics: BTreeMap<String, f64>,
    /// Settings the block states: `max_concurrency` (the configured limit),
    /// `request_rate`. Only vLLM's blocks state any.
    pub settings: BTreeMap<String, f64>,
    /// The page's label of each number (metrics and settings), by name.
    pub labels: BTreeMap<String, String>,
    /// Each number as printed (`4616.00`, not `4616`), by name.
    pub texts: BTreeMap<String, String>,
}

impl ParsedBlock {
    /// Why the block cannot be a run of `prompts` requests, if it cannot:
    /// more successful requests than prompts, or successful and failed ones
    /// that do not add up to them (`vllm bench serve` sends every prompt).
    pub fn request_count_problem(&self, prompts: u32) -> Option<String> {
        let successful = ["completed", "request_totals_successful"]
            .iter()
            .find_map(|k| self.metrics.get(*k))?;
        let prompts = f64::from(prompts);
        match self.metrics.get("failed") {
            Some(failed) if successful + failed != prompts => Some(format!(
                "{successful} successful and {failed} failed requests are not the workload's {prompts} prompts"
            )),
            _ if *successful > prompts => Some(format!(
                "{successful} successful requests are more than the workload's {prompts} prompts"
            )),
            _ => None,
        }
    }

    /// Every number the block states, metrics and settings, by name.
    pub fn numbers(&self) -> BTreeMap<String, f64> {
        let mut all = self.metrics.clone();
        all.extend(self.settings.clone());
        all
    }
}

const ROWS: &[(&str, &str)] = &[
    ("Successful requests", "completed"),
    ("Failed requests", "failed"),
    ("Benchmark duration (s)", "duration"),
    ("Total input tokens", "total_input_tokens"),
    ("Total generated tokens", "total_output_tokens"),
    ("Request throughput (req/s)", "request_throughput"),
    ("Request goodput (req/s)", "request_goodput"),
    ("Output token throughput (tok/s)", "output_throughput"),
    (
        "Peak output token throughput (tok/s)",
        "max_output_tokens_per_s",
    ),
    ("Peak concurrent requests", "max_concurrent_requests"),
    ("Total Token throughput (tok/s)", "total_token_throughput"),
    ("Total token throughput (tok/s)", "total_token_throughput"),
];

/// Rows every layout of the block prints (by `--save-result` key).
const REQUIRED: &[&str] = &[
    "completed",
    "duration",
    "total_input_tokens",
    "request_throughput",
    "total_token_throughput",
];

/// The rows of a guidellm-era block by guidellm's names: GPUStack's
/// `render_benchmark_result_block` prints `request_totals.successful`, the
/// benchmark's `duration`, mean × successful token counts (the sums over
/// successful requests), and the mean (or max) of guidellm's rate
/// distributions, not totals / duration. Its "Maximum request concurrency" is
/// the observed peak, rounded, not a configured limit.
const GUIDELLM_ROWS: &[(&str, &str)] = &[
    ("Successful requests", "request_totals_successful"),
    (
        "Maximum request concurrency",
        "request_concurrency_max_rounded",
    ),
    ("Benchmark duration (s)", "duration"),
    ("Total input tokens", "prompt_token_count_total_sum"),
    ("Total generated tokens", "output_token_count_total_sum"),
    ("Request throughput (req/s)", "requests_per_second_mean"),
    (
        "Output token throughput (tok/s)",
        "output_tokens_per_second_mean",
    ),
    (
        "Peak output token throughput (tok/s)",
        "output_tokens_per_second_max",
    ),
    ("Peak concurrent requests", "request_concurrency_max"),
    ("Total Token throughput (tok/s)", "tokens_per_second_mean"),
    ("Total token throughput (tok/s)", "tokens_per_second_mean"),
];

/// Rows GPUStack always prints in a guidellm-era block (by guidellm name).
const GUIDELLM_REQUIRED: &[&str] = &[
    "request_totals_successful",
    "duration",
    "prompt_token_count_total_sum",
    "requests_per_second_mean",
    "tokens_per_second_mean",
];

/// Latency rows of a guidellm-era block: the row's short name → guidellm's metric.
const GUIDELLM_LATENCIES: &[(&str, &str)] = &[
    ("TTFT", "time_to_first_token_ms"),
    ("TPOT", "time_per_output_token_ms"),
    ("ITL", "inter_token_latency_ms"),
];

/// The label of GPUStack's request-latency rows (`Mean Latency(s)`), in seconds.
const GUIDELLM_LATENCY_SECONDS: &str = " Latency(s)";

/// Rows that count requests or tokens: whole numbers.
const COUNTS: &[&str] = &[
    "Successful requests",
    "Failed requests",
    "Total input tokens",
    "Total generated tokens",
];

const SETTINGS: &[(&str, &str)] = &[
    ("Maximum request concurrency", "max_concurrency"),
    ("Request rate configured (RPS)", "request_rate"),
];

const SECTIONS: &[&str] = &[
    "Time to First Token",
    "Time per Output Token (excl. 1st token)",
    "Inter-token Latency",
    "End-to-end Latency",
    "Latency",
];

const LATENCIES: &[(&str, &str)] = &[
    ("TTFT", "ttft"),
    ("TPOT", "tpot"),
    ("ITL", "itl"),
    ("E2EL", "e2el"),
];

/// Parses the block in `text`; lines before it may only be blank or `#`
/// comments. A later block must say the same (a page may repeat one);
/// a differing one is an error naming both, not a silent choice.
pub fn parse_block(text: &str) -> Result<ParsedBlock, BlockError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .collect();
    let mut rest = lines.iter().copied();
    let header = loop {
        match rest.next() {
            None => return Err(BlockError::NoHeader),
            Some((line, l)) if is_header(l) => break line,
            Some((_, l)) if l.is_empty() || l.starts_with('#') || l.starts_with("```") => {}
            Some((line, l)) => {
                return Err(BlockError::Unknown {
                    line,
                    text: l.into(),
                });
            }
        }
    };
    let (block, mut end) = parse_rows(header, &lines[header..])?;
    while let Some(&(line, _)) = lines[end..].iter().find(|(_, l)| is_header(l)) {
        let (again, again_end) = parse_rows(line, &lines[line..])?;
        if again != block {
            return Err(BlockError::Differing {
                first: header,
                line,
            });
        }
        end = again_end;
    }
    Ok(block)
}

fn is_header(l: &str) -> bool {
    l.starts_with('=') && l.contains("Serving Benchmark Result")
}

/// The rows after the header on line `header`, up to the closing `====`
/// line; returns the block and the number of that line.
fn parse_rows(header: usize, lines: &[(usize, &str)]) -> Result<(ParsedBlock, usize), BlockError> {
    let set = era(lines);
    let (rows, required) = match set {
        MetricSet::Vllm => (ROWS, REQUIRED),
        MetricSet::Guidellm => (GUIDELLM_ROWS, GUIDELLM_REQUIRED),
    };
    let mut block = ParsedBlock {
        set,
        ..ParsedBlock::default()
    };
    let mut seen = BTreeSet::new();
    // The section being read: its title, the line of its header, whether it has a row.
    let mut section: Option<(&'static str, usize, bool)> = None;
    let mut last = header;
    for &(line, l) in lines {
        last = line;
        if l.is_empty() {
            continue;
        }
        if l.chars().all(|c| c == '=') {
            close_section(section)?;
            let missing: Vec<&'static str> = required
                .iter()
                .filter(|key| !seen.contains(**key))
                .filter_map(|key| rows.iter().find(|(_, k)| k == key).map(|(l, _)| *l))
                .collect();
            if !missing.is_empty() {
                return Err(BlockError::MissingRows {
                    line,
                    rows: missing,
                });
            }
            return Ok((block, line));
        }
        if l.starts_with('-') {
            let title = l.trim_matches('-');
            if let Some(title) = SECTIONS.iter().find(|s| **s == title) {
                close_section(section)?;
                section = Some((title, line, false));
                continue;
            }
            return Err(BlockError::Unknown {
                line,
                text: l.into(),
            });
        }
        let Some((label, value)) = l.rsplit_once(':') else {
            return Err(BlockError::Unknown {
                line,
                text: l.into(),
            });
        };
        let label = label.trim();
        let value = value.trim();
        let settings = set == MetricSet::Vllm && SETTINGS.iter().any(|(l, _)| *l == label);
        let key = if let Some((_, key)) = rows.iter().find(|(l, _)| *l == label) {
            (*key).to_owned()
        } else if let Some((_, key)) = SETTINGS.iter().find(|(l, _)| *l == label && settings) {
            (*key).to_owned()
        } else if let Some(key) = match set {
            MetricSet::Vllm => latency_key(label),
            MetricSet::Guidellm => guidellm_latency_key(label),
        } {
            key
        } else {
            return Err(BlockError::Unknown {
                line,
                text: l.into(),
            });
        };
        if let Some((_, _, has_rows)) = &mut section {
            *has_rows = true;
        }
        if !seen.insert(key.clone()) {
            return Err(BlockError::Duplicate { line, key });
        }
        if value == "N/A" {
            continue;
        }
        let number = value
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .ok_or_else(|| BlockError::NotANumber {
                line,
                value: value.into(),
            })?;
        // Every row is a count, a rate, a time or a setting: none is negative.
        if number < 0.0 {
            return Err(BlockError::Negative {
                line,
                label: label.into(),
                value: value.into(),
            });
        }
        if let Some(count) = COUNTS.iter().find(|c| **c == label)
            && (number.fract() != 0.0 || !value.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(BlockError::NotACount {
                line,
                label: count,
                value: value.into(),
            });
        }
        block.labels.insert(key.clone(), label.to_owned());
        block.texts.insert(key.clone(), value.to_owned());
        let map = if settings {
            &mut block.settings
        } else {
            &mut block.metrics
        };
        map.insert(key, number);
    }
    Err(BlockError::Unterminated { line: last })
}

/// Whose numbers the block holds: guidellm's when it has GPUStack's
/// request-latency rows (`Mean Latency(s)`), which no vLLM client prints.
fn era(lines: &[(usize, &str)]) -> MetricSet {
    let guidellm = lines
        .iter()
        .take_while(|(_, l)| l.is_empty() || !l.chars().all(|c| c == '='))
        .filter_map(|(_, l)| l.rsplit_once(':'))
        .any(|(label, _)| label.trim().ends_with(GUIDELLM_LATENCY_SECONDS));
    if guidellm {
        MetricSet::Guidellm
    } else {
        MetricSet::Vllm
    }
}

fn close_section(section: Option<(&'static str, usize, bool)>) -> Result<(), BlockError> {
    match section {
        Some((section, line, false)) => Err(BlockError::EmptySection { line, section }),
        _ => Ok(()),
    }
}

/// `Mean TTFT (ms)` → `mean_ttft_ms`, `P99.9 ITL (ms)` → `p99.9_itl_ms`.
fn latency_key(label: &str) -> Option<String> {
    let rest = label.strip_suffix(" (ms)")?;
    let (stat, name) = rest.split_once(' ')?;
    let (_, metric) = LATENCIES.iter().find(|(short, _)| *short == name)?;
    let stat = match stat {
        "Mean" => "mean".to_owned(),
        "Median" => "median".to_owned(),
        p if p.strip_prefix('P').is_some_and(is_percentile) => format!("p{}", &p[1..]),
        _ => return None,
    };
    Some(format!("{stat}_{metric}_ms"))
}

/// `Mean TPOT (ms)` → `time_per_output_token_ms_mean`, `P95 Latency(s)` →
/// `request_latency_p95` (guidellm's request latency is in seconds, as printed).
fn guidellm_latency_key(label: &str) -> Option<String> {
    let (stat, metric) = if let Some(stat) = label.strip_suffix(GUIDELLM_LATENCY_SECONDS) {
        (stat, "request_latency")
    } else {
        let (stat, name) = label.strip_suffix(" (ms)")?.split_once(' ')?;
        let (_, metric) = GUIDELLM_LATENCIES
            .iter()
            .find(|(short, _)| *short == name)?;
        (stat, *metric)
    };
    let stat = match stat {
        "Mean" => "mean".to_owned(),
        "Median" => "median".to_owned(),
        p if p.strip_prefix('P').is_some_and(is_percentile) => format!("p{}", &p[1..]),
        _ => return None,
    };
    Some(format!("{metric}_{stat}"))
}

fn is_percentile(p: &str) -> bool {
    p.parse::<f64>().is_ok_and(|p| (0.0..=100.0).contains(&p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_counts_must_fit_the_workloads_prompts() {
        let block = |rows: &[(&str, f64)]| ParsedBlock {
            metrics: rows.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
            ..ParsedBlock::default()
        };
        assert_eq!(
            block(&[("completed", 1000.0)]).request_count_problem(1000),
            None
        );
        assert_eq!(
            block(&[("completed", 516.0)]).request_count_problem(1000),
            None
        );
        assert_eq!(
            block(&[("completed", 1000.0)])
                .request_count_problem(30)
                .as_deref(),
            Some("1000 successful requests are more than the workload's 30 prompts")
        );
        assert_eq!(
            block(&[("completed", 8.0), ("failed", 2.0)]).request_count_problem(10),
            None
        );
        assert!(
            block(&[("completed", 8.0), ("failed", 1.0)])
                .request_count_problem(10)
                .is_some()
        );
        assert!(
            block(&[("request_totals_successful", 200.0)])
                .request_count_problem(100)
                .is_some()
        );
    }
    use crate::metrics::{
        BlockOptions, Latency, MetricOptions, RequestRecord, compute, render_serving_block,
    };

    #[test]
    fn what_perfpipe_prints_parses_back_to_the_same_numbers() {
        let r = RequestRecord {
            success: true,
            prompt_len: 123,
            output_tokens: 45,
            requested_output_tokens: 45,
            ttft: 0.123456,
            latency: 1.5,
            itl: crate::metrics::Gaps::from_secs(&[0.03; 44]),
            ..Default::default()
        };
        let m = compute(
            &[r],
            1.7,
            &MetricOptions {
                percentiles: vec![95.0, 99.0],
                goodput: vec![],
            },
        );
        let options = BlockOptions {
            percentile_metrics: Latency::ALL.to_vec(),
            percentiles: vec![95.0, 99.0],
            max_concurrency: Some(4),
            request_rate: Some(2.5),
        };
        let parsed = parse_block(&render_serving_block(&m, &options)).unwrap();
        for (key, value) in &parsed.metrics {
            let expected = m.get(key).unwrap();
            assert!(
                (value - expected).abs() <= 0.005,
                "{key}: {value} vs {expected}"
            );
        }
        assert_eq!(
            parsed.metrics.len(),
            9 + 4 * 4,
            "{:?}",
            parsed.metrics.keys()
        );
        assert_eq!(parsed.settings["max_concurrency"], 4.0);
    }

    #[test]
    fn later_layouts_and_na_values_are_accepted() {
        let block = "\
============ Serving Benchmark Result ============
Successful requests:                     10
Failed requests:                         2
Maximum request concurrency:             8
Benchmark duration (s):                  1.50
Total input tokens:                      100
Total generated tokens:                  N/A
Request throughput (req/s):              6.67
Total token throughput (tok/s):          66.67
---------------Time to First Token----------------
Mean TTFT (ms):                          10.00
Median TTFT (ms):                        9.00
P95 TTFT (ms):                           15.00
P99 TTFT (ms):                           20.00
----------------End-to-end Latency----------------
Mean E2EL (ms):                          100.00
==================================================
";
        let parsed = parse_block(block).unwrap();
        assert_eq!(parsed.metrics["failed"], 2.0);
        assert_eq!(parsed.metrics["total_token_throughput"], 66.67);
        assert_eq!(parsed.metrics["p95_ttft_ms"], 15.0);
        assert!(!parsed.metrics.contains_key("total_output_tokens"));
    }

    /// GPUStack's rendering of a guidellm report, as the newer pages print it.
    const GUIDELLM_BLOCK: &str = "\
============ Serving Benchmark Result ============
Successful requests:                     1000
Maximum request concurrency:             31
Benchmark duration (s):                  130.18
Total input tokens:                      342058
Total generated tokens:                  N/A
Request throughput (req/s):              7.68
Output token throughput (tok/s):         2197.17
Peak output token throughput (tok/s):    2885041.51
Peak concurrent requests:                31.00
Total Token throughput (tok/s):          4867.84
----------------------Latency---------------------
Mean Latency(s):                          2.62
Median Latency(s):                        2.29
P95 Latency(s):                           6.81
P99 Latency(s):                           7.75
---------------Time to First Token----------------
Mean TTFT (ms):                          41.12
P95 TTFT (ms):                           72.24
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          1.34
---------------Inter-token Latency----------------
Mean ITL (ms):                           1.19
Median ITL (ms):                         0.00
==================================================
";

    #[test]
    fn a_guidellm_era_block_keeps_guidellm_names_and_the_page_labels() {
        let parsed = parse_block(GUIDELLM_BLOCK).unwrap();
        assert_eq!(parsed.set, MetricSet::Guidellm);
        let m = &parsed.metrics;
        assert_eq!(m["request_totals_successful"], 1000.0);
        assert_eq!(m["request_concurrency_max_rounded"], 31.0);
        assert_eq!(m["request_concurrency_max"], 31.0);
        assert_eq!(m["tokens_per_second_mean"], 4867.84);
        assert_eq!(m["output_tokens_per_second_max"], 2885041.51);
        assert_eq!(m["request_latency_p95"], 6.81, "seconds, as printed");
        assert_eq!(m["time_to_first_token_ms_p95"], 72.24);
        assert_eq!(m["time_per_output_token_ms_mean"], 1.34);
        assert_eq!(m["inter_token_latency_ms_median"], 0.0, "0.00 stays zero");
        assert!(
            !m.contains_key("output_token_count_total_sum"),
            "N/A stays absent"
        );
        assert!(
            parsed.settings.is_empty(),
            "its concurrency is observed, not set"
        );
        for name in m.keys() {
            assert!(
                crate::metrics::GUIDELLM_METRIC_NAMES.contains(name),
                "{name} is a guidellm name"
            );
        }
        assert_eq!(
            parsed.labels["time_per_output_token_ms_mean"],
            "Mean TPOT (ms)"
        );
        assert_eq!(parsed.labels["request_latency_mean"], "Mean Latency(s)");
        assert_eq!(parsed.labels.len(), m.len());
    }

    #[test]
    fn vllm_blocks_state_the_configured_limit_under_its_own_name() {
        let block = GUIDELLM_BLOCK
            .lines()
            .take(11)
            .chain(["---Time to First Token---", "P95 TTFT (ms): 72.24", "===="])
            .collect::<Vec<_>>()
            .join("\n");
        let parsed = parse_block(&block).unwrap();
        assert_eq!(parsed.set, MetricSet::Vllm);
        assert_eq!(parsed.settings["max_concurrency"], 31.0);
        assert_eq!(parsed.metrics["max_concurrent_requests"], 31.0);
        assert_eq!(parsed.metrics["p95_ttft_ms"], 72.24);
        assert_eq!(parsed.numbers()["max_concurrency"], 31.0);
        assert_eq!(
            parsed.labels["max_concurrency"],
            "Maximum request concurrency"
        );
        for name in parsed.numbers().keys() {
            assert!(
                crate::metrics::METRIC_NAMES.contains(&name.as_str()),
                "{name}"
            );
        }
    }

    #[test]
    fn a_guidellm_era_block_names_its_missing_rows_by_their_labels() {
        let without_tps: String = GUIDELLM_BLOCK
            .lines()
            .filter(|l| !l.starts_with("Total Token"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            parse_block(&without_tps),
            Err(BlockError::MissingRows {
                line: 24,
                rows: vec!["Total Token throughput (tok/s)"]
            })
        );
        let vllm_only = GUIDELLM_BLOCK.replace("Mean Latency(s):", "Mean E2EL (ms):");
        assert!(matches!(
            parse_block(&vllm_only),
            Err(BlockError::Unknown { line: 13, .. })
        ));
    }

    #[test]
    fn anything_else_is_refused_with_its_line() {
        let header = "============ Serving Benchmark Result ============\n";
        assert_eq!(
            parse_block("hello"),
            Err(BlockError::Unknown {
                line: 1,
                text: "hello".into()
            })
        );
        assert_eq!(parse_block(""), Err(BlockError::NoHeader));
        assert_eq!(
            parse_block(&format!("{header}Successful requests: many\n")),
            Err(BlockError::NotANumber {
                line: 2,
                value: "many".into()
            })
        );
        assert_eq!(
            parse_block(&format!("{header}Vibes (ok): 3\n===\n")),
            Err(BlockError::Unknown {
                line: 2,
                text: "Vibes (ok): 3".into()
            })
        );
        assert_eq!(
            parse_block(&format!("{header}Successful requests: 3\n")),
            Err(BlockError::Unterminated { line: 2 })
        );
        assert_eq!(
            parse_block(header),
            Err(BlockError::Unterminated { line: 1 })
        );
        assert_eq!(
            parse_block(&format!(
                "{header}Successful requests: 3\nSuccessful requests: 4\n===\n"
            )),
            Err(BlockError::Duplicate {
                line: 3,
                key: "completed".into()
            })
        );
    }

    #[test]
    fn missing_rows_and_empty_sections_are_refused_with_their_line() {
        let rows = "\
# pasted from a page
============ Serving Benchmark Result ============
Successful requests:                     10
Benchmark duration (s):                  1.00
Total input tokens:                      640
Request throughput (req/s):              N/A
";
        let complete = format!("{rows}Total token throughput (tok/s): 720.00\n");
        assert!(parse_block(&format!("{complete}====\n")).is_ok());
        let err = parse_block(&format!("{rows}====\n")).unwrap_err();
        assert_eq!(
            err,
            BlockError::MissingRows {
                line: 7,
                rows: vec!["Total Token throughput (tok/s)"]
            }
        );
        assert_eq!(
            err.to_string(),
            "line 7: the block ends without the row `Total Token throughput (tok/s)`"
        );
        let no_ttft = format!(
            "{complete}---Time to First Token---\n----Inter-token Latency----\nMean ITL (ms): 1\n====\n"
        );
        assert_eq!(
            parse_block(&no_ttft),
            Err(BlockError::EmptySection {
                line: 8,
                section: "Time to First Token"
            })
        );
        let last_empty = format!("{complete}---End-to-end Latency---\n\n====\n");
        assert_eq!(parse_block(&last_empty).unwrap_err().line(), Some(8));
    }

    #[test]
    fn counts_are_whole_values_are_not_negative_and_a_second_block_must_agree() {
        let block = |rows: &str| {
            format!(
                "============ Serving Benchmark Result ============\n{rows}Benchmark duration (s): 1.0\nTotal input tokens: 10\nRequest throughput (req/s): 1.0\nTotal Token throughput (tok/s): 20.0\n==================================================\n"
            )
        };
        let ok = block("Successful requests: 10\n");
        assert!(parse_block(&ok).is_ok());
        assert_eq!(
            parse_block(&block("Successful requests: 10.5\n")),
            Err(BlockError::NotACount {
                line: 2,
                label: "Successful requests",
                value: "10.5".into()
            })
        );
        assert!(matches!(
            parse_block(&block("Successful requests: 1e1\n")),
            Err(BlockError::NotACount { .. })
        ));
        assert_eq!(
            parse_block(&ok.replace("(tok/s): 20.0", "(tok/s): -20.0")),
            Err(BlockError::Negative {
                line: 6,
                label: "Total Token throughput (tok/s)".into(),
                value: "-20.0".into()
            })
        );
        // The same block twice is one block; two that differ are refused.
        assert!(parse_block(&format!("{ok}\n{ok}")).is_ok());
        let other = ok.replace("Successful requests: 10", "Successful requests: 11");
        assert_eq!(
            parse_block(&format!("{ok}\n{other}")),
            Err(BlockError::Differing { first: 1, line: 9 })
        );
        assert_eq!(
            parse_block(&format!("{ok}\n{other}"))
                .unwrap_err()
                .to_string(),
            "line 9: this block differs from the block on line 1; which one is the run's?"
        );
    }

    #[test]
    fn numbers_must_be_finite_and_percentiles_percent() {
        let header = "============ Serving Benchmark Result ============\n";
        for value in ["1e400", "inf", "NaN", "-inf"] {
            assert_eq!(
                parse_block(&format!("{header}Successful requests: {value}\n====\n")),
                Err(BlockError::NotANumber {
                    line: 2,
                    value: value.into()
                })
            );
        }
        for label in ["PNaN", "Pinf", "P101", "P-1", "P"] {
            let text = format!("{header}{label} TTFT (ms): 1\n====\n");
            assert!(
                matches!(parse_block(&text), Err(BlockError::Unknown { line: 2, .. })),
                "{label}"
            );
        }
    }
}
