//! The command line: parses arguments, calls each stage, prints, and maps
//! errors to exit codes (the only place that happens).

// First: its `out!`/`outln!` macros are for every module below.
#[macro_use]
mod output;

mod args;
mod bench;
mod cache;
mod completions;
mod diff;
mod error;
mod examples;
mod explain;
mod fetch;
mod import;
mod init;
mod lock;
mod lockfile;
mod man;
mod plan;
mod project;
mod report;
mod roots;
mod run;
mod store_gc;
mod store_path;
mod store_verify;
mod verify;

use std::path::Path;

use clap::Parser;

pub use args::Cli;
use args::{Command, Common, RuntimeArg, StoreCommand};
pub use error::CliError;

use crate::exit_code;
use crate::inputs::{self, ResolvedInputs};
use crate::spec::{self, Runtime, SourceFile, Spec};
use crate::store::Store;
use lockfile::{LockMode, LockState};

/// Runs perfpipe with the process's arguments; returns the exit code.
pub fn main() -> u8 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                exit_code::USAGE
            } else {
                exit_code::OK
            };
        }
    };
    raise_open_file_limit();
    if !matches!(cli.command, Command::SimEngine { .. })
        && let Err(e) = crate::secrets::check_env()
    {
        let err = CliError::Secret(e);
        eprintln!("{:?}", miette::Report::new(err));
        return exit_code::USAGE;
    }
    let mut command = cli.command;
    if let Err(err) = project::enter(&mut command) {
        let code = err.exit_code();
        eprintln!("{:?}", miette::Report::new(err));
        return code;
    }
    let result = match command {
        Command::Run(args) => run::run(&args),
        Command::Plan(args) => plan::plan(&args),
        Command::Report(args) => report::report(&args),
        Command::Verify(args) => verify::verify(&args),
        Command::Bench(args) => bench::bench(&args),
        Command::Import(args) => import::import(&args),
        Command::Init(args) => init::init(&args),
        Command::Lock(args) => lock::lock(&args),
        Command::Diff(args) => diff::diff(&args),
        Command::Explain(args) => explain::explain(&args),
        Command::Fetch(args) => fetch::fetch(&args),
        Command::Completions(args) => completions::completions(&args),
        Command::Man(args) => man::man(&args),
        Command::Cache(args) => cache::cache(&args),
        Command::Store(args) => match args.command {
            StoreCommand::Verify(args) => store_verify::verify(&args),
            StoreCommand::Gc(args) => store_gc::gc(&args),
            StoreCommand::Path(args) => store_path::path(&args),
        },
        Command::SimEngine { argv } => return crate::engine::sim::main(&argv).clamp(0, 255) as u8,
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            let code = err.exit_code();
            eprintln!("{:?}", miette::Report::new(err));
            code
        }
    }
}

/// The checks of `bench`'s and `run`'s values that come before anything is
/// read, contacted or measured, as far as they need no file: the fuzzing of
/// command lines (`src/fuzz/cli.rs`) drives them.
#[cfg(test)]
pub(crate) fn check_values(cli: &Cli) -> Result<(), CliError> {
    let now = tokio::time::Instant::now();
    match &cli.command {
        Command::Bench(args) => {
            let checked = bench::check(args)?;
            // Values the bounds let through always have a schedule.
            if let Err(e) = crate::harness::arrivals::delays(
                args.num_prompts as usize,
                checked.rate,
                crate::spec::Arrival::Poisson,
                args.burstiness,
                args.seed,
            ) {
                panic!("the bounds let through a load with no schedule: {e}");
            }
            crate::clock::deadline(now, std::time::Duration::from_secs(args.stall_timeout));
        }
        Command::Run(args) => {
            let options = run::exec_options(args)?;
            crate::clock::deadline(now, options.stall_timeout);
            if let Some(startup) = options.startup_timeout {
                crate::clock::deadline(now, startup);
            }
        }
        _ => {}
    }
    Ok(())
}

/// What every command loads first.
struct Loaded {
    /// The experiment as it runs: pinned images and model commits applied,
    /// workloads capped by `--max-prompts`.
    spec: Spec,
    runtime: Runtime,
    /// Every run of `spec` with its key under `runtime`.
    runs: Vec<crate::plan::KeyedRun>,
    inputs: ResolvedInputs,
    store: Store,
    lock: LockState,
}

