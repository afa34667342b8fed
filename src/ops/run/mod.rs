//! `perfpipe run`: settle the lockfile, fetch what the missing runs need,
//! execute them, and write the report.

pub mod older;

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::cache::Substitution;
use super::fetch::{Verbosity, fail_on, fetch_pinned, inputs_used};
use super::plan::plan_and_index;
use super::report::{analyze, scope, write_markdown};
use super::user_files::check_writable;
use super::workspace::load::input_notes;
use super::workspace::lockfile::{self, Network};
use super::{Error, Loaded, LockMode, Selection, Shell, load, realise};
use crate::exec::slurm::{self, JobEvent};
use crate::exec::{self, ExecEvent, ExecOptions, ExecSummary};
use crate::launch::{LaunchKey, LaunchOptions};
use crate::tokio_runtime::Io;
use older::{RanOlder, run_older};

use crate::facts::Runtime;
use crate::plan::{Plan, RunStatus};
use crate::plural::count;
use crate::spec::{ExpectedOutcome, Spec};
use crate::store::Store;

/// What `run` is asked to do.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub selection: Selection,
    /// Refuse a lockfile that is missing or out of date instead of writing it.
    pub locked: bool,
    /// Ask no network: pin nothing new, fetch nothing.
    pub offline: bool,
    /// Where the report goes; by default `reports/<experiment>.md`
    /// (`<experiment>.max-prompts-N.md` for a capped run).
    pub report: Option<PathBuf>,
    pub exec: ExecOptions,
    /// Which trusted caches to substitute missing runs from (docs/result-cache.md).
    pub substitution: Substitution,
    pub executor: Executor,
    /// The process's runtime, which asks caches and the network and runs engines.
    pub io: Io,
}

/// Where the launches run.
#[derive(Debug, Clone)]
pub enum Executor {
    /// On this machine.
    Local,
    /// One Slurm job each (`perfpipe realise` on a node).
    Slurm(Box<slurm::SlurmExec>),
}

/// What a run did.
#[derive(Debug)]
pub struct Ran {
    /// The markdown report, as written.
    pub report: String,
    pub report_path: PathBuf,
    pub summary: ExecSummary,
    /// The runs that failed where the experiment expects no failure.
    pub unexpected: Vec<UnexpectedFailure>,
    /// How many runs of this `run` failed as the experiment expects
    /// (`expect-failure`): of `summary.failed`, the ones that are no news.
    pub failed_as_expected: usize,
}

/// A run that failed where the experiment expects no failure.
#[derive(Debug)]
pub struct UnexpectedFailure {
    pub step: String,
    pub workload: String,
    /// Where its logs are, to read for why it failed.
    pub logs: String,
    /// Whether it failed in this `run` (else a stored failure of an earlier one).
    pub now: bool,
}

/// Attempts per run when its failure has a cause that may pass.
pub const ATTEMPTS: usize = 3;

/// How the executor runs where no option says otherwise (`realise`: the
/// material holds the timeouts).
pub fn exec_defaults() -> Result<ExecOptions, Error> {
    Ok(ExecOptions {
        sim_program: std::env::current_exe().map_err(|source| Error::Write {
            path: "current executable".into(),
            source,
        })?,
        startup_timeout: None,
        stall_timeout: std::time::Duration::from_secs(crate::harness::DEFAULT_STALL_TIMEOUT_SECS),
        attempts: ATTEMPTS,
        fresh_engine: false,
        jobs: 1,
        harness_env: None,
    })
}

/// What `run` did: the experiment's runs, or those of an older lockfile
/// it no longer matches (the "before" side of a diff).
#[derive(Debug)]
pub enum Done {
    Ran(Ran),
    Older(RanOlder),
}

/// `perfpipe run`: the runs of an older lockfile `options` name (see
/// [`run_older`]), else what is missing of `options.selection`, and its report.
/// Progress goes to `progress`, with the experiment as it runs; what
/// becomes of each Slurm job to `jobs`.
pub fn run(
    options: &RunOptions,
    shell: &dyn Shell,
    progress: &mut dyn FnMut(&Spec, &ExecEvent),
    jobs: &mut dyn FnMut(&LaunchKey, &JobEvent),
) -> Result<Done, Error> {
    let caches = super::cache::caches(&options.substitution, options.offline, &options.io, shell)?;
    if let Some(older) = run_older(options, shell, progress)? {
        return Ok(Done::Older(older));
    }
    run_experiment(options, caches.as_ref(), shell, progress, jobs).map(Done::Ran)
}

