//! Slurm's own commands, through `crate::external`: `sbatch --parsable`,
//! `squeue` about this user's jobs in every state Slurm remembers (one call
//! for all of a head's jobs: [`super::queue`]), `scancel`.
//! A controller that does not answer (restarted, failed over, overloaded)
//! is asked again, with backoff, for a bounded time. (effects)

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Error;
use super::state::{self, QueuedJob};
use crate::external;

/// A Slurm command that takes longer than this has a stuck controller.
const LIMIT: Duration = Duration::from_secs(60);

/// How long a controller that does not answer is waited for when nobody
/// says (`--slurm-patience`): a restart or a failover takes seconds to minutes.
pub const DEFAULT_PATIENCE: Duration = Duration::from_secs(300);

/// The waits between two tries of a command the controller did not answer:
/// doubling from the first to the longest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub first: Duration,
    pub longest: Duration,
    /// After this long without an answer, the command fails ([`Error::Unreachable`]).
    pub patience: Duration,
}

impl Backoff {
    fn with_patience(patience: Duration) -> Self {
        Self {
            first: Duration::from_secs(2),
            longest: Duration::from_secs(30),
            patience,
        }
    }
}

/// One wait for a controller that did not answer, as it begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outage {
    /// The command (`squeue`, `sbatch`…).
    pub command: &'static str,
    /// What it said (its error).
    pub error: String,
    /// How long until it is tried again.
    pub retry_in: Duration,
    /// How long until perfpipe gives up.
    pub gives_up_in: Duration,
}

/// Who hears of each [`Outage`] (the command line says so on stderr).
#[derive(Clone, Default)]
pub struct OutageNotice(Option<Arc<Listener>>);

type Listener = dyn Fn(&Outage) + Send + Sync;

impl OutageNotice {
    pub fn new(notice: impl Fn(&Outage) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(notice)))
    }

    fn tell(&self, outage: &Outage) {
        if let Some(notice) = &self.0 {
            notice(outage);
        }
    }
}

impl std::fmt::Debug for OutageNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "OutageNotice(..)"
        } else {
            "OutageNotice(none)"
        })
    }
}

/// The Slurm cluster of this machine's clients.
#[derive(Debug, Clone)]
pub struct Slurm {
    /// `SLURM_CONF` for every command; the environment's (or Slurm's
    /// default) when `None`.
    pub conf: Option<PathBuf>,
    /// How long a controller that does not answer is waited for before a
    /// command fails; the jobs stay queued, for the next `run` to adopt.
    pub patience: Duration,
    pub on_outage: OutageNotice,
}

impl Default for Slurm {
    fn default() -> Self {
        Self {
            conf: None,
            patience: DEFAULT_PATIENCE,
            on_outage: OutageNotice::default(),
        }
    }
}

/// Whether a command may be tried again after `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// Asks, or cancels: the same again is harmless whatever the first did.
    Idempotent,
    /// Submits: only when the controller was never reached, so that no
    /// job can be submitted twice (a submission whose answer was lost is
    /// in the queue, and the next `run` adopts it).
    Unreached,
}

impl Retry {
    fn allows(self, error: &Error) -> bool {
        let Error::Command(error) = error else {
            return false;
        };
        match (self, error) {
            (Self::Idempotent, external::Error::TimedOut { .. }) => true,
            (Self::Idempotent, external::Error::Failed { stderr, .. }) => {
                UNANSWERED.iter().any(|s| stderr.contains(s))
            }
            (Self::Unreached, external::Error::Failed { stderr, .. }) => stderr.contains(UNREACHED),
            _ => false,
        }
    }
}

/// What Slurm's clients print when the controller cannot be reached at all.
const UNREACHED: &str = "Unable to contact slurm controller";

/// What they print when the controller did not answer (slurm_strerror).
const UNANSWERED: &[&str] = &[
    UNREACHED,
    "Socket timed out on send/recv operation",
    "Zero Bytes were transmitted or received",
    "Slurm backup controller in standby mode",
    "Transport endpoint is not connected",
    "Connection refused",
];

/// Runs `attempt` until it succeeds, fails for a cause `retry` does not
/// allow, or `backoff.patience` passes without an answer; each wait is told
/// to `notice` before it begins.
async fn patiently<T, F, Fut>(
    command: &'static str,
    retry: Retry,
    backoff: Backoff,
    notice: &OutageNotice,
    mut attempt: F,
) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let started = tokio::time::Instant::now();
    let mut wait = backoff.first;
    loop {
        let error = match attempt().await {
            Err(e) if retry.allows(&e) => e,
            done => return done,
        };
        let left = backoff.patience.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(Error::Unreachable {
                command,
                waited: started.elapsed(),
                source: Box::new(error),
            });
        }
        let retry_in = wait.min(left);
        notice.tell(&Outage {
            command,
            error: error.to_string(),
            retry_in,
            gives_up_in: left,
        });
        tokio::time::sleep(retry_in).await;
        wait = (wait * 2).min(backoff.longest);
    }
}

impl Slurm {
    async fn read(
        &self,
        program: &'static str,
        args: &[&str],
        stdin: Option<&[u8]>,
        retry: Retry,
    ) -> Result<String, Error> {
        let conf: OsString = self.conf.clone().unwrap_or_default().into();
        let env: &[(&str, &std::ffi::OsStr)] = match &self.conf {
            Some(_) => &[("SLURM_CONF", &conf)],
            None => &[],
        };
        let extra = external::Extra { env, stdin };
        let backoff = Backoff::with_patience(self.patience);
        patiently(program, retry, backoff, &self.on_outage, || async {
            Ok(external::read_with(program, args, extra, LIMIT).await?)
        })
        .await
    }

