//! `perfpipe verify`: every stored result against its published
//! expectation, and the page's own contradictions beside them.

use std::fmt::Write;

use super::plan::plan_and_index;
use super::{Error, LockMode, Selection, load};
use crate::analyze::page::PageFinding;
use crate::analyze::{self, Check, Verdict};
use crate::plural::count;
use crate::spec::ExpectedOutcome;

/// What `verify` is asked to check.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// Percent; `None`: the experiment's `report tolerance=`.
    pub tolerance: Option<f64>,
    /// The metrics to check; `None`: every one the experiment expects.
    pub metrics: Option<Vec<String>>,
}

/// The checks made, and what the page itself contradicts (not scored).
#[derive(Debug)]
pub struct Verified {
    pub checks: Vec<Check>,
    pub page: Vec<PageFinding>,
    pub tolerance: f64,
    /// `--metrics` narrowed the checks.
    pub narrowed: bool,
}

/// How many checks came to each verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdicts {
    pub within: usize,
    pub outside: usize,
    pub missing: usize,
    pub not_scored: usize,
}

/// Checks every stored result of `selection`'s experiment against the
/// numbers it states were published.
pub fn verify(selection: &Selection, options: &VerifyOptions) -> Result<Verified, Error> {
    let loaded = load(selection, LockMode::Read)?;
    let (plan, index) = plan_and_index(&loaded, selection)?;
    let records = analyze::from_store(&plan, &super::report::stored::load(&plan, index)?);
    let tolerance = options
        .tolerance
        .unwrap_or(loaded.spec.report.tolerance_pct);
    check_metric_names(&loaded.spec, options.metrics.as_deref())?;
    let metrics = options.metrics.as_deref();
    Ok(Verified {
        checks: analyze::checks(&loaded.spec, &records, tolerance, metrics),
        // The page's own contradictions are listed, not scored: no
        // measurement can fix a published page.
        page: analyze::page::findings(&loaded.spec),
        tolerance,
        narrowed: metrics.is_some(),
    })
}

/// `--metrics` must name what the experiment's expectations use.
fn check_metric_names(spec: &crate::spec::Spec, metrics: Option<&[String]>) -> Result<(), Error> {
    let expected: Vec<&str> = spec
        .steps
        .iter()
        .flat_map(|s| &s.expectations)
        .flat_map(|x| match &x.outcome {
            ExpectedOutcome::Metrics(m) => m.iter().map(|m| m.name.as_str()).collect(),
            ExpectedOutcome::Failure(_) => vec!["failure"],
        })
        .collect();
    match metrics
        .into_iter()
        .flatten()
        .find(|m| !expected.contains(&m.as_str()))
    {
        None => Ok(()),
        Some(unknown) => {
            let mut known = expected.clone();
            known.sort();
            known.dedup();
            Err(Error::Usage {
                message: format!("the experiment states no published `{unknown}`"),
                hint: format!(
                    "`--metrics` takes the names its expectations use: {}",
                    known.join(", ")
                ),
            })
        }
    }
}

impl Verified {
    pub fn verdicts(&self) -> Verdicts {
        let count = |v: Verdict| self.checks.iter().filter(|c| c.verdict == v).count();
        Verdicts {
            within: count(Verdict::Within),
            outside: count(Verdict::Outside),
            missing: count(Verdict::Missing),
            not_scored: count(Verdict::NotScored),
        }
    }

    /// There were checks, and none of them measured (simulated or imported
    /// numbers only).
    pub fn nothing_measured(&self) -> bool {
        let v = self.verdicts();
        !self.checks.is_empty() && v.within + v.outside == 0
    }

    /// The checks as a Markdown table, then the page's contradictions.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| Step | Workload | Metric | Published | Measured | Difference | Source | Verdict |\n|---|---|---|---:|---:|---:|---|---|\n",
        );
        for c in &self.checks {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                c.step,
                c.workload,
                c.metric,
                c.published,
                c.measured.as_deref().unwrap_or("-"),
                c.diff_pct.map_or("-".to_owned(), |d| format!("{d:+.2}%")),
                c.source.map_or("-", analyze::Source::label),
                c.verdict.label()
            );
        }
        if !self.page.is_empty() {
            out.push_str("\nThe page's own numbers do not give what it printed (not scored):\n\n| Where | Printed | Its numbers give | Note |\n|---|---|---|---|\n");
            for f in &self.page {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    f.place, f.printed, f.computed, f.note
                );
            }
        }
        out
    }

    /// For standard error: the page's contradictions, the verdicts, and
    /// why there was nothing to check or nothing measured.
    pub fn summary(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.page.is_empty() {
            out.push(format!(
                "perfpipe: the page's own numbers contradict {} it printed (listed; they do not change the exit code)",
                count(self.page.len(), "value", "values")
            ));
        }
        let Verdicts {
            within,
            outside,
            missing,
            not_scored,
        } = self.verdicts();
        let unscored_note = match not_scored {
            0 => String::new(),
            n => format!(", {n} not scored (simulated or imported)"),
        };
        out.push(format!(
            "perfpipe: {} within ±{}%: {within} within, {outside} outside, {missing} missing{unscored_note}",
            count(self.checks.len(), "check", "checks"),
            self.tolerance
        ));
        if self.nothing_measured() {
            out.push(
                "perfpipe: nothing measured to verify: simulated numbers predict no GPU and imported ones are the page's own; `perfpipe run` on the declared GPUs (`--runtime docker` or `local`) measures them".into(),
            );
        }
        if self.checks.is_empty() {
            out.push(format!(
                "perfpipe: nothing to verify: the experiment states no published numbers{}",
                if self.narrowed {
                    " among `--metrics`"
                } else {
                    ""
                }
            ));
        }
        out
    }
}
