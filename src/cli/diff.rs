//! `perfpipe diff A.lock B.lock`: prints what changed between two lockfiles
//! and what it did (`ops::diff`); exit 4 on a regression with
//! `--fail-on-regression`.

use super::args::{DiffArgs, DiffFormat};
use super::runtime_of;
use crate::exit_code;
use crate::ops::Error;
use crate::ops::diff::DiffOptions;

pub fn diff(args: &DiffArgs) -> Result<u8, Error> {
    let diff = crate::ops::diff::diff(&DiffOptions {
        before: args.before.clone(),
        after: args.after.clone(),
        store: args.store.path().to_owned(),
        runtime: runtime_of(args.runtime),
        metrics: args.metrics.clone(),
        noise_floor: args.noise_floor.clone(),
        max_prompts: args.max_prompts,
    })?;
    if let Some(chosen) = &diff.chosen {
        eoutln!("{chosen}");
    }
    out!(
        "{}",
        match args.format {
            DiffFormat::Md => crate::report::diff::markdown(&diff),
            DiffFormat::Json => crate::report::diff::json(&diff),
        }
    );
    if let Some(threshold) = args.fail_on_regression {
        let regressions: Vec<String> = diff
            .deltas
            .iter()
            .filter(|d| d.regresses_beyond(threshold))
            .map(|d| {
                let floor = d
                    .noise_floor_pct
                    .map(|f| {
                        let n = d.before_n.min(d.after_n);
                        format!(" (n={n}: no noise estimate, floor {f}% applied)")
                    })
                    .unwrap_or_default();
                format!(
                    "{} × {} {} {:+.1}%{floor}",
                    d.step, d.workload, d.metric, d.delta_pct
                )
            })
            .collect();
        if !regressions.is_empty() {
            eoutln!(
                "perfpipe: {} beyond {threshold}%: {}",
                crate::plural::count(regressions.len(), "regression", "regressions"),
                regressions.join("; ")
            );
            return Ok(exit_code::VERIFY_FAILED);
        }
    }
    Ok(exit_code::OK)
}
