//! The library's layers, checked: every `crate::<module>` that code outside
//! tests names must be in the naming module's layer or a layer below it, and
//! the modules must not reach each other in a cycle (docs/architecture.md).
//!
//! The test reads `src/` as text: a path `crate::m…` or a group
//! `use crate::{m, …}` is an edge to the top-level module `m`. Comments and
//! test code (`#[cfg(test)]` items, and the files of `#[cfg(test)] mod x;`)
//! are left out: a test may build its inputs from anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may use its own layer and the layers
/// below it, never one above.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "mechanisms",
        &[
            "stderr",
            "error_kind",
            "tokio_runtime",
            "kdl_string",
            "pyenv",
            "atomic_write",
            "regular_file",
            "filelock",
            "digest",
            "plural",
            "clock",
            "rng",
            "numpy_random",
            "secrets",
            "tls",
            "host",
            "gpu",
            "external",
            "tokenizer",
            "oci",
            "parallel",
        ],
    ),
    ("facts", &["facts", "cpu", "metrics", "dataset"]),
    ("experiment", &["spec"]),
    ("inputs", &["inputs"]),
    ("keys", &["key"]),
    ("lockfile", &["lock"]),
    ("signed and launch material", &["signing", "launch"]),
    ("store", &["store"]),
    ("plan", &["plan"]),
    ("analysis and rendering", &["analyze", "report", "page"]),
    (
        "effects",
        &[
            "progress", "engine", "harness", "exec", "fetch", "cache", "project",
        ],
    ),
    ("operations", &["ops"]),
    ("commands", &["cli", "exit_code"]),
];