    /// Submits the batch `script` (on sbatch's standard input; Slurm keeps
    /// it: `scontrol write batch_script ID`) with `args` (every option of
    /// the job, each one argument) and returns the job id.
    pub async fn submit(&self, script: &str, args: &[String]) -> Result<u64, Error> {
        let mut argv = vec!["--parsable"];
        argv.extend(args.iter().map(String::as_str));
        let out = self
            .read("sbatch", &argv, Some(script.as_bytes()), Retry::Unreached)
            .await?;
        // `ID` or `ID;CLUSTER`.
        let id = out.trim().split(';').next().unwrap_or("");
        id.parse().map_err(|_| Error::Unreadable {
            command: "sbatch --parsable",
            text: out.trim().to_owned(),
        })
    }

    /// This user's jobs Slurm queues, runs, or still remembers ended
    /// (until `MinJobAge`), with how they ended.
    pub async fn queued(&self) -> Result<Vec<QueuedJob>, Error> {
        let args = ["--me", "--states=all", "-h", "-o", state::SQUEUE_FORMAT];
        let out = self.read("squeue", &args, None, Retry::Idempotent).await?;
        Ok(state::parse_squeue(&out)?)
    }

    /// Cancels `ids` (jobs this perfpipe submitted or adopted).
    pub async fn cancel(&self, ids: &[u64]) -> Result<(), Error> {
        if ids.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
        let args: Vec<&str> = ids.iter().map(String::as_str).collect();
        self.read("scancel", &args, None, Retry::Idempotent).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A command that fails as `squeue` does without a controller.
    fn unreachable() -> Error {
        use std::os::unix::process::ExitStatusExt;
        Error::Command(external::Error::Failed {
            command: "squeue".into(),
            status: std::process::ExitStatus::from_raw(1 << 8),
            stderr: "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
                .into(),
        })
    }

    fn refused() -> Error {
        use std::os::unix::process::ExitStatusExt;
        Error::Command(external::Error::Failed {
            command: "sbatch".into(),
            status: std::process::ExitStatus::from_raw(1 << 8),
            stderr: "sbatch: error: invalid partition specified: nope".into(),
        })
    }

    const QUICK: Backoff = Backoff {
        first: Duration::from_millis(1),
        longest: Duration::from_millis(4),
        patience: Duration::from_secs(20),
    };

    /// Runs `patiently` on a command whose first `failures` tries fail with
    /// `error`; returns its result, how many tries it took and what was told.
    fn try_with(
        failures: usize,
        error: fn() -> Error,
        retry: Retry,
        backoff: Backoff,
    ) -> (Result<&'static str, Error>, usize, Vec<Outage>) {
        let told = Arc::new(Mutex::new(Vec::new()));
        let notice = OutageNotice::new({
            let told = Arc::clone(&told);
            move |o| told.lock().unwrap().push(o.clone())
        });
        let mut tries = 0;
        let io = crate::tokio_runtime::Io::new();
        let runtime = io.handle().unwrap();
        let result = runtime.block_on(patiently("squeue", retry, backoff, &notice, || {
            tries += 1;
            let outcome = if tries <= failures {
                Err(error())
            } else {
                Ok("answer")
            };
            async move { outcome }
        }));
        let told = told.lock().unwrap().clone();
        (result, tries, told)
    }

    #[test]
    fn a_controller_that_does_not_answer_is_asked_again_with_backoff_and_said_so() {
        let (result, tries, told) = try_with(5, unreachable, Retry::Idempotent, QUICK);
        assert_eq!(result.unwrap(), "answer");
        assert_eq!(tries, 6);
        assert_eq!(told.len(), 5);
        let waits: Vec<u128> = told.iter().map(|o| o.retry_in.as_millis()).collect();
        assert_eq!(waits, [1, 2, 4, 4, 4]);
        assert!(told[0].error.contains("Unable to contact slurm controller"));
        assert_eq!(told[0].command, "squeue");
    }

    #[test]
    fn after_its_patience_a_command_fails_as_unreachable() {
        let backoff = Backoff {
            patience: Duration::from_millis(30),
            ..QUICK
        };
        let (result, tries, told) = try_with(usize::MAX, unreachable, Retry::Idempotent, backoff);
        let Err(Error::Unreachable {
            command, waited, ..
        }) = result
        else {
            panic!("{result:?}");
        };
        assert_eq!(command, "squeue");
        assert!(waited >= Duration::from_millis(30), "{waited:?}");
        assert!(tries > 2 && told.len() == tries - 1, "{tries} {told:?}");
    }

    #[test]
    fn a_refusal_is_not_retried_nor_a_submission_the_controller_may_have_seen() {
        let (result, tries, told) = try_with(1, refused, Retry::Idempotent, QUICK);
        assert!(matches!(result, Err(Error::Command(_))), "{result:?}");
        assert_eq!((tries, told.len()), (1, 0));

        let timed_out = || {
            Error::Command(external::Error::TimedOut {
                command: "sbatch".into(),
                limit: LIMIT,
            })
        };
        let (result, tries, _) = try_with(1, timed_out, Retry::Unreached, QUICK);
        assert!(result.is_err());
        assert_eq!(tries, 1, "a submission that timed out may be queued");
        let (result, tries, _) = try_with(2, unreachable, Retry::Unreached, QUICK);
        assert_eq!((result.unwrap(), tries), ("answer", 3));
    }
}
