//! Resolves the files an experiment depends on (its datasets, and each model's
//! tokenizer if this machine has it) to what they hold. Reads files only; the
//! lockfile resolver will join it here.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::spec::{Dataset, ModelRef, Spec};
use crate::tokenizer::{Tokenizer, find_tokenizer_json};

/// A dataset file as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedDataset {
    pub path: PathBuf,
    pub sha256: String,
    /// The declared file was missing and the shipped sample stands in for it.
    pub is_sample: bool,
}

/// A model's tokenizer as found on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedTokenizer {
    /// `whitespace-v1`, or `sha256:<hex>` of its `tokenizer.json`.
    pub id: String,
    /// The `tokenizer.json`; `None` for the built-in whitespace tokenizer.
    pub path: Option<PathBuf>,
}

impl ResolvedTokenizer {
    pub fn load(&self) -> Result<Tokenizer, crate::tokenizer::Error> {
        match &self.path {
            Some(path) => Tokenizer::from_file(path),
            None => Ok(Tokenizer::Whitespace),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResolvedInputs {
    /// By workload name.
    pub datasets: BTreeMap<String, ResolvedDataset>,
    /// By `(model id, revision)`.
    pub tokenizers: BTreeMap<(String, String), ResolvedTokenizer>,
}

impl ResolvedInputs {
    pub fn dataset(&self, workload: &str) -> Option<&ResolvedDataset> {
        self.datasets.get(workload)
    }

    /// The model's tokenizer; the whitespace one when none was resolved.
    pub fn tokenizer(&self, model: &ModelRef) -> ResolvedTokenizer {
        self.tokenizers
            .get(&(model.id.clone(), model.revision.clone()))
            .cloned()
            .unwrap_or(ResolvedTokenizer {
                id: crate::tokenizer::WHITESPACE.into(),
                path: None,
            })
    }
}

#[derive(Debug, Error)]
pub enum Error {
    #[error("dataset `{path}` of workload `{workload}` does not exist")]
    MissingDataset { workload: String, path: String },
    #[error(transparent)]
    Tokenizer(#[from] crate::tokenizer::Error),
    #[error("cannot read dataset `{path}`")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is the dataset of workload `{workload}`")]
    Dataset {
        workload: String,
        path: String,
        #[source]
        source: crate::harness::DatasetError,
    },
}

/// Finds and hashes every dataset file; paths are relative to `root`.
pub fn resolve(spec: &Spec, root: &Path) -> Result<ResolvedInputs, Error> {
    let mut datasets = BTreeMap::new();
    for workload in &spec.workloads {
        let Dataset::ShareGpt { path, sample, .. } = &workload.dataset else {
            continue;
        };
        let declared = root.join(path);
        let (chosen, is_sample) = if declared.is_file() {
            (declared, false)
        } else {
            match sample.as_ref().map(|s| root.join(s)) {
                Some(s) if s.is_file() => (s, true),
                _ => {
                    return Err(Error::MissingDataset {
                        workload: workload.name.value.clone(),
                        path: path.clone(),
                    });
                }
            }
        };
        let sha256 = sha256_sharegpt(&chosen).map_err(|e| match e {
            Unusable::Read(source) => Error::Read {
                path: chosen.display().to_string(),
                source,
            },
            Unusable::Shape(source) => Error::Dataset {
                workload: workload.name.value.clone(),
                path: chosen.display().to_string(),
                source,
            },
        })?;
        datasets.insert(
            workload.name.value.clone(),
            ResolvedDataset {
                path: chosen,
                sha256,
                is_sample,
            },
        );
    }
    let mut tokenizers = BTreeMap::new();
    for step in &spec.steps {
        let model = (step.model.id.clone(), step.model.revision.clone());
        if tokenizers.contains_key(&model) {
            continue;
        }
        let resolved = match find_tokenizer_json(&model.0, &model.1) {
            Some(path) => ResolvedTokenizer {
                // Parsing it now also catches a corrupt file before any GPU is taken.
                id: Tokenizer::from_file(&path)?.id(),
                path: Some(path),
            },
            None => ResolvedTokenizer {
                id: crate::tokenizer::WHITESPACE.into(),
                path: None,
            },
        };
        tokenizers.insert(model, resolved);
    }
    Ok(ResolvedInputs {
        datasets,
        tokenizers,
    })
}

enum Unusable {
    Read(std::io::Error),
    Shape(crate::harness::DatasetError),
}

/// The file's sha256, read once: it goes through the ShareGPT shape check on its way.
fn sha256_sharegpt(path: &Path) -> Result<String, Unusable> {
    let file = fs_err::File::open(path).map_err(Unusable::Read)?;
    let mut reader = std::io::BufReader::with_capacity(
        1 << 16,
        Hashing {
            inner: file,
            hasher: Sha256::new(),
        },
    );
    match crate::harness::dataset::check_sharegpt(&mut reader) {
        Err(crate::harness::DatasetError::Shape(e)) if e.is_io() => {
            return Err(Unusable::Read(e.into()));
        }
        other => other.map_err(Unusable::Shape)?,
    }
    std::io::copy(&mut reader, &mut std::io::sink()).map_err(Unusable::Read)?;
    Ok(hex::encode(reader.into_inner().hasher.finalize()))
}

/// Hashes what is read through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}
