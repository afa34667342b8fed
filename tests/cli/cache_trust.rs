//! What a signed sample is and when it is trusted (issue 31): one sample
//! per signed statement, every file signed with its name, signatures
//! checked before a sample is used, an untrusted artifact refused (never
//! fatal), `plan` counting only what `run` takes, and `--offline` saying
//! which caches it does not ask.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cache::{measured_with_key, push};
use crate::common::{TestEnv, stderr, stdout};

const TITLE: &str = "org.opencontainers.image.title";

/// Alice's tiny study pushed to a directory cache in her project.
fn alice_cache() -> (TestEnv, String, PathBuf) {
    let (alice, public) = measured_with_key();
    let cache = alice.path("team-cache");
    push(&alice, cache.to_str().unwrap());
    (alice, public, cache)
}

/// `keys/<key>.json` (each run key's index) in a directory cache, sorted.
fn indexes(cache: &Path) -> Vec<PathBuf> {
    let mut lists: Vec<PathBuf> = std::fs::read_dir(cache.join("keys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    lists.sort();
    lists
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn blob(cache: &Path, digest: &str) -> PathBuf {
    cache
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

/// The manifest of the one sample the index `list` holds (embedded).
fn manifest(list: &Path) -> Value {
    use base64::Engine as _;
    let data = read_json(list)["manifests"][0]["data"]
        .as_str()
        .unwrap()
        .to_owned();
    serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap(),
    )
    .unwrap()
}

/// Rewrites the manifest of the one sample the index `list` holds, as
/// whoever may write to the cache can: a new blob, the index naming it
/// (with the signatures it had).
fn rewrite_manifest(cache: &Path, list: &Path, change: impl FnOnce(&mut Value)) {
    use base64::Engine as _;
    let mut manifest = manifest(list);
    change(&mut manifest);
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let digest = format!("sha256:{}", perfpipe::digest::sha256_hex(&bytes));
    std::fs::write(blob(cache, &digest), &bytes).unwrap();
    let mut index = read_json(list);
    let entry = &mut index["manifests"][0];
    entry["digest"] = digest.into();
    entry["size"] = bytes.len().into();
    entry["data"] = base64::engine::general_purpose::STANDARD
        .encode(&bytes)
        .into();
    std::fs::write(list, index.to_string()).unwrap();
}

/// The titles of the layers of the one sample the index `list` holds.
fn titles(list: &Path) -> Vec<String> {
    manifest(list)["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["annotations"][TITLE].as_str().unwrap().to_owned())
        .collect()
}

/// Retitles the layer titled `from` of the manifest `list` tags.
fn retitle(cache: &Path, list: &Path, from: &str, to: &str) {
    rewrite_manifest(cache, list, |m| {
        for layer in m["layers"].as_array_mut().unwrap() {
            if layer["annotations"][TITLE] == from {
                layer["annotations"][TITLE] = to.into();
                return;
            }
        }
        panic!("no layer titled `{from}`");
    });
}

fn trusting<'a>(cache: &'a Path, public: &'a str) -> [&'a str; 6] {
    [
        "--runtime",
        "sim",
        "--substituter",
        cache.to_str().unwrap(),
        "--trusted-key",
        public,
    ]
}

/// The markdown report's list of substituted runs.
fn substituted_section(env: &TestEnv) -> String {
    let report = env.run(&["report", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    stdout(&report)
        .split("\nSubstituted from a result cache:\n\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn one_sample_listed_several_times_or_substituted_three_times_at_once_is_one_sample() {
    let (_alice, public, cache) = alice_cache();
    // Every sample listed four more times in its key's index.
    for list in indexes(&cache) {
        let mut index = read_json(&list);
        let entry = index["manifests"][0].clone();
        for _ in 0..4 {
            index["manifests"]
                .as_array_mut()
                .unwrap()
                .push(entry.clone());
        }
        std::fs::write(&list, index.to_string()).unwrap();
    }
    let bob = TestEnv::tiny();
    let trust = trusting(&cache, &public);
    let plan = bob.run(&[&["plan", "tiny.kdl"][..], &trust].concat());
    let table = stdout(&plan);
    assert_eq!(
        table.matches("substitutable  1 sample in").count(),
        7,
        "{table}"
    );
    // Three `run`s at once: each sample is stored once.
    let runs: Vec<_> = (0..3)
        .map(|_| {
            bob.cmd(&[&["run", "tiny.kdl"][..], &trust].concat())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    assert_eq!(bob.samples().len(), 7, "{:?}", bob.samples());
    let verify = bob.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
    let section = substituted_section(&bob);
    assert_eq!(
        section.matches(": 1 sample signed by `alice`").count(),
        7,
        "{section}"
    );
}

#[test]
fn a_second_copy_of_a_signed_sample_in_a_store_is_damage() {
    let (_alice, public, cache) = alice_cache();
    let bob = TestEnv::tiny();
    let run = bob.run(&[&["run", "tiny.kdl"][..], &trusting(&cache, &public)].concat());
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let (first, _) = bob.results().into_iter().next().unwrap();
    let copy = first.with_file_name("0002");
    let cp = std::process::Command::new("cp")
        .arg("-r")
        .arg(&first)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    let verify = bob.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(4), "{}", stderr(&verify));
    let text = format!("{}{}", stdout(&verify), stderr(&verify));
    assert!(text.contains("the same sample as `0001`"), "{text}");
    let section = substituted_section(&bob);
    assert!(!section.contains("2 samples"), "{section}");
}

#[test]
fn a_signed_sample_whose_logs_were_swapped_in_the_store_is_not_used() {
    let (_alice, public, cache) = alice_cache();
    let bob = TestEnv::tiny();
    let trust = trusting(&cache, &public);
    let run = bob.run(&[&["run", "tiny.kdl"][..], &trust].concat());
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let (sample, _) = bob
        .results()
        .into_iter()
        .find(|(_, r)| r["outcome"].get("metrics").is_some())
        .unwrap();
    let logs = sample.join("logs");
    let engine = std::fs::read(logs.join("engine.log")).unwrap();
    let harness = std::fs::read(logs.join("harness.log")).unwrap();
    assert_ne!(engine, harness);
    std::fs::write(logs.join("engine.log"), &harness).unwrap();
    std::fs::write(logs.join("harness.log"), &engine).unwrap();

    let verify = bob.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(4), "{}", stderr(&verify));
    // Not used: `plan` has it missing, `report` leaves it out.
    let plan = bob.run(&["plan", "tiny.kdl", "--runtime", "sim"]);
    assert!(
        stdout(&plan).contains("5 cached, 1 failed, 1 missing"),
        "{}",
        stdout(&plan)
    );
    let section = substituted_section(&bob);
    assert_eq!(section.lines().count(), 6, "{section}");
}

#[test]
fn untrusted_artifacts_are_refused_with_the_cache_and_why_and_the_runs_measured() {
    let (_alice, public, cache) = alice_cache();
    // Samples of measured runs (a failed run's sample has no harness log),
    // whichever their keys sort first.
    let lists: Vec<PathBuf> = indexes(&cache)
        .into_iter()
        .filter(|list| titles(list).contains(&"logs/harness.log".to_owned()))
        .collect();
    // Swapped logs, a repeated name, a name too long, a name with a NUL.
    rewrite_manifest(&cache, &lists[0], |m| {
        let layers = m["layers"].as_array_mut().unwrap();
        let titles: Vec<Value> = layers
            .iter()
            .map(|l| l["annotations"][TITLE].clone())
            .collect();
        let engine = titles.iter().position(|t| t == "logs/engine.log").unwrap();
        let harness = titles.iter().position(|t| t == "logs/harness.log").unwrap();
        layers[engine]["annotations"][TITLE] = "logs/harness.log".into();
        layers[harness]["annotations"][TITLE] = "logs/engine.log".into();
    });
    retitle(&cache, &lists[1], "logs/harness.log", "logs/engine.log");
    retitle(
        &cache,
        &lists[2],
        "logs/engine.log",
        &format!("logs/{}", "e".repeat(300)),
    );
    retitle(&cache, &lists[3], "logs/engine.log", "logs/engine\0.log");

    let bob = TestEnv::tiny();
    let run = bob.run(&[&["run", "tiny.kdl"][..], &trusting(&cache, &public)].concat());
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(0), "{err}");
    let location = cache.display().to_string();
    let refused: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("warning:") && l.contains("refused"))
        .collect();
    assert_eq!(refused.len(), 4, "{err}");
    assert!(
        refused
            .iter()
            .all(|l| l.contains(&format!("from `{location}`"))),
        "{err}"
    );
    assert!(err.contains("not the ones signed"), "{err}");
    assert!(
        err.contains("names the file `logs/engine.log` twice"),
        "{err}"
    );
    assert_eq!(err.matches("it has a file named").count(), 2, "{err}");
    assert!(!err.contains('\0'), "a name is quoted escaped");
    assert!(!err.contains("cannot use the store"), "{err}");
    assert!(
        err.contains("ran 4"),
        "the refused runs are measured: {err}"
    );
    assert_eq!(err.matches("substituted a sample").count(), 3, "{err}");
    let verify = bob.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
}

#[test]
fn plan_counts_only_what_run_would_take() {
    let (alice, _public, cache) = alice_cache();
    let other = alice.run(&["cache", "keygen", "carol", "--dir", "keys"]);
    let carol = stdout(&other).trim().to_owned();
    let bob = TestEnv::tiny();
    let plan = bob.run(&[&["plan", "tiny.kdl"][..], &trusting(&cache, &carol)].concat());
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    assert!(
        !stdout(&plan).contains("substitutable"),
        "{}",
        stdout(&plan)
    );
    assert_eq!(
        stderr(&plan)
            .matches("signed by `alice`, which is not among the trusted keys")
            .count(),
        7,
        "{}",
        stderr(&plan)
    );
}

#[test]
fn plan_counts_as_substitutable_only_the_runs_run_will_then_not_measure() {
    let (_alice, public, cache) = alice_cache();
    let bob = TestEnv::tiny();
    let trust = trusting(&cache, &public);
    let plan = |extra: &[&str]| {
        let out = bob.run(&[&["plan", "tiny.kdl"][..], extra, &trust].concat());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    assert!(plan(&[]).contains("substitutable: 7 runs"), "{}", plan(&[]));
    // One sample of each run cached, two wanted: `run` takes it and measures
    // (but for the failure, which a second sample would not change).
    let two = plan(&["--samples", "2"]);
    assert!(
        two.contains("substitutable: 1 run from trusted caches"),
        "{two}"
    );
    assert_eq!(two.matches(" missing ").count(), 6, "{two}");
    // A cached failure is no substitute for a failure retried.
    let retried = plan(&["--retry-failed"]);
    assert!(retried.contains("substitutable: 6 runs"), "{retried}");
    assert!(
        retried
            .lines()
            .any(|l| l.starts_with("trtllm-fp8") && l.contains(" missing ")),
        "{retried}"
    );
    let run = bob.run(&[&["run", "tiny.kdl", "--retry-failed"][..], &trust].concat());
    let err = stderr(&run);
    assert_eq!(err.matches("substituted a sample").count(), 7, "{err}");
    assert!(err.contains("ran 1 "), "only the retried failure: {err}");
}

#[test]
fn offline_says_once_which_caches_it_does_not_ask() {
    let (_alice, public, cache) = alice_cache();
    let bob = TestEnv::tiny();
    let plan = bob.run(&[
        "plan",
        "tiny.kdl",
        "--runtime",
        "sim",
        "--substituter",
        "https://cache.example.org/perfpipe",
        "--substituter",
        "oci://registry.example.org/team/perfpipe",
        "--substituter",
        cache.to_str().unwrap(),
        "--trusted-key",
        &public,
    ]);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    let err = stderr(&plan);
    let offline: Vec<&str> = err.lines().filter(|l| l.contains("offline")).collect();
    assert_eq!(offline.len(), 1, "{err}");
    assert!(
        offline[0].starts_with("warning: ")
            && offline[0].contains("2 web or registry caches not asked"),
        "{err}"
    );
    // The directory cache is still asked.
    assert!(
        stdout(&plan).contains("substitutable: 7 runs"),
        "{}",
        stdout(&plan)
    );
}
