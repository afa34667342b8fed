//! Committing samples: temp dir, fsync, rename, under the key's lock.
//!
//! A commit first moves any damage in the entry to quarantine, then creates
//! the entry if it is absent (a staging dir holding `inputs.json` and an
//! empty `samples/`, renamed into place), then renames the sample in. Killed
//! between any two steps, the store holds damage that is ignored, no entry,
//! or an entry without samples: all read as "missing", and the next commit
//! completes them; what is left under `tmp/` belongs to a dead process.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tempfile::TempDir;

use super::layout::{entry_dir, lock_path, sample_id, samples_dir};
use super::tmp::ProcessDir;
use super::{Error, RunResult, Store};
use crate::key::RunKey;

/// An exclusive OS lock on one key, held while the key is measured and committed.
/// A second process blocks here, then finds the result.
pub struct KeyLock {
    _file: std::fs::File,
}

/// A sample being measured: its logs are written here, and nothing reads it
/// until [`PendingSample::commit`] renames it into the entry. Dropped
/// uncommitted, the directory is removed.
pub struct PendingSample {
    dir: TempDir,
    process: Arc<ProcessDir>,
}

/// What a commit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The new sample's id (`0001`, ...).
    pub id: String,
    /// Where damage found in the entry was moved (`quarantine/<key>/...`).
    pub quarantined: Vec<PathBuf>,
}

impl Store {
    /// Blocks until this process holds the key's lock.
    pub fn lock(&self, key: &RunKey) -> Result<KeyLock, Error> {
        self.writable()?;
        let path = lock_path(&self.root, key);
        loop {
            let file = crate::filelock::open(&path)?;
            file.lock()?;
            if still_named(&file, &path)? {
                return Ok(KeyLock { _file: file });
            }
        }
    }

    /// This process's lock on the key, or `None` while another holds it.
    pub fn try_lock(&self, key: &RunKey) -> Result<Option<KeyLock>, Error> {
        self.writable()?;
        let path = lock_path(&self.root, key);
        loop {
            let file = crate::filelock::open(&path)?;
            match file.try_lock() {
                Ok(()) if still_named(&file, &path)? => return Ok(Some(KeyLock { _file: file })),
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
                Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
            }
        }
    }

    /// A directory for an engine launch's log, removed when dropped.
    pub fn launch_dir(&self) -> Result<TempDir, Error> {
        Ok(tempfile::Builder::new()
            .prefix("launch-")
            .tempdir_in(self.process_dir()?.path())?)
    }

    pub fn begin_sample(&self) -> Result<PendingSample, Error> {
        let process = self.process_dir()?;
        let dir = tempfile::Builder::new()
            .prefix("sample-")
            .tempdir_in(process.path())?;
        fs_err::create_dir_all(dir.path().join("logs"))?;
        Ok(PendingSample { dir, process })
    }
}

impl PendingSample {
    pub fn logs_dir(&self) -> PathBuf {
        self.dir.path().join("logs")
    }

