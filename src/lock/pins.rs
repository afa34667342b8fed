//! Which network pins to keep, which to resolve, and which stay unpinned.
//! (pure: the network is behind [`PinResolver`])

use std::collections::BTreeSet;

use super::{Attrs, Input, Lockfile};
use crate::facts::{Runtime, is_commit};

/// An input only the network can pin.
#[derive(Debug, Clone, PartialEq)]
pub struct PinRequest {
    pub name: String,
    pub original: Attrs,
    pub target: PinTarget,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PinTarget {
    /// A container image reference (`vllm/vllm-openai:v0.11.0`).
    Image(String),
    /// A Hugging Face model at a branch, tag or commit.
    Model { repo: String, revision: String },
}

impl PinTarget {
    /// Whether the keys of runs under `runtime` hold this pin: an image only
    /// under `docker`; a model's commit under every runtime but `sim`, whose
    /// engine loads no weights and so needs no network (its keys hold the
    /// revision as declared until a `lock` pins it).
    pub fn needed_under(&self, runtime: Runtime) -> bool {
        match self {
            PinTarget::Image(_) => runtime == Runtime::Docker,
            PinTarget::Model { .. } => runtime != Runtime::Sim,
        }
    }
}

/// Resolves pins over the network (`lock::resolve::Online`), or a fake in tests.
pub trait PinResolver {
    /// Tag → `{image: "<registry>/<repo>@sha256:…"}` (+ `index` when the tag names an index).
    fn image(&self, reference: &str) -> Result<Attrs, PinError>;
    /// Branch or tag → `{revision: "<commit sha>"}`.
    fn model(&self, repo: &str, revision: &str) -> Result<Attrs, PinError>;
}

/// Why a pin could not be resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct PinError {
    pub message: String,
    /// The host that could not be reached (name lookup, connection, time
    /// out): every pin it serves fails alike, and is said once.
    pub unreachable: Option<String>,
}

impl From<String> for PinError {
    fn from(message: String) -> Self {
        Self {
            message,
            unreachable: None,
        }
    }
}

impl From<&str> for PinError {
    fn from(message: &str) -> Self {
        message.to_owned().into()
    }
}

/// Which existing pins `lock --update` re-resolves.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Update {
    #[default]
    Nothing,
    All,
    Only(BTreeSet<String>),
}

#[derive(Debug, Clone, Default)]
pub struct PinPolicy {
    /// `lock` fills pins an earlier offline lock left open; `run` does not
    /// (it only pins inputs that are new to the lockfile).
    pub fill_unpinned: bool,
    pub update: Update,
    /// `run` asks the network only for the pins its runtime's keys hold
    /// ([`PinTarget::needed_under`]); `lock` (`None`) for every one.
    pub needed_under: Option<Runtime>,
}

/// A pin that could not be resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub input: String,
    pub message: String,
    /// The host that could not be reached, when that is why.
    pub unreachable: Option<String>,
    /// The input keeps the pin the lockfile had (`--update` could not
    /// refresh it); else it stays unpinned.
    pub kept: bool,
}

/// Keeps every pin whose declaration is unchanged, resolves the rest with
/// `resolver` (`None`: offline, they stay unpinned). A pin `--update` asks
/// to refresh that cannot be (offline, or the resolver fails) is kept as
/// the lockfile had it: an update that cannot happen changes nothing.
pub fn resolve_pins(
    requests: &[PinRequest],
    old: Option<&Lockfile>,
    policy: &PinPolicy,
    resolver: Option<&dyn PinResolver>,
) -> (Vec<Input>, Vec<Problem>) {
    let mut problems = Vec::new();
    let inputs = requests
        .iter()
        .map(|request| {
            let kept = old
                .and_then(|l| l.input(&request.name))
                .filter(|i| i.original == request.original);
            let update = match &policy.update {
                Update::Nothing => false,
                Update::All => true,
                Update::Only(names) => names.contains(&request.name),
            };
            let had = kept.and_then(|i| i.locked.clone());
            let locked = match kept {
                Some(i) if !update && (i.locked.is_some() || !policy.fill_unpinned) => {
                    i.locked.clone()
                }
                _ => match (
                    offline_pin(&request.target),
                    resolver.filter(|_| {
                        policy
                            .needed_under
                            .is_none_or(|runtime| request.target.needed_under(runtime))
                    }),
                ) {
                    (Some(pin), _) => Some(pin),
                    (None, None) => had,
                    (None, Some(resolver)) => {
                        let resolved = match &request.target {
                            PinTarget::Image(reference) => resolver.image(reference),
                            PinTarget::Model { repo, revision } => resolver.model(repo, revision),
                        };
                        match resolved {
                            Ok(pin) => Some(pin),
                            Err(e) => {
                                problems.push(Problem {
                                    input: request.name.clone(),
                                    message: e.message,
                                    unreachable: e.unreachable,
                                    kept: had.is_some(),
                                });
                                had
                            }
                        }
                    }
                },
            };
            Input {
                name: request.name.clone(),
                original: request.original.clone(),
                locked,
            }
        })
        .collect();
    (inputs, problems)
}

