//! The content-addressed store: one entry per run key, each holding its key
//! material and one or more samples. (fs)
//!
//! ```text
//! store/
//!   perfpipe-store                                 marker: perfpipe made this store (see root.rs)
//!   entries/<k0k1>/<key>/inputs.json              exact canonical bytes that hash to <key>
//!   entries/<k0k1>/<key>/samples/0001/result.json  metrics or failure, with provenance
//!   entries/<k0k1>/<key>/samples/0001/logs/{engine,harness}.log, requests.jsonl
//!   entries/<k0k1>/<key>/samples/0002/signature.json  who signed a substituted sample
//!   drv/<launch key>.json                          launch material (crate::launch), canonical;
//!                                                  the directory keeps its first name
//!   inputs/sha256/<sha256>                         input files the launch material names
//!                                                  (read-only copies)
//!   locks/<key>.lock                               per-key OS file lock
//!   locks/tmp.lock                                 orders creating and cleaning temp dirs
//!   locks/index.lock                               orders appends to the index
//!   index/results.keys, index/results.data        the index of results: each entry's
//!                                                  samples as last read, checked by
//!                                                  stat data before use (results_index.rs)
//!   tmp/proc-<pid>-<random>/                       one process's samples being measured,
//!                                                  engine logs, entries being created
//!   quarantine/<key>/<n>-<what>                    damage moved out of an entry (never read)
//!   cache/inputs.json                              input files' sha256 by stat data
//!                                                  (not key material; see inputs::HashCache)
//!   cache/lacks/<16 hex of location>/<key>         when a result cache last had no sample
//!                                                  of <key> (cache::lacks)
//!   logs/slurm/                                    Slurm jobs' output (exec::slurm)
//! ```
//!
//! Paths derive from the key only. A sample becomes visible by one `rename`, so
//! a killed run leaves at most a directory under `tmp/`, which nothing reads
//! and the next `run` removes. Damage (an `inputs.json` that does not hash to
//! its entry's name, a `result.json` that does not parse or names another key)
//! is never read as a result: the run reads as missing, and the commit that
//! redoes it moves the damage to `quarantine/`.

mod check;
mod entry;
mod entry_stat;
mod files;
mod gc;
mod import;
mod journal;
mod launch_gc;
mod launches;
mod layout;
mod quarantine;
mod results_index;
mod root;
mod signed;
mod telemetry;
#[cfg(test)]
pub(crate) mod testing;
mod tmp;
mod write;

pub use check::{Damage, EntryDir, Finding, Verification};
pub use entry::{FailureKind, Outcome, RunResult, Sample, SampleStatus, StoredSample};
pub use files::{EntryFiles, SampleFiles, open as open_entry_file};
pub use gc::{Garbage, GarbageKind, KEEP_YOUNGER_THAN, Removal};
pub use import::Imported;
pub use launch_gc::LaunchGarbage;
pub use launches::{InputFile, LaunchFile};
pub use results_index::IndexCheck;
pub use root::{MARKER, is_marked};
pub use signed::{SIGNATURE_FILE, StoredFiles, StoredLog};
pub use tmp::{StaleTmp, disk_usage};
pub use write::{Committed, KeyLock, PendingSample};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use thiserror::Error;

use crate::key::RunKey;

/// What can go wrong with a store: its place is not a store (the user's to
/// fix), reading or writing it failed (the machine's: permissions, a
/// read-only or full disk; the message names the path), or a bug.
#[derive(Debug, Error, miette::Diagnostic)]
pub enum Error {
    #[error("`{}` is not a directory, so `{}` is not a store", path.display(), root.display())]
    #[diagnostic(help(
        "`--store DIR` (or PERFPIPE_STORE) names the store's directory; move the file away, or name another directory"
    ))]
    NotADirectory { root: PathBuf, path: PathBuf },
    #[error(
        "`{}` is not a perfpipe store: it holds {} that perfpipe did not make",
        root.display(),
        quote_names(foreign)
    )]
    #[diagnostic(help(
        "perfpipe uses as its store a missing or empty directory (and marks it with a `perfpipe-store` file), or a store it marked; it never deletes files it did not make. Name another directory with `--store DIR` (or PERFPIPE_STORE, or `store` in perfpipe.toml)"
    ))]
    NotAStore { root: PathBuf, foreign: Vec<String> },
    #[error(
        "`{}` is a symbolic link: perfpipe never follows a link out of its store `{}`",
        path.display(),
        root.display()
    )]
    #[diagnostic(help(
        "make it a directory of the store (move what it points to there), or name the store's own directory with `--store DIR`"
    ))]
    Link { root: PathBuf, path: PathBuf },
    #[error("cannot use the store")]
    #[diagnostic(help(
        "perfpipe reads and writes the store as it runs: check the permissions and free space of the path named, or name another store with `--store DIR`"
    ))]
    Io(#[from] std::io::Error),
    #[error(
        "the samples of `{key}` have ids up to {}: {wanted} more would pass it",
        u32::MAX
    )]
    SampleIds { key: String, wanted: u32 },
    #[error("cannot encode a result for `{key}`")]
    Encode {
        key: String,
        #[source]
        source: serde_json::Error,
    },
}

