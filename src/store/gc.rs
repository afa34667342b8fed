//! What `store gc` removes, and removing it: entries no root reaches that
//! are older than [`KEEP_YOUNGER_THAN`], damage (never used), quarantine. Each item is renamed into this process's temp
//! dir under its key's lock and deleted there, so a kill leaves it either
//! whole in place or in a dead process's temp dir, which the next run removes.

use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use super::check::{Damage, check_inputs, inspect_samples, is_damaged_sample, sample_dirs};
use super::layout::{entry_dir, is_sample_id, quarantine_dir};
use super::tmp::{disk_usage, remove_all};
use super::write::sync_dir;
use super::{Error, Store};
use crate::key::RunKey;

/// An unreached entry committed within this long is kept (unless `--all`):
/// its experiment may not be saved yet, or its lockfile not copied yet; as
/// git keeps unreachable objects for two weeks before pruning them. So is
/// launch material or an input written or asked for within this long: a
/// queued Slurm job may be about to read it.
pub const KEEP_YOUNGER_THAN: Duration = Duration::from_secs(7 * 24 * 3600);

/// Something `store gc` removes.
#[derive(Debug, Clone, PartialEq)]
pub struct Garbage {
    pub path: PathBuf,
    /// The key whose lock guards it (`None`: nothing perfpipe writes there).
    pub key: Option<RunKey>,
    pub kind: GarbageKind,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum GarbageKind {
    /// A sound entry that no root reaches, with its key material and when
    /// its last sample was committed (Unix seconds, from the files' times).
    Unreached {
        material: String,
        samples: usize,
        committed: u64,
    },
    /// A damaged entry or sample; never used.
    Damaged(Damage),
    /// A key's quarantined damage (`items` moved there by commits).
    Quarantined { items: usize },
    /// Launch material none of whose runs is kept, with when it was last
    /// written or asked for (Unix seconds).
    UnreachedLaunch {
        material: Box<crate::launch::LaunchMaterial>,
        written: u64,
    },
    /// An input no launch material that stays reads; `what` it is to the
    /// launches that name it (none: no launch names it).
    UnreadInput { what: Vec<String>, written: u64 },
}

/// What removing one item came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    Removed,
    /// Its key is locked by a running perfpipe; left alone.
    InUse,
    /// A commit changed it since it was listed (e.g. repaired it); left alone.
    Changed,
}

impl Garbage {
    /// An unreached entry committed less than [`KEEP_YOUNGER_THAN`] before
    /// `now` (Unix seconds): gc keeps it unless told to remove all.
    pub fn is_young(&self, now: u64) -> bool {
        match self.kind {
            GarbageKind::Unreached {
                committed: time, ..
            }
            | GarbageKind::UnreachedLaunch { written: time, .. }
            | GarbageKind::UnreadInput { written: time, .. } => {
                now.saturating_sub(time) < KEEP_YOUNGER_THAN.as_secs()
            }
            _ => false,
        }
    }
}

/// When an entry last changed: the latest modification time of its
/// directory and its samples (a commit renames a sample into `samples/`).
fn last_commit(entry: &Path, samples: &[(String, PathBuf)]) -> u64 {
    std::iter::once(entry.to_owned())
        .chain(std::iter::once(entry.join("samples")))
        .chain(samples.iter().map(|(_, path)| path.clone()))
        .filter_map(|path| fs_err::symlink_metadata(path).ok()?.modified().ok())
        .filter_map(|time| time.duration_since(UNIX_EPOCH).ok())
        .map(|since| since.as_secs())
        .max()
        .unwrap_or(0)
}

impl Store {
    /// Everything `store gc` removes when `reached` holds every key to keep:
    /// entries of other keys, damage in the kept ones, and quarantine. An
    /// unreached entry is listed with when it was committed
    /// ([`Garbage::is_young`] says whether gc keeps it anyway).
    pub fn garbage(&self, reached: &BTreeSet<RunKey>) -> Result<Vec<Garbage>, Error> {
        let mut out = Vec::new();
        for dir in self.entry_dirs()? {
            let item = |key: Option<RunKey>, path: PathBuf, kind| Garbage {
                bytes: disk_usage(&path),
                path,
                key,
                kind,
            };
            let Some(key) = dir.key else {
                let damage = dir.damage.expect("an entry dir without a key is damaged");
                out.push(item(None, dir.path, GarbageKind::Damaged(damage)));
                continue;
            };
            if let Some(damage) = check_inputs(&dir.path, &key) {
                out.push(item(Some(key), dir.path, GarbageKind::Damaged(damage)));
                continue;
            }
            let samples = sample_dirs(&dir.path)?;
            if !reached.contains(&key) {
                let material = super::files::read_to_string(&dir.path.join("inputs.json"))?;
                let committed = last_commit(&dir.path, &samples);
                let samples = samples.iter().filter(|(id, _)| is_sample_id(id)).count();
                let kind = GarbageKind::Unreached {
                    material,
                    samples,
                    committed,
                };
                out.push(item(Some(key), dir.path, kind));
                continue;
            }
            for sample in inspect_samples(&dir.path, &key)? {
                if let Err(damage) = sample.state {
                    out.push(item(
                        Some(key.clone()),
                        sample.path,
                        GarbageKind::Damaged(damage),
                    ));
                }
            }
        }
        out.extend(self.quarantine_garbage()?);
        Ok(out)
    }

