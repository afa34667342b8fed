//! `report { ... }`: how the report is laid out, as the published page was made.

use kdl::KdlNode;

use super::values::*;
use super::*;
use crate::spec::diag::{SpecDiagnostic, did_you_mean, one_of};

impl Decoder {
    pub(super) fn report(&mut self, node: &KdlNode) -> Option<ReportDecl> {
        self.props(node, &["delta-decimals", "tolerance"]);
        let mut report = ReportDecl::default();
        if let Some(e) = prop(node, "delta-decimals") {
            match self.count(e, "the delta decimals") {
                Some(n @ 0..=4) => report.delta_decimals = n as usize,
                Some(_) => self.error(
                    SpecDiagnostic::new(e.span(), "a delta takes 0 to 4 decimals", "here")
                        .with_help("published pages print 1 (older) or 2 (newer)"),
                ),
                None => {}
            }
        }
        if let Some(e) = prop(node, "tolerance") {
            match self.number(e, "the tolerance in %") {
                Some(t) if t > 0.0 => report.tolerance_pct = t,
                Some(_) => self.error(
                    SpecDiagnostic::new(e.span(), "the tolerance must be positive", "here")
                        .with_help(
                            "e.g. `tolerance=5` accepts numbers within 5% of the published ones",
                        ),
                ),
                None => {}
            }
        }
        let mut rows = Vec::new();
        let mut has_summary = false;
        for child in self.children(node, &["sections", "summary", "summary-table"]) {
            match child.name().value() {
                "sections" => {
                    self.no_props(child);
                    self.no_children(child);
                    report.sections = args(child).filter_map(|e| self.section(e)).collect();
                }
                "summary-table" => report.summary_table = self.summary_table(child),
                _ => {
                    has_summary = true;
                    rows.extend(self.summary_row(child));
                }
            }
        }
        if has_summary {
            report.summary = Some(rows);
        }
        Some(report)
    }

    fn section(&mut self, entry: &kdl::KdlEntry) -> Option<Section> {
        let name = self.string(entry, "a section")?;
        let names = Section::ALL.map(Section::name);
        let found = Section::ALL.into_iter().find(|s| s.name() == name);
        if found.is_none() {
            let help = did_you_mean(&name, names).unwrap_or_else(|| one_of(names));
            self.error(
                SpecDiagnostic::new(entry.span(), format!("unknown section `{name}`"), "here")
                    .with_help(help),
            );
        }
        found
    }

    /// `summary-table "<column>"... [min-success=<pct>] [skip-lower-than-previous=#true]`.
    fn summary_table(&mut self, node: &KdlNode) -> Option<SummaryTableDecl> {
        self.props(node, &["min-success", "skip-lower-than-previous"]);
        self.no_children(node);
        let header = self.string_args(node, "a column title");
        if header.len() < 2 {
            self.error(
                SpecDiagnostic::new(node.span(), "a summary table has at least two columns", "here")
                    .with_help("write the column titles as the page prints them: `summary-table \"Optimization Option\" \"Throughput Improvement\"`"),
            );
        }
        let min_success_pct = match prop(node, "min-success") {
            Some(e) => match self.number(e, "the success share in %")? {
                pct if (0.0..=100.0).contains(&pct) => Some(pct),
                _ => {
                    self.error(
                        SpecDiagnostic::new(e.span(), "a success share is 0 to 100 (%)", "here")
                            .with_help("the lab's pages skip an option below `min-success=100`"),
                    );
                    None
                }
            },
            None => None,
        };
        let skip_lower_than_previous = match prop(node, "skip-lower-than-previous") {
            Some(e) => self.boolean(e, "skip-lower-than-previous")?,
            None => false,
        };
        Some(SummaryTableDecl {
            header,
            min_success_pct,
            skip_lower_than_previous,
        })
    }

    fn summary_row(&mut self, node: &KdlNode) -> Option<SummaryRowDecl> {
        self.props(
            node,
            &["compare", "credits", "threshold", "optimized", "per-gpu"],
        );
        let optimized = prop(node, "optimized").and_then(|e| self.reference(e, RefKind::Step));
        let printed = self
            .children(node, &["cell"])
            .into_iter()
            .map(|c| self.printed_cell(c))
            .collect();
        let title = self.required_string_arg(node, 0, "the row's title")?;
        let comparison = self.optional_string_prop(node, "compare");
        let credits = match prop(node, "credits") {
            None => Credit::Comparison,
            Some(e) => match self.string(e, "what the row credits").as_deref() {
                Some("comparison") => Credit::Comparison,
                Some("conclusion") => Credit::Conclusion,
                Some(other) => {
                    self.error(
                        SpecDiagnostic::new(e.span(), format!("a row cannot credit `{other}`"), "here")
                            .with_help("`credits=comparison` (the best candidate's gain over the baseline) or `credits=conclusion` (the optimized configuration's gain)"),
                    );
                    return None;
                }
                None => return None,
            },
        };
        let threshold_pct = match prop(node, "threshold") {
            Some(e) => self.number(e, "the threshold in %")?,
            None => 0.0,
        };
        let per_gpu = match prop(node, "per-gpu") {
            Some(e) => self.boolean(e, "per-gpu")?,
            None => false,
        };
        Some(SummaryRowDecl {
            title,
            comparison,
            credits,
            threshold_pct,
            printed,
            optimized,
            per_gpu,
        })
    }

    /// A summary row names a declared comparison, and credits a declared conclusion.
    pub(super) fn check_report(&mut self, spec: &Spec, node: &KdlNode) {
        let Some(rows) = &spec.report.summary else {
            return;
        };
        let Some(report) = node
            .children()
            .and_then(|d| d.nodes().iter().find(|n| n.name().value() == "report"))
        else {
            return;
        };
        let titles: Vec<&str> = spec.comparisons.iter().map(|c| c.title.as_str()).collect();
        let row_nodes = report
            .children()
            .map(|d| {
                d.nodes()
                    .iter()
                    .filter(|n| n.name().value() == "summary")
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let columns = spec.report.summary_table.as_ref().map(|t| t.header.len());
        for (row, row_node) in rows.iter().zip(row_nodes.iter().copied()) {
            // A row prints a cell under every column but the one of its title.
            if let Some(columns) = columns
                && !row.printed.is_empty()
                && row.printed.len() + 1 != columns
            {
                self.error(
                    SpecDiagnostic::new(
                        row_node.span(),
                        format!(
                            "the row prints {} cells where the summary table has {columns} columns",
                            row.printed.len()
                        ),
                        "here",
                    )
                    .with_help("give one `cell` per column of `summary-table` but the one that holds the row's title, in the header's order"),
                );
            }
        }
        for (row, row_node) in rows.iter().zip(row_nodes) {
            if let Some(c) = &row.comparison
                && !titles.contains(&c.as_str())
            {
                let span = prop(row_node, "compare").map_or(row_node.span(), |e| e.span());
                let help = did_you_mean(c, titles.iter().copied())
                    .unwrap_or_else(|| one_of(titles.iter().copied()));
                self.error(
                    SpecDiagnostic::new(span, format!("no comparison is titled `{c}`"), "here")
                        .with_help(help),
                );
            }
            if row.credits == Credit::Conclusion && spec.conclusion.is_none() {
                let span = prop(row_node, "credits").map_or(row_node.span(), |e| e.span());
                self.error(
                    SpecDiagnostic::new(
                        span,
                        "the row credits the conclusion, which is not declared",
                        "here",
                    )
                    .with_help("declare `conclusion baseline=<step> optimized=<step>`"),
                );
            }
        }
    }
}
