//! Launch material: everything one engine launch needs, as a Nix derivation
//! holds what one build needs. Its name is the sha256 of its canonical JSON;
//! `perfpipe realise` executes a launch from it alone, with no experiment
//! file, on any node that sees the store. (pure)
//!
//! The material names its inputs (datasets, tokenizers) by sha256; the store
//! keeps them in its input area. Run keys are computed as always, from each
//! run's key material: the launch material only gathers them.

mod rebuild;
mod record;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::inputs::ResolvedInputs;
use crate::key::{DatasetMaterial, KeyMaterial, RunKey, to_canonical_json};

use crate::facts::Runtime;

pub use rebuild::{RebuildError, Rebuilt, rebuild};
pub use record::LaunchRecord;

/// Version of the launch material's schema; bumping it renames every launch.
///
/// History:
/// - 1: engine part, runs with their key material, samples, timeouts.
pub const LAUNCH_SCHEMA_VERSION: u32 = 1;

/// A launch's name: the sha256 of its canonical material, 64 lowercase hex.
pub type LaunchKey = crate::digest::Digest<LaunchKind>;

/// What a [`LaunchKey`] names: a launch's material.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LaunchKind {}

impl crate::digest::Kind for LaunchKind {
    const TYPE: &'static str = "LaunchKey";
    const WHAT: &'static str = "launch key";
}

/// Everything one engine launch needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchMaterial {
    pub schema: u32,
    /// `docker`, `local` or `sim`.
    pub runtime: String,
    pub engine: EnginePart,
    pub hardware: HardwarePart,
    pub harness: HarnessPart,
    /// The runs this engine serves, in the order they are measured.
    pub runs: Vec<RunPart>,
    /// Successful samples each run's key should hold.
    pub samples: u32,
    /// Whether a stored failure is run again.
    pub retry_failed: bool,
    pub timeouts: Timeouts,
}

/// The engine as it is started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnginePart {
    /// `vllm`, `sglang`, `trtllm`, ….
    pub engine: String,
    pub version: String,
    /// The container image the experiment names (by digest once locked);
    /// `null`: the engine's official image for the version.
    pub image: Option<String>,
    pub model: ModelPart,
    /// The serve arguments as the engine gets them (each run's key holds
    /// their canonical form).
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub gpus_per_instance: u32,
    /// Instances started together (`measure=all`), else 1.
    pub instances: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPart {
    pub id: String,
    /// The commit, once locked.
    pub revision: String,
}

/// The machine the experiment declares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwarePart {
    pub gpu: String,
    /// GPUs the machine has.
    pub gpus: u32,
    /// The CPU of `hardware "cpu"`; absent on GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<crate::spec::CpuDecl>,
}

/// The benchmark client with every option explicit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessPart {
    /// `builtin`, `vllm-bench` or `guidellm`.
    pub name: String,
    /// The declared version of an external client; `null` for the built-in one.
    pub version: Option<String>,
    pub backend: String,
    pub endpoint: String,
    pub temperature: f64,
    pub ignore_eos: bool,
}

/// One run the launch serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunPart {
    pub step: String,
    pub workload: String,
    pub key: RunKey,
    /// What `key` is the sha256 of (its canonical JSON).
    pub material: KeyMaterial,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timeouts {
    /// Seconds the engine may take to become ready.
    pub startup_s: u64,
    /// Seconds without an event from the engine before the built-in
    /// harness's waiting requests fail.
    pub stall_s: u64,
}

/// How `run` executes, as far as the material records it.
#[derive(Debug, Clone, Copy)]
pub struct LaunchOptions {
    /// One engine launch per run instead of one per step.
    pub fresh_engine: bool,
    /// `--startup-timeout`, overriding every engine's own.
    pub startup_timeout: Option<Duration>,
    pub stall_timeout: Duration,
}

/// An input a launch needs from the store's input area.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct InputRef {
    pub sha256: String,
    /// What it is, for messages: "dataset of workload `sharegpt`".
    pub what: String,
}

