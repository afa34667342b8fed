//! `perfpipe run`: execute what is missing, then print the report and
//! what the runs did.

use std::time::Duration;

use super::Stderr;
use super::args::{ContainerArg, ExecutorArg, RunArgs};
use super::progress::Display;
use crate::exec::slurm::{
    self, ContainerMode, JobEvent, Outage, OutageNotice, Slurm, SlurmExec, SlurmOptions,
};
use crate::exec::{ExecEvent, ExecOptions};
use crate::exit_code;
use crate::launch::LaunchKey;
use crate::ops::Error;
use crate::ops::run::older::RanOlder;
use crate::ops::run::{Done, Executor, Ran, RunOptions, exec_defaults, failure_expected};
use crate::plural::count;
use crate::spec::Spec;
use crate::store::Outcome;
use crate::tokio_runtime::Io;

pub fn run(args: &RunArgs, io: &Io) -> Result<u8, Error> {
    let options = RunOptions {
        selection: args.selection(),
        locked: args.locked,
        offline: args.offline,
        report: args.report.clone(),
        exec: exec_options(args)?,
        substitution: args.substitute.options(),
        executor: executor(args)?,
        io: io.clone(),
    };
    let mut display = Display::new("      ");
    let outcome = crate::ops::run::run(
        &options,
        &Stderr,
        &mut |spec, event| progress(spec, &mut display, event),
        &mut job_progress,
    );
    // The bars go before anything else is written.
    drop(display);
    let Ran {
        report: text,
        report_path: path,
        summary,
        unexpected,
        failed_as_expected,
    } = match outcome? {
        Done::Ran(ran) => ran,
        Done::Older(older) => return Ok(ran_older(&older)),
    };
    out!("{text}");
    eoutln!(
        "perfpipe: ran {} (failed: {}); report written to `{}` (and `{}`)",
        summary.succeeded + summary.failed,
        failures(summary.failed, failed_as_expected),
        path.display(),
        path.with_extension("html").display()
    );
    if !unexpected.is_empty() {
        eoutln!(
            "perfpipe: {} where the experiment expects no failure; the logs say why:",
            count(unexpected.len(), "run failed", "runs failed")
        );
        for f in &unexpected {
            let when = if f.now {
                ""
            } else {
                " (stored by an earlier run)"
            };
            eoutln!("  `{}` × `{}`{when}: {}", f.step, f.workload, f.logs);
        }
    }
    // Not in the report: a transient failure is no result. It still fails the command.
    for f in &summary.unstored {
        eoutln!(
            "perfpipe: `{}` × `{}` failed on every attempt for a cause that may pass, so nothing is stored and the next `run` tries again: {}",
            f.step,
            f.workload,
            f.error
        );
    }
    Ok(if unexpected.len() + summary.unstored.len() > 0 {
        exit_code::RUNS_FAILED
    } else {
        exit_code::OK
    })
}

/// This run's failures, which of them the experiment expects (`expect-failure`)
/// and which are news: "0", "2, as the experiment expects", "3; 2 as the
/// experiment expects, 1 unexpectedly".
fn failures(failed: usize, expected: usize) -> String {
    let unexpected = failed.saturating_sub(expected);
    match (expected, unexpected) {
        (0, 0) => "0".to_owned(),
        (_, 0) => format!("{failed}, as the experiment expects"),
        (0, _) => format!("{failed}, unexpectedly"),
        _ => format!("{failed}; {expected} as the experiment expects, {unexpected} unexpectedly"),
    }
}

/// What running an older lockfile did; its exit code.
fn ran_older(older: &RanOlder) -> u8 {
    let summary = &older.summary;
    eoutln!(
        "perfpipe: ran {} of `{}` (failed: {}), {} already in the store; `perfpipe diff` compares them with another lockfile's",
        summary.succeeded + summary.failed,
        older.lockfile.display(),
        summary.failed,
        older.stored
    );
    for f in &summary.unstored {
        eoutln!(
            "perfpipe: `{}` × `{}` failed on every attempt for a cause that may pass, so nothing is stored: {}",
            f.step,
            f.workload,
            f.error
        );
    }
    if summary.failed + summary.unstored.len() > 0 {
        exit_code::RUNS_FAILED
    } else {
        exit_code::OK
    }
}

/// How the executor runs, from the options.
pub(super) fn exec_options(args: &RunArgs) -> Result<ExecOptions, Error> {
    Ok(ExecOptions {
        startup_timeout: args.startup_timeout.map(Duration::from_secs),
        stall_timeout: Duration::from_secs(args.stall_timeout),
        fresh_engine: args.policy.fresh_engine,
        jobs: args.jobs.unwrap_or(1) as usize,
        ..exec_defaults()?
    })
}

