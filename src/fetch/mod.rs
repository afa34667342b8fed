//! `perfpipe fetch`: brings onto this machine what a lockfile pins, before
//! any GPU is taken — each model's files at its pinned commit into the
//! Hugging Face cache, and under `--runtime docker` each engine's image by
//! digest — after checking that the cache's disk has room for them.
//! (effects: the Hub over HTTP, the cache's files, `docker`)
//!
//! ```text
//! wants    lockfile → models at commits, images by digest   pure
//! survey   the Hub's listing vs the cache; docker inspect    network, reads files
//! space    bytes missing vs free space (statvfs)             reads the filesystem
//! fetch    download, verify, rename, link; docker pull       network, writes the cache
//! ```
//!
//! Nothing is fetched by tag or branch: an input the lockfile leaves
//! unpinned is reported and skipped.

mod cache;
pub mod harness_env;
mod hub;
mod image;
mod space;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use thiserror::Error;

use crate::facts::is_commit;
use crate::lock::Lockfile;
use cache::{FileStatus, RepoCache};
use hub::{DownloadError, Hub};

/// Files at least this large get a progress line every 10%.
const BIG_FILE: u64 = 64 * 1024 * 1024;
/// Tries per file when the connection breaks.
const ATTEMPTS: u32 = 3;

/// One file of a model at a commit, as the Hub lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    /// Path in the repository (`rfilename`): `config.json`, `original/params.json`.
    pub name: String,
    pub size: u64,
    /// Its name under `blobs/`: the sha256 of an LFS file, else the git blob id.
    pub blob: String,
    pub check: Check,
}

/// The digest a downloaded file must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// An LFS file's sha256 (hex).
    Sha256(String),
    /// A plain file's git blob id: sha1 of `blob <size>\0<bytes>` (hex).
    GitBlob(String),
}

/// What the lockfile asks this machine to hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wants {
    pub models: Vec<ModelWant>,
    pub images: Vec<ImageWant>,
    /// Hashed on every load and compared with the lockfile already.
    pub datasets: Vec<DatasetHave>,
    /// Inputs the lockfile has no pin for: never fetched by tag or branch.
    pub unpinned: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelWant {
    /// `model.<id>@<revision>`.
    pub input: String,
    pub repo: String,
    pub commit: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImageWant {
    /// `engine.<kind>`.
    pub input: String,
    /// By digest: `docker.io/vllm/vllm-openai@sha256:…`.
    pub image: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DatasetHave {
    pub input: String,
    pub sha256: String,
}

/// The pinned models, images (when `images`: the runtime is docker) and
/// datasets among the inputs named in `used`. (pure)
pub fn wants(lock: &Lockfile, used: &BTreeSet<String>, images: bool) -> Wants {
    let mut wants = Wants::default();
    for input in lock.inputs.iter().filter(|i| used.contains(&i.name)) {
        let locked = |attr: &str| input.locked.as_ref().and_then(|l| l.get(attr)).cloned();
        if input.name.starts_with("engine.") {
            if !images {
                continue;
            }
            match locked("image") {
                Some(image) => wants.images.push(ImageWant {
                    input: input.name.clone(),
                    image,
                }),
                None => wants.unpinned.push(input.name.clone()),
            }
        } else if input.name.starts_with("model.") {
            // A local model directory is where it is: nothing to fetch.
            if input.original.contains_key("path") {
                continue;
            }
            match (input.original.get("repo"), locked("revision")) {
                (Some(repo), Some(commit)) if is_commit(&commit) => {
                    let want = ModelWant {
                        input: input.name.clone(),
                        repo: repo.clone(),
                        commit: commit.to_ascii_lowercase(),
                    };
                    if !wants
                        .models
                        .iter()
                        .any(|m| m.repo == want.repo && m.commit == want.commit)
                    {
                        wants.models.push(want);
                    }
                }
                _ => wants.unpinned.push(input.name.clone()),
            }
        } else if input.name.starts_with("dataset.")
            && let Some(sha256) = locked("sha256")
        {
            wants.datasets.push(DatasetHave {
                input: input.name.clone(),
                sha256,
            });
        }
    }
    wants
}

/// What the cache and docker hold of the wanted models and images.
#[derive(Debug, Clone)]
pub struct Survey {
    /// The Hugging Face hub cache.
    pub cache: PathBuf,
    pub models: Vec<ModelSurvey>,
    pub images: Vec<ImageSurvey>,
    /// Models the Hub could not list, images docker could not be asked about.
    pub failures: Vec<Failure>,
}

#[derive(Debug, Clone)]
pub struct ModelSurvey {
    pub want: ModelWant,
    /// `<cache>/models--{org}--{name}`.
    pub dir: PathBuf,
    /// Every file of the commit.
    pub files: Vec<RemoteFile>,
    /// Files to download.
    pub missing: Vec<RemoteFile>,
    /// Files whose blob is cached (another revision has them): only linked.
    pub link_only: Vec<RemoteFile>,
}

impl ModelSurvey {
    pub fn missing_bytes(&self) -> u64 {
        self.missing.iter().map(|f| f.size).sum()
    }

    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

#[derive(Debug, Clone)]
pub struct ImageSurvey {
    pub want: ImageWant,
    pub present: bool,
}

/// An input that could not be checked or fetched.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub input: String,
    pub message: String,
    /// The cache already has a snapshot of this model's commit (which the Hub
    /// could not be asked about): an engine may well load it.
    pub cached: bool,
}

impl Survey {
    /// Bytes of the files to download.
    pub fn missing_bytes(&self) -> u64 {
        self.models.iter().map(ModelSurvey::missing_bytes).sum()
    }

    /// Nothing to download, link or pull.
    pub fn nothing_to_do(&self) -> bool {
        self.models
            .iter()
            .all(|m| m.missing.is_empty() && m.link_only.is_empty())
            && self.images.iter().all(|i| i.present)
    }
}

/// Free space against what is to be downloaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    pub needed: u64,
    pub free: u64,
    /// Where it was measured: the cache, or its nearest existing parent.
    pub at: PathBuf,
}

/// What fetching says as it goes.
#[derive(Debug)]
pub enum Event<'a> {
    /// A file's download starts (`index` of `total` in this fetch).
    Downloading {
        model: &'a ModelWant,
        file: &'a RemoteFile,
        index: usize,
        total: usize,
    },
    /// Every 10% of a big file.
    Progress {
        file: &'a RemoteFile,
        done: u64,
    },
    /// The connection broke; the file is downloaded again from the start.
    Retrying {
        file: &'a RemoteFile,
        error: &'a str,
    },
    Pulling {
        image: &'a ImageWant,
    },
}

