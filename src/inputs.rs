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
        let sha256 = sha256_file(&chosen).map_err(|source| Error::Read {
            path: chosen.display().to_string(),
            source,
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

pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = fs_err::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}
