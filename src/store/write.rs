//! Committing samples: temp dir, fsync, rename, under the key's lock.

use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::layout::{entry_dir, lock_path, sample_id, samples_dir, tmp_dir};
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
}

impl Store {
    /// Blocks until this process holds the key's lock.
    pub fn lock(&self, key: &RunKey) -> Result<KeyLock, Error> {
        let file = crate::filelock::open(&lock_path(&self.root, key))?;
        file.lock()?;
        Ok(KeyLock { _file: file })
    }

    /// This process's lock on the key, or `None` while another holds it.
    pub fn try_lock(&self, key: &RunKey) -> Result<Option<KeyLock>, Error> {
        let file = crate::filelock::open(&lock_path(&self.root, key))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(KeyLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
        }
    }

    /// A directory for an engine launch's log, removed when dropped.
    pub fn launch_dir(&self) -> Result<TempDir, Error> {
        let tmp = tmp_dir(&self.root);
        fs_err::create_dir_all(&tmp)?;
        Ok(tempfile::Builder::new()
            .prefix("launch-")
            .tempdir_in(&tmp)?)
    }

    pub fn begin_sample(&self) -> Result<PendingSample, Error> {
        let tmp = tmp_dir(&self.root);
        fs_err::create_dir_all(&tmp)?;
        let dir = tempfile::Builder::new()
            .prefix("sample-")
            .tempdir_in(&tmp)?;
        fs_err::create_dir_all(dir.path().join("logs"))?;
        Ok(PendingSample { dir })
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

    /// Writes `logs/<name>` (the engine writes its own log there directly).
    pub fn write_log(&self, name: &str, text: &str) -> std::io::Result<()> {
        write_synced(&self.logs_dir().join(name), text.as_bytes())
    }

    /// Writes the result and makes the sample visible with one rename. The
    /// entry (with its `inputs.json`) is created the same way on first commit.
    /// The caller holds the key's lock.
    pub fn commit(
        self,
        store: &Store,
        key: &RunKey,
        canonical: &str,
        result: &RunResult,
        _lock: &KeyLock,
    ) -> Result<String, Error> {
        let json = serde_json::to_string_pretty(result).map_err(|source| Error::Encode {
            key: key.to_string(),
            source,
        })?;
        write_synced(&self.dir.path().join("result.json"), json.as_bytes())?;
        sync_dir(&self.dir.path().join("logs"))?;
        sync_dir(self.dir.path())?;

        let entry = entry_dir(&store.root, key);
        if !entry.join("inputs.json").is_file() {
            let staging = tempfile::Builder::new()
                .prefix("entry-")
                .tempdir_in(tmp_dir(&store.root))?;
            write_synced(&staging.path().join("inputs.json"), canonical.as_bytes())?;
            fs_err::create_dir(staging.path().join("samples"))?;
            sync_dir(staging.path())?;
            let parent = entry.parent().expect("entry has a parent");
            fs_err::create_dir_all(parent)?;
            fs_err::rename(staging.keep(), &entry)?;
            sync_dir(parent)?;
        }

        let samples = samples_dir(&store.root, key);
        let next = fs_err::read_dir(&samples)?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|n| n.parse::<usize>().ok())
            .max()
            .unwrap_or(0)
            + 1;
        let id = sample_id(next);
        fs_err::rename(self.dir.keep(), samples.join(&id))?;
        sync_dir(&samples)?;
        Ok(id)
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "the store's one writer: write + fsync"
)]
fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = fs_err::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn sync_dir(path: &Path) -> std::io::Result<()> {
    fs_err::File::open(path)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Provenance;
    use crate::store::{FailureKind, Outcome};

    fn result(key: &RunKey) -> RunResult {
        RunResult {
            key: key.to_string(),
            outcome: Outcome::Failure {
                kind: FailureKind::Deterministic,
                error: "boom".into(),
                log_tail: String::new(),
            },
            provenance: Provenance::Published {
                source: "test".into(),
            },
            engine_command: vec![],
            engine_launch: None,
            harness_command: vec![],
            telemetry: None,
        }
    }

    #[test]
    fn samples_accumulate_and_uncommitted_ones_vanish() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::new(root.path().join("store"));
        let key = RunKey::of_canonical("{}");
        let lock = store.lock(&key).unwrap();

        let abandoned = store.begin_sample().unwrap();
        drop(abandoned);
        assert!(store.samples(&key).unwrap().is_empty());

        for expected in ["0001", "0002"] {
            let pending = store.begin_sample().unwrap();
            let id = pending
                .commit(&store, &key, "{}", &result(&key), &lock)
                .unwrap();
            assert_eq!(id, expected);
        }
        let samples = store.samples(&key).unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[1].result, result(&key));
        let inputs =
            fs_err::read_to_string(entry_dir(store.root(), &key).join("inputs.json")).unwrap();
        assert_eq!(RunKey::of_canonical(&inputs), key);
        assert_eq!(fs_err::read_dir(tmp_dir(store.root())).unwrap().count(), 0);
    }

    #[test]
    fn an_unreadable_result_is_never_used() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::new(root.path());
        let key = RunKey::of_canonical("{}");
        let lock = store.lock(&key).unwrap();
        let pending = store.begin_sample().unwrap();
        pending
            .commit(&store, &key, "{}", &result(&key), &lock)
            .unwrap();
        let file = samples_dir(store.root(), &key).join("0001/result.json");
        write_synced(&file, b"{\"truncated").unwrap();
        assert!(store.samples(&key).unwrap().is_empty());
    }
}