#[derive(Debug, Error)]
pub enum Error {
    #[error("cannot find the Hugging Face cache: neither HF_HUB_CACHE, HF_HOME nor HOME is set")]
    NoCache,
    #[error("cannot start the HTTP client")]
    Client(#[source] std::io::Error),
    #[error("cannot measure the free space of `{dir}`")]
    Space {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "not enough disk space: the missing files need {} and `{dir}` has {} free",
        gigabytes(*needed),
        gigabytes(*free)
    )]
    NoSpace { needed: u64, free: u64, dir: String },
}

/// Surveys and fetches over one Hub client, blocking the caller.
pub struct Fetcher {
    hub: Hub,
    cache: PathBuf,
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("hub", &self.hub)
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// The Hub of `HF_ENDPOINT` with `HF_TOKEN`, and the cache of
    /// `HF_HUB_CACHE` / `HF_HOME` (as engines and `huggingface_hub` find it).
    /// Its requests run on `io`, the process's runtime.
    pub fn from_env(io: &crate::tokio_runtime::Io) -> Result<Self, Error> {
        let cache = crate::tokenizer::hub_cache().ok_or(Error::NoCache)?;
        let hub = Hub::from_env().map_err(Error::Client)?;
        let runtime = io.handle().map_err(Error::Client)?;
        Ok(Self {
            hub,
            cache,
            runtime,
        })
    }

    pub fn cache(&self) -> &Path {
        &self.cache
    }

    pub fn endpoint(&self) -> &str {
        self.hub.endpoint()
    }

    /// Lists each model's files at its commit and checks which the cache
    /// lacks; asks docker which images it lacks. Downloads nothing.
    pub fn survey(&self, wants: &Wants) -> Survey {
        self.runtime.block_on(async {
            let mut survey = Survey {
                cache: self.cache.clone(),
                models: Vec::new(),
                images: Vec::new(),
                failures: Vec::new(),
            };
            for want in &wants.models {
                let checked = cache::check_repo(&want.repo);
                let valid = checked.is_ok();
                let repo = RepoCache::new(&self.cache, &want.repo);
                let listed = match checked {
                    Ok(()) => self.hub.list(&want.repo, &want.commit).await,
                    Err(e) => Err(e),
                };
                let files = match listed {
                    Ok(files) => files,
                    Err(message) => {
                        survey.failures.push(Failure {
                            input: want.input.clone(),
                            message,
                            cached: valid && repo.snapshot(&want.commit).is_dir(),
                        });
                        continue;
                    }
                };
                let (mut missing, mut link_only) = (Vec::new(), Vec::new());
                for file in &files {
                    match repo.status(&want.commit, file) {
                        FileStatus::Present => {}
                        FileStatus::BlobOnly => link_only.push(file.clone()),
                        FileStatus::Missing => missing.push(file.clone()),
                    }
                }
                survey.models.push(ModelSurvey {
                    want: want.clone(),
                    dir: repo.dir().to_path_buf(),
                    files,
                    missing,
                    link_only,
                });
            }
            for want in &wants.images {
                match image::present(&want.image).await {
                    Ok(present) => survey.images.push(ImageSurvey {
                        want: want.clone(),
                        present,
                    }),
                    Err(message) => survey.failures.push(Failure {
                        input: want.input.clone(),
                        message,
                        cached: false,
                    }),
                }
            }
            survey
        })
    }

