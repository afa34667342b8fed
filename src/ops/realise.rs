//! `perfpipe realise`: executes engine launches from their material alone
//! (no experiment file) and commits their runs as `run` does; `run`
//! executes through [`execute`] too.

use std::path::{Path, PathBuf};

use std::collections::BTreeSet;

use super::{Error, Loaded, Shell};
use crate::exec::{self, ExecEvent, ExecOptions, ExecSummary};
use crate::facts::Runtime;
use crate::inputs::ResolvedInputs;
use crate::key::RunKey;
use crate::launch::{self, LAUNCH_SCHEMA_VERSION, LaunchKey, LaunchMaterial, LaunchOptions};
use crate::plan::{self, Plan, PlanOptions};
use crate::spec::Spec;
use crate::store::{Store, StoreIndex};
use crate::tokio_runtime::Io;

/// Launches as `realise` found them: in the store, or a file named by its key.
#[derive(Debug)]
pub struct Material {
    pub key: LaunchKey,
    pub path: PathBuf,
    pub launch: LaunchMaterial,
}

/// What realising did.
#[derive(Debug)]
pub struct Realised {
    pub summary: ExecSummary,
    /// The runs of the launches, as planned against the store.
    pub plan: Plan,
}

/// `perfpipe realise`: the one launch `what` names (see [`read`]), executed
/// from its material alone and committed to the store at `store`; what it
/// is goes to `shell` before it starts. Returns what realising did, and
/// the store it committed to.
///
/// With `engine_here` (a Slurm job's step in the engine's image, through
/// Pyxis), an engine the material starts with docker starts as a process
/// of this machine, as under `--runtime local`: it is already in that
/// image. The runs keep the material's keys: the image is the same.
pub fn realise(
    what: &str,
    store: &Path,
    engine_here: bool,
    io: &Io,
    shell: &dyn Shell,
    progress: &mut dyn FnMut(&Spec, &ExecEvent),
) -> Result<(Realised, Store), Error> {
    let store = Store::open(store).map_err(Error::Store)?;
    let material = read(what, &store)?;
    let exec = super::run::exec_defaults()?;
    let launch = &material.launch;
    say!(
        shell,
        "perfpipe: realising launch {} (`{}` {} on `{}`, {}, runtime `{}`)",
        material.key.short(),
        launch.engine.engine,
        launch.engine.version,
        launch.engine.model.id,
        crate::plural::count(launch.runs.len(), "run", "runs"),
        launch.runtime,
    );
    let started_as = |runtime: Runtime| match runtime {
        Runtime::Docker if engine_here => Runtime::Local,
        other => other,
    };
    let realised = execute_started_as(
        std::slice::from_ref(launch),
        &store,
        &exec,
        io,
        None,
        None,
        &started_as,
        progress,
    )?;
    Ok((realised, store))
}

/// Reads the material `what` names: a launch key (its file in `store`), or
/// a material file, which is named `<launch key>.json`. Material that does
/// not hash to its name is refused.
pub fn read(what: &str, store: &Store) -> Result<Material, Error> {
    let as_path = Path::new(what);
    let full = match short_key(what).filter(|_| !as_path.exists()) {
        Some(prefix) => Some(by_prefix(prefix, store)?),
        None => LaunchKey::parse(what),
    };
    // The store's material is read without following a link in the store;
    // a file the user names, as any input the user names.
    let (key, path, in_store) = match full {
        Some(key) if !as_path.exists() => {
            let path = store.launch_path(&key);
            (key, path, Some(store.root()))
        }
        _ => {
            let stem = as_path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let key = LaunchKey::parse(&stem)
                .filter(|_| as_path.extension().is_some_and(|e| e == "json"))
                .ok_or_else(|| Error::Usage {
                    message: format!(
                        "`{what}` is neither a launch key nor a launch material file (`<launch key>.json`)"
                    ),
                    hint: "`perfpipe plan --write-launches` and `perfpipe run` write each launch's material to `<store>/drv/<launch key>.json`; name that file or its key".into(),
                })?;
            (key, as_path.to_owned(), None)
        }
    };
    // A FIFO, a link to a device or a huge file never blocks or fills memory.
    let opened = match in_store {
        Some(root) => crate::regular_file::open_beneath(root, &path),
        None => crate::regular_file::open(&path),
    };
    let bytes =
        opened.and_then(|file| crate::regular_file::read_opened_at_most(file, MAX_MATERIAL_BYTES));
    let bytes = bytes.map_err(|source| Error::ReadMaterial {
        path: path.display().to_string(),
        source,
    })?;
    let actual = LaunchKey::of_bytes(&bytes);
    if actual != key {
        return Err(Error::TamperedMaterial {
            path: path.display().to_string(),
            actual: actual.to_string(),
        });
    }
    let launch: LaunchMaterial =
        serde_json::from_slice(&bytes).map_err(|source| Error::BadMaterial {
            path: path.display().to_string(),
            source,
        })?;
    if launch.schema != LAUNCH_SCHEMA_VERSION {
        return Err(Error::Usage {
            message: format!(
                "`{}` is launch material of schema {}; this perfpipe reads schema {LAUNCH_SCHEMA_VERSION}",
                path.display(),
                launch.schema
            ),
            hint:
                "realise it with the perfpipe that wrote it, or write it again with `perfpipe plan --write-launches`"
                    .into(),
        });
    }
    Ok(Material { key, path, launch })
}

