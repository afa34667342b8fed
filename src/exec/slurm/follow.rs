//! One launch through Slurm: adopt a job of its store that measures its
//! runs when one is already queued or running (a killed head's), else
//! submit one; follow it until it leaves the queue; resubmit it, a bounded
//! number of times, when Slurm ended it for a cause of its own that may
//! pass; cancel it on Ctrl-C or SIGTERM. Each submission writes a log of
//! its own. Each job is read in the head's one poll ([`super::queue`]),
//! never asked about on its own. (effects)

use std::path::{Path, PathBuf};

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::Error;
use super::client::Slurm;
use super::options::SlurmOptions;
use super::queue::Queue;
use super::script::{self, JobRequest};
use super::state::{self, JobState, QueuedJob, Verdict};

/// What a launch's job (or jobs) came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Followed {
    /// Every job id, in order: resubmissions after the first.
    pub jobs: Vec<u64>,
    /// Whether the first was a queued or running job adopted from an earlier head.
    pub adopted: bool,
    /// The log of each job this head submitted, in order (one per attempt,
    /// named by its job id).
    pub logs: Vec<PathBuf>,
    pub verdict: Verdict,
    /// The time limit of the last job (`None`: the partition's default).
    pub time_limit: Option<String>,
    /// Why a job that reached its time limit was not resubmitted with a
    /// longer one ([`SlurmOptions::longer_limit`]).
    pub not_lengthened: Option<String>,
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
    /// Job `id` runs, on `node` (`%N`: a node list for a job of several).
    Started {
        id: u64,
        node: String,
    },
    /// Job `id` ended for `why`, a cause that may pass; the same job is
    /// submitted again as attempt `attempt` of `attempts`.
    Resubmitting {
        id: u64,
        why: String,
        attempt: u32,
        attempts: u32,
    },
    /// Job `id` reached its time limit; the same job is submitted again
    /// with `limit`, as the `retry`-th of `retries` (`timeout_retries`).
    Lengthening {
        id: u64,
        limit: String,
        retry: u32,
        retries: u32,
    },
    /// The launch's last job left the queue; `measured`: the store holds a
    /// success of every run of the launch. (Sent by [`super::execute`].)
    Ended {
        id: u64,
        measured: bool,
    },
}

/// Runs `job` through Slurm to its end, alone: a poll of its own (every
/// `poll`) beside it. The jobs' logs go to `logs` (a directory).
pub async fn follow(
    slurm: &Slurm,
    job: &JobRequest,
    options: &SlurmOptions,
    logs: &Path,
    poll: Duration,
    mut cancel: watch::Receiver<bool>,
    report: &mut dyn FnMut(JobEvent),
) -> Result<Followed, Error> {
    let (queue, polling) = unless_interrupted(Queue::watch(slurm, poll), &mut cancel).await?;
    tokio::select! {
        failed = polling => Err(failed),
        followed = follow_in(slurm, queue, job, options, logs, cancel, report) => followed,
    }
}

/// Runs `job` through Slurm to its end, reading its job in `queue` (the
/// head's one poll, which runs beside).
pub async fn follow_in(
    slurm: &Slurm,
    mut queue: Queue,
    job: &JobRequest,
    options: &SlurmOptions,
    logs: &Path,
    mut cancel: watch::Receiver<bool>,
    report: &mut dyn FnMut(JobEvent),
) -> Result<Followed, Error> {
    let mut followed = Followed {
        jobs: Vec::new(),
        adopted: false,
        logs: Vec::new(),
        verdict: Verdict::Ended,
        time_limit: options.time_limit.clone(),
        not_lengthened: None,
    };
    // This launch's options: its time limit grows after each TIMEOUT.
    let mut options = options.clone();
    let latest = queue.latest();
    let adopted = serving(job, latest.active());
    // An adopted job measuring only some of the launch's runs: a job of the
    // launch's own follows it for the others.
    let mut partly_served = false;
    // The current job's name, for its exit record (an adopted job's may be
    // another launch's: that of the launch a killed head submitted).
    let (mut current, mut since, mut name) = match adopted {
        Some(q) => {
            report(JobEvent::Adopted {
                id: q.id,
                state: q.state.clone(),
            });
            followed.adopted = true;
            partly_served = !job.is_wholly_served_by(q);
            let name = script::is_job_name(&q.name).then(|| q.name.clone());
            (q.id, latest.asked, name)
        }
        None => submit(slurm, job, &options, logs, &cancel, &mut followed, report).await?,
    };
    let (mut resubmissions, mut lengthenings) = (0, 0);
    loop {
        followed.jobs.push(current);
        let ended = wait(slurm, &mut queue, current, since, &mut cancel, report).await?;
        let exit = name
            .as_deref()
            .and_then(|name| read_exit_record(&script::exit_record_path(logs, name, current)));
        match state::verdict(ended.as_ref(), exit) {
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
            Verdict::TimedOut => {
                match options.longer_limit(options.time_limit.as_deref(), lengthenings) {
                    Ok(limit) => {
                        lengthenings += 1;
                        report(JobEvent::Lengthening {
                            id: current,
                            limit: limit.clone(),
                            retry: lengthenings,
                            retries: options.timeout_retries(),
                        });
                        options.time_limit = Some(limit.clone());
                        followed.time_limit = Some(limit);
                    }
                    Err(why_not) => {
                        followed.verdict = Verdict::TimedOut;
                        followed.not_lengthened = Some(why_not);
                        return Ok(followed);
                    }
                }
            }
            verdict => {
                followed.verdict = verdict;
                return Ok(followed);
            }
        }
        partly_served = false;
        (current, since, name) =
            submit(slurm, job, &options, logs, &cancel, &mut followed, report).await?;
    }
}

