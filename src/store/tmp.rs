//! Temp dirs of one process: each perfpipe writes its samples being measured,
//! engine logs and entries being created under `tmp/proc-<pid>-<random>/`,
//! an [`OwnedDir`]; the directory of a process that died (kill -9, power
//! loss) is removed. This works with any number of perfpipe processes on one
//! store. `locks/tmp.lock` is the directories' `order` lock.
//!
//! Only what is provably perfpipe's goes: a real directory (not a link)
//! named `proc-<pid>-<random>` that holds its `owner.lock`, or is empty (a
//! process killed between making it and locking it). Anything else under
//! `tmp/` was put there by someone else and is never listed or touched.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::layout::{tmp_dir, tmp_lock_path};
use super::{Error, Store};
use crate::filelock::{self, OwnedDir, Owner};

const PREFIX: &str = "proc-";

/// This process's directory under `tmp/`, removed when the last
/// [`Store`] clone (or pending sample) using it is dropped.
#[derive(Debug)]
pub(super) struct ProcessDir {
    dir: OwnedDir,
    /// Names what `gc` moves here before deleting it.
    moved: AtomicUsize,
}

/// A temp dir whose process is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleTmp {
    pub path: PathBuf,
    pub bytes: u64,
}

impl ProcessDir {
    fn create(root: &Path) -> Result<Self, Error> {
        Ok(Self {
            dir: OwnedDir::create(&tmp_dir(root), &tmp_lock_path(root), PREFIX)?,
            moved: AtomicUsize::new(0),
        })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A fresh path in this directory, for something to be deleted.
    pub fn doomed(&self) -> PathBuf {
        let n = self.moved.fetch_add(1, Ordering::Relaxed);
        self.dir.path().join(format!("removing-{n}"))
    }
}

impl Store {
    /// This process's temp dir, created on first use.
    pub(super) fn process_dir(&self) -> Result<Arc<ProcessDir>, Error> {
        let mut slot = self.process.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dir) = slot.as_ref() {
            return Ok(dir.clone());
        }
        self.writable()?;
        let dir = Arc::new(ProcessDir::create(&self.root)?);
        *slot = Some(dir.clone());
        Ok(dir)
    }

    /// The temp dirs of processes that are gone: the process directories
    /// under `tmp/` whose owner is not alive (nothing else there is
    /// perfpipe's). With `remove`, they are deleted too (each while holding
    /// its lock, so two cleaners never race).
    pub fn stale_tmp(&self, remove: bool) -> Result<Vec<StaleTmp>, Error> {
        // A `tmp` that is a link is refused, never listed through.
        super::root::check_layout_dirs(&self.root)?;
        let tmp = tmp_dir(&self.root);
        if !tmp.is_dir() {
            return Ok(Vec::new());
        }
        let ours = self
            .process
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|d| d.path().to_owned());
        // Only to remove: looking is harmless, and works on a read-only store.
        let order = if remove {
            self.writable()?;
            let order = crate::filelock::open(&tmp_lock_path(&self.root))?;
            order.lock()?;
            Some(order)
        } else {
            None
        };
        let children = fs_err::read_dir(&tmp)?;
        let mut stale = Vec::new();
        for child in children {
            let path = child?.path();
            if Some(&path) == ours.as_ref() {
                continue;
            }
            if let Some(claim) = claim_if_dead(&path)? {
                stale.push((path, claim));
            }
        }
        drop(order);
        let mut out = Vec::new();
        for (path, claim) in stale {
            let bytes = disk_usage(&path);
            if remove {
                match claim {
                    // Its owner's lock file proves it is a process directory.
                    Some(_lock) => filelock::remove_owned(&path)?,
                    // Only ever an empty one, so nothing but it is removed.
                    None => remove_empty_dir(&path)?,
                }
            }
            out.push(StaleTmp { path, bytes });
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }
}

/// `Some` (holding the dead owner's lock) when `path` is a process
/// directory nothing alive owns; `Some(None)` for one that is empty (its
/// process died before locking it). `None` for a live one and for anything
/// perfpipe cannot prove it made.
fn claim_if_dead(path: &Path) -> Result<Option<Option<std::fs::File>>, Error> {
    let is_own_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(is_process_dir_name);
    // Not followed: a link is never perfpipe's.
    let is_dir = fs_err::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    if !is_own_name || !is_dir {
        return Ok(None);
    }
    Ok(match filelock::owner(path)? {
        Owner::Alive => None,
        Owner::Dead(Some(lock)) => Some(Some(lock)),
        Owner::Dead(None) => is_empty_dir(path).then_some(None),
    })
}

