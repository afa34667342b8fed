//! `perfpipe run`: execute what is missing, then print and write the report.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use super::args::RunArgs;
use super::fetch::{Verbosity, fail_on, fetch_pinned};
use super::plan::plan_and_index;
use super::report::{analyze, scope, write_markdown};
use super::{CliError, Loaded, LockMode, load, lockfile, sample_notes};
use crate::exec::{self, ExecEvent, ExecOptions};
use crate::exit_code;
use crate::plan::RunStatus;
use crate::plural::count;
use crate::spec::{ExpectedOutcome, Runtime, Spec};
use crate::store::{Outcome, Store};

pub fn run(args: &RunArgs) -> Result<u8, CliError> {
    let mode = LockMode::Run {
        locked: args.locked,
        offline: args.offline,
    };
    let experiment = &args.experiment.experiment;
    let common = args.common();
    let mut loaded = load(&common, mode.clone())?;
    let (mut plan, mut index) = plan_and_index(&loaded, &common)?;
    // Before a lockfile, a fetch or an engine: a run perfpipe cannot start.
    exec::check_startable(&loaded.spec, &plan)?;
    // Where the report and its chart go is settled before any engine starts;
    // a capped run's never replaces the study's.
    let report_path = args.report.clone().unwrap_or_else(|| {
        let stem = experiment.file_stem().unwrap_or_default().to_string_lossy();
        let name = match common.max_prompts {
            Some(cap) => format!("{stem}.max-prompts-{cap}.md"),
            None => format!("{stem}.md"),
        };
        PathBuf::from("reports").join(name)
    });
    for path in [
        report_path.clone(),
        report_path.with_extension("svg"),
        report_path.with_extension("png"),
    ] {
        super::check_writable(&path)?;
    }
    remove_stale_tmp(&loaded.store);
    // Real engines load pinned models and images: fetch what the missing runs
    // need before any GPU is taken. Fetching may bring the tokenizers the
    // lockfile pins, so a lockfile that differs only in those is settled after.
    let fetches = loaded.runtime != Runtime::Sim && !args.offline;
    let deferred = fetches && (args.locked || loaded.lock.only_tokenizers_differ);
    if deferred {
        lockfile::settle_for_fetch(&loaded.lock, experiment)?;
    } else {
        lockfile::settle_for_run(&loaded.lock, args.locked, experiment)?;
    }
    if fetches {
        let used: BTreeSet<String> = plan
            .missing()
            .iter()
            .filter_map(|r| loaded.lock.new.run(&r.step, &r.workload))
            .flat_map(|r| r.uses.clone())
            .collect();
        let mut reload = false;
        if !used.is_empty() {
            let fetched =
                fetch_pinned(&loaded.lock.new, &used, loaded.runtime, Verbosity::Missing)?;
            fail_on(&fetched.failures, experiment, true)?;
            reload = fetched.models_changed;
        }
        if reload {
            loaded = load(&common, mode)?;
            (plan, index) = plan_and_index(&loaded, &common)?;
        }
        if reload || deferred {
            lockfile::settle_for_run(&loaded.lock, args.locked, experiment)?;
        }
    }
    // A trusted cache's samples instead of measuring (docs/result-cache.md).
    if super::cache::substitute(&args.substitute, args.offline, &loaded.store, &plan)? {
        (plan, index) = plan_and_index(&loaded, &common)?;
    }
    let stored = plan
        .runs
        .iter()
        .filter(|r| !matches!(r.status, RunStatus::Missing { .. }))
        .count();
    eprintln!(
        "perfpipe: {}, {stored} in the store, {} to run (runtime `{}`)",
        count(plan.runs.len(), "run", "runs"),
        plan.missing().len(),
        plan.options.runtime.name()
    );
    for note in sample_notes(&loaded) {
        eprintln!("{note}");
    }
    let options = exec_options(args)?;
    let summary = exec::execute(
        &loaded.spec,
        &loaded.inputs,
        &plan,
        &loaded.store,
        &options,
        &mut |event| progress(&loaded.spec, &event),
    )?;

    // With nothing to run, what the plan read is the report's to show.
    if !plan.missing().is_empty() {
        index = plan_and_index(&loaded, &common)?.1;
    }
    let records = crate::analyze::from_store(&plan, &index);
    let unexpected: Vec<(String, String)> = records
        .iter()
        .filter(|r| {
            r.failure
                .as_deref()
                .is_some_and(|e| !failure_expected(&loaded.spec, &r.step, &r.workload, e))
        })
        .map(|r| (r.step.clone(), r.workload.clone()))
        .collect();
    let unexpected_failures = unexpected.len();
    let mut analysis = analyze(&loaded, records)?;
    analysis.scope = Some(scope(&loaded, &common));
    let path = report_path;
    let text = write_markdown(&loaded, &analysis, &path).map_err(|e| {
        e.measured(&format!(
            "every run is in the store: `perfpipe report {} --out FILE` writes the report",
            experiment.display()
        ))
    })?;
    out!("{text}");
    eprintln!(
        "perfpipe: ran {} (failed: {}); report written to `{}`",
        summary.succeeded + summary.failed,
        summary.failed,
        path.display()
    );
    if unexpected_failures > 0 {
        eprintln!(
            "perfpipe: {} where the experiment expects no failure; the logs say why:",
            count(unexpected_failures, "run failed", "runs failed")
        );
        for (step, workload) in &unexpected {
            eprintln!(
                "  `{step}` × `{workload}`: {}",
                failure_logs(&loaded, &plan, step, workload)
            );
        }
    }
    // Not in the report: a transient failure is no result. It still fails the command.
    for f in &summary.unstored {
        eprintln!(
            "perfpipe: `{}` × `{}` failed on every attempt for a cause that may pass, so nothing is stored and the next `run` tries again: {}",
            f.step, f.workload, f.error
        );
    }
    Ok(if unexpected_failures + summary.unstored.len() > 0 {
        exit_code::RUNS_FAILED
    } else {
        exit_code::OK
    })
}

