//! The one poll of a head: one `squeue` per poll interval about every job
//! of this user, in every state Slurm still remembers (`-t all`), whatever
//! the number of launches followed; each launch reads its job in the
//! latest answer instead of asking Slurm itself. A job gone even from that
//! answer was forgotten (`MinJobAge`): the store says what it measured.
//! (effects)

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::Error;
use super::client::Slurm;
use super::state::QueuedJob;

/// What one `squeue` said, and when it was asked.
#[derive(Debug)]
pub struct Snapshot {
    /// When the `squeue` began: every job submitted before is in it.
    pub asked: Instant,
    pub jobs: Vec<QueuedJob>,
}

impl Snapshot {
    pub fn job(&self, id: u64) -> Option<&QueuedJob> {
        self.jobs.iter().find(|q| q.id == id)
    }

    /// The jobs still queued or running (not those Slurm remembers ended).
    pub fn active(&self) -> impl Iterator<Item = &QueuedJob> + Clone {
        self.jobs.iter().filter(|q| q.state.is_active())
    }
}

/// The answers of the poll, for the launches that follow their jobs in them.
#[derive(Debug, Clone)]
pub struct Queue {
    answers: watch::Receiver<Arc<Snapshot>>,
}

impl Queue {
    /// Asks once, and returns the queue with that answer and the poll that
    /// asks again every `poll` until it fails (for a controller that did
    /// not answer for the whole patience: its error). The poll runs beside
    /// the launches, and ends with them.
    pub async fn watch(
        slurm: &Slurm,
        poll: Duration,
    ) -> Result<(Self, impl std::future::Future<Output = Error> + use<>), Error> {
        let first = ask(slurm).await?;
        let (tell, answers) = watch::channel(Arc::new(first));
        let slurm = slurm.clone();
        let polling = async move {
            loop {
                // After the previous answer: never two asks within `poll`.
                tokio::time::sleep(poll).await;
                match ask(&slurm).await {
                    Ok(snapshot) => {
                        tell.send_replace(Arc::new(snapshot));
                    }
                    Err(e) => return e,
                }
            }
        };
        Ok((Self { answers }, polling))
    }

    /// The latest answer.
    pub fn latest(&self) -> Arc<Snapshot> {
        Arc::clone(&self.answers.borrow())
    }

    /// The first answer asked after `since` (an answer that includes a job
    /// submitted at `since`, or the next after one already read).
    pub async fn after(&mut self, since: Instant) -> Arc<Snapshot> {
        match self.answers.wait_for(|s| s.asked > since).await {
            Ok(snapshot) => Arc::clone(&snapshot),
            // The poll ended with an error, which its caller returns.
            Err(_) => std::future::pending().await,
        }
    }
}

async fn ask(slurm: &Slurm) -> Result<Snapshot, Error> {
    let asked = Instant::now();
    Ok(Snapshot {
        asked,
        jobs: slurm.queued().await?,
    })
}
