//! Stat data of the files in entries, each path walked from its shard's
//! directory: what readers of many entries (`plan` and `report` of 10,000
//! runs: ~3 `stat`s a run) ask of the store. A `stat` of
//! `<store>/entries/ab/<key>/samples/0001/result.json` walks every
//! component of the path again (most of its cost, `perf` says); from an
//! open `entries/ab/` it walks four. One [`EntryStats`] lives for one
//! batch of reads: a shard created or removed since it was opened reads as
//! it was, as a batch that `stat`ed a moment earlier would have.

use std::ffi::CStr;
use std::io::ErrorKind;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::layout::{entries_dir, entry_dir, shard};
use crate::inputs::Stamp;
use crate::key::RunKey;

/// What one `stat` of a path under an entry found (of the path itself: a
/// link is not followed).
pub(super) struct Stat(libc::stat);

impl std::fmt::Debug for Stat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Stat").field(&self.stamp()).finish()
    }
}

impl Stat {
    /// The stamp the index of results compares: the same numbers as
    /// [`Stamp::of`] the path's `symlink_metadata`.
    pub fn stamp(&self) -> Stamp {
        let ns = |secs: i64, nsec: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsec);
        let s = &self.0;
        Stamp {
            size: s.st_size as u64,
            mtime_ns: ns(s.st_mtime, s.st_mtime_nsec),
            ctime_ns: ns(s.st_ctime, s.st_ctime_nsec),
            inode: s.st_ino,
            device: s.st_dev,
        }
    }

    pub fn is_dir(&self) -> bool {
        self.0.st_mode & libc::S_IFMT == libc::S_IFDIR
    }

    /// Hard links: a directory's count is 2 plus its subdirectories (on
    /// file systems that count them; others say 1).
    pub fn links(&self) -> u64 {
        self.0.st_nlink
    }
}

/// Opens each shard directory of a store's entries once, on first use.
pub(super) struct EntryStats {
    root: PathBuf,
    /// By the shard's two hex digits read as a number.
    shards: Vec<OnceLock<Shard>>,
}

/// A shard's directory as opened.
enum Shard {
    Open(OwnedFd),
    /// Not there: nothing under it is.
    Missing,
    /// Not opened (a link, say): its paths are `stat`ed whole, as before.
    ByPath,
}

impl EntryStats {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
            shards: (0..256).map(|_| OnceLock::new()).collect(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `stat` of the path `within` names in `key`'s entry, a component an
    /// item (none: the entry directory itself; `["samples", "0001",
    /// "result.json"]`). The caller checks what a component is: the path is
    /// walked as given.
    pub fn stat(&self, key: &RunKey, within: &[&str]) -> std::io::Result<Stat> {
        let number = u8::from_str_radix(shard(key), 16).expect("a key's shard is two hex digits");
        let opened = self.shards[usize::from(number)].get_or_init(|| self.open(key));
        match opened {
            Shard::Open(dir) => {
                let mut path = String::with_capacity(96);
                path.push_str(key.as_str());
                for part in within {
                    path.push('/');
                    path.push_str(part);
                }
                path.push('\0');
                let path = CStr::from_bytes_with_nul(path.as_bytes())
                    .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e))?;
                stat_at(dir.as_raw_fd(), path)
            }
            Shard::Missing => Err(ErrorKind::NotFound.into()),
            Shard::ByPath => {
                let mut path = entry_dir(&self.root, key);
                path.extend(within);
                let c = std::ffi::CString::new(path.into_os_string().into_encoded_bytes())
                    .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e))?;
                stat_at(libc::AT_FDCWD, &c)
            }
        }
    }

    fn open(&self, key: &RunKey) -> Shard {
        use std::os::unix::fs::OpenOptionsExt;
        let path = entries_dir(&self.root).join(shard(key));
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(path);
        match opened {
            Ok(file) => Shard::Open(file.into()),
            Err(e) if e.kind() == ErrorKind::NotFound => Shard::Missing,
            Err(_) => Shard::ByPath,
        }
    }
}

/// `fstatat(dir, path, AT_SYMLINK_NOFOLLOW)`: `path` from the directory
/// `dir` (an open one, or `AT_FDCWD`).
fn stat_at(dir: RawFd, path: &CStr) -> std::io::Result<Stat> {
    let mut out = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `dir` is an open descriptor or AT_FDCWD, `path` is
    // NUL-terminated, and `out` is written whole by a call that returns 0.
    let rc = unsafe {
        libc::fstatat(
            dir,
            path.as_ptr(),
            out.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fstatat returned 0, so it filled `out`.
    Ok(Stat(unsafe { out.assume_init() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::{commit, store};

    #[test]
    fn a_stamp_taken_from_the_shard_is_the_one_of_the_whole_path() {
        let (_root, store) = store();
        let (key, _) = commit(&store, r#"{"s":1}"#);
        let stats = EntryStats::new(store.root());
        let entry = entry_dir(store.root(), &key);
        let paths: [&[&str]; 4] = [
            &[],
            &["samples"],
            &["inputs.json"],
            &["samples", "0001", "result.json"],
        ];
        for within in paths {
            let mut path = entry.clone();
            path.extend(within);
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let stat = stats.stat(&key, within).unwrap();
            assert_eq!(stat.stamp(), Stamp::of(&meta), "{within:?}");
            assert_eq!(stat.is_dir(), meta.is_dir(), "{within:?}");
        }
        let missing = stats.stat(&key, &["samples", "0002"]).unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        let other = RunKey::of_canonical("{}");
        let in_missing_shard = EntryStats::new(&store.root().join("nowhere"));
        assert_eq!(
            in_missing_shard.stat(&other, &[]).unwrap_err().kind(),
            ErrorKind::NotFound
        );
    }
}
