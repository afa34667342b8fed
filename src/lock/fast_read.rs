//! A reader for the exact layout [`super::render`] writes, line by line.
//!
//! The KDL parser takes seconds on a lockfile of 10,000 runs; this reads it
//! in milliseconds. It accepts only what `render` produces (and what it
//! produced before: the same nodes, in the same form) and answers `None` on
//! anything else, hand edits included, so that the full KDL parser reads
//! those and reports their errors. (pure)

use super::{Attrs, Input, LOCKFILE_VERSION, LockedRun, Lockfile};
use crate::key::RunKey;

/// The lockfile `text` holds, when it is in the machine-written layout.
pub fn read(text: &str) -> Option<Lockfile> {
    let mut lines = text
        .strip_suffix('\n')?
        .split('\n')
        .skip_while(|l| l.starts_with("//"))
        .filter(|l| !l.is_empty());
    let experiment = {
        let (name, entries) = node(lines.next()?)?;
        match (name, entries.as_slice()) {
            (
                "lockfile",
                [
                    Entry::Prop("version", version),
                    Entry::Prop("experiment", experiment),
                ],
            ) if *version == Value::Int(LOCKFILE_VERSION) => experiment.text()?.to_owned(),
            _ => return None,
        }
    };
    let mut inputs = Vec::new();
    let mut runs = Vec::new();
    while let Some(line) = lines.next() {
        let (name, args) = node(line.strip_suffix(" {")?)?;
        match (name, args.as_slice()) {
            ("input", [Entry::Arg(name)]) => {
                let original = child_attrs(lines.next()?, "    original")?;
                let locked = match lines.next()? {
                    "    unpinned" => None,
                    line => Some(child_attrs(line, "    locked")?),
                };
                inputs.push(Input {
                    name: name.text()?.to_owned(),
                    original,
                    locked,
                });
            }
            ("run", [Entry::Arg(step), Entry::Arg(workload)]) => {
                let mut keys = std::collections::BTreeMap::new();
                let mut line = lines.next()?;
                while let Some(rest) = line.strip_prefix("    key ") {
                    for (runtime, key) in attrs(rest)? {
                        // A second key for a runtime, or a bad one: the KDL reader's to judge.
                        if keys.insert(runtime, RunKey::parse(&key)?).is_some() {
                            return None;
                        }
                    }
                    line = lines.next()?;
                }
                let uses = match line.strip_prefix("    uses")? {
                    "" | " " => Vec::new(),
                    rest => entries(rest.strip_prefix(' ')?)?
                        .into_iter()
                        .map(|e| match e {
                            Entry::Arg(v) => v.text().map(str::to_owned),
                            Entry::Prop(..) => None,
                        })
                        .collect::<Option<_>>()?,
                };
                runs.push(LockedRun {
                    step: step.text()?.to_owned(),
                    workload: workload.text()?.to_owned(),
                    keys,
                    uses,
                });
            }
            _ => return None,
        }
        (lines.next()? == "}").then_some(())?;
    }
    Some(Lockfile {
        experiment,
        inputs,
        runs,
    })
}

#[derive(Debug, PartialEq)]
enum Value {
    Text(String),
    Int(i128),
}

impl Value {
    fn text(&self) -> Option<&str> {
        match self {
            Self::Text(s) => Some(s),
            Self::Int(_) => None,
        }
    }
}

#[derive(Debug, PartialEq)]
enum Entry<'a> {
    Arg(Value),
    Prop(&'a str, Value),
}

/// The properties of a child node `prefix k="v" ...` (none: `prefix` alone).
fn child_attrs(line: &str, prefix: &str) -> Option<Attrs> {
    match line.strip_prefix(prefix)? {
        "" => Some(Attrs::new()),
        rest => attrs(rest.strip_prefix(' ')?),
    }
}

/// A node's name and its entries: `name e1 e2 ...`.
fn node(line: &str) -> Option<(&str, Vec<Entry<'_>>)> {
    let (name, rest) = line.split_once(' ')?;
    Some((name, entries(rest)?))
}

/// `k="v" ...`: string properties only, each name once.
fn attrs(rest: &str) -> Option<Attrs> {
    let mut out = Attrs::new();
    for entry in entries(rest)? {
        let Entry::Prop(name, Value::Text(value)) = entry else {
            return None;
        };
        if out.insert(name.to_owned(), value).is_some() {
            return None;
        }
    }
    Some(out)
}

/// Space-separated entries: `"text"`, or `name="text"` / `name=<integer>`.
fn entries(mut rest: &str) -> Option<Vec<Entry<'_>>> {
    let mut out = Vec::new();
    loop {
        let (entry, after) = match rest.strip_prefix('"') {
            Some(quoted) => {
                let (text, after) = string(quoted)?;
                (Entry::Arg(Value::Text(text)), after)
            }
            None => {
                let (name, value) = rest.split_once('=')?;
                if !is_plain_name(name) {
                    return None;
                }
                let (value, after) = match value.strip_prefix('"') {
                    Some(quoted) => {
                        let (text, after) = string(quoted)?;
                        (Value::Text(text), after)
                    }
                    None => {
                        let end = value.find(' ').unwrap_or(value.len());
                        let digits = &value[..end];
                        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                            return None;
                        }
                        (Value::Int(digits.parse().ok()?), &value[end..])
                    }
                };
                (Entry::Prop(name, value), after)
            }
        };
        out.push(entry);
        match after {
            "" => return Some(out),
            _ => rest = after.strip_prefix(' ')?,
        }
    }
}

