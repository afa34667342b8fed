//! Reading a "Serving Benchmark Result" block back into numbers: every layout
//! the vLLM client has printed (with or without the Peak rows, `Failed
//! requests`, `Maximum request concurrency`, `Total Token`/`Total token
//! throughput`, P95 or other percentile rows, an End-to-end or Latency section,
//! `N/A` values), and nothing else: any other line is an error that names it.
//! A block must have the rows every layout prints, and each of its sections a row.

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

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
    let plural = if rows.len() == 1 { "" } else { "s" };
    format!("the row{plural} {}", names.join(", "))
}

/// A parsed block: metric name (`--save-result` key) → value; `N/A` rows are absent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedBlock {
    pub metrics: BTreeMap<String, f64>,
    /// Settings the block states: `max_concurrency`, `request_rate`.
    pub settings: BTreeMap<String, f64>,
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
    let mut block = ParsedBlock::default();
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
            let missing: Vec<&'static str> = REQUIRED
                .iter()
                .filter(|key| !seen.contains(**key))
                .filter_map(|key| ROWS.iter().find(|(_, k)| k == key).map(|(l, _)| *l))
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
        let (key, settings) = if let Some((_, key)) = ROWS.iter().find(|(l, _)| *l == label) {
            ((*key).to_owned(), false)
        } else if let Some((_, key)) = SETTINGS.iter().find(|(l, _)| *l == label) {
            ((*key).to_owned(), true)
        } else if let Some(key) = latency_key(label) {
            (key, false)
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
        let map = if settings {
            &mut block.settings
        } else {
            &mut block.metrics
        };
        map.insert(key, number);
    }
    Err(BlockError::Unterminated { line: last })
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

fn is_percentile(p: &str) -> bool {
    p.parse::<f64>().is_ok_and(|p| (0.0..=100.0).contains(&p))
}

#[cfg(test)]
mod tests {
    use super::*;
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
            itl: vec![0.03; 44],
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
