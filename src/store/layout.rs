//! Where things live in the store; every path derives from a key alone.

use std::path::{Path, PathBuf};

use crate::key::RunKey;

pub fn entry_dir(root: &Path, key: &RunKey) -> PathBuf {
    root.join("entries")
        .join(&key.as_str()[..2])
        .join(key.as_str())
}

pub fn samples_dir(root: &Path, key: &RunKey) -> PathBuf {
    entry_dir(root, key).join("samples")
}

pub fn lock_path(root: &Path, key: &RunKey) -> PathBuf {
    root.join("locks").join(format!("{key}.lock"))
}

pub fn tmp_dir(root: &Path) -> PathBuf {
    root.join("tmp")
}

/// Sample directories are named `0001`, `0002`, ...
pub fn is_sample_id(name: &str) -> bool {
    name.len() == 4 && name.bytes().all(|b| b.is_ascii_digit())
}

pub fn sample_id(n: usize) -> String {
    format!("{n:04}")
}
