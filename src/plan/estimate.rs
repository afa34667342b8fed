//! GPU-hours a plan will take: each engine launch's typical start, plus each
//! run's benchmark time where an earlier result of the same configuration
//! and workload tells it. (pure)

use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::{Plan, PlannedRun};
use crate::facts::EngineKind;
use crate::key::{material_fields, to_canonical_json};
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

/// Earlier results' benchmark seconds, by workload: a missing run is timed
/// by the stored configuration of its workload nearest to it (the least
/// [`crate::key::material_distance`]; the first given among equally near
/// ones). A run is compared only with its own workload's configurations,
/// and only on the fields in which those differ from one another: every
/// other field adds the same to each distance, so it cannot change which
/// is nearest.
#[derive(Debug, Default)]
pub struct EarlierDurations {
    by_workload: HashMap<String, Nearest>,
}

/// One workload's configurations, on the fields in which they differ.
#[derive(Debug)]
struct Nearest {
    /// The paths of those fields.
    varying: Vec<String>,
    /// Per varying field, each value's number (0: the field is absent).
    numbers: Vec<HashMap<String, u32>>,
    /// Each configuration's numbers with its seconds, in the order given;
    /// of equal ones only the first (the later ones can never be nearer).
    configurations: Vec<(Vec<u32>, f64)>,
}

/// A configuration's fields (path, value as text) and its seconds.
type Configuration = (Vec<(String, String)>, f64);

/// Collects earlier configurations (key material and seconds), in order.
#[derive(Debug, Default)]
pub struct EarlierBuilder {
    by_workload: HashMap<String, Vec<Configuration>>,
}

/// What a configuration's workload is matched by: its key material's
/// `workload`, in canonical JSON (the same text whatever the field order).
pub fn workload_of(material: &Value) -> String {
    to_canonical_json(&material["workload"])
}

impl EarlierBuilder {
    pub fn add(&mut self, material: &Value, seconds: f64) {
        (self.by_workload.entry(workload_of(material)).or_default())
            .push((material_fields(material), seconds));
    }

    pub fn build(self) -> EarlierDurations {
        let by_workload = (self.by_workload.into_iter())
            .map(|(workload, configurations)| (workload, Nearest::of(configurations)))
            .collect();
        EarlierDurations { by_workload }
    }
}

impl EarlierDurations {
    /// The seconds of the earlier configuration nearest to `material`, of
    /// its workload; `None` when its workload has none.
    pub fn seconds(&self, material: &Value) -> Option<f64> {
        self.by_workload
            .get(&workload_of(material))?
            .seconds(material)
    }

    pub fn is_empty(&self) -> bool {
        self.by_workload.is_empty()
    }
}

impl Nearest {
    fn of(configurations: Vec<Configuration>) -> Self {
        let fields: Vec<HashMap<&str, &str>> = (configurations.iter())
            .map(|(fields, _)| {
                fields
                    .iter()
                    .map(|(p, v)| (p.as_str(), v.as_str()))
                    .collect()
            })
            .collect();
        // A field is constant when every configuration has it, with one value.
        let mut paths: Vec<&str> = fields.iter().flat_map(|f| f.keys().copied()).collect();
        paths.sort_unstable();
        paths.dedup();
        let constant = |path: &str| {
            let first = fields[0].get(path);
            first.is_some() && fields.iter().all(|f| f.get(path) == first)
        };
        let varying: Vec<&str> = paths.into_iter().filter(|p| !constant(p)).collect();
        let mut numbers: Vec<HashMap<String, u32>> = vec![HashMap::new(); varying.len()];
        let mut seen = HashSet::new();
        let mut numbered = Vec::new();
        for (f, (_, seconds)) in fields.iter().zip(&configurations) {
            let row: Vec<u32> = (varying.iter().zip(&mut numbers))
                .map(|(path, numbers)| match f.get(path) {
                    None => 0,
                    Some(value) => {
                        let next = numbers.len() as u32 + 1;
                        *numbers.entry((*value).to_owned()).or_insert(next)
                    }
                })
                .collect();
            if seen.insert(row.clone()) {
                numbered.push((row, *seconds));
            }
        }
        Nearest {
            varying: varying.into_iter().map(str::to_owned).collect(),
            numbers,
            configurations: numbered,
        }
    }

