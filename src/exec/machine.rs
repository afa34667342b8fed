//! What a real runtime needs before any run: the GPUs `nvidia-smi` reports
//! (of the declared type); under `local`, each engine at its declared version;
//! an external harness at its declared version.

use std::time::Duration;

use super::ExecError;
use crate::engine::gpus::{self, Machine};
use crate::external;
use crate::facts::EngineKind;
use crate::spec::{EngineDecl, HarnessKind, Spec};

const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// The machine's GPUs, refused when they are not what the experiment
/// declares; on `hardware "cpu"`, its CPU, refused when it is not the one
/// declared.
pub async fn discover(spec: &Spec) -> Result<Machine, ExecError> {
    if let Some(declared) = &spec.hardware.cpu {
        let cpu = read_cpu().map_err(ExecError::Cpu)?;
        crate::cpu::check(declared, &cpu).map_err(ExecError::Cpu)?;
        return Ok(Machine {
            gpus: Vec::new(),
            cuda_version: String::new(),
            cpu: Some(cpu),
        });
    }
    let smi = |e: external::Error| ExecError::Gpus(e.into());
    let query = external::read("nvidia-smi", gpus::QUERY, TOOL_TIMEOUT)
        .await
        .map_err(smi)?;
    let gpus = gpus::parse_query(&query).map_err(ExecError::Gpus)?;
    let banner = external::output("nvidia-smi", &[], TOOL_TIMEOUT)
        .await
        .map_err(smi)?;
    let machine = Machine {
        gpus,
        cuda_version: gpus::parse_cuda_version(&banner.stdout).unwrap_or_default(),
        cpu: None,
    };
    let declared = crate::gpu::lookup(&spec.hardware.gpu).expect("the spec names a known GPU");
    gpus::check(&machine, declared, spec.hardware.gpus).map_err(ExecError::Gpus)?;
    Ok(machine)
}

/// This machine's CPU, from `/proc/cpuinfo` and `/proc/meminfo`, its
/// logical CPUs limited by the `cpu.max` of this process's cgroup (v2) and
/// its ancestors, where there is one (a container's `--cpus`).
fn read_cpu() -> Result<crate::cpu::CpuFacts, crate::cpu::Error> {
    let read = |path: &str| {
        std::fs::read_to_string(path).map_err(|e| crate::cpu::Error::Unreadable {
            path: path.to_owned(),
            reason: e.to_string(),
        })
    };
    let facts = crate::cpu::parse(&read("/proc/cpuinfo")?, &read("/proc/meminfo")?)?;
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let limits: Vec<String> = crate::cpu::cgroup_v2_paths(&cgroup)
        .iter()
        .filter_map(|p| std::fs::read_to_string(format!("/sys/fs/cgroup{p}/cpu.max")).ok())
        .collect();
    Ok(crate::cpu::limit_cores(facts, &limits))
}

/// The processes holding memory on this machine's GPUs; none when
/// `nvidia-smi` cannot say (it answered [`discover`] moments before).
pub async fn gpu_processes() -> Vec<gpus::GpuProcess> {
    match external::read("nvidia-smi", gpus::PROCESSES_QUERY, TOOL_TIMEOUT).await {
        Ok(stdout) => gpus::parse_processes(&stdout),
        Err(_) => Vec::new(),
    }
}

/// Under `local`, the engine on PATH must be the declared version.
pub async fn check_local_version(engine: &EngineDecl) -> Result<(), ExecError> {
    let (program, package, args): (&str, &str, &[&str]) = match engine.kind {
        EngineKind::Vllm | EngineKind::VllmAscend => ("vllm", "vllm", &["--version"]),
        // Never started: `facts::startable` refuses it before anything runs.
        EngineKind::Mindie => return Ok(()),
        EngineKind::Sglang => (
            "python3",
            "sglang",
            &["-c", "import sglang; print(sglang.__version__)"],
        ),
        EngineKind::Trtllm => (
            "python3",
            "tensorrt_llm",
            &["-c", "import tensorrt_llm; print(tensorrt_llm.__version__)"],
        ),
    };
    let installed = Installed {
        program,
        package,
        args,
    };
    check_version(engine.kind.display_name(), &installed, &engine.version).await
}

