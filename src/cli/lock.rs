//! `perfpipe lock`: pin every input and write the lockfile.

use std::collections::BTreeSet;

use super::args::LockArgs;
use super::lockfile::{self, LockMode};
use super::{CliError, load};
use crate::exit_code;
use crate::lock::Update;

pub fn lock(args: &LockArgs) -> Result<u8, CliError> {
    let update = match &args.update {
        None => Update::Nothing,
        Some(names) if names.is_empty() => Update::All,
        Some(names) => Update::Only(names.iter().cloned().collect()),
    };
    if let Update::Only(names) = &update {
        check_names(args, names)?;
    }
    let loaded = load(
        &args.common(),
        LockMode::Lock {
            offline: args.offline,
            update,
        },
    )?;
    let state = &loaded.lock;
    match &state.old {
        Some(_) if state.is_current() && state.legacy.is_some() => lockfile::move_legacy(state)?,
        Some(_) if state.is_current() && state.problems.is_empty() => {
            eprintln!("perfpipe: `{}` is up to date", state.path.display());
        }
        // Nothing new was resolved: the file stays as it was, and is not
        // up to date while a pin it should hold could not be resolved.
        Some(_) if state.is_current() => {
            eprintln!("perfpipe: `{}` unchanged", state.path.display());
        }
        Some(old) => {
            lockfile::write(state)?;
            eprintln!("perfpipe: updated `{}`:", state.path.display());
            for line in lockfile::change_lines(old, &state.new) {
                eprintln!("{line}");
            }
        }
        None => {
            lockfile::write(state)?;
            eprintln!("perfpipe: wrote `{}`", state.path.display());
        }
    }
    lockfile::report_problems(state);
    eprintln!("perfpipe: {}", lockfile::pin_summary(&state.new));
    if args.offline && state.new.unpinned().next().is_some() {
        eprintln!(
            "perfpipe: offline, so images and model revisions not pinned before stay unpinned; \
             `perfpipe lock {}` pins them where the registry and the Hub are reachable",
            args.experiment.experiment.display()
        );
    }
    Ok(if state.problems.is_empty() {
        exit_code::OK
    } else {
        exit_code::RUNS_FAILED
    })
}

/// `--update NAME` must name an input of the experiment.
fn check_names(args: &LockArgs, names: &BTreeSet<String>) -> Result<(), CliError> {
    let offline = load(&args.common(), LockMode::Read)?;
    let known: Vec<&str> = offline
        .lock
        .new
        .inputs
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    match names.iter().find(|n| !known.contains(&n.as_str())) {
        None => Ok(()),
        Some(unknown) => Err(CliError::Usage {
            message: format!("the experiment has no input `{unknown}`"),
            hint: format!("its inputs: {}", known.join(", ")),
        }),
    }
}
