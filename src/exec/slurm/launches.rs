//! Launches through Slurm: one job per launch whose runs the store lacks,
//! running `perfpipe realise <material> --store <dir>` on a node; what each
//! job measured is read back from the store, the source of truth. (effects)

use std::path::PathBuf;
use std::time::Duration;

use super::follow::{Followed, JobEvent, follow_in, unless_interrupted};
use super::options::{ContainerMode, SlurmOptions};
use super::pyxis::PyxisStep;
use super::queue::Queue;
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
    let root = fs_err::canonicalize(store.root()).map_err(|source| ExecError::System {
        what: "resolve the store's path",
        source,
    })?;
    let store_id = script::store_id(&root);
    // Every launch placed before any is submitted: one the operator's
    // mapping cannot place refuses the study, not its launch alone.
    let mut wanted: Vec<(&LaunchKey, &LaunchMaterial, JobRequest)> = unmeasured
        .into_iter()
        .map(|(key, material)| {
            let job = request(key, material, store, &root, &store_id, exec)?;
            Ok((key, material, job))
        })
        .collect::<Result<_, Error>>()
        .map_err(ExecError::Slurm)?;
    let runtime = io.handle().map_err(ExecError::Tokio)?;
    let cancel = runtime
        .block_on(async { crate::exec::watch_signals() })
        .map_err(ExecError::Tokio)?;
    // The head's one poll: its first answer now, then one `squeue` per
    // `poll` for every launch's job.
    let (queue, polling) = runtime
        .block_on(unless_interrupted(
            Queue::watch(&exec.slurm, exec.poll),
            &mut cancel.clone(),
        ))
        .map_err(|e| match e {
            Error::Interrupted { .. } => ExecError::Interrupted,
            e => ExecError::Slurm(e),
        })?;
    // The jobs a killed head left queued or running go first: under
    // `--jobs N` they hold places of the N, so nothing is submitted beside them.
    let latest = queue.latest();
    wanted.sort_by_key(|(_, _, job)| !latest.active().any(|q| job.is_served_by(q)));
    let report = std::cell::RefCell::new(report);
    // Once a launch fails to be followed (Slurm cannot be asked, Ctrl-C),
    // no further launch starts: the head ends, its jobs left for the next
    // `run` to adopt, instead of meeting the same failure once per launch.
    let stopped = std::cell::Cell::new(false);
    // `--jobs N`: a launch holds one of N places from its submission (or
    // adoption) until its job leaves the queue; the places are handed out
    // in the launches' order (the semaphore is fair), and a launch whose
    // job ended frees its place whatever the launches before it do.
    let places = tokio::sync::Semaphore::new(
        exec.jobs
            .unwrap_or(usize::MAX)
            .clamp(1, tokio::sync::Semaphore::MAX_PERMITS),
    );
    let followed = wanted.iter().map(|(key, material, job)| {
        let (cancel, report, logs, stopped) = (cancel.clone(), &report, &logs, &stopped);
        let (queue, places) = (queue.clone(), &places);
        async move {
            let _place = places.acquire().await.expect("the places are never closed");
            if stopped.get() {
                return None;
            }
            let followed = follow_in(
                &exec.slurm,
                queue,
                job,
                &exec.options,
                logs,
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
    let followed = runtime.block_on(async {
        tokio::select! {
            failed = polling => Err(failed),
            followed = futures_util::future::join_all(followed) => Ok(followed),
        }
    });
    // The poll failed (a controller that did not answer for the whole
    // patience): the jobs stay queued, for the next `run` to adopt.
    let followed = followed.map_err(ExecError::Slurm)?;
    let mut first_error = None;
    for ((_, material, _), followed) in wanted.iter().zip(followed) {
        let Some(followed) = followed else {
            continue;
        };
        let why = match followed {
            Ok(f) => with_log(why_unstored(&f, &exec.options), f.logs.last()),
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
fn why_unstored(followed: &Followed, options: &SlurmOptions) -> String {
    match &followed.verdict {
        Verdict::Ended => "the job ended without storing a result".to_owned(),
        Verdict::Failed { why } => why.clone(),
        Verdict::Transient { why } => format!(
            "{why} on every attempt ({} resubmissions, `--retries`)",
            options.retries()
        ),
        Verdict::TimedOut => {
            let limit = match &followed.time_limit {
                Some(limit) => format!("of `{limit}`"),
                None => "(the partition's default)".to_owned(),
            };
            let why_not = followed.not_lengthened.as_deref().unwrap_or_default();
            format!(
                "it reached its time limit {limit} (TIMEOUT) and is not resubmitted: {why_not}; \
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

/// The job of one launch, of the store whose canonical path is `root`.
fn request(
    key: &LaunchKey,
    material: &LaunchMaterial,
    store: &Store,
    root: &std::path::Path,
    store_id: &str,
    exec: &SlurmExec,
) -> Result<JobRequest, Error> {
    let gpus = material.engine.gpus_per_instance * material.engine.instances;
    // The material by the store's canonical path, as every node and a
    // container's mount reach it.
    let material_path = store.launch_path(key);
    let relative = material_path
        .strip_prefix(store.root())
        .expect("a store's launch material is under its root");
    let mut command = vec![
        exec.program.display().to_string(),
        "realise".into(),
        root.join(relative).display().to_string(),
        "--store".into(),
        root.display().to_string(),
    ];
    let container = match exec.options.container {
        // Never the engine's image skipped: a launch without one is refused.
        ContainerMode::Pyxis => {
            command.push("--engine-here".into());
            Some(PyxisStep::new(
                material.engine.image.as_deref(),
                root,
                &exec.program,
            )?)
        }
        ContainerMode::Docker => None,
    };
    Ok(JobRequest {
        launch_key: key.as_str().to_owned(),
        store: store_id.to_owned(),
        run_keys: material.runs.iter().map(|r| r.key.to_string()).collect(),
        placement: exec.options.placement(&material.hardware.gpu, gpus)?,
        command,
        container,
    })
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
    fn a_timeout_says_the_limit_why_it_was_not_lengthened_and_the_flag_that_raises_it() {
        let options = SlurmOptions {
            time_limit: Some("30".into()),
            timeout_retries: Some(0),
            ..Default::default()
        };
        let followed = |time_limit: Option<&str>, options: &SlurmOptions| Followed {
            jobs: vec![7],
            adopted: false,
            logs: vec![PathBuf::from("/s/logs/slurm/pp-0123456789ab.7.log")],
            verdict: Verdict::TimedOut,
            time_limit: time_limit.map(str::to_owned),
            not_lengthened: options.longer_limit(time_limit, 0).err(),
        };
        let timed_out = followed(Some("30"), &options);
        let why = with_log(why_unstored(&timed_out, &options), timed_out.logs.last());
        insta::assert_snapshot!(why, @"it reached its time limit of `30` (TIMEOUT) and is not resubmitted: `timeout_retries = 0` in `[executor.slurm]`; raise the limit with `--time-limit` or `time_limit` in `[executor.slurm]` of perfpipe.toml (its log: /s/logs/slurm/pp-0123456789ab.7.log)");
        // A failed job's message names its command's exit status and its log.
        let failed = Followed {
            verdict: super::super::state::verdict(
                Some(&super::super::state::JobState::Failed),
                Some(3),
            ),
            ..timed_out.clone()
        };
        let why = with_log(why_unstored(&failed, &options), failed.logs.last());
        insta::assert_snapshot!(why, @"the job's command exited with status 3 (FAILED) (its log: /s/logs/slurm/pp-0123456789ab.7.log)");
        let default = SlurmOptions::default();
        let why = why_unstored(&followed(None, &default), &default);
        assert!(
            why.contains("time limit (the partition's default) (TIMEOUT) and is not resubmitted: perfpipe does not know"),
            "{why}"
        );
    }
}
