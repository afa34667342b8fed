//! The largest load within an SLO, by bisection (issue 19 part 4). (pure)
//!
//! A search is sequential: which load to probe next depends on whether the
//! last probe passed. [`Search`] is that state machine and nothing else; the
//! run workflow asks it for the next probe, runs (or reuses) the probe as an
//! ordinary cached point and reports pass/fail back. Passing is assumed
//! monotone: a load that passes implies every smaller load passes.

/// What a search may probe: whole numbers (`concurrency`) or reals down to a
/// precision (`rate`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Domain {
    /// Whole loads; the bracket ends with adjacent integers.
    Integer,
    /// Real loads; the bracket ends no wider than `precision`.
    Real { precision: f64 },
}

/// The outcome of a search over `from..=to`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Bracket {
    /// The largest probed load that passed; none when `from` failed.
    pub largest_passing: Option<f64>,
    /// The smallest probed load that failed; none when `to` passed.
    pub smallest_failing: Option<f64>,
    /// Probes the search needed (reused ones included).
    pub probes: usize,
}

impl Bracket {
    /// Orders configurations for a report, the largest load within the SLO
    /// first: by largest passing load (none passing last), then by smallest
    /// failing load (none failing, i.e. the whole range passed, first).
    pub fn capacity_order(&self, other: &Bracket) -> std::cmp::Ordering {
        let passing = |b: &Bracket| b.largest_passing.unwrap_or(f64::NEG_INFINITY);
        let failing = |b: &Bracket| b.smallest_failing.unwrap_or(f64::INFINITY);
        passing(other)
            .total_cmp(&passing(self))
            .then(failing(other).total_cmp(&failing(self)))
    }
}

/// What the search wants next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Run (or reuse) this load and [`Search::record`] whether it passed.
    Probe(f64),
    Done(Bracket),
}

/// Bisection over `from..=to`: probe `from`, then `to`, then the midpoint of
/// the bracket until it is as narrow as the domain allows.
#[derive(Debug, Clone)]
pub struct Search {
    from: f64,
    to: f64,
    domain: Domain,
    passing: Option<f64>,
    failing: Option<f64>,
    probes: usize,
}

impl Search {
    /// A search over `from..=to` (`from <= to`; the spec checks it).
    pub fn new(from: f64, to: f64, domain: Domain) -> Self {
        debug_assert!(from <= to, "search range {from}..={to}");
        Search {
            from,
            to,
            domain,
            passing: None,
            failing: None,
            probes: 0,
        }
    }

    /// The next load to probe, or the bracket once the search is over.
    pub fn next(&self) -> Step {
        let done = Step::Done(Bracket {
            largest_passing: self.passing,
            smallest_failing: self.failing,
            probes: self.probes,
        });
        match (self.passing, self.failing) {
            (None, None) => Step::Probe(self.from),
            // `from` failed: nothing in range passes.
            (None, Some(_)) => done,
            (Some(lo), None) if lo < self.to => Step::Probe(self.to),
            (Some(_), None) => done,
            (Some(lo), Some(hi)) => match self.domain {
                Domain::Integer if hi - lo <= 1.0 => done,
                Domain::Integer => Step::Probe(((lo + hi) / 2.0).floor()),
                Domain::Real { precision } if hi - lo <= precision => done,
                Domain::Real { .. } => Step::Probe((lo + hi) / 2.0),
            },
        }
    }

    /// Records the result of probing `load` (the last [`Step::Probe`]).
    pub fn record(&mut self, load: f64, passed: bool) {
        self.probes += 1;
        if passed {
            self.passing = Some(self.passing.map_or(load, |p| p.max(load)));
        } else {
            self.failing = Some(self.failing.map_or(load, |f| f.min(load)));
        }
    }

    /// The most probes the search may still take, whatever they find (the
    /// next one included): what a run that probes until the end counts on.
    pub fn most_probes_left(&self) -> usize {
        let Step::Probe(next) = self.next() else {
            return 0;
        };
        // Either outcome of the next probe, then the larger of the halves
        // the bisection keeps.
        let on_pass = {
            let mut passed = self.clone();
            passed.record(next, true);
            passed
        };
        let on_fail = {
            let mut failed = self.clone();
            failed.record(next, false);
            failed
        };
        1 + on_pass.bisections_left().max(on_fail.bisections_left())
    }

