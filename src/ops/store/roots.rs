//! The runs `store gc` keeps: every run of the experiments under each
//! runtime, and every key of every perfpipe lockfile in the project tree
//! (wherever a copy such as `before.lock` was put).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::key::RunKey;
use crate::ops::workspace::lockfile;
use crate::ops::{Error, LockMode, Selection, load};

/// What reaches the entries to keep.
#[derive(Debug)]
pub struct Roots {
    /// Every key to keep, with the files that reach it.
    pub keys: BTreeMap<RunKey, Vec<PathBuf>>,
    /// The keys that only lockfiles list (e.g. of runs an experiment no
    /// longer declares).
    pub lockfile_only: BTreeSet<RunKey>,
    pub experiments: Vec<PathBuf>,
    pub lockfiles: Vec<PathBuf>,
    /// Named on the command line, rather than found in the project.
    pub named: bool,
}

impl Roots {
    /// Why an entry outside the roots goes.
    pub fn unreached(&self) -> &'static str {
        if self.named {
            "reached by none of the experiments and lockfiles named"
        } else {
            "reached by no experiment in `experiments/` and no lockfile in the project"
        }
    }

    pub fn reaches(&self, key: &RunKey) -> bool {
        self.keys.contains_key(key)
    }
}

/// The roots: the files `named`, else every `experiments/*.kdl` and every
/// perfpipe lockfile under the current directory (see [`project_lockfiles`]).
/// A root that cannot be read is an error, never skipped: gc must not remove
/// what it cannot see is reached.
pub fn roots(named: &[PathBuf], store: &Path) -> Result<Roots, Error> {
    let (experiments, lockfiles) = if named.is_empty() {
        let experiments = files("experiments", "kdl").map_err(|source| Error::ReadExperiment {
            path: "experiments/".into(),
            source,
            hint: "gc reads every experiment under `experiments/` for the runs it keeps".into(),
        })?;
        (experiments, project_lockfiles(Path::new("."), store)?)
    } else {
        let (lockfiles, experiments) = named
            .iter()
            .cloned()
            .partition(|p| p.extension().is_some_and(|e| e == "lock"));
        (experiments, lockfiles)
    };
    if experiments.is_empty() && lockfiles.is_empty() {
        return Err(Error::Usage {
            message: "found no experiment in `experiments/` and no lockfile in the project, so `store gc` removes nothing".into(),
            hint: "run it in the project directory, or name the experiments and lockfiles whose runs to keep: `perfpipe store gc FILE...`".into(),
        });
    }
    let mut keys: BTreeMap<RunKey, Vec<PathBuf>> = BTreeMap::new();
    for path in &experiments {
        for key in experiment_keys(path, store).map_err(|e| unreadable(path, e))? {
            reached_by(&mut keys, key, path);
        }
    }
    for path in &lockfiles {
        let lock = lockfile::read(path)
            .and_then(|lock| {
                lock.ok_or_else(|| Error::ReadLockfile {
                    path: path.display().to_string(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "the file does not exist",
                    ),
                })
            })
            .map_err(|e| unreadable(path, e))?;
        for key in lock.runs.into_iter().flat_map(|r| r.keys.into_values()) {
            reached_by(&mut keys, key, path);
        }
    }
    let lockfile_only = keys
        .iter()
        .filter(|(_, by)| by.iter().all(|root| !experiments.contains(root)))
        .map(|(key, _)| key.clone())
        .collect();
    Ok(Roots {
        keys,
        lockfile_only,
        experiments,
        lockfiles,
        named: !named.is_empty(),
    })
}

fn reached_by(keys: &mut BTreeMap<RunKey, Vec<PathBuf>>, key: RunKey, root: &Path) {
    let by = keys.entry(key).or_default();
    if !by.iter().any(|p| p == root) {
        by.push(root.to_owned());
    }
}

/// Every perfpipe lockfile under `dir`, sorted: each regular file whose head
/// begins as a lockfile does (`Cargo.lock` and other programs' files do
/// not), found without entering the store, `target/`, `.git/` or any other
/// hidden directory, nor following links to directories.
pub fn project_lockfiles(dir: &Path, store: &Path) -> Result<Vec<PathBuf>, Error> {
    let store = store.canonicalize().ok();
    let walk = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            let skipped = e.depth() > 0
                && e.file_type().is_dir()
                && (name.starts_with('.')
                    || name == "target"
                    || store.is_some() && e.path().canonicalize().ok() == store);
            !skipped
        });
    let mut out = Vec::new();
    for entry in walk {
        let entry = entry.map_err(|e| Error::ReadLockfile {
            path: e
                .path()
                .map_or_else(|| dir.display().to_string(), |p| p.display().to_string()),
            source: e.into(),
        })?;
        // A link to a file counts as the file; a FIFO or a device is never opened.
        if !entry.path().is_file() {
            continue;
        }
        let path = entry.path().strip_prefix(".").unwrap_or(entry.path());
        if begins_as_lockfile(path).map_err(|source| Error::ReadLockfile {
            path: path.display().to_string(),
            source,
        })? {
            out.push(path.to_owned());
        }
    }
    Ok(out)
}

/// Reads only the head of the file: a project may hold large datasets.
fn begins_as_lockfile(path: &Path) -> std::io::Result<bool> {
    let mut head = Vec::with_capacity(crate::lock::HEAD_BYTES);
    fs_err::File::open(path)?
        .take(crate::lock::HEAD_BYTES as u64)
        .read_to_end(&mut head)?;
    Ok(crate::lock::is_lockfile(&String::from_utf8_lossy(&head)))
}

/// Every run's key under each runtime, as `plan` computes them.
fn experiment_keys(path: &Path, store: &Path) -> Result<Vec<RunKey>, Error> {
    let loaded = load(&Selection::declared(path, None, store), LockMode::Read)?;
    Ok(crate::lock::RUNTIMES
        .into_iter()
        .flat_map(|runtime| crate::key::keyed_runs(&loaded.spec, runtime, &loaded.inputs))
        .map(|run| run.key)
        .collect())
}

fn unreadable(path: &Path, source: Error) -> Error {
    Error::GcRoot {
        path: path.display().to_string(),
        cause: Box::new(source),
    }
}

/// `dir/*.ext`, sorted; none when `dir` is absent.
fn files(dir: &str, ext: &str) -> std::io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = match fs_err::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    out.retain(|p| p.extension().is_some_and(|e| e == ext) && p.is_file());
    out.sort();
    Ok(out)
}
