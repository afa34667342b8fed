//! Signed samples: those substituted from a result cache keep the exact
//! bytes their signer signed, and `signature.json` with the signature and
//! the signer's public key, so every reader rechecks them before a sample is
//! used (`check::inspect_samples`) and reports name the signer. A store
//! holds a sample (a statement) once.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::check::Damage;
use super::write::PendingSample;
use super::{Error, Sample, Store};
use crate::key::RunKey;
use crate::signing::statement::statement_of;
use crate::signing::{Refusal, Signed};

/// A stored sample's files by digest: `result.json`'s bytes (its provenance
/// is signed) and each log's path, sha256 and length, hashed as a stream and
/// never held whole, so a sample of any size is pushed or checked in bounded
/// memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFiles {
    pub key: RunKey,
    pub result: Vec<u8>,
    /// By name.
    pub logs: Vec<StoredLog>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLog {
    pub name: String,
    pub path: PathBuf,
    /// sha256, lowercase hex.
    pub digest: String,
    pub size: u64,
}

impl StoredFiles {
    /// The statement of these files (as
    /// [`crate::signing::SampleFiles::statement`]).
    pub fn statement(&self) -> Result<String, Refusal> {
        let logs: Vec<(String, String)> = self
            .logs
            .iter()
            .map(|log| (log.name.clone(), log.digest.clone()))
            .collect();
        statement_of(&self.key, &self.result, &logs)
    }
}

pub const SIGNATURE_FILE: &str = "signature.json";

impl Store {
    /// The files of `sample` of `key` by digest, logs hashed as a stream.
    pub fn stored_files(&self, key: &RunKey, sample: &Sample) -> Result<StoredFiles, Error> {
        Ok(read_digests(&sample.dir, key)?)
    }

    /// Who signed `sample`, when it came from a cache.
    pub fn signature(&self, sample: &Sample) -> Option<Signed> {
        sample.signature()
    }

    /// The statements of `key`'s sound samples: what identifies each.
    pub fn statements(&self, key: &RunKey) -> Result<BTreeSet<String>, Error> {
        Ok(self
            .samples(key)?
            .iter()
            .filter_map(|sample| {
                let statement = match sample.signature() {
                    Some(signed) => signed.statement,
                    None => read_digests(&sample.dir, key).ok()?.statement().ok()?,
                };
                Some(statement)
            })
            .collect())
    }

    /// Commits a sample checked elsewhere (its signature against a trusted
    /// key) whose logs were streamed into `pending` (checked against their
    /// digests on the way) and whose `result.json` is `result`, with
    /// `signed`; `None` when the store already holds that statement. Under
    /// the key's lock, as measuring is, so concurrent substitutions of one
    /// sample store it once.
    pub fn add_pending_signed(
        &self,
        key: &RunKey,
        canonical: &str,
        pending: PendingSample,
        result: &[u8],
        signed: &Signed,
    ) -> Result<Option<super::Committed>, Error> {
        let lock = self.lock(key)?;
        if self.statements(key)?.contains(&signed.statement) {
            return Ok(None);
        }
        let json = serde_json::to_vec_pretty(signed).map_err(|source| Error::Encode {
            key: key.to_string(),
            source,
        })?;
        pending.write_file(SIGNATURE_FILE, json)?;
        pending
            .commit_bytes(self, key, canonical, result, &lock)
            .map(Some)
    }
}

impl Sample {
    /// Who signed this sample, when it came from a cache (read from its
    /// `signature.json`, unless the index of results knew it has none).
    pub fn signature(&self) -> Option<Signed> {
        if self.unsigned {
            return None;
        }
        read_signed(&self.dir)
    }
}

fn read_signed(dir: &Path) -> Option<Signed> {
    let bytes = super::files::read(&dir.join(SIGNATURE_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The files of the sample in `dir` by digest: logs hashed as a stream.
pub(super) fn read_digests(dir: &Path, key: &RunKey) -> std::io::Result<StoredFiles> {
    let result = super::files::read(&dir.join("result.json"))?;
    let mut logs = Vec::new();
    match fs_err::read_dir(dir.join("logs")) {
        Ok(entries) => {
            for entry in entries {
                let entry = entry?;
                if entry.file_type()?.is_file() {
                    let path = entry.path();
                    let file = super::files::open(&path)?;
                    let (digest, size) = crate::digest::sha256_hex_of_reader(file)?;
                    logs.push(StoredLog {
                        name: entry.file_name().to_string_lossy().into_owned(),
                        path,
                        digest,
                        size,
                    });
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    logs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(StoredFiles {
        key: key.clone(),
        result,
        logs,
    })
}

/// The signature of a sample that has one, when it covers the sample's
/// files (every file, with its name) and verifies under the key it names;
/// damage otherwise. A sample without `signature.json` is not signed.
pub(super) fn check_signature(dir: &Path, key: &RunKey) -> Result<Option<Signed>, Damage> {
    let path = dir.join(SIGNATURE_FILE);
    let bytes = match super::files::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Damage::SignatureBroken(e.to_string())),
    };
    let signed: Signed = serde_json::from_slice(&bytes)
        .map_err(|e| Damage::SignatureBroken(format!("does not parse ({e})")))?;
    let files = read_digests(dir, key).map_err(|e| Damage::SignatureBroken(e.to_string()))?;
    signed
        .check_statement(&files.statement())
        .map_err(|e| Damage::SignatureBroken(e.to_string()))?;
    Ok(Some(signed))
}
