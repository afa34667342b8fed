//! Everything that can change a run's numbers, and nothing else.
//!
//! In: model id and revision (and a local model directory's sha256); engine, version and runtime (with the simulated
//! engine's own version); the canonical serve argv; declared environment; GPU
//! type and GPUs per instance; the harness, its version and every option with
//! its default made explicit, and the tokenizer (`whitespace-v1`, or the
//! sha256 of the model's `tokenizer.json`); the workload (dataset identity
//! and sha256, its conversion, lengths, prompts, seed, rate, arrival process,
//! concurrency cap).
//! Out: step and workload names, titles, comments, file layout, expectations,
//! comparisons, and `replicas` under `measure=one` (one instance is measured,
//! the published convention, so it shares the single instance's key); under
//! `measure=all` the number of instances measured together enters.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::KEY_SCHEMA_VERSION;
use crate::facts::BUILTIN_HARNESS_VERSION;
use crate::facts::Runtime;
use crate::facts::SIM_ENGINE_VERSION;
use crate::facts::flags::canonical_args;
use crate::inputs::ResolvedInputs;
use crate::spec::{
    Arrival, Dataset, HarnessKind, RequestRate, SharegptConversion, Spec, Step, Workload,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyMaterial {
    pub schema: u32,
    pub runtime: RuntimeMaterial,
    pub engine: EngineMaterial,
    pub model: ModelMaterial,
    pub serve_args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub hardware: HardwareMaterial,
    pub harness: HarnessMaterial,
    pub workload: WorkloadMaterial,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeMaterial {
    pub name: String,
    /// The simulated engine's version under `sim`, else `null`.
    pub sim_engine_version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineMaterial {
    pub name: String,
    pub version: String,
    /// The container image under `docker` (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMaterial {
    pub id: String,
    pub revision: String,
    /// The sha256 of a local model directory's files (every file the
    /// engine reads); absent for a Hub model, whose commit is `revision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HardwareMaterial {
    pub gpu: String,
    pub gpus_per_instance: u32,
    /// Instances measured together (`measure=all`); absent for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<u32>,
    /// The CPU of `hardware "cpu"`; absent on GPUs, so their keys are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<crate::spec::CpuDecl>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessMaterial {
    pub name: String,
    pub version: String,
    pub backend: String,
    pub endpoint: String,
    pub temperature: f64,
    pub ignore_eos: bool,
    pub percentile_metrics: String,
    pub metric_percentiles: String,
    pub tokenizer: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadMaterial {
    pub dataset: DatasetMaterial,
    pub num_prompts: u32,
    /// `"inf"` or requests per second.
    pub request_rate: String,
    /// `"constant"` at a finite rate; absent for Poisson (the only arrival
    /// before it entered the key) and at `inf`, so those keys are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<String>,
    pub max_concurrency: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DatasetMaterial {
    Sharegpt {
        sha256: String,
        output_len: Option<u32>,
        seed: u64,
        /// `"benchmark-runner"`; absent for vLLM's sampling (the only one
        /// before it entered the key), so those keys are unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversion: Option<String>,
    },
    Random {
        input_len: u32,
        output_len: u32,
        range_ratio: f64,
        seed: u64,
    },
}

impl KeyMaterial {
    /// The key material of one run. `inputs` must hold the workload's dataset.
    pub fn new(
        spec: &Spec,
        runtime: Runtime,
        step: &Step,
        workload: &Workload,
        inputs: &ResolvedInputs,
    ) -> Self {
        let decl = spec.engine(step.engine);
        let version = decl.map(|e| e.version.clone()).unwrap_or_default();
        let image = decl.filter(|_| runtime == Runtime::Docker).map(|e| {
            e.image
                .clone()
                .unwrap_or_else(|| crate::facts::default_image(e.kind, &e.version))
        });
        let harness = &spec.harness;
        KeyMaterial {
            schema: KEY_SCHEMA_VERSION,
            runtime: RuntimeMaterial {
                name: runtime.name().into(),
                sim_engine_version: (runtime == Runtime::Sim).then(|| SIM_ENGINE_VERSION.into()),
            },
            engine: EngineMaterial {
                name: step.engine.name().into(),
                version,
                image,
            },
            model: ModelMaterial {
                id: step.model.id.clone(),
                revision: step.model.revision.clone(),
                sha256: inputs.model(&step.model.id).map(|m| m.sha256.clone()),
            },
            serve_args: canonical_args(step.engine, &step.args),
            env: step.env.clone(),
            hardware: HardwareMaterial {
                gpu: spec.hardware.gpu.clone(),
                gpus_per_instance: step.gpus,
                instances: (step.instances() > 1).then_some(step.instances()),
                cpu: spec.hardware.cpu.clone(),
            },
            harness: HarnessMaterial {
                name: harness.kind.name().into(),
                version: match &harness.kind {
                    HarnessKind::Builtin => BUILTIN_HARNESS_VERSION.into(),
                    HarnessKind::VllmBench { version } | HarnessKind::Guidellm { version } => {
                        version.clone()
                    }
                },
                backend: harness.backend.name().into(),
                endpoint: harness.endpoint.clone(),
                temperature: harness.temperature,
                ignore_eos: harness.ignore_eos,
                percentile_metrics: "ttft,tpot,itl,e2el".into(),
                metric_percentiles: "99".into(),
                tokenizer: inputs.tokenizer(&step.model).id,
            },
            workload: WorkloadMaterial {
                dataset: match &workload.dataset {
                    Dataset::ShareGpt {
                        output_len,
                        seed,
                        conversion,
                        ..
                    } => DatasetMaterial::Sharegpt {
                        sha256: inputs
                            .dataset(&workload.name.value)
                            .map(|d| d.sha256.clone())
                            .unwrap_or_default(),
                        output_len: *output_len,
                        seed: *seed,
                        conversion: (*conversion != SharegptConversion::Vllm)
                            .then(|| conversion.name().to_owned()),
                    },
                    Dataset::Random {
                        input_len,
                        output_len,
                        range_ratio,
                        seed,
                    } => DatasetMaterial::Random {
                        input_len: *input_len,
                        output_len: *output_len,
                        range_ratio: *range_ratio,
                        seed: *seed,
                    },
                },
                num_prompts: workload.prompts,
                request_rate: match workload.rate {
                    RequestRate::Infinite => "inf".into(),
                    RequestRate::PerSecond(r) => r.to_string(),
                },
                arrival: match (workload.rate, workload.arrival) {
                    (RequestRate::PerSecond(_), Arrival::Constant) => {
                        Some(Arrival::Constant.name().to_owned())
                    }
                    _ => None,
                },
                max_concurrency: workload.concurrency,
            },
        }
    }
}
