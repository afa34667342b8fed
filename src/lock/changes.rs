//! What differs between two lockfiles: inputs field by field, runs by key,
//! and which input changed each key. (pure)

use std::collections::BTreeSet;

use super::{Input, Lockfile};
use crate::facts::Runtime;
use crate::key::RunKey;

/// An input that differs: added (`before` is `None`), removed, or changed.
#[derive(Debug, Clone, PartialEq)]
pub struct InputChange<'a> {
    pub name: &'a str,
    pub before: Option<&'a Input>,
    pub after: Option<&'a Input>,
}

impl InputChange<'_> {
    /// `version 0.11.0 → 0.17.1; pinned image docker.io/…@sha256:1f0c… → …`.
    pub fn describe(&self) -> String {
        match (self.before, self.after) {
            (None, Some(after)) => format!("new: {}", summary(after)),
            (Some(before), None) => format!("no longer declared (was {})", summary(before)),
            (Some(before), Some(after)) => {
                let mut fields = field_changes("", &before.original, &after.original, "(none)");
                let none = Default::default();
                // A pin dropped (a changed declaration is written unpinned
                // until `lock` reaches its registry) is said as such.
                fields.extend(field_changes(
                    "pinned ",
                    before.locked.as_ref().unwrap_or(&none),
                    after.locked.as_ref().unwrap_or(&none),
                    "(unpinned)",
                ));
                fields.join("; ")
            }
            (None, None) => String::new(),
        }
    }
}

/// One line for an input: what is declared, and its pin.
pub fn summary(input: &Input) -> String {
    let original = values(&input.original);
    match &input.locked {
        Some(locked) => format!("{original} (pinned {})", values(locked)),
        None => format!("{original} (unpinned)"),
    }
}

fn values(attrs: &super::Attrs) -> String {
    attrs
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `{prefix}{field} {before} → {after}` for each field that differs; a
/// field on one side only is `absent` on the other.
fn field_changes(
    prefix: &str,
    before: &super::Attrs,
    after: &super::Attrs,
    absent: &str,
) -> Vec<String> {
    let fields: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    fields
        .into_iter()
        .filter(|f| before.get(*f) != after.get(*f))
        .map(|f| {
            let show = |v: Option<&String>| v.map_or(absent.to_owned(), Clone::clone);
            format!(
                "{prefix}{f} {} → {}",
                show(before.get(f)),
                show(after.get(f))
            )
        })
        .collect()
}

/// Every input whose declaration or pin differs, in name order.
pub fn input_changes<'a>(before: &'a Lockfile, after: &'a Lockfile) -> Vec<InputChange<'a>> {
    let names: BTreeSet<&str> = before
        .inputs
        .iter()
        .chain(&after.inputs)
        .map(|i| i.name.as_str())
        .collect();
    names
        .into_iter()
        .map(|name| InputChange {
            name,
            before: before.input(name),
            after: after.input(name),
        })
        .filter(|c| c.before != c.after)
        .collect()
}

/// A run whose key under a runtime differs between two lockfiles.
#[derive(Debug, Clone, PartialEq)]
pub struct RunKeyChange {
    pub step: String,
    pub workload: String,
    pub before: Option<RunKey>,
    pub after: Option<RunKey>,
    /// The inputs it uses that changed; empty when its own declaration
    /// (flags, environment, GPUs, workload) did.
    pub causes: Vec<String>,
}

/// Runs (by step and workload) whose key under `runtime` changed, was added or removed.
pub fn run_key_changes(before: &Lockfile, after: &Lockfile, runtime: Runtime) -> Vec<RunKeyChange> {
    let changed: BTreeSet<&str> = input_changes(before, after)
        .iter()
        .map(|c| c.name)
        .collect();
    let mut out = Vec::new();
    for run in &after.runs {
        let old = before.run(&run.step, &run.workload);
        let (old_key, new_key) = (old.and_then(|r| r.key(runtime)), run.key(runtime));
        if old_key == new_key {
            continue;
        }
        out.push(RunKeyChange {
            step: run.step.clone(),
            workload: run.workload.clone(),
            before: old_key.cloned(),
            after: new_key.cloned(),
            causes: run
                .uses
                .iter()
                .filter(|u| changed.contains(u.as_str()))
                .cloned()
                .collect(),
        });
    }
    for run in &before.runs {
        if after.run(&run.step, &run.workload).is_none() {
            out.push(RunKeyChange {
                step: run.step.clone(),
                workload: run.workload.clone(),
                before: run.key(runtime).cloned(),
                after: None,
                causes: Vec::new(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::lock::{Attrs, LockedRun};

    fn input(name: &str, version: &str, pin: Option<&str>) -> Input {
        Input {
            name: name.into(),
            original: Attrs::from([("version".into(), version.into())]),
            locked: pin.map(|p| Attrs::from([("image".into(), p.into())])),
        }
    }

    fn run(step: &str, key: char, uses: &[&str]) -> LockedRun {
        LockedRun {
            step: step.into(),
            workload: "w".into(),
            keys: BTreeMap::from([(
                "sim".into(),
                RunKey::parse(&key.to_string().repeat(64)).unwrap(),
            )]),
            uses: uses.iter().map(|u| (*u).into()).collect(),
        }
    }

    #[test]
    fn names_the_fields_and_the_inputs_behind_each_changed_key() {
        let before = Lockfile {
            experiment: "x".into(),
            inputs: vec![
                input("engine.sglang", "0.5.5", Some("s@sha256:5")),
                input("engine.vllm", "0.11.0", Some("v@sha256:1f")),
            ],
            runs: vec![
                run("vllm", 'a', &["engine.vllm", "harness"]),
                run("sglang", 'b', &["engine.sglang"]),
                run("vllm-flag", 'c', &["engine.sglang"]),
                run("gone", 'd', &[]),
            ],
        };
        let after = Lockfile {
            experiment: "x".into(),
            inputs: vec![
                input("engine.sglang", "0.5.5", Some("s@sha256:5")),
                input("engine.vllm", "0.17.1", None),
            ],
            runs: vec![
                run("vllm", 'e', &["engine.vllm", "harness"]),
                run("sglang", 'b', &["engine.sglang"]),
                run("vllm-flag", 'f', &["engine.sglang"]),
            ],
        };
        let inputs = input_changes(&before, &after);
        assert_eq!(inputs.len(), 1);
        assert_eq!(
            inputs[0].describe(),
            "version 0.11.0 → 0.17.1; pinned image v@sha256:1f → (unpinned)"
        );
        let runs = run_key_changes(&before, &after, Runtime::Sim);
        let seen: Vec<(&str, Vec<String>, bool)> = runs
            .iter()
            .map(|r| (r.step.as_str(), r.causes.clone(), r.after.is_some()))
            .collect();
        assert_eq!(
            seen,
            [
                ("vllm", vec!["engine.vllm".to_owned()], true),
                ("vllm-flag", vec![], true),
                ("gone", vec![], false),
            ]
        );
    }
}
