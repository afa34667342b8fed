//! What each search found: the bracket per configuration, and the order that
//! ranks configurations by it. (pure)

use crate::plan::search::{Bracket, Progress};
use crate::spec::{SearchAxis, SearchDecl};

/// One configuration's search of a workload's largest load within its SLO.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SearchResult {
    pub step: String,
    /// The searched workload as declared (`chat`).
    pub workload: String,
    pub axis: SearchAxis,
    pub from: f64,
    pub to: f64,
    pub attainment_pct: f64,
    /// Where a rate search stops (req/s); none for concurrency.
    pub precision: Option<f64>,
    /// The SLO's objectives, e.g. `ttft_ms<=500`.
    pub slo: String,
    /// The probes known so far, in the order the search took them.
    pub probes: Vec<ProbeResult>,
    /// The next load to probe, not stored yet; none once the search is over.
    pub next: Option<f64>,
    /// Set once the search is over.
    pub bracket: Option<Bracket>,
    /// How many of the probes came from the store rather than this command's runs.
    pub cached: usize,
    /// The most probes still to run, the next one included.
    #[serde(skip)]
    pub most_left: usize,
}

/// One probe: a run of the point `workload` at `load`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProbeResult {
    pub load: f64,
    /// The point's name (`chat@c=8`).
    pub workload: String,
    pub passed: bool,
    /// Whether this command ran it (else it came from the store).
    pub ran: bool,
}

impl SearchResult {
    /// The result of `decl` over `workload` for `step`, as `progress` stands.
    pub fn new(
        step: &str,
        workload: &str,
        decl: &SearchDecl,
        slo: String,
        progress: Progress,
    ) -> Self {
        let cached = progress.probes.len();
        Self {
            step: step.to_owned(),
            workload: workload.to_owned(),
            axis: decl.axis,
            from: decl.from,
            to: decl.to,
            attainment_pct: decl.attainment_pct,
            precision: (decl.axis == SearchAxis::Rate).then(|| decl.rate_precision()),
            slo,
            probes: progress
                .probes
                .into_iter()
                .map(|(load, passed)| ProbeResult {
                    load,
                    workload: decl.point_name(workload, load),
                    passed,
                    ran: false,
                })
                .collect(),
            next: progress.next,
            bracket: progress.bracket,
            cached,
            most_left: progress.most_left,
        }
    }

    /// Marks the probes `ran` holds (step, point) as run by this command.
    pub fn mark_ran(&mut self, ran: &std::collections::BTreeSet<(String, String)>) {
        for probe in &mut self.probes {
            probe.ran = ran.contains(&(self.step.clone(), probe.workload.clone()));
        }
        self.cached = self.probes.iter().filter(|p| !p.ran).count();
    }
}

/// Searches best first: by the largest load within the SLO (unfinished ones
/// last, in their declared order).
pub fn ranked(searches: &[SearchResult]) -> Vec<SearchResult> {
    let mut ranked = searches.to_vec();
    ranked.sort_by(|a, b| match (&a.bracket, &b.bracket) {
        (Some(a), Some(b)) => a.capacity_order(b),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::search::{Domain, Search};

    fn result(step: &str, threshold: f64, done: bool) -> SearchResult {
        let decl = SearchDecl {
            axis: SearchAxis::Concurrency,
            from: 1.0,
            to: 16.0,
            attainment_pct: 99.0,
            precision: None,
            span: (0..0).into(),
        };
        let search = Search::new(1.0, 16.0, Domain::Integer);
        let progress = search.progress(|c| (done || c == 1.0).then_some(c <= threshold));
        SearchResult::new(step, "chat", &decl, "ttft_ms<=1".into(), progress)
    }

    #[test]
    fn searches_rank_by_their_bracket_and_unfinished_ones_last() {
        let searches = [
            result("a", 3.0, true),
            result("b", 4.0, false),
            result("c", 9.0, true),
            result("d", 0.0, true),
        ];
        let order: Vec<_> = ranked(&searches).iter().map(|s| s.step.clone()).collect();
        assert_eq!(order, ["c", "a", "d", "b"]);
        assert_eq!(searches[1].next, Some(16.0));
        assert_eq!(searches[1].probes[0].workload, "chat@c=1");
        assert_eq!(searches[2].cached, searches[2].probes.len());
    }
}
