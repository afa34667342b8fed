//! Fuzzing of what reads user input: the KDL front end and the result-block
//! importer, with proptest over mutations of the seed files kept under
//! `fuzz/corpus/` (and, for KDL, over experiments built from a small grammar),
//! and `bench`'s and `run`'s command-line values.
//!
//! A short run is part of `cargo test`; a long one is
//! `PROPTEST_CASES=200000 cargo test --lib fuzz` (see the README). A failure
//! is shrunk and its seed kept under `proptest-regressions/`, which is
//! committed so that every later run tries it first.

mod block;
mod cli;
mod grammar;
mod kdl;
mod mutate;

use std::path::Path;

use proptest::test_runner::Config;

/// Cases per property when `PROPTEST_CASES` does not say: a few seconds in all.
const DEFAULT_CASES: u32 = 48;

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    Config::with_cases(cases)
}

/// Every file of `fuzz/corpus/<dir>`, in name order.
fn corpus(dir: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(dir);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}
