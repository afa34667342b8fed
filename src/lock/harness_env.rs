//! The environment an external benchmark client runs from, as the lockfile
//! records it: what defines it (`original`: the requirement perfpipe
//! installs) and what an install resolved (`locked`: the environment's
//! address, its Python, and every package installed, by exact version).
//! (pure)
//!
//! Like an image or a model revision it is a pin: kept while the
//! requirement is unchanged, resolved where the environment is made
//! (`perfpipe fetch`, or `run` when it installs it, `fetch::harness_env`).

use super::{Attrs, Input, Lockfile, names};
use crate::spec::{HarnessKind, Spec};

/// The package perfpipe installs for an external harness, and the program
/// in it that runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessRequirement {
    /// The distribution on the package index.
    pub package: &'static str,
    /// The console script it installs.
    pub program: &'static str,
    pub version: String,
}

impl HarnessRequirement {
    /// `None` for the built-in harness, which is perfpipe itself. `vllm bench
    /// serve` comes with vLLM: the public release of the declared version
    /// (a local label such as `+cpu` names a build the index does not serve
    /// under that name; see the docs).
    pub fn of(kind: &HarnessKind) -> Option<Self> {
        match kind {
            HarnessKind::Builtin => None,
            HarnessKind::VllmBench { version } => Some(Self {
                package: "vllm",
                program: "vllm",
                version: crate::pyenv::public_version(version.trim_start_matches('v')).to_owned(),
            }),
            HarnessKind::Guidellm { version } => Some(Self {
                package: "guidellm",
                program: "guidellm",
                version: version.trim_start_matches('v').to_owned(),
            }),
        }
    }

    /// `guidellm==0.5.3`: what the installer is asked for.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }
}

/// What a made environment resolved to, as `locked` records it.
pub fn locked_attrs(address: &str, python: &str, packages: &[(String, String)]) -> Attrs {
    Attrs::from([
        ("env".to_owned(), address.to_owned()),
        ("python".to_owned(), python.to_owned()),
        ("packages".to_owned(), packages_text(packages)),
    ])
}

/// `name==version` of each package, sorted, separated by spaces.
pub fn packages_text(packages: &[(String, String)]) -> String {
    let mut pinned: Vec<String> = packages.iter().map(|(n, v)| format!("{n}=={v}")).collect();
    pinned.sort();
    pinned.join(" ")
}

/// The `name==version` requirements a locked entry records: what an install
/// on another machine asks for, so that it resolves the same packages.
pub fn recorded_requirements(locked: &Attrs) -> Vec<String> {
    locked
        .get("packages")
        .map(|p| p.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The `harness.env` input of `spec`: none for the built-in harness; else
/// its requirement, pinned as `old` pinned it while the requirement is the
/// same (unless `renew`), else as `found` (the environment on this machine,
/// when asked for and made), else unpinned.
pub fn env_input(
    spec: &Spec,
    old: Option<&Lockfile>,
    renew: bool,
    found: impl FnOnce(&HarnessRequirement) -> Option<Attrs>,
) -> Option<Input> {
    let wanted = HarnessRequirement::of(&spec.harness.kind)?;
    let original = Attrs::from([("requirement".to_owned(), wanted.requirement())]);
    let kept = old
        .and_then(|l| l.input(names::HARNESS_ENV))
        .filter(|i| i.original == original && !renew)
        .and_then(|i| i.locked.clone());
    Some(Input {
        name: names::HARNESS_ENV.into(),
        locked: kept.or_else(|| found(&wanted)),
        original,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{SourceFile, parse};

    fn spec(harness: &str) -> Spec {
        parse(&SourceFile {
            name: "s".into(),
            text: format!(
                "experiment e {{\n hardware \"nvidia-h100-sxm5-80gb\" gpus=1\n model \"m/x\"\n \
                 engine vllm version=\"0.32.0\"\n {harness}\n \
                 workload w {{ dataset random input=8 output=8; prompts 1 }}\n step s engine=vllm gpus=1\n}}\n"
            ),
        })
        .unwrap()
    }

    #[test]
    fn each_external_harness_installs_its_package_at_the_declared_version() {
        let of = |h: &str| HarnessRequirement::of(&spec(h).harness.kind);
        assert_eq!(of("harness builtin"), None);
        let guidellm = of(r#"harness guidellm version="0.5.3""#).unwrap();
        assert_eq!(
            (guidellm.requirement(), guidellm.program),
            ("guidellm==0.5.3".to_owned(), "guidellm")
        );
        let vllm = of(r#"harness vllm-bench version="0.32.0+cpu""#).unwrap();
        assert_eq!(
            (vllm.requirement(), vllm.program),
            ("vllm==0.32.0".to_owned(), "vllm"),
            "the index serves the public release"
        );
        assert_eq!(
            of(r#"harness vllm-bench version="v0.11.0""#)
                .unwrap()
                .requirement(),
            "vllm==0.11.0"
        );
    }

    #[test]
    fn the_environment_pin_is_kept_while_its_requirement_is_unchanged() {
        let guidellm = spec(r#"harness guidellm version="0.5.3""#);
        let made = locked_attrs(
            "0f1e-guidellm-0.5.3",
            "3.11",
            &[
                ("httpx".into(), "0.28.1".into()),
                ("guidellm".into(), "0.5.3".into()),
            ],
        );
        assert_eq!(
            made.get("packages").map(String::as_str),
            Some("guidellm==0.5.3 httpx==0.28.1")
        );
        assert_eq!(
            recorded_requirements(&made),
            ["guidellm==0.5.3", "httpx==0.28.1"]
        );
        let unpinned = env_input(&guidellm, None, false, |_| None).unwrap();
        assert_eq!(unpinned.name, "harness.env");
        assert_eq!(
            unpinned.original.get("requirement").map(String::as_str),
            Some("guidellm==0.5.3")
        );
        assert_eq!(unpinned.locked, None);
        let found = env_input(&guidellm, None, false, |_| Some(made.clone())).unwrap();
        let old = Lockfile {
            experiment: "e".into(),
            inputs: vec![found.clone()],
            runs: Vec::new(),
        };
        let elsewhere = |_: &HarnessRequirement| Some(locked_attrs("other", "3.12", &[]));
        assert_eq!(
            env_input(&guidellm, Some(&old), false, elsewhere),
            Some(found.clone()),
            "kept: what the lockfile pins is what runs"
        );
        assert_eq!(
            env_input(&guidellm, Some(&old), true, elsewhere)
                .unwrap()
                .locked,
            elsewhere(&HarnessRequirement::of(&guidellm.harness.kind).unwrap()),
            "`lock --update harness.env` resolves it again"
        );
        let newer = spec(r#"harness guidellm version="0.7.2""#);
        assert_eq!(
            env_input(&newer, Some(&old), false, |_| None)
                .unwrap()
                .locked,
            None,
            "another version is another environment"
        );
        assert_eq!(
            env_input(&spec("harness builtin"), Some(&old), false, |_| None),
            None
        );
    }
}
