//! The workspace every command works in: which runs of which experiment
//! (the selection), loaded against its lockfile; settling that lockfile;
//! which runtimes the store holds the experiment's results under.

/// What every command loads first.
pub mod load;
/// Reading, checking and writing the lockfile.
pub mod lockfile;
/// Which runtimes the store holds an experiment's results under.
pub mod stored_runtimes;
