//! Moving damage out of an entry before a commit, under the key's lock: it is
//! kept for inspection in `quarantine/<key>/<n>-<what>`, where nothing reads
//! it, and the entry holds only sound samples again. Each move is one rename,
//! so a kill leaves the damage either in the entry (still ignored) or moved.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::check::{check_inputs, inspect_samples};
use super::layout::{entry_dir, quarantine_dir, quarantine_key_dir};
use super::write::sync_dir;
use super::{Error, KeyLock, Store};
use crate::key::RunKey;

impl Store {
    /// Moves what is damaged in `key`'s entry to quarantine: the whole entry
    /// when its `inputs.json` is not the key's (nothing in it can be trusted
    /// to be that key's), else each damaged sample. Returns where each went.
    pub(super) fn quarantine_damage(
        &self,
        key: &RunKey,
        _lock: &KeyLock,
    ) -> Result<Vec<PathBuf>, Error> {
        let entry = entry_dir(&self.root, key);
        match fs_err::symlink_metadata(&entry) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        }
        if check_inputs(&entry, key).is_some() {
            return Ok(vec![self.quarantine(key, &entry, "entry")?]);
        }
        let mut moved = Vec::new();
        for sample in inspect_samples(&entry, key)? {
            if sample.state.is_err() {
                let what = format!("sample-{}", sample.name);
                moved.push(self.quarantine(key, &sample.path, &what)?);
            }
        }
        Ok(moved)
    }

    /// Renames `from` to `quarantine/<key>/<n>-<what>`, `n` one more than any
    /// there (the caller holds the key's lock).
    fn quarantine(&self, key: &RunKey, from: &Path, what: &str) -> Result<PathBuf, Error> {
        let dir = quarantine_key_dir(&self.root, key);
        super::root::refuse_link(&self.root, &quarantine_dir(&self.root))?;
        super::root::refuse_link(&self.root, &dir)?;
        fs_err::create_dir_all(&dir)?;
        let n = fs_err::read_dir(&dir)?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|name| name.split('-').next()?.parse::<usize>().ok())
            .max()
            .unwrap_or(0)
            + 1;
        let to = dir.join(format!("{n}-{what}"));
        fs_err::rename(from, &to)?;
        sync_dir(from.parent().expect("entries have parents"))?;
        sync_dir(&dir)?;
        sync_dir(&quarantine_dir(&self.root))?;
        Ok(to)
    }

    /// Every item in `quarantine/`, as `quarantine/<key>/<n>-<what>` (or the
    /// top-level item, when it is not a key's directory).
    pub fn quarantined(&self) -> Result<Vec<PathBuf>, Error> {
        let mut out = Vec::new();
        let top = match fs_err::read_dir(quarantine_dir(&self.root)) {
            Ok(top) => top,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e.into()),
        };
        for item in top {
            let item = item?;
            let is_key = item.file_name().to_str().and_then(RunKey::parse).is_some();
            if is_key && item.file_type()?.is_dir() {
                for inner in fs_err::read_dir(item.path())? {
                    out.push(inner?.path());
                }
            } else {
                out.push(item.path());
            }
        }
        out.sort();
        Ok(out)
    }
}
