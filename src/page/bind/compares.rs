//! A `compare` per section that compares configurations, titled by the
//! summary row it matches, with the section's printed sentences and the
//! configurations its "Summary:" sentence names.

use super::{Builder, Compare, Step, instances};
use crate::page::cells::{cell_lines, printed_delta, strip_bold};
use crate::page::command::engine_named;
use crate::page::model::Page;

/// The page's "Summary of Optimization Options" as printed.
pub(super) struct SummaryTable<'p> {
    /// The column holding a row's title: "Group" where the page has one.
    pub(super) title_column: usize,
    /// Each row's title and line.
    pub(super) titles: Vec<(usize, String)>,
    /// Each row's cells.
    pub(super) rows: Vec<&'p Vec<String>>,
}

impl<'p> SummaryTable<'p> {
    pub(super) fn of(page: &'p Page) -> Self {
        // The column holding a row's title: "Group" where the page has one.
        let title_column = page
            .summary
            .as_ref()
            .and_then(|t| t.value.first())
            .and_then(|h| h.value.iter().position(|c| strip_bold(c) == "Group"))
            .unwrap_or(0);
        let titles: Vec<(usize, String)> = page
            .summary
            .as_ref()
            .map(|t| {
                t.value
                    .iter()
                    .skip(1)
                    .filter_map(|r| r.value.get(title_column).map(|c| (r.line, strip_bold(c))))
                    .collect()
            })
            .unwrap_or_default();
        let rows: Vec<&Vec<String>> = page
            .summary
            .as_ref()
            .map(|t| t.value.iter().skip(1).map(|r| &r.value).collect())
            .unwrap_or_default();
        Self {
            title_column,
            titles,
            rows,
        }
    }
}

impl<'p> Builder<'p> {
    /// One `compare` per section that compares configurations, then the
    /// report: the page's summary rows, each bound to its section's.
    pub(super) fn compares_and_report(&mut self) {
        let table = SummaryTable::of(self.page);
        let used_rows = self.compares(&table);
        self.report(&table, &used_rows);
    }

    /// A `compare` per section, titled by the summary row it matches; the
    /// rows matched.
    pub(super) fn compares(&mut self, table: &SummaryTable<'p>) -> Vec<String> {
        let page = self.page;
        let (summary_rows, table_rows, title_column) =
            (&table.titles, &table.rows, table.title_column);
        let mut used_rows = Vec::new();
        // The page's baseline: the one "Other Benchmark Cases" runs as its
        // baseline where it has one (wherever the sections print it), else
        // the first configuration.
        let mut first = self
            .baseline_step
            .or((!self.draft.steps.is_empty()).then_some(0))
            .map(|s| self.draft.steps[s].name.clone())
            .unwrap_or_default();
        let mut earlier: Vec<(String, String)> = Vec::new();
        for (gi, group) in self.draft.groups.clone().iter().enumerate() {
            let other = page
                .sections
                .iter()
                .find(|s| s.title.value == group.title && s.title.line == group.line)
                .is_some_and(|s| s.other_cases);
            if other || group.steps.is_empty() {
                continue;
            }
            let steps: Vec<&Step> = group.steps.iter().map(|&i| &self.draft.steps[i]).collect();
            let workload = steps
                .iter()
                .find_map(|s| s.expects.first().map(|e| e.workload.clone()))
                .unwrap_or_else(|| self.draft.workloads[0].name.clone());
            let members: Vec<String> = steps
                .iter()
                .filter(|s| s.workloads.contains(&workload))
                .flat_map(|s| instances(s))
                .collect();
            if members.is_empty() {
                continue;
            }
            // A section that sweeps a flag tunes the configuration without it.
            let swept = steps.iter().find(|s| s.vary.is_some()).and_then(|sw| {
                self.draft
                    .steps
                    .iter()
                    .find(|s| {
                        s.vary.is_none()
                            && s.engine == sw.engine
                            && s.model == sw.model
                            && s.args == sw.args
                            && s.env == sw.env
                    })
                    .map(|s| s.name.clone())
            });
            let row = best_row(&group.title, summary_rows, &used_rows);
            // The delta the summary prints for this section, if it prints one.
            let printed = row.as_ref().and_then(|(_, r)| {
                let i = summary_rows.iter().position(|(_, t)| t == r)?;
                let cells = table_rows.get(i)?;
                cells
                    .iter()
                    .enumerate()
                    .filter(|(c, _)| *c != title_column)
                    .find_map(|(_, c)| printed_delta(&cell_lines(c).join(" ")))
            });
            // The baseline whose comparison gives the printed delta: the
            // page's (the first configuration, or the best so far), else one
            // of the configurations measured before.
            // In the first section, the page's baseline, else whichever of
            // its configurations gives the printed delta (a page may print
            // the baseline second); it is the page's baseline from then on.
            let by_printed = printed
                .as_ref()
                .filter(|_| !self.draft.latency)
                .and_then(|delta| {
                    let mut options = vec![first.clone()];
                    if gi == 0 {
                        options.extend(members.iter().filter(|m| **m != first).cloned());
                    } else {
                        options.extend(self.best(&earlier, &workload));
                        options.extend(
                            earlier
                                .iter()
                                .filter(|(_, w)| *w == workload)
                                .map(|(m, _)| m.clone()),
                        );
                    }
                    options.into_iter().find(|b| {
                        let others: Vec<String> =
                            members.iter().filter(|m| *m != b).cloned().collect();
                        self.gives(b, &others, &workload, delta)
                    })
                });
            let from_best = by_printed.is_none() && swept.is_none() && gi > 0 && !self.guidellm;
            let baseline = if let Some(b) = by_printed.clone() {
                b
            } else if let Some(tuned) = swept.clone() {
                tuned
            } else if gi == 0 || self.guidellm {
                if gi == 0 {
                    if members.contains(&first) {
                        first.clone()
                    } else {
                        members[0].clone()
                    }
                } else {
                    first.clone()
                }
            } else {
                self.best(&earlier, &workload)
                    .unwrap_or_else(|| first.clone())
            };
            // The first section's baseline, where it is the page's, needs no word.
            let by_printed = by_printed.filter(|b| gi > 0 || *b != first);
            if gi == 0 && self.baseline_step.is_none() {
                first = baseline.clone();
            }
            let candidates: Vec<String> = members
                .iter()
                .filter(|m| **m != baseline)
                .cloned()
                .collect();
            for m in &members {
                earlier.push((m.clone(), workload.clone()));
            }
            if candidates.is_empty() {
                continue;
            }
            let mut comments = vec![format!("\"{}\" (line {})", group.title, group.line)];
            let title = match row {
                Some((line, r)) => {
                    used_rows.push(r.clone());
                    comments.push(format!("the summary's row \"{r}\" (line {line})"));
                    r
                }
                None => group.title.clone(),
            };
            if by_printed.is_some() {
                comments.push(format!(
                    "baseline: the configuration against which the best candidate gains what the summary prints ({})",
                    printed.clone().unwrap_or_default()
                ));
            } else if swept.is_some() {
                comments.push("baseline: the configuration the section's sweep tunes".to_owned());
            }
            if from_best {
                comments.push(
                    "baseline: the best configuration of the sections before (\"we select the inference engine that performs best … as the starting point\")".to_owned()
                );
            }
            if self.draft.compares.iter().any(|c| c.title == title) {
                continue;
            }
            let printed = |prefix: &str| {
                group
                    .printed
                    .iter()
                    .find_map(|n| n.strip_prefix(prefix).map(|t| t.trim().to_owned()))
            };
            let summary = printed("Summary:");
            let summary_steps = summary
                .as_deref()
                .and_then(|s| sentence_steps(s, &group.labels));
            self.draft.compares.push(Compare {
                title,
                comments,
                baseline,
                workload,
                candidates,
                result: printed("Result:"),
                summary,
                summary_steps,
            });
        }
        used_rows
    }
}

