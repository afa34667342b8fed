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

pub mod bench;
pub mod cache;
pub mod diff;
pub mod elsewhere;
pub mod error;
pub mod explain;
pub mod fetch;
pub mod figures;
pub mod files;
pub mod import;
pub mod init;
pub mod load;
pub mod lock;
pub mod lockfile;
pub mod older;
pub mod plan;
pub mod realise;
pub mod rendered;
pub mod report;
pub mod run;
pub mod search;
pub mod store;
pub mod stored;
pub mod substitute;
pub mod verify;

pub use error::{Error, PageReport};
pub use load::{Loaded, Selection, load};
pub use lockfile::{LockMode, LockState};

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
