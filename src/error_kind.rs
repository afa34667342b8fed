//! What went wrong, as far as a script needs to tell it apart: the kind
//! each library error names (`Error::kind`). Only `cli` turns a kind into
//! an exit code (`src/exit_code.rs` lists the codes).

/// Whose fault a failure is, and so what a script does about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// What the user gave is wrong: an argument, the experiment, an
    /// input, a key, a location, a store that is not one.
    Usage,
    /// The machine, or what it reaches, failed: runs, the store's disk, a
    /// server, a cache or Slurm that does not answer or refuses.
    Environment,
    /// The lockfile is out of date where it may not be written (`--locked`).
    LockStale,
    /// SIGINT or SIGTERM stopped the command.
    Interrupted,
    /// A bug in perfpipe.
    Internal,
}