/// The exit status a job's script recorded at `path` ([`script::script`]),
/// when there is one.
fn read_exit_record(path: &Path) -> Option<i32> {
    let bytes = crate::regular_file::read_at_most(path, 32).ok()?;
    std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
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
fn serving<'q>(
    job: &JobRequest,
    active: impl Iterator<Item = &'q QueuedJob> + Clone,
) -> Option<&'q QueuedJob> {
    active
        .clone()
        .find(|q| job.is_wholly_served_by(q))
        .or_else(|| active.clone().find(|q| job.is_served_by(q)))
}

/// Submits `job` as the next attempt of its launch, its output to a log of
/// its own; nothing once interrupted. Returns its id, when it was
/// submitted (the poll's answers asked after hold it) and its name.
async fn submit(
    slurm: &Slurm,
    job: &JobRequest,
    options: &SlurmOptions,
    logs: &Path,
    cancel: &watch::Receiver<bool>,
    followed: &mut Followed,
    report: &mut dyn FnMut(JobEvent),
) -> Result<(u64, Instant, Option<String>), Error> {
    if *cancel.borrow() {
        return Err(Error::Interrupted { jobs: Vec::new() });
    }
    let args = script::sbatch_args(job, options, logs);
    let attempt = u32::try_from(followed.jobs.len()).map_or(u32::MAX, |n| n.saturating_add(1));
    let id = slurm
        .submit(&script::script(job, attempt, logs), &args)
        .await?;
    let submitted = Instant::now();
    followed
        .logs
        .push(script::log_path(logs, &job.launch_key, id));
    report(JobEvent::Submitted { id });
    Ok((id, submitted, Some(script::job_name(&job.launch_key))))
}

/// How long a cancellation waits for a controller that does not answer:
/// Ctrl-C ends the head soon whatever Slurm does.
const CANCEL_PATIENCE: Duration = Duration::from_secs(30);

/// Cancels job `id` on Ctrl-C or SIGTERM; the error says which.
async fn interrupt<T>(slurm: &Slurm, id: u64) -> Result<T, Error> {
    let slurm = Slurm {
        patience: slurm.patience.min(CANCEL_PATIENCE),
        ..slurm.clone()
    };
    slurm.cancel(&[id]).await?;
    Err(Error::Interrupted { jobs: vec![id] })
}

/// Waits until job `id` leaves the queue, from the poll's answers asked
/// after `since`, and returns the state it ended in (`None`: Slurm forgot
/// it already, `MinJobAge`); cancels it when `cancel` turns true.
async fn wait(
    slurm: &Slurm,
    queue: &mut Queue,
    id: u64,
    mut since: Instant,
    cancel: &mut watch::Receiver<bool>,
    report: &mut dyn FnMut(JobEvent),
) -> Result<Option<JobState>, Error> {
    let mut started = false;
    let mut reason: Option<String> = None;
    loop {
        let snapshot = tokio::select! {
            snapshot = queue.after(since) => snapshot,
            _ = cancel.wait_for(|c| *c) => return interrupt(slurm, id).await,
        };
        since = snapshot.asked;
        match snapshot.job(id) {
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
                    report(JobEvent::Started {
                        id,
                        node: q.nodes.clone(),
                    });
                }
            }
            // Ended as it was interrupted: the interruption, not a cause to resubmit for.
            Some(_) if *cancel.borrow() => return Err(Error::Interrupted { jobs: Vec::new() }),
            Some(ended) => return Ok(Some(ended.state.clone())),
            // Forgotten already (`MinJobAge`): its exit record, and the
            // store, say how it ended.
            None => return Ok(None),
        }
    }
}