impl Error {
    /// Whether the user is to fix it (a wrong place for a store), not the
    /// machine or perfpipe.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::NotADirectory { .. }
                | Self::NotAStore { .. }
                | Self::Link { .. }
                | Self::SampleIds { .. }
        )
    }
}

/// The first few of `names`, quoted, for a message.
fn quote_names(names: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut out: Vec<String> = names.iter().take(SHOWN).map(|n| format!("`{n}`")).collect();
    if names.len() > SHOWN {
        out.push(format!("{} more", names.len() - SHOWN));
    }
    out.join(", ")
}

/// A store rooted at a directory (created and marked on first write; see
/// `root.rs` for which directories are stores).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    /// This process's temp dir, shared by clones, created on first write.
    process: Arc<Mutex<Option<Arc<tmp::ProcessDir>>>>,
    /// Whether this process made sure the root is a marked store.
    marked: Arc<AtomicBool>,
}

/// The first ancestor of `path` (itself included) that exists and is not a
/// directory: the file a path below it runs into.
fn first_non_directory(path: &Path) -> PathBuf {
    path.ancestors()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find(|p| p.exists() && !p.is_dir())
        .unwrap_or(path)
        .to_path_buf()
}

/// Keys read together from this many on are read on every core the
/// process may use (fewer take less than starting the threads).
const PARALLEL_FROM: usize = 256;

/// What the store holds for the keys a plan asked about: each key's samples
/// whole, or only their statuses ([`Store::statuses`]).
#[derive(Debug, Clone)]
pub struct StoreIndex<S = Sample> {
    pub entries: BTreeMap<RunKey, Vec<S>>,
}

impl<S> Default for StoreIndex<S> {
    fn default() -> Self {
        Self {
            entries: BTreeMap::new(),
        }
    }
}

impl<S> StoreIndex<S> {
    pub fn samples(&self, key: &RunKey) -> &[S] {
        self.entries.get(key).map(Vec::as_slice).unwrap_or(&[])
    }
}