    /// The most probes left when the next probe's outcome is recorded: the
    /// first two probes (`from`, `to`) decide whether a bisection follows,
    /// which halves the bracket until the domain allows no narrower one.
    fn bisections_left(&self) -> usize {
        match (self.passing, self.failing) {
            (None, None) => self.most_probes_left(),
            (None, Some(_)) => 0,
            (Some(lo), None) if lo < self.to => self.most_probes_left(),
            (Some(_), None) => 0,
            (Some(mut lo), Some(mut hi)) => {
                let mut probes = 0;
                loop {
                    match self.domain {
                        Domain::Integer if hi - lo <= 1.0 => return probes,
                        Domain::Integer => {
                            let mid = ((lo + hi) / 2.0).floor();
                            // The larger half is the longer search.
                            if mid - lo >= hi - mid {
                                hi = mid;
                            } else {
                                lo = mid;
                            }
                        }
                        Domain::Real { precision } if hi - lo <= precision => return probes,
                        Domain::Real { .. } => hi = (lo + hi) / 2.0,
                    }
                    probes += 1;
                }
            }
        }
    }

    /// Runs the whole search against `oracle` (tests, and plans over loads
    /// whose results are all known).
    pub fn run(mut self, mut oracle: impl FnMut(f64) -> bool) -> Bracket {
        loop {
            match self.next() {
                Step::Probe(load) => {
                    let passed = oracle(load);
                    self.record(load, passed);
                }
                Step::Done(bracket) => return bracket,
            }
        }
    }

    /// The probes whose results `known` already holds, in search order, and
    /// the first probe it does not (none when the search needs no run):
    /// what `perfpipe plan` shows before running anything.
    pub fn known_prefix(
        mut self,
        mut known: impl FnMut(f64) -> Option<bool>,
    ) -> (Vec<(f64, bool)>, Option<f64>) {
        let mut reused = Vec::new();
        loop {
            match self.next() {
                Step::Probe(load) => match known(load) {
                    Some(passed) => {
                        reused.push((load, passed));
                        self.record(load, passed);
                    }
                    None => return (reused, Some(load)),
                },
                Step::Done(_) => return (reused, None),
            }
        }
    }
}

/// Where a search stands against what is known: the known probes in search
/// order, the next probe (none once over) and, once over, the bracket.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub probes: Vec<(f64, bool)>,
    pub next: Option<f64>,
    pub bracket: Option<Bracket>,
    /// The most probes still to run, the next one included.
    pub most_left: usize,
}

