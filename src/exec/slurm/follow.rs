//! One launch through Slurm: adopt its job when one is already queued or
//! running (a killed head's), else submit one; follow it until it leaves
//! the queue; resubmit it, a bounded number of times, when Slurm ended it
//! for a cause of its own; cancel it on Ctrl-C or SIGTERM. (effects)

use std::path::Path;
use std::time::Duration;

use tokio::sync::watch;

use super::Error;
use super::client::Slurm;
use super::options::SlurmOptions;
use super::script::{self, JobRequest};
use super::state::{self, JobState, Verdict};

/// What a launch's job (or jobs) came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Followed {
    /// Every job id, in order: resubmissions after the first.
    pub jobs: Vec<u64>,
    /// Whether the first was a queued or running job adopted from an earlier head.
    pub adopted: bool,
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
    Resubmitting {
        id: u64,
        why: String,
    },
    /// The launch's last job left the queue; `measured`: the store holds a
    /// success of every run of the launch. (Sent by [`super::execute`].)
    Ended {
        id: u64,
        measured: bool,
    },
}

/// Runs `job` through Slurm to its end. `poll` is how often `squeue` is asked.
pub async fn follow(
    slurm: &Slurm,
    job: &JobRequest,
    options: &SlurmOptions,
    log: &Path,
    poll: Duration,
    mut cancel: watch::Receiver<bool>,
    report: &mut dyn FnMut(JobEvent),
) -> Result<Followed, Error> {
    let mut jobs = Vec::new();
    let adopted = slurm
        .queued()
        .await?
        .into_iter()
        .find(|q| job.is_queued_as(q));
    let was_adopted = adopted.is_some();
    let mut current = match adopted {
        Some(q) => {
            report(JobEvent::Adopted {
                id: q.id,
                state: q.state.clone(),
            });
            q.id
        }
        // Interrupted before its turn: nothing of it is in the queue, nothing is submitted.
        None if *cancel.borrow() => return Err(Error::Interrupted { jobs: Vec::new() }),
        None => submit(slurm, job, options, log, report).await?,
    };
    loop {
        jobs.push(current);
        let verdict = wait(slurm, current, poll, &mut cancel, report).await?;
        match verdict {
            Verdict::Transient { .. } if *cancel.borrow() => {
                return Err(Error::Interrupted { jobs: Vec::new() });
            }
            Verdict::Transient { ref why, .. } if jobs.len() as u32 <= options.retries() => {
                report(JobEvent::Resubmitting {
                    id: current,
                    why: why.clone(),
                });
                current = submit(slurm, job, options, log, report).await?;
            }
            verdict => {
                return Ok(Followed {
                    jobs,
                    adopted: was_adopted,
                    verdict,
                });
            }
        }
    }
}

async fn submit(
    slurm: &Slurm,
    job: &JobRequest,
    options: &SlurmOptions,
    log: &Path,
    report: &mut dyn FnMut(JobEvent),
) -> Result<u64, Error> {
    let text = script::script(job, options, log);
    let id = slurm.submit(&text, &options.sbatch_args).await?;
    report(JobEvent::Submitted { id });
    Ok(id)
}

/// Waits until job `id` leaves the queue and judges how it ended; cancels
/// it when `cancel` turns true.
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
        let queued = slurm.queued().await?.into_iter().find(|q| q.id == id);
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
            _ => match slurm.shown(id).await? {
                Some(shown) if shown.state.is_active() => {}
                Some(shown) => return Ok(state::verdict(&shown.state, shown.exit)),
                // Forgotten already (`MinJobAge`): the store says what it measured.
                None => return Ok(Verdict::Ended),
            },
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = cancel.wait_for(|c| *c) => {
                slurm.cancel(&[id]).await?;
                return Err(Error::Interrupted { jobs: vec![id] });
            }
        }
    }
}
