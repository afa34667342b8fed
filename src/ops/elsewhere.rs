//! Which runtimes the store holds an experiment's results under: `report`
//! reports the one it holds, and `plan` and `explain`, which plan the
//! default runtime without `--runtime`, say when that one has nothing stored
//! while another has (`run --runtime sim` stored them).

use super::{Loaded, Selection, Shell};
use crate::facts::Runtime;
use crate::key::RunKey;
use crate::plural::count;

/// The keys of `loaded`'s runs under `runtime`. Those of another runtime
/// than the loaded one come from a current lockfile (uncapped runs only)
/// rather than hashing every run again.
pub fn keys_under(loaded: &Loaded, selection: &Selection, runtime: Runtime) -> Vec<RunKey> {
    let lockfile = match &loaded.lock.old {
        Some(old) if loaded.lock.is_current() && selection.max_prompts.is_none() => Some(old),
        _ => None,
    };
    if runtime == loaded.runtime {
        loaded.runs.iter().map(|r| r.key.clone()).collect()
    } else if let Some(old) = lockfile {
        old.runs
            .iter()
            .filter_map(|r| r.key(runtime).cloned())
            .collect()
    } else {
        crate::key::keyed_runs(&loaded.spec, runtime, &loaded.inputs)
            .into_iter()
            .map(|r| r.key)
            .collect()
    }
}

/// How many of `loaded`'s runs the store holds under each runtime that has
/// some (a presence test per key).
pub fn stored_runs(loaded: &Loaded, selection: &Selection) -> Vec<(Runtime, usize)> {
    [Runtime::Docker, Runtime::Local, Runtime::Sim]
        .into_iter()
        .map(|runtime| {
            let keys = keys_under(loaded, selection, runtime);
            let stored = keys.iter().filter(|k| loaded.store.has_samples(k)).count();
            (runtime, stored)
        })
        .filter(|(_, stored)| *stored > 0)
        .collect()
}

/// Without `--runtime`, when the store holds nothing of `loaded`'s runtime
/// but runs of the experiment under another, says so and how to see them
/// with `command` (`plan`, `explain`).
pub fn say_if_elsewhere(loaded: &Loaded, selection: &Selection, command: &str, shell: &dyn Shell) {
    if selection.runtime.is_some() || loaded.runs.iter().any(|r| loaded.store.has_samples(&r.key)) {
        return;
    }
    for (runtime, stored) in stored_runs(loaded, selection) {
        say!(
            shell,
            "perfpipe: the store holds no run of this experiment under runtime `{}`, but {} under `{}`\n  help: `perfpipe {command} {} --runtime {}` shows those",
            loaded.runtime.name(),
            count(stored, "run", "runs"),
            runtime.name(),
            selection.experiment.display(),
            runtime.name()
        );
    }
}
