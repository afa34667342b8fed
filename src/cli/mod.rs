//! The command line: parses arguments, calls each stage, prints, and maps
//! errors to exit codes (the only place that happens).

// First: its `out!`/`outln!`/`eoutln!` macros are for every module below
// (and, through `lib.rs`, for the library's few writers to stderr).
#[macro_use]
pub(crate) mod output;

mod args;
mod bench;
mod bench_options;
mod cache;
mod completions;
mod diff;
mod error_report;
mod examples;
mod explain;
mod fetch;
mod import;
mod init;
mod lock;
mod man;
mod plan;
mod progress;
mod project;
mod realise;
mod report;
mod run;
mod slo_search;
mod store_gc;
mod store_path;
mod store_verify;
mod verify;

use clap::Parser;

use crate::ops::Error;
pub use args::Cli;
use args::{Command, RuntimeArg, StoreCommand};

use crate::error_kind::ErrorKind;
use crate::exit_code;
use crate::facts::Runtime;
use crate::ops::user_files::write_file;
use crate::ops::workspace::load::input_notes;
use crate::ops::workspace::lockfile;
use crate::ops::{Loaded, Stderr};
use crate::tokio_runtime::Io;

/// Runs perfpipe with the process's arguments; returns the exit code.
pub fn main() -> u8 {
    error_report::install();
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
        let err = Error::Secret(e);
        let code = exit_code_of(&err);
        eoutln!("{:?}", miette::Report::new(err));
        return code;
    }
    let mut command = cli.command;
    if let Err(err) = project::enter(&mut command) {
        let code = exit_code_of(&err);
        eoutln!("{:?}", miette::Report::new(err));
        return code;
    }
    // The process's one runtime, passed to the commands that ask the
    // network, run engines or measure; it starts on their first ask.
    let io = Io::new();
    let result = match command {
        Command::Run(args) => run::run(&args, &io),
        Command::Plan(args) => plan::plan(&args, &io),
        Command::Report(args) => report::report(&args),
        Command::Verify(args) => verify::verify(&args),
        Command::Bench(args) => bench::bench(&args, &io),
        Command::Import(args) => import::import(&args),
        Command::Realise(args) => realise::realise(&args, &io),
        Command::Init(args) => init::init(&args),
        Command::Lock(args) => lock::lock(&args, &io),
        Command::Diff(args) => diff::diff(&args),
        Command::Explain(args) => explain::explain(&args),
        Command::Fetch(args) => fetch::fetch(&args, &io),
        Command::Completions(args) => completions::completions(&args),
        Command::Man(args) => man::man(&args),
        Command::Cache(args) => cache::cache(&args, &io),
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
            let code = exit_code_of(&err);
            eoutln!("{:?}", miette::Report::new(err));
            code
        }
    }
}

/// Leaves a command's large values unfreed once it has printed them: the
/// process exits right after and its memory goes back whole, where freeing
/// 10,000 runs' allocations one by one took a tenth of a `plan`. Only for
/// values whose drop frees memory and does nothing else (no lock, temp dir
/// or file to flush).
fn left_to_exit<T>(value: T) {
    std::mem::forget(value);
}

/// [`left_to_exit`] of an experiment's parts, all but its store (whose drop
/// removes this process's temp dir).
fn left_to_exit_loaded(loaded: Loaded) {
    let Loaded {
        declared,
        spec,
        uncapped,
        runs,
        lock,
        searches,
        store,
        inputs,
        runtime: _,
    } = loaded;
    left_to_exit((declared, spec, uncapped, runs, lock, searches));
    drop((store, inputs));
}

/// The exit code a command that fails with `err` ends with: the one place
/// a kind of failure becomes a number (`src/exit_code.rs`).
pub(crate) fn exit_code_of(err: &Error) -> u8 {
    match err.kind() {
        ErrorKind::Usage => exit_code::USAGE,
        ErrorKind::Environment => exit_code::RUNS_FAILED,
        ErrorKind::LockStale => exit_code::LOCK_STALE,
        ErrorKind::Interrupted => exit_code::INTERRUPTED,
        ErrorKind::Internal => exit_code::INTERNAL,
    }
}

/// The checks of `bench`'s and `run`'s values that come before anything is
/// read, contacted or measured, as far as they need no file: the fuzzing of
/// command lines (`src/fuzz/cli.rs`) drives them.
#[cfg(test)]
pub(crate) fn check_values(cli: &Cli) -> Result<(), Error> {
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

/// The runtime `--runtime` names, if it names one.
fn runtime_of(arg: Option<RuntimeArg>) -> Option<Runtime> {
    arg.map(|arg| match arg {
        RuntimeArg::Docker => Runtime::Docker,
        RuntimeArg::Local => Runtime::Local,
        RuntimeArg::Sim => Runtime::Sim,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_failure_ends_with_the_exit_code_the_docs_list() {
        let usage = Error::Usage {
            message: "m".into(),
            hint: "h".into(),
        };
        let stale = Error::LockStale {
            message: "m".into(),
            hint: "h".into(),
        };
        let server = Error::Server {
            message: "m".into(),
        };
        let bug = Error::Runtime {
            source: std::io::Error::other("no threads"),
        };
        let no_target = Error::Cache(crate::cache::Error::NoPushTarget);
        let codes = [usage, server, stale, Error::Interrupted, bug, no_target]
            .iter()
            .map(exit_code_of)
            .collect::<Vec<_>>();
        assert_eq!(codes, [2, 1, 3, 130, 101, 2]);
    }
}
