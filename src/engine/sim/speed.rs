//! The simulated engine's speed: a small model of continuous batching, in
//! wall-clock microseconds, so a whole study runs in minutes on a CPU.
//!
//! One engine step costs
//!
//! ```text
//! step_us = scale × (OVERHEAD_US + DECODE_US_PER_SEQ × decoding_seqs × decode_factor
//!                    + PREFILL_US_PER_TOKEN × prefill_tokens × prefill_factor) + comm_us
//! scale   = (active params / 14B) × gpu_factor × engine_factor / tp^0.8
//! comm_us = COMM_US × log2(tp)  (+20 % with expert parallelism: all-to-all)
//! ```
//!
//! with `gpu_factor` 1 for SM 8.x and 0.5 for SM 9.x, `engine_factor` 1.0 for
//! vLLM, 0.85 for SGLang and 0.8 for TensorRT-LLM, and quantization factors
//! (FP8 on SM < 8.9 is w8a16: decode ×0.8, prefill ×1.15; native FP8: ×0.6
//! both; AWQ: decode ×0.6, prefill ×1.3). Each step serves every running
//! sequence one token and spends the rest of the token budget on prefill.
//! These constants make flags and workloads move the numbers in the
//! direction a GPU would; they do not predict a GPU's numbers.

use super::config::SimConfig;
use super::support::{ModelInfo, Quantization};
use crate::facts::EngineKind;
use crate::gpu::GpuType;

const OVERHEAD_US: f64 = 6000.0;
const DECODE_US_PER_SEQ: f64 = 24.0;
const PREFILL_US_PER_TOKEN: f64 = 1.2;
const COMM_US: f64 = 250.0;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speed {
    scale: f64,
    decode_factor: f64,
    prefill_factor: f64,
    comm_us: f64,
}

impl Speed {
    pub fn new(config: &SimConfig, gpu: &GpuType, model: &ModelInfo) -> Self {
        let gpu_factor = if gpu.sm >= 90 { 0.5 } else { 1.0 };
        let engine_factor = match config.engine {
            EngineKind::Vllm | EngineKind::VllmAscend => 1.0,
            EngineKind::Sglang => 0.85,
            // A vendor's own engine (MindIE is never simulated: `parse_argv`).
            EngineKind::Trtllm | EngineKind::Mindie => 0.8,
        };
        let tp = f64::from(config.tensor_parallel);
        let (decode_factor, prefill_factor) = match Quantization::of_model(&config.model) {
            Quantization::Bf16 => (1.0, 1.0),
            Quantization::Fp8 if gpu.sm < 89 => (0.8, 1.15),
            Quantization::Fp8 => (0.6, 0.6),
            Quantization::Awq => (0.6, 1.3),
        };
        let ep = if config.expert_parallel { 1.2 } else { 1.0 };
        Self {
            scale: model.active_params_b / 14.0 * gpu_factor * engine_factor / tp.powf(0.8),
            decode_factor,
            prefill_factor,
            comm_us: COMM_US * tp.log2() * ep,
        }
    }

    /// Microseconds one step takes.
    pub fn step_us(&self, decoding_seqs: usize, prefill_tokens: usize) -> f64 {
        self.scale
            * (OVERHEAD_US
                + DECODE_US_PER_SEQ * decoding_seqs as f64 * self.decode_factor
                + PREFILL_US_PER_TOKEN * prefill_tokens as f64 * self.prefill_factor)
            + self.comm_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sim::config::parse_argv;
    use crate::engine::sim::support::model_info;
    use crate::gpu;

    fn speed(argv: &str, gpu: &str) -> Speed {
        let gpu = gpu::lookup(gpu).unwrap();
        let argv: Vec<String> = argv.split_whitespace().map(str::to_owned).collect();
        let config = parse_argv(&argv, gpu.sm).unwrap();
        Speed::new(&config, gpu, &model_info(&config.model))
    }

    #[test]
    fn flags_move_step_time_the_way_hardware_would() {
        let a100 = "nvidia-a100-sxm4-80gb";
        let base = speed("vllm serve Qwen/Qwen3-14B", a100).step_us(256, 0);
        assert!(speed("trtllm-serve Qwen/Qwen3-14B", a100).step_us(256, 0) < base);
        assert!(speed("vllm serve Qwen/Qwen3-14B -tp 2", a100).step_us(256, 0) < base);
        assert!(speed("vllm serve Qwen/Qwen3-14B-FP8", a100).step_us(256, 0) < base);
        assert!(speed("vllm serve Qwen/Qwen3-14B", "nvidia-h100-sxm5-80gb").step_us(256, 0) < base);
        assert!(speed("vllm serve Qwen/Qwen3-14B", a100).step_us(256, 2048) > base);
    }
}