/// Executes what is missing of `options.selection`, substituting from
/// `caches` first, and writes its report.
fn run_experiment(
    options: &RunOptions,
    caches: Option<&crate::cache::Caches>,
    shell: &dyn Shell,
    progress: &mut dyn FnMut(&Spec, &ExecEvent),
    jobs: &mut dyn FnMut(&LaunchKey, &JobEvent),
) -> Result<Ran, Error> {
    let mode = LockMode::Run {
        locked: options.locked,
        network: Network::new(options.offline, &options.io),
    };
    let common = &options.selection;
    let experiment = &common.experiment;
    let mut loaded = load(common, mode.clone())?;
    let (mut plan, mut index) = plan_and_index(&loaded, common)?;
    // Before a lockfile, a fetch or an engine: a run perfpipe cannot start.
    exec::check_startable(&loaded.spec, &plan)?;
    // Where the report and its chart go is settled before any engine starts;
    // a capped run's never replaces the study's.
    let report_path = options.report.clone().unwrap_or_else(|| {
        let stem = experiment.file_stem().unwrap_or_default().to_string_lossy();
        let name = match common.max_prompts {
            Some(cap) => format!("{stem}.max-prompts-{cap}.md"),
            None => format!("{stem}.md"),
        };
        PathBuf::from("reports").join(name)
    });
    for path in [
        report_path.clone(),
        report_path.with_extension("svg"),
        report_path.with_extension("png"),
        report_path.with_extension("html"),
    ] {
        check_writable(&path)?;
    }
    remove_stale_tmp(&loaded.store, shell);
    // Real engines load pinned models and images: fetch what the missing runs
    // need before any GPU is taken. Fetching may bring the tokenizers the
    // lockfile pins, so a lockfile that differs only in those is settled after.
    let fetches = loaded.runtime != Runtime::Sim && !options.offline;
    let deferred = fetches && (options.locked || loaded.lock.only_tokenizers_differ);
    if deferred {
        lockfile::settle_for_fetch(&loaded.lock, experiment, shell)?;
    } else {
        lockfile::settle_for_run(&loaded.lock, options.locked, experiment, shell)?;
    }
    if fetches {
        let missing = plan.missing();
        let used = inputs_used(&loaded, missing.iter().map(|r| (&r.step, &r.workload)));
        let mut reload = false;
        if !used.is_empty() {
            let fetched = fetch_pinned(
                &loaded.lock.new,
                &used,
                loaded.runtime,
                Verbosity::Missing,
                &options.io,
                shell,
            )?;
            fail_on(&fetched.failures, experiment, true)?;
            reload = fetched.models_changed;
        }
        if reload {
            loaded = load(common, mode.clone())?;
            (plan, index) = plan_and_index(&loaded, common)?;
        }
        if reload || deferred {
            lockfile::settle_for_run(&loaded.lock, options.locked, experiment, shell)?;
        }
    }
    // The external harness runs from perfpipe's environment, made now when
    // missing, before any engine starts.
    let harness_env = if plan.missing().is_empty() {
        None
    } else {
        super::fetch::harness_environment(
            &loaded,
            options.offline,
            !options.locked,
            Verbosity::Missing,
            &options.io,
            shell,
        )?
    };
    let harness_env = harness_env.as_deref();
    // The lockfile is settled: record how to run each of its runs under this
    // run's runtime, for when the experiment has moved on (`run --lockfile`
    // of a copy of it); `perfpipe lock` records them under every runtime.
    // Not every runtime's here: a node realises only what its run needs.
    realise::record_lockfile_runs(&loaded, &[loaded.runtime])?;
    if let Some(caches) = caches
        && super::substitute::substitute(caches, &loaded.store, &plan, shell)?
    {
        (plan, index) = plan_and_index(&loaded, common)?;
    }
    let stored = plan
        .runs
        .iter()
        .filter(|r| !matches!(r.status, RunStatus::Missing { .. }))
        .count();
    say!(
        shell,
        "perfpipe: {}, {stored} in the store, {} to run (runtime `{}`)",
        count(plan.runs.len(), "run", "runs"),
        plan.missing().len(),
        plan.options.runtime.name()
    );
    for note in input_notes(&loaded) {
        say!(shell, "{note}");
    }
    if let Some(note) = super::slo_search::note(&loaded.searches) {
        say!(shell, "{note}");
    }
    // A search's next probe is known once its last one is stored; its
    // configuration's engine serves them all.
    let at_once = match &options.executor {
        Executor::Local => options.exec.jobs,
        // Each launch is its own job.
        Executor::Slurm(_) => usize::MAX,
    };
    let mut kept = exec::Kept::default();
    let probed = super::slo_search::run_probes(
        (loaded, plan),
        |l: &Loaded| &l.searches,
        at_once,
        || {
            let loaded = load(common, mode.clone())?;
            let plan = plan_and_index(&loaded, common)?.0;
            Ok((loaded, plan))
        },
        |loaded, plan, at_most, keep| {
            kept.at_most = Some(at_most);
            kept.keep = keep;
            execute(
                loaded,
                plan,
                options,
                harness_env,
                &mut kept,
                progress,
                jobs,
            )
        },
    );
    // Stopped on errors too: a container outlives its client.
    let stopped = kept.stop(&options.io);
    let super::slo_search::Probed {
        mut loaded,
        plan,
        summary,
        ran,
    } = probed?;
    stopped?;
    super::slo_search::mark_ran(&mut loaded.searches, &ran);

    // The runs this `run` ran, to tell its failures from stored ones: by
    // what it executed, as a search's earlier probes are stored by now.
    let ran_keys: BTreeSet<String> = (plan.runs.iter())
        .filter(|r| ran.contains(&(r.step.clone(), r.workload.clone())))
        .map(|r| r.key.to_string())
        .collect();
    // The report is the whole experiment's, whichever steps `--step` ran.
    let whole = Selection {
        steps: Vec::new(),
        ..common.clone()
    };
    let common = &whole;
    let plan = if options.selection.steps.is_empty() {
        plan
    } else {
        plan_and_index(&loaded, common)?.0
    };
    // With nothing run, what the plan read is the report's to show.
    if !ran.is_empty() {
        index = plan_and_index(&loaded, common)?.1;
    }
    let ran = ran_keys;
    let mut stored = super::report::stored::load(&plan, index)?;
    let records = crate::analyze::from_store(&plan, &stored);
    let now = |r: &crate::analyze::RunRecord| r.key.as_ref().is_some_and(|k| ran.contains(k));
    let expected = |r: &crate::analyze::RunRecord| {
        r.failure
            .as_deref()
            .is_some_and(|e| failure_expected(&loaded.spec, &r.step, &r.workload, e))
    };
    let failed_as_expected = records.iter().filter(|r| now(r) && expected(r)).count();
    let unexpected: Vec<UnexpectedFailure> = records
        .iter()
        .filter(|r| r.failure.is_some() && !expected(r))
        .map(|r| UnexpectedFailure {
            step: r.step.clone(),
            workload: r.workload.clone(),
            logs: failure_logs(&loaded, &plan, &r.step, &r.workload),
            now: now(r),
        })
        .collect();
    let mut analysis = analyze(&loaded, records);
    analysis.scope = Some(scope(&loaded, common));
    let path = report_path;
    let text = write_markdown(&loaded, &analysis, &mut stored, &path, true).map_err(|e| {
        e.measured(&format!(
            "every run is in the store: `perfpipe report {} --out FILE` writes the report",
            experiment.display()
        ))
    })?;
    Ok(Ran {
        report: text,
        report_path: path,
        summary,
        unexpected,
        failed_as_expected,
    })
}

