//! Launch material → the experiment the executor runs, and its inputs in
//! the store's input area: what `realise` executes instead of a file.

use std::path::Path;

use thiserror::Error;

use super::{LaunchMaterial, tokenizer_sha256};
use crate::facts::{EngineKind, Runtime};
use crate::inputs::{ResolvedDataset, ResolvedInputs, ResolvedTokenizer};
use crate::key::KeyedRun;
use crate::key::{DatasetMaterial, KeyMaterial};
use crate::spec::{
    Arrival, Backend, Dataset, EngineDecl, Hardware, HarnessDecl, HarnessKind, ModelRef,
    ReportDecl, RequestRate, SharegptConversion, Spanned, Spec, Step, Workload,
};

/// The experiment, inputs and keyed runs of some launches.
#[derive(Debug)]
pub struct Rebuilt {
    pub spec: Spec,
    pub runtime: Runtime,
    pub inputs: ResolvedInputs,
    /// Every run of the launches with its key, as the plan takes them.
    pub runs: Vec<KeyedRun>,
}

#[derive(Debug, Error)]
pub enum RebuildError {
    #[error("the launch material names no run")]
    NoRun,
    #[error("the launch material's `{field}` is `{value}`, which this perfpipe does not know")]
    Unknown { field: &'static str, value: String },
    #[error("the launch material's `{field}` is refused, as an experiment's would be: {reason}")]
    Refused { field: &'static str, reason: String },
    #[error(
        "the launches differ in `{field}`; realise them one at a time (each is one engine launch)"
    )]
    Mixed { field: &'static str },
    #[error(
        "the key material of `{step}` × `{workload}` gives the key {computed}, not the {recorded} the material records"
    )]
    KeyMismatch {
        step: String,
        workload: String,
        computed: String,
        recorded: String,
    },
}

/// Refuses material whose values reach other programs (docker's argv, the
/// engine's environment, the Hub's URLs, cache paths) outside the grammar
/// the experiment parser holds them to: material is input like an
/// experiment, whoever wrote it.
fn check_values(launch: &LaunchMaterial) -> Result<(), RebuildError> {
    use crate::spec::names;
    let part = &launch.engine;
    let refused = |field| move |reason| RebuildError::Refused { field, reason };
    names::model_id(&part.model.id).map_err(refused("engine.model.id"))?;
    names::version(&part.version).map_err(refused("engine.version"))?;
    if let Some(image) = &part.image {
        names::image_reference(image).map_err(refused("engine.image"))?;
    }
    if let Some(version) = &launch.harness.version {
        names::version(version).map_err(refused("harness.version"))?;
    }
    for name in part.env.keys() {
        names::env_name(name).map_err(refused("engine.env"))?;
        if crate::secrets::is_secret_name(name) {
            return Err(RebuildError::Refused {
                field: "engine.env",
                reason: format!("`{name}` looks like a secret"),
            });
        }
    }
    Ok(())
}

/// The experiment that runs exactly `launches`, reading the inputs they name
/// from `input_dir` (`<store>/inputs/sha256`); each run's key is computed
/// again from the experiment and must be the one recorded.
pub fn rebuild(launches: &[LaunchMaterial], input_dir: &Path) -> Result<Rebuilt, RebuildError> {
    let first = launches.first().ok_or(RebuildError::NoRun)?;
    for (field, same) in [
        (
            "runtime",
            launches.iter().all(|l| l.runtime == first.runtime),
        ),
        (
            "hardware",
            launches.iter().all(|l| l.hardware == first.hardware),
        ),
        (
            "harness",
            launches.iter().all(|l| l.harness == first.harness),
        ),
        (
            "samples",
            launches.iter().all(|l| l.samples == first.samples),
        ),
        (
            "retry_failed",
            launches
                .iter()
                .all(|l| l.retry_failed == first.retry_failed),
        ),
        (
            "timeouts.stall_s",
            launches
                .iter()
                .all(|l| l.timeouts.stall_s == first.timeouts.stall_s),
        ),
    ] {
        if !same {
            return Err(RebuildError::Mixed { field });
        }
    }
    let runtime = first.runtime().ok_or_else(|| RebuildError::Unknown {
        field: "runtime",
        value: first.runtime.clone(),
    })?;
    let harness = harness(first)?;
    let mut engines: Vec<EngineDecl> = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut workloads: Vec<Workload> = Vec::new();
    let mut inputs = ResolvedInputs::default();
    for launch in launches {
        check_values(launch)?;
        let part = &launch.engine;
        let kind = EngineKind::from_name(&part.engine).ok_or_else(|| RebuildError::Unknown {
            field: "engine.engine",
            value: part.engine.clone(),
        })?;
        // One engine declaration per kind, as in an experiment; the startup
        // timeout is each launch's own, and launches of a kind share it.
        if !engines.iter().any(|e| e.kind == kind) {
            engines.push(EngineDecl {
                kind,
                version: part.version.clone(),
                image: part.image.clone(),
                startup_timeout: Some(std::time::Duration::from_secs(launch.timeouts.startup_s)),
            });
        }
        let model = ModelRef {
            id: part.model.id.clone(),
            revision: part.model.revision.clone(),
        };
        let step_name = launch.runs.first().ok_or(RebuildError::NoRun)?.step.clone();
        let mut step = match steps.iter().position(|s| s.name.value == step_name) {
            Some(i) => steps.remove(i),
            None => Step {
                name: spanned(step_name),
                engine: kind,
                model: model.clone(),
                gpus: part.gpus_per_instance,
                replicas: part.instances,
                measure_all: part.instances > 1,
                args: part.args.clone(),
                env: part.env.clone(),
                workloads: Vec::new(),
                expectations: Vec::new(),
                sweep: None,
            },
        };
        for run in &launch.runs {
            step.workloads.push(run.workload.clone());
            if !workloads.iter().any(|w| w.name.value == run.workload) {
                workloads.push(workload(&run.workload, &run.material)?);
            }
            if let DatasetMaterial::Sharegpt { sha256, .. } = &run.material.workload.dataset {
                inputs.datasets.insert(
                    run.workload.clone(),
                    ResolvedDataset {
                        path: input_dir.join(sha256),
                        sha256: sha256.clone(),
                        is_sample: false,
                    },
                );
            }
            // A local model directory is read where it is, as hashed when
            // the launch was planned (a shared file system under Slurm).
            if let Some(sha256) = &run.material.model.sha256 {
                inputs.models.insert(
                    model.id.clone(),
                    crate::inputs::ResolvedModel {
                        path: model.id.clone().into(),
                        sha256: sha256.clone(),
                        files: 0,
                    },
                );
            }
            let tokenizer = &run.material.harness.tokenizer;
            inputs.tokenizers.insert(
                (model.id.clone(), model.revision.clone()),
                ResolvedTokenizer {
                    id: tokenizer.clone(),
                    path: tokenizer_sha256(tokenizer).map(|hex| input_dir.join(hex)),
                },
            );
        }
        steps.push(step);
    }
    let spec = Spec {
        name: format!("launch {}", first.key().short()),
        title: None,
        hardware: Hardware {
            gpu: first.hardware.gpu.clone(),
            gpus: first.hardware.gpus,
            cpu: first.hardware.cpu.clone(),
        },
        model: steps[0].model.clone(),
        runtime: Some(runtime),
        engines,
        harness,
        workloads,
        steps,
        comparisons: Vec::new(),
        conclusion: None,
        objective: Default::default(),
        report: ReportDecl::default(),
    };
    let keyed = crate::key::keyed_runs(&spec, runtime, &inputs);
    // Only the runs the launches name, in their order: a workload shared by
    // two steps is declared once but measured by the steps that name it.
    let mut runs = Vec::new();
    for run in launches.iter().flat_map(|l| &l.runs) {
        let computed = keyed
            .iter()
            .find(|k| k.step == run.step && k.workload == run.workload)
            .expect("every run of the launches is a run of the experiment");
        if computed.key != run.key {
            return Err(RebuildError::KeyMismatch {
                step: run.step.clone(),
                workload: run.workload.clone(),
                computed: computed.key.to_string(),
                recorded: run.key.to_string(),
            });
        }
        runs.push(computed.clone());
    }
    Ok(Rebuilt {
        spec,
        runtime,
        inputs,
        runs,
    })
}