/// Parses the experiment, resolves it against its lockfile as `mode`
/// allows, and finds its files. Writes nothing but the store's cache of
/// input hashes.
fn load(common: &Common, mode: LockMode) -> Result<Loaded, CliError> {
    let path = &common.experiment;
    let text = fs_err::read_to_string(path).map_err(|source| CliError::ReadExperiment {
        path: path.display().to_string(),
        source,
    })?;
    let source = SourceFile {
        name: path.display().to_string(),
        text,
    };
    let declared = spec::parse(&source).map_err(|e| CliError::Spec(Box::new(e)))?;
    let lock_path = lockfile::lockfile_path(common);
    let (old, legacy) = match lockfile::read(&lock_path)? {
        Some(old) => (Some(old), None),
        None => match lockfile::read_legacy(common, &declared.name)? {
            Some((path, old)) => (Some(old), Some(path)),
            None => (None, None),
        },
    };
    let runtime = runtime_of(common.runtime)
        .or(declared.runtime)
        .unwrap_or(Runtime::Docker);
    let (policy, resolver) = lockfile::pin_policy(&mode, runtime);
    let (pins, problems) = crate::lock::resolve_pins(
        &crate::lock::pin_requests(&declared),
        old.as_ref(),
        &policy,
        resolver.as_deref(),
    );
    let mut spec = crate::lock::apply_pins(&declared, &pins);
    let store = Store::open(&common.store).map_err(CliError::Store)?;
    // What is written into a lockfile is read from the files themselves.
    let rehash = matches!(
        mode,
        LockMode::Lock { .. } | LockMode::Run { locked: true, .. }
    );
    let mut hashes = inputs::HashCache::open(store.hash_cache_path(), !rehash);
    let inputs = inputs::resolve(&spec, Path::new(""), &mut hashes).map_err(|e| match e {
        inputs::Error::Dataset { .. } => CliError::Dataset(e),
        inputs::Error::NotAFile { .. } => CliError::NotAFile(e),
        e => CliError::Inputs(e),
    })?;
    hashes.save();
    let declared_runs = crate::plan::keyed_runs(&spec, runtime, &inputs);
    // A lockfile nothing writes is only compared: its runs need the keys of
    // this runtime, not of every runtime.
    let keyed_for = matches!(mode, LockMode::Read).then_some(runtime);
    let runtimes = keyed_for.map_or(crate::lock::RUNTIMES.to_vec(), |rt| vec![rt]);
    let new = crate::lock::build_with_keys(
        &declared,
        &spec,
        pins.clone(),
        &inputs,
        &runtimes,
        Some((runtime, &declared_runs)),
    );
    let comparable = old.as_ref().map(|old| match keyed_for {
        Some(runtime) => std::borrow::Cow::Owned(old.keyed_for(runtime)),
        None => std::borrow::Cow::Borrowed(old),
    });
    let only_tokenizers_differ = match (&old, &comparable) {
        (Some(old), Some(comparable)) if **comparable != new => {
            crate::lock::build_with_keys(
                &declared,
                &spec,
                pins,
                &tokenizers_of(old, &declared, &spec, &inputs),
                &runtimes,
                None,
            ) == **comparable
        }
        _ => false,
    };
    // A capped workload is another workload with keys of its own; the
    // lockfile keeps the declared ones.
    let runs = match common.max_prompts {
        Some(cap) => {
            for workload in &mut spec.workloads {
                workload.prompts = workload.prompts.min(cap);
            }
            crate::plan::keyed_runs(&spec, runtime, &inputs)
        }
        None => declared_runs,
    };
    refuse_secrets(&runs, &new)?;
    Ok(Loaded {
        spec,
        runtime,
        runs,
        inputs,
        store,
        lock: LockState {
            path: lock_path,
            old,
            new,
            problems,
            only_tokenizers_differ,
            legacy,
            keyed_for,
        },
    })
}

/// Key material is stored, and a lockfile written, as is (rewriting either
/// would change a key): one holding a secret's value is refused before
/// anything is written or run.
fn refuse_secrets(
    runs: &[crate::plan::KeyedRun],
    lock: &crate::lock::Lockfile,
) -> Result<(), CliError> {
    let secrets = crate::secrets::env();
    for run in runs {
        let what = format!("the key material of `{}` × `{}`", run.step, run.workload);
        secrets
            .refuse_in(&what, &run.canonical)
            .map_err(CliError::Secret)?;
    }
    secrets
        .refuse_in("the lockfile", &crate::lock::render(lock))
        .map_err(CliError::Secret)
}