/// How the executor runs, from the options.
pub(super) fn exec_options(args: &RunArgs) -> Result<ExecOptions, CliError> {
    Ok(ExecOptions {
        sim_program: std::env::current_exe().map_err(|source| CliError::Write {
            path: "current executable".into(),
            source,
        })?,
        startup_timeout: args.startup_timeout.map(Duration::from_secs),
        stall_timeout: Duration::from_secs(args.stall_timeout),
        attempts: 3,
        fresh_engine: args.policy.fresh_engine,
        jobs: args.jobs as usize,
    })
}

/// Removes what killed perfpipe processes left under `store/tmp/`; a
/// failure to do so never stops a run.
fn remove_stale_tmp(store: &Store) {
    match store.stale_tmp(true) {
        Ok(stale) if !stale.is_empty() => eprintln!(
            "perfpipe: removed {} left in `{}` by killed runs ({})",
            count(stale.len(), "temp dir", "temp dirs"),
            store.root().join("tmp").display(),
            crate::fetch::human_bytes(stale.iter().map(|s| s.bytes).sum())
        ),
        Ok(_) => {}
        Err(e) => eprintln!("warning: cannot remove the temp dirs of killed runs: {e}"),
    }
}

/// A failure the experiment declares (`expect-failure`) is the published outcome, not an error.
fn failure_expected(spec: &Spec, step: &str, workload: &str, error: &str) -> bool {
    spec.step(step).is_some_and(|s| {
        s.expectations.iter().any(|x| {
            x.workload == workload && matches!(&x.outcome, ExpectedOutcome::Failure(expected) if error.contains(expected.as_str()))
        })
    })
}

fn progress(spec: &Spec, event: &ExecEvent) {
    match event {
        ExecEvent::Started { index, total, run } => {
            eprintln!(
                "[{}/{total}] `{}` × `{}` ({})",
                index + 1,
                run.step,
                run.workload,
                run.key.short()
            );
        }
        ExecEvent::AlreadyDone { run } => {
            eprintln!(
                "      already in the store (committed by another perfpipe): {}",
                run.key.short()
            );
        }
        ExecEvent::WaitingForGpus {
            needed, foreign, ..
        } => {
            if foreign.is_empty() {
                eprintln!("      waiting for {needed} free GPUs (another perfpipe holds them)");
            } else {
                eprintln!(
                    "      waiting for {needed} free GPUs; not using GPUs that hold processes perfpipe did not start:"
                );
                for (index, process) in *foreign {
                    eprintln!("        GPU {index}: {process}");
                }
            }
        }
        ExecEvent::LeftoverStopped { stopped } => {
            eprintln!(
                "stopped what a killed perfpipe left: {}, {}",
                super::describe_launch(&stopped.launch),
                count(stopped.processes, "process", "processes")
            );
        }
        ExecEvent::StillStarting { after, .. } => {
            eprintln!("      engine still starting after {}s", after.as_secs());
        }
        ExecEvent::EngineReady { after, .. } => {
            eprintln!("      engine ready after {:.1}s", after.as_secs_f64());
        }
        ExecEvent::Benchmarking {
            requests, position, ..
        } => {
            let shared = if *position > 1 {
                format!(" (run {position} on this engine)")
            } else {
                String::new()
            };
            eprintln!(
                "      sending {}{shared}",
                count(*requests, "request", "requests")
            );
        }
        ExecEvent::Retrying { error, .. } => {
            eprintln!("      transient failure, retrying: {error}")
        }
        ExecEvent::Finished {
            run,
            result,
            elapsed,
        } => match &result.outcome {
            Outcome::Success {
                metrics, warnings, ..
            } => {
                let set = metrics.set();
                let number = |name| metrics.get(name).unwrap_or(f64::NAN);
                eprintln!(
                    "      done in {:.1}s: {:.2} tok/s total, mean TPOT {:.2} ms",
                    elapsed.as_secs_f64(),
                    number(set.tps()),
                    number(set.tpot())
                );
                for w in warnings {
                    eprintln!("      warning: {w}");
                }
            }
            Outcome::Failure { error, .. }
                if failure_expected(spec, &run.step, &run.workload, error) =>
            {
                eprintln!("      failed as the experiment expects: {error}")
            }
            Outcome::Failure { error, .. } => eprintln!("      failed: {error}"),
            Outcome::Imported { .. } => {}
        },
    }
}

/// The logs of a failed run's latest sample, to read for why it failed.
fn failure_logs(loaded: &Loaded, plan: &crate::plan::Plan, step: &str, workload: &str) -> String {
    let logs = plan
        .runs
        .iter()
        .find(|r| r.step == step && r.workload == workload)
        .and_then(|r| loaded.store.files(&r.key).ok().flatten())
        .and_then(|files| files.samples.last().cloned())
        .map(|sample| sample.logs)
        .unwrap_or_default();
    if logs.is_empty() {
        return "no log was kept (`perfpipe report` shows its error)".into();
    }
    logs.iter()
        .map(|l| l.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