/// Executes the missing runs of `plan` as `realise` does: from the material
/// of their launches, written to the store first with their inputs. With
/// nothing missing, the executor still stops what killed perfpipes left.
/// An engine reads a local model directory, and a run's key holds its
/// files' sha256: a run to measure needs the directory here (the simulated
/// engine reads no weights).
fn model_directories_are_here(loaded: &Loaded, plan: &Plan) -> Result<(), Error> {
    if plan.options.runtime == Runtime::Sim {
        return Ok(());
    }
    let absent = plan
        .missing()
        .into_iter()
        .filter_map(|run| loaded.spec.step(&run.step))
        .map(|step| &step.model.id)
        .find(|id| loaded.inputs.absent_models.contains(*id));
    match absent {
        Some(path) => Err(Error::Inputs(crate::inputs::Error::ModelRead {
            path: path.clone(),
            source: std::io::ErrorKind::NotFound.into(),
        })),
        None => Ok(()),
    }
}

fn execute(
    loaded: &Loaded,
    plan: &Plan,
    options: &RunOptions,
    harness_env: Option<&std::path::Path>,
    kept: &mut exec::Kept,
    progress: &mut dyn FnMut(&Spec, &ExecEvent),
    jobs: &mut dyn FnMut(&LaunchKey, &JobEvent),
) -> Result<ExecSummary, Error> {
    model_directories_are_here(loaded, plan)?;
    let exec = &ExecOptions {
        harness_env: harness_env.map(ToOwned::to_owned),
        ..options.exec.clone()
    };
    let launches = realise::write_launches(
        &loaded.spec,
        plan,
        &loaded.inputs,
        &LaunchOptions {
            fresh_engine: exec.fresh_engine,
            startup_timeout: exec.startup_timeout,
            stall_timeout: exec.stall_timeout,
        },
        &loaded.store,
    )?;
    if let Executor::Slurm(slurm) = &options.executor {
        return Ok(slurm::execute(
            &launches,
            &loaded.store,
            slurm,
            &options.io,
            jobs,
        )?);
    }
    if launches.is_empty() {
        return Ok(exec::execute(
            &loaded.spec,
            &loaded.inputs,
            plan,
            &loaded.store,
            exec,
            &options.io,
            Some(kept),
            &mut |event| progress(&loaded.spec, &event),
        )?);
    }
    let materials: Vec<_> = launches.into_iter().map(|(_, m)| m).collect();
    // The experiment's own steps say which failures it expects.
    let realised = realise::execute(
        &materials,
        &loaded.store,
        exec,
        &options.io,
        Some(&loaded.inputs),
        Some(kept),
        &mut |_, event| progress(&loaded.spec, event),
    )?;
    Ok(realised.summary)
}