/// `proc-<pid>-<random>`, as [`OwnedDir::create`] names it.
fn is_process_dir_name(name: &str) -> bool {
    let Some((pid, random)) = name
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.split_once('-'))
    else {
        return false;
    };
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && !random.is_empty()
        && random.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut children| children.next().is_none())
}

/// Removes `path` only if it is an empty directory (`rmdir` cannot remove
/// anything else); one that is gone or was filled meanwhile is left.
fn remove_empty_dir(path: &Path) -> Result<(), Error> {
    match fs_err::remove_dir(path) {
        Err(e) if !matches!(e.kind(), ErrorKind::NotFound | ErrorKind::DirectoryNotEmpty) => {
            Err(e.into())
        }
        _ => Ok(()),
    }
}

/// Deletes a file or a directory tree; one that is already gone is fine.
pub(super) fn remove_all(path: &Path) -> Result<(), Error> {
    let result = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs_err::remove_dir_all(path),
        Ok(_) => fs_err::remove_file(path),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Bytes of the files under `path` (symlinks not followed); what cannot be
/// read counts nothing.
pub fn disk_usage(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .map(|c| disk_usage(&c.path()))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::{overwrite, relative, store};

    /// A process directory as a perfpipe killed mid-run leaves it: its lock
    /// file there, and nobody holding it.
    fn dead_process_dir(store: &Store, name: &str) -> PathBuf {
        let dir = tmp_dir(store.root()).join(name);
        fs_err::create_dir_all(dir.join("sample-x/logs")).unwrap();
        crate::filelock::open(&dir.join("owner.lock")).unwrap();
        super::super::write::write_synced(&dir.join("sample-x/logs/engine.log"), b"loading")
            .unwrap();
        dir
    }

    #[test]
    fn only_the_temp_dirs_of_dead_processes_are_stale() {
        let (_root, store) = store();
        let alive = Store::new(store.root());
        let pending = alive.begin_sample().unwrap();
        let ours = store.begin_sample().unwrap();
        dead_process_dir(&store, "proc-1-dead");
        fs_err::create_dir_all(tmp_dir(store.root()).join("proc-2-unlocked")).unwrap();
        // Not provably perfpipe's: never listed, never touched.
        let tmp = tmp_dir(store.root());
        fs_err::create_dir_all(tmp.join("mydata/sub")).unwrap();
        overwrite(&tmp.join("mydata/sub/thesis.tex"), b"chapter 1");
        overwrite(&tmp.join("proc-4-file"), b"a file with perfpipe's name");
        fs_err::create_dir_all(tmp.join("proc-5-unlocked/work")).unwrap();
        fs_err::create_dir_all(tmp.join("proc-x-notapid")).unwrap();
        std::os::unix::fs::symlink(tmp.join("mydata"), tmp.join("proc-6-link")).unwrap();
        let foreign = [
            "mydata/sub/thesis.tex",
            "proc-4-file",
            "proc-5-unlocked/work",
            "proc-x-notapid",
            "proc-6-link",
        ];

        let listed = store.stale_tmp(false).unwrap();
        assert_eq!(
            relative(&store, listed.iter().map(|s| &s.path)),
            ["tmp/proc-1-dead", "tmp/proc-2-unlocked"]
        );
        assert_eq!(listed[0].bytes, "loading".len() as u64);
        assert!(listed.iter().all(|s| s.path.exists()), "only listed");

        let removed = store.stale_tmp(true).unwrap();
        assert_eq!(removed, listed);
        assert!(listed.iter().all(|s| !s.path.exists()));
        assert!(pending.logs_dir().is_dir(), "another live process's sample");
        assert!(ours.logs_dir().is_dir(), "our own sample");
        assert_eq!(store.stale_tmp(true).unwrap(), []);
        for name in foreign {
            assert!(fs_err::symlink_metadata(tmp.join(name)).is_ok(), "{name}");
        }
        assert_eq!(
            fs_err::read_to_string(tmp.join("mydata/sub/thesis.tex")).unwrap(),
            "chapter 1"
        );

        drop((pending, alive));
        assert_eq!(
            fs_err::read_dir(tmp_dir(store.root())).unwrap().count(),
            1 + foreign.len(),
            "a process's dir goes with its last user"
        );
    }

    #[test]
    fn a_dead_process_dir_is_claimed_by_one_cleaner_only() {
        let (_root, store) = store();
        let dir = dead_process_dir(&store, "proc-3-dead");
        let claim = claim_if_dead(&dir).unwrap();
        assert!(matches!(claim, Some(Some(_))), "dead, and its lock is ours");
        assert!(
            claim_if_dead(&dir).unwrap().is_none(),
            "while one cleaner removes it, it looks alive to another"
        );
        drop(claim);
        assert!(claim_if_dead(&dir).unwrap().is_some());
    }
}
