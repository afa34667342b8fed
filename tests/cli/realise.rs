//! `perfpipe realise`: a launch executed from its material alone commits
//! what `run` commits; tampered material and missing inputs are refused
//! before anything starts.

use std::path::{Path, PathBuf};

use crate::common::{TestEnv, files_under, stderr, words};

const RUNS: &[&str] = &["--runtime", "sim", "--max-prompts", "3"];
/// `plan` of the same runs, writing their launch material for `realise`.
const PLAN: &[&str] = &["--runtime", "sim", "--max-prompts", "3", "--write-launches"];

fn args<'a>(command: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut out = vec![command, "tiny.kdl"];
    out.extend_from_slice(rest);
    out
}

/// Every file under the store's `entries/`, relative to it, sorted.
fn layout(env: &TestEnv) -> Vec<String> {
    let root = env.path("store/entries");
    let mut out: Vec<String> = files_under(&root)
        .iter()
        .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    out.sort();
    out
}

/// The launch material `plan` wrote, by file.
fn materials(env: &TestEnv) -> Vec<PathBuf> {
    let mut out = files_under(&env.path("store/drv"));
    out.sort();
    out
}

fn key_of(material: &Path) -> String {
    material.file_stem().unwrap().to_string_lossy().into_owned()
}

#[test]
fn realise_commits_the_keys_and_layout_run_commits() {
    let by_run = TestEnv::tiny();
    let ran = by_run.run(&args("run", RUNS));
    assert!(ran.status.code().is_some(), "{}", stderr(&ran));
    let expected = layout(&by_run);
    assert!(
        expected.iter().any(|p| p.ends_with("inputs.json")),
        "{expected:?}"
    );
    // `run` went through the launch material too.
    assert!(!materials(&by_run).is_empty());

    let by_realise = TestEnv::tiny();
    let planned = by_realise.run(&args("plan", PLAN));
    assert_eq!(planned.status.code(), Some(0), "{}", stderr(&planned));
    let launches = materials(&by_realise);
    // `run` also records the launches of every run its lockfile pins.
    let ran_launches: Vec<String> = materials(&by_run).iter().map(|p| key_of(p)).collect();
    for launch in &launches {
        assert!(
            ran_launches.contains(&key_of(launch)),
            "`plan` and `run` name the same launches: {launch:?} in {ran_launches:?}"
        );
    }
    // No experiment file: the material alone.
    std::fs::remove_file(by_realise.path("tiny.kdl")).unwrap();
    std::fs::remove_file(by_realise.path("sharegpt-tiny.json")).unwrap();
    for (i, launch) in launches.iter().enumerate() {
        // By file, and by key.
        let name = if i % 2 == 0 {
            launch.display().to_string()
        } else {
            key_of(launch)
        };
        let out = by_realise.run(&["realise", &name]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("committed to `store`"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(layout(&by_realise), expected);
    // Realised again, every run is in the store: nothing runs.
    let again = by_realise.run(&["realise", &launches[0].display().to_string()]);
    assert!(
        stderr(&again).contains("ran 0 (failed: 0)"),
        "{}",
        stderr(&again)
    );
    assert_eq!(layout(&by_realise), expected);
}

#[test]
fn tampered_material_is_refused_before_anything_starts() {
    let env = TestEnv::tiny();
    env.run(&args("plan", PLAN));
    let launch = materials(&env).remove(0);
    let text = std::fs::read_to_string(&launch).unwrap();
    assert!(text.contains(r#""samples":1"#), "{text}");
    std::fs::set_permissions(&launch, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    std::fs::write(&launch, text.replace(r#""samples":1"#, r#""samples":2"#)).unwrap();
    let out = env.run(&["realise", &key_of(&launch)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = words(&out);
    // miette wraps the long path: its words, not its lines.
    assert!(said.contains("does not hash to its name"), "{said}");
    assert!(said.contains(&key_of(&launch)), "{said}");
    assert!(said.contains("nothing ran"), "{said}");
    assert!(!env.path("store/entries").exists(), "nothing was committed");
}

#[test]
fn a_launch_whose_input_is_missing_from_the_store_is_refused() {
    let env = TestEnv::tiny();
    env.run(&args("plan", PLAN));
    let inputs = files_under(&env.path("store/inputs/sha256"));
    assert_eq!(inputs.len(), 1, "the one ShareGPT dataset: {inputs:?}");
    std::fs::remove_file(&inputs[0]).unwrap();
    let reads_it = materials(&env)
        .into_iter()
        .find(|m| {
            std::fs::read_to_string(m)
                .unwrap()
                .contains(&key_of(&inputs[0]))
        })
        .expect("a launch reads the dataset");
    let out = env.run(&["realise", &reads_it.display().to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = words(&out);
    assert!(
        said.contains(&format!(
            "the store has no dataset of workload `chat` (sha256 {})",
            key_of(&inputs[0])
        )),
        "{said}"
    );
    assert!(!env.path("store/entries").exists(), "nothing was committed");
}

#[test]
fn a_file_that_is_not_named_by_its_launch_key_is_refused() {
    let env = TestEnv::tiny();
    env.write("launch.json", "{}");
    let out = env.run(&["realise", "launch.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        words(&out).contains("`launch.json` is neither a launch key nor a launch material file"),
        "{}",
        words(&out)
    );
}

#[test]
fn a_launch_whose_input_is_corrupted_in_the_store_is_refused() {
    let env = TestEnv::tiny();
    env.run(&args("plan", PLAN));
    let input = files_under(&env.path("store/inputs/sha256")).remove(0);
    let sha256 = key_of(&input);
    std::fs::set_permissions(&input, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    // One byte changed: the same size, another hash.
    let mut bytes = std::fs::read(&input).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&input, &bytes).unwrap();
    let reads_it = materials(&env)
        .into_iter()
        .find(|m| std::fs::read_to_string(m).unwrap().contains(&sha256))
        .expect("a launch reads the dataset");
    let out = env.run(&["realise", &key_of(&reads_it)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = words(&out);
    let actual = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&bytes))
    };
    // miette may wrap the path: its parts, and both digests.
    for part in [
        format!(
            "the store's copy of the dataset of workload `chat` that launch {} reads is corrupted: `store/inputs/",
            key_of(&reads_it)
        ),
        format!("sha256/{sha256}` hashes to {actual}, not to {sha256}; nothing ran"),
    ] {
        assert!(said.contains(&part), "{part} in {said}");
    }
    assert!(
        said.contains("`perfpipe store gc` removes the corrupted copy"),
        "{said}"
    );
    assert!(!env.path("store/entries").exists(), "nothing was committed");
}

/// `plan` lists each launch by the key Slurm names its job with, and
/// `realise` takes that key.
#[test]
fn plan_lists_each_launch_by_a_key_realise_takes() {
    let env = TestEnv::tiny();
    let plan = env.run(&args("plan", PLAN));
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    let text = crate::common::stdout(&plan);
    let listed: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("launches (`perfpipe realise LAUNCH`"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let mut keys: Vec<String> = materials(&env).iter().map(|p| key_of(p)).collect();
    keys.sort();
    let mut short: Vec<String> = keys.iter().map(|k| k[..12].to_owned()).collect();
    short.sort();
    let mut shown: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
    shown.sort();
    assert_eq!(shown, short, "{text}");
    assert!(
        text.contains(&format!(
            "\n  {}  vllm 0.11.0 · 2 runs: vllm × chat, vllm × short\n",
            listed[0]
        )),
        "in the order they run, with the runs each serves: {text}"
    );

    let out = env.run(&["realise", &format!("pp-{}", listed[0])]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("committed to `store`"),
        "{}",
        stderr(&out)
    );
    let unknown = env.run(&["realise", "0123456789ab"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    assert!(
        words(&unknown).contains("has no launch material whose key begins with `0123456789ab`"),
        "{}",
        words(&unknown)
    );
}
