//! Executes the missing runs of a plan: for each, lock its key, start the
//! engine, wait until it serves, benchmark it, stop it, commit the sample.
//! It runs on the process's one runtime (`crate::tokio_runtime`); progress goes to
//! a synchronous callback. (effects)

mod failure;
mod launched;
mod machine;
mod run;
pub mod slurm;
mod telemetry;

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use thiserror::Error;
use tokio::sync::watch;

use crate::engine::gpus::GpuProcess;
use crate::engine::leftovers::{self, Registry, Stopped};
use crate::facts::Runtime;
use crate::inputs::ResolvedInputs;
use crate::plan::{self, Plan, PlannedRun, RunStatus};
use crate::spec::Spec;
use crate::store::{self, FailureKind, Outcome, RunResult, Store};

pub use run::RunContext;

#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// The program that serves `sim` engines (perfpipe itself).
    pub sim_program: PathBuf,
    /// How long an engine may take to answer `/health`.
    /// Overrides every engine's own startup timeout.
    pub startup_timeout: Option<Duration>,
    /// How long the built-in harness waits for an event from the engine
    /// before its waiting requests fail (`Load::stall_timeout`).
    pub stall_timeout: Duration,
    /// Attempts per run when failures are transient.
    pub attempts: usize,
    /// One engine launch per run instead of one per step.
    pub fresh_engine: bool,
    /// Launches run at once (each on its own GPUs).
    pub jobs: usize,
    /// The environment perfpipe made for an external harness, whose
    /// program runs (`fetch::harness_env`); `None`: the program on PATH.
    pub harness_env: Option<PathBuf>,
}