impl LaunchMaterial {
    /// The canonical text the launch key is the sha256 of: the bytes the
    /// store keeps.
    pub fn canonical(&self) -> String {
        let value = serde_json::to_value(self).expect("launch material is plain data");
        to_canonical_json(&value)
    }

    pub fn key(&self) -> LaunchKey {
        LaunchKey::of_bytes(self.canonical().as_bytes())
    }

    pub fn runtime(&self) -> Option<Runtime> {
        Runtime::from_name(&self.runtime)
    }

    /// This launch as a run with `options` asks for it: the samples wanted,
    /// whether a stored failure is run again and the timeouts (none of them
    /// key material, so its runs keep their keys); a startup timeout not
    /// given keeps the one recorded, the engine's own.
    pub fn with_run_options(
        mut self,
        samples: u32,
        retry_failed: bool,
        options: &LaunchOptions,
    ) -> Self {
        self.samples = samples;
        self.retry_failed = retry_failed;
        if let Some(startup) = options.startup_timeout {
            self.timeouts.startup_s = startup.as_secs();
        }
        self.timeouts.stall_s = options.stall_timeout.as_secs();
        self
    }

    /// The datasets and tokenizers the launch reads, by sha256, once each.
    pub fn inputs(&self) -> Vec<InputRef> {
        let mut out: Vec<InputRef> = Vec::new();
        for run in &self.runs {
            if let DatasetMaterial::Sharegpt { sha256, .. } = &run.material.workload.dataset {
                out.push(InputRef {
                    sha256: sha256.clone(),
                    what: format!("dataset of workload `{}`", run.workload),
                });
            }
            if let Some(sha256) = tokenizer_sha256(&run.material.harness.tokenizer) {
                out.push(InputRef {
                    sha256: sha256.to_owned(),
                    what: format!("tokenizer of model `{}`", run.material.model.id),
                });
            }
        }
        out.sort_by(|a, b| a.sha256.cmp(&b.sha256));
        out.dedup_by(|a, b| a.sha256 == b.sha256);
        out
    }
}

/// The sha256 a tokenizer id names (`sha256:<hex>`); `None` for the
/// built-in whitespace tokenizer.
pub fn tokenizer_sha256(id: &str) -> Option<&str> {
    id.strip_prefix("sha256:")
}

