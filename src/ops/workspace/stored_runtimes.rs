//! Which runtimes the store holds an experiment's results under, written
//! once: `report` reports the one it holds ([`stored_runtime`](crate::ops::workspace::stored_runtimes::stored_runtime): measured
//! runtimes before the simulation), and `plan` and `explain`, which plan
//! the default runtime without `--runtime`, say when that one has nothing
//! stored while another has (`run --runtime sim` stored them).

use crate::facts::Runtime;
use crate::key::RunKey;
use crate::ops::{Loaded, Selection, Shell};
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

/// What the store's results say about the runtime to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredRuntime {
    /// The one runtime to report (measured if any has results, else `sim`).
    One(Runtime),
    /// Results under both measured runtimes: the user must choose.
    Ambiguous(Vec<Runtime>),
    /// No result under any runtime.
    None,
}

/// `with_results`: the runtimes under which the store holds a result of
/// some run of the experiment.
pub fn stored_runtime(with_results: &[Runtime]) -> StoredRuntime {
    let measured: Vec<Runtime> = [Runtime::Docker, Runtime::Local]
        .into_iter()
        .filter(|r| with_results.contains(r))
        .collect();
    match measured[..] {
        [one] => StoredRuntime::One(one),
        [] if with_results.contains(&Runtime::Sim) => StoredRuntime::One(Runtime::Sim),
        [] => StoredRuntime::None,
        _ => StoredRuntime::Ambiguous(measured),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Runtime::{Docker, Local, Sim};

    #[test]
    fn measured_results_come_before_simulated_and_two_measured_runtimes_are_ambiguous() {
        assert_eq!(stored_runtime(&[Sim]), StoredRuntime::One(Sim));
        assert_eq!(stored_runtime(&[Sim, Local]), StoredRuntime::One(Local));
        assert_eq!(stored_runtime(&[Docker, Sim]), StoredRuntime::One(Docker));
        assert_eq!(
            stored_runtime(&[Docker, Local, Sim]),
            StoredRuntime::Ambiguous(vec![Docker, Local])
        );
        assert_eq!(stored_runtime(&[]), StoredRuntime::None);
    }
}
