//! GPU-hours a plan will take: each engine launch's typical start, plus each
//! run's benchmark time where an earlier result of the same configuration
//! and workload tells it. (pure)

use std::time::Duration;

use super::{Plan, PlannedRun};
use crate::facts::EngineKind;
use crate::spec::Spec;

/// A start as the field sees it on 8×A100 for large models: weights
/// loaded, graphs compiled and captured; TensorRT-LLM also builds its engine.
pub fn typical_start(engine: EngineKind) -> Duration {
    Duration::from_secs(match engine {
        EngineKind::Vllm | EngineKind::Sglang | EngineKind::VllmAscend | EngineKind::Mindie => {
            5 * 60
        }
        EngineKind::Trtllm => 15 * 60,
    })
}

#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub gpu_hours: f64,
    pub launches: usize,
    /// Missing runs with no earlier result to time them by (counted as 0).
    pub untimed: usize,
    /// The typical start of each engine launched, in order of first launch:
    /// the only starts the estimate counts.
    pub starts: Vec<(EngineKind, Duration)>,
}

/// `earlier` gives the benchmark seconds of an earlier result for a run, if any.
pub fn estimate(
    spec: &Spec,
    plan: &Plan,
    fresh_engine: bool,
    earlier: &dyn Fn(&PlannedRun) -> Option<f64>,
) -> Estimate {
    let launches = plan.launches(fresh_engine);
    let mut gpu_seconds = 0.0;
    let mut untimed = 0;
    let mut starts = Vec::new();
    for group in &launches {
        let Some(step) = spec.step(&group[0].step) else {
            continue;
        };
        if !starts.iter().any(|(kind, _)| *kind == step.engine) {
            starts.push((step.engine, typical_start(step.engine)));
        }
        let gpus = f64::from(step.gpus * step.instances());
        let mut seconds = typical_start(step.engine).as_secs_f64();
        for run in group {
            match earlier(run) {
                Some(s) => seconds += s * plan.options.samples as f64,
                None => untimed += 1,
            }
        }
        gpu_seconds += gpus * seconds;
    }
    Estimate {
        gpu_hours: gpu_seconds / 3600.0,
        launches: launches.len(),
        untimed,
        starts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::Runtime;
    use crate::inputs::ResolvedInputs;
    use crate::key::keyed_runs;
    use crate::plan::{PlanOptions, build};
    use crate::spec::{SourceFile, parse};
    use crate::store::StoreIndex;

    #[test]
    fn launches_cost_their_start_and_runs_their_earlier_time_on_every_gpu() {
        let spec = parse(&SourceFile {
            name: "s.kdl".into(),
            text: r#"experiment "e" {
                hardware "nvidia-a100-sxm4-80gb" gpus=8
                model "o/m"
                engine vllm version="0.11.0"
                engine trtllm version="1.2.0rc1"
                workload a { dataset random input=8 output=8; prompts 10 }
                workload b { dataset random input=16 output=8; prompts 10 }
                step v engine=vllm gpus=4
                step t engine=trtllm gpus=2 replicas=2 measure=all { workloads a }
            }"#
            .into(),
        })
        .unwrap();
        let runs = keyed_runs(&spec, Runtime::Docker, &ResolvedInputs::default());
        let options = PlanOptions {
            runtime: Runtime::Docker,
            samples: 2,
            retry_failed: false,
        };
        let plan = build(runs, &<StoreIndex>::default(), options);
        // Workload `a` took 360 s before; `b` was never run.
        let earlier = |r: &PlannedRun| (r.workload == "a").then_some(360.0);
        let e = estimate(&spec, &plan, false, &earlier);
        assert_eq!((e.launches, e.untimed), (2, 1));
        assert_eq!(
            e.starts,
            [
                (EngineKind::Vllm, Duration::from_secs(300)),
                (EngineKind::Trtllm, Duration::from_secs(900))
            ]
        );
        // vLLM: 4 GPUs × (300 s + 2 × 360 s); TensorRT-LLM: 2×2 GPUs × (900 s + 2 × 360 s).
        let expected = (4.0 * (300.0 + 720.0) + 4.0 * (900.0 + 720.0)) / 3600.0;
        assert!((e.gpu_hours - expected).abs() < 1e-9, "{e:?}");
        let fresh = estimate(&spec, &plan, true, &earlier);
        assert_eq!(fresh.launches, 3, "one launch per run");

        // Only the engines launched count their start.
        let vllm_only = build(
            keyed_runs(&spec, Runtime::Docker, &ResolvedInputs::default())
                .into_iter()
                .filter(|r| r.step == "v")
                .collect(),
            &<StoreIndex>::default(),
            options,
        );
        let e = estimate(&spec, &vllm_only, false, &earlier);
        assert_eq!(e.starts, [(EngineKind::Vllm, Duration::from_secs(300))]);
    }
}