/// Where the launches run; the Slurm options are the command line's over
/// `[executor.slurm]` (filled in by `project::apply`).
fn executor(args: &RunArgs) -> Result<Executor, Error> {
    if args.executor == ExecutorArg::Local {
        return Ok(Executor::Local);
    }
    let s = &args.slurm;
    Ok(Executor::Slurm(Box::new(SlurmExec {
        slurm: Slurm {
            patience: s
                .slurm_patience
                .map_or(slurm::client::DEFAULT_PATIENCE, Duration::from_secs),
            on_outage: OutageNotice::new(|o| eoutln!("{}", outage_line(o))),
            ..Slurm::default()
        },
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
            ..s.file.clone()
        },
        program: exec_defaults()?.sim_program,
        poll: Duration::from_millis(s.slurm_poll_ms),
        jobs: args.jobs.map(|n| n as usize),
    })))
}

/// A wait for a Slurm controller that does not answer, as it begins.
fn outage_line(o: &Outage) -> String {
    format!(
        "perfpipe: Slurm's controller does not answer `{}` ({}); asking again in {} s, giving up in {} s (`--slurm-patience`), leaving the jobs queued",
        o.command,
        o.error.trim(),
        o.retry_in.as_secs_f64().ceil(),
        o.gives_up_in.as_secs_f64().ceil()
    )
}

/// What becomes of each launch's Slurm job, a line each.
fn job_progress(launch: &LaunchKey, event: &JobEvent) {
    eoutln!("{}", job_line(launch, event));
}

fn job_line(launch: &LaunchKey, event: &JobEvent) -> String {
    let launch = launch.short();
    match event {
        JobEvent::Submitted { id } => format!("launch {launch}: Slurm job {id} pending"),
        JobEvent::Pending { id, reason } => {
            format!("launch {launch}: Slurm job {id} pending ({reason})")
        }
        JobEvent::Adopted { id, state } => {
            format!("launch {launch}: Slurm job {id} adopted ({state:?})")
        }
        JobEvent::Started { id, node } => {
            format!("launch {launch}: Slurm job {id} running on {node}")
        }
        JobEvent::Resubmitting {
            id,
            why,
            attempt,
            attempts,
        } => format!(
            "launch {launch}: Slurm job {id} ended ({why}); resubmitting the same job, attempt {attempt} of {attempts} (`--retries`)"
        ),
        JobEvent::Lengthening {
            id,
            limit,
            retry,
            retries,
        } => format!(
            "launch {launch}: Slurm job {id} reached its time limit (TIMEOUT); resubmitting it with a limit of `{limit}`, resubmission {retry} of {retries} (`timeout_retries`)"
        ),
        JobEvent::Ended { id, measured: true } => format!("launch {launch}: Slurm job {id} done"),
        JobEvent::Ended {
            id,
            measured: false,
        } => format!("launch {launch}: Slurm job {id} failed"),
    }
}

