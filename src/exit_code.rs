//! Exit codes of every command (DESIGN.md); scripts rely on them. Only
//! `cli` picks one: a failure's by its `ErrorKind` (`cli::exit_code_of`).

/// Done.
pub const OK: u8 = 0;
/// Some runs failed (the failures are recorded in the store), or the
/// machine failed a run: the store cannot be read or written, no process or
/// port, Slurm cannot be asked or refuses a job.
pub const RUNS_FAILED: u8 = 1;
/// Usage, experiment-file or input error, or a `--store` that is not a directory.
pub const USAGE: u8 = 2;
/// Lockfile stale under `--locked`.
pub const LOCK_STALE: u8 = 3;
/// `verify` outside tolerance, `store verify` found damage, or `diff`
/// regression beyond the threshold.
pub const VERIFY_FAILED: u8 = 4;
/// Interrupted by SIGINT or SIGTERM (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = 130;
/// Standard output was closed before everything was printed (`| head`):
/// 128 + SIGPIPE, what a shell reports for a tool that SIGPIPE ended.
pub const PIPE_CLOSED: u8 = 141;
/// Internal error (a bug).
pub const INTERNAL: u8 = 101;
