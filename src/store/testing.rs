//! Helpers for the store's unit tests.

use std::path::Path;

use super::{Committed, FailureKind, Outcome, RunResult, Store};
use crate::key::RunKey;
use crate::metrics::Provenance;

pub fn result(key: &RunKey) -> RunResult {
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
        slurm: None,
    }
}

/// The key of some key material, and a store in a fresh directory.
pub fn store() -> (tempfile::TempDir, Store) {
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path().join("store"));
    (root, store)
}

/// Marks `dir` as a perfpipe store (caches kept in a store are written
/// only into one).
pub fn mark(dir: &Path) {
    super::root::mark(dir).unwrap();
}

/// Commits one sample of the key material `canonical`, as a run does.
pub fn commit(store: &Store, canonical: &str) -> (RunKey, Committed) {
    let key = RunKey::of_canonical(canonical);
    let lock = store.lock(&key).unwrap();
    let pending = store.begin_sample().unwrap();
    pending.write_log("engine.log", "ready\n").unwrap();
    let committed = pending
        .commit(store, &key, canonical, &result(&key), &lock)
        .unwrap();
    (key, committed)
}

/// Replaces a file's bytes, as damage on disk would.
pub fn overwrite(path: &Path, bytes: &[u8]) {
    super::write::write_synced(path, bytes).unwrap();
}

/// Paths under the store's root, as strings relative to it, sorted.
pub fn relative(store: &Store, paths: impl IntoIterator<Item = impl AsRef<Path>>) -> Vec<String> {
    let mut out: Vec<String> = paths
        .into_iter()
        .map(|p| {
            p.as_ref()
                .strip_prefix(store.root())
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    out.sort();
    out
}
