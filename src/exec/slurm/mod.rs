//! The Slurm executor: one Slurm job per engine launch, running `perfpipe
//! realise` on the launch's material, its results reaching the head through
//! a store both see. Driven through Slurm's own commands, never a scheduler
//! of perfpipe's own; the store, not Slurm, says what was measured.
//!
//! Pure: [`options`] (`[executor.slurm]`, the command line), [`script`] (the
//! batch script, its name and comment), [`pyxis`] (a step in the engine's image), [`state`] (`squeue`, and which
//! endings are Slurm's own, to resubmit). Effects: [`client`] (the
//! commands), [`queue`] (one `squeue` per poll for all of a head's jobs),
//! [`mod@follow`] (adopt or submit, follow, resubmit, cancel).
//!
//! [`mod@launches`] runs a study's launches as jobs of `perfpipe realise`;
//! `run --executor slurm` calls it (`ops::run`).

pub mod client;
pub mod follow;
pub mod launches;
pub mod options;
pub mod pyxis;
pub mod queue;
pub mod script;
pub mod state;

pub use client::{Outage, OutageNotice, Slurm};
pub use follow::{Followed, JobEvent, follow, follow_in};
pub use launches::{SlurmExec, execute};
pub use options::{ContainerMode, Placement, Share, SlurmOptions};
pub use script::JobRequest;
pub use state::{JobState, Verdict};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Command(#[from] crate::external::Error),
    #[error("cannot read what `{command}` printed: `{text}`")]
    Unreadable { command: &'static str, text: String },
    #[error(transparent)]
    Parse(#[from] state::ParseError),
    #[error(transparent)]
    Options(#[from] options::BadOption),
    /// A launch perfpipe cannot place as `[executor.slurm]` asks.
    #[error(transparent)]
    Unplaceable(#[from] options::Unplaceable),
    /// The controller did not answer for the whole patience: the jobs stay
    /// queued, for the next `run` to adopt.
    #[error(
        "Slurm's controller did not answer `{command}` for {} s; the jobs stay queued or running, and the next `perfpipe run` adopts them",
        .waited.as_secs()
    )]
    Unreachable {
        command: &'static str,
        waited: std::time::Duration,
        #[source]
        source: Box<Error>,
    },
    #[error("cannot create the directory of the Slurm jobs' logs")]
    Logs(#[source] std::io::Error),
    #[error("interrupted; Slurm job(s) {} cancelled", join(.jobs))]
    Interrupted { jobs: Vec<u64> },
}

impl Error {
    /// Whose fault a run that ends with this error is: a value Slurm
    /// would not take is the user's; a Slurm that cannot be asked or
    /// refuses is the environment's, never an internal error.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            Self::Options(_) | Self::Unplaceable(_) => ErrorKind::Usage,
            Self::Interrupted { .. } => ErrorKind::Interrupted,
            Self::Command(_)
            | Self::Unreachable { .. }
            | Self::Unreadable { .. }
            | Self::Parse(_)
            | Self::Logs(_) => ErrorKind::Environment,
        }
    }
}

impl Error {
    /// What the user can do, for an error of theirs that has a remedy.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Unplaceable(e) => Some(e.hint()),
            _ => None,
        }
    }
}

fn join(ids: &[u64]) -> String {
    ids.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
