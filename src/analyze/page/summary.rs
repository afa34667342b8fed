//! The page's summary of optimization options, in its own layout: the kind
//! of each column is read from its printed title, each number taken from the
//! page's blocks, and the page's skip rules applied. (pure)

use super::PageFinding;
use super::cells::{Cell, Side, change_text, line_number, metric_of, reproduce_change};
use super::interval::{Interval, check_delta};
use crate::analyze::{ComparisonResult, RunRecord, SummaryRow};
use crate::spec::{
    CellMetric, Credit, ExpectedOutcome, Objective, PrintedLine, PrintedNumber, Quantity, Spec,
    SummaryRowDecl, SummaryTableDecl,
};

/// The summary table as the page printed it, its numbers from the page's blocks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PageSummary {
    pub header: Vec<String>,
    /// Each row's cells, in the header's order, each a list of lines.
    pub rows: Vec<Vec<Vec<String>>>,
}

/// What a column holds, read from its title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// The option: "Optimization Option", "Group", "Benchmark Cases".
    Title,
    /// The benchmark case, when a `Group` column names the option.
    Case,
    /// The option's gain: "Throughput Improvement".
    Improvement,
    /// The option's configuration: "Optimized".
    Optimized,
    /// What it is measured against: "Baseline".
    Baseline,
    /// Its speed against the baseline: "Comparison".
    Comparison,
    /// Anything else, printed as the page printed it.
    Other,
}

impl Column {
    /// The kinds of a header's columns, from their titles.
    pub fn of_header(header: &[String]) -> Vec<Self> {
        let has_group = header.iter().any(|h| h.to_lowercase().contains("group"));
        let mut kinds: Vec<Self> = header
            .iter()
            .map(|h| {
                let h = h.to_lowercase();
                if h.contains("group") || h.contains("option") {
                    Self::Title
                } else if h.contains("case") {
                    if has_group { Self::Case } else { Self::Title }
                } else if h.contains("improvement") {
                    Self::Improvement
                } else if h.contains("optimized") {
                    Self::Optimized
                } else if h.contains("baseline") {
                    Self::Baseline
                } else if h.contains("comparison") {
                    Self::Comparison
                } else {
                    Self::Other
                }
            })
            .collect();
        // One column names the option; without a recognized one, the first does.
        if let Some(first) = kinds.iter().position(|k| *k == Self::Title) {
            for k in kinds.iter_mut().skip(first + 1) {
                if *k == Self::Title {
                    *k = Self::Other;
                }
            }
        } else if let Some(k) = kinds.first_mut() {
            *k = Self::Title;
        }
        kinds
    }
}

pub(super) fn reproduce(
    spec: &Spec,
    records: &[RunRecord],
    comparisons: &[ComparisonResult],
    summary: &[SummaryRow],
    findings: &mut Vec<PageFinding>,
) -> Option<PageSummary> {
    let table = spec.report.summary_table.as_ref()?;
    let decls = spec.report.summary.as_ref()?;
    let kinds = Column::of_header(&table.header);
    let mut previous: Option<(f64, String)> = None;
    let rows = decls
        .iter()
        .zip(summary)
        .map(|(decl, row)| {
            let mut ctx = RowCtx {
                spec,
                records,
                table,
                decl,
                row,
                comparison: comparisons
                    .iter()
                    .find(|c| c.title == decl.comparison.as_deref().unwrap_or(&decl.title)),
                place: format!("Summary, {}", decl.title),
            };
            ctx.cells(&kinds, &mut previous, findings)
        })
        .collect();
    Some(PageSummary {
        header: table.header.clone(),
        rows,
    })
}

struct RowCtx<'a> {
    spec: &'a Spec,
    records: &'a [RunRecord],
    table: &'a SummaryTableDecl,
    decl: &'a SummaryRowDecl,
    row: &'a SummaryRow,
    comparison: Option<&'a ComparisonResult>,
    place: String,
}

