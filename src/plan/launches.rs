//! The launch material of a plan: the engine launches its missing runs
//! need, in the order they run. (pure)

use super::Plan;
use crate::launch::{
    EnginePart, HardwarePart, HarnessPart, LAUNCH_SCHEMA_VERSION, LaunchMaterial, LaunchOptions,
    ModelPart, RunPart, Timeouts,
};
use crate::spec::{HarnessKind, Spec};

/// The material of every engine launch the missing runs of `plan` need, in
/// the order they run. `spec` is the experiment as it runs (pinned, capped).
pub fn launches(spec: &Spec, plan: &Plan, options: &LaunchOptions) -> Vec<LaunchMaterial> {
    let harness = &spec.harness;
    let harness = HarnessPart {
        name: harness.kind.name().to_owned(),
        version: match &harness.kind {
            HarnessKind::Builtin => None,
            HarnessKind::VllmBench { version } | HarnessKind::Guidellm { version } => {
                Some(version.clone())
            }
        },
        backend: harness.backend.name().to_owned(),
        endpoint: harness.endpoint.clone(),
        temperature: harness.temperature,
        ignore_eos: harness.ignore_eos,
    };
    plan.launches(options.fresh_engine)
        .into_iter()
        .map(|runs| {
            let step = spec
                .step(&runs[0].step)
                .expect("plan runs name declared steps");
            let decl = spec
                .engine(step.engine)
                .expect("steps name declared engines");
            LaunchMaterial {
                schema: LAUNCH_SCHEMA_VERSION,
                runtime: plan.options.runtime.name().to_owned(),
                engine: EnginePart {
                    engine: step.engine.name().to_owned(),
                    version: decl.version.clone(),
                    image: decl.image.clone(),
                    model: ModelPart {
                        id: step.model.id.clone(),
                        revision: step.model.revision.clone(),
                    },
                    args: step.args.clone(),
                    env: step.env.clone(),
                    gpus_per_instance: step.gpus,
                    instances: step.instances(),
                },
                hardware: HardwarePart {
                    gpu: spec.hardware.gpu.clone(),
                    gpus: spec.hardware.gpus,
                    cpu: spec.hardware.cpu.clone(),
                },
                harness: harness.clone(),
                runs: runs
                    .iter()
                    .map(|r| RunPart {
                        step: r.step.clone(),
                        workload: r.workload.clone(),
                        key: r.key.clone(),
                        material: r.material.clone(),
                    })
                    .collect(),
                samples: u32::try_from(plan.options.samples).unwrap_or(u32::MAX),
                retry_failed: plan.options.retry_failed,
                timeouts: Timeouts {
                    startup_s: options
                        .startup_timeout
                        .unwrap_or_else(|| decl.startup_timeout())
                        .as_secs(),
                    stall_s: options.stall_timeout.as_secs(),
                },
            }
        })
        .collect()
}