impl Search {
    /// [`Search::known_prefix`], and the bracket when no probe is missing.
    pub fn progress(self, known: impl FnMut(f64) -> Option<bool>) -> Progress {
        let (probes, next) = self.clone().known_prefix(known);
        let mut now = self.clone();
        for (load, passed) in &probes {
            now.record(*load, *passed);
        }
        let most_left = now.most_probes_left();
        let bracket = next.is_none().then(|| {
            self.run(|load| {
                probes
                    .iter()
                    .find(|(l, _)| *l == load)
                    .is_some_and(|(_, passed)| *passed)
            })
        });
        Progress {
            probes,
            next,
            bracket,
            most_left,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a sweep of every integer load in `from..=to` finds.
    fn brute_force(from: u32, to: u32, pass: impl Fn(f64) -> bool) -> Bracket {
        let results: Vec<(f64, bool)> = (from..=to).map(|c| (c as f64, pass(c as f64))).collect();
        Bracket {
            largest_passing: results.iter().filter(|r| r.1).map(|r| r.0).reduce(f64::max),
            smallest_failing: results
                .iter()
                .filter(|r| !r.1)
                .map(|r| r.0)
                .reduce(f64::min),
            probes: results.len(),
        }
    }

    #[test]
    fn no_search_takes_more_probes_than_it_said_it_might() {
        let domains = [
            (1.0, 256.0, Domain::Integer),
            (1.0, 8.0, Domain::Integer),
            (3.0, 3.0, Domain::Integer),
            (0.5, 40.0, Domain::Real { precision: 0.25 }),
        ];
        for (from, to, domain) in domains {
            let start = Search::new(from, to, domain);
            let mut worst = 0;
            for threshold in (-10..=310).map(|t| from + (to - from) * f64::from(t) / 300.0) {
                let mut search = start.clone();
                let said = search.most_probes_left();
                let mut taken = 0;
                while let Step::Probe(load) = search.next() {
                    assert!(search.most_probes_left() <= said - taken);
                    search.record(load, load <= threshold);
                    taken += 1;
                }
                assert_eq!(search.most_probes_left(), 0);
                worst = worst.max(taken);
            }
            // The bound is the worst case, not more.
            assert_eq!(start.most_probes_left(), worst, "{from}..={to}");
        }
    }

    #[test]
    fn integer_bisection_finds_the_brute_force_bracket_with_fewer_probes() {
        for threshold in 0..=70 {
            let pass = |c: f64| c <= threshold as f64;
            let expected = brute_force(1, 64, pass);
            let found = Search::new(1.0, 64.0, Domain::Integer).run(pass);
            assert_eq!(
                (found.largest_passing, found.smallest_failing),
                (expected.largest_passing, expected.smallest_failing),
                "threshold {threshold}"
            );
            // 2 ends + log2(64) midpoints at most.
            assert!(found.probes <= 8, "threshold {threshold}: {found:?}");
            assert!(found.probes < expected.probes);
        }
    }

    #[test]
    fn a_range_that_all_passes_or_all_fails_ends_after_its_ends() {
        let all = Search::new(2.0, 9.0, Domain::Integer).run(|_| true);
        assert_eq!(
            (all.largest_passing, all.smallest_failing),
            (Some(9.0), None)
        );
        assert_eq!(all.probes, 2);
        let none = Search::new(2.0, 9.0, Domain::Integer).run(|_| false);
        assert_eq!(
            (none.largest_passing, none.smallest_failing),
            (None, Some(2.0))
        );
        assert_eq!(none.probes, 1);
        let single = Search::new(4.0, 4.0, Domain::Integer).run(|_| true);
        assert_eq!((single.largest_passing, single.probes), (Some(4.0), 1));
    }

    #[test]
    fn a_rate_search_stops_at_its_precision() {
        let limit = 7.3;
        let found = Search::new(1.0, 20.0, Domain::Real { precision: 0.5 }).run(|r| r <= limit);
        let (lo, hi) = (
            found.largest_passing.unwrap(),
            found.smallest_failing.unwrap(),
        );
        assert!(lo <= limit && limit < hi && hi - lo <= 0.5, "{found:?}");
        // 20 - 1 = 19 halves to ≤ 0.5 in 6 midpoints.
        assert_eq!(found.probes, 2 + 6);
    }

    #[test]
    fn known_results_are_replayed_until_the_first_unknown_probe() {
        let search = Search::new(1.0, 16.0, Domain::Integer);
        // Every probe a completed search made is known: nothing to run.
        let mut probed = Vec::new();
        let bracket = search.clone().run(|c| {
            probed.push(c);
            c <= 5.0
        });
        let (reused, next) = search.clone().known_prefix(|c| Some(c <= 5.0));
        assert_eq!((reused.len(), next), (bracket.probes, None));
        // A stricter SLO (passes ≤ 3) replays the stored probes, then needs a new one.
        let known = |c: f64| probed.contains(&c).then_some(c <= 3.0);
        let (reused, next) = search.known_prefix(known);
        assert_eq!(
            reused,
            vec![(1.0, true), (16.0, false), (8.0, false), (4.0, false)]
        );
        assert_eq!(next, Some(2.0));
    }

    #[test]
    fn progress_has_a_bracket_only_once_no_probe_is_missing() {
        let search = Search::new(1.0, 8.0, Domain::Integer);
        let all = search.clone().progress(|c| Some(c <= 3.0));
        assert_eq!(all.next, None);
        assert_eq!(all.bracket, Some(search.clone().run(|c| c <= 3.0)));
        assert_eq!(all.probes.len(), all.bracket.unwrap().probes);
        let part = search.progress(|c| (c == 1.0).then_some(true));
        assert_eq!(
            (part.probes, part.next, part.bracket),
            (vec![(1.0, true)], Some(8.0), None)
        );
    }

    #[test]
    fn configurations_rank_by_the_largest_load_within_the_slo() {
        let b = |passing, failing| Bracket {
            largest_passing: passing,
            smallest_failing: failing,
            probes: 0,
        };
        let mut brackets = [
            b(None, Some(1.0)),
            b(Some(4.0), Some(8.0)),
            b(Some(8.0), None),
            b(Some(4.0), Some(5.0)),
            b(Some(8.0), Some(9.0)),
        ];
        brackets.sort_by(Bracket::capacity_order);
        let order: Vec<_> = brackets
            .iter()
            .map(|b| (b.largest_passing, b.smallest_failing))
            .collect();
        assert_eq!(
            order,
            vec![
                (Some(8.0), None),
                (Some(8.0), Some(9.0)),
                (Some(4.0), Some(8.0)),
                (Some(4.0), Some(5.0)),
                (None, Some(1.0)),
            ]
        );
    }
}