/// The two configurations a "Summary:" sentence names (its first two
/// distinct backquoted labels), as the steps of `labels` (label, step) whose
/// label they are, case and backquotes aside; `None` where one is no label.
pub(super) fn sentence_steps(
    sentence: &str,
    labels: &[(String, String)],
) -> Option<(String, String)> {
    let key = |s: &str| s.trim().trim_matches('`').trim().to_lowercase();
    let mut named: Vec<String> = Vec::new();
    for quoted in sentence.split('`').skip(1).step_by(2) {
        let k = key(quoted);
        if !named.contains(&k) {
            named.push(k);
        }
    }
    let step = |k: &String| {
        labels
            .iter()
            .find(|(label, _)| key(label) == *k)
            .map(|(_, step)| step.clone())
    };
    Some((step(named.first()?)?, step(named.get(1)?)?))
}

/// The summary row a section is about: the most words in common.
pub(super) fn best_row(
    title: &str,
    rows: &[(usize, String)],
    used: &[String],
) -> Option<(usize, String)> {
    const SKIP: &[&str] = &[
        "in", "the", "of", "for", "and", "&&", "a", "numbers", "number",
    ];
    let words = |t: &str| -> Vec<String> {
        t.to_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty() && !SKIP.contains(w) && engine_named(w).is_none())
            .map(|w| w.trim_end_matches('s').to_owned())
            .collect()
    };
    let mine = words(title);
    let mut best: Option<(usize, usize, String)> = None;
    for (line, row) in rows {
        if used.contains(row) {
            continue;
        }
        if row == title {
            return Some((*line, row.clone()));
        }
        let theirs = words(row);
        let common = theirs.iter().filter(|w| mine.contains(w)).count();
        if common > 0 && best.as_ref().is_none_or(|(c, _, _)| common > *c) {
            best = Some((common, *line, row.clone()));
        }
    }
    best.map(|(_, line, row)| (line, row))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_find_their_summary_rows() {
        let rows = vec![
            (1, "Engine Selection".to_owned()),
            (2, "Quantization".to_owned()),
            (3, "Max Batched Token Numbers".to_owned()),
        ];
        assert_eq!(
            best_row("Choosing the Inference Engine", &rows, &[]).map(|r| r.1),
            Some("Engine Selection".into())
        );
        assert_eq!(
            best_row("Max Batched Token Numbers in TensorRT-LLM", &rows, &[]).map(|r| r.1),
            Some("Max Batched Token Numbers".into())
        );
    }
}