/// The names `render` writes bare: lowercase words that KDL reads as
/// identifiers (its keywords are written with `#` and never reach here).
fn is_plain_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !matches!(name, "true" | "false" | "null" | "inf" | "nan")
}

/// A quoted string's text (after its opening quote) and what follows its
/// closing quote; `None` for an escape or a character `render` never writes
/// raw, which the KDL reader then judges.
fn string(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &s[i + 1..])),
            '\\' => match chars.next()?.1 {
                '"' => out.push('"'),
                '\\' => out.push('\\'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'u' => {
                    let rest = chars.as_str().strip_prefix('{')?;
                    let (hex, _) = rest.split_once('}')?;
                    if hex.is_empty() || hex.len() > 6 {
                        return None;
                    }
                    out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
                    // Past `{hex}`.
                    for _ in 0..hex.len() + 2 {
                        chars.next();
                    }
                }
                _ => return None,
            },
            c if c.is_control()
                || crate::kdl_string::kdl_disallows(c)
                || matches!(c, '\u{2028}' | '\u{2029}') =>
            {
                return None;
            }
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use proptest::prelude::*;

    use super::*;
    use crate::lock::file::{parse_kdl, render};

    /// Every lockfile of the repository and its fixtures.
    fn lockfiles() -> Vec<std::path::PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut out = Vec::new();
        let mut dirs = vec![root.join("lockfiles"), root.join("tests/fixtures")];
        while let Some(dir) = dirs.pop() {
            for entry in fs_err::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "lock") {
                    out.push(path);
                }
            }
        }
        out
    }

    #[test]
    fn reads_every_lockfile_of_the_repository_as_the_kdl_parser_does() {
        let files = lockfiles();
        assert!(files.len() >= 2, "found {files:?}");
        for path in files {
            let text = fs_err::read_to_string(&path).unwrap();
            let fast = read(&text).unwrap_or_else(|| panic!("{} not read fast", path.display()));
            assert_eq!(
                Some(fast),
                parse_kdl("x.lock", &text).ok(),
                "{}",
                path.display()
            );
        }
    }

    #[test]
    fn leaves_what_render_does_not_write_to_the_kdl_parser() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("lockfiles/qwen3-14b-a100.lock");
        let text = fs_err::read_to_string(path).unwrap();
        let edits = [
            // Valid KDL, other layouts: the KDL parser reads them.
            text.replace("    uses ", "  uses "),
            text.replace("lockfile version=1", "lockfile  version=1"),
            text.replace("\n}\n", "}\n"),
            text.replace("original ", "original /* c */ "),
            format!("{text}// trailing comment\n"),
            text.replace('\n', "\r\n"),
            // Errors: the KDL parser names them.
            text.replace("version=1", "version=2"),
            text.replace("uses ", "used "),
            format!("{text}input {{"),
            text.replace("key sim=\"", "key sim=\"z"),
        ];
        for edited in edits {
            assert_ne!(edited, text);
            assert_eq!(read(&edited), None, "{edited}");
        }
        assert!(read(&text).is_some());
    }

    fn text() -> impl Strategy<Value = String> {
        // Quotes, backslashes, controls, code points KDL refuses raw, and
        // characters outside ASCII: all must survive render → read.
        prop::collection::vec(
            prop_oneof![
                Just('"'),
                Just('\\'),
                Just('\n'),
                Just('\u{0}'),
                Just('\u{202e}'),
                Just('\u{feff}'),
                Just('\u{85}'),
                Just('\u{2028}'),
                Just('é'),
                Just('{'),
                Just('}'),
                Just('='),
                Just(' '),
                prop::char::range('a', 'z'),
            ],
            0..8,
        )
        .prop_map(|cs| cs.into_iter().collect())
    }

    fn attrs() -> impl Strategy<Value = Attrs> {
        // KDL's keywords are no names `render` could write bare.
        let name = "[a-z][a-z0-9_]{0,6}".prop_filter("a keyword", |n| {
            !matches!(n.as_str(), "true" | "false" | "null" | "inf" | "nan")
        });
        prop::collection::btree_map(name, text(), 0..4)
    }

    fn lockfile() -> impl Strategy<Value = Lockfile> {
        let input =
            (text(), attrs(), prop::option::of(attrs())).prop_map(|(name, original, locked)| {
                Input {
                    name,
                    original,
                    locked,
                }
            });
        let run = (
            text(),
            text(),
            prop::collection::btree_map(
                prop_oneof![Just("docker"), Just("local"), Just("sim")],
                "[0-9a-f]{64}",
                0..3,
            ),
            prop::collection::vec(text(), 0..3),
        )
            .prop_map(|(step, workload, keys, uses)| LockedRun {
                step,
                workload,
                keys: keys
                    .into_iter()
                    .map(|(rt, k)| (rt.to_owned(), RunKey::parse(&k).unwrap()))
                    .collect::<BTreeMap<_, _>>(),
                uses,
            });
        (
            text(),
            prop::collection::vec(input, 0..4),
            prop::collection::vec(run, 0..4),
        )
            .prop_map(|(experiment, inputs, runs)| Lockfile {
                experiment,
                inputs,
                runs,
            })
    }

    proptest! {
        #[test]
        fn reads_what_render_writes_as_the_kdl_parser_does(lock in lockfile()) {
            let text = render(&lock);
            prop_assert_eq!(read(&text), Some(lock.clone()));
            prop_assert_eq!(parse_kdl("x.lock", &text).ok(), Some(lock));
        }
    }
}