/// Shows what the executor tells: lines, and each run's bar.
pub(super) fn progress(spec: &Spec, display: &mut Display, event: &ExecEvent) {
    match event {
        ExecEvent::Started {
            index,
            total,
            bounded,
            run,
        } => {
            // A search's later probes are unknown: its total is a bound.
            let most = if *bounded { "≤" } else { "" };
            let prefix = format!(
                "[{}/{most}{total}] `{}` × `{}`",
                index + 1,
                run.step,
                run.workload
            );
            display.line(&format!("{prefix} ({})", run.key.short()));
            display.start(run.key.as_str(), prefix);
        }
        ExecEvent::AlreadyDone { run } => {
            display.finish(run.key.as_str());
            display.line(&format!(
                "      already in the store (committed by another perfpipe): {}",
                run.key.short()
            ));
        }
        ExecEvent::WaitingForGpus {
            needed, foreign, ..
        } => {
            let gpus = crate::plural::count(*needed as usize, "free GPU", "free GPUs");
            if foreign.is_empty() {
                display.line(&format!(
                    "      waiting for {gpus} (another perfpipe holds them)"
                ));
            } else {
                display.line(&format!(
                    "      waiting for {gpus}; not using GPUs that hold processes perfpipe did not start:"
                ));
                for (index, process) in *foreign {
                    display.line(&format!("        GPU {index}: {process}"));
                }
            }
        }
        ExecEvent::LeftoverStopped { stopped } => {
            display.line(&format!(
                "stopped what a killed perfpipe left: {}, {}",
                super::describe_launch(&stopped.launch),
                count(stopped.processes, "process", "processes")
            ));
        }
        ExecEvent::StillStarting {
            run,
            after,
            waiting_for,
            last_line,
        } => display.starting(run.key.as_str(), *after, waiting_for, *last_line),
        ExecEvent::EngineReady { after, .. } => {
            display.line(&format!(
                "      engine ready after {:.1}s",
                after.as_secs_f64()
            ));
        }
        ExecEvent::Benchmarking {
            run,
            requests,
            position,
        } => {
            let shared = if *position > 1 {
                format!(" (run {position} on this engine)")
            } else {
                String::new()
            };
            display.line(&format!(
                "      sending {}{shared}",
                count(*requests, "request", "requests")
            ));
            display.benchmark(run.key.as_str(), *requests);
        }
        ExecEvent::RequestDone { run, progress } => display.request(run.key.as_str(), progress),
        ExecEvent::Retrying { error, .. } => {
            display.line(&format!("      transient failure, retrying: {error}"))
        }
        ExecEvent::Finished {
            run,
            result,
            elapsed,
        } => {
            display.finish(run.key.as_str());
            match &result.outcome {
                Outcome::Success {
                    metrics, warnings, ..
                } => {
                    let set = metrics.set();
                    let number = |name| metrics.get(name).unwrap_or(f64::NAN);
                    display.line(&format!(
                        "      done in {:.1}s: {:.2} tok/s total, mean TPOT {:.2} ms",
                        elapsed.as_secs_f64(),
                        number(set.tps()),
                        number(set.tpot())
                    ));
                    for w in warnings {
                        display.line(&format!("      warning: {w}"));
                    }
                }
                Outcome::Failure { error, .. }
                    if failure_expected(spec, &run.step, &run.workload, error) =>
                {
                    display.line(&format!("      failed as the experiment expects: {error}"))
                }
                Outcome::Failure { error, .. } => display.line(&format!("      failed: {error}")),
                Outcome::Imported { .. } => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::slurm::JobState;

    #[test]
    fn each_slurm_job_event_is_a_line_of_its_launch() {
        let launch = LaunchKey::parse(&"0123456789abcdef".repeat(4)).unwrap();
        let lines: Vec<String> = [
            JobEvent::Submitted { id: 7 },
            JobEvent::Pending {
                id: 7,
                reason: "Resources".into(),
            },
            JobEvent::Adopted {
                id: 8,
                state: JobState::Pending,
            },
            JobEvent::Started {
                id: 7,
                node: "gpu-a7".into(),
            },
            JobEvent::Resubmitting {
                id: 7,
                why: "its node failed (NODE_FAIL)".into(),
                attempt: 2,
                attempts: 3,
            },
            JobEvent::Lengthening {
                id: 7,
                limit: "0-02:00:00".into(),
                retry: 1,
                retries: 1,
            },
            JobEvent::Ended {
                id: 9,
                measured: true,
            },
            JobEvent::Ended {
                id: 9,
                measured: false,
            },
        ]
        .iter()
        .map(|event| job_line(&launch, event))
        .collect();
        insta::assert_snapshot!(lines.join("\n"), @r"
        launch 0123456789ab: Slurm job 7 pending
        launch 0123456789ab: Slurm job 7 pending (Resources)
        launch 0123456789ab: Slurm job 8 adopted (Pending)
        launch 0123456789ab: Slurm job 7 running on gpu-a7
        launch 0123456789ab: Slurm job 7 ended (its node failed (NODE_FAIL)); resubmitting the same job, attempt 2 of 3 (`--retries`)
        launch 0123456789ab: Slurm job 7 reached its time limit (TIMEOUT); resubmitting it with a limit of `0-02:00:00`, resubmission 1 of 1 (`timeout_retries`)
        launch 0123456789ab: Slurm job 9 done
        launch 0123456789ab: Slurm job 9 failed
        ");
    }

    #[test]
    fn a_slurm_outage_says_when_it_is_asked_again_and_when_it_gives_up() {
        let line = outage_line(&Outage {
            command: "squeue",
            error: "`squeue --me` failed (exit status: 1): slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n".into(),
            retry_in: Duration::from_secs(4),
            gives_up_in: Duration::from_millis(295_500),
        });
        insta::assert_snapshot!(line, @"perfpipe: Slurm's controller does not answer `squeue` (`squeue --me` failed (exit status: 1): slurm_load_jobs error: Unable to contact slurm controller (connect failure)); asking again in 4 s, giving up in 296 s (`--slurm-patience`), leaving the jobs queued");
    }

    #[test]
    fn failures_say_which_the_experiment_expects() {
        assert_eq!(failures(0, 0), "0");
        assert_eq!(failures(2, 2), "2, as the experiment expects");
        assert_eq!(failures(1, 0), "1, unexpectedly");
        assert_eq!(
            failures(3, 2),
            "3; 2 as the experiment expects, 1 unexpectedly"
        );
    }
}
