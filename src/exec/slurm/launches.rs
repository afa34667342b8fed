//! Launches through Slurm: one job per launch whose runs the store lacks,
//! running `perfpipe realise <material> --store <dir>` on a node; what each
//! job measured is read back from the store, the source of truth. (effects)

use std::path::PathBuf;
use std::time::Duration;

use futures_util::StreamExt;

use super::follow::{JobEvent, follow, unless_interrupted};
use super::options::SlurmOptions;
use super::script::{self, JobRequest};
use super::state::Verdict;
use super::{Error, Slurm};
use crate::exec::{ExecError, ExecSummary, UnstoredFailure};
use crate::launch::{LaunchKey, LaunchMaterial};
use crate::store::{Outcome, Store};

/// How launches go to Slurm.
#[derive(Debug, Clone)]
pub struct SlurmExec {
    pub slurm: Slurm,
    pub options: SlurmOptions,
    /// The perfpipe the nodes run (this one: the same path on every node).
    pub program: PathBuf,
    /// How often `squeue` is asked.
    pub poll: Duration,
    /// How many of this perfpipe's jobs may be queued or running at once
    /// (`--jobs`); `None`: every launch's at once.
    pub jobs: Option<usize>,
}

/// Runs every launch of `launches` whose runs the store lacks as a Slurm
/// job, and counts what the store then holds. `report` hears each job's events.
pub fn execute(
    launches: &[(LaunchKey, LaunchMaterial)],
    store: &Store,
    exec: &SlurmExec,
    io: &crate::tokio_runtime::Io,
    report: &mut dyn FnMut(&LaunchKey, &JobEvent),
) -> Result<ExecSummary, ExecError> {
    exec.options
        .check()
        .map_err(|e| ExecError::Slurm(Error::Options(e)))?;
    let unmeasured: Vec<&(LaunchKey, LaunchMaterial)> = launches
        .iter()
        .filter(|(_, m)| m.runs.iter().any(|r| !stored(store, &r.key, m.samples)))
        .collect();
    let mut summary = ExecSummary::default();
    if unmeasured.is_empty() {
        return Ok(summary);
    }
    let logs = store.root().join("logs").join("slurm");
    fs_err::create_dir_all(&logs).map_err(|e| ExecError::Slurm(Error::Logs(e)))?;
    let store_id = store_id(store)?;
    let mut wanted: Vec<(&LaunchKey, &LaunchMaterial, JobRequest)> = unmeasured
        .into_iter()
        .map(|(key, material)| {
            (
                key,
                material,
                request(key, material, store, &store_id, exec),
            )
        })
        .collect();
    let runtime = io.handle().map_err(ExecError::Tokio)?;
    let cancel = runtime
        .block_on(async { crate::exec::watch_signals() })
        .map_err(ExecError::Tokio)?;
    // The jobs a killed head left queued or running go first: under
    // `--jobs N` they hold places of the N, so nothing is submitted beside them.
    let queued = runtime
        .block_on(unless_interrupted(exec.slurm.queued(), &mut cancel.clone()))
        .map_err(|e| match e {
            Error::Interrupted { .. } => ExecError::Interrupted,
            e => ExecError::Slurm(e),
        })?;
    wanted.sort_by_key(|(_, _, job)| !queued.iter().any(|q| job.is_served_by(q)));
    let report = std::cell::RefCell::new(report);
    // Once a launch fails to be followed (Slurm cannot be asked, Ctrl-C),
    // no further launch starts: the head ends, its jobs left for the next
    // `run` to adopt, instead of meeting the same failure once per launch.
    let stopped = std::cell::Cell::new(false);
    let followed = wanted.iter().map(|(key, material, job)| {
        let (cancel, report, logs, stopped) = (cancel.clone(), &report, &logs, &stopped);
        async move {
            if stopped.get() {
                return None;
            }
            let followed = follow(
                &exec.slurm,
                job,
                &exec.options,
                logs,
                exec.poll,
                cancel,
                &mut |event| (report.borrow_mut())(key, &event),
            )
            .await;
            if let Some(&id) = followed.as_ref().ok().and_then(|f| f.jobs.last()) {
                let measured = material
                    .runs
                    .iter()
                    .all(|r| stored_outcome(store, &r.key, material.samples) == Some(true));
                (report.borrow_mut())(key, &JobEvent::Ended { id, measured });
            }
            stopped.set(stopped.get() || followed.is_err());
            Some(followed)
        }
    });
    // In order, at most `jobs` followed at once: a launch is submitted when
    // an earlier one's job has left the queue.
    let followed: Vec<_> = runtime.block_on(
        futures_util::stream::iter(followed)
            .buffered(exec.jobs.unwrap_or(usize::MAX).max(1))
            .collect(),
    );
    let mut first_error = None;
    for ((_, material, _), followed) in wanted.iter().zip(followed) {
        let Some(followed) = followed else {
            continue;
        };
        let why = match followed {
            Ok(f) => with_log(why_unstored(&f.verdict, &exec.options), f.logs.last()),
            Err(Error::Interrupted { .. }) => {
                first_error.get_or_insert(ExecError::Interrupted);
                continue;
            }
            Err(e) => {
                first_error.get_or_insert(ExecError::Slurm(e));
                continue;
            }
        };
        for run in &material.runs {
            match stored_outcome(store, &run.key, material.samples) {
                Some(true) => summary.succeeded += 1,
                Some(false) => summary.failed += 1,
                None => summary.unstored.push(UnstoredFailure {
                    step: run.step.clone(),
                    workload: run.workload.clone(),
                    error: why.clone(),
                }),
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

/// Why a launch's job stored nothing of a run, from how it ended.
fn why_unstored(verdict: &Verdict, options: &SlurmOptions) -> String {
    match verdict {
        Verdict::Ended => "the job ended without storing a result".to_owned(),
        Verdict::Failed { why } => why.clone(),
        Verdict::Transient { why } => format!(
            "{why} on every attempt ({} resubmissions, `--retries`)",
            options.retries()
        ),
        Verdict::TimedOut => {
            let limit = match &options.time_limit {
                Some(limit) => format!("of `{limit}`"),
                None => "(the partition's default)".to_owned(),
            };
            format!(
                "it reached its time limit {limit} (TIMEOUT) and is not resubmitted, as the same limit would end it again; \
                 raise the limit with `--time-limit` or `time_limit` in `[executor.slurm]` of perfpipe.toml"
            )
        }
    }
}

fn with_log(why: String, log: Option<&PathBuf>) -> String {
    match log {
        Some(log) => format!("{why} (its log: {})", log.display()),
        None => why,
    }
}

/// The identity of `store` in its jobs' comments: of its canonical path,
/// which every node and every later `run` reach it by.
fn store_id(store: &Store) -> Result<String, ExecError> {
    let root = fs_err::canonicalize(store.root()).map_err(|source| ExecError::System {
        what: "resolve the store's path",
        source,
    })?;
    Ok(script::store_id(&root))
}

/// The job of one launch.
fn request(
    key: &LaunchKey,
    material: &LaunchMaterial,
    store: &Store,
    store_id: &str,
    exec: &SlurmExec,
) -> JobRequest {
    let gpus = material.engine.gpus_per_instance * material.engine.instances;
    JobRequest {
        launch_key: key.as_str().to_owned(),
        store: store_id.to_owned(),
        run_keys: material.runs.iter().map(|r| r.key.to_string()).collect(),
        gpus,
        whole_node: gpus > 0 && gpus == material.hardware.gpus,
        command: vec![
            exec.program.display().to_string(),
            "realise".into(),
            store.launch_path(key).display().to_string(),
            "--store".into(),
            store.root().display().to_string(),
        ],
        image: material.engine.image.clone(),
    }
}

/// Whether `key` holds its `samples` successes, or a failure.
fn stored(store: &Store, key: &crate::key::RunKey, samples: u32) -> bool {
    stored_outcome(store, key, samples).is_some()
}

/// `Some(true)` with enough successful samples, `Some(false)` with a stored
/// failure, `None` with neither.
fn stored_outcome(store: &Store, key: &crate::key::RunKey, samples: u32) -> Option<bool> {
    let held = store.samples(key).unwrap_or_default();
    let successes = held
        .iter()
        .filter(|s| matches!(s.result.outcome, Outcome::Success { .. }))
        .count();
    if successes >= samples.max(1) as usize {
        Some(true)
    } else if held
        .iter()
        .any(|s| !matches!(s.result.outcome, Outcome::Success { .. }))
    {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_says_the_limit_and_the_flag_that_raises_it() {
        let options = SlurmOptions {
            time_limit: Some("30".into()),
            ..Default::default()
        };
        let why = with_log(
            why_unstored(&Verdict::TimedOut, &options),
            Some(&PathBuf::from("/s/logs/slurm/pp-0123456789ab.1.log")),
        );
        insta::assert_snapshot!(why, @"it reached its time limit of `30` (TIMEOUT) and is not resubmitted, as the same limit would end it again; raise the limit with `--time-limit` or `time_limit` in `[executor.slurm]` of perfpipe.toml (its log: /s/logs/slurm/pp-0123456789ab.1.log)");
        let default = why_unstored(&Verdict::TimedOut, &SlurmOptions::default());
        assert!(
            default.contains("time limit (the partition's default)"),
            "{default}"
        );
    }
}