/// The most bytes launch material may hold: far more than the key material
/// of the runs one engine launch serves.
const MAX_MATERIAL_BYTES: u64 = 64 << 20;

/// `what`, when it is a short launch key (12 to 63 lowercase hex digits, as
/// `plan` and the Slurm job names `pp-<12 hex>` show it).
fn short_key(what: &str) -> Option<&str> {
    let hex = what.strip_prefix("pp-").unwrap_or(what);
    ((12..64).contains(&hex.len())
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then_some(hex)
}

/// The one launch of the store whose key begins with `prefix`.
fn by_prefix(prefix: &str, store: &Store) -> Result<LaunchKey, Error> {
    let found: Vec<LaunchKey> = store
        .launches()
        .map_err(Error::Store)?
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| key.as_str().starts_with(prefix))
        .collect();
    match &found[..] {
        [one] => Ok(one.clone()),
        [] => Err(Error::Usage {
            message: format!(
                "the store `{}` has no launch material whose key begins with `{prefix}`",
                store.root().display()
            ),
            hint: "`perfpipe plan EXPERIMENT --write-launches` writes the material of the launches it lists; `--store DIR` names the store".into(),
        }),
        many => Err(Error::Usage {
            message: format!(
                "{} launches of the store have keys beginning with `{prefix}`",
                many.len()
            ),
            hint: "give more of the key, or the whole one".into(),
        }),
    }
}

/// Writes the material of every launch the missing runs of `plan` need to
/// the store, with the inputs they name (copied from where `inputs` found
/// them); returns the materials, in the order they run.
pub fn write_launches(
    spec: &Spec,
    plan: &Plan,
    inputs: &ResolvedInputs,
    options: &LaunchOptions,
    store: &Store,
) -> Result<Vec<(LaunchKey, LaunchMaterial)>, Error> {
    let launches = crate::plan::launches(spec, plan, options);
    for (sha256, file) in launch::input_files(&launches, inputs) {
        store.put_input(&sha256, &file).map_err(Error::Store)?;
    }
    launches
        .into_iter()
        .map(|launch| Ok((store.put_launch(&launch).map_err(Error::Store)?, launch)))
        .collect()
}

/// Executes `launches` from their material alone, reading their inputs from
/// the store's input area: refused, before anything starts, when an input
/// is missing there or (when the store's copies are read) does not hash to
/// its name. `local` is where this machine found those same inputs
/// (`run`: the files the experiment names, whose hashes the material
/// holds), read instead so that what a run records names them as the user
/// does. Progress goes to `progress`, with the experiment the launches
/// rebuild. `exec` gives how to execute (on `io`); the timeouts come from
/// the material. With `kept`, engines serve from one execution to the next
/// ([`exec::Kept`]).
pub fn execute(
    launches: &[LaunchMaterial],
    store: &Store,
    exec: &ExecOptions,
    io: &Io,
    local: Option<&ResolvedInputs>,
    kept: Option<&mut exec::Kept>,
    progress: &mut dyn FnMut(&Spec, &ExecEvent),
) -> Result<Realised, Error> {
    execute_started_as(launches, store, exec, io, local, kept, &|r| r, progress)
}

