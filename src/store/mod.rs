//! The content-addressed store: one entry per run key, each holding its key
//! material and one or more samples. (fs)
//!
//! ```text
//! store/
//!   entries/<k0k1>/<key>/inputs.json              exact canonical bytes that hash to <key>
//!   entries/<k0k1>/<key>/samples/0001/result.json  metrics or failure, with provenance
//!   entries/<k0k1>/<key>/samples/0001/logs/{engine,harness}.log
//!   locks/<key>.lock                               per-key OS file lock
//!   tmp/                                           samples being measured (never read)
//! ```
//!
//! Paths derive from the key only. A sample becomes visible by one `rename`, so
//! a killed run leaves at most a directory under `tmp/`, which nothing reads.

mod entry;
mod layout;
mod write;

pub use entry::{FailureKind, Outcome, RunResult, Sample};
pub use write::{KeyLock, PendingSample};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::key::RunKey;

#[derive(Debug, Error)]
pub enum Error {
    #[error("store I/O failed")]
    Io(#[from] std::io::Error),
    #[error("cannot encode a result for `{key}`")]
    Encode {
        key: String,
        #[source]
        source: serde_json::Error,
    },
}

/// A store rooted at a directory (created on first write).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// What the store holds for the keys a plan asked about.
#[derive(Debug, Clone, Default)]
pub struct StoreIndex {
    pub entries: BTreeMap<RunKey, Vec<Sample>>,
}

impl StoreIndex {
    pub fn samples(&self, key: &RunKey) -> &[Sample] {
        self.entries.get(key).map(Vec::as_slice).unwrap_or(&[])
    }
}

impl Store {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Reads the samples of each key; keys without an entry are left out.
    pub fn index<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a RunKey>,
    ) -> Result<StoreIndex, Error> {
        let mut entries = BTreeMap::new();
        for key in keys {
            let samples = self.samples(key)?;
            if !samples.is_empty() {
                entries.insert(key.clone(), samples);
            }
        }
        Ok(StoreIndex { entries })
    }

    /// Every entry's key with its key material (the `inputs.json` text);
    /// directories that are not named by a key are skipped.
    pub fn entries(&self) -> Result<Vec<(RunKey, String)>, Error> {
        let mut out = Vec::new();
        let shards = match fs_err::read_dir(self.root.join("entries")) {
            Ok(shards) => shards,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e.into()),
        };
        for shard in shards.filter_map(|s| s.ok()) {
            for entry in fs_err::read_dir(shard.path())?.filter_map(|e| e.ok()) {
                let Some(key) = entry.file_name().to_str().and_then(RunKey::parse) else {
                    continue;
                };
                if let Ok(material) = fs_err::read_to_string(entry.path().join("inputs.json")) {
                    out.push((key, material));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// The committed samples of a key, oldest first. A sample whose result
    /// cannot be read is skipped: it is never used as a result.
    pub fn samples(&self, key: &RunKey) -> Result<Vec<Sample>, Error> {
        let dir = layout::samples_dir(&self.root, key);
        let mut ids: Vec<String> = match fs_err::read_dir(&dir) {
            Ok(entries) => entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|name| layout::is_sample_id(name))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        ids.sort();
        Ok(ids
            .into_iter()
            .filter_map(|id| {
                let text = fs_err::read_to_string(dir.join(&id).join("result.json")).ok()?;
                let result: RunResult = serde_json::from_str(&text).ok()?;
                Some(Sample {
                    dir: dir.join(&id),
                    id,
                    result,
                })
            })
            .collect())
    }
}