/// What the executor tells its caller as it goes.
pub enum ExecEvent<'a> {
    /// The `index`-th run this command starts (counted across its
    /// executions, see [`Kept`]), of `total`, or of at most `total` when
    /// `bounded` (a search's probes after the next are unknown).
    Started {
        index: usize,
        total: usize,
        bounded: bool,
        run: &'a PlannedRun,
    },
    /// Another process committed this key while we waited for its lock.
    AlreadyDone {
        run: &'a PlannedRun,
    },
    /// Too few GPUs are free: another perfpipe holds them, or processes
    /// perfpipe did not start (`foreign`, by GPU index) hold their memory. Waiting.
    WaitingForGpus {
        run: &'a PlannedRun,
        needed: u32,
        foreign: &'a [(u32, GpuProcess)],
    },
    /// An engine (or container) a killed perfpipe left behind was stopped.
    LeftoverStopped {
        stopped: &'a Stopped,
    },
    /// The engine has been starting for `after` (large models take minutes),
    /// every second: what it waits for and the last line it logged.
    StillStarting {
        run: &'a PlannedRun,
        after: Duration,
        waiting_for: &'static str,
        last_line: Option<&'a str>,
    },
    /// The engine answers.
    EngineReady {
        run: &'a PlannedRun,
        after: Duration,
    },
    /// A benchmark starts, as the engine's `position`-th run.
    Benchmarking {
        run: &'a PlannedRun,
        requests: usize,
        position: usize,
    },
    /// A measured request of the built-in harness ended.
    RequestDone {
        run: &'a PlannedRun,
        progress: &'a crate::progress::BenchProgress,
    },
    Retrying {
        run: &'a PlannedRun,
        error: &'a str,
    },
    Finished {
        run: &'a PlannedRun,
        result: &'a RunResult,
        elapsed: Duration,
    },
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ExecSummary {
    pub succeeded: usize,
    pub failed: usize,
    /// Runs that failed for a transient cause on every attempt: no result
    /// is stored, so no report shows them.
    pub unstored: Vec<UnstoredFailure>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnstoredFailure {
    pub step: String,
    pub workload: String,
    pub error: String,
}

#[derive(Debug, Error)]
pub enum ExecError {
    #[error("interrupted; runs already finished are kept in the store")]
    Interrupted,
    #[error(transparent)]
    Gpus(crate::engine::gpus::Error),
    /// `hardware "cpu"`: this machine is not the declared one.
    #[error(transparent)]
    Cpu(crate::cpu::Error),
    #[error("{engine} is not installed on this machine's PATH: {source}")]
    EngineMissing {
        engine: &'static str,
        #[source]
        source: crate::external::Error,
    },
    #[error(
        "{engine} on this machine is version `{found}`, but the experiment declares `{declared}`"
    )]
    EngineVersion {
        engine: &'static str,
        declared: String,
        found: String,
    },
    /// The declared benchmark client (`vllm bench serve`, guidellm) is
    /// missing or of another version: it runs here under every runtime.
    #[error("the benchmark client the experiment declares cannot be used")]
    Harness(#[source] Box<ExecError>),
    #[error(transparent)]
    Store(#[from] store::Error),
    /// Slurm could not be asked, or answered what perfpipe cannot read.
    #[error(transparent)]
    Slurm(slurm::Error),
    /// The machine refused a process or a port: an environment fault.
    #[error("cannot {what}")]
    System {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot record engine launches in `{}`", leftovers::dir().display())]
    LaunchRecords(#[source] std::io::Error),
    #[error("cannot start the async runtime")]
    Tokio(#[source] std::io::Error),
    #[error("dataset of workload `{workload}` cannot be used")]
    Dataset {
        workload: String,
        #[source]
        source: crate::dataset::DatasetError,
    },
    #[error("workload `{workload}` cannot be sent")]
    Schedule {
        workload: String,
        #[source]
        source: crate::harness::arrivals::ScheduleError,
    },
    #[error(transparent)]
    Tokenizer(crate::tokenizer::Error),
    #[error("cannot read dataset `{path}`")]
    DatasetRead {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "step `{step}` cannot run: perfpipe cannot start {engine} under `--runtime {runtime}`: {}",
        why.reason
    )]
    Unstartable {
        step: String,
        engine: &'static str,
        runtime: &'static str,
        why: crate::facts::startable::Unstartable,
    },
}

/// Refuses a plan with a missing run perfpipe cannot start, before anything
/// starts: the first such step, in declared order.
pub fn check_startable(spec: &Spec, plan: &Plan) -> Result<(), ExecError> {
    // `None` on CPU hardware, the one name that is no GPU type.
    let gpu = crate::gpu::lookup(&spec.hardware.gpu);
    for run in plan.missing() {
        let step = spec.step(&run.step).expect("plan runs name declared steps");
        if let Err(why) = crate::facts::startable::startable(step.engine, gpu, plan.options.runtime)
        {
            return Err(ExecError::Unstartable {
                step: step.name.value.clone(),
                engine: step.engine.display_name(),
                runtime: plan.options.runtime.name(),
                why,
            });
        }
    }
    Ok(())
}

/// What a command keeps from one execution of an experiment to the next:
/// the engines of the configurations it may run more of (a search's next
/// probe is known only once the last one ends, and a real engine takes
/// minutes to start), the record of them that a later perfpipe reads should
/// this one be killed, and the runs started so far, so that progress counts
/// across executions. [`Kept::stop`] stops its engines; dropped, it kills them.
#[derive(Default)]
pub struct Kept {
    /// Engines serving, by the configuration they serve ([`engine_identity`]).
    /// Declared before the registry: dropped first, each forgets its record.
    engines: Vec<(String, launched::Launched)>,
    registry: Option<Registry>,
    started: usize,
    /// The most runs all executions together may start, where it is more
    /// than the runs the plans know (a search's later probes).
    pub at_most: Option<usize>,
    /// Whether this execution's engines are kept for the next: only when
    /// it runs the configurations the next one runs more of (else an
    /// engine kept would hold GPUs another launch of it needs).
    pub keep: bool,
}

impl Kept {
    /// Stops every engine kept.
    pub fn stop(&mut self, io: &crate::tokio_runtime::Io) -> Result<(), ExecError> {
        if self.engines.is_empty() {
            return Ok(());
        }
        let runtime = io.handle().map_err(ExecError::Tokio)?;
        runtime.block_on(stop_engines(std::mem::take(&mut self.engines)));
        Ok(())
    }
}

/// Stops `engines`, all at once.
async fn stop_engines(engines: Vec<(String, launched::Launched)>) {
    futures_util::future::join_all(engines.into_iter().map(|(_, mut engine)| async move {
        engine.stop().await;
    }))
    .await;
}

/// What makes two launches one engine: everything of the step's that
/// starts it (runs of two steps declared alike share none: each step is
/// its own configuration in the report).
fn engine_identity(spec: &Spec, step: &str) -> String {
    let step = spec.step(step).expect("plan runs name declared steps");
    let engine = spec
        .engine(step.engine)
        .expect("steps name declared engines");
    format!(
        "{}\0{:?}\0{:?}\0{:?}\0{:?}\0{:?}\0{}\0{}\0{:?}",
        step.name.value,
        step.engine,
        engine.version,
        engine.image,
        step.model,
        step.args,
        step.gpus,
        step.instances(),
        step.env
    )
}

/// Runs every missing run of `plan` until its key holds the samples the plan asks for.
/// With `kept`, an engine it kept for a configuration serves that
/// configuration's runs, and the engines of this execution are kept for the
/// next (unless every run gets its own engine); without, each is stopped
/// once its runs are done.
#[expect(
    clippy::too_many_arguments,
    reason = "the experiment, where it runs, and what it keeps"
)]
pub fn execute(
    spec: &Spec,
    inputs: &ResolvedInputs,
    plan: &Plan,
    store: &Store,
    options: &ExecOptions,
    io: &crate::tokio_runtime::Io,
    kept: Option<&mut Kept>,
    report: &mut dyn FnMut(ExecEvent),
) -> Result<ExecSummary, ExecError> {
    let mut own = Kept::default();
    let keep = kept.as_ref().is_some_and(|k| k.keep) && !options.fresh_engine;
    let kept = kept.unwrap_or(&mut own);
    check_startable(spec, plan)?;
    let missing = plan.missing();
    let summary = ExecSummary::default();
    let wanted = u32::try_from(plan.options.samples).unwrap_or(u32::MAX);
    for run in &missing {
        store.check_sample_room(&run.key, wanted)?;
    }
    // A store that cannot be written fails here, not after a measurement.
    store.prepare_to_write()?;
    let runtime = io.handle().map_err(ExecError::Tokio)?;
    // What a killed perfpipe left holds GPUs and ports: stopped by every
    // `run`, one with nothing to do too.
    let records = leftovers::dir();
    runtime.block_on(reap_leftovers(&records, report));
    // An engine kept for a configuration this execution does not run
    // frees its GPUs for those it does.
    let identities: Vec<String> = plan
        .launches(options.fresh_engine)
        .iter()
        .map(|group| engine_identity(spec, &group[0].step))
        .collect();
    let (serving, idle) = std::mem::take(&mut kept.engines)
        .into_iter()
        .partition(|(identity, _)| identities.contains(identity));
    kept.engines = serving;
    runtime.block_on(stop_engines(idle));
    if missing.is_empty() {
        return Ok(summary);
    }
    let cancel = runtime
        .block_on(async { watch_signals() })
        .map_err(ExecError::Tokio)?;
    if kept.registry.is_none() {
        kept.registry = Some(Registry::open(&records).map_err(ExecError::LaunchRecords)?);
    }
    let machine = match plan.options.runtime {
        Runtime::Sim => None,
        Runtime::Local | Runtime::Docker => Some(runtime.block_on(machine::discover(spec))?),
    };
    runtime.block_on(machine::check_harness_version(
        &spec.harness.kind,
        options.harness_env.as_deref(),
    ))?;
    if plan.options.runtime == Runtime::Local {
        let mut engines: Vec<_> = missing
            .iter()
            .filter_map(|r| spec.step(&r.step).and_then(|s| spec.engine(s.engine)))
            .collect();
        engines.sort_by_key(|e| e.kind);
        engines.dedup_by_key(|e| e.kind);
        for engine in engines {
            runtime.block_on(machine::check_local_version(engine))?;
        }
    }
    let ctx = RunContext {
        spec,
        inputs,
        store,
        options,
        client: runtime.block_on(async { crate::harness::http_client(crate::harness::Tls::Plain) }),
        streams: runtime
            .block_on(async { crate::harness::StreamClient::new(crate::harness::Tls::Plain) }),
        cancel,
        host: crate::host::name(),
        slurm: crate::metrics::SlurmJob::from_env(|name| std::env::var(name).ok()),
        runtime: plan.options.runtime,
        machine,
        launches: kept.registry.as_ref().expect("opened above"),
        tokenizers: Default::default(),
    };
    // Launches run `jobs` at a time; each waits for its GPUs, so two never share one.
    let total = kept.started + missing.len();
    let shared = Shared {
        index: Cell::new(kept.started),
        total: kept.at_most.unwrap_or(total).max(total),
        bounded: kept.at_most.is_some_and(|most| most > total),
        summary: RefCell::new(summary),
        report: RefCell::new(report),
    };
    let launches = plan.launches(options.fresh_engine);
    let engines = RefCell::new(std::mem::take(&mut kept.engines));
    // The first error starts no further launch, but those in flight end by
    // themselves: dropped, they would leave their containers running (on
    // Ctrl-C or SIGTERM each sees the signal and stops its engines).
    let failed: RefCell<Option<ExecError>> = RefCell::new(None);
    runtime.block_on(futures_util::stream::iter(launches).for_each_concurrent(
        options.jobs.max(1),
        |group| {
            let (ctx, shared, failed, engines) = (&ctx, &shared, &failed, &engines);
            async move {
                if failed.borrow().is_some() {
                    return;
                }
                let identity = engine_identity(spec, &group[0].step);
                let mut engine: Option<launched::Launched> = {
                    let mut engines = engines.borrow_mut();
                    let at = engines.iter().position(|(i, _)| *i == identity);
                    at.map(|at| engines.remove(at).1)
                };
                let result = run_launch(ctx, plan, &group, &mut engine, shared).await;
                match engine.take() {
                    Some(engine) if keep && result.is_ok() => {
                        engines.borrow_mut().push((identity, engine));
                    }
                    Some(mut engine) => engine.stop().await,
                    None => {}
                }
                if let Err(e) = result {
                    failed.borrow_mut().get_or_insert(e);
                }
            }
        },
    ));
    kept.engines = engines.into_inner();
    kept.started = shared.index.get();
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    let summary = shared.summary.into_inner();
    Ok(summary)
}

/// Stops the launches of killed perfpipes recorded under `records`. Records
/// whose processes had already died with their perfpipe are only forgotten.
pub(crate) async fn reap_leftovers(records: &Path, report: &mut dyn FnMut(ExecEvent)) {
    for stopped in leftovers::reap(records).await {
        if stopped.processes > 0 {
            report(ExecEvent::LeftoverStopped { stopped: &stopped });
        }
    }
}

/// The runs of one launch, in order, on one engine that is started when a run
/// first needs it and started again when it died. A deterministic start
/// failure is the result of every run of the launch; it is not started again.
///
/// It never waits for a key's lock while its engine holds GPUs: the process
/// measuring that key may be waiting for them. Such a run is put off until
/// the engine is stopped, then waited for.
async fn run_launch(
    ctx: &RunContext<'_>,
    plan: &Plan,
    group: &[&PlannedRun],
    engine: &mut Option<launched::Launched>,
    shared: &Shared<'_, '_>,
) -> Result<(), ExecError> {
    let mut report = |event: ExecEvent| (shared.report.borrow_mut())(event);
    let mut start_failed: Option<launched::StartFailure> = None;
    let mut queue: Vec<&PlannedRun> = group.to_vec();
    while !queue.is_empty() {
        let mut put_off = Vec::new();
        for run in queue {
            let lock = match engine {
                Some(_) => match ctx.store.try_lock(&run.key)? {
                    Some(lock) => Some(lock),
                    None => {
                        put_off.push(run);
                        continue;
                    }
                },
                None => None,
            };
            report(ExecEvent::Started {
                index: shared.index.replace(shared.index.get() + 1),
                total: shared.total,
                bounded: shared.bounded,
                run,
            });
            let lock = match lock {
                Some(lock) => lock,
                None => ctx.lock(run).await?,
            };
            measure(
                ctx,
                plan,
                run,
                &lock,
                engine,
                &mut start_failed,
                shared,
                &mut report,
            )
            .await?;
        }
        if !put_off.is_empty()
            && let Some(mut running) = engine.take()
        {
            running.stop().await;
        }
        queue = put_off;
    }
    Ok(())
}

/// Measures `run` (its key locked) until it has the samples the plan asks
/// for, or fails.
#[expect(
    clippy::too_many_arguments,
    reason = "one launch's state, passed down once"
)]
async fn measure(
    ctx: &RunContext<'_>,
    plan: &Plan,
    run: &PlannedRun,
    lock: &store::KeyLock,
    engine: &mut Option<launched::Launched>,
    start_failed: &mut Option<launched::StartFailure>,
    shared: &Shared<'_, '_>,
    report: &mut dyn FnMut(ExecEvent),
) -> Result<(), ExecError> {
    let still_missing = || -> Result<bool, ExecError> {
        let stored = ctx.store.samples(&run.key)?;
        Ok(matches!(
            plan::status(&stored, plan.options),
            RunStatus::Missing { .. }
        ))
    };
    if !still_missing()? {
        report(ExecEvent::AlreadyDone { run });
        return Ok(());
    }
    // Built while the engine starts where it does, then kept for every sample.
    let mut prepared: Option<run::Prepared> = None;
    while still_missing()? {
        let started = std::time::Instant::now();
        let mut attempt = 0;
        let result = loop {
            attempt += 1;
            if let Some(failed) = start_failed.as_ref() {
                let result = ctx.start_failure(run, failed);
                let pending = ctx.store.begin_sample()?;
                pending
                    .write_log("engine.log", &failed.log)
                    .map_err(store::Error::Io)?;
                pending.commit(ctx.store, &run.key, &run.canonical, &result, lock)?;
                break result;
            }
            if engine.as_mut().is_some_and(|e| e.has_exited()) {
                let mut dead = engine.take().expect("checked above");
                dead.stop().await;
            }
            if engine.is_none() {
                let prepare = async {
                    match prepared.take() {
                        Some(ready) => Ok(ready),
                        None => ctx.prepare(run).await,
                    }
                };
                let (started, ready) = tokio::join!(ctx.start(run, report), prepare);
                let started = started?;
                match ready {
                    Ok(ready) => prepared = Some(ready),
                    Err(e) => {
                        // A started engine is the caller's to stop.
                        if let Ok(up) = started {
                            *engine = Some(up);
                        }
                        return Err(e);
                    }
                }
                match started {
                    Ok(started) => *engine = Some(started),
                    Err(failed) if failed.kind == FailureKind::Deterministic => {
                        *start_failed = Some(failed);
                        continue;
                    }
                    Err(failed) => {
                        let result = ctx.start_failure(run, &failed);
                        if attempt >= ctx.options.attempts {
                            break result;
                        }
                        report(ExecEvent::Retrying {
                            run,
                            error: &failed.error,
                        });
                        continue;
                    }
                }
            }
            if prepared.is_none() {
                prepared = Some(ctx.prepare(run).await?);
            }
            let ready = prepared.as_ref().expect("built above");
            let running = engine.as_mut().expect("started above");
            match ctx.bench(running, run, ready, report).await? {
                run::Attempt::Done(result, pending) => {
                    pending.commit(ctx.store, &run.key, &run.canonical, &result, lock)?;
                    break result;
                }
                run::Attempt::Transient(result) if attempt >= ctx.options.attempts => {
                    break result;
                }
                run::Attempt::Transient(result) => {
                    if let Outcome::Failure { error, .. } = &result.outcome {
                        report(ExecEvent::Retrying { run, error });
                    }
                }
            }
        };
        report(ExecEvent::Finished {
            run,
            result: &result,
            elapsed: started.elapsed(),
        });
        if let Outcome::Failure { kind, error, .. } = &result.outcome {
            let mut summary = shared.summary.borrow_mut();
            summary.failed += 1;
            if *kind == FailureKind::Transient {
                summary.unstored.push(UnstoredFailure {
                    step: run.step.clone(),
                    workload: run.workload.clone(),
                    error: error.clone(),
                });
            }
            break;
        }
        shared.summary.borrow_mut().succeeded += 1;
    }
    Ok(())
}

/// What concurrent launches share: progress numbering, the summary, the reporter.
struct Shared<'a, 'r> {
    index: Cell<usize>,
    total: usize,
    /// `total` is a bound.
    bounded: bool,
    summary: RefCell<ExecSummary>,
    report: RefCell<&'a mut (dyn FnMut(ExecEvent) + 'r)>,
}

/// A channel that turns true on SIGINT or SIGTERM. Handlers are installed
/// now, so a signal never kills perfpipe before it has stopped its engines.
pub(crate) fn watch_signals() -> std::io::Result<watch::Receiver<bool>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        let _ = tx.send(true);
    });
    Ok(rx)
}
