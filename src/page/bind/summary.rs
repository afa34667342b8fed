//! The report: the page's summary rows as printed, each bound to its
//! section's comparison and to the configuration its numbers are.

use super::compares::SummaryTable;
use super::{Builder, Compare, Report, SummaryRow};
use crate::page::cells::{
    cell_lines, delta_decimals, format_delta, printed_delta, says_per_device, strip_bold,
};
use crate::spec::{CellMetric, PrintedLine, Quantity};

impl<'p> Builder<'p> {
    /// The report: the page's summary rows as printed, each bound to the
    /// comparison of its section (or reprinted where none is).
    pub(super) fn report(&mut self, table: &SummaryTable<'p>, used_rows: &[String]) {
        let page = self.page;
        let (summary_rows, table_rows, title_column) =
            (&table.titles, &table.rows, table.title_column);
        let mut comments = Vec::new();
        for (line, r) in summary_rows.iter() {
            if !used_rows.contains(r) {
                comments.push(format!(
                    "TODO: the summary's row \"{r}\" (line {line}) matches no section that compares configurations; it is reprinted as printed"
                ));
            }
        }
        let decimals = page
            .conclusion
            .as_ref()
            .and_then(|t| {
                t.value
                    .iter()
                    .skip(1)
                    .find_map(|r| r.value.get(2).and_then(|c| delta_decimals(c)))
            })
            .or_else(|| {
                page.summary.as_ref().and_then(|t| {
                    t.value
                        .iter()
                        .skip(1)
                        .find_map(|r| r.value.iter().find_map(|c| delta_decimals(c)))
                })
            })
            .unwrap_or(1);
        let conclusion_deltas: Vec<(String, String)> = page
            .conclusion
            .as_ref()
            .map(|t| {
                t.value
                    .iter()
                    .skip(1)
                    .filter_map(|r| {
                        Some((
                            strip_bold(r.value.first()?),
                            printed_delta(&cell_lines(r.value.get(2)?).join(" "))?,
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut summary = Vec::new();
        for ((_, title), cells) in summary_rows.iter().zip(table_rows.iter()) {
            // A row no section compares is the page's too: reprinted as
            // printed (its numbers marked as not reproduced), never dropped.
            let cells: Vec<Vec<String>> = cells
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != title_column)
                .map(|(_, c)| cell_lines(c))
                .collect();
            // A row that prints the conclusion's delta on its comparison's
            // workload credits the conclusion (the 14B page's Engine Selection).
            let compare = self.draft.compares.iter().find(|c| c.title == *title);
            let case = compare.and_then(|c| {
                self.draft
                    .workloads
                    .iter()
                    .find(|w| w.name == c.workload)
                    .map(|w| w.title.clone())
            });
            let row_delta = cells.iter().flatten().find_map(|l| printed_delta(l));
            let credits_conclusion = match (case, row_delta.clone()) {
                (Some(case), Some(delta)) => {
                    conclusion_deltas
                        .iter()
                        .any(|(c, d)| *c == case && *d == delta)
                        && compare.is_some_and(|c| {
                            self.draft.conclusion.as_ref().is_some_and(|k| {
                                !c.candidates.contains(&k.optimized) && c.baseline == k.baseline
                            })
                        })
                }
                _ => false,
            };
            let per_gpu = compare.is_some_and(|c| {
                let marked = cells.iter().flatten().any(|l| says_per_device(l))
                    || [&c.result, &c.summary]
                        .into_iter()
                        .flatten()
                        .any(|t| says_per_device(t));
                marked || self.read_per_gpu(c, row_delta.as_deref())
            });
            let dash = cells.iter().flatten().all(|l| l == "-");
            let threshold = compare
                .filter(|_| dash && !self.draft.latency)
                .and_then(|c| self.gain_as(&c.baseline, &c.candidates, &c.workload, per_gpu))
                .filter(|g| *g > 0.0 && *g < 1.0)
                .map(|g| format!("{:.1}", (g * 10.0).ceil() / 10.0));
            let header: Vec<String> = page
                .summary
                .as_ref()
                .and_then(|t| t.value.first())
                .map(|h| h.value.iter().map(|c| strip_bold(c)).collect())
                .unwrap_or_default();
            let column = |name: &str| header.iter().position(|h| h == name);
            let raw = table_rows
                .get(
                    summary_rows
                        .iter()
                        .position(|(_, t)| t == title)
                        .unwrap_or(usize::MAX),
                )
                .copied();
            // The baseline can stay the best: the Optimized column then shows
            // its numbers (with a `+0.00%` or "1.00x faster" beside them).
            let optimized = match (column("Optimized"), raw, compare) {
                (Some(o), Some(cells), Some(c)) => {
                    let printed: Vec<PrintedLine> = cells
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i == o || column("Comparison") == Some(*i))
                        .flat_map(|(_, cell)| cell_lines(cell))
                        .map(|l| PrintedLine::parse(&l))
                        .collect();
                    self.shown_in_row(c, &printed)
                }
                _ => None,
            };
            // A gain the best candidate does not give but another does is
            // that one's (the page credits the candidate its "Result:" names).
            let optimized = optimized.or_else(|| {
                let (c, delta) = compare.zip(row_delta.as_ref())?;
                let gives = |m: &[String]| self.gives(&c.baseline, m, &c.workload, delta);
                // `+0.00%` that no candidate gains: the baseline stayed the best
                // (a latency study's gain is a speed-up, which `gives` does not weigh).
                let zero = delta.trim_start_matches(['+', '-']).trim_end_matches('%');
                let zero = zero.parse::<f64>().is_ok_and(|z| z == 0.0);
                if credits_conclusion {
                    return None;
                }
                if self.draft.latency {
                    return zero.then(|| c.baseline.clone());
                }
                if gives(&c.candidates) {
                    return None;
                }
                if zero {
                    return Some(c.baseline.clone());
                }
                let mut giving = c.candidates.iter().filter(|m| gives(&[(*m).clone()]));
                match (giving.next(), giving.next()) {
                    (Some(m), None) => Some(m.clone()),
                    _ => None,
                }
            });
            summary.push(SummaryRow {
                title: title.clone(),
                optimized,
                threshold,
                per_gpu,
                credits_conclusion,
                cells,
            });
        }
        let all_cells: Vec<String> = table_rows.iter().flat_map(|r| r.iter().cloned()).collect();
        self.draft.report = Some(Report {
            comments,
            delta_decimals: decimals,
            table: page
                .summary
                .as_ref()
                .and_then(|t| t.value.first())
                .map(|h| h.value.iter().map(|c| strip_bold(c)).collect())
                .unwrap_or_default(),
            min_success: all_cells.iter().any(|c| c.contains("Success rate:")),
            skip_lower_than_previous: all_cells.iter().any(|c| c.contains("lower than previous")),
            summary,
        });
    }

    /// Whether the best of `candidates` gains the printed `delta` over
    /// `baseline`: in total throughput, or per GPU where their GPU counts
    /// differ.
    pub(super) fn gives(
        &self,
        baseline: &str,
        candidates: &[String],
        workload: &str,
        delta: &str,
    ) -> bool {
        let per_gpu = self.counts_differ(baseline, candidates);
        [false, per_gpu].into_iter().any(|p| {
            self.gain_as(baseline, candidates, workload, p)
                .is_some_and(|g| format_delta(g, delta) == delta)
        })
    }

    /// Whether a summary row that does not say it is per GPU is read per
    /// GPU: only where its configurations run on different GPU counts and its
    /// printed value (`delta`, or "-": no gain) holds per GPU but not for
    /// the total throughput, which is what a delta is unless the page says.
    pub(super) fn read_per_gpu(&self, c: &Compare, delta: Option<&str>) -> bool {
        if !self.counts_differ(&c.baseline, &c.candidates) {
            return false;
        }
        let holds = |per_gpu| {
            let gain = self.gain_as(&c.baseline, &c.candidates, &c.workload, per_gpu);
            match (gain, delta) {
                (Some(g), Some(d)) => format_delta(g, d) == d,
                // "-": no gain beyond run-to-run noise.
                (Some(g), None) => g < 1.0,
                (None, _) => false,
            }
        };
        !holds(false) && holds(true)
    }

    /// How many of a summary row's printed numbers `member`'s block gives at
    /// their rounding: the numbers its Optimized column shows, and each
    /// change against `baseline`.
    pub(super) fn numbers_given(
        &self,
        member: &str,
        baseline: &str,
        workload: &str,
        row: &[PrintedLine],
    ) -> usize {
        let latency = self.draft.latency;
        let value = |m: &str, metric| self.block_number(m, workload, metric);
        row.iter()
            .filter(|line| {
                let metric = match (&line.label, line.number()) {
                    (Some(label), _) => CellMetric::from_label(label),
                    (None, Some((_, _, "s" | "s/req"))) => Some(CellMetric::MeanLatency),
                    _ if latency => Some(CellMetric::MeanLatency),
                    _ => Some(CellMetric::TotalTps),
                };
                let Some(metric) = metric else {
                    return false;
                };
                let number_given = line.number().is_some_and(|(n, _, _)| {
                    value(member, metric).is_some_and(|v| n.format(v) == n.format(n.value))
                });
                let change_given = match (
                    line.change(),
                    value(member, metric),
                    value(baseline, metric),
                ) {
                    (Some(Quantity::Delta { pct, .. }), Some(m), Some(b)) => {
                        let gain = if metric == CellMetric::TotalTps {
                            m / b
                        } else {
                            b / m
                        };
                        pct.format((gain - 1.0) * 100.0) == pct.format(pct.value)
                    }
                    (Some(Quantity::Ratio { ratio, slower }), Some(m), Some(b)) => {
                        let faster = if metric == CellMetric::TotalTps {
                            m / b
                        } else {
                            b / m
                        };
                        let r = if *slower { 1.0 / faster } else { faster };
                        ratio.format(r) == ratio.format(ratio.value)
                    }
                    _ => false,
                };
                number_given || change_given
            })
            .count()
    }

    /// The configuration a summary row's Optimized column shows, where it
    /// is not the best candidate: of the baseline and the candidates, the
    /// one whose block gives more of the row's printed numbers than any
    /// other's (the baseline when it stayed the best: "2.62s | 2.62s |
    /// 1.00x faster"). Bound by what most numbers say, so one misprinted
    /// number is flagged where it is printed and moves nothing.
    pub(super) fn shown_in_row(&self, c: &Compare, row: &[PrintedLine]) -> Option<String> {
        let members: Vec<&String> = std::iter::once(&c.baseline).chain(&c.candidates).collect();
        let given: Vec<usize> = members
            .iter()
            .map(|m| self.numbers_given(m, &c.baseline, &c.workload, row))
            .collect();
        let most = *given.iter().max()?;
        let mut ahead = members.iter().zip(&given).filter(|(_, g)| **g == most);
        let (winner, _) = ahead.next()?;
        if most == 0 || ahead.next().is_some() {
            return None;
        }
        let on: Vec<(String, String)> = c
            .candidates
            .iter()
            .map(|m| (m.clone(), c.workload.clone()))
            .collect();
        (self.best(&on, &c.workload).as_ref() != Some(*winner)).then(|| (*winner).clone())
    }
}