impl RowCtx<'_> {
    fn side(&self, step: &str) -> Side<'_> {
        Side {
            spec: self.spec,
            records: self.records,
            step: step.to_owned(),
            workload: self
                .comparison
                .map_or(String::new(), |c| c.workload.clone()),
        }
    }

    /// The option's configuration: the declared `optimized=` step, else the
    /// comparison's best candidate, else its first.
    fn candidate(&self) -> Option<String> {
        if let Some(step) = &self.decl.optimized {
            return Some(step.clone());
        }
        self.row.data.as_ref().map(|g| g.step.clone()).or_else(|| {
            let title = self.decl.comparison.as_deref().unwrap_or(&self.decl.title);
            let c = self.spec.comparisons.iter().find(|c| c.title == title)?;
            c.candidates.first().cloned()
        })
    }

    fn cells(
        &mut self,
        kinds: &[Column],
        previous: &mut Option<(f64, String)>,
        findings: &mut Vec<PageFinding>,
    ) -> Vec<Vec<String>> {
        // The printed cells fill every column but the title's, in order.
        let mut printed = self.decl.printed.iter();
        let cells: Vec<Option<&Vec<PrintedLine>>> = kinds
            .iter()
            .map(|k| match k {
                Column::Title => None,
                _ => printed.next(),
            })
            .collect();
        if self.comparison.is_none() && self.decl.credits == Credit::Comparison {
            return self.unbound_cells(kinds, &cells, findings);
        }
        let column = |kind: Column| kinds.iter().position(|k| *k == kind).and_then(|i| cells[i]);
        let baseline_cell = column(Column::Baseline);
        let optimized_cell = column(Column::Optimized);
        let base_step = self.comparison.map(|c| {
            self.spec
                .comparisons
                .iter()
                .find(|d| d.title == c.title)
                .map_or(String::new(), |d| d.baseline.clone())
        });
        let base_side = self.side(base_step.as_deref().unwrap_or(""));
        let cand_side = self.side(&self.candidate().unwrap_or_default());
        kinds
            .iter()
            .zip(&cells)
            .map(|(kind, cell)| match (kind, cell) {
                (Column::Title, _) => vec![self.decl.title.clone()],
                (_, None) => vec!["-".to_owned()],
                (Column::Improvement, Some(lines)) => lines
                    .iter()
                    .map(|l| self.improvement(l, findings))
                    .collect(),
                (Column::Baseline, Some(lines)) => lines
                    .iter()
                    .map(|l| {
                        line_number(
                            &base_side,
                            l,
                            &format!("{}, baseline", self.place),
                            findings,
                        )
                        .unwrap_or_else(|| l.text.clone())
                    })
                    .collect(),
                (Column::Optimized, Some(lines)) => lines
                    .iter()
                    .map(|l| {
                        let against =
                            baseline_cell.and_then(|b| b.iter().find(|b| b.label == l.label));
                        self.optimized_line(
                            l,
                            &cand_side,
                            against.map(|b| (b, &base_side)),
                            previous,
                            findings,
                        )
                    })
                    .collect(),
                (Column::Comparison, Some(lines)) => lines
                    .iter()
                    .map(|l| {
                        let pair = baseline_cell
                            .and_then(|b| b.first())
                            .zip(optimized_cell.and_then(|o| o.first()));
                        match (l.change(), pair) {
                            (Some(change), Some((b, o))) => format!(
                                "({})",
                                reproduce_change(
                                    Cell {
                                        line: b,
                                        side: &base_side
                                    },
                                    Cell {
                                        line: o,
                                        side: &cand_side
                                    },
                                    change,
                                    false,
                                    &self.place,
                                    findings,
                                )
                            ),
                            _ => l.text.clone(),
                        }
                    })
                    .collect(),
                (Column::Case | Column::Other, Some(lines)) => {
                    lines.iter().map(|l| l.text.clone()).collect()
                }
            })
            .collect()
    }

    /// A row no comparison is (no section compares what it names): its
    /// cells as printed, each number or change marked and listed.
    fn unbound_cells(
        &self,
        kinds: &[Column],
        cells: &[Option<&Vec<PrintedLine>>],
        findings: &mut Vec<PageFinding>,
    ) -> Vec<Vec<String>> {
        kinds
            .iter()
            .zip(cells)
            .map(|(kind, cell)| match (kind, cell) {
                (Column::Title, _) => vec![self.decl.title.clone()],
                (_, None) => vec!["-".to_owned()],
                (_, Some(lines)) => lines
                    .iter()
                    .map(|l| {
                        if l.quantity.is_none() && l.change().is_none() {
                            return l.text.clone();
                        }
                        findings.push(PageFinding {
                            place: self.place.clone(),
                            printed: l.text.clone(),
                            computed: "-".to_owned(),
                            note: "not reproduced: no section of the page compares the configurations this row names".to_owned(),
                        });
                        format!("{} ⚠ not reproduced", l.text)
                    })
                    .collect(),
            })
            .collect()
    }

    /// The two-column layout's gain: `+47.1%`, or `-` at or below the row's
    /// threshold; checked against the numbers it compares.
    fn improvement(&self, line: &PrintedLine, findings: &mut Vec<PageFinding>) -> String {
        let shown = self.row.shown;
        let Some(change) = line.change() else {
            // The page prints "-".
            return match shown {
                None => line.text.clone(),
                Some(pct) => {
                    let computed = format!("{:+.*}%", self.spec.report.delta_decimals, pct);
                    findings.push(PageFinding {
                        place: self.place.clone(),
                        printed: line.text.clone(),
                        computed: computed.clone(),
                        note: format!(
                            "the page prints \"{}\" where its numbers give {computed}, above the row's threshold",
                            line.text
                        ),
                    });
                    format!("{computed} ⚠ page: {}", line.text)
                }
            };
        };
        let Some(((base, base_step), (new, new_step))) = self.improvement_inputs() else {
            return change_text(change, None);
        };
        let (base_side, new_side) = (self.side(&base_step), self.side(&new_step));
        let (base, new) = (
            Cell {
                line: &base,
                side: &base_side,
            },
            Cell {
                line: &new,
                side: &new_side,
            },
        );
        // A latency study's gain in % is its speed-up (1.68 s → 1.61 s:
        // +4.3%): the baseline's latency over the candidate's.
        let latency_gain = self.spec.objective == Objective::Latency
            && self.decl.credits == Credit::Comparison
            && matches!(change, Quantity::Delta { .. });
        let (base, new) = if latency_gain {
            (new, base)
        } else {
            (base, new)
        };
        let before = findings.len();
        let shown = reproduce_change(base, new, change, self.decl.per_gpu, &self.place, findings);
        if findings.len() > before
            && !latency_gain
            && !self.decl.per_gpu
            && let (Quantity::Delta { pct, .. }, Some(finding)) = (change, findings.last_mut())
            && let Some(why) = self.misquoted(base.line, new.line, pct)
        {
            finding.note.push_str(&why);
        }
        shown
    }

    /// Why a gain its blocks do not give is printed: a "Result:" line that
    /// quotes another number for one side (qwen3-14b-h100's "SGLang (8424.86
    /// tok/s)" where its block shows 8403.97), which gives the printed gain.
    fn misquoted(
        &self,
        base: &PrintedLine,
        new: &PrintedLine,
        pct: &PrintedNumber,
    ) -> Option<String> {
        let (b, _, _) = base.number()?;
        let (n, _, _) = new.number()?;
        let gives = |b: &PrintedNumber, n: &PrintedNumber| {
            check_delta(Interval::of(b), Interval::of(n), pct).consistent
        };
        self.spec.comparisons.iter().find_map(|c| {
            let text = c.printed.result.as_ref()?;
            quoted_tps(text).into_iter().find_map(|q| {
                let was = if q.value != b.value && gives(&q, n) {
                    b
                } else if q.value != n.value && gives(b, &q) {
                    n
                } else {
                    return None;
                };
                Some(format!(
                    "; the \"{}\" section's Result line quotes {} where the block shows {}, which gives it",
                    c.title,
                    q.format(q.value),
                    was.format(was.value),
                ))
            })
        })
    }

    /// The printed numbers a gain compares, each with its step: the
    /// conclusion's cells on the comparison's workload (`credits=conclusion`),
    /// else the result blocks of the baseline and the best candidate.
    fn improvement_inputs(&self) -> Option<((PrintedLine, String), (PrintedLine, String))> {
        let workload = self.comparison.map(|c| c.workload.as_str())?;
        if self.decl.credits == Credit::Conclusion {
            let case = self
                .spec
                .conclusion
                .as_ref()?
                .printed
                .cases
                .iter()
                .find(|c| c.workload == workload)?;
            let tps = |cell: &[PrintedLine]| {
                cell.iter()
                    .find(|l| metric_of(l) == Some(CellMetric::TotalTps))
                    .cloned()
            };
            let conclusion = self.spec.conclusion.as_ref()?;
            return tps(&case.baseline)
                .map(|l| (l, conclusion.baseline.clone()))
                .zip(tps(&case.optimized).map(|l| (l, conclusion.optimized.clone())));
        }
        let base = self.comparison_baseline()?;
        if self.spec.objective == Objective::Latency {
            // The mean latency per request, in seconds as the page prints it.
            let line = |step: &str| {
                let v = self.side(step).value(CellMetric::MeanLatency)?;
                Some((
                    PrintedLine::parse(&format!("Mean latency: {v:.2}s")),
                    step.to_owned(),
                ))
            };
            return line(&base).zip(line(&self.candidate()?));
        }
        let line = |step: &str| {
            let s = self.spec.step(step)?;
            let text = block_text(self.spec, step, workload)?;
            let times = if s.report_factor() > 1 {
                format!("x{}", s.report_factor())
            } else {
                String::new()
            };
            Some((
                PrintedLine::parse(&format!("{text}{times}")),
                step.to_owned(),
            ))
        };
        line(&base).zip(line(&self.candidate()?))
    }

    fn comparison_baseline(&self) -> Option<String> {
        let c = self.comparison?;
        self.spec
            .comparisons
            .iter()
            .find(|d| d.title == c.title)
            .map(|d| d.baseline.clone())
    }

    /// A line of the option's cell: its number, then its delta against the
    /// baseline, or why the page's rules skip it.
    fn optimized_line(
        &self,
        line: &PrintedLine,
        side: &Side,
        against: Option<(&PrintedLine, &Side)>,
        previous: &mut Option<(f64, String)>,
        findings: &mut Vec<PageFinding>,
    ) -> String {
        let Some(mut text) = line_number(side, line, &self.place, findings) else {
            return line.text.clone();
        };
        let note = line.note.as_ref();
        let success = self.success_pct(side);
        let min = self.table.min_success_pct;
        if let (Some(s), Some(min)) = (success, min)
            && s < min
            && metric_of(line) == Some(CellMetric::TotalTps)
        {
            let like = note
                .and_then(|n| n.success_pct.clone())
                .unwrap_or(PrintedNumber {
                    value: s,
                    decimals: 1,
                    thousands: false,
                    plus: false,
                });
            text.push_str(&format!(
                " (Success rate: {}%, optimization skipped)",
                like.format(s)
            ));
            self.rule_finding(line, true, findings);
            return text;
        }
        let (Some(change), Some((base_line, base_side))) = (line.change(), against) else {
            return text;
        };
        let shown = reproduce_change(
            Cell {
                line: base_line,
                side: base_side,
            },
            Cell { line, side },
            change,
            false,
            &self.place,
            findings,
        );
        let gain = match (
            side.value(CellMetric::TotalTps),
            base_side.value(CellMetric::TotalTps),
        ) {
            (Some(n), Some(b)) if metric_of(line) == Some(CellMetric::TotalTps) => {
                Some((n / b - 1.0) * 100.0)
            }
            _ => None,
        };
        let lower = match (gain, previous.as_ref()) {
            (Some(g), Some((p, _))) => self.table.skip_lower_than_previous && g < *p,
            _ => false,
        };
        if lower {
            let prev = previous.as_ref().map_or(String::new(), |(_, t)| t.clone());
            text.push_str(&format!(
                " ({shown},lower than previous {prev}, optimization skipped in final command)"
            ));
        } else {
            text.push_str(&format!(" ({shown})"));
            if let (Some(g), Quantity::Delta { .. }) = (gain, change) {
                *previous = Some((g, shown.clone()));
            }
        }
        if metric_of(line) == Some(CellMetric::TotalTps) {
            self.rule_finding(line, lower, findings);
        }
        text
    }

    /// A page that skips an option its own rules keep, or keeps one they skip.
    fn rule_finding(&self, line: &PrintedLine, skipped: bool, findings: &mut Vec<PageFinding>) {
        let printed = line.note.as_ref().is_some_and(|n| n.skipped);
        if printed != skipped {
            findings.push(PageFinding {
                place: self.place.clone(),
                printed: line.text.clone(),
                computed: if skipped { "skipped" } else { "kept" }.to_owned(),
                note: format!(
                    "the page's rules (min-success, skip-lower-than-previous) {} this option, where the page {}",
                    if skipped { "skip" } else { "keep" },
                    if printed { "skips it" } else { "keeps it" }
                ),
            });
        }
    }

    /// The share of requests that succeeded, in %.
    fn success_pct(&self, side: &Side) -> Option<f64> {
        let record = self
            .records
            .iter()
            .find(|r| r.step == side.step && r.workload == side.workload)?;
        let ok = ["completed", "request_totals_successful"]
            .iter()
            .find_map(|m| record.metrics.get(*m))?;
        let prompts = self.spec.workload(&side.workload)?.prompts;
        Some(ok / f64::from(prompts.max(1)) * 100.0)
    }
}

