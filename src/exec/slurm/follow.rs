//! One launch through Slurm: adopt a job of its store that measures its
//! runs when one is already queued or running (a killed head's), else
//! submit one; follow it until it leaves the queue; resubmit it, a bounded
//! number of times, when Slurm ended it for a cause of its own that may
//! pass; cancel it on Ctrl-C or SIGTERM. Each submission writes a log of
//! its own. (effects)

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::watch;

use super::Error;
use super::client::Slurm;
use super::options::SlurmOptions;
use super::script::{self, JobRequest};
use super::state::{self, JobState, QueuedJob, Verdict};

/// What a launch's job (or jobs) came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Followed {
    /// Every job id, in order: resubmissions after the first.
    pub jobs: Vec<u64>,
    /// Whether the first was a queued or running job adopted from an earlier head.
    pub adopted: bool,
    /// The log of each job this head submitted, in order (one per attempt).
    pub logs: Vec<PathBuf>,
    pub verdict: Verdict,
}

/// What happens to a launch's job, as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEvent {
    Submitted {
        id: u64,
    },
    Adopted {
        id: u64,
        state: JobState,
    },
    /// The job waits, for `reason` as `squeue %r` gives it (`Resources`,
    /// `Priority`…); sent when the reason changes.
    Pending {
        id: u64,
        reason: String,
    },
    Started {
        id: u64,
    },
    /// Job `id` ended for `why`, a cause that may pass; the same job is
    /// submitted again as attempt `attempt` of `attempts`.
    Resubmitting {
        id: u64,
        why: String,
        attempt: u32,
        attempts: u32,
    },
    /// The launch's last job left the queue; `measured`: the store holds a
    /// success of every run of the launch. (Sent by [`super::execute`].)
    Ended {
        id: u64,
        measured: bool,
    },
}

/// Runs `job` through Slurm to its end. `poll` is how often `squeue` is
/// asked; the jobs' logs go to `logs` (a directory).
pub async fn follow(
    slurm: &Slurm,
    job: &JobRequest,
    options: &SlurmOptions,
    logs: &Path,
    poll: Duration,
    mut cancel: watch::Receiver<bool>,
    report: &mut dyn FnMut(JobEvent),
) -> Result<Followed, Error> {
    let mut followed = Followed {
        jobs: Vec::new(),
        adopted: false,
        logs: Vec::new(),
        verdict: Verdict::Ended,
    };
    let queued = unless_interrupted(slurm.queued(), &mut cancel).await?;
    let adopted = serving(job, &queued);
    // An adopted job measuring only some of the launch's runs: a job of the
    // launch's own follows it for the others.
    let mut partly_served = false;
    let mut current = match adopted {
        Some(q) => {
            report(JobEvent::Adopted {
                id: q.id,
                state: q.state.clone(),
            });
            followed.adopted = true;
            partly_served = !job.is_wholly_served_by(q);
            q.id
        }
        None => submit(slurm, job, options, logs, &cancel, &mut followed, report).await?,
    };
    let mut resubmissions = 0;
    loop {
        followed.jobs.push(current);
        let verdict = wait(slurm, current, poll, &mut cancel, report).await?;
        match verdict {
            Verdict::Ended if partly_served => {}
            Verdict::Transient { ref why } if resubmissions < options.retries() => {
                resubmissions += 1;
                report(JobEvent::Resubmitting {
                    id: current,
                    why: why.clone(),
                    attempt: resubmissions + 1,
                    attempts: options.retries() + 1,
                });
            }
            verdict => {
                followed.verdict = verdict;
                return Ok(followed);
            }
        }
        partly_served = false;
        current = submit(slurm, job, options, logs, &cancel, &mut followed, report).await?;
    }
}

/// What `asking` gives, unless Ctrl-C comes first (as while a controller
/// that does not answer is asked again): nothing of the launch is queued yet.
pub async fn unless_interrupted<T>(
    asking: impl std::future::Future<Output = Result<T, Error>>,
    cancel: &mut watch::Receiver<bool>,
) -> Result<T, Error> {
    tokio::select! {
        answer = asking => answer,
        _ = cancel.wait_for(|c| *c) => Err(Error::Interrupted { jobs: Vec::new() }),
    }
}

/// The queued or running job of the launch's store that measures its
/// runs: one that measures them all first.
fn serving<'q>(job: &JobRequest, queued: &'q [QueuedJob]) -> Option<&'q QueuedJob> {
    queued
        .iter()
        .find(|q| job.is_wholly_served_by(q))
        .or_else(|| queued.iter().find(|q| job.is_served_by(q)))
}

