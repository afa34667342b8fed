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
/// Lists (the serve argv) are compared whole and shown as words.
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
        Value::Array(items) => {
            let words: Vec<String> = items.iter().map(text).collect();
            out.push((prefix.to_owned(), words.join(" ")));
        }
        leaf => out.push((prefix.to_owned(), text(leaf))),
    }
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
                r#"serve_args: Some("--max-num-seqs 512") → Some("--max-num-seqs 1024")"#,
            ]
        );
        assert!(material_changes(&before, &before).is_empty());
    }
}