/// What is already pinned as declared: an image by digest, a model by commit.
fn offline_pin(target: &PinTarget) -> Option<Attrs> {
    match target {
        PinTarget::Image(reference) if reference.contains("@sha256:") => {
            Some(Attrs::from([("image".into(), reference.clone())]))
        }
        PinTarget::Model { revision, .. } if is_commit(revision) => {
            Some(Attrs::from([("revision".into(), revision.clone())]))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    struct Fake {
        asked: RefCell<Vec<String>>,
    }

    impl PinResolver for Fake {
        fn image(&self, reference: &str) -> Result<Attrs, PinError> {
            self.asked.borrow_mut().push(reference.into());
            if reference.contains("broken") {
                return Err("registry said 503".into());
            }
            Ok(Attrs::from([(
                "image".into(),
                format!("{reference}@sha256:new"),
            )]))
        }
        fn model(&self, repo: &str, _: &str) -> Result<Attrs, PinError> {
            self.asked.borrow_mut().push(repo.into());
            Ok(Attrs::from([("revision".into(), "f".repeat(40))]))
        }
    }

    fn image(name: &str, reference: &str) -> PinRequest {
        PinRequest {
            name: name.into(),
            original: Attrs::from([("image".into(), reference.into())]),
            target: PinTarget::Image(reference.into()),
        }
    }

    fn old(inputs: Vec<Input>) -> Lockfile {
        Lockfile {
            experiment: "x".into(),
            inputs,
            runs: vec![],
        }
    }

    fn pinned(name: &str, reference: &str, pin: Option<&str>) -> Input {
        Input {
            name: name.into(),
            original: Attrs::from([("image".into(), reference.into())]),
            locked: pin.map(|p| Attrs::from([("image".into(), p.into())])),
        }
    }

    #[test]
    fn existing_pins_are_kept_and_only_new_inputs_are_resolved() {
        let fake = Fake {
            asked: RefCell::default(),
        };
        let old = old(vec![
            pinned("engine.vllm", "v:1", Some("v@sha256:old")),
            pinned("engine.sglang", "s:1", None),
        ]);
        let requests = [
            image("engine.vllm", "v:1"),
            image("engine.sglang", "s:1"),
            image("engine.trtllm", "t:1"),
        ];
        let (inputs, problems) =
            resolve_pins(&requests, Some(&old), &PinPolicy::default(), Some(&fake));
        assert!(problems.is_empty());
        assert_eq!(*fake.asked.borrow(), ["t:1"]);
        assert_eq!(inputs[0].locked.as_ref().unwrap()["image"], "v@sha256:old");
        assert_eq!(inputs[1].locked, None, "run leaves an open pin open");
        assert_eq!(
            inputs[2].locked.as_ref().unwrap()["image"],
            "t:1@sha256:new"
        );

        let lock = PinPolicy {
            fill_unpinned: true,
            update: Update::Nothing,
            needed_under: None,
        };
        fake.asked.borrow_mut().clear();
        let (inputs, _) = resolve_pins(&requests, Some(&old), &lock, Some(&fake));
        assert_eq!(*fake.asked.borrow(), ["s:1", "t:1"], "lock fills open pins");
        assert_eq!(inputs[0].locked.as_ref().unwrap()["image"], "v@sha256:old");
    }

    #[test]
    fn a_changed_declaration_or_update_resolves_again() {
        let fake = Fake {
            asked: RefCell::default(),
        };
        let old = old(vec![pinned("engine.vllm", "v:1", Some("v@sha256:old"))]);
        let (inputs, _) = resolve_pins(
            &[image("engine.vllm", "v:2")],
            Some(&old),
            &PinPolicy::default(),
            Some(&fake),
        );
        assert_eq!(
            inputs[0].locked.as_ref().unwrap()["image"],
            "v:2@sha256:new"
        );
        let update = PinPolicy {
            fill_unpinned: true,
            update: Update::Only(BTreeSet::from(["engine.vllm".to_owned()])),
            needed_under: None,
        };
        let (inputs, _) = resolve_pins(
            &[image("engine.vllm", "v:1")],
            Some(&old),
            &update,
            Some(&fake),
        );
        assert_eq!(
            inputs[0].locked.as_ref().unwrap()["image"],
            "v:1@sha256:new"
        );
    }

    #[test]
    fn an_update_that_cannot_refresh_a_pin_keeps_it() {
        let fake = Fake {
            asked: RefCell::default(),
        };
        let old = old(vec![pinned(
            "engine.vllm",
            "broken:1",
            Some("v@sha256:old"),
        )]);
        let update = PinPolicy {
            fill_unpinned: true,
            update: Update::All,
            needed_under: None,
        };
        let requests = [image("engine.vllm", "broken:1")];
        let (inputs, problems) = resolve_pins(&requests, Some(&old), &update, Some(&fake));
        assert_eq!(inputs[0].locked.as_ref().unwrap()["image"], "v@sha256:old");
        assert!(problems[0].kept, "{problems:?}");
        let (inputs, problems) = resolve_pins(&requests, Some(&old), &update, None);
        assert_eq!(
            inputs[0].locked.as_ref().unwrap()["image"],
            "v@sha256:old",
            "offline"
        );
        assert!(problems.is_empty());
        // A changed declaration's old pin is no pin of it.
        let (inputs, problems) = resolve_pins(
            &[image("engine.vllm", "broken:2")],
            Some(&old),
            &update,
            Some(&fake),
        );
        assert_eq!(inputs[0].locked, None);
        assert!(!problems[0].kept);
    }

    #[test]
    fn offline_pins_what_is_pinned_as_declared_and_reports_failures() {
        let digest = format!("v@sha256:{}", "a".repeat(64));
        let model = PinRequest {
            name: "model.m@c".into(),
            original: Attrs::new(),
            target: PinTarget::Model {
                repo: "m".into(),
                revision: "0123456789abcdef0123456789abcdef01234567".into(),
            },
        };
        let (inputs, problems) = resolve_pins(
            &[
                image("engine.vllm", &digest),
                image("engine.sglang", "s:1"),
                model,
            ],
            None,
            &PinPolicy::default(),
            None,
        );
        assert!(problems.is_empty());
        assert_eq!(inputs[0].locked.as_ref().unwrap()["image"], digest);
        assert_eq!(inputs[1].locked, None);
        assert!(inputs[2].locked.is_some());

        let fake = Fake {
            asked: RefCell::default(),
        };
        let (inputs, problems) = resolve_pins(
            &[image("engine.vllm", "broken:1")],
            None,
            &PinPolicy::default(),
            Some(&fake),
        );
        assert_eq!(inputs[0].locked, None);
        assert_eq!(problems[0].message, "registry said 503");
    }

    #[test]
    fn run_asks_only_for_the_pins_its_runtime_keys_hold() {
        let fake = Fake {
            asked: RefCell::default(),
        };
        let requests = [
            image("engine.vllm", "v:1"),
            PinRequest {
                name: "model.m@main".into(),
                original: Attrs::from([("revision".into(), "main".into())]),
                target: PinTarget::Model {
                    repo: "m".into(),
                    revision: "main".into(),
                },
            },
        ];
        for (runtime, asked) in [
            (Runtime::Sim, &[][..]),
            (Runtime::Local, &["m"]),
            (Runtime::Docker, &["v:1", "m"]),
        ] {
            fake.asked.borrow_mut().clear();
            let policy = PinPolicy {
                needed_under: Some(runtime),
                ..PinPolicy::default()
            };
            let (inputs, problems) = resolve_pins(&requests, None, &policy, Some(&fake));
            assert!(problems.is_empty());
            assert_eq!(*fake.asked.borrow(), asked, "{runtime:?}");
            assert_eq!(
                inputs.iter().filter(|i| i.locked.is_some()).count(),
                asked.len(),
                "{runtime:?}: what is not asked stays unpinned"
            );
        }
    }
}
