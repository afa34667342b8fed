//! Experiment + pins + files → the lockfile, and pins → the experiment that
//! runs. (pure)

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::pins::{PinRequest, PinTarget};
use super::{Attrs, Input, LockedRun, Lockfile, names};
use crate::facts::BUILTIN_HARNESS_VERSION;
use crate::facts::Runtime;
use crate::inputs::ResolvedInputs;
use crate::key::{KeyedRun, keyed_runs};
use crate::spec::{Dataset, HarnessKind, Spec, Step};

/// Every runtime a written lockfile keys each run under.
pub const RUNTIMES: [Runtime; 3] = [Runtime::Docker, Runtime::Local, Runtime::Sim];

/// The inputs only the network can pin: every engine's image (none on
/// `hardware "cpu"`, where no image runs: the lockfile records its version alone), every Hub
/// model's revision.
pub fn pin_requests(spec: &Spec) -> Vec<PinRequest> {
    let mut requests: Vec<PinRequest> = spec
        .engines
        .iter()
        .filter(|_| runs_images(spec))
        .map(|e| {
            let image = e
                .image
                .clone()
                .unwrap_or_else(|| crate::facts::default_image(e.kind, &e.version));
            PinRequest {
                name: names::engine(e.kind),
                original: attrs([("version", &e.version), ("image", &image)]),
                target: PinTarget::Image(image),
            }
        })
        .collect();
    for step in &spec.steps {
        let name = names::model(&step.model);
        // A local directory is hashed (`build`), never looked up on the Hub.
        if requests.iter().any(|r| r.name == name)
            || crate::inputs::model_dir::is_local(&step.model.id)
        {
            continue;
        }
        requests.push(PinRequest {
            name,
            original: attrs([("repo", &step.model.id), ("revision", &step.model.revision)]),
            target: PinTarget::Model {
                repo: step.model.id.clone(),
                revision: step.model.revision.clone(),
            },
        });
    }
    requests
}

/// Whether any run of `spec` can run an engine's image: not on CPU
/// hardware, where perfpipe starts only the engine installed on the machine
/// (`facts::startable`).
fn runs_images(spec: &Spec) -> bool {
    spec.hardware.cpu.is_none()
}

/// The engines of a study that runs no image, as the lockfile records them:
/// the declared version, which the engine on the machine must be.
fn local_engines(spec: &Spec) -> impl Iterator<Item = Input> + '_ {
    spec.engines
        .iter()
        .filter(|_| !runs_images(spec))
        .map(|e| Input {
            name: names::engine(e.kind),
            original: attrs([("version", &e.version)]),
            locked: Some(attrs([("version", &e.version)])),
        })
}

/// The experiment as it runs: images by digest, models at their commit.
/// Unpinned inputs stay as declared.
pub fn apply_pins(spec: &Spec, pins: &[Input]) -> Spec {
    let locked = |name: &str, attr: &str| {
        pins.iter()
            .find(|i| i.name == name)
            .and_then(|i| i.locked.as_ref())
            .and_then(|l| l.get(attr))
            .cloned()
    };
    let mut pinned = spec.clone();
    for engine in &mut pinned.engines {
        if let Some(image) = locked(&names::engine(engine.kind), "image") {
            engine.image = Some(image);
        }
    }
    let models =
        std::iter::once(&mut pinned.model).chain(pinned.steps.iter_mut().map(|s| &mut s.model));
    for model in models {
        if let Some(commit) = locked(&names::model(model), "revision") {
            model.revision = commit;
        }
    }
    pinned
}

/// The lockfile of `spec`: its network pins, its files as `inputs` found
/// them, and every run's key under each runtime, computed from `pinned`
/// (`apply_pins` of `spec`).
pub fn build(spec: &Spec, pinned: &Spec, pins: Vec<Input>, inputs: &ResolvedInputs) -> Lockfile {
    build_with_keys(spec, pinned, pins, inputs, &RUNTIMES, None)
}