/// Modules compiled only for tests: not layered.
const TEST_ONLY: &[&str] = &["fuzz"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_module_uses_only_its_own_layer_and_the_layers_below() {
    let layer_of = layer_of();
    let modules = top_level_modules();
    let unplaced: Vec<&String> = modules
        .iter()
        .filter(|m| !layer_of.contains_key(m.as_str()) && !TEST_ONLY.contains(&m.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules in no layer: {unplaced:?}; add each to LAYERS in tests/layers.rs and to \
         docs/architecture.md"
    );
    let mut wrong = Vec::new();
    for (file, from, to) in edges(&modules) {
        let (Some(&(low, low_name)), Some(&(high, high_name))) =
            (layer_of.get(from.as_str()), layer_of.get(to.as_str()))
        else {
            continue;
        };
        if high > low {
            wrong.push(format!(
                "{file}: `crate::{to}` goes from {from} (layer {low}, {low_name}) up to {to} \
                 (layer {high}, {high_name}); a module may use its own layer and the layers \
                 below it (docs/architecture.md)"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "edges against the layering:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_modules_reach_each_other_in_a_cycle() {
    let modules = top_level_modules();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, from, to) in edges(&modules) {
        graph.entry(from).or_default().insert(to);
    }
    let mut cycles = BTreeSet::new();
    for start in graph.keys() {
        if let Some(mut cycle) = shortest_path_back(&graph, start) {
            // One line per cycle, whichever module it was found from.
            let first = (0..cycle.len()).min_by_key(|&i| &cycle[i]).unwrap_or(0);
            cycle.rotate_left(first);
            cycle.push(cycle[0].clone());
            cycles.insert(cycle.join(" → "));
        }
    }
    let cycles: Vec<String> = cycles.into_iter().collect();
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_architecture_and_the_crate_docs_name_every_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = std::fs::read_to_string(root.join("docs/architecture.md"))
        .expect("docs/architecture.md is readable");
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("src/lib.rs is readable");
    let table: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .flat_map(|l| l.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .collect();
    let missing: Vec<String> = top_level_modules()
        .into_iter()
        .filter(|m| !architecture.contains(&format!("`{m}`")) || !table.contains(&m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "modules docs/architecture.md or lib.rs's table does not name: {missing:?}"
    );
}

/// The modules of the shortest path from `start`'s uses back to `start`
/// (`start` first, not repeated at the end), if there is one.
fn shortest_path_back(
    graph: &BTreeMap<String, BTreeSet<String>>,
    start: &str,
) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(module) = queue.pop_front() {
        for next in graph.get(module).into_iter().flatten() {
            if next == start {
                let mut path = vec![module.to_owned()];
                let mut at = module;
                while at != start {
                    at = came_from[at];
                    path.push(at.to_owned());
                }
                path.reverse();
                return Some(path);
            }
            if !came_from.contains_key(next.as_str()) {
                came_from.insert(next, module);
                queue.push_back(next);
            }
        }
    }
    None
}

fn layer_of() -> BTreeMap<&'static str, (usize, &'static str)> {
    let mut out = BTreeMap::new();
    for (rank, (name, modules)) in LAYERS.iter().enumerate() {
        for module in modules.iter() {
            assert!(
                out.insert(*module, (rank, *name)).is_none(),
                "`{module}` is in two layers"
            );
        }
    }
    out
}

/// The crate's top-level modules: `src/<m>.rs` and `src/<m>/`.
fn top_level_modules() -> BTreeSet<String> {
    std::fs::read_dir(src())
        .expect("src/ is readable")
        .map(|e| e.expect("src/ is readable").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_owned();
            if p.is_dir() {
                Some(name)
            } else {
                name.strip_suffix(".rs").map(str::to_owned)
            }
        })
        .filter(|m| m != "lib" && m != "main")
        .collect()
}

/// `(file, from, to)` for each `crate::<to>` that code outside tests in a
/// file of module `from` names, `to` another top-level module.
fn edges(modules: &BTreeSet<String>) -> Vec<(String, String, String)> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let test_only = test_only_files(&files);
    let mut out = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(src()).expect("under src/");
        let first = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a file under src/");
        let from = first.strip_suffix(".rs").unwrap_or(first);
        if from == "lib" || from == "main" || test_only.iter().any(|t| file.starts_with(t)) {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("source files are UTF-8");
        let code = without_tests_and_comments(&text);
        let shown = format!("src/{}", relative.display());
        for to in crate_references(&code) {
            if to != from && modules.contains(&to) {
                out.push((shown.clone(), from.to_owned(), to));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("src/ is readable").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
}

/// The files and directories of modules declared `#[cfg(test)] mod x;`.
fn test_only_files(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("source files are UTF-8");
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let parent = file.parent().expect("files have a directory");
        // `mod x;` in `a/mod.rs` or `lib.rs` is `a/x`; in `a/b.rs` it is `a/b/x`.
        let dir = if matches!(stem, "mod" | "lib" | "main") {
            parent.to_path_buf()
        } else {
            parent.join(stem)
        };
        for name in test_modules_declared(&text) {
            out.push(dir.join(format!("{name}.rs")));
            out.push(dir.join(name));
        }
    }
    out
}

/// The names of `#[cfg(test)] mod x;` declarations.
fn test_modules_declared(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        rest = &rest[at + "#[cfg(test)]".len()..];
        let item = rest.trim_start();
        let item = item.strip_prefix("pub ").unwrap_or(item);
        if let Some(declared) = item.strip_prefix("mod ") {
            let name: String = declared
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if declared[name.len()..].trim_start().starts_with(';') {
                out.push(name);
            }
        }
    }
    out
}

/// `text` without comments and without the item after each `#[cfg(test)]`
/// (a `mod tests { … }`, a `use`, a function): what the build of the
/// library compiles.
fn without_tests_and_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with("#[cfg(test)]") {
            i = end_of_item(text, i + "#[cfg(test)]".len());
            continue;
        }
        match token_end(text, i) {
            Some((end, Token::Comment)) => i = end,
            Some((end, Token::Literal)) => {
                out.push_str(&" ".repeat(end - i));
                i = end;
            }
            None => {
                let c = text[i..].chars().next().expect("in bounds");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

enum Token {
    Comment,
    Literal,
}

/// Where the comment or literal starting at `i` ends, if one starts there.
fn token_end(text: &str, i: usize) -> Option<(usize, Token)> {
    let rest = &text[i..];
    if rest.starts_with("//") {
        return Some((i + rest.find('\n').unwrap_or(rest.len()), Token::Comment));
    }
    if rest.starts_with("/*") {
        return Some((
            i + rest.find("*/").map_or(rest.len(), |e| e + 2),
            Token::Comment,
        ));
    }
    let preceded_by_ident = text[..i]
        .chars()
        .next_back()
        .is_some_and(|c| c.is_alphanumeric() || c == '_');
    // `r"…"`, `r#"…"#`, and the byte strings `br"…"`.
    let raw = rest.strip_prefix('b').unwrap_or(rest);
    if !preceded_by_ident && raw.starts_with('r') {
        let prefix = rest.len() - raw.len() + 1;
        let hashes = rest[prefix..].chars().take_while(|&c| c == '#').count();
        if rest[prefix + hashes..].starts_with('"') {
            let close = format!("\"{}", "#".repeat(hashes));
            let body = prefix + hashes + 1;
            let end = rest[body..]
                .find(&close)
                .map_or(rest.len(), |e| body + e + close.len());
            return Some((i + end, Token::Literal));
        }
    }
    if rest.starts_with('"') {
        let mut escaped = false;
        for (at, c) in rest.char_indices().skip(1) {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => return Some((i + at + 1, Token::Literal)),
                _ => escaped = false,
            }
        }
        return Some((text.len(), Token::Literal));
    }
    if rest.starts_with('\'') {
        // A char literal ('x', '\n', '{'); otherwise a lifetime.
        let mut chars = rest.char_indices().skip(1);
        match chars.next() {
            Some((_, '\\')) => {
                let end = rest[2..].find('\'').map_or(rest.len(), |e| e + 3);
                return Some((i + end, Token::Literal));
            }
            Some((_, _)) => {
                if let Some((at, '\'')) = chars.next() {
                    return Some((i + at + 1, Token::Literal));
                }
            }
            None => {}
        }
    }
    None
}

/// The end of the item that starts at or after `i`: its `;`, or its
/// balanced `{ … }` block.
fn end_of_item(text: &str, mut i: usize) -> usize {
    let mut depth = 0usize;
    while let Some(c) = text[i..].chars().next() {
        if let Some((end, _)) = token_end(text, i) {
            i = end;
            continue;
        }
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            ';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += c.len_utf8();
    }
    text.len()
}

/// The top-level modules named by `crate::m` paths and `crate::{m, …}`
/// groups in `code`.
fn crate_references(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let standalone = !rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        rest = &rest[at + "crate::".len()..];
        if !standalone {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            out.extend(group_heads(group));
        } else {
            out.insert(ident(rest));
        }
    }
    out.remove("");
    out
}

/// The first name of each path of the `use` group that `group` opens.
fn group_heads(group: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut at_head = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_head = true,
            c if at_head && (c.is_alphanumeric() || c == '_') => {
                out.push(ident(&group[i..]));
                at_head = false;
            }
            _ => {}
        }
    }
    out
}

fn ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

#[test]
fn the_reader_sees_paths_and_groups_and_skips_tests_comments_and_strings() {
    let code = without_tests_and_comments(
        "use crate::spec::{Spec, Step};\n\
         use crate::{key, lock::Lockfile};\n\
         // crate::ops in a comment\n\
         const S: &str = \"crate::cli in a string\";\n\
         const R: &str = r#\"crate::cache \"in\" a raw string\"#;\n\
         fn f<'a>(c: char) -> bool { c == '{' || c == '\"' }\n\
         #[cfg(test)]\n\
         mod tests {\n\
             use crate::exec;\n\
             fn g() { let _ = \"}\"; }\n\
         }\n\
         fn h() -> my_crate::Thing { crate::store::open() }\n",
    );
    let names: Vec<String> = crate_references(&code).into_iter().collect();
    assert_eq!(names, ["key", "lock", "spec", "store"]);
    assert_eq!(
        test_modules_declared("#[cfg(test)]\nmod tampering;\n#[cfg(test)]\nmod tests {}\n"),
        ["tampering"]
    );
}
