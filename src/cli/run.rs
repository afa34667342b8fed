//! `perfpipe run`: execute what is missing, then print the report and
//! what the runs did.

use std::time::Duration;

use super::args::{ContainerArg, ExecutorArg, RunArgs};
use super::{CliError, Stderr};
use crate::drv::LaunchKey;
use crate::exec::slurm::{ContainerMode, JobEvent, Slurm, SlurmExec, SlurmOptions};
use crate::exec::{ExecEvent, ExecOptions};
use crate::exit_code;
use crate::ops::run::{Executor, Ran, RunOptions, failure_expected};
use crate::plural::count;
use crate::spec::Spec;
use crate::store::Outcome;

pub fn run(args: &RunArgs) -> Result<u8, CliError> {
    let options = RunOptions {
        selection: args.common(),
        locked: args.locked,
        offline: args.offline,
        report: args.report.clone(),
        exec: exec_options(args)?,
        executor: executor(args)?,
    };
    let Ran {
        report: text,
        report_path: path,
        summary,
        unexpected,
    } = crate::ops::run::run(&options, &Stderr, &mut progress, &mut job_progress)?;
    out!("{text}");
    eprintln!(
        "perfpipe: ran {} (failed: {}); report written to `{}` (and `{}`)",
        summary.succeeded + summary.failed,
        summary.failed,
        path.display(),
        path.with_extension("html").display()
    );
    if !unexpected.is_empty() {
        eprintln!(
            "perfpipe: {} where the experiment expects no failure; the logs say why:",
            count(unexpected.len(), "run failed", "runs failed")
        );
        for f in &unexpected {
            eprintln!("  `{}` × `{}`: {}", f.step, f.workload, f.logs);
        }
    }
    // Not in the report: a transient failure is no result. It still fails the command.
    for f in &summary.unstored {
        eprintln!(
            "perfpipe: `{}` × `{}` failed on every attempt for a cause that may pass, so nothing is stored and the next `run` tries again: {}",
            f.step, f.workload, f.error
        );
    }
    Ok(if unexpected.len() + summary.unstored.len() > 0 {
        exit_code::RUNS_FAILED
    } else {
        exit_code::OK
    })
}

/// How the executor runs, from the options.
pub(super) fn exec_options(args: &RunArgs) -> Result<ExecOptions, CliError> {
    Ok(ExecOptions {
        startup_timeout: args.startup_timeout.map(Duration::from_secs),
        stall_timeout: Duration::from_secs(args.stall_timeout),
        fresh_engine: args.policy.fresh_engine,
        jobs: args.jobs as usize,
        ..exec_defaults()?
    })
}

/// Where the launches run; the Slurm options are the command line's over
/// `[executor.slurm]` (filled in by `project::apply`).
fn executor(args: &RunArgs) -> Result<Executor, CliError> {
    if args.executor == ExecutorArg::Local {
        return Ok(Executor::Local);
    }
    let s = &args.slurm;
    Ok(Executor::Slurm(SlurmExec {
        slurm: Slurm::default(),
        options: SlurmOptions {
            partition: s.partition.clone(),
            account: s.account.clone(),
            qos: s.qos.clone(),
            time_limit: s.time_limit.clone(),
            sbatch_args: s.sbatch_args.clone(),
            container: match s.container {
                Some(ContainerArg::Pyxis) => ContainerMode::Pyxis,
                Some(ContainerArg::Docker) | None => ContainerMode::Docker,
            },
            retries: s.retries,
        },
        program: exec_defaults()?.sim_program,
        poll: Duration::from_millis(s.slurm_poll_ms),
    }))
}

/// What becomes of each launch's Slurm job, a line each.
fn job_progress(launch: &LaunchKey, event: &JobEvent) {
    let launch = launch.short();
    match event {
        JobEvent::Submitted { id } => eprintln!("launch {launch}: Slurm job {id} pending"),
        JobEvent::Adopted { id, state } => {
            eprintln!("launch {launch}: Slurm job {id} adopted ({state:?})")
        }
        JobEvent::Started { id } => eprintln!("launch {launch}: Slurm job {id} running"),
        JobEvent::Resubmitting { id, why } => {
            eprintln!("launch {launch}: Slurm job {id} ended ({why}); resubmitting")
        }
        JobEvent::Ended { id, measured: true } => {
            eprintln!("launch {launch}: Slurm job {id} done")
        }
        JobEvent::Ended {
            id,
            measured: false,
        } => {
            eprintln!("launch {launch}: Slurm job {id} failed")
        }
    }
}

/// How the executor runs without options (`realise`: the material holds
/// the timeouts).
pub(super) fn exec_defaults() -> Result<ExecOptions, CliError> {
    Ok(ExecOptions {
        sim_program: std::env::current_exe().map_err(|source| CliError::Write {
            path: "current executable".into(),
            source,
        })?,
        startup_timeout: None,
        stall_timeout: Duration::from_secs(crate::harness::DEFAULT_STALL_TIMEOUT_SECS),
        attempts: 3,
        fresh_engine: false,
        jobs: 1,
    })
}

pub(super) fn progress(spec: &Spec, event: &ExecEvent) {
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
