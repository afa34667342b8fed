//! The bracket each configuration's search found, best first. (pure)

use std::fmt::Write;

use super::inline::cell_code;
use crate::analyze::search::SearchResult;

/// `## Largest load within the SLO`, when the experiment searches.
pub(super) fn section(out: &mut String, searches: &[SearchResult]) {
    if searches.is_empty() {
        return;
    }
    out.push_str(
        "## Largest load within the SLO\n\n\
         Each configuration's load found by bisection: a load passes when at least the \
         attainment of the requests sent met the SLO. Best first; probes are ordinary runs \
         (cached: from the store, not run now).\n\n",
    );
    out.push_str("| Step | Workload | Search | SLO | Largest passing | Smallest failing | Probes | Cached |\n");
    out.push_str("|---|---|---|---|---:|---:|---:|---:|\n");
    let load = |l: Option<f64>, none: &str| l.map_or(none.to_owned(), |l| l.to_string());
    for s in searches {
        let (passing, failing) = match &s.bracket {
            Some(b) => (
                load(b.largest_passing, "none"),
                load(b.smallest_failing, "none"),
            ),
            None => ("unfinished".to_owned(), "unfinished".to_owned()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} {}..={} | {} at {}% | {passing} | {failing} | {} | {} |",
            cell_code(&s.step),
            cell_code(&s.workload),
            s.axis.name(),
            s.from,
            s.to,
            cell_code(&s.slo.to_string()),
            s.attainment_pct,
            s.probes.len(),
            s.cached
        );
    }
    out.push('\n');
}