    fn quarantine_garbage(&self) -> Result<Vec<Garbage>, Error> {
        let top = match fs_err::read_dir(quarantine_dir(&self.root)) {
            Ok(top) => top,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for item in top {
            let path = item?.path();
            let key = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(RunKey::parse);
            let items = fs_err::read_dir(&path).map_or(1, |inner| inner.count());
            out.push(Garbage {
                bytes: disk_usage(&path),
                path,
                key,
                kind: GarbageKind::Quarantined { items },
            });
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Removes the lock files of keys that have no entry (left by removed
    /// entries and by runs that never committed), each under its own lock;
    /// a waiting process then locks the new file (`lock` checks the name).
    /// How many were removed.
    pub fn remove_idle_locks(&self) -> Result<usize, Error> {
        let locks = match fs_err::read_dir(self.root.join("locks")) {
            Ok(locks) => locks,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e.into()),
        };
        let mut removed = 0;
        for item in locks {
            let path = item?.path();
            let Some(key) = path
                .file_name()
                .and_then(|n| n.to_str()?.strip_suffix(".lock"))
                .and_then(RunKey::parse)
            else {
                continue;
            };
            let Some(_lock) = self.try_lock(&key)? else {
                continue;
            };
            if fs_err::symlink_metadata(entry_dir(&self.root, &key)).is_err() {
                fs_err::remove_file(&path)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Removes one item that [`Store::garbage`] listed, under its key's lock
    /// (never waiting for it), if it is still what was listed.
    pub fn remove(&self, item: &Garbage) -> Result<Removal, Error> {
        // Nothing is renamed out of (or into) a layout directory that became
        // a link since the store was opened.
        super::root::check_layout_dirs(&self.root)?;
        let _lock = match &item.key {
            Some(key) => match self.try_lock(key)? {
                Some(lock) => Some(lock),
                None => return Ok(Removal::InUse),
            },
            None => None,
        };
        let still = match (&item.kind, &item.key) {
            (GarbageKind::Damaged(d), Some(key)) if d.spoils_entry() => {
                check_inputs(&item.path, key).is_some()
            }
            (GarbageKind::Damaged(Damage::NotASample), _) => true,
            (GarbageKind::Damaged(_), Some(key)) => is_damaged_sample(&item.path, key)?,
            _ => true,
        };
        if !still || fs_err::symlink_metadata(&item.path).is_err() {
            return Ok(Removal::Changed);
        }
        let doomed = self.process_dir()?.doomed();
        fs_err::rename(&item.path, &doomed)?;
        if let Some(parent) = item.path.parent() {
            sync_dir(parent)?;
        }
        remove_all(&doomed)?;
        Ok(Removal::Removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::layout::{entry_dir, lock_path, samples_dir, tmp_dir};
    use crate::store::testing::{commit, overwrite, relative, store};

    #[test]
    fn garbage_is_what_no_root_reaches_damage_and_quarantine() {
        let (_root, store) = store();
        let (kept, _) = commit(&store, "{}");
        commit(&store, "{}");
        let (gone, _) = commit(&store, "[]");
        let (spoiled, _) = commit(&store, "1");
        overwrite(
            &samples_dir(store.root(), &kept).join("0002/result.json"),
            b"",
        );
        overwrite(&entry_dir(store.root(), &spoiled).join("inputs.json"), b"2");
        let (repaired, _) = commit(&store, "3");
        overwrite(
            &samples_dir(store.root(), &repaired).join("0001/result.json"),
            b"",
        );
        commit(&store, "3");
        let reached = BTreeSet::from([kept.clone(), spoiled.clone(), repaired.clone()]);

        let garbage = store.garbage(&reached).unwrap();
        let listed: Vec<(String, GarbageKind)> = garbage
            .iter()
            .map(|g| {
                let mut kind = g.kind.clone();
                if let GarbageKind::Unreached { committed, .. } = &mut kind {
                    // Committed just now, by the file system's clock.
                    let now = std::time::SystemTime::UNIX_EPOCH
                        .elapsed()
                        .unwrap()
                        .as_secs();
                    assert!(now.abs_diff(*committed) < 60, "{committed} vs {now}");
                    assert!(g.is_young(now) && !g.is_young(now + 7 * 24 * 3600));
                    *committed = 0;
                }
                (relative(&store, [&g.path])[0].clone(), kind)
            })
            .collect();
        let at = |key: &RunKey, rest: &str| format!("entries/{}/{key}{rest}", &key.as_str()[..2]);
        let mut expected = vec![
            (
                at(&kept, "/samples/0002"),
                GarbageKind::Damaged(Damage::ResultInvalid(
                    "EOF while parsing a value at line 1 column 0".into(),
                )),
            ),
            (
                at(&gone, ""),
                GarbageKind::Unreached {
                    material: "[]".into(),
                    samples: 1,
                    committed: 0,
                },
            ),
            (
                at(&spoiled, ""),
                GarbageKind::Damaged(Damage::InputsMismatch(RunKey::of_canonical("2"))),
            ),
            (
                format!("quarantine/{repaired}"),
                GarbageKind::Quarantined { items: 1 },
            ),
        ];
        expected.sort_by(|a, b| a.0.cmp(&b.0));
        let mut listed = listed;
        listed.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(listed, expected);
        assert!(garbage.iter().all(|g| g.bytes > 0));

        for item in &garbage {
            assert_eq!(store.remove(item).unwrap(), Removal::Removed);
            assert!(!item.path.exists());
        }
        assert_eq!(store.garbage(&reached).unwrap(), []);
        assert_eq!(store.samples(&kept).unwrap().len(), 1);
        assert_eq!(store.samples(&repaired).unwrap().len(), 1);
        assert!(store.samples(&spoiled).unwrap().is_empty());
        let verified = store.verify().unwrap();
        assert_eq!((verified.entries, verified.findings.len()), (2, 0));
    }

    #[test]
    fn nothing_is_removed_through_a_linked_quarantine_or_tmp() {
        let (root, store) = store();
        commit(&store, "{}");
        let outside = root.path().join("outside");
        overwrite_in(&outside.join("keep/thesis.tex"));
        overwrite_in(&outside.join("proc-1-x/owner.lock"));
        for dir in [quarantine_dir(store.root()), tmp_dir(store.root())] {
            if dir.exists() {
                fs_err::remove_dir_all(&dir).unwrap();
            }
            std::os::unix::fs::symlink(&outside, &dir).unwrap();
            assert!(matches!(Store::open(store.root()), Err(Error::Link { .. })));
            assert!(matches!(store.stale_tmp(true), Err(Error::Link { .. })));
            for item in store.garbage(&BTreeSet::new()).unwrap() {
                assert!(matches!(store.remove(&item), Err(Error::Link { .. })));
            }
            assert!(outside.join("keep/thesis.tex").is_file());
            assert!(outside.join("proc-1-x/owner.lock").is_file());
            fs_err::remove_file(&dir).unwrap();
        }
    }

    fn overwrite_in(path: &Path) {
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        overwrite(path, b"mine");
    }

    #[test]
    fn idle_lock_files_go_and_a_waiting_process_locks_the_new_one() {
        let (_root, store) = store();
        let (kept, _) = commit(&store, "{}");
        let (gone, _) = commit(&store, "[]");
        let none = BTreeSet::from([kept.clone()]);
        for item in store.garbage(&none).unwrap() {
            assert_eq!(store.remove(&item).unwrap(), Removal::Removed);
        }
        let measuring = RunKey::of_canonical("1");
        let held = store.lock(&measuring).unwrap();
        assert_eq!(store.remove_idle_locks().unwrap(), 1);
        let locks = |key: &RunKey| lock_path(store.root(), key).exists();
        assert!(locks(&kept) && !locks(&gone) && locks(&measuring));

        // A process waiting on a lock file that is removed locks the new one.
        let waiting = std::thread::spawn({
            let store = store.clone();
            let key = measuring.clone();
            move || store.lock(&key).unwrap()
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        fs_err::remove_file(lock_path(store.root(), &measuring)).unwrap();
        drop(held);
        let lock = waiting.join().unwrap();
        assert!(locks(&measuring));
        assert!(store.try_lock(&measuring).unwrap().is_none(), "one holder");
        drop(lock);
        assert!(store.try_lock(&measuring).unwrap().is_some());
    }

    #[test]
    fn an_item_in_use_or_repaired_meanwhile_is_left_alone() {
        let (_root, store) = store();
        let (key, _) = commit(&store, "{}");
        let none = BTreeSet::new();
        let [item] = &store.garbage(&none).unwrap()[..] else {
            panic!("one unreached entry")
        };
        let running = Store::new(store.root()).lock(&key).unwrap();
        assert_eq!(store.remove(item).unwrap(), Removal::InUse);
        drop(running);

        overwrite(
            &samples_dir(store.root(), &key).join("0001/result.json"),
            b"",
        );
        let reached = BTreeSet::from([key.clone()]);
        let [damaged] = &store.garbage(&reached).unwrap()[..] else {
            panic!("one damaged sample")
        };
        commit(&store, "{}");
        assert_eq!(store.remove(damaged).unwrap(), Removal::Changed);
        assert_eq!(store.samples(&key).unwrap().len(), 1, "the repaired sample");

        assert_eq!(store.remove(item).unwrap(), Removal::Removed);
        assert!(!entry_dir(store.root(), &key).exists());
        assert_eq!(
            fs_err::read_dir(tmp_dir(store.root()))
                .unwrap()
                .flat_map(|p| fs_err::read_dir(p.unwrap().path()).unwrap())
                .count(),
            1,
            "only the owner lock is left in our temp dir"
        );
    }
}
