//! One run on a launched engine: its dataset, the benchmark, its result.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Duration;

use tokio::sync::watch;

use super::launched::{Launched, StartFailure};
use super::{ExecError, ExecEvent, ExecOptions, failure};
use crate::engine::SIM_ENGINE_VERSION;
use crate::engine::gpus::{self, GpuLease, Machine};
use crate::harness::{self, BenchRequest, Load, RequestSettings};
use crate::inputs::ResolvedInputs;
use crate::metrics::{
    BlockOptions, MetricOptions, Provenance, RequestRecord, ServingMetrics, render_serving_block,
};
use crate::plan::PlannedRun;
use crate::spec::{Dataset, ModelRef, Runtime, Spec, Step, Workload};
use crate::store::{FailureKind, KeyLock, Outcome, PendingSample, RunResult, Store};

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
    pub cancel: watch::Receiver<bool>,
    pub host: String,
}

/// How one attempt ended.
pub enum Attempt {
    /// A result to commit: metrics, or a failure that will happen again.
    Done(RunResult, PendingSample),
    /// A failure that may not happen again (engine lost to a transient cause).
    Transient(RunResult),
}

impl RunContext<'_> {
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

    /// Benchmarks `run` on `engine`. An engine that dies meanwhile fails the run.
    pub async fn bench(
        &self,
        engine: &mut Launched,
        run: &PlannedRun,
        report: &mut dyn FnMut(ExecEvent),
    ) -> Result<Attempt, ExecError> {
        let step = self
            .spec
            .step(&run.step)
            .expect("plan runs name declared steps");
        let workload = self
            .spec
            .workload(&run.workload)
            .expect("plan runs name declared workloads");
        let requests = self.requests(workload, &step.model).await?;
        let launch = engine.next_run(&self.client).await;
        report(ExecEvent::Benchmarking {
            run,
            requests: requests.len(),
            position: launch.position,
        });
        let pending = self.store.begin_sample()?;
        let started_at = crate::clock::unix_now();
        let settings = RequestSettings {
            url: format!("{}{}", engine.base_url, self.spec.harness.endpoint),
            backend: self.spec.harness.backend,
            model: step.model.id.clone(),
            temperature: self.spec.harness.temperature,
            ignore_eos: self.spec.harness.ignore_eos,
        };
        let options = MetricOptions::default();
        let load = Load::new(workload.rate, workload.concurrency, dataset_seed(workload));
        let mut journal =
            std::io::BufWriter::new(pending.journal().map_err(crate::store::Error::Io)?);
        let mut write_line = |index: usize, record: &RequestRecord| {
            let line = serde_json::json!({"index": index, "record": record});
            let _ = writeln!(journal, "{line}");
            let _ = journal.flush();
        };
        let mut cancel = self.cancel.clone();
        let bench = harness::benchmark(
            &self.client,
            &settings,
            requests,
            &load,
            &options,
            &mut write_line,
        );
        let outcome = tokio::select! {
            out = bench => Ok(out),
            status = engine.exited() => Err(status),
            _ = cancel.wait_for(|c| *c) => return Err(ExecError::Interrupted),
        };
        pending
            .write_log("engine.log", &engine.log_text())
            .map_err(crate::store::Error::Io)?;
        let result = |outcome: Outcome| RunResult {
            key: run.key.to_string(),
            outcome,
            provenance: self.provenance(started_at, &engine.gpu_indices),
            engine_command: engine.argv.clone(),
            engine_launch: Some(launch.clone()),
        };
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(status) => {
                let (kind, line) = failure::classify(&engine.log_text());
                let exit = match status {
                    Ok(s) => format!("engine exited with {s} during the benchmark"),
                    Err(e) => format!("engine was lost during the benchmark: {e}"),
                };
                let error = line.map_or(exit.clone(), |l| format!("{exit}: {l}"));
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
        let metrics = outcome.metrics;
        pending
            .write_log(
                "harness.log",
                &harness_log(step, &metrics, &outcome.records),
            )
            .map_err(crate::store::Error::Io)?;
        if metrics.completed == 0 {
            let first = outcome
                .records
                .iter()
                .find_map(|r| r.error.clone())
                .unwrap_or_default();
            let error = format!("every request failed; first error: {first}");
            let r = result(Outcome::Failure {
                kind: FailureKind::Deterministic,
                error,
                log_tail: engine.log_tail(),
            });
            return Ok(Attempt::Done(r, pending));
        }
        let warnings = outcome.warnings;
        Ok(Attempt::Done(
            result(Outcome::Success {
                metrics: Box::new(metrics),
                warnings,
            }),
            pending,
        ))
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
        let mut cancel = self.cancel.clone();
        let mut announced = false;
        loop {
            if let Some(leases) = gpus::try_acquire(&machine.gpus, n as usize, &gpus::lock_dir())
                .map_err(ExecError::Gpus)?
            {
                return Ok(leases);
            }
            if !announced {
                report(ExecEvent::WaitingForGpus { run, needed: n });
                announced = true;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = cancel.wait_for(|c| *c) => return Err(ExecError::Interrupted),
            }
        }
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

    /// The workload's requests; building 100 prompts of 32,000 tokens takes a
    /// moment, so it runs off the async threads and before the engine starts.
    async fn requests(
        &self,
        workload: &Workload,
        model: &ModelRef,
    ) -> Result<Vec<BenchRequest>, ExecError> {
        let dataset = workload.dataset.clone();
        let n = workload.prompts;
        let name = workload.name.value.clone();
        let path = self.inputs.dataset(&name).map(|d| d.path.clone());
        let tokenizer = self.inputs.tokenizer(model);
        tokio::task::spawn_blocking(move || {
            let tokenizer = tokenizer.load().map_err(ExecError::Tokenizer)?;
            match dataset {
                Dataset::Random {
                    input_len,
                    output_len,
                    range_ratio,
                    seed,
                } => Ok(harness::dataset::random(
                    &tokenizer,
                    input_len,
                    output_len,
                    range_ratio,
                    seed,
                    n,
                )),
                Dataset::ShareGpt {
                    output_len, seed, ..
                } => {
                    let path = path.expect("inputs resolve every sharegpt dataset");
                    let text =
                        fs_err::read_to_string(&path).map_err(|source| ExecError::DatasetRead {
                            path: path.display().to_string(),
                            source,
                        })?;
                    harness::dataset::sharegpt(&tokenizer, &text, n, seed, output_len).map_err(
                        |source| ExecError::Dataset {
                            workload: name,
                            source,
                        },
                    )
                }
            }
        })
        .await
        .expect("dataset sampling does not panic")
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