/// [`build`], keying runs under `runtimes` only (a lockfile that is only
/// compared, never written, needs the keys of the runtime asked), with the
/// runs of one runtime already keyed (`keyed_runs` of `pinned` under it):
/// each key is computed once per command.
pub fn build_with_keys(
    spec: &Spec,
    pinned: &Spec,
    pins: Vec<Input>,
    inputs: &ResolvedInputs,
    runtimes: &[Runtime],
    known: Option<(Runtime, &[KeyedRun])>,
) -> Lockfile {
    let mut all: BTreeMap<String, Input> = pins
        .into_iter()
        .chain(local_engines(spec))
        .map(|i| (i.name.clone(), i))
        .collect();
    for workload in &spec.workloads {
        let Dataset::ShareGpt { path, sample, .. } = &workload.dataset else {
            continue;
        };
        let Some(found) = inputs.dataset(&workload.name.value) else {
            continue;
        };
        let mut original = attrs([("path", path)]);
        if let Some(sample) = sample {
            original.insert("sample".into(), sample.clone());
        }
        all.insert(
            names::dataset(path),
            Input {
                name: names::dataset(path),
                original,
                locked: Some(attrs([
                    ("file", &found.path.display().to_string()),
                    ("sha256", &found.sha256),
                ])),
            },
        );
    }
    for step in &spec.steps {
        let Some(found) = inputs.model(&step.model.id) else {
            continue;
        };
        all.insert(
            names::model(&step.model),
            Input {
                name: names::model(&step.model),
                original: attrs([("path", &step.model.id)]),
                locked: Some(attrs([
                    ("files", &found.files.to_string()),
                    ("sha256", &found.sha256),
                ])),
            },
        );
    }
    let harness = &spec.harness.kind;
    let version = match harness {
        HarnessKind::Builtin => BUILTIN_HARNESS_VERSION.to_owned(),
        HarnessKind::VllmBench { version } | HarnessKind::Guidellm { version } => version.clone(),
    };
    all.insert(
        names::HARNESS.into(),
        Input {
            name: names::HARNESS.into(),
            original: attrs([("name", harness.name())]),
            locked: Some(attrs([("name", harness.name()), ("version", &version)])),
        },
    );
    for (step, pinned_step) in spec.steps.iter().zip(&pinned.steps) {
        let tokenizer = inputs.tokenizer(&pinned_step.model);
        all.insert(
            names::tokenizer(&step.model),
            Input {
                name: names::tokenizer(&step.model),
                original: attrs([
                    ("model", &step.model.id),
                    ("revision", &step.model.revision),
                ]),
                locked: Some(attrs([("id", &tokenizer.id)])),
            },
        );
    }

    let by_runtime: Vec<_> = runtimes
        .iter()
        .copied()
        .map(|rt| match known {
            Some((known_rt, runs)) if known_rt == rt => (rt, Cow::Borrowed(runs)),
            _ => (rt, Cow::Owned(keyed_runs(pinned, rt, inputs))),
        })
        .collect();
    let steps: std::collections::HashMap<&str, &Step> = spec
        .steps
        .iter()
        .map(|s| (s.name.value.as_str(), s))
        .collect();
    let runs = by_runtime[0]
        .1
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let uses = uses(spec, steps[run.step.as_str()], &run.workload);
            LockedRun {
                step: run.step.clone(),
                workload: run.workload.clone(),
                keys: by_runtime
                    .iter()
                    .map(|(rt, runs)| (rt.name().to_owned(), runs[i].key.clone()))
                    .collect(),
                uses,
            }
        })
        .collect();
    Lockfile {
        experiment: spec.name.clone(),
        inputs: all.into_values().collect(),
        runs,
    }
}

/// The lockfile's names of the inputs a run of `workload` in `step` uses, in
/// a fixed order (engine, model, dataset, harness, its environment,
/// tokenizer); `spec` and
/// `step` as declared, as the lockfile names them.
pub fn uses(spec: &Spec, step: &Step, workload: &str) -> Vec<String> {
    let mut uses = vec![names::engine(step.engine), names::model(&step.model)];
    if let Some(Dataset::ShareGpt { path, .. }) = spec.workload(workload).map(|w| &w.dataset) {
        uses.push(names::dataset(path));
    }
    uses.push(names::HARNESS.to_owned());
    if super::HarnessRequirement::of(&spec.harness.kind).is_some() {
        uses.push(names::HARNESS_ENV.to_owned());
    }
    uses.push(names::tokenizer(&step.model));
    uses
}