/// The throughputs a "Result:" line quotes: "SGLang (8424.86 tok/s) > …".
fn quoted_tps(text: &str) -> Vec<PrintedNumber> {
    text.split("tok/s")
        .filter_map(|before| {
            let word = before
                .trim_end()
                .rsplit(|c: char| c.is_whitespace() || c == '(')
                .next()?;
            PrintedNumber::parse(word)
        })
        .collect()
}

/// The printed total throughput of `step`'s result block on `workload`.
pub(super) fn block_text(spec: &Spec, step: &str, workload: &str) -> Option<String> {
    let tps = spec.harness.kind.metric_set().tps();
    spec.step(step)?
        .expectations
        .iter()
        .filter(|x| x.workload == workload)
        .find_map(|x| match &x.outcome {
            ExpectedOutcome::Metrics(m) => m.iter().find(|m| m.name == tps).map(|m| m.text.clone()),
            ExpectedOutcome::Failure(_) => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(header: &[&str]) -> Vec<Column> {
        Column::of_header(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn a_result_line_s_quoted_throughputs_are_read() {
        let q = quoted_tps(
            "SGLang (8424.86 tok/s) > TensorRT-LLM (8315.15 tok/s) > vLLM (6595.66 tok/s)",
        );
        let values: Vec<f64> = q.iter().map(|n| n.value).collect();
        assert_eq!(values, [8424.86, 8315.15, 6595.66]);
        assert!(quoted_tps("Throughput slightly decreased.").is_empty());
    }

    #[test]
    fn the_columns_are_read_from_the_printed_header() {
        use Column::*;
        assert_eq!(
            kinds(&["Optimization Option", "Throughput Improvement"]),
            [Title, Improvement]
        );
        assert_eq!(
            kinds(&["Benchmark Cases", "Optimized", "Baseline"]),
            [Title, Optimized, Baseline]
        );
        assert_eq!(
            kinds(&[
                "Benchmark Case",
                "Group",
                "Optimized",
                "Baseline",
                "Comparison"
            ]),
            [Case, Title, Optimized, Baseline, Comparison]
        );
        assert_eq!(
            kinds(&["Knob", "Latency Improvement"]),
            [Title, Improvement]
        );
    }
}
