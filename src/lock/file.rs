//! The lockfile's text: KDL v2, one canonical rendering, so re-locking
//! unchanged inputs gives the same bytes. (pure)

use std::fmt::Write;

use kdl::{KdlDocument, KdlNode};

use super::{Attrs, Error, Input, LOCKFILE_VERSION, LockedRun, Lockfile};
use crate::kdl_string::quote;
use crate::key::RunKey;

const HEADER: &str = "// Written by `perfpipe lock`; do not edit. Each input holds what the experiment\n\
// declares (`original`) and what it resolved to (`locked`); `unpinned` waits for\n\
// `perfpipe lock` on a machine that reaches the registry and the Hub.\n\
// `perfpipe lock --update [INPUT...]` resolves pins again.\n";

pub fn render(lock: &Lockfile) -> String {
    let mut out = String::from(HEADER);
    let _ = writeln!(
        out,
        "lockfile version={LOCKFILE_VERSION} experiment={}",
        quote(&lock.experiment)
    );
    for input in &lock.inputs {
        let _ = writeln!(out, "\ninput {} {{", quote(&input.name));
        let _ = writeln!(out, "    original{}", props(&input.original));
        match &input.locked {
            Some(locked) => {
                let _ = writeln!(out, "    locked{}", props(locked));
            }
            None => out.push_str("    unpinned\n"),
        }
        out.push_str("}\n");
    }
    for run in &lock.runs {
        let _ = writeln!(
            out,
            "\nrun {} {} {{",
            quote(&run.step),
            quote(&run.workload)
        );
        for (runtime, key) in &run.keys {
            let _ = writeln!(out, "    key {runtime}={}", quote(key.as_str()));
        }
        let uses: Vec<String> = run.uses.iter().map(|u| quote(u)).collect();
        let _ = writeln!(out, "    uses {}", uses.join(" "));
        out.push_str("}\n");
    }
    out
}

fn props(attrs: &Attrs) -> String {
    attrs
        .iter()
        .map(|(k, v)| format!(" {k}={}", quote(v)))
        .collect()
}

/// Reads a lockfile; `path` only names it in errors. The layout `render`
/// writes is read directly; anything else goes through the KDL parser.
pub fn parse(path: &str, text: &str) -> Result<Lockfile, Error> {
    match super::fast_read::read(text) {
        Some(lock) => Ok(lock),
        None => parse_kdl(path, text),
    }
}

/// Reads a lockfile with the KDL parser, whatever its layout.
pub(super) fn parse_kdl(path: &str, text: &str) -> Result<Lockfile, Error> {
    let fail = |message: String| Error::Parse {
        path: path.into(),
        message,
    };
    if !super::is_lockfile(text) {
        return Err(Error::NotALockfile {
            path: path.into(),
            first: super::first_node(text).map(str::to_owned),
        });
    }
    let doc = KdlDocument::parse_v2(text).map_err(|e| fail(format!("invalid KDL ({e})")))?;
    let mut experiment = None;
    let mut inputs = Vec::new();
    let mut runs = Vec::new();
    for node in doc.nodes() {
        match node.name().value() {
            "lockfile" => {
                let version = node.get("version").and_then(|v| v.as_integer());
                if version != Some(LOCKFILE_VERSION) {
                    return Err(fail(format!(
                        "format version {} (this perfpipe reads {LOCKFILE_VERSION})",
                        version.map_or("missing".into(), |v| v.to_string())
                    )));
                }
                experiment = Some(
                    string_prop(node, "experiment")
                        .ok_or_else(|| fail("`lockfile` has no `experiment=`".into()))?,
                );
            }
            "input" => inputs.push(input(node).map_err(fail)?),
            "run" => runs.push(run(node).map_err(fail)?),
            other => return Err(fail(format!("unknown node `{other}`"))),
        }
    }
    Ok(Lockfile {
        experiment: experiment.ok_or_else(|| fail("no `lockfile` node".into()))?,
        inputs,
        runs,
    })
}

fn input(node: &KdlNode) -> Result<Input, String> {
    let name = string_arg(node, 0).ok_or("an `input` has no name")?;
    let mut original = None;
    let mut locked = None;
    for child in children(node) {
        match child.name().value() {
            "original" => original = Some(attrs_of(child)?),
            "locked" => locked = Some(attrs_of(child)?),
            "unpinned" => {}
            other => return Err(format!("unknown node `{other}` in input `{name}`")),
        }
    }
    Ok(Input {
        original: original.ok_or_else(|| format!("input `{name}` has no `original`"))?,
        name,
        locked,
    })
}

fn run(node: &KdlNode) -> Result<LockedRun, String> {
    let (Some(step), Some(workload)) = (string_arg(node, 0), string_arg(node, 1)) else {
        return Err("a `run` needs its step and workload".into());
    };
    let mut keys = std::collections::BTreeMap::new();
    let mut uses = Vec::new();
    for child in children(node) {
        match child.name().value() {
            "key" => {
                for (runtime, value) in attrs_of(child)? {
                    let key = RunKey::parse(&value).ok_or_else(|| {
                        format!("run `{step}` × `{workload}`: `{value}` is not a key")
                    })?;
                    keys.insert(runtime, key);
                }
            }
            "uses" => {
                uses = (0..child.entries().len())
                    .filter_map(|i| string_arg(child, i))
                    .collect()
            }
            other => return Err(format!("unknown node `{other}` in run `{step}`")),
        }
    }
    Ok(LockedRun {
        step,
        workload,
        keys,
        uses,
    })
}

