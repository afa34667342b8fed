//! One run on a launched engine: its dataset, the benchmark, its result.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::launched::{Launched, StartFailure};
use super::{ExecError, ExecEvent, ExecOptions, failure, telemetry};
use crate::dataset::BenchRequest;
use crate::engine::gpus::{self, GpuLease, GpuProcess, Machine};
use crate::engine::leftovers;
use crate::facts::Runtime;
use crate::facts::SIM_ENGINE_VERSION;
use crate::harness::{self, Load, RequestSettings, guidellm, vllm_bench};
use crate::inputs::ResolvedInputs;
use crate::metrics::{
    BlockOptions, Measurement, MetricOptions, Provenance, RequestRecord, ServingMetrics, compute,
    read_guidellm_report, render_serving_block,
};
use crate::plan::PlannedRun;
use crate::spec::{Dataset, HarnessKind, ModelRef, SharegptConversion, Spec, Step, Workload};
use crate::store::{FailureKind, KeyLock, Outcome, PendingSample, RunResult, Store};
use crate::tokenizer::Tokenizer;

/// Everything a run needs from its surroundings.
pub struct RunContext<'a> {
    pub runtime: Runtime,
    /// The GPUs of this machine (not under `sim`).
    pub machine: Option<Machine>,
    pub spec: &'a Spec,
    pub inputs: &'a ResolvedInputs,
    pub store: &'a Store,
    pub options: &'a ExecOptions,
    pub client: reqwest::Client,
    /// The benchmark's own requests (the built-in harness).
    pub streams: harness::StreamClient,
    pub cancel: watch::Receiver<bool>,
    pub host: String,
    /// The Slurm job this process measures in, under `run --executor slurm`.
    pub slurm: Option<crate::metrics::SlurmJob>,
    /// Where this process records the engines it starts.
    pub launches: &'a crate::engine::leftovers::Registry,
    /// Tokenizers loaded so far, by (model, revision).
    pub tokenizers: Mutex<HashMap<(String, String), Arc<Tokenizer>>>,
}

/// How one attempt ended.
pub enum Attempt {
    /// A result to commit: metrics, or a failure that will happen again.
    Done(RunResult, PendingSample),
    /// A failure that may not happen again (engine lost to a transient cause).
    Transient(RunResult),
}

/// What a run sends, built before its benchmark: while its engine starts,
/// when it does (12,000 random prompts take seconds of CPU, which GPUs
/// would wait for), and once for all its samples.
#[derive(Default)]
pub struct Prepared {
    /// The built-in harness's requests.
    requests: Vec<BenchRequest>,
    /// guidellm's ShareGPT conversion, written for it to read.
    converted: Option<Vec<BenchRequest>>,
}

