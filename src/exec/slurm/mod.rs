//! The Slurm executor: one Slurm job per engine launch, running `perfpipe
//! realise` on the launch's material, its results reaching the head through
//! a store both see. Driven through Slurm's own commands, never a scheduler
//! of perfpipe's own; the store, not Slurm, says what was measured.
//!
//! Pure: [`options`] (`[executor.slurm]`, the command line), [`script`] (the
//! batch script, its name and comment), [`state`] (`squeue`/`scontrol`, and
//! which endings are Slurm's own, to resubmit). Effects: [`client`] (the
//! commands), [`follow`] (adopt or submit, follow, resubmit, cancel).
//!
//! Not wired into `run` yet: `run --executor slurm` waits for `perfpipe
//! realise` (docs/slurm.md).

pub mod client;
pub mod follow;
pub mod options;
pub mod script;
pub mod state;

pub use client::Slurm;
pub use follow::{Followed, JobEvent, follow};
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
    #[error("interrupted; Slurm job(s) {} cancelled", join(.jobs))]
    Interrupted { jobs: Vec<u64> },
}

fn join(ids: &[u64]) -> String {
    ids.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