fn attrs<const N: usize>(pairs: [(&str, &str); N]) -> Attrs {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{SourceFile, parse};

    const STUDY: &str = include_str!("../../experiments/qwen3-235b-a100.kdl");

    fn pinned(image: &str, model_commit: Option<&str>) -> Lockfile {
        let spec = parse(&SourceFile {
            name: "s".into(),
            text: STUDY.into(),
        })
        .unwrap();
        let mut pins: Vec<Input> = pin_requests(&spec)
            .into_iter()
            .map(|r| Input {
                name: r.name,
                original: r.original,
                locked: None,
            })
            .collect();
        for pin in &mut pins {
            if pin.name == "engine.vllm" {
                pin.locked = Some(attrs([("image", image)]));
            }
            if let (Some(commit), true) = (model_commit, pin.name.ends_with("-FP8@main")) {
                pin.locked = Some(attrs([("revision", commit)]));
            }
        }
        let applied = apply_pins(&spec, &pins);
        let mut inputs = ResolvedInputs::default();
        inputs.datasets.insert(
            "sharegpt".into(),
            crate::inputs::ResolvedDataset {
                path: "d.json".into(),
                sha256: "0".repeat(64),
                is_sample: false,
            },
        );
        build(&spec, &applied, pins, &inputs)
    }

    /// Steps whose key under `runtime` differs between two lockfiles.
    fn moved(a: &Lockfile, b: &Lockfile, runtime: Runtime) -> Vec<String> {
        let mut steps: Vec<String> = a
            .runs
            .iter()
            .zip(&b.runs)
            .filter(|(x, y)| x.key(runtime) != y.key(runtime))
            .map(|(x, _)| x.step.clone())
            .collect();
        steps.dedup();
        steps
    }

    #[test]
    fn a_moved_tag_is_a_new_key_for_exactly_that_engines_docker_runs() {
        let one = pinned("docker.io/vllm/vllm-openai@sha256:1f0c", None);
        let two = pinned("docker.io/vllm/vllm-openai@sha256:9a7b", None);
        let mut vllm_steps: Vec<String> = one
            .runs
            .iter()
            .filter(|r| r.uses[0] == "engine.vllm")
            .map(|r| r.step.clone())
            .collect();
        vllm_steps.dedup();
        assert!(vllm_steps.len() > 3 && !vllm_steps.iter().any(|s| s.starts_with("sglang")));
        assert_eq!(moved(&one, &two, Runtime::Docker), vllm_steps);
        assert!(
            moved(&one, &two, Runtime::Sim).is_empty(),
            "no image runs under sim"
        );
    }

    #[test]
    fn a_model_commit_enters_every_runtimes_key_of_the_steps_using_it() {
        let main = pinned("v@sha256:1", None);
        let commit = pinned("v@sha256:1", Some(&"c".repeat(40)));
        let sim = moved(&main, &commit, Runtime::Sim);
        assert!(
            !sim.is_empty() && sim.iter().all(|s| s.contains("fp8")),
            "{sim:?}"
        );
        assert_eq!(sim, moved(&main, &commit, Runtime::Docker));
    }

    #[test]
    fn a_local_model_directory_is_hashed_into_the_lockfile_and_keys_never_pinned_on_the_hub() {
        let spec = parse(&SourceFile {
            name: "s".into(),
            text: "experiment e {\n hardware \"cpu\" model=\"c\" cores=2\n model \"/models/tiny\"\n \
                   engine vllm version=\"0.32.0\"\n runtime local\n \
                   workload w { dataset random input=8 output=8; prompts 1 }\n step s engine=vllm\n}\n"
                .into(),
        })
        .unwrap();
        assert_eq!(
            pin_requests(&spec)
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>(),
            Vec::<&str>::new(),
            "no Hub lookup for a directory, no image on CPU hardware"
        );
        let with = |sha256: &str| {
            let mut inputs = ResolvedInputs::default();
            inputs.models.insert(
                "/models/tiny".into(),
                crate::inputs::ResolvedModel {
                    path: "/models/tiny".into(),
                    sha256: sha256.into(),
                    files: 5,
                },
            );
            build(&spec, &spec, Vec::new(), &inputs)
        };
        let (one, two) = (with(&"1".repeat(64)), with(&"2".repeat(64)));
        let engine = one.input("engine.vllm").unwrap();
        assert_eq!(
            (
                engine
                    .original
                    .keys()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                &engine.locked
            ),
            (vec!["version"], &Some(attrs([("version", "0.32.0")]))),
            "the local engine's version, no image"
        );
        let model = one.input("model./models/tiny@main").unwrap();
        assert_eq!(
            model.locked.as_ref().unwrap().get("sha256"),
            Some(&"1".repeat(64))
        );
        assert_eq!(
            model.original.get("path").map(String::as_str),
            Some("/models/tiny")
        );
        for runtime in RUNTIMES {
            assert_eq!(moved(&one, &two, runtime), ["s"], "{runtime:?}");
        }
    }
}
