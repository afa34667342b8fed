//! `perfpipe diff A.lock B.lock`: inputs and run keys that changed, and
//! what the change did to every number both sides have.

use std::path::Path;

use super::args::{DiffArgs, DiffFormat};
use super::{CliError, lockfile, runtime_of};
use crate::analyze::{self, RunRecord};
use crate::exit_code;
use crate::lock;
use crate::report::diff::{Incomplete, InputDiff, LockDiff, RunDiff};
use crate::spec::Runtime;
use crate::store::Store;

pub fn diff(args: &DiffArgs) -> Result<u8, CliError> {
    let read = |path: &Path| {
        lockfile::read(path)?.ok_or_else(|| CliError::Usage {
            message: format!("`{}` does not exist", path.display()),
            hint: "`perfpipe lock <experiment> --lockfile FILE` writes a lockfile".into(),
        })
    };
    let (before, after) = (read(&args.before)?, read(&args.after)?);
    let runtime = runtime_of(args.runtime).unwrap_or(Runtime::Docker);
    let store = Store::open(args.store.path()).map_err(CliError::Store)?;
    let metrics = args.metrics.clone().unwrap_or_else(|| {
        ["total_token_throughput", "mean_ttft_ms", "mean_tpot_ms"]
            .map(String::from)
            .to_vec()
    });

    let changes = lock::input_changes(&before, &after);
    let inputs: Vec<InputDiff> = changes
        .iter()
        .map(|c| InputDiff {
            name: c.name.to_owned(),
            change: match (c.before, c.after) {
                (None, _) => "added",
                (_, None) => "removed",
                _ => "changed",
            },
            detail: c.describe(),
        })
        .collect();
    let key_changes = lock::run_key_changes(&before, &after, runtime);
    let unchanged_runs = after
        .runs
        .iter()
        .filter(|r| {
            !key_changes
                .iter()
                .any(|c| c.step == r.step && c.workload == r.workload)
        })
        .map(|r| format!("{} × {}", r.step, r.workload))
        .collect();

    let mut pairs: Vec<(RunRecord, RunRecord)> = Vec::new();
    let mut incomplete = Vec::new();
    for change in &key_changes {
        let record = |key: &Option<crate::key::RunKey>| -> Result<Option<RunRecord>, CliError> {
            let Some(key) = key else { return Ok(None) };
            let samples = store.samples(key).map_err(CliError::Store)?;
            Ok(Some(analyze::of_samples(
                &change.step,
                &change.workload,
                key,
                &samples,
            )))
        };
        let sides = [
            (&args.before, &before, record(&change.before)?),
            (&args.after, &after, record(&change.after)?),
        ];
        let mut missing = false;
        for (path, lock, side) in &sides {
            let reason = match side {
                None => Some("not a run of this lockfile".to_owned()),
                Some(r) if r.metrics.is_empty() => Some(match &r.failure {
                    Some(error) => format!("failed: {error}"),
                    None => format!(
                        "no result yet: `{}`",
                        fill_command(path, &lock.experiment, runtime)
                    ),
                }),
                Some(_) => None,
            };
            if let Some(reason) = reason {
                missing = true;
                incomplete.push(Incomplete {
                    step: change.step.clone(),
                    workload: change.workload.clone(),
                    side: format!("`{}`", path.display()),
                    reason,
                });
            }
        }
        if let [(_, _, Some(b)), (_, _, Some(a))] = sides
            && !missing
        {
            pairs.push((b, a));
        }
    }
    let deltas = analyze::deltas(&pairs, &metrics).map_err(CliError::Analysis)?;
    let diff = LockDiff {
        before: args.before.display().to_string(),
        after: args.after.display().to_string(),
        experiment: after.experiment.clone(),
        runtime: runtime.name().into(),
        inputs,
        unchanged_inputs: after
            .inputs
            .iter()
            .filter(|i| !changes.iter().any(|c| c.name == i.name))
            .map(|i| i.name.clone())
            .collect(),
        runs: key_changes
            .into_iter()
            .map(|c| RunDiff {
                step: c.step,
                workload: c.workload,
                key_before: c.before.map(|k| k.to_string()),
                key_after: c.after.map(|k| k.to_string()),
                changed_by: c.causes,
            })
            .collect(),
        unchanged_runs,
        metrics,
        deltas,
        incomplete,
    };
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
                format!(
                    "{} × {} {} {:+.1}%",
                    d.step, d.workload, d.metric, d.delta_pct
                )
            })
            .collect();
        if !regressions.is_empty() {
            eprintln!(
                "perfpipe: {} regressions beyond {threshold}%: {}",
                regressions.len(),
                regressions.join("; ")
            );
            return Ok(exit_code::VERIFY_FAILED);
        }
    }
    Ok(exit_code::OK)
}

/// The `run` that measures what a lockfile pins: its experiment found where
/// perfpipe puts experiments, with exactly that lockfile.
fn fill_command(lockfile: &Path, experiment: &str, runtime: Runtime) -> String {
    let stem = lockfile.file_stem().unwrap_or_default().to_string_lossy();
    let file = [format!("experiments/{stem}.kdl"), format!("{stem}.kdl")]
        .into_iter()
        .find(|f| Path::new(f).is_file())
        .unwrap_or_else(|| format!("<the file of experiment `{experiment}`>"));
    format!(
        "perfpipe run {file} --lockfile {} --locked --runtime {}",
        lockfile.display(),
        runtime.name()
    )
}
