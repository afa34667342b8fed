//! Which fields of two runs' key material differ, for `explain`. (pure)

use serde_json::Value;

/// One field that differs: a dotted path and both values as text
/// (`None`: absent on that side).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldChange {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Every leaf field of `before` and `after` that differs, in path order.
/// The serve argv is compared flag by flag (path `serve_args --flag`, each
/// side the flag with its values, `None` where it is absent), so one added
/// flag is one change, as a changed engine version is; other lists are
/// compared whole and shown as words.
pub fn material_changes(before: &Value, after: &Value) -> Vec<FieldChange> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    flatten("", before, &mut a);
    flatten("", after, &mut b);
    let mut paths: Vec<&String> = a.iter().chain(&b).map(|(p, _)| p).collect();
    paths.sort();
    paths.dedup();
    let get = |side: &[(String, String)], path: &str| {
        side.iter().find(|(p, _)| p == path).map(|(_, v)| v.clone())
    };
    paths
        .into_iter()
        .filter_map(|path| {
            let (before, after) = (get(&a, path), get(&b, path));
            (before != after).then(|| FieldChange {
                path: path.clone(),
                before,
                after,
            })
        })
        .collect()
}

/// How far apart two runs' key material is: the number of fields
/// [`material_changes`] finds, serve flags counted one by one. The nearest
/// stored run (`explain`'s, and the one whose duration `plan` estimates
/// from) is the one at the least distance.
pub fn material_distance(a: &Value, b: &Value) -> usize {
    material_changes(a, b).len()
}

/// The leaf fields [`material_changes`] compares, as (path, value as
/// text), each path once (its first value, the one `material_changes` reads).
pub fn material_fields(material: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    flatten("", material, &mut out);
    let mut seen = std::collections::HashSet::new();
    out.retain(|(path, _)| seen.insert(path.clone()));
    out
}

fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&path, v, out);
            }
        }
        Value::Array(items) if prefix == SERVE_ARGS => {
            let words: Vec<String> = items.iter().map(text).collect();
            out.extend(flags(&words));
        }
        Value::Array(items) => {
            let words: Vec<String> = items.iter().map(text).collect();
            out.push((prefix.to_owned(), words.join(" ")));
        }
        leaf => out.push((prefix.to_owned(), text(leaf))),
    }
}

const SERVE_ARGS: &str = "serve_args";

/// A canonical argv (flags sorted, values after their flag) as one entry per
/// flag name, `serve_args --name` → `--name values…` (every occurrence), and
/// the words before the first flag as `serve_args`.
fn flags(words: &[String]) -> Vec<(String, String)> {
    let is_flag = |w: &str| w.starts_with('-') && w.len() > 1 && w.parse::<f64>().is_err();
    let mut out: Vec<(String, String)> = Vec::new();
    let mut path = SERVE_ARGS.to_owned();
    for word in words {
        if is_flag(word) {
            let name = word.split_once('=').map_or(word.as_str(), |(n, _)| n);
            path = format!("{SERVE_ARGS} {name}");
        }
        match out.iter_mut().find(|(p, _)| *p == path) {
            Some((_, text)) => {
                text.push(' ');
                text.push_str(word);
            }
            None => out.push((path.clone(), word.clone())),
        }
    }
    out
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_each_differing_field_with_both_values() {
        let before = json!({"engine": {"name": "vllm", "image": "sha256:1f0c"}, "serve_args": ["--max-num-seqs", "512"], "env": {}});
        let after = json!({"engine": {"name": "vllm", "image": "sha256:9a7b"}, "serve_args": ["--max-num-seqs", "1024"], "env": {"A": "1"}});
        let changes: Vec<String> = material_changes(&before, &after)
            .iter()
            .map(|c| format!("{}: {:?} → {:?}", c.path, c.before, c.after))
            .collect();
        assert_eq!(
            changes,
            [
                r#"engine.image: Some("sha256:1f0c") → Some("sha256:9a7b")"#,
                r#"env.A: None → Some("1")"#,
                r#"serve_args --max-num-seqs: Some("--max-num-seqs 512") → Some("--max-num-seqs 1024")"#,
            ]
        );
        assert!(material_changes(&before, &before).is_empty());
    }

    /// One added flag is one change; another configuration's argv is many.
    #[test]
    fn serve_args_differ_flag_by_flag() {
        let argv = |args: &[&str]| json!({"serve_args": args});
        let edited = argv(&[
            "--enable-expert-parallel",
            "--max-num-seqs",
            "4",
            "-tp",
            "8",
        ]);
        let before = argv(&["--max-num-seqs", "4", "-tp", "8"]);
        let other = argv(&["--kv-cache-dtype", "fp8", "--max-num-seqs", "8", "-tp", "8"]);
        let changes = material_changes(&before, &edited);
        assert_eq!(
            changes,
            [FieldChange {
                path: "serve_args --enable-expert-parallel".into(),
                before: None,
                after: Some("--enable-expert-parallel".into()),
            }]
        );
        assert_eq!(material_changes(&other, &edited).len(), 3);
        let repeated = material_changes(
            &argv(&["serve", "m", "--x", "1", "--x", "2"]),
            &argv(&["serve", "n", "--x", "1"]),
        );
        let shown: Vec<_> = repeated
            .iter()
            .map(|c| (c.path.as_str(), c.before.as_deref(), c.after.as_deref()))
            .collect();
        assert_eq!(
            shown,
            [
                ("serve_args", Some("serve m"), Some("serve n")),
                ("serve_args --x", Some("--x 1 --x 2"), Some("--x 1")),
            ]
        );
    }

    /// The distance counts the changes, so the nearest stored run is the
    /// one with the fewest: same material 0, one flag added 1, another
    /// configuration's argv 3.
    #[test]
    fn the_distance_is_the_number_of_changed_fields() {
        let argv = |args: &[&str]| json!({"engine": {"name": "vllm"}, "serve_args": args});
        let base = argv(&["--max-num-seqs", "4", "-tp", "8"]);
        let one_flag = argv(&[
            "--enable-expert-parallel",
            "--max-num-seqs",
            "4",
            "-tp",
            "8",
        ]);
        let other = argv(&["--kv-cache-dtype", "fp8", "--max-num-seqs", "8", "-tp", "8"]);
        assert_eq!(material_distance(&base, &base), 0);
        assert_eq!(material_distance(&base, &one_flag), 1);
        assert_eq!(material_distance(&other, &one_flag), 3);
        // A lone `-` (standard input, as some flags take) is a value, not a flag.
        let dash = argv(&["--chat-template", "-"]);
        let plus = argv(&["--chat-template", "+"]);
        assert_eq!(material_distance(&dash, &plus), 1);
    }

    /// Only the serve argv is read flag by flag: any other list is one
    /// field, under its own path, shown as its words.
    #[test]
    fn other_lists_are_one_field_under_their_own_path() {
        let before = json!({"workload": {"stop": ["--a", "1"]}});
        let after = json!({"workload": {"stop": ["--a", "2"]}});
        assert_eq!(
            material_changes(&before, &after),
            [FieldChange {
                path: "workload.stop".into(),
                before: Some("--a 1".into()),
                after: Some("--a 2".into()),
            }]
        );
    }
}
