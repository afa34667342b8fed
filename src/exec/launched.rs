//! An engine serving one step's configuration, for as many of its runs as it
//! stays up: started once (minutes of all its GPUs on a real box), health-checked,
//! its prefix cache reset between runs where the engine offers a way, stopped
//! at the end: its container by name, then its process group.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::run::RunContext;
use super::{ExecError, ExecEvent, failure};
use crate::engine::gpus::GpuLease;
use crate::engine::health::{NotReady, wait_ready};
use crate::engine::launch::{self, Placement, container_name};
use crate::engine::leftovers::{self, Recorded};
use crate::engine::process::{EngineProcess, free_port};
use crate::external;
use crate::facts::EngineKind;
use crate::facts::command::{revision_args, serve_argv};
use crate::launch::LaunchRecord;
use crate::plan::PlannedRun;
use crate::store::FailureKind;

const STOP_GRACE: Duration = Duration::from_secs(10);
const LOG_TAIL_LINES: usize = 20;

/// One engine process (or container) on its own GPUs.
struct Instance {
    process: EngineProcess,
    /// Forgotten when the instance is dropped (after its process group is killed).
    _record: Recorded,
    container: Option<String>,
    base_url: String,
    log: PathBuf,
    _leases: Vec<GpuLease>,
}

/// A running configuration: one engine instance, or every replica under `measure=all`.
pub struct Launched {
    instances: Vec<Instance>,
    engine: EngineKind,
    /// The first instance's serve argv, as recorded in results.
    pub argv: Vec<String>,
    /// Every instance's GPUs.
    pub gpu_indices: Vec<u32>,
    log_dir: TempDir,
    id: String,
    runs: usize,
}

/// An engine that could not start.
pub struct StartFailure {
    pub kind: FailureKind,
    pub error: String,
    pub log_tail: String,
    /// The whole log, as the store keeps it.
    pub log: Vec<u8>,
    pub argv: Vec<String>,
    pub gpu_indices: Vec<u32>,
}