/// `inputs` with each model's tokenizer as `old` pins it, as a machine that
/// has those tokenizers would resolve them.
fn tokenizers_of(
    old: &crate::lock::Lockfile,
    declared: &Spec,
    pinned: &Spec,
    inputs: &ResolvedInputs,
) -> ResolvedInputs {
    let mut as_pinned = inputs.clone();
    for (step, pinned_step) in declared.steps.iter().zip(&pinned.steps) {
        let id = old
            .input(&crate::lock::names::tokenizer(&step.model))
            .and_then(|i| i.locked.as_ref())
            .and_then(|l| l.get("id"));
        if let Some(id) = id {
            as_pinned.tokenizers.insert(
                (
                    pinned_step.model.id.clone(),
                    pinned_step.model.revision.clone(),
                ),
                inputs::ResolvedTokenizer {
                    id: id.clone(),
                    path: None,
                },
            );
        }
    }
    as_pinned
}

/// The runtime `--runtime` names, if it names one.
fn runtime_of(arg: Option<RuntimeArg>) -> Option<Runtime> {
    arg.map(|arg| match arg {
        RuntimeArg::Docker => Runtime::Docker,
        RuntimeArg::Local => Runtime::Local,
        RuntimeArg::Sim => Runtime::Sim,
    })
}

/// Says which workloads measure the shipped sample instead of the declared dataset.
fn sample_notes(loaded: &Loaded) -> Vec<String> {
    loaded
        .inputs
        .datasets
        .iter()
        .filter(|(_, d)| d.is_sample)
        .map(|(workload, d)| {
            format!(
                "note: workload `{workload}` uses the sample dataset `{}` (the declared file is absent)",
                d.path.display()
            )
        })
        .collect()
}

/// A recorded engine launch, for messages: "`docker` (pid 42, container `perfpipe-…`)".
fn describe_launch(launch: &crate::engine::leftovers::Launch) -> String {
    let container = launch
        .container
        .as_ref()
        .map(|c| format!(", container `{c}`"))
        .unwrap_or_default();
    format!("`{}` (pid {}{container})", launch.program, launch.pid)
}

/// 1000 requests in flight need more sockets than the usual soft limit of 1024.
fn raise_open_file_limit() {
    // SAFETY: get/setrlimit on our own process with a valid struct.
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Fails, before anything is measured, where [`write_file`] would fail to
/// write `path` afterwards: a directory in its place, a parent that cannot be
/// made or written. Creates the parent, as the write would.
fn check_writable(path: &Path) -> Result<(), CliError> {
    if path.is_dir() {
        return Err(CliError::Write {
            path: path.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory"),
        });
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    check_writable_dir(dir).map_err(|e| match e {
        CliError::Write { source, .. } => CliError::Write {
            path: path.display().to_string(),
            source,
        },
        other => other,
    })
}

/// Fails where a file cannot be written into `dir` (made if missing).
fn check_writable_dir(dir: &Path) -> Result<(), CliError> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let io = |source| CliError::Write {
        path: dir.display().to_string(),
        source,
    };
    fs_err::create_dir_all(dir).map_err(io)?;
    // The probe is removed when dropped.
    tempfile::Builder::new()
        .prefix(".perfpipe-probe-")
        .tempfile_in(dir)
        .map_err(io)?;
    Ok(())
}

/// Writes a whole text file (reports), creating its directory.
fn write_text(path: &Path, text: &str) -> Result<(), CliError> {
    write_file(path, text.as_bytes())
}

/// Writes a whole file the user asked for (a report, a chart, a lockfile),
/// creating its directory. The file is replaced by one rename, so a perfpipe
/// killed meanwhile leaves the old file or the new one, never half of one.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let io = |source| CliError::Write {
        path: path.display().to_string(),
        source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir).map_err(io)?;
    remove_dead_temp_files(dir);
    let mut file = tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.as_file().sync_all().map_err(io)?;
    file.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// Temp files of [`write_file`]: `.perfpipe-<pid>-<random>` beside the file.
const TEMP_PREFIX: &str = ".perfpipe-";

/// Removes the temp files that killed perfpipes left in `dir` (their pid is
/// gone), so that none lingers beside a lockfile in `git status`. A reused
/// pid only keeps one longer; a live writer's file is never touched.
fn remove_dead_temp_files(dir: &Path) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let gone = pid > 0
            && unsafe { libc::kill(pid, 0) } == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = fs_err::remove_file(entry.path());
        }
    }
}
