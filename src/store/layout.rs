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

/// The root of the store that `path`, a path in an entry
/// (`<root>/entries/<shard>/<key>/…`, the entry itself included), is in:
/// the entry is the lowest component named by a key, under its shard,
/// under `entries` (nothing inside an entry is named so).
pub fn root_of_entry_path(path: &Path) -> Option<&Path> {
    fn name(path: Option<&Path>) -> Option<&str> {
        path?.file_name()?.to_str()
    }
    let entry = path.ancestors().find(|dir| {
        let shard_dir = dir.parent();
        name(Some(dir))
            .and_then(RunKey::parse)
            .is_some_and(|key| name(shard_dir) == Some(shard(&key)))
            && name(shard_dir.and_then(Path::parent)) == Some("entries")
    })?;
    entry.ancestors().nth(3)
}

pub fn samples_dir(root: &Path, key: &RunKey) -> PathBuf {
    entry_dir(root, key).join("samples")
}

/// Launch material, by launch key: `drv/<launch key>.json`. The directory
/// keeps the name it had before the module was called `launch`: stores
/// written since then hold their material there, and renaming it would
/// strand it.
pub fn launches_dir(root: &Path) -> PathBuf {
    root.join("drv")
}

/// The content-addressed input area: `inputs/sha256/<hex>`.
pub fn inputs_dir(root: &Path) -> PathBuf {
    root.join("inputs").join("sha256")
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

/// The index of results (`store::results_index`): records, then payloads.
pub fn index_dir(root: &Path) -> PathBuf {
    root.join("index")
}

pub fn index_keys_path(root: &Path) -> PathBuf {
    index_dir(root).join("results.keys")
}

pub fn index_data_path(root: &Path) -> PathBuf {
    index_dir(root).join("results.data")
}

/// Orders appends to the index (not a key, so it never names a key's lock).
pub fn index_lock_path(root: &Path) -> PathBuf {
    locks_dir(root).join("index.lock")
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

/// Sample directories are named by their id, zero-padded to four digits:
/// `0001`, …, `9999`, `10000`, … up to `u32::MAX`, the same bound as
/// `--samples`. Any other name (`01`, `00010`, `+001`) is not a sample.
pub fn parse_sample_id(name: &str) -> Option<u32> {
    let n: u32 = name.parse().ok()?;
    (sample_id(n) == name).then_some(n)
}

pub fn is_sample_id(name: &str) -> bool {
    parse_sample_id(name).is_some()
}

pub fn sample_id(n: u32) -> String {
    format!("{n:04}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_of_a_path_in_an_entry_is_above_its_entries_dir() {
        let key = RunKey::of_canonical("{}");
        for root in ["store", "/a/b", "", "/x/entries/y"] {
            let root = Path::new(root);
            let entry = entry_dir(root, &key);
            for path in [
                entry.clone(),
                entry.join("inputs.json"),
                samples_dir(root, &key).join("0001/logs/engine.log"),
            ] {
                assert_eq!(root_of_entry_path(&path), Some(root), "{path:?}");
            }
        }
        assert_eq!(root_of_entry_path(Path::new("store/drv/x.json")), None);
        let wrong_shard = Path::new("store/entries/zz").join(key.as_str());
        assert_eq!(root_of_entry_path(&wrong_shard.join("inputs.json")), None);
    }

    #[test]
    fn sample_ids_are_canonical_decimals_of_any_width() {
        for (name, id) in [("0001", 1), ("9999", 9999), ("10000", 10_000)] {
            assert_eq!(parse_sample_id(name), Some(id));
            assert_eq!(sample_id(id), name);
        }
        assert_eq!(parse_sample_id("4294967295"), Some(u32::MAX));
        for stray in ["01", "00010", "+001", "4294967296", "0001.partial", ""] {
            assert_eq!(parse_sample_id(stray), None, "{stray}");
        }
    }
}
