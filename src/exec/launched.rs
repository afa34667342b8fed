//! An engine serving one step's configuration, for as many of its runs as it
//! stays up: started once (minutes of all its GPUs on a real box), health-checked,
//! its prefix cache reset between runs where the engine offers a way, stopped
//! at the end: its container by name, then its process group.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tempfile::TempDir;

use super::run::RunContext;
use super::{ExecError, ExecEvent, failure};
use crate::engine::command::serve_argv;
use crate::engine::gpus::GpuLease;
use crate::engine::health::{NotReady, wait_ready};
use crate::engine::launch::{self, Placement, container_name};
use crate::engine::process::{EngineProcess, free_port, run_tool};
use crate::plan::PlannedRun;
use crate::spec::EngineKind;
use crate::store::FailureKind;

const STOP_GRACE: Duration = Duration::from_secs(10);
const LOG_TAIL_LINES: usize = 20;

/// Where a run's numbers came from, engine-wise (in `result.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchRecord {
    /// The launch, named after the first run it served.
    pub id: String,
    /// 1 for the first run on this engine, 2 for the next, ...
    pub position: usize,
    /// `fresh` (first run), `reset` (prefix cache reset before this run) or
    /// `warm` (the engine offers no way to reset it).
    pub prefix_cache: String,
}

/// A running engine.
pub struct Launched {
    process: EngineProcess,
    container: Option<String>,
    engine: EngineKind,
    pub base_url: String,
    /// The serve argv, as recorded in results.
    pub argv: Vec<String>,
    pub gpu_indices: Vec<u32>,
    _leases: Vec<GpuLease>,
    log: PathBuf,
    _log_dir: TempDir,
    id: String,
    runs: usize,
}

/// An engine that could not start.
pub struct StartFailure {
    pub kind: FailureKind,
    pub error: String,
    pub log_tail: String,
    pub argv: Vec<String>,
    pub gpu_indices: Vec<u32>,
}

impl RunContext<'_> {
    /// Starts the engine of `run`'s step and waits until it serves.
    pub async fn start(
        &self,
        run: &PlannedRun,
        report: &mut dyn FnMut(ExecEvent),
    ) -> Result<Result<Launched, StartFailure>, ExecError> {
        let step = self
            .spec
            .step(&run.step)
            .expect("plan runs name declared steps");
        let leases = self.gpus(run, step.gpus, report).await?;
        let gpu_indices: Vec<u32> = leases.iter().map(|l| l.index).collect();
        let port = free_port().map_err(crate::store::Error::Io)?;
        let argv = serve_argv(step.engine, &step.model.id, "127.0.0.1", port, &step.args);
        let engine_decl = self
            .spec
            .engine(step.engine)
            .expect("steps name declared engines");
        let sim_program = self.options.sim_program.display().to_string();
        let id = container_name(run.key.as_str());
        let mut env = step.env.clone();
        if step.engine == EngineKind::Vllm {
            // Registers `/reset_prefix_cache`, so runs sharing the engine start cold.
            env.insert("VLLM_SERVER_DEV_MODE".into(), "1".into());
        }
        let spec = launch::launch(
            self.runtime,
            engine_decl,
            &argv,
            &Placement {
                gpus: &gpu_indices,
                env: &env,
                name: &id,
                hf_home: &hf_home(),
                sim_program: &sim_program,
                sim_gpu: &self.spec.hardware.gpu,
            },
        );
        let log_dir = self.store.launch_dir()?;
        let log = log_dir.path().join("engine.log");
        let process = EngineProcess::spawn(Path::new(&spec.program), &spec.args, &spec.env, &log)
            .map_err(crate::store::Error::Io)?;
        let mut launched = Launched {
            process,
            container: spec.container,
            engine: step.engine,
            base_url: format!("http://127.0.0.1:{port}"),
            argv,
            gpu_indices,
            _leases: leases,
            log,
            _log_dir: log_dir,
            id,
            runs: 0,
        };
        let began = Instant::now();
        let mut cancel = self.cancel.clone();
        let ready = tokio::select! {
            r = wait_ready(&self.client, &launched.base_url, &mut launched.process, self.options.startup_timeout) => r,
            _ = cancel.wait_for(|c| *c) => {
                launched.stop().await;
                return Err(ExecError::Interrupted);
            }
        };
        let failed = match ready {
            Ok(()) => {
                report(ExecEvent::EngineReady {
                    run,
                    after: began.elapsed(),
                });
                return Ok(Ok(launched));
            }
            Err(NotReady::Exited(status)) => {
                let (kind, line) = failure::classify(&launched.log_text());
                (
                    kind,
                    line.unwrap_or_else(|| {
                        format!("engine exited with {status} before it was ready")
                    }),
                )
            }
            Err(NotReady::TimedOut(after)) => (
                FailureKind::Transient,
                format!("engine did not answer /health within {}s", after.as_secs()),
            ),
        };
        launched.stop().await;
        Ok(Err(StartFailure {
            kind: failed.0,
            error: failed.1,
            log_tail: launched.log_tail(),
            argv: launched.argv.clone(),
            gpu_indices: launched.gpu_indices.clone(),
        }))
    }
}

impl Launched {
    /// Readies the engine for its next run; what the run's provenance says of it.
    pub async fn next_run(&mut self, client: &reqwest::Client) -> LaunchRecord {
        self.runs += 1;
        let prefix_cache = if self.runs == 1 {
            "fresh"
        } else if self.reset_prefix_cache(client).await {
            "reset"
        } else {
            "warm"
        };
        LaunchRecord {
            id: self.id.clone(),
            position: self.runs,
            prefix_cache: prefix_cache.into(),
        }
    }

    async fn reset_prefix_cache(&self, client: &reqwest::Client) -> bool {
        let path = match self.engine {
            EngineKind::Vllm => "/reset_prefix_cache",
            EngineKind::Sglang => "/flush_cache",
            EngineKind::Trtllm => return false,
        };
        client
            .post(format!("{}{path}", self.base_url))
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    }

    pub fn has_exited(&mut self) -> bool {
        self.process.try_exited().is_some()
    }

    pub async fn exited(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.process.exited().await
    }

    /// Everything the engine has logged so far.
    pub fn log_text(&self) -> String {
        fs_err::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn log_tail(&self) -> String {
        let log = self.log_text();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
    }

    /// Stops the container (killing the docker CLI does not), then the process group.
    pub async fn stop(&mut self) {
        if let Some(name) = &self.container {
            let _ = run_tool(
                "docker",
                &["stop", "--time", "10", name],
                Duration::from_secs(60),
            )
            .await;
        }
        self.process.stop(STOP_GRACE).await;
    }
}

/// The Hugging Face cache a container mounts: `HF_HOME`, else `~/.cache/huggingface`.
fn hf_home() -> String {
    std::env::var("HF_HOME").unwrap_or_else(|_| {
        format!(
            "{}/.cache/huggingface",
            std::env::var("HOME").unwrap_or_default()
        )
    })
}
