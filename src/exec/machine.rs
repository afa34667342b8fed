//! What a real runtime needs before any run: the GPUs `nvidia-smi` reports
//! (of the declared type); under `local`, each engine at its declared version;
//! an external harness at its declared version.

use std::time::Duration;

use super::ExecError;
use crate::engine::gpus::{self, Machine};
use crate::engine::process::run_tool;
use crate::spec::{EngineDecl, EngineKind, HarnessKind, Spec};

const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// The machine's GPUs, refused when they are not what the experiment declares.
pub async fn discover(spec: &Spec) -> Result<Machine, ExecError> {
    let smi = |e: std::io::Error| ExecError::Gpus(gpus::Error::NvidiaSmi(e.to_string()));
    let query = run_tool("nvidia-smi", gpus::QUERY, TOOL_TIMEOUT)
        .await
        .map_err(smi)?;
    if !query.status.success() {
        let err = String::from_utf8_lossy(&query.stderr).trim().to_owned();
        return Err(ExecError::Gpus(gpus::Error::NvidiaSmi(err)));
    }
    let gpus =
        gpus::parse_query(&String::from_utf8_lossy(&query.stdout)).map_err(ExecError::Gpus)?;
    let banner = run_tool("nvidia-smi", &[], TOOL_TIMEOUT)
        .await
        .map_err(smi)?;
    let machine = Machine {
        gpus,
        cuda_version: gpus::parse_cuda_version(&String::from_utf8_lossy(&banner.stdout))
            .unwrap_or_default(),
    };
    let declared = crate::gpu::lookup(&spec.hardware.gpu).expect("the spec names a known GPU");
    gpus::check(&machine, declared, spec.hardware.gpus).map_err(ExecError::Gpus)?;
    Ok(machine)
}

/// The processes holding memory on this machine's GPUs; none when
/// `nvidia-smi` cannot say (it answered [`discover`] moments before).
pub async fn gpu_processes() -> Vec<gpus::GpuProcess> {
    match run_tool("nvidia-smi", gpus::PROCESSES_QUERY, TOOL_TIMEOUT).await {
        Ok(out) if out.status.success() => {
            gpus::parse_processes(&String::from_utf8_lossy(&out.stdout))
        }
        _ => Vec::new(),
    }
}

/// Under `local`, the engine on PATH must be the declared version.
pub async fn check_local_version(engine: &EngineDecl) -> Result<(), ExecError> {
    let (program, args): (&str, &[&str]) = match engine.kind {
        EngineKind::Vllm | EngineKind::VllmAscend => ("vllm", &["--version"]),
        // Never started: `engine::startable` refuses it before anything runs.
        EngineKind::Mindie => return Ok(()),
        EngineKind::Sglang => (
            "python3",
            &["-c", "import sglang; print(sglang.__version__)"],
        ),
        EngineKind::Trtllm => (
            "python3",
            &["-c", "import tensorrt_llm; print(tensorrt_llm.__version__)"],
        ),
    };
    check_version(engine.kind.display_name(), program, args, &engine.version).await
}

/// An external harness must be the declared version: it is part of every key.
pub async fn check_harness_version(harness: &HarnessKind) -> Result<(), ExecError> {
    match harness {
        HarnessKind::Builtin => Ok(()),
        HarnessKind::VllmBench { version } => {
            check_version("vllm bench serve", "vllm", &["--version"], version).await
        }
        HarnessKind::Guidellm { version } => {
            check_version("guidellm", "guidellm", &["--version"], version).await
        }
    }
    .map_err(|e| ExecError::Harness(Box::new(e)))
}

/// Runs `program args` and compares the last line it prints with `declared`.
async fn check_version(
    name: &'static str,
    program: &str,
    args: &[&str],
    declared: &str,
) -> Result<(), ExecError> {
    let missing = |detail: String| ExecError::EngineMissing {
        engine: name,
        command: format!("{program} {}", args.join(" ")),
        detail,
    };
    let output = run_tool(program, args, TOOL_TIMEOUT)
        .await
        .map_err(|e| missing(e.to_string()))?;
    if !output.status.success() {
        return Err(missing(
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ));
    }
    // TensorRT-LLM prints a banner on import and guidellm a label
    // ("guidellm version: 0.7.2"): the version is the last word printed.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let found = stdout.split_whitespace().last().unwrap_or("");
    let found = found.trim_start_matches('v');
    if found != declared.trim_start_matches('v') {
        return Err(ExecError::EngineVersion {
            engine: name,
            declared: declared.to_owned(),
            found: found.to_owned(),
        });
    }
    Ok(())
}