/// The inputs `inputs` resolved for the runs of `launches`, as (sha256, file)
/// pairs, once each: what the store's input area must hold for them.
pub fn input_files(
    launches: &[LaunchMaterial],
    inputs: &ResolvedInputs,
) -> Vec<(String, std::path::PathBuf)> {
    let mut out: BTreeMap<String, std::path::PathBuf> = BTreeMap::new();
    for run in launches.iter().flat_map(|l| &l.runs) {
        if let Some(dataset) = inputs.dataset(&run.workload) {
            out.entry(dataset.sha256.clone())
                .or_insert_with(|| dataset.path.clone());
        }
    }
    for tokenizer in inputs.tokenizers.values() {
        if let (Some(sha256), Some(path)) = (tokenizer_sha256(&tokenizer.id), &tokenizer.path) {
            let used = launches
                .iter()
                .flat_map(|l| &l.runs)
                .any(|r| r.material.harness.tokenizer == tokenizer.id);
            if used {
                out.entry(sha256.to_owned()).or_insert_with(|| path.clone());
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::inputs::ResolvedDataset;
    use crate::plan::{Plan, PlanOptions, launches};
    use crate::spec::{Dataset, SourceFile, Spec};
    use crate::store::StoreIndex;

    /// Every experiment shipped here and among the test fixtures.
    fn experiments() -> Vec<(String, Spec)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut out = Vec::new();
        for dir in ["experiments", "tests/fixtures/experiments"] {
            for entry in fs_err::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                let source = SourceFile {
                    name: path.display().to_string(),
                    text: fs_err::read_to_string(&path).unwrap(),
                };
                let spec = crate::spec::parse(&source)
                    .unwrap_or_else(|e| panic!("{:?}", miette::Report::new(e)));
                out.push((source.name, spec));
            }
        }
        assert!(out.len() >= 5);
        out
    }

    /// Inputs as a machine with a dataset of each ShareGPT workload and a
    /// `tokenizer.json` of each model would resolve them.
    fn inputs(spec: &Spec) -> ResolvedInputs {
        let mut inputs = ResolvedInputs::default();
        for (i, w) in spec.workloads.iter().enumerate() {
            if matches!(w.dataset, Dataset::ShareGpt { .. }) {
                inputs.datasets.insert(
                    w.name.value.clone(),
                    ResolvedDataset {
                        path: format!("datasets/{i}.json").into(),
                        sha256: format!("{i:064x}"),
                        is_sample: false,
                    },
                );
            }
        }
        for step in &spec.steps {
            inputs.tokenizers.insert(
                (step.model.id.clone(), step.model.revision.clone()),
                crate::inputs::ResolvedTokenizer {
                    id: format!("sha256:{}", "f".repeat(64)),
                    path: Some("tokenizer.json".into()),
                },
            );
        }
        inputs
    }

    fn plan(spec: &Spec, runtime: Runtime, inputs: &ResolvedInputs) -> Plan {
        let options = PlanOptions {
            runtime,
            samples: 2,
            retry_failed: false,
        };
        crate::plan::build(
            crate::key::keyed_runs(spec, runtime, inputs),
            &<StoreIndex>::default(),
            options,
        )
    }

    fn options(fresh_engine: bool) -> LaunchOptions {
        LaunchOptions {
            fresh_engine,
            startup_timeout: None,
            stall_timeout: Duration::from_secs(600),
        }
    }

    #[test]
    fn the_launches_of_every_experiment_rebuild_every_run_with_its_own_key() {
        for (name, spec) in experiments() {
            let inputs = inputs(&spec);
            for runtime in crate::lock::RUNTIMES {
                let plan = plan(&spec, runtime, &inputs);
                // A search's runs are its probes, planned against the store.
                if plan.runs.is_empty() {
                    continue;
                }
                for fresh in [false, true] {
                    let launches = launches(&spec, &plan, &options(fresh));
                    assert_eq!(launches.len(), plan.launches(fresh).len(), "{name}");
                    let rebuilt = rebuild(&launches, Path::new("/store/inputs/sha256"))
                        .unwrap_or_else(|e| panic!("{name} under {runtime:?}: {e}"));
                    let keys = |runs: Vec<&RunKey>| runs.into_iter().cloned().collect::<Vec<_>>();
                    assert_eq!(
                        keys(rebuilt.runs.iter().map(|r| &r.key).collect()),
                        keys(plan.missing().iter().map(|r| &r.key).collect()),
                        "{name} under {runtime:?}"
                    );
                    for launch in &launches {
                        for input in launch.inputs() {
                            assert!(
                                rebuilt
                                    .inputs
                                    .datasets
                                    .values()
                                    .map(|d| &d.path)
                                    .chain(rebuilt.inputs.tokenizers.values().flat_map(|t| &t.path))
                                    .any(|p| *p
                                        == Path::new("/store/inputs/sha256").join(&input.sha256)),
                                "{name}: {} is read from the input area",
                                input.what
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn material_with_values_the_experiment_parser_refuses_is_not_rebuilt() {
        let (_, spec) = experiments().remove(0);
        let inputs = inputs(&spec);
        let plan = plan(&spec, Runtime::Docker, &inputs);
        let launch = launches(&spec, &plan, &options(false)).remove(0);
        assert!(rebuild(std::slice::from_ref(&launch), Path::new("/i")).is_ok());
        type Edit = fn(&mut LaunchMaterial);
        let edits: [(&str, Edit); 6] = [
            ("engine.env", |l| {
                l.engine.env.insert("X=Y".into(), "1".into());
            }),
            ("engine.env", |l| {
                l.engine.env.insert("HF_TOKEN".into(), "hf_x".into());
            }),
            ("engine.model.id", |l| {
                l.engine.model.id = "../../../../etc".into()
            }),
            ("engine.model.id", |l| l.engine.model.id = "--help".into()),
            ("engine.version", |l| {
                l.engine.version = "1.0; rm -rf /".into()
            }),
            ("engine.image", |l| {
                l.engine.image = Some("--privileged".into())
            }),
        ];
        for (field, edit) in edits {
            let mut hostile = launch.clone();
            edit(&mut hostile);
            match rebuild(&[hostile], Path::new("/i")) {
                Err(RebuildError::Refused { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn material_reads_back_from_its_canonical_text_and_any_change_renames_it() {
        let (_, spec) = experiments().remove(0);
        let inputs = inputs(&spec);
        let plan = plan(&spec, Runtime::Docker, &inputs);
        let launch = launches(&spec, &plan, &options(false)).remove(0);
        let text = launch.canonical();
        let back: LaunchMaterial = serde_json::from_str(&text).unwrap();
        assert_eq!(back, launch);
        assert_eq!(back.key(), LaunchKey::of_bytes(text.as_bytes()));
        let mut more = launch.clone();
        more.samples += 1;
        assert_ne!(more.key(), launch.key());
        let mut longer = launch.clone();
        longer.timeouts.startup_s += 1;
        assert_ne!(longer.key(), launch.key());
        // Unknown fields are refused, not ignored: a node must not run what
        // it cannot read in full.
        let extra = text.replacen('{', r#"{"zzz":1,"#, 1);
        assert!(serde_json::from_str::<LaunchMaterial>(&extra).is_err());
    }

    #[test]
    fn run_options_change_samples_and_timeouts_never_a_run_key() {
        let (_, spec) = experiments().remove(0);
        let inputs = inputs(&spec);
        let plan = plan(&spec, Runtime::Sim, &inputs);
        let recorded = launches(&spec, &plan, &options(false)).remove(0);
        let asked = LaunchOptions {
            fresh_engine: false,
            startup_timeout: None,
            stall_timeout: Duration::from_secs(7),
        };
        let run = recorded.clone().with_run_options(3, true, &asked);
        assert_eq!((run.samples, run.retry_failed), (3, true));
        assert_eq!(run.timeouts.stall_s, 7);
        assert_eq!(
            run.timeouts.startup_s, recorded.timeouts.startup_s,
            "the engine's own"
        );
        assert_eq!(run.runs, recorded.runs);
        let startup = LaunchOptions {
            startup_timeout: Some(Duration::from_secs(9)),
            ..asked
        };
        assert_eq!(
            recorded
                .with_run_options(1, false, &startup)
                .timeouts
                .startup_s,
            9
        );
    }

    #[test]
    fn a_launch_names_each_dataset_and_tokenizer_once_by_sha256() {
        let (_, spec) = experiments()
            .into_iter()
            .find(|(_, s)| {
                s.workloads
                    .iter()
                    .any(|w| matches!(w.dataset, Dataset::ShareGpt { .. }))
            })
            .expect("an experiment with a ShareGPT workload");
        let inputs = inputs(&spec);
        let plan = plan(&spec, Runtime::Sim, &inputs);
        let launches = launches(&spec, &plan, &options(false));
        let named: Vec<String> = launches
            .iter()
            .flat_map(|l| l.inputs())
            .map(|i| i.sha256)
            .collect();
        assert!(named.contains(&"f".repeat(64)), "{named:?}");
        let files = input_files(&launches, &inputs);
        for (sha256, _) in &files {
            assert!(named.contains(sha256), "{sha256}");
        }
        assert!(files.iter().any(|(_, p)| p == Path::new("tokenizer.json")));
    }
}
