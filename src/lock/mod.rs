//! Lockfiles: what an experiment's inputs resolved to, and every run's key.
//!
//! ```text
//! lockfiles/<experiment>.lock     KDL, machine-written, no timestamps
//!   input "engine.vllm"           original (as declared) + locked (resolved)
//!   input "model.<id>@<rev>"      revision → commit sha
//!   input "dataset.<path>"        sha256 of the file
//!   input "harness"               name and version
//!   input "harness.env"           an external harness's requirement → its
//!                                 environment's address and packages
//!   input "tokenizer.<id>@<rev>"  sha256 of `tokenizer.json` (or `whitespace-v1`)
//!   run "<step>" "<workload>"     its key under each runtime, and the inputs it uses
//! ```
//!
//! Images and model revisions need the network (`resolve`, the only
//! effectful part); everything else is read from files on every load, so a
//! lockfile is a pure function of the experiment, its pins and its files.
//! Pins are never re-resolved unless asked (`lock --update`).

mod build;
mod changes;
mod fast_read;
mod file;
mod harness_env;
mod pins;
pub mod resolve;
mod signature;

pub use build::{RUNTIMES, apply_pins, build, build_with_keys, pin_requests, uses};
pub use changes::{InputChange, input_changes, run_key_changes};
pub use file::{parse, render};
pub use harness_env::{
    HarnessRequirement, env_input, locked_attrs, packages_text, recorded_requirements,
};
pub use pins::{
    PinError, PinPolicy, PinRequest, PinResolver, PinTarget, Problem, Update, resolve_pins,
};
pub use signature::{HEAD_BYTES, first_node, is_lockfile};

use std::collections::BTreeMap;

use thiserror::Error;

use crate::facts::Runtime;
use crate::key::RunKey;

/// Version of the lockfile format.
pub const LOCKFILE_VERSION: i128 = 1;

/// Attribute name → value, in sorted order (so rendering is canonical).
pub type Attrs = BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq)]
pub struct Lockfile {
    /// The experiment's declared name.
    pub experiment: String,
    /// Sorted by name.
    pub inputs: Vec<Input>,
    /// In declared order.
    pub runs: Vec<LockedRun>,
}

impl Lockfile {
    /// The lockfile with each run's key under `runtime` only.
    pub fn keyed_for(&self, runtime: Runtime) -> Lockfile {
        let mut only = self.clone();
        for run in &mut only.runs {
            run.keys.retain(|name, _| name == runtime.name());
        }
        only
    }

    /// Whether [`keyed_for`](Self::keyed_for)`(runtime)` equals `other`,
    /// without making that copy (a lockfile of 10,000 runs is compared on
    /// every `plan` and `report`).
    pub fn keyed_for_equals(&self, runtime: Runtime, other: &Lockfile) -> bool {
        let keys_equal = |mine: &BTreeMap<String, RunKey>, theirs: &BTreeMap<String, RunKey>| {
            let mut only = mine.iter().filter(|(name, _)| *name == runtime.name());
            only.clone().count() == theirs.len()
                && only.all(|(name, key)| theirs.get(name) == Some(key))
        };
        // Every field by name: one added to either type must be compared here too.
        let Lockfile {
            experiment,
            inputs,
            runs,
        } = self;
        *experiment == other.experiment
            && *inputs == other.inputs
            && runs.len() == other.runs.len()
            && (runs.iter().zip(&other.runs)).all(|(mine, theirs)| {
                let LockedRun {
                    step,
                    workload,
                    keys,
                    uses,
                } = mine;
                *step == theirs.step
                    && *workload == theirs.workload
                    && *uses == theirs.uses
                    && keys_equal(keys, &theirs.keys)
            })
    }

    pub fn input(&self, name: &str) -> Option<&Input> {
        self.inputs.iter().find(|i| i.name == name)
    }

    pub fn run(&self, step: &str, workload: &str) -> Option<&LockedRun> {
        self.runs
            .iter()
            .find(|r| r.step == step && r.workload == workload)
    }

    /// Inputs that need the network and have no pin yet.
    pub fn unpinned(&self) -> impl Iterator<Item = &Input> {
        self.inputs.iter().filter(|i| i.locked.is_none())
    }
}

