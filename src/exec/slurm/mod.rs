//! The Slurm executor: one Slurm job per engine launch, running `perfpipe
//! realise` on the launch's material, its results reaching the head through
//! a store both see. Driven through Slurm's own commands, never a scheduler
//! of perfpipe's own; the store, not Slurm, says what was measured.
//!
//! Pure: [`options`] (`[executor.slurm]`, the command line), [`script`] (the
//! batch script, its name and comment), [`state`] (`squeue`/`scontrol`, and
//! which endings are Slurm's own, to resubmit). Effects: [`client`] (the
//! commands), [`mod@follow`] (adopt or submit, follow, resubmit, cancel).
//!
//! [`mod@launches`] runs a study's launches as jobs of `perfpipe realise`;
//! `run --executor slurm` calls it (`ops::run`).

pub mod client;
pub mod follow;
pub mod launches;
pub mod options;
pub mod script;
pub mod state;

pub use client::{Outage, OutageNotice, Slurm};
pub use follow::{Followed, JobEvent, follow};
pub use launches::{SlurmExec, execute};
pub use options::{ContainerMode, SlurmOptions};
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
            Self::Options(_) => ErrorKind::Usage,
            Self::Interrupted { .. } => ErrorKind::Interrupted,
            Self::Command(_)
            | Self::Unreachable { .. }
            | Self::Unreadable { .. }
            | Self::Parse(_)
            | Self::Logs(_) => ErrorKind::Environment,
        }
    }
}

fn join(ids: &[u64]) -> String {
    ids.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
