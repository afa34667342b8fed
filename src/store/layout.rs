//! Where things live in the store; every path derives from a key alone.

use std::path::{Path, PathBuf};

use crate::key::RunKey;

pub fn entries_dir(root: &Path) -> PathBuf {
    root.join("entries")
}

/// The shard an entry lives in: the key's first two characters.
pub fn shard(key: &RunKey) -> &str {
    &key.as_str()[..2]
}

pub fn entry_dir(root: &Path, key: &RunKey) -> PathBuf {
    entries_dir(root).join(shard(key)).join(key.as_str())
}

pub fn samples_dir(root: &Path, key: &RunKey) -> PathBuf {
    entry_dir(root, key).join("samples")
}

pub fn locks_dir(root: &Path) -> PathBuf {
    root.join("locks")
}

pub fn lock_path(root: &Path, key: &RunKey) -> PathBuf {
    locks_dir(root).join(format!("{key}.lock"))
}

/// Orders creating a process's temp dir before cleaning stale ones (not a key,
/// so it never names a key's lock).
pub fn tmp_lock_path(root: &Path) -> PathBuf {
    locks_dir(root).join("tmp.lock")
}

pub fn tmp_dir(root: &Path) -> PathBuf {
    root.join("tmp")
}

pub fn quarantine_dir(root: &Path) -> PathBuf {
    root.join("quarantine")
}

/// Where the damage found in `key`'s entry is kept.
pub fn quarantine_key_dir(root: &Path, key: &RunKey) -> PathBuf {
    quarantine_dir(root).join(key.as_str())
}

/// Sample directories are named `0001`, `0002`, ...
pub fn is_sample_id(name: &str) -> bool {
    name.len() == 4 && name.bytes().all(|b| b.is_ascii_digit())
}

pub fn sample_id(n: usize) -> String {
    format!("{n:04}")
}