/// One input: as declared, and as resolved (`None`: not pinned yet).
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub name: String,
    pub original: Attrs,
    pub locked: Option<Attrs>,
}

/// One run: its key under each runtime, and the inputs its key depends on.
#[derive(Debug, Clone, PartialEq)]
pub struct LockedRun {
    pub step: String,
    pub workload: String,
    /// By runtime name (`docker`, `local`, `sim`).
    pub keys: BTreeMap<String, RunKey>,
    /// Input names, in a fixed order (engine, model, dataset, harness, tokenizer).
    pub uses: Vec<String>,
}

impl LockedRun {
    pub fn key(&self, runtime: Runtime) -> Option<&RunKey> {
        self.keys.get(runtime.name())
    }
}

#[derive(Debug, Error)]
pub enum Error {
    #[error("`{path}` is not a lockfile perfpipe can read: {message}")]
    Parse { path: String, message: String },
    /// A file that does not begin as a lockfile: another program's, or an
    /// experiment named where its lockfile belongs.
    #[error("`{path}` is not a perfpipe lockfile: {}", match first {
        Some(node) => format!("it begins with `{node}`, where a lockfile begins with `lockfile`"),
        None => "it holds no KDL node".to_owned(),
    })]
    NotALockfile { path: String, first: Option<String> },
}

/// Input names, one scheme for every command that prints them.
pub mod names {
    use crate::facts::EngineKind;
    use crate::spec::ModelRef;

    pub fn engine(kind: EngineKind) -> String {
        format!("engine.{}", kind.name())
    }
    pub fn model(model: &ModelRef) -> String {
        format!("model.{}@{}", model.id, model.revision)
    }
    pub fn dataset(path: &str) -> String {
        format!("dataset.{path}")
    }
    pub const HARNESS: &str = "harness";
    /// The environment an external harness runs from.
    pub const HARNESS_ENV: &str = "harness.env";
    pub fn tokenizer(model: &ModelRef) -> String {
        format!("tokenizer.{}@{}", model.id, model.revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(step: &str, keys: &[(&str, &str)]) -> LockedRun {
        LockedRun {
            step: step.into(),
            workload: "w".into(),
            keys: keys
                .iter()
                .map(|(runtime, text)| (runtime.to_string(), RunKey::of_canonical(text)))
                .collect(),
            uses: vec!["engine.vllm".into()],
        }
    }

    fn lockfile(runs: Vec<LockedRun>) -> Lockfile {
        Lockfile {
            experiment: "e".into(),
            inputs: Vec::new(),
            runs,
        }
    }

    #[test]
    fn comparing_one_runtime_s_keys_is_comparing_the_copy_with_only_those() {
        let all = lockfile(vec![
            run("a", &[("docker", "1"), ("local", "2"), ("sim", "3")]),
            run("b", &[("docker", "4"), ("sim", "5")]),
        ]);
        let sim = lockfile(vec![run("a", &[("sim", "3")]), run("b", &[("sim", "5")])]);
        let other_sim_key = lockfile(vec![run("a", &[("sim", "3")]), run("b", &[("sim", "6")])]);
        let no_sim_key = lockfile(vec![run("a", &[("sim", "3")]), run("b", &[])]);
        let other_step = lockfile(vec![run("a", &[("sim", "3")]), run("c", &[("sim", "5")])]);
        let fewer_runs = lockfile(vec![run("a", &[("sim", "3")])]);
        let two_keys = lockfile(vec![
            run("a", &[("sim", "3"), ("docker", "1")]),
            run("b", &[("sim", "5")]),
        ]);
        for runtime in [Runtime::Docker, Runtime::Local, Runtime::Sim] {
            for other in [
                &all,
                &sim,
                &other_sim_key,
                &no_sim_key,
                &other_step,
                &fewer_runs,
                &two_keys,
            ] {
                assert_eq!(
                    all.keyed_for_equals(runtime, other),
                    all.keyed_for(runtime) == *other,
                    "{runtime:?} {other:?}"
                );
            }
        }
        assert!(all.keyed_for_equals(Runtime::Sim, &sim));
        assert!(!all.keyed_for_equals(Runtime::Sim, &other_sim_key));
    }
}