fn children(node: &KdlNode) -> &[KdlNode] {
    node.children().map(|c| c.nodes()).unwrap_or_default()
}

fn attrs_of(node: &KdlNode) -> Result<Attrs, String> {
    node.entries()
        .iter()
        .map(|e| match (e.name(), e.value().as_string()) {
            (Some(name), Some(value)) => Ok((name.value().to_owned(), value.to_owned())),
            _ => Err(format!(
                "`{}` holds something other than name=\"value\" properties",
                node.name().value()
            )),
        })
        .collect()
}

fn string_arg(node: &KdlNode, index: usize) -> Option<String> {
    node.entries()
        .iter()
        .filter(|e| e.name().is_none())
        .nth(index)
        .and_then(|e| e.value().as_string())
        .map(str::to_owned)
}

fn string_prop(node: &KdlNode, name: &str) -> Option<String> {
    node.get(name)
        .and_then(|v| v.as_string())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn sample() -> Lockfile {
        Lockfile {
            experiment: "tiny \"q\"".into(),
            inputs: vec![
                Input {
                    name: "engine.vllm".into(),
                    original: Attrs::from([
                        ("image".into(), "vllm/vllm-openai:v0.11.0".into()),
                        ("version".into(), "0.11.0".into()),
                    ]),
                    locked: Some(Attrs::from([(
                        "image".into(),
                        format!("docker.io/vllm/vllm-openai@sha256:{}", "1f".repeat(32)),
                    )])),
                },
                Input {
                    name: "model.Qwen/Qwen3-14B@main".into(),
                    original: Attrs::from([("repo".into(), "Qwen/Qwen3-14B".into())]),
                    locked: None,
                },
            ],
            runs: vec![LockedRun {
                step: "vllm-tp1".into(),
                workload: "short".into(),
                keys: BTreeMap::from([
                    ("docker".into(), RunKey::parse(&"a".repeat(64)).unwrap()),
                    ("sim".into(), RunKey::parse(&"b".repeat(64)).unwrap()),
                ]),
                uses: vec!["engine.vllm".into(), "harness".into()],
            }],
        }
    }

    #[test]
    fn renders_canonically_and_reads_back() {
        let lock = sample();
        let text = render(&lock);
        insta::assert_snapshot!(text, @r#"
        // Written by `perfpipe lock`; do not edit. Each input holds what the experiment
        // declares (`original`) and what it resolved to (`locked`); `unpinned` waits for
        // `perfpipe lock` on a machine that reaches the registry and the Hub.
        // `perfpipe lock --update [INPUT...]` resolves pins again.
        lockfile version=1 experiment="tiny \"q\""

        input "engine.vllm" {
            original image="vllm/vllm-openai:v0.11.0" version="0.11.0"
            locked image="docker.io/vllm/vllm-openai@sha256:1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f"
        }

        input "model.Qwen/Qwen3-14B@main" {
            original repo="Qwen/Qwen3-14B"
            unpinned
        }

        run "vllm-tp1" "short" {
            key docker="aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            key sim="bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
            uses "engine.vllm" "harness"
        }
        "#);
        assert_eq!(parse("x.lock", &text).unwrap(), lock);
    }

    /// A sweep over a value holding U+202E made a lockfile kdl refused to read.
    #[test]
    fn names_with_code_points_kdl_disallows_read_back() {
        let mut lock = sample();
        let name = "sw-\u{202e}\u{0}\u{2028}\u{feff}\u{85}x";
        lock.runs[0].step = name.into();
        let text = render(&lock);
        assert!(
            text.contains(r#"run "sw-\u{202e}\u{0}\u{2028}\u{feff}\u{85}x""#),
            "{text}"
        );
        assert_eq!(parse("x.lock", &text).unwrap(), lock);
    }

    #[test]
    fn a_damaged_lockfile_is_an_error_naming_the_problem() {
        let text = render(&sample());
        let cases = [
            (text.replace("version=1", "version=9"), "format version 9"),
            (
                text.replace("key docker=\"aaaa", "key docker=\"zzzz"),
                "is not a key",
            ),
            (
                text.replace("original repo", "origin repo"),
                "unknown node `origin`",
            ),
            (format!("{text}\ninput {{"), "invalid KDL"),
            (
                text.replace("lockfile version=1 experiment=\"tiny \\\"q\\\"\"", ""),
                "it begins with `input`, where a lockfile begins with `lockfile`",
            ),
        ];
        for (damaged, expected) in cases {
            let err = parse("x.lock", &damaged).unwrap_err().to_string();
            assert!(err.contains(expected), "{err} lacks {expected}");
        }
    }
}