impl RunContext<'_> {
    /// Starts the engine of `run`'s step (every replica under `measure=all`,
    /// on disjoint GPUs) and waits until each serves.
    pub async fn start(
        &self,
        run: &PlannedRun,
        report: &mut dyn FnMut(ExecEvent),
    ) -> Result<Result<Launched, StartFailure>, ExecError> {
        let step = self
            .spec
            .step(&run.step)
            .expect("plan runs name declared steps");
        let engine_decl = self
            .spec
            .engine(step.engine)
            .expect("steps name declared engines");
        let sim_program = self.options.sim_program.display().to_string();
        let id = container_name(run.key.as_str());
        let mut env = step.env.clone();
        if step.engine.is_vllm() {
            // Registers `/reset_prefix_cache`, so runs sharing the engine start cold.
            env.insert("VLLM_SERVER_DEV_MODE".into(), "1".into());
        }
        let mut launched = Launched {
            instances: Vec::new(),
            engine: step.engine,
            argv: Vec::new(),
            gpu_indices: Vec::new(),
            log_dir: self.store.launch_dir()?,
            id: id.clone(),
            runs: 0,
        };
        let began = Instant::now();
        // Time spent waiting for GPUs held by others is not the engine's
        // start-up: "engine ready after" leaves it out.
        let mut waited_for_gpus = Duration::ZERO;
        for i in 0..step.instances() {
            let asked = Instant::now();
            let leases = self.gpus(run, step.gpus, report).await?;
            waited_for_gpus += asked.elapsed();
            let gpus: Vec<u32> = leases.iter().map(|l| l.index).collect();
            let port = free_port().map_err(|source| ExecError::System {
                what: "find a free port for the engine",
                source,
            })?;
            let mut args = revision_args(step.engine, &step.model.revision);
            args.extend(step.args.iter().cloned());
            let argv = serve_argv(step.engine, &step.model.id, "127.0.0.1", port, &args);
            let name = if step.instances() > 1 {
                format!("{id}-{i}")
            } else {
                id.clone()
            };
            let spec = launch::launch(
                self.runtime,
                engine_decl,
                &argv,
                &Placement {
                    gpus: &gpus,
                    env: &env,
                    name: &name,
                    hf_home: &hf_home(),
                    sim_program: &sim_program,
                    sim_gpu: &self.spec.hardware.gpu,
                },
            );
            let log = launched.log_dir.path().join(format!("engine-{i}.log"));
            let (process, record) = self.spawn_recorded(
                &spec.program,
                &spec.args,
                &spec.env,
                spec.container.clone(),
                &log,
            )?;
            if launched.argv.is_empty() {
                launched.argv = argv;
            }
            launched.gpu_indices.extend(&gpus);
            launched.instances.push(Instance {
                process,
                _record: record,
                container: spec.container,
                base_url: format!("http://127.0.0.1:{port}"),
                log,
                _leases: leases,
            });
        }
        let timeout = self
            .options
            .startup_timeout
            .unwrap_or_else(|| engine_decl.startup_timeout());
        let mut failed = None;
        for i in 0..launched.instances.len() {
            let mut cancel = self.cancel.clone();
            let instance = &mut launched.instances[i];
            let log = instance.log.clone();
            let mut still_starting = |after: Duration, seen: &crate::engine::health::Seen| {
                let last_line = last_log_line(&log);
                report(ExecEvent::StillStarting {
                    run,
                    after,
                    waiting_for: seen.waiting_for(),
                    last_line: last_line.as_deref(),
                })
            };
            let ready = tokio::select! {
                r = wait_ready(&self.client, &instance.base_url, &step.model.id, &mut instance.process, timeout, &mut still_starting) => r,
                _ = cancel.wait_for(|c| *c) => {
                    launched.stop().await;
                    return Err(ExecError::Interrupted);
                }
            };
            match ready {
                Ok(()) => {
                    let url = &launched.instances[i].base_url;
                    if let Some(error) =
                        served_version_mismatch(&self.client, url, engine_decl).await
                    {
                        failed = Some((FailureKind::Deterministic, error));
                        break;
                    }
                }
                Err(NotReady::Exited(status)) => {
                    let (kind, line) = failure::classify(&launched.log_text());
                    failed = Some((
                        kind,
                        line.unwrap_or_else(|| {
                            format!("engine exited with {status} before it was ready")
                        }),
                    ));
                    break;
                }
                Err(NotReady::TimedOut(after, seen)) => {
                    failed = Some((
                        FailureKind::Transient,
                        NotReady::timed_out_message(after, &seen, &step.model.id),
                    ));
                    break;
                }
            }
        }
        let Some((kind, error)) = failed else {
            report(ExecEvent::EngineReady {
                run,
                after: began.elapsed().saturating_sub(waited_for_gpus),
            });
            return Ok(Ok(launched));
        };
        launched.stop().await;
        let (kind, error) = self
            .blame_foreign_memory(kind, error, &launched.gpu_indices)
            .await;
        Ok(Err(StartFailure {
            kind,
            error,
            log_tail: launched.log_tail(),
            log: launched.log_bytes(),
            argv: launched.argv.clone(),
            gpu_indices: launched.gpu_indices.clone(),
        }))
    }
}

/// The most bytes of an engine's `/version` read (`{"version": "0.11.0"}`):
/// a longer answer, or one without end, is stopped here and counts as none.
const MAX_VERSION_BYTES: u64 = 64 << 10;

/// What is wrong when a started vLLM's `/version` is not the declared
/// version (checked before on PATH from its package's metadata, which a
/// `PATH` change or another environment's `vllm` could belie). `None` when
/// it matches, the engine is not vLLM, or it does not answer `/version`.
async fn served_version_mismatch(
    client: &reqwest::Client,
    base_url: &str,
    engine: &crate::spec::EngineDecl,
) -> Option<String> {
    if !engine.kind.is_vllm() {
        return None;
    }
    let response = client
        .get(format!("{base_url}/version"))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .ok()?;
    let response = response.error_for_status().ok()?;
    let body = crate::tls::body_at_most(response, MAX_VERSION_BYTES)
        .await
        .ok()?;
    let body: serde_json::Value = serde_json::from_slice(&body).ok()?;
    let served = body.get("version")?.as_str()?;
    (!crate::pyenv::versions_match(&engine.version, served)).then(|| {
        format!(
            "{} answers `/version` with `{served}`, but the experiment declares `{}`",
            engine.kind.display_name(),
            engine.version
        )
    })
}

