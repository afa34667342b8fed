//! The conclusion: its baseline and optimized configurations, the
//! recommended command, and each case of its table bound to a workload (or
//! reprinted as unbound, with why).

use super::configurations::add_workload;
use super::workloads;
use super::{Builder, Case, Conclusion, Expect, ExpectKind, Group, SweepPointBlock};
use crate::page::cells::{cell_lines, cell_number, strip_bold};
use crate::page::command::serving;

impl Builder<'_> {
    pub(super) fn conclusion(&mut self) {
        let page = self.page;
        let Some(table) = &page.conclusion else {
            // No table: the recommended command alone, as the configuration it runs.
            let recommended = page.recommended.as_ref().and_then(|r| serving(&r.value));
            let optimized = recommended.as_ref().and_then(|r| {
                self.draft.steps.iter().position(|s| {
                    s.engine == r.engine
                        && s.args == r.args
                        && s.model.as_deref().unwrap_or(&self.draft.model) == r.model
                        && s.vary.is_none()
                })
            });
            if let (Some(r), Some(optimized), Some(first)) =
                (&page.recommended, optimized, self.draft.steps.first())
            {
                self.draft.conclusion = Some(Conclusion {
                    comments: vec![
                        format!("The recommended \"Serving Command\" (line {}): `{}`", r.line, r.value),
                        "The page has no before/after table: the conclusion records the command and the configuration it runs".into(),
                    ],
                    baseline: first.name.clone(),
                    optimized: self.draft.steps[optimized].name.clone(),
                    command: r.value.split_whitespace().map(str::to_owned).collect(),
                    table: Vec::new(),
                    cases: Vec::new(),
                });
                return;
            }
            if let Some(r) = &page.recommended {
                self.draft.groups.push(Group {
                    title: "Conclusion".into(),
                    line: r.line,
                    notes: vec![
                        format!(
                            "The recommended \"Serving Command\" (line {}): `{}`",
                            r.line, r.value
                        ),
                        "TODO: the page has no before/after table, so no `conclusion` is declared"
                            .into(),
                    ],
                    ..Group::default()
                });
            }
            return;
        };
        let mut comments = Vec::new();
        if let Some(r) = &page.recommended {
            comments.push(format!(
                "The recommended \"Serving Command\" (line {}): `{}`",
                r.line, r.value
            ));
        }
        let recommended = page.recommended.as_ref().and_then(|r| serving(&r.value));
        let baseline = self.baseline_step.unwrap_or(0);
        let optimized = self.optimized_step.or_else(|| {
            let r = recommended.as_ref()?;
            self.draft.steps.iter().position(|s| {
                s.engine == r.engine
                    && s.args == r.args
                    && s.model.as_deref().unwrap_or(&self.draft.model) == r.model
            })
        });
        let Some(optimized) = optimized else {
            comments.push(format!(
                "TODO: no measured configuration is the conclusion's optimized one (table at line {})",
                table.line
            ));
            self.draft.conclusion = None;
            self.draft.groups.push(Group {
                title: "Conclusion".into(),
                line: table.line,
                notes: comments,
                ..Group::default()
            });
            return;
        };
        if let Some(r) = &recommended {
            let s = &self.draft.steps[optimized];
            let same = s.engine == r.engine
                && s.model.as_deref().unwrap_or(&self.draft.model) == r.model
                && s.args == r.args;
            if !same {
                comments.push(format!(
                    "TODO: the recommended command is not the optimized configuration as measured (`{}`)",
                    s.args.join(" ")
                ));
            }
        }
        // Replicas ("7081.34x2") and numbers only the table shows.
        for row in table.value.iter().skip(1) {
            let cells = &row.value;
            if cells.len() < 3 {
                continue;
            }
            let case = strip_bold(&cells[0]);
            let Some(w) = self
                .draft
                .workloads
                .iter()
                .position(|w| w.title == case || workloads::case_matches(&case, w))
            else {
                comments.push(format!(
                    "TODO: the conclusion's case \"{case}\" (line {}) is no workload of the page's benchmark commands",
                    row.line
                ));
                continue;
            };
            // The workload is titled as the row prints it.
            self.draft.workloads[w].title = case.clone();
            for (side, cell) in [(baseline, &cells[1]), (optimized, &cells[2])] {
                let tps = cell_number(cell, "Total TPS:");
                if let Some((_, Some(replicas))) = &tps
                    && *replicas > 1
                {
                    self.draft.steps[side].replicas = *replicas;
                }
                self.conclusion_numbers(side, w, cell, row.line);
            }
        }
        let header = table
            .value
            .first()
            .map(|r| r.value.iter().map(|c| cell_lines(c).join(" ")).collect())
            .unwrap_or_default();
        let mut printed_cases = Vec::new();
        for row in table.value.iter().skip(1) {
            let case = row.value.first().map(|c| strip_bold(c)).unwrap_or_default();
            if row.value.len() < 3 {
                continue;
            }
            // A row no workload is, reprinted as printed and marked: nothing
            // of the page is dropped.
            let (workload, unbound) = match self.draft.workloads.iter().find(|w| w.title == case) {
                Some(w) => (w.name.clone(), None),
                None => (
                    String::new(),
                    Some((
                        case.clone(),
                        format!(
                            "the row (line {}) is no workload of the page's benchmark commands or profiles",
                            row.line
                        ),
                    )),
                ),
            };
            printed_cases.push(Case {
                workload,
                unbound,
                baseline: cell_lines(&row.value[1]),
                optimized: cell_lines(&row.value[2]),
            });
        }
        self.draft.conclusion = Some(Conclusion {
            comments,
            baseline: self.draft.steps[baseline].name.clone(),
            optimized: self.draft.steps[optimized].name.clone(),
            command: page
                .recommended
                .as_ref()
                .map(|r| r.value.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            table: header,
            cases: printed_cases,
        });
    }

    /// The block of a sweep point that runs exactly `step`'s configuration
    /// on `workload`.
    pub(super) fn sweep_point_block(&self, step: usize, workload: &str) -> Option<SweepPointBlock> {
        let target = &self.draft.steps[step];
        self.draft.steps.iter().find_map(|s| {
            let (flag, _) = s.vary.as_ref()?;
            if s.engine != target.engine || s.model != target.model || s.gpus != target.gpus {
                return None;
            }
            s.expects.iter().find_map(|e| {
                let at = e.at.as_ref()?;
                let ExpectKind::Metrics(metrics) = &e.kind else {
                    return None;
                };
                let mut args = s.args.clone();
                args.extend([flag.clone(), at.clone()]);
                (e.workload == workload && args == target.args).then(|| SweepPointBlock {
                    sweep: s.name.clone(),
                    at: at.clone(),
                    metrics: metrics.clone(),
                })
            })
        })
    }

    /// The conclusion cell's numbers for a step on a workload: an
    /// expectation where no block shows them, a TODO where a block differs.
    pub(super) fn conclusion_numbers(&mut self, step: usize, w: usize, cell: &str, line: usize) {
        let set = self.metric_set();
        let (tps_name, tpot_name) = (set.tps(), set.tpot());
        let mut shown = Vec::new();
        if let Some((tps, _)) = cell_number(cell, "Total TPS:") {
            shown.push((tps_name.to_owned(), tps));
        }
        if let Some((tpot, _)) = cell_number(cell, "Mean TPOT(ms):") {
            shown.push((tpot_name.to_owned(), tpot));
        }
        if shown.is_empty() {
            return;
        }
        let workload = self.draft.workloads[w].name.clone();
        // The same configuration measured as a point of a sweep (the
        // recommended command is often one value of a swept flag): that
        // block is this run's.
        let own = self.draft.steps[step]
            .expects
            .iter()
            .any(|e| e.workload == workload && e.at.is_none());
        if !own
            && let Some(SweepPointBlock { sweep, at, metrics }) =
                self.sweep_point_block(step, &workload)
        {
            let s = &mut self.draft.steps[step];
            add_workload(s, &workload);
            s.expects.push(Expect {
                workload: workload.clone(),
                at: None,
                comments: vec![format!(
                    "The block of sweep `{sweep}` at {at}: the same configuration"
                )],
                kind: ExpectKind::Metrics(metrics),
            });
        }
        let s = &mut self.draft.steps[step];
        match s
            .expects
            .iter_mut()
            .find(|e| e.workload == workload && e.at.is_none())
        {
            Some(e) => {
                if let ExpectKind::Metrics(m) = &e.kind {
                    for (name, text) in &shown {
                        let block = m.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone());
                        if let Some(b) = block
                            && b.parse::<f64>().ok() != text.parse::<f64>().ok()
                        {
                            e.comments.push(format!(
                                "TODO: the conclusion table (line {line}) prints {name} {text}; this block shows {b}"
                            ));
                        }
                    }
                }
            }
            // No block shows the run: its numbers are only the conclusion's
            // printed cells (`conclusion { case … }`), which the report
            // flags; an `expect` would pass them off as a block's.
            None => {
                add_workload(s, &workload);
                s.comments.push(format!(
                    "TODO: no result block shows this configuration on `{workload}`; the conclusion table (line {line}) prints {}",
                    shown
                        .iter()
                        .map(|(n, v)| format!("{n} {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
}
