//! `run --lockfile OLD.lock`, where the experiment has moved on since
//! OLD.lock was written: the runs OLD.lock pins, executed from the launch
//! material the store recorded for them, without the old experiment file
//! (the "before" side of a `diff`). OLD.lock is left as it is.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::RunOptions;
use crate::exec::{ExecEvent, ExecSummary};
use crate::key::RunKey;
use crate::launch::LaunchOptions;
use crate::ops::{Error, LockMode, Shell, load, realise};
use crate::plural::count;
use crate::spec::Spec;

/// What running an older lockfile did.
#[derive(Debug)]
pub struct RanOlder {
    pub lockfile: PathBuf,
    pub summary: ExecSummary,
    /// Its runs already in the store.
    pub stored: usize,
}

/// Whether `options` name, with `--lockfile`, a lockfile of this experiment
/// that it no longer matches; if so, executes that lockfile's runs without
/// results from their recorded material. `None`: a `run` as usual (the
/// default lockfile, a current one, a missing one, or `--locked`, which
/// refuses a stale lockfile).
pub fn run_older(
    options: &RunOptions,
    shell: &dyn Shell,
    progress: &mut dyn FnMut(&Spec, &ExecEvent),
) -> Result<Option<RanOlder>, Error> {
    let selection = &options.selection;
    if selection.lockfile.is_none() || options.locked {
        return Ok(None);
    }
    let loaded = load(selection, LockMode::Read)?;
    let state = &loaded.lock;
    let Some(old) = &state.old else {
        return Ok(None);
    };
    if state.is_current() || state.only_tokenizers_differ || old.experiment != loaded.spec.name {
        return Ok(None);
    }
    let path = state.path.display().to_string();
    if let Some(cap) = selection.max_prompts {
        return Err(Error::Usage {
            message: format!(
                "`--max-prompts {cap}` with `{path}`, which the experiment no longer matches"
            ),
            hint: format!(
                "the runs of an older lockfile run as it pins them: leave out `--max-prompts`, or `perfpipe lock {}` to update the lockfile",
                selection.experiment.display()
            ),
        });
    }
    let runtime = loaded.runtime;
    let keys: Vec<&RunKey> = old.runs.iter().filter_map(|r| r.key(runtime)).collect();
    let present = loaded.store.presence();
    let missing: BTreeSet<RunKey> = keys
        .iter()
        .filter(|k| !present.has_samples(k))
        .map(|k| (*k).clone())
        .collect();
    let stored = keys.len() - missing.len();
    let (launches, unrecorded) = realise::recorded(&loaded.store, &missing)?;
    if !unrecorded.is_empty() {
        let runs: Vec<String> = old
            .runs
            .iter()
            .filter(|r| r.key(runtime).is_some_and(|k| unrecorded.contains(k)))
            .map(|r| format!("`{}` × `{}`", r.step, r.workload))
            .collect();
        return Err(Error::Usage {
            message: format!(
                "`{}` has changed since `{path}` was written, and the store holds no launch material for {} of its runs: {}",
                selection.experiment.display(),
                runs.len(),
                runs.join(", ")
            ),
            hint: format!(
                "restore the experiment as it was then (e.g. from version control) and run `perfpipe run {} --lockfile {path} --locked --runtime {}`",
                selection.experiment.display(),
                runtime.name()
            ),
        });
    }
    say!(
        shell,
        "perfpipe: `{}` has changed since `{path}` was written: running the {} of `{path}` without results ({} in the store) from their recorded launch material, under runtime `{}`; `{path}` is left as it is",
        selection.experiment.display(),
        count(missing.len(), "run", "runs"),
        stored,
        runtime.name()
    );
    // Samples and timeouts are no key's material: this run's options hold.
    let asked = LaunchOptions {
        fresh_engine: false,
        startup_timeout: options.exec.startup_timeout,
        stall_timeout: options.exec.stall_timeout,
    };
    let launches: Vec<_> = launches
        .into_iter()
        .map(|l| l.with_run_options(selection.samples, selection.retry_failed, &asked))
        .collect();
    // Recorded as `run` records its launches: a node can realise them.
    for launch in &launches {
        loaded.store.put_launch(launch).map_err(Error::Store)?;
    }
    let mut summary = ExecSummary::default();
    for launch in &launches {
        let realised = realise::execute(
            std::slice::from_ref(launch),
            &loaded.store,
            &options.exec,
            &options.io,
            None,
            None,
            progress,
        )?;
        summary.succeeded += realised.summary.succeeded;
        summary.failed += realised.summary.failed;
        summary.unstored.extend(realised.summary.unstored);
    }
    Ok(Some(RanOlder {
        lockfile: state.path.clone(),
        summary,
        stored,
    }))
}

/// Whether `run --lockfile` of `lock` can run its runs without results under
/// `runtime` from the launch material the store recorded (`diff` suggests it then).
pub fn runnable_from_material(
    store: &crate::store::Store,
    lock: &crate::lock::Lockfile,
    runtime: crate::facts::Runtime,
) -> bool {
    let present = store.presence();
    let missing: BTreeSet<RunKey> = lock
        .runs
        .iter()
        .filter_map(|r| r.key(runtime))
        .filter(|k| !present.has_samples(k))
        .cloned()
        .collect();
    realise::recorded(store, &missing).is_ok_and(|(_, unrecorded)| unrecorded.is_empty())
}
