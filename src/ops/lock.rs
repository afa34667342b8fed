//! `perfpipe lock`: pin every input and write the lockfile.

use std::collections::BTreeSet;

use super::workspace::lockfile::{self, LockMode, LockState, Network};
use super::{Error, Selection, Shell, load};
use crate::lock::Update;
use crate::tokio_runtime::Io;

/// Pins the inputs of `selection`'s experiment (re-resolving what `update`
/// names; asking no network when `offline`, else over `io`) and writes its lockfile when it
/// changed. Returns the lockfile as settled, with the pins that failed.
pub fn lock(
    selection: &Selection,
    offline: bool,
    update: Update,
    io: &Io,
    shell: &dyn Shell,
) -> Result<LockState, Error> {
    if let Update::Only(names) = &update {
        check_names(selection, names)?;
    }
    let update_asked = update != Update::Nothing;
    let loaded = load(
        selection,
        LockMode::Lock {
            network: Network::new(offline, io),
            update,
        },
    )?;
    let state = &loaded.lock;
    match &state.old {
        Some(_) if state.is_current() && state.legacy.is_some() => {
            lockfile::move_legacy(state, shell)?
        }
        Some(_) if state.is_current() && state.problems.is_empty() => {
            say!(shell, "perfpipe: `{}` is up to date", state.path.display());
        }
        // Nothing new was resolved: the file stays as it was, and is not
        // up to date while a pin it should hold could not be resolved.
        Some(_) if state.is_current() => {
            say!(shell, "perfpipe: `{}` unchanged", state.path.display());
        }
        Some(old) => {
            lockfile::write(state)?;
            say!(shell, "perfpipe: updated `{}`:", state.path.display());
            for line in lockfile::change_lines(old, &state.new) {
                say!(shell, "{line}");
            }
        }
        None => {
            lockfile::write(state)?;
            say!(shell, "perfpipe: wrote `{}`", state.path.display());
        }
    }
    lockfile::report_problems(state, shell);
    say!(shell, "perfpipe: {}", lockfile::pin_summary(&state.new));
    let env = crate::lock::names::HARNESS_ENV;
    if state.new.unpinned().any(|i| i.name == env) {
        say!(
            shell,
            "perfpipe: {env} is pinned where the benchmark client is installed: `perfpipe fetch {}` installs it and records it",
            selection.experiment.display()
        );
    }
    if offline && update_asked {
        say!(
            shell,
            "perfpipe: offline, so `--update` refreshed no pin: the lockfile keeps those it had"
        );
    }
    if offline && state.new.unpinned().any(|i| i.name != env) {
        say!(
            shell,
            "perfpipe: offline, so images and model revisions not pinned before stay unpinned; \
             `perfpipe lock {}` pins them where the registry and the Hub are reachable",
            selection.experiment.display()
        );
    }
    // How to run each run the lockfile pins, for when the experiment has
    // moved on (`run --lockfile` of a copy of it).
    super::realise::record_lockfile_runs(&loaded, &crate::lock::RUNTIMES)?;
    Ok(loaded.lock)
}

/// `--update NAME` must name an input of the experiment.
fn check_names(selection: &Selection, names: &BTreeSet<String>) -> Result<(), Error> {
    let offline = load(selection, LockMode::Read)?;
    let known: Vec<&str> = offline
        .lock
        .new
        .inputs
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    match names.iter().find(|n| !known.contains(&n.as_str())) {
        None => Ok(()),
        Some(unknown) => Err(Error::Usage {
            message: format!("the experiment has no input `{unknown}`"),
            hint: format!("its inputs: {}", known.join(", ")),
        }),
    }
}
