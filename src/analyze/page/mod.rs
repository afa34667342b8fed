//! A published page against itself: its conclusion and summary reproduced
//! from its own result blocks (the `expect` blocks), printed as the page
//! prints them, and every printed value its numbers do not give, beyond the
//! rounding of what it printed, shown with a note. (pure)

mod cells;
mod conclusion;
mod interval;
mod sentence;
mod summary;

pub use conclusion::{PageConclusion, PageRow};
pub use interval::{Consistency, Interval, check_delta, check_ratio, delta_pct};
pub use summary::PageSummary;

use crate::spec::Spec;

use super::records::from_expectations;
use super::{ComparisonResult, RunRecord, SummaryRow};

/// Something a page printed that its own numbers do not give.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PageFinding {
    /// Where on the page: `Conclusion, Very Long Prompt, optimized`.
    pub place: String,
    /// What the page printed.
    pub printed: String,
    /// What its numbers give, in the page's format.
    pub computed: String,
    /// Why they differ, with the numbers behind it.
    pub note: String,
}

/// The page reproduced from its own numbers, and what it got wrong.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PageReproduction {
    pub conclusion: Option<PageConclusion>,
    pub summary: Option<PageSummary>,
    /// Each section's "Summary:" sentence reproduced, by the comparison's title.
    pub sentences: Vec<(String, String)>,
    /// Each section's own printed delta reproduced, by the comparison's title.
    pub deltas: Vec<(String, String)>,
    pub findings: Vec<PageFinding>,
}

/// Reproduces what the experiment says its page printed (its conclusion's
/// `case`s, its `summary-table`) from `records`, the page's own blocks, and
/// the comparisons and summary analysed from them.
pub fn reproduce(
    spec: &Spec,
    records: &[RunRecord],
    comparisons: &[ComparisonResult],
    summary: &[SummaryRow],
) -> PageReproduction {
    let mut findings = Vec::new();
    let conclusion = conclusion::reproduce(spec, records, &mut findings);
    let summary = summary::reproduce(spec, records, comparisons, summary, &mut findings);
    let sentences = spec
        .comparisons
        .iter()
        .zip(comparisons)
        .filter_map(|(decl, result)| {
            let s = sentence::reproduce(spec, records, decl, result, &mut findings)?;
            Some((decl.title.clone(), s))
        })
        .collect();
    let deltas = spec
        .comparisons
        .iter()
        .zip(comparisons)
        .filter_map(|(decl, result)| {
            let d = sentence::section_delta(spec, records, decl, result, &mut findings)?;
            Some((decl.title.clone(), d))
        })
        .collect();
    PageReproduction {
        conclusion,
        summary,
        sentences,
        deltas,
        findings,
    }
}

/// What the page printed that its own numbers do not give, for `verify`.
pub fn findings(spec: &Spec) -> Vec<PageFinding> {
    super::analyze(spec, from_expectations(spec))
        .page
        .map_or_else(Vec::new, |p| p.findings)
}