/// Submits `job`, its output to a log of its own; nothing once interrupted.
async fn submit(
    slurm: &Slurm,
    job: &JobRequest,
    options: &SlurmOptions,
    logs: &Path,
    cancel: &watch::Receiver<bool>,
    followed: &mut Followed,
    report: &mut dyn FnMut(JobEvent),
) -> Result<u64, Error> {
    if *cancel.borrow() {
        return Err(Error::Interrupted { jobs: Vec::new() });
    }
    let log = claim_log(logs, &script::job_name(&job.launch_key)).map_err(Error::Logs)?;
    let args = script::sbatch_args(job, options, &log);
    let id = slurm.submit(&script::script(job, options), &args).await?;
    followed.logs.push(log);
    report(JobEvent::Submitted { id });
    Ok(id)
}

/// A new log file `NAME.N.log` in `dir`, N the first number free: each
/// attempt (of this head or another) keeps its own. Created here, empty,
/// so that no two submissions share one; Slurm writes the job's output to it.
fn claim_log(dir: &Path, name: &str) -> std::io::Result<PathBuf> {
    for attempt in 1u32.. {
        let path = dir.join(format!("{name}.{attempt}.log"));
        match fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    unreachable!("a directory holds fewer than 2^32 logs of one launch")
}

/// How long a cancellation waits for a controller that does not answer:
/// Ctrl-C ends the head soon whatever Slurm does.
const CANCEL_PATIENCE: Duration = Duration::from_secs(30);

/// Cancels job `id` on Ctrl-C or SIGTERM; the error says which.
async fn interrupt(slurm: &Slurm, id: u64) -> Result<Verdict, Error> {
    let slurm = Slurm {
        patience: slurm.patience.min(CANCEL_PATIENCE),
        ..slurm.clone()
    };
    slurm.cancel(&[id]).await?;
    Err(Error::Interrupted { jobs: vec![id] })
}

/// Waits until job `id` leaves the queue and judges how it ended; cancels
/// it when `cancel` turns true, also while Slurm is asked.
async fn wait(
    slurm: &Slurm,
    id: u64,
    poll: Duration,
    cancel: &mut watch::Receiver<bool>,
    report: &mut dyn FnMut(JobEvent),
) -> Result<Verdict, Error> {
    let mut started = false;
    let mut reason: Option<String> = None;
    loop {
        let queued = tokio::select! {
            queued = slurm.queued() => queued?.into_iter().find(|q| q.id == id),
            _ = cancel.wait_for(|c| *c) => return interrupt(slurm, id).await,
        };
        match queued {
            Some(q) if q.state.is_active() => {
                if let Some(now) = q.pending_reason()
                    && reason.as_deref() != Some(now)
                {
                    reason = Some(now.to_owned());
                    report(JobEvent::Pending {
                        id,
                        reason: now.to_owned(),
                    });
                }
                if !started && q.state == JobState::Running {
                    started = true;
                    report(JobEvent::Started { id });
                }
            }
            // Gone from the queue, or ended and still shown: how it ended.
            _ => {
                let shown = tokio::select! {
                    shown = slurm.shown(id) => shown?,
                    _ = cancel.wait_for(|c| *c) => return interrupt(slurm, id).await,
                };
                match shown {
                    Some(shown) if shown.state.is_active() => {}
                    // Ended as it was interrupted: the interruption, not a cause to resubmit for.
                    Some(_) if *cancel.borrow() => {
                        return Err(Error::Interrupted { jobs: Vec::new() });
                    }
                    Some(shown) => return Ok(state::verdict(&shown.state, shown.exit)),
                    // Forgotten already (`MinJobAge`): the store says what it measured.
                    None => return Ok(Verdict::Ended),
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = cancel.wait_for(|c| *c) => return interrupt(slurm, id).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_attempt_claims_a_log_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let first = claim_log(dir.path(), "pp-0123456789ab").unwrap();
        // Slurm writes the first attempt's output.
        std::io::Write::write_all(
            &mut std::fs::OpenOptions::new()
                .append(true)
                .open(&first)
                .unwrap(),
            b"attempt 1",
        )
        .unwrap();
        let second = claim_log(dir.path(), "pp-0123456789ab").unwrap();
        assert_eq!(first, dir.path().join("pp-0123456789ab.1.log"));
        assert_eq!(second, dir.path().join("pp-0123456789ab.2.log"));
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "attempt 1");
    }
}