/// An external harness must be the declared version: it is part of every key.
/// In perfpipe's environment (`env`), the version its metadata says; else
/// the program on PATH's.
pub async fn check_harness_version(
    harness: &HarnessKind,
    env: Option<&std::path::Path>,
) -> Result<(), ExecError> {
    if let (Some(prefix), Some(wanted)) = (env, crate::lock::HarnessRequirement::of(harness)) {
        let declared = match harness {
            HarnessKind::VllmBench { version } | HarnessKind::Guidellm { version } => version,
            HarnessKind::Builtin => unreachable!("the built-in harness has no environment"),
        };
        let found = crate::pyenv::version_at(prefix, wanted.package).unwrap_or_default();
        if !crate::pyenv::versions_match(declared, &found) {
            return Err(ExecError::Harness(Box::new(ExecError::EngineVersion {
                engine: wanted.program,
                declared: declared.clone(),
                found: format!("{found} (in `{}`)", prefix.display()),
            })));
        }
        return Ok(());
    }
    match harness {
        HarnessKind::Builtin => Ok(()),
        HarnessKind::VllmBench { version } => {
            let installed = Installed {
                program: "vllm",
                package: "vllm",
                args: &["--version"],
            };
            check_version("vllm bench serve", &installed, version).await
        }
        HarnessKind::Guidellm { version } => {
            let installed = Installed {
                program: "guidellm",
                package: "guidellm",
                args: &["--version"],
            };
            check_version("guidellm", &installed, version).await
        }
    }
    .map_err(|e| ExecError::Harness(Box::new(e)))
}

/// A Python program on PATH and the package it belongs to.
struct Installed<'a> {
    program: &'a str,
    package: &'a str,
    /// What prints its version when the package's metadata cannot be found.
    args: &'a [&'a str],
}

/// What `program args` printed, asked once per command: the engine and
/// the `vllm-bench` harness are the same `vllm`, and each ask costs seconds.
static PRINTED: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// The version `program args` prints (the last word: TensorRT-LLM prints a
/// banner on import, guidellm a label, "guidellm version: 0.7.2").
async fn printed_version(
    name: &'static str,
    installed: &Installed<'_>,
) -> Result<String, ExecError> {
    let asked = format!("{} {}", installed.program, installed.args.join(" "));
    let known = PRINTED
        .lock()
        .expect("not poisoned")
        .iter()
        .find(|(a, _)| *a == asked)
        .map(|(_, v)| v.clone());
    if let Some(version) = known {
        return Ok(version);
    }
    let stdout = external::read(installed.program, installed.args, TOOL_TIMEOUT)
        .await
        .map_err(|source| ExecError::EngineMissing {
            engine: name,
            source,
        })?;
    let version = stdout.split_whitespace().last().unwrap_or("").to_owned();
    PRINTED
        .lock()
        .expect("not poisoned")
        .push((asked, version.clone()));
    Ok(version)
}

/// Compares the installed version with `declared`: read from the package's
/// metadata in the program's environment (a file read), else from what
/// `program args` prints (`vllm --version` imports torch: 25-50 s).
async fn check_version(
    name: &'static str,
    installed: &Installed<'_>,
    declared: &str,
) -> Result<(), ExecError> {
    let found = match crate::pyenv::installed_version(installed.program, installed.package) {
        Some(found) => found,
        None => printed_version(name, installed).await?,
    };
    if !crate::pyenv::versions_match(declared, &found) {
        return Err(ExecError::EngineVersion {
            engine: name,
            declared: declared.to_owned(),
            found: found.trim_start_matches('v').to_owned(),
        });
    }
    Ok(())
}
