//! The page's conclusion table, each number taken from its result blocks and
//! printed as the page printed it, each delta checked against the numbers
//! beside it. (pure)

use super::PageFinding;
use super::cells::{Cell, Side, line_number, reproduce_change};
use crate::analyze::RunRecord;
use crate::spec::{PrintedLine, Spec};

/// The conclusion as the page printed it, its numbers from the page's blocks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PageConclusion {
    /// The column titles as printed.
    pub header: Vec<String>,
    /// The recommended serving command, quoted for a POSIX shell.
    pub command: Option<String>,
    pub rows: Vec<PageRow>,
}

/// One case: its title and each side's lines.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PageRow {
    pub case: String,
    pub baseline: Vec<String>,
    pub optimized: Vec<String>,
}

pub(super) fn reproduce(
    spec: &Spec,
    records: &[RunRecord],
    findings: &mut Vec<PageFinding>,
) -> Option<PageConclusion> {
    let conclusion = spec.conclusion.as_ref()?;
    let printed = &conclusion.printed;
    if printed.cases.is_empty() && printed.command.is_empty() {
        return None;
    }
    let command = (!printed.command.is_empty()).then(|| shell_words(&printed.command));
    let rows = printed
        .cases
        .iter()
        .map(|case| {
            if let Some((title, reason)) = &case.unbound {
                return unbound_row(title, reason, case, findings);
            }
            let title = spec.workload_title(&case.workload).to_owned();
            let side = |step: &str| Side {
                spec,
                records,
                step: step.to_owned(),
                workload: case.workload.clone(),
            };
            let (base, opt) = (side(&conclusion.baseline), side(&conclusion.optimized));
            let place = |which: &str| format!("Conclusion, {title}, {which}");
            let baseline = case
                .baseline
                .iter()
                .map(|line| cell_line(&base, line, None, &place("baseline"), findings))
                .collect();
            let optimized = case
                .optimized
                .iter()
                .map(|line| {
                    let against = case.baseline.iter().find(|b| b.label == line.label);
                    let against = against.map(|b| (b, &base));
                    cell_line(&opt, line, against, &place("optimized"), findings)
                })
                .collect();
            PageRow {
                case: title,
                baseline,
                optimized,
            }
        })
        .collect();
    let header = if printed.header.is_empty() {
        vec![
            "Benchmark Case".to_owned(),
            format!("Baseline (`{}`)", conclusion.baseline),
            format!("Optimized (`{}`)", conclusion.optimized),
        ]
    } else {
        printed.header.clone()
    };
    Some(PageConclusion {
        header,
        command,
        rows,
    })
}

/// A row bound to no workload: every line as printed, each number marked
/// and listed with `reason` (nothing of the page is dropped).
fn unbound_row(
    title: &str,
    reason: &str,
    case: &crate::spec::PrintedCase,
    findings: &mut Vec<PageFinding>,
) -> PageRow {
    let mut side = |which: &str, lines: &[PrintedLine]| -> Vec<String> {
        lines
            .iter()
            .map(|line| {
                let Some((number, _, _)) = line.number() else {
                    return line.text.clone();
                };
                findings.push(PageFinding {
                    place: format!("Conclusion, {title}, {which}"),
                    printed: number.format(number.value),
                    computed: "-".to_owned(),
                    note: format!("not reproduced: {reason}"),
                });
                format!("{} ⚠ not reproduced", line.text)
            })
            .collect()
    };
    PageRow {
        case: title.to_owned(),
        baseline: side("baseline", &case.baseline),
        optimized: side("optimized", &case.optimized),
    }
}

/// One line of a conclusion cell: `Total TPS: 5770.24 (+47.1%)`.
fn cell_line(
    side: &Side,
    line: &PrintedLine,
    against: Option<(&PrintedLine, &Side)>,
    place: &str,
    findings: &mut Vec<PageFinding>,
) -> String {
    let Some(mut cell) = line_number(side, line, place, findings) else {
        return line.text.clone();
    };
    if let (Some(change), Some((base_line, base_side))) = (line.change(), against) {
        let shown = reproduce_change(
            Cell {
                line: base_line,
                side: base_side,
            },
            Cell { line, side },
            change,
            false,
            place,
            findings,
        );
        cell.push_str(&format!(" ({shown})"));
    }
    cell
}

/// Words quoted so the command survives a paste into bash: the page's
/// `--speculative-config={"method":"mtp",...}` unquoted would lose its quotes
/// and be brace-expanded into several words. A word the shell leaves as it
/// is stays as the page printed it (`--max_seq_len=40960`); an `=` is only
/// safe after the first word, which would otherwise be an assignment.
pub(super) fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let safe = |c: char| {
                c.is_ascii_alphanumeric() || "-_./:@%+".contains(c) || (c == '=' && i > 0)
            };
            if !w.is_empty() && w.chars().all(safe) {
                w.clone()
            } else {
                shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned())
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_quoted_where_bash_would_change_it() {
        let words: Vec<String> = [
            "vllm",
            "serve",
            "Qwen/Qwen3.5-9B",
            "--max-model-len=32768",
            r#"--speculative-config={"method":"mtp","num_speculative_tokens":1}"#,
        ]
        .map(str::to_owned)
        .to_vec();
        let line = shell_words(&words);
        assert_eq!(
            line,
            r#"vllm serve Qwen/Qwen3.5-9B --max-model-len=32768 '--speculative-config={"method":"mtp","num_speculative_tokens":1}'"#
        );
        assert_eq!(shlex::split(&line), Some(words));
        let odd: Vec<String> = ["A=b", "x", "", "a b", "it's"].map(str::to_owned).to_vec();
        assert_eq!(shlex::split(&shell_words(&odd)), Some(odd));
    }
}
