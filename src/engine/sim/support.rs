//! What each engine can run on each GPU generation, so the simulated engine
//! fails at start where the real one does, with the real one's error.
//!
//! | engine | condition | error (as the engine prints it) |
//! |---|---|---|
//! | TensorRT-LLM | FP8 model on SM < 89 (A100) | `RuntimeError: Unsupported SM version for FP8 block scaling GEMM` (14B study) |
//! | TensorRT-LLM | AWQ checkpoint | `KeyError: 'weight'` (14B study, v1.2.0rc1) |
//! | SGLang | FP8 model on SM < 89 | `FP8 quantization is not supported on A100` (235B study: "does not work") |
//! | vLLM | FP8 on SM < 89 | runs, through its w8a16 Marlin kernels (235B study) |
//! | vLLM | block-FP8 MoE whose expert width / TP is not a multiple of 128, without expert parallelism | `ValueError: The output_size of gate's and up's weight = … is not divisible by weight quantization block_n = 128.` |
//! | any | weights / TP larger than 90% of GPU memory | `torch.OutOfMemoryError: CUDA out of memory` |

use super::config::SimConfig;
use crate::facts::EngineKind;
use crate::gpu::GpuType;

/// What the simulator knows of a model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    /// Billions of parameters stored.
    pub params_b: f64,
    /// Billions of parameters used per token (MoE: the active experts).
    pub active_params_b: f64,
    /// Intermediate size of one MoE expert, if the model is a MoE.
    pub moe_intermediate_size: Option<u32>,
    pub max_model_len: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantization {
    Bf16,
    Fp8,
    Awq,
}

impl Quantization {
    pub fn of_model(model: &str) -> Self {
        let upper = model.to_ascii_uppercase();
        if upper.contains("FP8") {
            Self::Fp8
        } else if upper.contains("AWQ") {
            Self::Awq
        } else {
            Self::Bf16
        }
    }

    pub fn bytes_per_param(self) -> f64 {
        match self {
            Self::Bf16 => 2.0,
            Self::Fp8 => 1.0,
            Self::Awq => 0.5,
        }
    }
}

/// Known models by their Hugging Face id without the quantization suffix.
pub fn model_info(model: &str) -> ModelInfo {
    let base = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    if base.starts_with("qwen3-235b-a22b") {
        ModelInfo {
            params_b: 235.0,
            active_params_b: 22.0,
            moe_intermediate_size: Some(1536),
            max_model_len: 262_144,
        }
    } else if base.starts_with("qwen3-30b-a3b") {
        ModelInfo {
            params_b: 30.5,
            active_params_b: 3.3,
            moe_intermediate_size: Some(768),
            max_model_len: 262_144,
        }
    } else {
        // A dense model: its size from a `<n>B` in its name, else 8B.
        let params_b = base
            .split(['-', '_'])
            .find_map(|part| part.strip_suffix('b')?.parse::<f64>().ok())
            .unwrap_or(8.0);
        ModelInfo {
            params_b,
            active_params_b: params_b,
            moe_intermediate_size: None,
            max_model_len: 40_960,
        }
    }
}

/// The error the real engine would stop with, if it cannot serve this configuration.
pub fn startup_error(config: &SimConfig, gpu: &GpuType) -> Option<String> {
    let quant = Quantization::of_model(&config.model);
    let info = model_info(&config.model);
    let family = gpu
        .marketing_name
        .split([' ', '-'])
        .nth(1)
        .unwrap_or(gpu.marketing_name);
    match (config.engine, quant) {
        (EngineKind::Trtllm, Quantization::Fp8) if gpu.sm < 89 => {
            return Some("RuntimeError: Unsupported SM version for FP8 block scaling GEMM".into());
        }
        (EngineKind::Trtllm, Quantization::Awq) => return Some("KeyError: 'weight'".into()),
        (EngineKind::Sglang, Quantization::Fp8) if gpu.sm < 89 => {
            return Some(format!("FP8 quantization is not supported on {family}"));
        }
        (EngineKind::Vllm, Quantization::Fp8) if !config.expert_parallel => {
            if let Some(width) = info.moe_intermediate_size {
                let shard = width / config.tensor_parallel;
                if !shard.is_multiple_of(128) {
                    return Some(format!(
                        "ValueError: The output_size of gate's and up's weight = {shard} is not divisible by weight quantization block_n = 128."
                    ));
                }
            }
        }
        _ => {}
    }
    let weights_gib = info.params_b * quant.bytes_per_param() * 1e9 / f64::from(1u32 << 30);
    let per_gpu = weights_gib / f64::from(config.tensor_parallel);
    if per_gpu > 0.9 * f64::from(gpu.memory_gib) {
        return Some(format!(
            "torch.OutOfMemoryError: CUDA out of memory. Model weights need {per_gpu:.1} GiB per GPU; the GPU has {} GiB",
            gpu.memory_gib
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sim::config::parse_argv;
    use crate::gpu;

    fn error(argv: &str, gpu: &str) -> Option<String> {
        let gpu = gpu::lookup(gpu).unwrap();
        let argv: Vec<String> = argv.split_whitespace().map(str::to_owned).collect();
        startup_error(&parse_argv(&argv, gpu.sm).unwrap(), gpu)
    }

    #[test]
    fn published_failures_on_a100() {
        let a100 = "nvidia-a100-sxm4-80gb";
        assert_eq!(
            error("trtllm-serve Qwen/Qwen3-14B-FP8", a100).as_deref(),
            Some("RuntimeError: Unsupported SM version for FP8 block scaling GEMM")
        );
        assert_eq!(
            error("trtllm-serve Qwen/Qwen3-14B-AWQ", a100).as_deref(),
            Some("KeyError: 'weight'")
        );
        assert_eq!(
            error("python3 -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 --tp-size 8", a100).as_deref(),
            Some("FP8 quantization is not supported on A100")
        );
        assert!(
            error(
                "vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 -tp 8",
                a100
            )
            .unwrap()
            .contains("= 192 is not divisible")
        );
    }

    #[test]
    fn what_runs_on_a100_and_h100() {
        let a100 = "nvidia-a100-sxm4-80gb";
        assert_eq!(error("vllm serve Qwen/Qwen3-14B-FP8", a100), None);
        assert_eq!(
            error(
                "vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 -tp 8 --enable-expert-parallel",
                a100
            ),
            None
        );
        assert_eq!(
            error(
                "vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 -tp 4",
                a100
            ),
            None
        );
        assert_eq!(
            error("trtllm-serve Qwen/Qwen3-14B-FP8", "nvidia-h100-sxm5-80gb"),
            None
        );
    }

    #[test]
    fn weights_that_do_not_fit_fail_with_oom() {
        let err = error(
            "vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507 -tp 4",
            "nvidia-a100-sxm4-80gb",
        )
        .unwrap();
        assert!(err.starts_with("torch.OutOfMemoryError"), "{err}");
    }
}
