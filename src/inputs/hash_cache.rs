//! What earlier commands learned of input files, as git's index keeps it: a
//! file's sha256 and the checks it passed, valid while its size, mtime and
//! ctime (in nanoseconds), inode and device are unchanged.
//!
//! The cache is `<store>/cache/inputs.json`, written only into a store
//! perfpipe marked (never creating one, never into another directory). It is not key material: a key
//! holds the sha256, and the cache only spares reading the file again. An
//! entry is trusted only when the file was last changed more than
//! [`GRANULARITY_NS`] before it was hashed; a file changed within the timestamp
//! granularity of its hashing could change again without its timestamps
//! changing (git's "racy clean"), so it is hashed again until an entry
//! recorded later is trusted. A cache that does not parse, or that another
//! perfpipe version wrote, is ignored and rewritten, never trusted.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The coarsest timestamp granularity of the file systems a dataset may be
/// on (FAT keeps 2 s); finer ones only make the window larger than needed.
pub const GRANULARITY_NS: i128 = 2_000_000_000;

/// What changes when a file's content may have: git's stat data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub inode: u64,
    pub device: u64,
}

impl Stamp {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        let ns = |secs: i64, nsec: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsec);
        Self {
            size: meta.len(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
            device: meta.dev(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Known {
    stamp: Stamp,
    /// When the file was stat'ed before it was read and hashed.
    hashed_at_ns: i128,
    sha256: String,
    /// The checks its content passed (see [`HashCache::passed`]).
    passed: BTreeSet<String>,
    /// Hashed by this command: each input is read once per command.
    #[serde(skip)]
    this_command: bool,
}

impl Known {
    /// Whether nothing could have changed the file since it was hashed
    /// without changing its stamp.
    fn settled(&self) -> bool {
        self.stamp.mtime_ns.max(self.stamp.ctime_ns) + GRANULARITY_NS < self.hashed_at_ns
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct OnDisk {
    /// The perfpipe that wrote it: another version's checks may differ.
    perfpipe: String,
    /// By absolute path.
    files: BTreeMap<PathBuf, Known>,
}

/// The cache as one command uses it.
#[derive(Debug, Default)]
pub struct HashCache {
    /// Where it is saved; `None`: this command's memory only.
    path: Option<PathBuf>,
    /// Whether what earlier commands recorded is believed (`lock` and
    /// `run --locked` hash every file again).
    trust_earlier: bool,
    files: BTreeMap<PathBuf, Known>,
    changed: bool,
}

impl HashCache {
    /// The cache kept at `path`, believed when `trust_earlier`.
    pub fn open(path: PathBuf, trust_earlier: bool) -> Self {
        let read = crate::regular_file::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<OnDisk>(&bytes).ok())
            .filter(|d| d.perfpipe == env!("CARGO_PKG_VERSION"));
        Self {
            changed: read.is_none(),
            files: read.map(|d| d.files).unwrap_or_default(),
            path: Some(path),
            trust_earlier,
        }
    }

    /// A cache of this command only (nothing read, nothing saved).
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// The sha256 of the file at `path` as `stamp` finds it, when recorded
    /// and trustworthy, with `check` among the checks its content passed.
    pub fn passed(&self, path: &Path, stamp: &Stamp, check: &str) -> Option<&str> {
        let known = self.files.get(&absolute(path))?;
        let believed = known.this_command || (self.trust_earlier && known.settled());
        (believed && known.stamp == *stamp && known.passed.contains(check))
            .then_some(known.sha256.as_str())
    }

    /// Records that the file at `path`, stat'ed as `stamp` at `hashed_at_ns`,
    /// hashes to `sha256` and passed `check`.
    pub fn record(
        &mut self,
        path: &Path,
        stamp: Stamp,
        hashed_at_ns: i128,
        sha256: &str,
        check: &str,
    ) {
        let path = absolute(path);
        let known = match self.files.remove(&path) {
            Some(mut known) if known.stamp == stamp && known.sha256 == sha256 => {
                known.hashed_at_ns = known.hashed_at_ns.max(hashed_at_ns);
                known.this_command = true;
                known
            }
            _ => Known {
                stamp,
                hashed_at_ns,
                sha256: sha256.to_owned(),
                passed: BTreeSet::new(),
                this_command: true,
            },
        };
        let mut known = known;
        known.passed.insert(check.to_owned());
        self.files.insert(path, known);
        self.changed = true;
    }

    /// Writes the cache when it changed, replacing it with one rename, into
    /// a store perfpipe marked (`is_store`, the store's own test, which the
    /// caller passes in: the store is built on these inputs, not below them):
    /// a command never creates a store for its cache (one refused before
    /// anything runs leaves no store behind), nor writes it into a directory
    /// that is not a store. A cache that cannot be written only costs the
    /// next command a hash.
    pub fn save(&self, is_store: impl Fn(&Path) -> bool) {
        let Some(path) = &self.path else { return };
        if !self.changed {
            return;
        }
        let Some(dir) = path.parent() else { return };
        if !dir.parent().is_some_and(is_store) {
            return;
        }
        let on_disk = OnDisk {
            perfpipe: env!("CARGO_PKG_VERSION").into(),
            files: self.files.clone(),
        };
        let Ok(json) = serde_json::to_vec(&on_disk) else {
            return;
        };
        // Not written (a read-only store): the next command hashes again.
        let _ = crate::atomic_write::AtomicWrite::new().write(path, &json);
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn stamp(mtime_ns: i128) -> Stamp {
        Stamp {
            size: 10,
            mtime_ns,
            ctime_ns: mtime_ns,
            inode: 7,
            device: 1,
        }
    }

    const T: i128 = 1_700_000_000_000_000_000;

    /// A directory perfpipe marked as its store (the cache is saved only
    /// into one).
    fn marked_store() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        crate::store::testing::mark(dir.path());
        dir
    }

    #[test]
    fn nothing_is_saved_into_a_directory_that_is_not_a_marked_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache/inputs.json");
        let mut cache = HashCache::open(path.clone(), true);
        cache.record(Path::new("data.json"), stamp(T), T, "abc", "check");
        cache.save(crate::store::is_marked);
        assert!(!dir.path().join("cache").exists());
    }

    /// Replaces the cache's bytes, as damage on disk would.
    fn damage(path: &Path, bytes: &[u8]) {
        fs_err::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
    }

    #[test]
    fn a_settled_entry_with_the_same_stamp_is_trusted_and_any_change_is_not() {
        let dir = marked_store();
        let path = dir.path().join("cache/inputs.json");
        let mut cache = HashCache::open(path.clone(), true);
        assert!(!dir.path().join("cache").exists(), "read only");
        cache.record(
            Path::new("data.json"),
            stamp(T),
            T + 3 * GRANULARITY_NS,
            "abc",
            "check",
        );
        cache.save(crate::store::is_marked);
        let cache = HashCache::open(path.clone(), true);
        assert_eq!(
            cache.passed(Path::new("data.json"), &stamp(T), "check"),
            Some("abc")
        );
        assert_eq!(
            cache.passed(Path::new("data.json"), &stamp(T), "other check"),
            None
        );
        for changed in [
            Stamp {
                size: 11,
                ..stamp(T)
            },
            Stamp {
                mtime_ns: T + 1,
                ..stamp(T)
            },
            Stamp {
                ctime_ns: T + 1,
                ..stamp(T)
            },
            Stamp {
                inode: 8,
                ..stamp(T)
            },
            Stamp {
                device: 2,
                ..stamp(T)
            },
        ] {
            assert_eq!(
                cache.passed(Path::new("data.json"), &changed, "check"),
                None,
                "{changed:?}"
            );
        }
        // `lock` and `run --locked` believe nothing recorded before them.
        let distrusting = HashCache::open(path, false);
        assert_eq!(
            distrusting.passed(Path::new("data.json"), &stamp(T), "check"),
            None
        );
    }

    /// Racy git: a file hashed within the timestamp granularity of its last
    /// change can change again, same size, without its stamp changing.
    #[test]
    fn a_file_changed_within_the_granularity_of_its_hashing_is_hashed_again() {
        let dir = marked_store();
        let path = dir.path().join("cache/inputs.json");
        let mut cache = HashCache::open(path.clone(), true);
        cache.record(
            Path::new("racy.json"),
            stamp(T),
            T + GRANULARITY_NS / 2,
            "old",
            "check",
        );
        let mut ctime_racy = stamp(T - 5 * GRANULARITY_NS);
        ctime_racy.ctime_ns = T;
        cache.record(
            Path::new("ctime.json"),
            ctime_racy.clone(),
            T + 1,
            "old",
            "check",
        );
        cache.save(crate::store::is_marked);
        let cache = HashCache::open(path.clone(), true);
        assert_eq!(
            cache.passed(Path::new("racy.json"), &stamp(T), "check"),
            None
        );
        assert_eq!(
            cache.passed(Path::new("ctime.json"), &ctime_racy, "check"),
            None
        );

        // Hashed again later, the same stamp is settled.
        let mut cache = cache;
        cache.record(
            Path::new("racy.json"),
            stamp(T),
            T + 3 * GRANULARITY_NS,
            "new",
            "check",
        );
        cache.save(crate::store::is_marked);
        let cache = HashCache::open(path, true);
        assert_eq!(
            cache.passed(Path::new("racy.json"), &stamp(T), "check"),
            Some("new")
        );
    }

    #[test]
    fn a_corrupt_or_foreign_cache_is_ignored_and_rewritten() {
        let dir = marked_store();
        let path = dir.path().join("cache/inputs.json");
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        let foreign = serde_json::json!({"perfpipe": "0.0.0-other", "files": {}}).to_string();
        for damaged in ["{\"perfpipe\": ", "[]", "\u{0}\u{1}", foreign.as_str()] {
            damage(&path, damaged.as_bytes());
            let mut cache = HashCache::open(path.clone(), true);
            assert!(cache.files.is_empty());
            assert_eq!(cache.passed(Path::new("x.json"), &stamp(T), "check"), None);
            cache.save(crate::store::is_marked);
            let rewritten: OnDisk = serde_json::from_slice(&fs_err::read(&path).unwrap()).unwrap();
            assert_eq!(rewritten.perfpipe, env!("CARGO_PKG_VERSION"));
            cache.record(
                Path::new("x.json"),
                stamp(T),
                T + 3 * GRANULARITY_NS,
                "abc",
                "check",
            );
            cache.save(crate::store::is_marked);
            assert_eq!(
                HashCache::open(path.clone(), true).passed(Path::new("x.json"), &stamp(T), "check"),
                Some("abc")
            );
        }
    }
}
