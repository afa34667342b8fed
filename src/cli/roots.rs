//! The runs `store gc` keeps: every run of the experiments under each
//! runtime, and every key the lockfiles list.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::args::Common;
use super::{CliError, LockMode, load, lockfile};
use crate::key::RunKey;
use crate::spec::Runtime;

/// What reaches the entries to keep.
#[derive(Debug)]
pub(super) struct Roots {
    /// Every key to keep.
    pub keys: BTreeSet<RunKey>,
    /// The keys that only lockfiles list (e.g. of runs an experiment no
    /// longer declares).
    pub lockfile_only: BTreeSet<RunKey>,
    pub experiments: Vec<PathBuf>,
    pub lockfiles: Vec<PathBuf>,
    /// Named on the command line, rather than found in `experiments/` and `lockfiles/`.
    pub named: bool,
}

impl Roots {
    /// Why an entry outside the roots goes.
    pub fn unreached(&self) -> &'static str {
        if self.named {
            "reached by none of the experiments and lockfiles named"
        } else {
            "reached by no experiment in `experiments/` and no lockfile in `lockfiles/`"
        }
    }
}

/// The roots: the files `named`, else every `experiments/*.kdl` and
/// `lockfiles/*.lock`. A file that cannot be read is an error, never
/// skipped: gc must not remove what it cannot see is reached.
pub(super) fn roots(named: &[PathBuf], store: &Path) -> Result<Roots, CliError> {
    let (experiments, lockfiles) = if named.is_empty() {
        let experiments =
            files("experiments", "kdl").map_err(|source| CliError::ReadExperiment {
                path: "experiments/".into(),
                source,
            })?;
        let lockfiles = files("lockfiles", "lock").map_err(|source| CliError::ReadLockfile {
            path: "lockfiles/".into(),
            source,
        })?;
        (experiments, lockfiles)
    } else {
        let (lockfiles, experiments) = named
            .iter()
            .cloned()
            .partition(|p| p.extension().is_some_and(|e| e == "lock"));
        (experiments, lockfiles)
    };
    if experiments.is_empty() && lockfiles.is_empty() {
        return Err(CliError::Usage {
            message: "found no experiment in `experiments/` and no lockfile in `lockfiles/`, so `store gc` removes nothing".into(),
            hint: "run it in the project directory, or name the experiments and lockfiles whose runs to keep: `perfpipe store gc FILE...`".into(),
        });
    }
    let mut keys = BTreeSet::new();
    for path in &experiments {
        keys.extend(experiment_keys(path, store).map_err(|e| unreadable(path, e))?);
    }
    let mut listed = BTreeSet::new();
    for path in &lockfiles {
        let lock = lockfile::read(path)
            .and_then(|lock| {
                lock.ok_or_else(|| CliError::ReadLockfile {
                    path: path.display().to_string(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "the file does not exist",
                    ),
                })
            })
            .map_err(|e| unreadable(path, e))?;
        listed.extend(lock.runs.into_iter().flat_map(|r| r.keys.into_values()));
    }
    let lockfile_only = listed.difference(&keys).cloned().collect();
    keys.extend(listed);
    Ok(Roots {
        keys,
        lockfile_only,
        experiments,
        lockfiles,
        named: !named.is_empty(),
    })
}

/// Every run's key under each runtime, as `plan` computes them.
fn experiment_keys(path: &Path, store: &Path) -> Result<Vec<RunKey>, CliError> {
    let common = Common {
        experiment: path.to_owned(),
        runtime: None,
        store: store.to_owned(),
        samples: 1,
        retry_failed: false,
        fresh_engine: false,
        max_prompts: None,
        lockfile: None,
    };
    let loaded = load(&common, LockMode::Read)?;
    Ok([Runtime::Docker, Runtime::Local, Runtime::Sim]
        .into_iter()
        .flat_map(|runtime| crate::plan::keyed_runs(&loaded.spec, runtime, &loaded.inputs))
        .map(|run| run.key)
        .collect())
}

fn unreadable(path: &Path, source: CliError) -> CliError {
    CliError::GcRoot {
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