    /// Opens `logs/requests.jsonl`, the harness's per-request journal.
    #[expect(
        clippy::disallowed_methods,
        reason = "a log of the pending sample, appended as requests end"
    )]
    pub fn journal(&self) -> std::io::Result<std::fs::File> {
        Ok(
            fs_err::File::create(self.logs_dir().join("requests.jsonl"))?
                .into_parts()
                .0,
        )
    }

    /// Creates `logs/<name>` for a caller that streams it (a substituted
    /// log, checked against its digest as it arrives); the caller syncs it.
    #[expect(
        clippy::disallowed_methods,
        reason = "a log of the pending sample, streamed from a cache"
    )]
    pub fn create_log(&self, name: &str) -> std::io::Result<std::fs::File> {
        Ok(fs_err::File::create(self.logs_dir().join(name))?
            .into_parts()
            .0)
    }

    /// Writes `<name>` beside `result.json` (a signed sample's `signature.json`).
    pub fn write_file(&self, name: &str, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
        write_synced(&self.dir.path().join(name), bytes.as_ref())
    }

    /// Writes `logs/<name>` (the engine writes its own log there directly).
    pub fn write_log(&self, name: &str, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
        write_synced(&self.logs_dir().join(name), bytes.as_ref())
    }

    /// Writes the result and makes the sample visible with one rename. The
    /// entry (with its `inputs.json`) is created the same way when absent;
    /// damage found in it is moved to quarantine first. The caller holds the
    /// key's lock.
    pub fn commit(
        self,
        store: &Store,
        key: &RunKey,
        canonical: &str,
        result: &RunResult,
        lock: &KeyLock,
    ) -> Result<Committed, Error> {
        let json = serde_json::to_string_pretty(result).map_err(|source| Error::Encode {
            key: key.to_string(),
            source,
        })?;
        self.commit_bytes(store, key, canonical, json.as_bytes(), lock)
    }

    /// [`PendingSample::commit`] of a `result.json` as these exact bytes (a
    /// signed sample keeps the bytes its signature covers).
    pub fn commit_bytes(
        self,
        store: &Store,
        key: &RunKey,
        canonical: &str,
        result: &[u8],
        lock: &KeyLock,
    ) -> Result<Committed, Error> {
        debug_assert_eq!(RunKey::of_canonical(canonical), *key);
        write_synced(&self.dir.path().join("result.json"), result)?;
        super::results_index::backdate(&self.dir.path().join("result.json"));
        sync_dir(&self.dir.path().join("logs"))?;
        sync_dir(self.dir.path())?;

        let quarantined = store.quarantine_damage(key, lock)?;
        let entry = entry_dir(&store.root, key);
        if !entry.exists() {
            let staging = tempfile::Builder::new()
                .prefix("entry-")
                .tempdir_in(self.process.path())?;
            write_synced(&staging.path().join("inputs.json"), canonical.as_bytes())?;
            super::results_index::backdate(&staging.path().join("inputs.json"));
            fs_err::create_dir(staging.path().join("samples"))?;
            sync_dir(staging.path())?;
            let parent = entry.parent().expect("entry has a parent");
            super::root::refuse_link(&store.root, parent)?;
            fs_err::create_dir_all(parent)?;
            fs_err::rename(staging.keep(), &entry)?;
            sync_dir(parent)?;
        }

        let samples = samples_dir(&store.root, key);
        match fs_err::symlink_metadata(&samples) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {
                fs_err::create_dir(&samples)?;
                sync_dir(&entry)?;
            }
            Err(e) => return Err(e.into()),
        }
        store.check_sample_room(key, 1)?;
        let next = store.last_sample_id(key)? + 1;
        let id = sample_id(next);
        fs_err::rename(self.dir.keep(), samples.join(&id))?;
        super::results_index::backdate(&samples);
        sync_dir(&samples)?;
        // The sample is committed: an index that cannot be appended to only
        // costs readers a read of this entry's files.
        let _ = store.index_entries(&[key]);
        Ok(Committed { id, quarantined })
    }
}