impl RunContext<'_> {
    /// Starts a process, recorded for its life so that the next perfpipe
    /// stops it should this one be killed.
    pub(super) fn spawn_recorded(
        &self,
        program: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
        container: Option<String>,
        log: &Path,
    ) -> Result<(EngineProcess, Recorded), ExecError> {
        let launch = leftovers::Launch {
            pid: 0,
            started: 0,
            container,
            program: program.to_owned(),
        };
        // Recorded first: a container is known by name before it exists.
        let record = self
            .launches
            .record(&launch)
            .map_err(ExecError::LaunchRecords)?;
        let process =
            EngineProcess::spawn(Path::new(program), args, env, log).map_err(|source| {
                ExecError::System {
                    what: "start a process",
                    source,
                }
            })?;
        record
            .started(launch, process.pid())
            .map_err(ExecError::LaunchRecords)?;
        Ok((process, record))
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

    /// Resets every instance's prefix cache; false if any engine offers no way.
    async fn reset_prefix_cache(&self, client: &reqwest::Client) -> bool {
        let path = match self.engine {
            EngineKind::Vllm | EngineKind::VllmAscend => "/reset_prefix_cache",
            EngineKind::Sglang => "/flush_cache",
            EngineKind::Trtllm | EngineKind::Mindie => return false,
        };
        let mut all = true;
        for instance in &self.instances {
            all &= client
                .post(format!("{}{path}", instance.base_url))
                .timeout(Duration::from_secs(60))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
        }
        all
    }

    /// Where requests go: every instance's URL, to be used round-robin.
    pub fn base_urls(&self) -> Vec<String> {
        self.instances.iter().map(|i| i.base_url.clone()).collect()
    }

    /// Each instance's process group (its process and its workers).
    pub fn process_groups(&self) -> Vec<i32> {
        self.instances.iter().map(|i| i.process.pid()).collect()
    }

    pub fn has_exited(&mut self) -> bool {
        self.instances
            .iter_mut()
            .any(|i| i.process.try_exited().is_some())
    }

    /// Waits until any instance exits.
    pub async fn exited(&mut self) -> std::io::Result<std::process::ExitStatus> {
        let exits = self
            .instances
            .iter_mut()
            .map(|i| Box::pin(i.process.exited()));
        futures_util::future::select_all(exits).await.0
    }

    /// Everything the engine has logged so far (each instance's log in
    /// turn), as bytes (an engine may print any), without the environment's
    /// secrets: what the store keeps.
    pub fn log_bytes(&self) -> Vec<u8> {
        let secrets = crate::secrets::env();
        let log = |i: &Instance| {
            let bytes = fs_err::read(&i.log).unwrap_or_default();
            secrets.redact_bytes(&bytes).into_owned()
        };
        match self.instances.as_slice() {
            [one] => log(one),
            all => all
                .iter()
                .enumerate()
                .flat_map(|(i, instance)| {
                    let mut text = format!("== instance {i} ==\n").into_bytes();
                    text.extend(log(instance));
                    text
                })
                .collect(),
        }
    }

    /// The log decoded for reading and matching: a byte that is not UTF-8
    /// becomes U+FFFD and the rest stays.
    pub fn log_text(&self) -> String {
        String::from_utf8_lossy(&self.log_bytes()).into_owned()
    }

    pub fn log_tail(&self) -> String {
        let log = self.log_text();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
    }

    /// Stops each container (killing the docker CLI does not), then its
    /// process group; instances at once, so that replicas stop within
    /// Slurm's `KillWait` (30 s) after a SIGTERM.
    pub async fn stop(&mut self) {
        futures_util::future::join_all(self.instances.iter_mut().map(|instance| async {
            if let Some(name) = &instance.container {
                let _ = external::output(
                    "docker",
                    &["stop", "--time", "10", name],
                    Duration::from_secs(60),
                )
                .await;
            }
            instance.process.stop(STOP_GRACE).await;
        }))
        .await;
    }
}

/// How much of the end of a log is read for its last line.
const LAST_LINE_BYTES: u64 = 4096;

/// The last line with text of the log at `path` (from its last few KiB, so
/// a long log costs no more), without the environment's secrets.
fn last_log_line(path: &Path) -> Option<String> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = fs_err::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(LAST_LINE_BYTES)))
        .ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let bytes = crate::secrets::env().redact_bytes(&bytes).into_owned();
    let text = String::from_utf8_lossy(&bytes);
    // A progress bar redraws with carriage returns: its latest state is last.
    let line = text
        .lines()
        .rev()
        .filter_map(|l| l.rsplit('\r').map(str::trim).find(|p| !p.is_empty()))
        .next()?;
    Some(line.to_owned())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(clippy::disallowed_methods, reason = "a test's own log file")]
    fn the_last_log_line_is_the_latest_text_from_the_logs_end() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("engine.log");
        assert_eq!(last_log_line(&log), None, "no log yet");
        let early = "x".repeat(2 * LAST_LINE_BYTES as usize);
        let text = format!("{early}\nINFO loading weights\nLoading: 10%\rLoading: 40%\r\n\n  \n");
        fs_err::write(&log, text).unwrap();
        assert_eq!(last_log_line(&log).as_deref(), Some("Loading: 40%"));
    }
}