fn spanned(value: String) -> Spanned<String> {
    Spanned {
        value,
        span: (0, 0).into(),
    }
}

fn harness(launch: &LaunchMaterial) -> Result<HarnessDecl, RebuildError> {
    let part = &launch.harness;
    let version = || part.version.clone().unwrap_or_default();
    let kind = match part.name.as_str() {
        "builtin" => HarnessKind::Builtin,
        "vllm-bench" => HarnessKind::VllmBench { version: version() },
        "guidellm" => HarnessKind::Guidellm { version: version() },
        other => {
            return Err(RebuildError::Unknown {
                field: "harness.name",
                value: other.to_owned(),
            });
        }
    };
    let backend = [Backend::Openai, Backend::OpenaiChat]
        .into_iter()
        .find(|b| b.name() == part.backend)
        .ok_or_else(|| RebuildError::Unknown {
            field: "harness.backend",
            value: part.backend.clone(),
        })?;
    Ok(HarnessDecl {
        kind,
        backend,
        endpoint: part.endpoint.clone(),
        temperature: part.temperature,
        ignore_eos: part.ignore_eos,
    })
}

/// The workload `name` as its key material states it.
fn workload(name: &str, material: &KeyMaterial) -> Result<Workload, RebuildError> {
    let w = &material.workload;
    let unknown = |field: &'static str, value: &str| RebuildError::Unknown {
        field,
        value: value.to_owned(),
    };
    let dataset = match &w.dataset {
        DatasetMaterial::Sharegpt {
            sha256,
            output_len,
            seed,
            conversion,
        } => Dataset::ShareGpt {
            // What the executor reads is the input area's file (`inputs`).
            path: sha256.clone(),
            sample: None,
            output_len: *output_len,
            seed: *seed,
            conversion: match conversion {
                None => SharegptConversion::Vllm,
                Some(name) => SharegptConversion::from_name(name)
                    .ok_or_else(|| unknown("workload.dataset.conversion", name))?,
            },
        },
        DatasetMaterial::Random {
            input_len,
            output_len,
            range_ratio,
            seed,
        } => Dataset::Random {
            input_len: *input_len,
            output_len: *output_len,
            range_ratio: *range_ratio,
            seed: *seed,
        },
    };
    let rate = match w.request_rate.as_str() {
        "inf" => RequestRate::Infinite,
        r => RequestRate::PerSecond(r.parse().map_err(|_| unknown("workload.request_rate", r))?),
    };
    let arrival = match &w.arrival {
        None => Arrival::Poisson,
        Some(name) => Arrival::from_name(name).ok_or_else(|| unknown("workload.arrival", name))?,
    };
    Ok(Workload {
        name: spanned(name.to_owned()),
        title: None,
        dataset,
        prompts: w.num_prompts,
        rate,
        arrival,
        concurrency: w.max_concurrency,
        // Key material holds neither: a run is rebuilt as the point it is.
        axis: None,
        slo: None,
        search: None,
    })
}