    fn seconds(&self, material: &Value) -> Option<f64> {
        let fields = material_fields(material);
        let fields: HashMap<&str, &str> = (fields.iter())
            .map(|(p, v)| (p.as_str(), v.as_str()))
            .collect();
        // A value no configuration has differs from every one.
        let row: Vec<u32> = (self.varying.iter().zip(&self.numbers))
            .map(|(path, numbers)| match fields.get(path.as_str()) {
                None => 0,
                Some(value) => numbers.get(*value).copied().unwrap_or(u32::MAX),
            })
            .collect();
        let distance = |other: &[u32]| row.iter().zip(other).filter(|(a, b)| a != b).count();
        (self.configurations.iter())
            .min_by_key(|(other, _)| distance(other))
            .map(|(_, seconds)| *seconds)
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

    /// The nearest earlier configuration of a run's workload, found by
    /// comparing it with each one (as `plan` did), and through the index:
    /// the same seconds for every run, ties to the first given.
    #[test]
    fn earlier_durations_time_a_run_by_its_workloads_nearest_configuration() {
        use crate::key::material_distance;
        use serde_json::json;
        let material = |workload: u32, args: &[&str], version: &str, env: Option<&str>| {
            let mut m = json!({
                "engine": {"name": "vllm", "version": version},
                "serve_args": args,
                "workload": {"dataset": {"input_len": workload}, "num_prompts": 10},
                "env": {},
            });
            if let Some(value) = env {
                m["env"]["A"] = json!(value);
            }
            m
        };
        let versions = ["0.11.0", "0.11.1"];
        let mut earlier = Vec::new();
        let mut seconds = 1.0;
        for workload in [1, 2] {
            for flag in ["--a", "--b"] {
                for value in ["1", "2", "3"] {
                    for (v, version) in versions.iter().enumerate() {
                        let env = (v == 1 && value == "2").then_some("x");
                        earlier.push((material(workload, &[flag, value], version, env), seconds));
                        seconds += 1.0;
                    }
                }
            }
        }
        // The same configuration again, later: never the one chosen.
        earlier.push((earlier[0].0.clone(), 1000.0));
        let mut builder = EarlierBuilder::default();
        for (m, s) in &earlier {
            builder.add(m, *s);
        }
        let index = builder.build();
        let by_comparing = |run: &Value| {
            (earlier.iter())
                .filter(|(m, _)| m["workload"] == run["workload"])
                .min_by_key(|(m, _)| material_distance(m, run))
                .map(|(_, s)| *s)
        };
        let mut runs = Vec::new();
        for workload in [1, 2, 3] {
            for args in [
                &["--a", "2"][..],
                &["--b", "9"],
                &["--c", "1"],
                &[],
                &["--a", "1", "--b", "3"],
            ] {
                for version in ["0.11.0", "0.11.1", "0.12.0"] {
                    for env in [None, Some("x"), Some("y")] {
                        runs.push(material(workload, args, version, env));
                    }
                }
            }
        }
        for run in &runs {
            assert_eq!(index.seconds(run), by_comparing(run), "{run}");
        }
        assert_eq!(
            index.seconds(&material(3, &[], "0.11.0", None)),
            None,
            "no earlier result of workload 3"
        );
        assert_eq!(
            index.seconds(&earlier[0].0),
            Some(1.0),
            "the first of equal ones"
        );
        assert_eq!(
            index.seconds(&material(1, &["--a", "2"], "0.11.1", Some("x"))),
            Some(4.0)
        );
    }
}