/// Whether the locked `file` is still the one at `path`: `store gc` removes
/// the lock files of keys without an entry (holding the lock), so a process
/// that waited on a removed file locks the one now there instead.
fn still_named(file: &std::fs::File, path: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let held = file.metadata()?;
    match fs_err::metadata(path) {
        Ok(named) => Ok(held.dev() == named.dev() && held.ino() == named.ino()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "the store's one writer: write + fsync"
)]
pub(super) fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = fs_err::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

pub(super) fn sync_dir(path: &Path) -> std::io::Result<()> {
    fs_err::File::open(path)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::layout::{quarantine_key_dir, tmp_dir};
    use crate::store::testing::{commit, overwrite, result, store};

    #[test]
    fn samples_accumulate_and_uncommitted_ones_vanish() {
        let (_root, store) = store();
        let key = RunKey::of_canonical("{}");
        let lock = store.lock(&key).unwrap();

        let abandoned = store.begin_sample().unwrap();
        drop(abandoned);
        assert!(store.samples(&key).unwrap().is_empty());

        for expected in ["0001", "0002"] {
            let pending = store.begin_sample().unwrap();
            let committed = pending
                .commit(&store, &key, "{}", &result(&key), &lock)
                .unwrap();
            assert_eq!(committed.id, expected);
            assert!(committed.quarantined.is_empty());
        }
        let samples = store.samples(&key).unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[1].result, result(&key));
        let inputs =
            fs_err::read_to_string(entry_dir(store.root(), &key).join("inputs.json")).unwrap();
        assert_eq!(RunKey::of_canonical(&inputs), key);
        let tmp = tmp_dir(store.root());
        let processes: Vec<_> = fs_err::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        let [process] = &processes[..] else {
            panic!("one process dir while the store is in use: {processes:?}");
        };
        let names: Vec<_> = fs_err::read_dir(process)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["owner.lock"], "nothing left of the commits");
        drop(store);
        assert_eq!(fs_err::read_dir(&tmp).unwrap().count(), 0);
    }

    #[test]
    fn a_damaged_sample_is_never_used_and_the_next_commit_quarantines_it() {
        let (_root, store) = store();
        let (key, _) = commit(&store, "{}");
        let (_, second) = commit(&store, "{}");
        assert_eq!(second.id, "0002");
        let samples = samples_dir(store.root(), &key);
        overwrite(&samples.join("0001/result.json"), b"{\"truncated");
        let other = RunKey::of_canonical("[]");
        let moved = serde_json::to_string(&result(&other)).unwrap();
        overwrite(&samples.join("0002/result.json"), moved.as_bytes());
        assert!(store.samples(&key).unwrap().is_empty());

        let (_, third) = commit(&store, "{}");
        let quarantine = quarantine_key_dir(store.root(), &key);
        assert_eq!(
            third.quarantined,
            [
                quarantine.join("1-sample-0001"),
                quarantine.join("2-sample-0002")
            ]
        );
        assert_eq!(
            third.id, "0001",
            "ids of quarantined samples are free again"
        );
        let kept = store.samples(&key).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].result, result(&key));
        assert!(
            quarantine.join("1-sample-0001/logs/engine.log").is_file(),
            "kept for inspection"
        );
        assert!(store.verify().unwrap().findings.is_empty());
    }

    #[test]
    fn an_entry_whose_inputs_are_not_its_key_is_never_used_and_replaced_whole() {
        let (_root, store) = store();
        let (key, _) = commit(&store, "{}");
        let entry = entry_dir(store.root(), &key);
        overwrite(&entry.join("inputs.json"), b"{");
        assert!(store.samples(&key).unwrap().is_empty());
        assert!(store.entries().unwrap().is_empty());

        let (_, again) = commit(&store, "{}");
        assert_eq!(
            again.quarantined,
            [quarantine_key_dir(store.root(), &key).join("1-entry")]
        );
        assert_eq!(again.id, "0001");
        assert_eq!(store.samples(&key).unwrap().len(), 1);
        assert_eq!(store.entries().unwrap(), [(key, "{}".to_owned())]);
        assert!(store.verify().unwrap().findings.is_empty());
    }

    /// The states a kill -9 can leave between the steps of a commit, and
    /// damage to an entry's layout: each reads as "no result", and the next
    /// commit completes it.
    #[test]
    fn every_partial_or_damaged_entry_reads_as_missing_and_the_next_commit_completes_it() {
        type Damage = fn(&Store, &RunKey);
        let states: [(&str, Damage); 6] = [
            ("entry without samples/", |store, key| {
                fs_err::remove_dir(samples_dir(store.root(), key)).unwrap();
            }),
            ("samples/ replaced by a file", |store, key| {
                let samples = samples_dir(store.root(), key);
                fs_err::remove_dir(&samples).unwrap();
                overwrite(&samples, b"");
            }),
            ("entry with an empty samples/", |_, _| {}),
            ("entry dir without inputs.json", |store, key| {
                fs_err::remove_file(entry_dir(store.root(), key).join("inputs.json")).unwrap();
            }),
            ("empty quarantine dir, entry not moved yet", |store, key| {
                fs_err::create_dir_all(quarantine_key_dir(store.root(), key)).unwrap();
            }),
            (
                "entry moved to quarantine, none created yet",
                |store, key| {
                    fs_err::remove_dir_all(entry_dir(store.root(), key)).unwrap();
                    fs_err::create_dir_all(quarantine_key_dir(store.root(), key).join("1-entry"))
                        .unwrap();
                },
            ),
        ];
        for (state, make) in states {
            let (_root, store) = store();
            let key = RunKey::of_canonical("{}");
            let entry = entry_dir(store.root(), &key);
            fs_err::create_dir_all(entry.join("samples")).unwrap();
            overwrite(&entry.join("inputs.json"), b"{}");
            make(&store, &key);
            assert!(store.samples(&key).unwrap().is_empty(), "{state}");

            let (_, committed) = commit(&store, "{}");
            assert_eq!(committed.id, "0001", "{state}");
            assert_eq!(store.samples(&key).unwrap().len(), 1, "{state}");
            let verified = store.verify().unwrap();
            assert_eq!(verified.findings, [], "{state}");
            assert_eq!((verified.entries, verified.samples), (1, 1), "{state}");
        }
    }
}