    /// Downloads, verifies and links every missing file, then pulls every
    /// missing image. Returns what failed; the rest is in place.
    pub fn fetch(&self, survey: &Survey, report: &mut dyn FnMut(Event<'_>)) -> Vec<Failure> {
        self.runtime.block_on(async {
            let mut failures = Vec::new();
            let total: usize = survey.models.iter().map(|m| m.missing.len()).sum();
            let mut index = 0;
            for model in &survey.models {
                let repo = RepoCache::new(&self.cache, &model.want.repo);
                let mut failed = false;
                if let Err(e) = repo.remove_abandoned_temps() {
                    failures.push(Failure {
                        input: model.want.input.clone(),
                        message: format!("cannot clean `{}`: {e}", repo.dir().display()),
                        cached: false,
                    });
                    continue;
                }
                for file in &model.link_only {
                    if let Err(e) = self.place(&repo, &model.want, file).await {
                        failed = true;
                        failures.push(failure(&model.want, file, &e.to_string()));
                    }
                }
                for file in &model.missing {
                    report(Event::Downloading {
                        model: &model.want,
                        file,
                        index,
                        total,
                    });
                    index += 1;
                    if let Err(message) = self.download(&repo, &model.want, file, report).await {
                        failed = true;
                        failures.push(failure(&model.want, file, &message));
                    }
                }
                // What is in the snapshot now is what the listing of the pinned commit says.
                let incomplete: Vec<&str> = model
                    .files
                    .iter()
                    .filter(|f| repo.status(&model.want.commit, f) != FileStatus::Present)
                    .map(|f| f.name.as_str())
                    .collect();
                if !failed && !incomplete.is_empty() {
                    failures.push(Failure {
                        input: model.want.input.clone(),
                        message: format!(
                            "the snapshot in `{}` still lacks {}",
                            repo.snapshot(&model.want.commit).display(),
                            incomplete.join(", ")
                        ),
                        cached: false,
                    });
                }
            }
            for image in survey.images.iter().filter(|i| !i.present) {
                report(Event::Pulling { image: &image.want });
                if let Err(message) = image::pull(&image.want.image).await {
                    failures.push(Failure {
                        input: image.want.input.clone(),
                        message,
                        cached: false,
                    });
                }
            }
            failures
        })
    }

    /// Links a file whose blob is cached.
    async fn place(
        &self,
        repo: &RepoCache,
        model: &ModelWant,
        file: &RemoteFile,
    ) -> std::io::Result<()> {
        let _lock = repo.lock(&file.blob)?;
        repo.link(&model.commit, file)
    }

    /// Downloads one file into its blob (under the blob's lock), checks it,
    /// and links it into the snapshot. A failed download leaves nothing.
    async fn download(
        &self,
        repo: &RepoCache,
        model: &ModelWant,
        file: &RemoteFile,
        report: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), String> {
        let io = |e: std::io::Error| format!("`{}`: {e}", file.name);
        let _lock = repo.lock(&file.blob).map_err(io)?;
        // Another process may have fetched it while we waited for the lock.
        match repo.status(&model.commit, file) {
            FileStatus::Present => return Ok(()),
            FileStatus::BlobOnly => return repo.link(&model.commit, file).map_err(io),
            FileStatus::Missing => {}
        }
        let temp = repo.temp(&file.blob);
        fs_err::create_dir_all(temp.parent().expect("blobs/ is a directory")).map_err(io)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut out = fs_err::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .open(&temp)
                .map_err(io)?
                .into_parts()
                .0;
            let step = file.size / 10;
            let mut next = step;
            let mut progress = |done: u64| {
                if file.size >= BIG_FILE && done >= next {
                    report(Event::Progress { file, done });
                    next = (done / step + 1) * step;
                }
            };
            let result = self
                .hub
                .download(&model.repo, &model.commit, file, &mut out, &mut progress)
                .await;
            drop(out);
            match result {
                Ok(()) => {
                    fs_err::rename(&temp, repo.blob(&file.blob)).map_err(io)?;
                    return repo.link(&model.commit, file).map_err(io);
                }
                Err(DownloadError::Transport(error)) if attempt < ATTEMPTS => {
                    report(Event::Retrying {
                        file,
                        error: &error,
                    });
                    tokio::time::sleep(Duration::from_secs(2 * u64::from(attempt))).await;
                }
                Err(e) => {
                    let _ = fs_err::remove_file(&temp);
                    return Err(match e {
                        DownloadError::Write(e) => io(e),
                        other => other.to_string(),
                    });
                }
            }
        }
    }
}

