//! `perfpipe verify`: every stored result against its published expectation.

use std::fmt::Write;

use super::args::VerifyArgs;
use super::{CliError, LockMode, load};
use crate::analyze::{self, Verdict};
use crate::exit_code;
use crate::ops::plan::plan_and_index;
use crate::spec::ExpectedOutcome;

pub fn verify(args: &VerifyArgs) -> Result<u8, CliError> {
    let common = args.common();
    let loaded = load(&common, LockMode::Read)?;
    let (plan, index) = plan_and_index(&loaded, &common)?;
    let records = analyze::from_store(&plan, &crate::ops::stored::load(&plan, &index)?);
    let tolerance = args.tolerance.unwrap_or(loaded.spec.report.tolerance_pct);
    let expected: Vec<&str> = loaded
        .spec
        .steps
        .iter()
        .flat_map(|s| &s.expectations)
        .flat_map(|x| match &x.outcome {
            ExpectedOutcome::Metrics(m) => m.iter().map(|m| m.name.as_str()).collect(),
            ExpectedOutcome::Failure(_) => vec!["failure"],
        })
        .collect();
    if let Some(unknown) = args
        .metrics
        .iter()
        .flatten()
        .find(|m| !expected.contains(&m.as_str()))
    {
        let mut known = expected.clone();
        known.sort();
        known.dedup();
        return Err(CliError::Usage {
            message: format!("the experiment states no published `{unknown}`"),
            hint: format!(
                "`--metrics` takes the names its expectations use: {}",
                known.join(", ")
            ),
        });
    }
    let checks = analyze::checks(&loaded.spec, &records, tolerance, args.metrics.as_deref());
    let mut out = String::from(
        "| Step | Workload | Metric | Published | Measured | Difference | Source | Verdict |\n|---|---|---|---:|---:|---:|---|---|\n",
    );
    for c in &checks {
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
    // The page's own contradictions are listed, not scored: no measurement
    // can fix a published page, so they leave the exit code to the numbers.
    let page = analyze::page::findings(&loaded.spec);
    if !page.is_empty() {
        out.push_str("\nThe page's own numbers do not give what it printed (not scored):\n\n| Where | Printed | Its numbers give | Note |\n|---|---|---|---|\n");
        for f in &page {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                f.place, f.printed, f.computed, f.note
            );
        }
    }
    out!("{out}");
    if !page.is_empty() {
        eoutln!(
            "perfpipe: the page's own numbers contradict {} it printed (listed; they do not change the exit code)",
            crate::plural::count(page.len(), "value", "values")
        );
    }
    let count = |v: Verdict| checks.iter().filter(|c| c.verdict == v).count();
    let (within, outside, missing, unscored) = (
        count(Verdict::Within),
        count(Verdict::Outside),
        count(Verdict::Missing),
        count(Verdict::NotScored),
    );
    let unscored_note = match unscored {
        0 => String::new(),
        n => format!(", {n} not scored (simulated or imported)"),
    };
    eoutln!(
        "perfpipe: {} within ±{tolerance}%: {within} within, {outside} outside, {missing} missing{unscored_note}",
        crate::plural::count(checks.len(), "check", "checks")
    );
    let nothing_measured = !checks.is_empty() && within + outside == 0;
    if nothing_measured {
        eoutln!(
            "perfpipe: nothing measured to verify: simulated numbers predict no GPU and imported ones are the page's own; `perfpipe run` on the declared GPUs (`--runtime docker` or `local`) measures them"
        );
    }
    if checks.is_empty() {
        eoutln!(
            "perfpipe: nothing to verify: the experiment states no published numbers{}",
            if args.metrics.is_some() {
                " among `--metrics`"
            } else {
                ""
            }
        );
    }
    Ok(if outside + missing > 0 || nothing_measured {
        exit_code::VERIFY_FAILED
    } else {
        exit_code::OK
    })
}