/// [`execute`], each engine started as `started_as` says for the runtime
/// the material names (the keys stay the material's).
#[allow(clippy::too_many_arguments)]
fn execute_started_as(
    launches: &[LaunchMaterial],
    store: &Store,
    exec: &ExecOptions,
    io: &Io,
    local: Option<&ResolvedInputs>,
    kept: Option<&mut exec::Kept>,
    started_as: &dyn Fn(Runtime) -> Runtime,
    progress: &mut dyn FnMut(&Spec, &ExecEvent),
) -> Result<Realised, Error> {
    for launch in launches {
        for input in launch.inputs() {
            check_input(store, launch, input, local.is_none())?;
        }
    }
    let input_dir = store.input_path("");
    let rebuilt = launch::rebuild(launches, &input_dir).map_err(Error::Material)?;
    let first = &launches[0];
    let index = store
        .index(rebuilt.runs.iter().map(|r| (&r.key, r.canonical.as_str())))
        .map_err(Error::Store)?;
    let plan = plan::build(
        rebuilt.runs,
        &index,
        PlanOptions {
            runtime: started_as(rebuilt.runtime),
            samples: first.samples as usize,
            retry_failed: first.retry_failed,
        },
    );
    let options = ExecOptions {
        // Each engine's own, as the material records it.
        startup_timeout: None,
        stall_timeout: std::time::Duration::from_secs(first.timeouts.stall_s),
        ..exec.clone()
    };
    let summary = exec::execute(
        &rebuilt.spec,
        local.unwrap_or(&rebuilt.inputs),
        &plan,
        store,
        &options,
        io,
        kept,
        &mut |event| progress(&rebuilt.spec, &event),
    )?;
    Ok(Realised { summary, plan })
}

/// Refuses an input of `launch` the store lacks; with `rehash` (its copy is
/// what the launch reads), one that does not hash to the sha256 it is named by.
fn check_input(
    store: &Store,
    launch: &LaunchMaterial,
    input: launch::InputRef,
    rehash: bool,
) -> Result<(), Error> {
    let path = store.input_path(&input.sha256);
    if !path.is_file() {
        return Err(Error::MissingInput {
            what: input.what,
            sha256: input.sha256,
            launch: launch.key().to_string(),
            path: path.display().to_string(),
        });
    }
    if !rehash {
        return Ok(());
    }
    match store.check_input(&input.sha256).map_err(Error::Store)? {
        None => Ok(()),
        Some(damage) => Err(Error::CorruptInput {
            what: input.what,
            actual: match damage {
                crate::store::Damage::InputMismatch(actual) => actual,
                other => other.to_string(),
            },
            sha256: input.sha256,
            launch: launch.key().to_string(),
            path: path.display().to_string(),
        }),
    }
}

/// Records the material of every run of the experiment's lockfile, under
/// each of `runtimes` (one sample, the default timeouts): what `run
/// --lockfile` of that lockfile executes once the experiment has moved on.
pub fn record_lockfile_runs(loaded: &Loaded, runtimes: &[Runtime]) -> Result<(), Error> {
    let options = LaunchOptions {
        fresh_engine: false,
        startup_timeout: None,
        stall_timeout: std::time::Duration::from_secs(crate::harness::DEFAULT_STALL_TIMEOUT_SECS),
    };
    for &runtime in runtimes {
        let runs = crate::key::keyed_runs(&loaded.uncapped, runtime, &loaded.inputs);
        let plan = plan::build(
            runs,
            &<StoreIndex>::default(),
            PlanOptions {
                runtime,
                samples: 1,
                retry_failed: false,
            },
        );
        write_launches(
            &loaded.uncapped,
            &plan,
            &loaded.inputs,
            &options,
            &loaded.store,
        )?;
    }
    Ok(())
}

/// The launches the store recorded that run `keys`, as few as cover them
/// (each read and checked as `realise` reads it); and the keys no recorded
/// launch runs.
pub fn recorded(
    store: &Store,
    keys: &BTreeSet<RunKey>,
) -> Result<(Vec<LaunchMaterial>, BTreeSet<RunKey>), Error> {
    let mut candidates: Vec<LaunchMaterial> = Vec::new();
    for (key, _) in store.launches().map_err(Error::Store)? {
        // Damaged or foreign material is no record.
        if let Ok(material) = read(key.as_str(), store)
            && material.launch.runs.iter().any(|r| keys.contains(&r.key))
        {
            candidates.push(material.launch);
        }
    }
    let mut left = keys.clone();
    let mut chosen = Vec::new();
    loop {
        let covers = |m: &LaunchMaterial| m.runs.iter().filter(|r| left.contains(&r.key)).count();
        let Some(best) = candidates
            .iter()
            .enumerate()
            .max_by_key(|(i, m)| (covers(m), std::cmp::Reverse(*i)))
            .filter(|(_, m)| covers(m) > 0)
            .map(|(i, _)| i)
        else {
            break;
        };
        let launch = candidates.remove(best);
        for run in &launch.runs {
            left.remove(&run.key);
        }
        chosen.push(launch);
    }
    Ok((chosen, left))
}
