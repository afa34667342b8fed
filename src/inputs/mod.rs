//! Resolves the files an experiment depends on (its datasets, and each model's
//! tokenizer if this machine has it) to what they hold. Reads files only; the
//! lockfile resolver will join it here.

mod hash_cache;
pub mod model_dir;

pub use hash_cache::{HashCache, Stamp};
pub use model_dir::ResolvedModel;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::spec::{Dataset, HarnessKind, ModelRef, Spec};
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
    /// Local model directories, by model id (their path).
    pub models: BTreeMap<String, ResolvedModel>,
    /// Local model directories this machine does not have (a published
    /// page's `/workspace/…`, a cluster path seen from a laptop): their runs
    /// are keyed by the path alone, and `run` refuses to start them.
    pub absent_models: BTreeSet<String>,
}

impl ResolvedInputs {
    pub fn dataset(&self, workload: &str) -> Option<&ResolvedDataset> {
        self.datasets.get(workload)
    }

    /// The local model directory `id` names, as hashed; `None` for a Hub model.
    pub fn model(&self, id: &str) -> Option<&ResolvedModel> {
        self.models.get(id)
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
    #[error("dataset `{path}` of workload `{workload}` is {what}, not a file")]
    NotAFile {
        workload: String,
        path: String,
        what: &'static str,
    },
    #[error(transparent)]
    Tokenizer(#[from] crate::tokenizer::Error),
    #[error("cannot read dataset `{path}`")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read model directory `{path}`")]
    ModelRead {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("model `{path}` is a local path but not a directory")]
    ModelNotADirectory { path: String },
    #[error("model directory `{path}` holds no file")]
    ModelEmpty { path: String },
    #[error("`{path}` is the dataset of workload `{workload}`")]
    Dataset {
        workload: String,
        path: String,
        #[source]
        source: crate::dataset::DatasetError,
    },
}

/// Finds and hashes every dataset file (paths are relative to `root`), and
/// loads each model's tokenizer this machine has; checks that the built-in
/// harness finds prompts to send in each ShareGPT file with the tokenizer of
/// every step that measures it. Everything an engine would wait on fails here.
/// A dataset whose stamp `cache` holds with the same check passed is not read.
pub fn resolve(spec: &Spec, root: &Path, cache: &mut HashCache) -> Result<ResolvedInputs, Error> {
    let mut tokenizers = BTreeMap::new();
    let mut loaded: BTreeMap<(String, String), Tokenizer> = BTreeMap::new();
    for step in &spec.steps {
        let model = (step.model.id.clone(), step.model.revision.clone());
        if tokenizers.contains_key(&model) {
            continue;
        }
        let resolved = match find_tokenizer_json(&model.0, &model.1) {
            Some(path) => {
                // Parsing it now also catches a corrupt file before any GPU is taken.
                let tokenizer = Tokenizer::from_file(&path)?;
                let id = tokenizer.id();
                loaded.insert(model.clone(), tokenizer);
                ResolvedTokenizer {
                    id,
                    path: Some(path),
                }
            }
            None => ResolvedTokenizer {
                id: crate::tokenizer::WHITESPACE.into(),
                path: None,
            },
        };
        tokenizers.insert(model, resolved);
    }
    let mut models = BTreeMap::new();
    let mut absent_models = BTreeSet::new();
    for step in &spec.steps {
        let id = &step.model.id;
        if !model_dir::is_local(id) || models.contains_key(id) || absent_models.contains(id) {
            continue;
        }
        // Absent is not an error until an engine needs it: `plan`, `report`
        // and `lock` work where the weights are not (the page's machine, a
        // cluster's storage), keying by the path.
        if model_dir::is_absent(Path::new(id)) {
            absent_models.insert(id.clone());
        } else {
            models.insert(id.clone(), model_dir::resolve(Path::new(id), cache)?);
        }
    }
    let mut datasets = BTreeMap::new();
    for workload in &spec.workloads {
        let Dataset::ShareGpt {
            path,
            sample,
            output_len,
            ..
        } = &workload.dataset
        else {
            continue;
        };
        let name = &workload.name.value;
        let ((chosen, meta), is_sample) = match regular_file(&root.join(path), name)? {
            Some(declared) => (declared, false),
            None => match sample.as_ref().map(|s| regular_file(&root.join(s), name)) {
                Some(Ok(Some(s))) => (s, true),
                Some(Err(e)) => return Err(e),
                _ => {
                    return Err(Error::MissingDataset {
                        workload: name.clone(),
                        path: path.clone(),
                    });
                }
            },
        };
        // The built-in harness samples with each measuring step's tokenizer;
        // the others sample by themselves.
        let mut samplers: Vec<&Tokenizer> = Vec::new();
        if spec.harness.kind == HarnessKind::Builtin {
            for step in spec.steps.iter().filter(|s| s.workloads.contains(name)) {
                let tokenizer = loaded
                    .get(&(step.model.id.clone(), step.model.revision.clone()))
                    .unwrap_or(&Tokenizer::Whitespace);
                if !samplers.iter().any(|t| std::ptr::eq(*t, tokenizer)) {
                    samplers.push(tokenizer);
                }
            }
        }
        let stamp = hash_cache::Stamp::of(&meta);
        let check = sharegpt_check(&samplers, *output_len);
        let sha256 = match cache.passed(&chosen, &stamp, &check) {
            Some(sha256) => sha256.to_owned(),
            None => {
                let hashed_at = crate::clock::file_time_ns();
                let sha256 =
                    sha256_sharegpt(&chosen, &samplers, *output_len).map_err(|e| match e {
                        Unusable::Read(source) => Error::Read {
                            path: chosen.display().to_string(),
                            source,
                        },
                        Unusable::Shape(source) => Error::Dataset {
                            workload: name.clone(),
                            path: chosen.display().to_string(),
                            source,
                        },
                    })?;
                cache.record(&chosen, stamp, hashed_at, &sha256, &check);
                sha256
            }
        };
        datasets.insert(
            name.clone(),
            ResolvedDataset {
                path: chosen,
                sha256,
                is_sample,
            },
        );
    }
    Ok(ResolvedInputs {
        datasets,
        tokenizers,
        models,
        absent_models,
    })
}

/// `path` and its metadata if it is a regular file, `None` if nothing is
/// there; anything else (a directory, a FIFO, a device) is refused by its
/// type, never opened: reading a FIFO would block, `/dev/zero` would never end.
fn regular_file(
    path: &Path,
    workload: &str,
) -> Result<Option<(PathBuf, std::fs::Metadata)>, Error> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Read {
                path: path.display().to_string(),
                source,
            });
        }
    };
    if meta.is_file() {
        return Ok(Some((path.to_path_buf(), meta)));
    }
    Err(Error::NotAFile {
        workload: workload.to_owned(),
        path: path.display().to_string(),
        what: crate::regular_file::describe(meta.file_type()),
    })
}

/// What the ShareGPT check of a file depends on besides its content: the
/// tokenizers it samples with and the fixed output length.
fn sharegpt_check(samplers: &[&Tokenizer], fixed_output: Option<u32>) -> String {
    let tokenizers: Vec<String> = samplers.iter().map(|t| t.id()).collect();
    format!(
        "sharegpt tokenizers=[{}] output-len={}",
        tokenizers.join(","),
        fixed_output.map_or("none".into(), |n| n.to_string())
    )
}

enum Unusable {
    Read(std::io::Error),
    Shape(crate::dataset::DatasetError),
}

/// The file's sha256, read once: it goes through the ShareGPT shape check on its way.
fn sha256_sharegpt(
    path: &Path,
    samplers: &[&Tokenizer],
    fixed_output: Option<u32>,
) -> Result<String, Unusable> {
    let file = fs_err::File::open(path).map_err(Unusable::Read)?;
    let mut reader = std::io::BufReader::with_capacity(
        1 << 16,
        Hashing {
            inner: file,
            hasher: Sha256::new(),
        },
    );
    match crate::dataset::check_sharegpt(&mut reader, samplers, fixed_output) {
        Err(crate::dataset::DatasetError::Shape(e)) if e.is_io() => {
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