/// Removes what killed perfpipe processes left under `store/tmp/`; a
/// failure to do so never stops a run.
fn remove_stale_tmp(store: &Store, shell: &dyn Shell) {
    match store.stale_tmp(true) {
        Ok(stale) if !stale.is_empty() => say!(
            shell,
            "perfpipe: removed {} left in `{}` by killed runs ({})",
            count(stale.len(), "temp dir", "temp dirs"),
            store.root().join("tmp").display(),
            crate::fetch::human_bytes(stale.iter().map(|s| s.bytes).sum())
        ),
        Ok(_) => {}
        Err(e) => say!(
            shell,
            "warning: cannot remove the temp dirs of killed runs: {e}"
        ),
    }
}

/// A failure the experiment declares (`expect-failure`) is the published outcome, not an error.
pub fn failure_expected(spec: &Spec, step: &str, workload: &str, error: &str) -> bool {
    spec.step(step).is_some_and(|s| {
        s.expectations.iter().any(|x| {
            x.workload == workload && matches!(&x.outcome, ExpectedOutcome::Failure(expected) if error.contains(expected.as_str()))
        })
    })
}

/// The logs of a failed run's latest sample, to read for why it failed.
fn failure_logs(loaded: &Loaded, plan: &Plan, step: &str, workload: &str) -> String {
    let logs = plan
        .runs
        .iter()
        .find(|r| r.step == step && r.workload == workload)
        .and_then(|r| loaded.store.files(&r.key).ok().flatten())
        .and_then(|files| files.samples.last().cloned())
        .map(|sample| sample.logs)
        .unwrap_or_default();
    if logs.is_empty() {
        return "no log was kept (`perfpipe report` shows its error)".into();
    }
    logs.iter()
        .map(|l| l.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
