//! Exit codes of every command (DESIGN.md); scripts rely on them.

/// Done.
pub const OK: u8 = 0;
/// Some runs failed; the failures are recorded in the store.
pub const RUNS_FAILED: u8 = 1;
/// Usage or experiment-file error.
pub const USAGE: u8 = 2;
/// Lockfile stale under `--locked`.
pub const LOCK_STALE: u8 = 3;
/// `verify` outside tolerance, `store verify` found damage, or `diff`
/// regression beyond the threshold.
pub const VERIFY_FAILED: u8 = 4;
/// Interrupted by SIGINT or SIGTERM (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = 130;
/// Internal error (a bug).
pub const INTERNAL: u8 = 101;