impl Store {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            process: Arc::default(),
            marked: Arc::default(),
        }
    }

    /// The store at `root`: a missing or empty directory (created and
    /// marked on first write), a marked store, or an earlier perfpipe's
    /// store (marked on first write). Anything else, and a layout directory
    /// that is a link or a file, is refused before anything runs; opening
    /// writes nothing.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, Error> {
        let store = Self::new(root);
        root::classify(&store.root)?;
        Ok(store)
    }

    /// Makes sure, once per process, that the root is a marked store before
    /// anything is written into it (creating it when missing).
    fn writable(&self) -> Result<(), Error> {
        if !self.marked.load(Ordering::Acquire) {
            root::mark(&self.root)?;
            self.marked.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Marks a store that exists but is not marked yet (empty, or an
    /// earlier perfpipe's), for a command that writes to keep its caches
    /// there; a missing store stays missing (a command refused before it
    /// runs leaves none behind). Whether the store is marked now.
    pub fn mark_if_present(&self) -> bool {
        self.root.is_dir() && self.writable().is_ok()
    }

    /// Creates the store's directories and this process's temp dir, so that
    /// a store that cannot be written fails before any engine starts.
    pub fn prepare_to_write(&self) -> Result<(), Error> {
        self.writable()?;
        fs_err::create_dir_all(layout::entries_dir(&self.root))?;
        self.process_dir().map(drop)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where commands keep the sha256 of input files (`inputs::HashCache`).
    pub fn hash_cache_path(&self) -> PathBuf {
        self.root.join("cache").join("inputs.json")
    }

    /// Reads the samples of each key, given with the canonical text it is
    /// the sha256 of; keys without an entry are left out. The index of
    /// results answers for the entries it knows as they are; the others are
    /// read from their files (and recorded again).
    pub fn index<'a>(
        &self,
        runs: impl IntoIterator<Item = (&'a RunKey, &'a str)>,
    ) -> Result<StoreIndex, Error> {
        self.index_with(runs.into_iter().map(|(key, text)| (key, Some(text))))
    }

    /// [`Store::index`] reading only each sample's status: what `plan`
    /// needs, without building every result's numbers.
    pub fn statuses<'a>(
        &self,
        runs: impl IntoIterator<Item = (&'a RunKey, &'a str)>,
    ) -> Result<StoreIndex<SampleStatus>, Error> {
        self.index_with(runs.into_iter().map(|(key, text)| (key, Some(text))))
    }

    /// [`Store::index`] of keys known without their canonical text (an
    /// entry read from its files has its `inputs.json` hashed again).
    pub fn index_keys<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a RunKey>,
    ) -> Result<StoreIndex, Error> {
        self.index_with(keys.into_iter().map(|key| (key, None)))
    }

    fn index_with<'a, S: StoredSample + Send>(
        &self,
        runs: impl IntoIterator<Item = (&'a RunKey, Option<&'a str>)>,
    ) -> Result<StoreIndex<S>, Error> {
        let runs: Vec<(&RunKey, Option<&str>)> = runs.into_iter().collect();
        let index = self.results_index(runs.iter().map(|(key, _)| *key));
        let stats = entry_stat::EntryStats::new(&self.root);
        let mut unknown = Vec::new();
        let read = self.read_many::<S>(&index, &stats, &runs, &mut unknown)?;
        let mut entries = BTreeMap::new();
        for ((key, _), samples) in runs.iter().zip(read) {
            if !samples.is_empty() {
                entries.insert((*key).clone(), samples);
            }
        }
        self.refresh_index(&unknown);
        Ok(StoreIndex { entries })
    }

    /// Every sound entry's key material with its samples, read as
    /// [`Store::index`] reads them (through the index of results), handed to
    /// `each` a few thousand entries at a time: the samples of 100,000
    /// entries are not held at once; only the entries whose key material
    /// text is `wanted` are read and handed on. What `plan` estimates
    /// missing runs from.
    pub fn each_entry(
        &self,
        wanted: impl Fn(&str) -> bool + Sync,
        mut each: impl FnMut(&RunKey, &str, Vec<Sample>),
    ) -> Result<(), Error> {
        const BATCH: usize = 4096;
        let entries = self.entries_where(&wanted)?;
        let index = self.results_index(entries.iter().map(|(key, _)| key));
        let stats = entry_stat::EntryStats::new(&self.root);
        let mut unknown = Vec::new();
        for batch in entries.chunks(BATCH) {
            let runs: Vec<(&RunKey, Option<&str>)> = (batch.iter())
                .map(|(key, text)| (key, Some(text.as_str())))
                .collect();
            let read = self.read_many::<Sample>(&index, &stats, &runs, &mut unknown)?;
            for ((key, text), samples) in batch.iter().zip(read) {
                each(key, text, samples);
            }
        }
        self.refresh_index(&unknown);
        Ok(())
    }

    /// The samples of each of `runs`, in order, read on every core (each
    /// key costs ~3 `stat`s, a payload and a parse, independent of the
    /// others: 10,000 of them took most of a `plan` or `report`); the keys
    /// the index did not know are added to `unknown`.
    fn read_many<'r, S: StoredSample + Send>(
        &self,
        index: &results_index::ResultsIndex,
        stats: &entry_stat::EntryStats,
        runs: &[(&'r RunKey, Option<&str>)],
        unknown: &mut Vec<&'r RunKey>,
    ) -> Result<Vec<Vec<S>>, Error> {
        let read = |i: usize| {
            let (key, canonical) = runs[i];
            self.read_samples::<S>(index, stats, key, canonical)
        };
        let workers = crate::parallel::workers_for(runs.len(), PARALLEL_FROM);
        let read = crate::parallel::in_parallel(runs.len(), workers, &read);
        let mut out = Vec::with_capacity(runs.len());
        for ((key, _), read) in runs.iter().zip(read) {
            let (samples, known) = read?;
            if !known {
                unknown.push(*key);
            }
            out.push(samples);
        }
        Ok(out)
    }

    /// The samples of `key` (the canonical text it hashes, when known), from
    /// `index` when it knows them as they are, else from the entry's files;
    /// and whether the index knew them (false: it is to record them again).
    fn read_samples<S: StoredSample>(
        &self,
        index: &results_index::ResultsIndex,
        stats: &entry_stat::EntryStats,
        key: &RunKey,
        canonical: Option<&str>,
    ) -> Result<(Vec<S>, bool), Error> {
        let why = match index.lookup(stats, key) {
            results_index::Lookup::Samples(samples) => return Ok((samples, true)),
            results_index::Lookup::NoSamples => return Ok((Vec::new(), true)),
            results_index::Lookup::Unknown(why) => why,
        };
        // An entry with damage or a signed sample is read every time:
        // recording it again would not change that.
        let known = why == results_index::Unknown::ReadFiles;
        let entry = layout::entry_dir(&self.root, key);
        let sound = match canonical {
            // Bytes equal to the text the key hashes hash to the key: the
            // same check as `samples`, without hashing.
            Some(canonical) => {
                debug_assert_eq!(RunKey::of_canonical(canonical), *key);
                files::read(&entry.join("inputs.json"))
                    .is_ok_and(|bytes| bytes == canonical.as_bytes())
            }
            None => check::check_inputs(&entry, key).is_none(),
        };
        if !sound {
            return Ok((Vec::new(), known));
        }
        let samples = (committed_samples(&entry, key)?.into_iter())
            .map(S::from_sample)
            .collect();
        Ok((samples, known))
    }

    /// Every sound entry's key with its key material (the `inputs.json`
    /// text); damaged entries are left out.
    pub fn entries(&self) -> Result<Vec<(RunKey, String)>, Error> {
        self.entries_where(&|_| true)
    }

    /// The entries whose key material text is `wanted`, as
    /// [`Store::entries`]; the others' texts are dropped as they are read
    /// (100,000 of them are ~70 MB).
    fn entries_where(
        &self,
        wanted: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Vec<(RunKey, String)>, Error> {
        let dirs: Vec<(RunKey, PathBuf)> = (self.entry_dirs()?.into_iter())
            .filter_map(|dir| Some((dir.key?, dir.path)))
            .collect();
        // A read and a sha256 each, on every core: 100,000 in a large store.
        let read = |i: usize| {
            let (key, path) = &dirs[i];
            let bytes = files::read(&path.join("inputs.json")).ok()?;
            // Bytes that hash to the key are the canonical text it was made from.
            if RunKey::of_bytes(&bytes) != *key {
                return None;
            }
            String::from_utf8(bytes).ok().filter(|text| wanted(text))
        };
        let workers = crate::parallel::workers_for(dirs.len(), PARALLEL_FROM);
        let materials = crate::parallel::in_parallel(dirs.len(), workers, &read);
        let mut out: Vec<(RunKey, String)> = (dirs.into_iter().zip(materials))
            .filter_map(|((key, _), material)| Some((key, material?)))
            .collect();
        out.sort();
        Ok(out)
    }

    /// Refuses, before anything is measured, when `wanted` more samples of
    /// `key` would take ids past the bound (a commit could not name them).
    pub fn check_sample_room(&self, key: &RunKey, wanted: u32) -> Result<(), Error> {
        match self.last_sample_id(key)?.checked_add(wanted) {
            Some(_) => Ok(()),
            None => Err(Error::SampleIds {
                key: key.to_string(),
                wanted,
            }),
        }
    }

    /// The highest sample id under `key`'s entry (damaged samples too: an id
    /// is never reused while its directory is there); 0 when there is none.
    fn last_sample_id(&self, key: &RunKey) -> Result<u32, Error> {
        Ok(check::sample_dirs(&layout::entry_dir(&self.root, key))?
            .iter()
            .filter_map(|(name, _)| layout::parse_sample_id(name))
            .max()
            .unwrap_or(0))
    }

    /// The committed samples of a key, oldest first. Damage is never used as
    /// a result: no sample of an entry whose `inputs.json` is not the key's,
    /// and no sample whose result does not parse or names another key.
    /// Whether `key`'s entry has any sample: a quick presence test that
    /// checks nothing (`index` and `samples` check what they read).
    pub fn has_samples(&self, key: &RunKey) -> bool {
        self.presence().has_samples(key)
    }

    /// Presence tests of many keys ([`Store::has_samples`] each), cheaper
    /// together: each shard's directory is opened once and every path walked
    /// from it (see `entry_stat`).
    pub fn presence(&self) -> Presence {
        Presence {
            stats: entry_stat::EntryStats::new(&self.root),
        }
    }

    pub fn samples(&self, key: &RunKey) -> Result<Vec<Sample>, Error> {
        let entry = layout::entry_dir(&self.root, key);
        if check::check_inputs(&entry, key).is_some() {
            return Ok(Vec::new());
        }
        committed_samples(&entry, key)
    }
}

/// Presence tests of a batch of keys: see [`Store::presence`].
pub struct Presence {
    stats: entry_stat::EntryStats,
}

impl Presence {
    /// Whether `key`'s entry has any sample, as [`Store::has_samples`].
    pub fn has_samples(&self, key: &RunKey) -> bool {
        check::has_sample_dirs(&self.stats, key)
    }
}

/// The sound samples under `entry`, whose `inputs.json` is `key`'s.
fn committed_samples(entry: &Path, key: &RunKey) -> Result<Vec<Sample>, Error> {
    Ok(check::inspect_samples(entry, key)?
        .into_iter()
        .filter_map(|sample| {
            Some(Sample {
                result: sample.state.ok()?,
                dir: sample.path,
                id: sample.name,
                unsigned: false,
            })
        })
        .collect())
}
