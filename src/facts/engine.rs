//! Which engine, under which runtime, from which image. (pure)

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Docker,
    Local,
    Sim,
}

impl Runtime {
    pub const NAMES: &[&str] = &["docker", "local", "sim"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "docker" => Some(Self::Docker),
            "local" => Some(Self::Local),
            "sim" => Some(Self::Sim),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Docker => "docker",
            Self::Local => "local",
            Self::Sim => "sim",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EngineKind {
    Vllm,
    Sglang,
    Trtllm,
    /// vLLM with the Ascend NPU plugin: vLLM's CLI and server on Huawei Ascend.
    VllmAscend,
    /// Huawei MindIE (`mindieservice_daemon`, configured by a JSON file).
    Mindie,
}

impl EngineKind {
    pub const NAMES: &[&str] = &["vllm", "sglang", "trtllm", "vllm-ascend", "mindie"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "vllm" => Some(Self::Vllm),
            "sglang" => Some(Self::Sglang),
            "trtllm" => Some(Self::Trtllm),
            "vllm-ascend" => Some(Self::VllmAscend),
            "mindie" => Some(Self::Mindie),
            _ => None,
        }
    }

    /// The name used in files and keys.
    pub fn name(self) -> &'static str {
        match self {
            Self::Vllm => "vllm",
            Self::Sglang => "sglang",
            Self::Trtllm => "trtllm",
            Self::VllmAscend => "vllm-ascend",
            Self::Mindie => "mindie",
        }
    }

    /// The name a reader knows.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::Vllm => "vLLM",
            Self::Sglang => "SGLang",
            Self::Trtllm => "TensorRT-LLM",
            Self::VllmAscend => "vLLM-Ascend",
            Self::Mindie => "MindIE",
        }
    }

    /// vLLM-Ascend is a vLLM plugin: the same `vllm serve` CLI, flags and
    /// server endpoints, so it is started, keyed and reset as vLLM is.
    pub fn is_vllm(self) -> bool {
        matches!(self, Self::Vllm | Self::VllmAscend)
    }

    /// How long a start may take before it counts as hung. Loading hundreds
    /// of GB of weights, compiling and capturing CUDA graphs takes minutes;
    /// TensorRT-LLM also builds and autotunes its engine on first start.
    pub fn default_startup_timeout(self) -> Duration {
        Duration::from_secs(match self {
            Self::Vllm | Self::Sglang | Self::VllmAscend | Self::Mindie => 20 * 60,
            Self::Trtllm => 40 * 60,
        })
    }
}

/// The engine's official image for a version; `image=` on the engine overrides it.
/// A local version (`0.32.0+cpu`) names a build of its public version, whose
/// image it gets: a docker tag cannot hold `+`.
pub fn default_image(engine: EngineKind, version: &str) -> String {
    let version = crate::pyenv::public_version(version);
    match engine {
        EngineKind::Vllm => format!("vllm/vllm-openai:v{version}"),
        EngineKind::Sglang => format!("lmsysorg/sglang:v{version}-cu129"),
        EngineKind::Trtllm => format!("nvcr.io/nvidia/tensorrt-llm/release:{version}"),
        EngineKind::VllmAscend => format!("quay.io/ascend/vllm-ascend:v{version}"),
        // Ascend Hub tags add the machine and OS (`2.1.RC1-800I-A2-py311-…`):
        // `image=` names the exact one.
        EngineKind::Mindie => {
            format!("swr.cn-south-1.myhuaweicloud.com/ascendhub/mindie:{version}")
        }
    }
}