impl RunContext<'_> {
    /// The step and the workload a planned run names, which the plan took
    /// from this spec.
    fn declared(&self, run: &PlannedRun) -> (&Step, &Workload) {
        let step = self
            .spec
            .step(&run.step)
            .expect("plan runs name declared steps");
        let workload = self
            .spec
            .workload(&run.workload)
            .expect("plan runs name declared workloads");
        (step, workload)
    }

    /// Builds what `run` sends, as its harness needs it.
    pub async fn prepare(&self, run: &PlannedRun) -> Result<Prepared, ExecError> {
        let (step, workload) = self.declared(run);
        Ok(match &self.spec.harness.kind {
            HarnessKind::Builtin => Prepared {
                requests: self.requests(workload, &step.model, false).await?,
                converted: None,
            },
            HarnessKind::Guidellm { .. }
                if matches!(workload.dataset, Dataset::ShareGpt { .. }) =>
            {
                Prepared {
                    requests: Vec::new(),
                    converted: Some(self.requests(workload, &step.model, true).await?),
                }
            }
            HarnessKind::VllmBench { .. } | HarnessKind::Guidellm { .. } => Prepared::default(),
        })
    }

    /// Waits for the key's lock, or for a signal.
    pub async fn lock(&self, run: &PlannedRun) -> Result<KeyLock, ExecError> {
        let store = self.store.clone();
        let key = run.key.clone();
        let mut cancel = self.cancel.clone();
        tokio::select! {
            lock = tokio::task::spawn_blocking(move || store.lock(&key)) => {
                Ok(lock.expect("taking a lock does not panic")?)
            }
            _ = cancel.wait_for(|c| *c) => Err(ExecError::Interrupted),
        }
    }

    /// Benchmarks `run` on `engine` with the experiment's harness. An engine
    /// that dies meanwhile fails the run.
    pub async fn bench(
        &self,
        engine: &mut Launched,
        run: &PlannedRun,
        prepared: &Prepared,
        report: &mut dyn FnMut(ExecEvent),
    ) -> Result<Attempt, ExecError> {
        let (step, workload) = self.declared(run);
        let launch = engine.next_run(&self.client).await;
        let pending = self.store.begin_sample()?;
        let started_at = crate::clock::unix_now();
        let mut harness_command = Vec::new();
        // The prompts were built before sampling starts: telemetry covers the benchmark only.
        let requests = prepared.requests.clone();
        if let Some(converted) = &prepared.converted {
            // benchmark-runner's file, which guidellm reads in order.
            pending
                .write_log(
                    guidellm::CONVERTED_SHAREGPT_FILE,
                    guidellm::converted_sharegpt(converted),
                )
                .map_err(crate::store::Error::Io)?;
        }
        let sampler = telemetry::start(
            self.client.clone(),
            // None under `sim` and on CPU hardware: no GPU to sample.
            self.machine
                .as_ref()
                .filter(|m| m.cpu.is_none())
                .map(|_| engine.gpu_indices.clone()),
            // A local engine's processes are this machine's; a container's
            // are not the docker client's.
            if self.runtime == Runtime::Local {
                engine.process_groups()
            } else {
                Vec::new()
            },
            engine.base_urls(),
            pending
                .create_log(crate::metrics::telemetry::TELEMETRY_FILE)
                .map_err(crate::store::Error::Io)?,
        );
        let measured = match &self.spec.harness.kind {
            HarnessKind::Builtin => {
                self.builtin(
                    engine,
                    run,
                    step,
                    workload,
                    requests,
                    &pending,
                    launch.position,
                    report,
                )
                .await?
            }
            HarnessKind::VllmBench { .. } | HarnessKind::Guidellm { .. } => {
                let call = self.client_invocation(engine, run, step, workload, &pending);
                harness_command = call.argv.clone();
                report(ExecEvent::Benchmarking {
                    run,
                    requests: workload.prompts as usize,
                    position: launch.position,
                });
                self.external(engine, &call, &pending).await?
            }
        };
        let measured = match measured {
            Measured::Failed { kind, error } if engine.has_exited() => {
                // Its workers too: what then still holds memory is not the engine's.
                engine.stop().await;
                let (kind, error) = self
                    .blame_foreign_memory(kind, error, &engine.gpu_indices)
                    .await;
                Measured::Failed { kind, error }
            }
            measured => measured,
        };
        let samples = sampler.finish().await.map_err(crate::store::Error::Io)?;
        let summary = crate::metrics::telemetry::summarize(&samples);
        pending
            .write_log("engine.log", engine.log_bytes())
            .map_err(crate::store::Error::Io)?;
        let result = |outcome: Outcome| RunResult {
            key: run.key.to_string(),
            outcome,
            provenance: self.provenance(started_at, &engine.gpu_indices),
            engine_command: engine.argv.clone(),
            engine_launch: Some(launch.clone()),
            harness_command: harness_command.clone(),
            telemetry: Some(summary.clone()),
            slurm: self.slurm.clone(),
        };
        let (metrics, warnings, per_instance) = match measured {
            Measured::Numbers {
                metrics,
                warnings,
                per_instance,
            } => (metrics, warnings, per_instance),
            Measured::Failed { kind, error } => {
                let r = result(Outcome::Failure {
                    kind,
                    error,
                    log_tail: engine.log_tail(),
                });
                return Ok(match kind {
                    FailureKind::Transient => Attempt::Transient(r),
                    FailureKind::Deterministic => Attempt::Done(r, pending),
                });
            }
        };
        if metrics.completed() == 0 {
            let error = warnings
                .last()
                .cloned()
                .unwrap_or_else(|| "every request failed".into());
            let error = format!("every request failed: {error}");
            let r = result(Outcome::Failure {
                kind: FailureKind::Deterministic,
                error,
                log_tail: engine.log_tail(),
            });
            return Ok(Attempt::Done(r, pending));
        }
        Ok(Attempt::Done(
            result(Outcome::Success {
                metrics,
                warnings,
                per_instance,
            }),
            pending,
        ))
    }

    /// perfpipe's own load generator, journaling each request as it ends.
    #[expect(
        clippy::too_many_arguments,
        reason = "one run's context, passed down once"
    )]
    async fn builtin(
        &self,
        engine: &mut Launched,
        run: &PlannedRun,
        step: &Step,
        workload: &Workload,
        requests: Vec<BenchRequest>,
        pending: &PendingSample,
        position: usize,
        report: &mut dyn FnMut(ExecEvent),
    ) -> Result<Measured, ExecError> {
        report(ExecEvent::Benchmarking {
            run,
            requests: requests.len(),
            position,
        });
        let settings = RequestSettings {
            urls: engine
                .base_urls()
                .iter()
                .map(|u| format!("{u}{}", self.spec.harness.endpoint))
                .collect(),
            backend: self.spec.harness.backend,
            model: step.model.id.clone(),
            // A study's temperature is always explicit (0 by default).
            temperature: Some(self.spec.harness.temperature),
            ignore_eos: self.spec.harness.ignore_eos,
            tokenizer: self.tokenizer(&step.model).await?,
            extra_body: Default::default(),
            request_id_prefix: None,
            logprobs: None,
            headers: Default::default(),
        };
        let options = MetricOptions::default();
        let load = Load {
            stall_timeout: self.options.stall_timeout,
            arrival: workload.arrival,
            ..Load::new(workload.rate, workload.concurrency, dataset_seed(workload))
        };
        let mut journal =
            std::io::BufWriter::new(pending.journal().map_err(crate::store::Error::Io)?);
        let mut progress = crate::progress::BenchProgress::new(requests.len());
        let mut write_line = |index: usize, record: &RequestRecord| {
            let line = serde_json::json!({"index": index, "record": record});
            let _ = writeln!(journal, "{line}");
            let _ = journal.flush();
            progress.record(record);
            report(ExecEvent::RequestDone {
                run,
                progress: &progress,
            });
        };
        let mut cancel = self.cancel.clone();
        let bench = harness::benchmark(
            &self.streams,
            &settings,
            requests,
            &load,
            &options,
            &mut write_line,
        );
        let outcome = tokio::select! {
            out = bench => out.map_err(|source| ExecError::Schedule {
                workload: workload.name.value.clone(),
                source,
            })?,
            status = engine.exited() => return Ok(engine_died(engine, status)),
            _ = cancel.wait_for(|c| *c) => return Err(ExecError::Interrupted),
        };
        // A crashing engine breaks its streams before its exit is seen: failed
        // requests are the engine's failure when it is gone a moment later.
        if outcome.metrics.failed > 0
            && let Ok(status) = tokio::time::timeout(ENGINE_EXIT_GRACE, engine.exited()).await
        {
            return Ok(engine_died(engine, status));
        }
        pending
            .write_log(
                "harness.log",
                harness_log(step, &outcome.metrics, &outcome.records),
            )
            .map_err(crate::store::Error::Io)?;
        let instances = engine.base_urls().len();
        let per_instance = if instances > 1 {
            (0..instances as u32)
                .map(|i| {
                    let mine: Vec<RequestRecord> = outcome
                        .records
                        .iter()
                        .filter(|r| r.instance == i)
                        .cloned()
                        .collect();
                    compute(&mine, outcome.duration, &options)
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(Measured::Numbers {
            metrics: Box::new(Measurement::Vllm(outcome.metrics)),
            warnings: outcome.warnings,
            per_instance,
        })
    }

    /// An external client, run to completion in its own process group; its
    /// result file stays in the sample.
    async fn external(
        &self,
        engine: &mut Launched,
        call: &guidellm::Invocation,
        pending: &PendingSample,
    ) -> Result<Measured, ExecError> {
        let argv = &call.argv;
        let log = pending.logs_dir().join("harness.log");
        let (mut client, _record) =
            self.spawn_recorded(&argv[0], &argv[1..], &call.env, None, &log)?;
        let mut cancel = self.cancel.clone();
        enum Ended {
            Client(std::io::Result<std::process::ExitStatus>),
            Engine(std::io::Result<std::process::ExitStatus>),
            Interrupted,
        }
        let ended = tokio::select! {
            status = client.exited() => Ended::Client(status),
            status = engine.exited() => Ended::Engine(status),
            _ = cancel.wait_for(|c| *c) => Ended::Interrupted,
        };
        if !matches!(ended, Ended::Client(_)) {
            client.stop(Duration::from_secs(5)).await;
        }
        // The client's files stay in the sample, however it ended.
        crate::secrets::redact_dir(&pending.logs_dir()).map_err(crate::store::Error::Io)?;
        let status = match ended {
            Ended::Client(status) => status,
            Ended::Engine(status) => return Ok(engine_died(engine, status)),
            Ended::Interrupted => return Err(ExecError::Interrupted),
        };
        let output = String::from_utf8_lossy(&fs_err::read(&log).unwrap_or_default()).into_owned();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => {
                let (kind, line) = failure::classify(&output);
                let error = format!(
                    "`{}` exited with {s}{}",
                    argv[..3].join(" "),
                    line.map(|l| format!(": {l}")).unwrap_or_default()
                );
                return Ok(Measured::Failed { kind, error });
            }
            Err(source) => {
                return Err(ExecError::System {
                    what: "wait for the harness",
                    source,
                });
            }
        }
        match self.read_client_result(pending) {
            Ok(metrics) => {
                let mut warnings = Vec::new();
                if metrics.failed() > 0 {
                    warnings.push(format!(
                        "{} of {} failed",
                        metrics.failed(),
                        crate::plural::count(
                            (metrics.failed() + metrics.completed()) as usize,
                            "request",
                            "requests"
                        )
                    ));
                }
                Ok(Measured::Numbers {
                    metrics: Box::new(metrics),
                    warnings,
                    per_instance: Vec::new(),
                })
            }
            Err(error) => Ok(Measured::Failed {
                kind: FailureKind::Deterministic,
                error,
            }),
        }
    }

    /// The external client's call for one run; it writes its result in the sample's logs.
    fn client_invocation(
        &self,
        engine: &Launched,
        run: &PlannedRun,
        step: &Step,
        workload: &Workload,
        pending: &PendingSample,
    ) -> guidellm::Invocation {
        let base_url = &engine.base_urls()[0];
        let call = match &self.spec.harness.kind {
            HarnessKind::VllmBench { .. } => guidellm::Invocation {
                argv: vllm_bench::argv(
                    &self.spec.harness,
                    base_url,
                    &step.model.id,
                    workload,
                    self.inputs.dataset(&run.workload).map(|d| d.path.as_path()),
                    &pending.logs_dir(),
                ),
                env: Default::default(),
            },
            HarnessKind::Guidellm { .. } => guidellm::invocation(
                &self.spec.harness,
                base_url,
                &step.model.id,
                workload,
                &pending.logs_dir(),
            ),
            HarnessKind::Builtin => unreachable!("the built-in harness is no subprocess"),
        };
        match &self.options.harness_env {
            Some(prefix) => in_environment(call, prefix),
            None => call,
        }
    }

    /// The numbers the external client wrote, under its own definitions.
    fn read_client_result(&self, pending: &PendingSample) -> Result<Measurement, String> {
        let read = |file: &str| fs_err::read_to_string(pending.logs_dir().join(file));
        match &self.spec.harness.kind {
            HarnessKind::Guidellm { .. } => read(guidellm::RESULT_FILE)
                .map_err(|e| format!("guidellm wrote no report: {e}"))
                .and_then(|json| read_guidellm_report(&json))
                .map(Measurement::Guidellm),
            _ => read(vllm_bench::RESULT_FILE)
                .map_err(|e| format!("`vllm bench serve` wrote no result file: {e}"))
                .and_then(|json| vllm_bench::read_result(&json))
                .map(Measurement::Vllm),
        }
    }

    /// The result of a run whose engine did not start.
    pub fn start_failure(&self, run: &PlannedRun, failed: &StartFailure) -> RunResult {
        RunResult {
            key: run.key.to_string(),
            outcome: Outcome::Failure {
                kind: failed.kind,
                error: failed.error.clone(),
                log_tail: failed.log_tail.clone(),
            },
            provenance: self.provenance(crate::clock::unix_now(), &failed.gpu_indices),
            engine_command: failed.argv.clone(),
            engine_launch: None,
            harness_command: Vec::new(),
            telemetry: None,
            slurm: self.slurm.clone(),
        }
    }

    /// Locks `n` GPUs of this machine for the run, waiting while other
    /// perfpipe processes hold them. Nothing to lock under `sim`.
    pub(super) async fn gpus(
        &self,
        run: &PlannedRun,
        n: u32,
        report: &mut dyn FnMut(ExecEvent),
    ) -> Result<Vec<GpuLease>, ExecError> {
        let Some(machine) = &self.machine else {
            return Ok(Vec::new());
        };
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut cancel = self.cancel.clone();
        let mut announced = None;
        loop {
            // A perfpipe killed since this one started freed its GPU locks but
            // not its engines (a container outlives its client): stop them
            // before their GPUs are taken.
            super::reap_leftovers(&leftovers::dir(), report).await;
            // A GPU that holds a process perfpipe did not start is never used.
            let processes = super::machine::gpu_processes().await;
            let (busy, clean): (Vec<_>, Vec<_>) = machine
                .gpus
                .iter()
                .cloned()
                .partition(|g| processes.iter().any(|p| p.gpu_uuid == g.uuid));
            let dir = gpus::lock_dir();
            if let Some(leases) =
                gpus::try_acquire(&clean, n as usize, &dir).map_err(ExecError::Gpus)?
            {
                return Ok(leases);
            }
            // Processes on GPUs no perfpipe holds are not perfpipe's.
            let unheld = gpus::unheld(&busy, &dir).map_err(ExecError::Gpus)?;
            let foreign: Vec<(u32, GpuProcess)> = unheld
                .iter()
                .flat_map(|g| {
                    processes
                        .iter()
                        .filter(|p| p.gpu_uuid == g.uuid)
                        .map(|p| (g.index, p.clone()))
                })
                .collect();
            if announced.as_ref() != Some(&foreign) {
                report(ExecEvent::WaitingForGpus {
                    run,
                    needed: n,
                    foreign: &foreign,
                });
                announced = Some(foreign);
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = cancel.wait_for(|c| *c) => return Err(ExecError::Interrupted),
            }
        }
    }

    /// An out-of-memory on GPUs where processes perfpipe did not start hold
    /// memory is their doing, not the configuration's: transient, so it is
    /// retried on other GPUs and never cached. Call it once the engine's
    /// own processes are stopped.
    pub(super) async fn blame_foreign_memory(
        &self,
        kind: FailureKind,
        error: String,
        gpu_indices: &[u32],
    ) -> (FailureKind, String) {
        let Some(machine) = &self.machine else {
            return (kind, error);
        };
        if kind != FailureKind::Deterministic || !failure::is_out_of_memory(&error) {
            return (kind, error);
        }
        let ours: Vec<&gpus::GpuInfo> = machine
            .gpus
            .iter()
            .filter(|g| gpu_indices.contains(&g.index))
            .collect();
        let foreign: Vec<String> = super::machine::gpu_processes()
            .await
            .iter()
            .filter_map(|p| {
                let gpu = ours.iter().find(|g| g.uuid == p.gpu_uuid)?;
                Some(format!("GPU {}: {p}", gpu.index))
            })
            .collect();
        if foreign.is_empty() {
            return (kind, error);
        }
        (
            FailureKind::Transient,
            format!(
                "{error} (processes perfpipe did not start hold memory on its GPUs: {})",
                foreign.join(", ")
            ),
        )
    }

    fn provenance(&self, started_at: u64, gpu_indices: &[u32]) -> Provenance {
        let started_at = crate::clock::rfc3339(started_at);
        let finished_at = crate::clock::rfc3339(crate::clock::unix_now());
        let perfpipe_version = env!("CARGO_PKG_VERSION").to_owned();
        match &self.machine {
            None => Provenance::Simulated {
                host: self.host.clone(),
                perfpipe_version,
                sim_engine_version: SIM_ENGINE_VERSION.into(),
                started_at,
                finished_at,
            },
            Some(gpus::Machine { cpu: Some(cpu), .. }) => Provenance::MeasuredOnCpu {
                host: self.host.clone(),
                perfpipe_version,
                started_at,
                finished_at,
                cpu: cpu.model.clone(),
                cores: cpu.cores,
                memory_gib: cpu.memory_gib,
                isa: cpu.isa.clone(),
            },
            Some(machine) => {
                let first = gpu_indices
                    .first()
                    .and_then(|i| machine.gpus.iter().find(|g| g.index == *i));
                Provenance::Measured {
                    host: self.host.clone(),
                    perfpipe_version,
                    started_at,
                    finished_at,
                    gpu: first.map(|g| g.name.clone()).unwrap_or_default(),
                    gpu_indices: gpu_indices.to_vec(),
                    driver: first.map(|g| g.driver.clone()).unwrap_or_default(),
                    cuda_version: machine.cuda_version.clone(),
                }
            }
        }
    }

    /// The model's tokenizer, loaded once per model for all its runs.
    async fn tokenizer(&self, model: &ModelRef) -> Result<Arc<Tokenizer>, ExecError> {
        let key = (model.id.clone(), model.revision.clone());
        if let Some(loaded) = self.tokenizers.lock().expect("not poisoned").get(&key) {
            return Ok(loaded.clone());
        }
        let resolved = self.inputs.tokenizer(model);
        let loaded = tokio::task::spawn_blocking(move || resolved.load())
            .await
            .expect("loading a tokenizer does not panic")
            .map_err(ExecError::Tokenizer)?;
        let loaded = Arc::new(loaded);
        self.tokenizers
            .lock()
            .expect("not poisoned")
            .insert(key, loaded.clone());
        Ok(loaded)
    }

    /// The workload's requests; with `whole_conversion`, every record
    /// benchmark-runner's conversion writes (⌊1.2·N⌋), not only the N sent.
    /// Building 12,000 random prompts through a 150k-token vocabulary takes
    /// about 2 s on 2 cores, so it runs off the async threads.
    async fn requests(
        &self,
        workload: &Workload,
        model: &ModelRef,
        whole_conversion: bool,
    ) -> Result<Vec<BenchRequest>, ExecError> {
        let dataset = workload.dataset.clone();
        let n = workload.prompts;
        let name = workload.name.value.clone();
        let path = self.inputs.dataset(&name).map(|d| d.path.clone());
        let tokenizer = self.tokenizer(model).await?;
        tokio::task::spawn_blocking(move || match dataset {
            Dataset::Random {
                input_len,
                output_len,
                range_ratio,
                seed,
            } => Ok(harness::prompt_cache::random(
                &harness::prompt_cache::PromptCache::user(),
                &tokenizer,
                crate::dataset::Shape::unprefixed(input_len, output_len, range_ratio),
                seed,
                n,
            )
            .0),
            Dataset::ShareGpt {
                output_len,
                seed,
                conversion,
                ..
            } => {
                let path = path.expect("inputs resolve every sharegpt dataset");
                let text =
                    fs_err::read_to_string(&path).map_err(|source| ExecError::DatasetRead {
                        path: path.display().to_string(),
                        source,
                    })?;
                match conversion {
                    SharegptConversion::Vllm => {
                        crate::dataset::sharegpt(&tokenizer, &text, n, seed, output_len)
                    }
                    SharegptConversion::BenchmarkRunner if whole_conversion => {
                        crate::dataset::benchmark_runner_conversion(
                            &tokenizer, &text, n, output_len,
                        )
                    }
                    SharegptConversion::BenchmarkRunner => {
                        crate::dataset::sharegpt_first_turns(&tokenizer, &text, n, output_len)
                    }
                }
                .map_err(|source| ExecError::Dataset {
                    workload: name,
                    source,
                })
            }
        })
        .await
        .expect("dataset sampling does not panic")
    }
}

/// How long failed requests wait to see whether their engine died.
const ENGINE_EXIT_GRACE: Duration = Duration::from_secs(2);

/// What a harness produced.
enum Measured {
    Numbers {
        metrics: Box<Measurement>,
        warnings: Vec<String>,
        /// Each replica's own numbers, when several were measured.
        per_instance: Vec<ServingMetrics>,
    },
    Failed {
        kind: FailureKind,
        error: String,
    },
}

/// The failure of a run whose engine died under it, classified from its log.
fn engine_died(engine: &Launched, status: std::io::Result<std::process::ExitStatus>) -> Measured {
    let (kind, line) = failure::classify(&engine.log_text());
    let exit = match status {
        Ok(s) => format!("engine exited with {s} during the benchmark"),
        Err(e) => format!("engine was lost during the benchmark: {e}"),
    };
    Measured::Failed {
        kind,
        error: line.map_or(exit.clone(), |l| format!("{exit}: {l}")),
    }
}

fn dataset_seed(workload: &Workload) -> u64 {
    match &workload.dataset {
        Dataset::Random { seed, .. } | Dataset::ShareGpt { seed, .. } => *seed,
    }
}

/// The printed result block and every failed request's error.
fn harness_log(step: &Step, metrics: &ServingMetrics, records: &[RequestRecord]) -> String {
    let mut text = format!("# step `{}`\n", step.name.value);
    text.push_str(&render_serving_block(metrics, &BlockOptions::default()));
    for (i, r) in records.iter().enumerate() {
        if let Some(e) = &r.error {
            let _ = writeln!(text, "request {i}: {e}");
        }
    }
    text
}

/// `call` run from perfpipe's environment at `prefix`: its interpreter runs
/// its program's script, and its `bin` comes first on PATH for what the
/// client starts itself.
fn in_environment(
    mut call: guidellm::Invocation,
    prefix: &std::path::Path,
) -> guidellm::Invocation {
    let [python, script] = crate::fetch::harness_env::program_argv(prefix, &call.argv[0]);
    call.argv.splice(0..1, [python, script]);
    let path = std::env::var("PATH").unwrap_or_default();
    call.env.insert(
        "PATH".into(),
        format!("{}:{path}", prefix.join("bin").display()),
    );
    call
}
