//! The workflow of each command, as cargo keeps its operations in `ops/`:
//! loading an experiment against its lockfile, settling the lockfile,
//! fetching, planning, executing and writing reports. Each operation takes
//! typed options and a [`Shell`] for what it says along the way, and returns
//! data; `cli` keeps the arguments, the printing of results and exit codes.

/// Says a line through a [`Shell`]: `say!(shell, "format", args…)`.
macro_rules! say {
    ($shell:expr, $($arg:tt)*) => {
        $shell.say(&format!($($arg)*))
    };
}

// One operation per command.
pub mod bench;
pub mod cache;
pub mod diff;
pub mod explain;
pub mod fetch;
pub mod import;
pub mod init;
pub mod lock;
pub mod plan;
pub mod realise;
/// `report`, with the figures it draws and what it loads from the store.
pub mod report;
/// `run`, with its mode for an older lockfile.
pub mod run;
/// `store gc`, `store verify`, `store path`.
pub mod store;
pub mod verify;

// What the operations share.
pub mod error;
/// The searches of the largest load within an SLO (not a command).
pub mod slo_search;
/// Substituting missing runs from trusted caches (`run`, `plan`).
pub mod substitute;
/// Writing the files the user asked for (reports, lockfiles), whole.
pub mod user_files;
/// The selection, the lockfile, which runtimes hold results.
pub mod workspace;

pub use error::{Error, PageReport};
pub use workspace::load::{Loaded, Selection, load};
pub use workspace::lockfile::{LockMode, LockState};

/// Where an operation says what it does, warns, and notes: the user's
/// terminal (stderr) under the CLI, a log elsewhere.
pub trait Shell {
    /// One line (or several, joined by newlines) for the user.
    fn say(&self, line: &str);
}

/// A [`Shell`] that writes to standard error.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stderr;

impl Shell for Stderr {
    fn say(&self, line: &str) {
        eoutln!("{line}");
    }
}