fn failure(model: &ModelWant, file: &RemoteFile, message: &str) -> Failure {
    let message = if message.contains(&format!("`{}`", file.name)) {
        message.to_owned()
    } else {
        format!("`{}`: {message}", file.name)
    };
    Failure {
        input: model.input.clone(),
        message,
        cached: false,
    }
}

/// Refuses, before anything is downloaded, when the files to download do not
/// fit in the free space of the cache's filesystem.
pub fn check_space(survey: &Survey) -> Result<Space, Error> {
    let needed = survey.missing_bytes();
    let (at, free) = space::free_bytes(&survey.cache).map_err(|source| Error::Space {
        dir: survey.cache.display().to_string(),
        source,
    })?;
    if needed > free {
        return Err(Error::NoSpace {
            needed,
            free,
            dir: at.display().to_string(),
        });
    }
    Ok(Space { needed, free, at })
}

/// `12.3 GB`, as disk space is sold (10^9 bytes).
pub fn gigabytes(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

/// `512 B`, `1.2 kB`, `3.4 MB`, `56.7 GB` (powers of 1000).
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        gigabytes(bytes)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::{Attrs, Input};

    fn input(name: &str, original: &[(&str, &str)], locked: Option<&[(&str, &str)]>) -> Input {
        let attrs = |pairs: &[(&str, &str)]| -> Attrs {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        Input {
            name: name.into(),
            original: attrs(original),
            locked: locked.map(attrs),
        }
    }

    #[test]
    fn only_pins_of_used_inputs_are_wanted_and_nothing_by_tag() {
        let commit = "ab".repeat(20);
        let lock = Lockfile {
            experiment: "x".into(),
            inputs: vec![
                input(
                    "dataset.d.json",
                    &[("path", "d.json")],
                    Some(&[("file", "d.json"), ("sha256", "f00d")]),
                ),
                input("engine.sglang", &[("image", "s:1")], None),
                input(
                    "engine.trtllm",
                    &[("image", "t:1")],
                    Some(&[("image", "t@sha256:1")]),
                ),
                input(
                    "engine.vllm",
                    &[("image", "v:1")],
                    Some(&[("image", "v@sha256:2")]),
                ),
                input("harness", &[], Some(&[("name", "builtin")])),
                input(
                    "model.Q/M-FP8@main",
                    &[("repo", "Q/M-FP8"), ("revision", "main")],
                    None,
                ),
                input(
                    "model.Q/M@main",
                    &[("repo", "Q/M"), ("revision", "main")],
                    Some(&[("revision", &commit)]),
                ),
                input(
                    &format!("model.Q/M@{commit}"),
                    &[("repo", "Q/M"), ("revision", &commit)],
                    Some(&[("revision", &commit)]),
                ),
            ],
            runs: vec![],
        };
        let used: BTreeSet<String> = lock
            .inputs
            .iter()
            .map(|i| i.name.clone())
            .filter(|n| n != "engine.trtllm")
            .collect();
        let docker = wants(&lock, &used, true);
        assert_eq!(
            docker.images,
            [ImageWant {
                input: "engine.vllm".into(),
                image: "v@sha256:2".into()
            }]
        );
        assert_eq!(
            docker.models,
            [ModelWant {
                input: "model.Q/M@main".into(),
                repo: "Q/M".into(),
                commit: commit.clone()
            }],
            "one commit is fetched once"
        );
        assert_eq!(docker.unpinned, ["engine.sglang", "model.Q/M-FP8@main"]);
        assert_eq!(docker.datasets[0].sha256, "f00d");
        let local = wants(&lock, &used, false);
        assert!(local.images.is_empty());
        assert_eq!(local.unpinned, ["model.Q/M-FP8@main"]);
        assert_eq!(wants(&lock, &BTreeSet::new(), true), Wants::default());
    }

    #[test]
    fn sizes_read_as_disks_are_sold() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1_234), "1.2 kB");
        assert_eq!(human_bytes(29_540_133_021), "29.5 GB");
        assert_eq!(gigabytes(470_000_000_000), "470.0 GB");
    }
}
