//! `perfpipe store verify` and `store gc`, and how `run` treats damage and
//! the leftovers of a killed perfpipe.

use std::path::PathBuf;
use std::process::Output;

use crate::common::{TestEnv, exited, render, stderr, stdout, words};

/// The shared filters, plus shards, process temp dirs and sizes.
fn filters() -> Vec<(&'static str, &'static str)> {
    let mut filters = vec![
        (r"entries/[0-9a-f]{2}/", "entries/[SHARD]/"),
        (r"proc-\d+-[A-Za-z0-9]+", "proc-[PID]"),
        (r"\b\d+(\.\d)? (B|kB|MB|GB)\b", "[SIZE]"),
    ];
    filters.extend(crate::common::filters());
    filters
}

macro_rules! store_snapshot {
    ($output:expr, @$snapshot:literal) => {{
        let rendered = render(&$output);
        insta::with_settings!({ filters => filters() }, {
            insta::assert_snapshot!(rendered, @$snapshot);
        });
    }};
}

/// `(step, workload)` of every run the executor started, from its progress lines.
fn started(output: &Output) -> Vec<String> {
    let mut runs: Vec<String> = stderr(output)
        .lines()
        .filter_map(|l| l.strip_prefix('[')?.split_once("] ").map(|(_, r)| r))
        .map(|r| r.rsplit_once(" (").unwrap().0.replace('`', ""))
        .collect();
    runs.sort();
    runs
}

/// The entry directory of a run, found through the short key `plan` prints.
fn entry_of(env: &TestEnv, plan_args: &[&str], step: &str, workload: &str) -> PathBuf {
    let plan = stdout(&env.run(plan_args));
    let short = plan
        .lines()
        .find_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [s, w, key, ..] if s == step && w == workload => Some(key.to_owned()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("`{step}` × `{workload}` in {plan}"));
    let shard = env.path("store/entries").join(&short[..2]);
    std::fs::read_dir(&shard)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&short))
        .unwrap()
}

fn status_of(plan: &Output, step: &str, workload: &str) -> String {
    stdout(plan)
        .lines()
        .find_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [s, w, _, status, ..] if s == step && w == workload => Some(status.to_owned()),
            _ => None,
        })
        .unwrap()
}

#[test]
fn damage_is_reported_never_used_and_redone_by_the_next_run() {
    let env = TestEnv::tiny();
    let sim = ["--runtime", "sim"];
    let run = env.run(&["run", "tiny.kdl", sim[0], sim[1]]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let plan_args = ["plan", "tiny.kdl", sim[0], sim[1]];
    let clean = env.run(&["store", "verify"]);
    assert_eq!(clean.status.code(), Some(0), "{}", render(&clean));

    let truncated = entry_of(&env, &plan_args, "trtllm", "chat").join("samples/0001/result.json");
    let text = std::fs::read_to_string(&truncated).unwrap();
    std::fs::write(&truncated, &text[..100]).unwrap();
    let edited = entry_of(&env, &plan_args, "vllm", "short").join("inputs.json");
    let inputs = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(
        &edited,
        inputs.replace("\"num_prompts\":40", "\"num_prompts\":4"),
    )
    .unwrap();

    let damaged = env.run(&["store", "verify"]);
    store_snapshot!(damaged, @r"
    exit_code: 4
    ----- stdout -----
    damaged      store/entries/[SHARD]/[KEY]/inputs.json: hashes to `[KEY]`, not to the entry's key; the entry's samples are not used
    damaged      store/entries/[SHARD]/[KEY]/samples/0001/result.json: does not parse as a result (EOF while parsing a string at line 4 column 6); the sample is not used

    ----- stderr -----
    perfpipe: store `store`: checked 7 entries, 7 samples, 5 launch materials and 1 input: 2 damaged
    perfpipe: damage is never used: `perfpipe run` redoes the runs it held and moves it to `store/quarantine`; `perfpipe store gc` removes it
    ");

    let plan = env.run(&plan_args);
    let statuses: Vec<String> = [
        ("trtllm", "chat"),
        ("vllm", "short"),
        ("vllm", "chat"),
        ("trtllm", "short"),
    ]
    .iter()
    .map(|(s, w)| status_of(&plan, s, w))
    .collect();
    assert_eq!(statuses, ["missing", "missing", "cached", "cached"]);
    assert!(
        stdout(&plan).contains("7 runs: 4 cached, 1 failed, 2 missing; 2 to run"),
        "{}",
        stdout(&plan)
    );

    let redo = env.run(&["run", "tiny.kdl", sim[0], sim[1]]);
    assert_eq!(redo.status.code(), Some(0), "{}", stderr(&redo));
    assert_eq!(started(&redo), ["trtllm × chat", "vllm × short"]);
    assert_eq!(env.samples().len(), 7, "one sample per run, none damaged");

    let repaired = env.run(&["store", "verify"]);
    store_snapshot!(repaired, @r"
    exit_code: 0
    ----- stdout -----
    quarantined  store/quarantine/[KEY]/1-entry
    quarantined  store/quarantine/[KEY]/1-sample-0001

    ----- stderr -----
    perfpipe: store `store`: checked 7 entries, 7 samples, 7 launch materials and 1 input: no damage
    perfpipe: 2 damaged items in quarantine, kept for inspection and never read (`perfpipe store gc` removes them)
    ");
    let kept: Vec<String> = crate::common::files_under(&env.path("store/quarantine"))
        .iter()
        .filter(|p| p.ends_with("result.json") || p.ends_with("inputs.json"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(
        kept.contains(&text[..100].to_owned()),
        "the damage as found"
    );
    assert!(kept.iter().any(|t| t.contains("\"num_prompts\":4,")));
    assert_eq!(
        env.run(&["run", "tiny.kdl", sim[0], sim[1]]).status.code(),
        Some(0)
    );
}

#[test]
fn the_next_run_removes_only_the_temp_dirs_of_dead_processes() {
    let env = TestEnv::new();
    env.write("one.kdl", &one_run("one", 1));
    let dead = env.path("store/tmp/proc-4242-dead");
    env.write("store/tmp/proc-4242-dead/owner.lock", "");
    env.write(
        "store/tmp/proc-4242-dead/sample-x/logs/engine.log",
        "loading",
    );
    env.write("store/tmp/proc-4243-live/owner.lock", "");
    let live = std::fs::File::open(env.path("store/tmp/proc-4243-live/owner.lock")).unwrap();
    live.lock().unwrap();

    let verify = env.run(&["store", "verify"]);
    store_snapshot!(verify, @r"
    exit_code: 0
    ----- stdout -----
    stale        store/tmp/proc-[PID] ([SIZE]): temp dir of a perfpipe that was killed

    ----- stderr -----
    perfpipe: store `store`: checked 0 entries and 0 samples: no damage
    perfpipe: 1 stale temp dir of killed runs (the next `perfpipe run` or `perfpipe store gc` removes it)
    ");
    assert!(stdout(&verify).contains("proc-4242-dead"));

    let run = env.run(&["run", "one.kdl", "--runtime", "sim"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(
        stderr(&run)
            .contains("perfpipe: removed 1 temp dir left in `store/tmp` by killed runs (7 B)"),
        "{}",
        stderr(&run)
    );
    assert!(!dead.exists());
    assert!(
        env.path("store/tmp/proc-4243-live").exists(),
        "its owner lives"
    );
    drop(live);
}

/// One run of its own (a `seed` per study keeps their keys apart).
fn one_run(name: &str, seed: u32) -> String {
    format!(
        r#"experiment "{name}" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload short {{ dataset random input=32 output=4 seed={seed}; prompts 8; }}
    step vllm engine=vllm gpus=1 {{ args "--max-num-seqs" "4"; }}
}}"#
    )
}

#[test]
fn gc_removes_what_no_experiment_or_lockfile_reaches_and_says_why() {
    let env = TestEnv::new();
    env.write("experiments/keep.kdl", &one_run("keep", 1));
    env.write("experiments/gone.kdl", &one_run("gone", 2));
    for experiment in ["experiments/keep.kdl", "experiments/gone.kdl"] {
        let run = env.run(&["run", experiment, "--runtime", "sim"]);
        assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    }
    // A quarantined sample, and a temp dir of a killed run.
    let plan = ["plan", "experiments/keep.kdl", "--runtime", "sim"];
    let result = entry_of(&env, &plan, "vllm", "short").join("samples/0001/result.json");
    std::fs::write(&result, "{").unwrap();
    let redo = env.run(&["run", "experiments/keep.kdl", "--runtime", "sim"]);
    assert_eq!(started(&redo), ["vllm × short"]);
    env.write("store/tmp/proc-4242-dead/owner.lock", "");
    let samples = env.samples();
    assert_eq!(samples.len(), 2);

    std::fs::rename(env.path("experiments/gone.kdl"), env.path("gone.kdl")).unwrap();
    age_entries(&env, 8);
    let lockfile_only = env.run(&["store", "gc", "--dry-run"]);
    store_snapshot!(lockfile_only, @r"
    exit_code: 0
    ----- stdout -----
    quarantine store/quarantine/[KEY] (1 item, [SIZE])
      damage a run moved out of the entry, kept for inspection until a gc
    temp dir store/tmp/proc-[PID] ([SIZE])
      left by a perfpipe that was killed
    entry [KEY]: vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · random 32→4, 8 prompts
      kept: reached by `experiments/keep.kdl`, `lockfiles/keep.lock`
    entry [KEY]: vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · random 32→4, 8 prompts
      kept: reached by `lockfiles/gone.lock`

    ----- stderr -----
    perfpipe: kept 2 entries reached by 1 experiment and 2 lockfiles (1 by a lockfile only)
    perfpipe: kept 2 launch materials that kept runs need
    perfpipe: --dry-run: would remove 1 quarantine dir and 1 temp dir, freeing [SIZE]; removed nothing
    ");

    std::fs::remove_file(env.path("lockfiles/gone.lock")).unwrap();
    let dry = env.run(&["store", "gc", "--dry-run"]);
    store_snapshot!(dry, @r"
    exit_code: 0
    ----- stdout -----
    entry [KEY] (1 sample, [SIZE]): vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · random 32→4, 8 prompts
      reached by no experiment in `experiments/` and no lockfile in the project
    quarantine store/quarantine/[KEY] (1 item, [SIZE])
      damage a run moved out of the entry, kept for inspection until a gc
    temp dir store/tmp/proc-[PID] ([SIZE])
      left by a perfpipe that was killed
    entry [KEY]: vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · random 32→4, 8 prompts
      kept: reached by `experiments/keep.kdl`, `lockfiles/keep.lock`
    launch [KEY] ([SIZE]): vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · 1 run
      kept: its runs are reached by no experiment in `experiments/` and no lockfile in the project, but written or used less than 7 days ago (`--all` removes it)

    ----- stderr -----
    perfpipe: kept 1 entry reached by 1 experiment and 1 lockfile
    perfpipe: kept 1 launch material that kept runs need, and 1 launch material that nothing needs, written or used less than 7 days ago (`--all` removes it)
    perfpipe: --dry-run: would remove 1 entry (1 sample), 1 quarantine dir and 1 temp dir, freeing [SIZE]; removed nothing
    ");
    assert_eq!(env.samples(), samples, "--dry-run removes nothing");
    assert!(
        env.path("store/quarantine")
            .read_dir()
            .unwrap()
            .next()
            .is_some()
    );
    assert!(env.path("store/tmp/proc-4242-dead").exists());

    let named = exited(
        env.run(&[
            "store",
            "gc",
            "--dry-run",
            "experiments/keep.kdl",
            "gone.kdl",
        ]),
        0,
    );
    assert!(
        !stdout(&named).contains("reached by none"),
        "both experiments named: no entry goes: {}",
        stdout(&named)
    );
    let keep_only = exited(
        env.run(&["store", "gc", "--dry-run", "lockfiles/keep.lock"]),
        0,
    );
    assert!(
        stdout(&keep_only).contains("reached by none of the experiments and lockfiles named"),
        "{}",
        stdout(&keep_only)
    );

    let gc = env.run(&["store", "gc"]);
    assert_eq!(gc.status.code(), Some(0), "{}", render(&gc));
    // gc says what --dry-run said it would remove (each item a line and its
    // reason), without the items kept; and not nothing.
    let dry_out = stdout(&dry);
    let dry_lines: Vec<&str> = dry_out.split_inclusive('\n').collect();
    let removed: String = dry_lines
        .chunks(2)
        .filter(|item| !item[1].starts_with("  kept:"))
        .flatten()
        .copied()
        .collect();
    assert_eq!(removed.lines().count(), 6, "{removed}");
    assert_eq!(stdout(&gc), removed, "{}", render(&gc));
    assert!(
        stderr(&gc)
            .contains("removed 1 entry (1 sample), 1 quarantine dir and 1 temp dir, freeing"),
        "{}",
        stderr(&gc)
    );
    assert_eq!(env.samples().len(), 1);
    assert!(!env.path("store/tmp/proc-4242-dead").exists());
    assert_eq!(env.path("store/quarantine").read_dir().unwrap().count(), 0);
    // No lock file outlives its entry (the store's own, of its temp dirs
    // and of its results index, stay).
    let kept_key = env.samples()[0].split('/').next().unwrap().to_owned();
    let mut locks: Vec<String> = std::fs::read_dir(env.path("store/locks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    locks.sort();
    assert_eq!(
        locks,
        [
            format!("{kept_key}.lock"),
            "index.lock".to_owned(),
            "tmp.lock".to_owned()
        ]
    );
    let plan = env.run(&plan);
    assert!(
        stdout(&plan).contains("1 run: 1 cached"),
        "{}",
        stdout(&plan)
    );
    let verify = env.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(0));
    assert_eq!(stdout(&verify), "");
    // gc left the index of results no record of the entry it removed.
    assert!(
        !stderr(&verify).contains("index of results"),
        "{}",
        stderr(&verify)
    );

    let again = env.run(&["store", "gc"]);
    assert!(
        stderr(&again).contains("nothing to remove"),
        "{}",
        stderr(&again)
    );
}

/// Dates every file of the store's entries `days` before the tests' clock
/// (`PERFPIPE_NOW`), as if committed then.
fn age_entries(env: &TestEnv, days: u64) {
    age(env, "store/entries", days);
}

/// Dates every file under `dir` `days` before the tests' clock.
fn age(env: &TestEnv, dir: &str, days: u64) {
    let now: u64 = 1_795_290_164;
    let then = format!("@{}", now - days * 86_400);
    let touched = std::process::Command::new("find")
        .arg(env.path(dir))
        .args(["-exec", "touch", "-h", "-d", &then, "{}", "+"])
        .status()
        .unwrap();
    assert!(touched.success());
}

/// The README's workflow: a copy of the lockfile kept outside `lockfiles/`
/// keeps the runs it pins for `diff`; other programs' `.lock` files are
/// neither roots nor errors, and `target/` and hidden directories are not
/// searched. An entry nothing reaches stays 7 days, unless `--all`.
#[test]
fn gc_keeps_what_any_lockfile_in_the_project_reaches_and_what_is_young() {
    let env = TestEnv::new();
    env.write("experiments/up.kdl", &one_run("up", 1));
    let ran = |args: &[&str]| {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(0), "{}", render(&out));
        out
    };
    ran(&["run", "experiments/up.kdl", "--runtime", "sim"]);
    std::fs::copy(env.path("lockfiles/up.lock"), env.path("before.lock")).unwrap();
    for hidden in ["target/debug/old.lock", ".cache/old.lock"] {
        std::fs::create_dir_all(env.path(hidden).parent().unwrap()).unwrap();
        std::fs::copy(env.path("lockfiles/up.lock"), env.path(hidden)).unwrap();
    }
    env.write(
        "Cargo.lock",
        "# This file is automatically @generated by Cargo.\nversion = 4\n",
    );
    env.write(
        "experiments/up.kdl",
        &one_run("up", 1).replace("0.11.0", "0.17.1"),
    );
    ran(&["lock", "experiments/up.kdl"]);
    ran(&["run", "experiments/up.kdl", "--runtime", "sim"]);
    age_entries(&env, 8);

    let both = ran(&["store", "gc", "--dry-run"]);
    store_snapshot!(both, @r"
    exit_code: 0
    ----- stdout -----
    entry [KEY]: vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · random 32→4, 8 prompts
      kept: reached by `before.lock`
    entry [KEY]: vllm 0.17.1 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · random 32→4, 8 prompts
      kept: reached by `experiments/up.kdl`, `lockfiles/up.lock`

    ----- stderr -----
    perfpipe: kept 2 entries reached by 1 experiment and 2 lockfiles (1 by a lockfile only)
    perfpipe: kept 4 launch materials that kept runs need
    perfpipe: nothing to remove
    ");
    let diff = ran(&[
        "diff",
        "before.lock",
        "lockfiles/up.lock",
        "--runtime",
        "sim",
    ]);
    assert!(
        stdout(&diff).contains("| vllm | short | total_token_throughput | "),
        "both sides still have numbers: {}",
        stdout(&diff)
    );

    // Without the copy, the old run goes: copies under `target/` and hidden
    // directories do not count.
    std::fs::remove_file(env.path("before.lock")).unwrap();
    let old = ran(&["store", "gc", "--dry-run"]);
    store_snapshot!(old, @r"
    exit_code: 0
    ----- stdout -----
    entry [KEY] (1 sample, [SIZE]): vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · random 32→4, 8 prompts
      reached by no experiment in `experiments/` and no lockfile in the project
    entry [KEY]: vllm 0.17.1 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · random 32→4, 8 prompts
      kept: reached by `experiments/up.kdl`, `lockfiles/up.lock`
    launch [KEY] ([SIZE]): vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · 1 run
      kept: its runs are reached by no experiment in `experiments/` and no lockfile in the project, but written or used less than 7 days ago (`--all` removes it)

    ----- stderr -----
    perfpipe: kept 1 entry reached by 1 experiment and 1 lockfile
    perfpipe: kept 3 launch materials that kept runs need, and 1 launch material that nothing needs, written or used less than 7 days ago (`--all` removes it)
    perfpipe: --dry-run: would remove 1 entry (1 sample), freeing [SIZE]; removed nothing
    ");

    // A capped run nothing reaches, just measured, stays unless `--all`.
    ran(&[
        "run",
        "experiments/up.kdl",
        "--runtime",
        "sim",
        "--max-prompts",
        "2",
    ]);
    let young = ran(&["store", "gc", "--dry-run"]);
    store_snapshot!(young, @r"
    exit_code: 0
    ----- stdout -----
    entry [KEY] (1 sample, [SIZE]): vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · random 32→4, 8 prompts
      reached by no experiment in `experiments/` and no lockfile in the project
    entry [KEY]: vllm 0.17.1 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · random 32→4, 8 prompts
      kept: reached by `experiments/up.kdl`, `lockfiles/up.lock`
    entry [KEY]: vllm 0.17.1 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · random 32→4, 2 prompts
      kept: reached by no experiment in `experiments/` and no lockfile in the project, but committed less than 7 days ago (`--all` removes it)
    launch [KEY] ([SIZE]): vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · 1 run
      kept: its runs are reached by no experiment in `experiments/` and no lockfile in the project, but written or used less than 7 days ago (`--all` removes it)

    ----- stderr -----
    perfpipe: kept 1 entry reached by 1 experiment and 1 lockfile, and 1 entry that nothing reaches, committed less than 7 days ago (`--all` removes it)
    perfpipe: kept 4 launch materials that kept runs need, and 1 launch material that nothing needs, written or used less than 7 days ago (`--all` removes it)
    perfpipe: --dry-run: would remove 1 entry (1 sample), freeing [SIZE]; removed nothing
    ");
    // A file that begins as a lockfile but cannot be read: gc cannot tell
    // what it reaches, so it removes nothing.
    env.write(
        "notes/broken.lock",
        "lockfile version=9 experiment=\"up\"\n",
    );
    let broken = env.run(&["store", "gc", "--all"]);
    assert_eq!(broken.status.code(), Some(2), "{}", render(&broken));
    assert!(
        words(&broken).contains("cannot tell which runs `notes/broken.lock` reaches"),
        "{}",
        render(&broken)
    );
    std::fs::remove_file(env.path("notes/broken.lock")).unwrap();
    let all = ran(&["store", "gc", "--all"]);
    assert!(
        stderr(&all).contains("removed 2 entries (2 samples)"),
        "{}",
        stderr(&all)
    );
    assert_eq!(env.samples().len(), 1, "the current run's");
}

/// One run on a ShareGPT dataset: its launch reads an input from the store.
const CHAT: &str = r#"experiment "chat" {
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload chat { dataset sharegpt path="sharegpt-tiny.json"; prompts 8; }
    step vllm engine=vllm gpus=1 { args "--max-num-seqs" "4"; }
}"#;

/// Launch material lives while a kept run is among its runs, an input while
/// material that lives reads it, each at least 7 days after it was last
/// written or asked for; damage in either goes, and `plan` writes it again.
#[test]
fn gc_removes_launch_material_and_inputs_no_kept_run_needs() {
    let env = TestEnv::new();
    env.copy_fixture("datasets/sharegpt-tiny.json", "sharegpt-tiny.json");
    env.write("chat.kdl", CHAT);
    env.write("other.kdl", &one_run("other", 3));
    let ran = |args: &[&str]| {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(0), "{}", render(&out));
        out
    };
    let plan = ["plan", "chat.kdl", "--runtime", "sim", "--write-launches"];
    ran(&plan);
    let kept = crate::common::files_under(&env.path("store/drv"));
    // Capped, its run is reached by no experiment.
    ran(&[
        "plan",
        "chat.kdl",
        "--runtime",
        "sim",
        "--max-prompts",
        "2",
        "--write-launches",
    ]);
    let files = |dir: &str| {
        let mut out = crate::common::files_under(&env.path(dir));
        out.sort();
        out
    };
    assert_eq!((kept.len(), files("store/drv").len()), (1, 2));
    let input = files("store/inputs/sha256").remove(0);
    let aged = || {
        age(&env, "store/drv", 8);
        age(&env, "store/inputs", 8);
    };
    aged();

    let dry = ran(&["store", "gc", "--dry-run", "chat.kdl"]);
    store_snapshot!(dry, @r"
    exit_code: 0
    ----- stdout -----
    launch [KEY] ([SIZE]): vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · 1 run
      its runs are reached by none of the experiments and lockfiles named

    ----- stderr -----
    perfpipe: kept 0 entries reached by 1 experiment and 0 lockfiles
    perfpipe: kept 1 launch material that kept runs need, 1 input that kept launch material reads
    perfpipe: --dry-run: would remove 1 launch material, freeing [SIZE]; removed nothing
    ");
    let none = ran(&["store", "gc", "--dry-run", "other.kdl"]);
    store_snapshot!(none, @r"
    exit_code: 0
    ----- stdout -----
    launch [KEY] ([SIZE]): vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · 1 run
      its runs are reached by none of the experiments and lockfiles named
    launch [KEY] ([SIZE]): vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · 1 run
      its runs are reached by none of the experiments and lockfiles named
    input [KEY] (dataset of workload `chat`, [SIZE])
      read by no launch material that stays

    ----- stderr -----
    perfpipe: kept 0 entries reached by 1 experiment and 0 lockfiles
    perfpipe: --dry-run: would remove 2 launch materials and 1 input, freeing [SIZE]; removed nothing
    ");

    // A damaged input goes even though kept material reads it.
    let writable = |path: &std::path::Path| {
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap()
    };
    writable(&input);
    std::fs::write(&input, "[]").unwrap();
    let verify = env.run(&["store", "verify"]);
    store_snapshot!(verify, @r"
    exit_code: 4
    ----- stdout -----
    damaged      store/inputs/sha256/[KEY]: its sha256 is `[KEY]`, not its name; `perfpipe realise` refuses the launches that read it

    ----- stderr -----
    perfpipe: store `store`: checked 0 entries, 0 samples, 2 launch materials and 1 input: 1 damaged
    perfpipe: 1 damaged launch material or input, never used (`perfpipe realise` refuses it): `perfpipe store gc` removes it, and `perfpipe plan --write-launches` or `perfpipe run` of its experiment writes it again
    ");
    let gc = ran(&["store", "gc", "chat.kdl"]);
    store_snapshot!(gc, @r"
    exit_code: 0
    ----- stdout -----
    launch [KEY] ([SIZE]): vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · 1 run
      its runs are reached by none of the experiments and lockfiles named
    input store/inputs/sha256/[KEY] ([SIZE])
      damaged: its sha256 is `[KEY]`, not its name; `perfpipe realise` refuses the launches that read it

    ----- stderr -----
    perfpipe: kept 0 entries reached by 1 experiment and 0 lockfiles
    perfpipe: kept 1 launch material that kept runs need
    perfpipe: removed 1 launch material and 1 damaged item, freeing [SIZE]
    ");
    assert_eq!(files("store/drv"), kept);
    assert!(!input.exists());
    // `plan` puts the input back, and writes damaged material again.
    writable(&kept[0]);
    std::fs::write(&kept[0], "{}").unwrap();
    ran(&plan);
    assert!(input.exists());
    let verify = ran(&["store", "verify"]);
    assert!(
        stderr(&verify).contains("1 launch material and 1 input: no damage"),
        "{}",
        stderr(&verify)
    );

    // Asked for again by `plan`, old material is young again.
    aged();
    ran(&plan);
    let young = ran(&["store", "gc", "--dry-run", "other.kdl"]);
    store_snapshot!(young, @r"
    exit_code: 0
    ----- stdout -----
    launch [KEY] ([SIZE]): vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 4 · 1 run
      kept: its runs are reached by none of the experiments and lockfiles named, but written or used less than 7 days ago (`--all` removes it)

    ----- stderr -----
    perfpipe: kept 0 entries reached by 1 experiment and 0 lockfiles
    perfpipe: kept 0 launch materials that kept runs need, 1 input that kept launch material reads, and 1 launch material that nothing needs, written or used less than 7 days ago (`--all` removes it)
    perfpipe: nothing to remove
    ");
    let all = ran(&["store", "gc", "--all", "other.kdl"]);
    assert!(
        stderr(&all).contains("removed 1 launch material and 1 input, freeing"),
        "{}",
        stderr(&all)
    );
    assert_eq!(files("store/drv").len() + files("store/inputs").len(), 0);
}

#[test]
fn gc_removes_nothing_when_an_experiment_cannot_be_read() {
    let env = TestEnv::new();
    env.write("experiments/keep.kdl", &one_run("keep", 1));
    let run = env.run(&["run", "experiments/keep.kdl", "--runtime", "sim"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let samples = env.samples();
    std::fs::remove_file(env.path("lockfiles/keep.lock")).unwrap();
    env.write(
        "experiments/keep.kdl",
        &one_run("keep", 1).replace("hardware", "hardwar"),
    );

    let gc = env.run(&["store", "gc"]);
    assert_eq!(gc.status.code(), Some(2), "{}", render(&gc));
    let message = words(&gc);
    assert!(
        message.contains(
            "cannot tell which runs `experiments/keep.kdl` reaches, so `store gc` removes nothing"
        ) && message.contains("unknown node `hardwar`"),
        "{message}"
    );
    assert_eq!(env.samples(), samples);

    std::fs::remove_file(env.path("experiments/keep.kdl")).unwrap();
    let nothing = env.run(&["store", "gc"]);
    assert_eq!(nothing.status.code(), Some(2));
    assert!(
        words(&nothing)
            .contains("found no experiment in `experiments/` and no lockfile in the project"),
        "{}",
        render(&nothing)
    );
    assert_eq!(env.samples(), samples);

    let no_store = env.run(&["store", "verify", "--store", "elsewhere"]);
    assert_eq!(no_store.status.code(), Some(2));
    assert!(stderr(&no_store).contains("there is no store at `elsewhere`"));
}

#[test]
fn sample_ids_go_past_9999_and_their_bound_is_checked_before_measuring() {
    let env = TestEnv::new();
    env.write("one.kdl", &one_run("one", 3));
    let sim = ["--runtime", "sim"];
    let first = env.run(&["run", "one.kdl", sim[0], sim[1]]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let samples =
        entry_of(&env, &["plan", "one.kdl", sim[0], sim[1]], "vllm", "short").join("samples");
    std::fs::rename(samples.join("0001"), samples.join("9999")).unwrap();

    let more = env.run(&["run", "one.kdl", sim[0], sim[1], "--samples", "3"]);
    assert_eq!(more.status.code(), Some(0), "{}", stderr(&more));
    let mut ids: Vec<String> = std::fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    assert_eq!(ids, ["10000", "10001", "9999"]);
    let plan = env.run(&["plan", "one.kdl", sim[0], sim[1], "--samples", "3"]);
    assert_eq!(status_of(&plan, "vllm", "short"), "cached");
    let verify = env.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", render(&verify));
    assert!(!env.path("store/quarantine").exists());

    // The last id: no room for another sample, refused before any engine starts.
    std::fs::rename(samples.join("10001"), samples.join("4294967295")).unwrap();
    let full = env.run(&["run", "one.kdl", sim[0], sim[1], "--samples", "4"]);
    assert_eq!(full.status.code(), Some(2), "{}", stderr(&full));
    let message = words(&full);
    assert!(
        message.contains("have ids up to 4294967295: 4 more would pass it")
            && !message.contains("engine ready"),
        "{message}"
    );
}

#[test]
fn a_fifo_in_an_entry_is_damage_and_blocks_nothing() {
    let env = TestEnv::new();
    env.write("one.kdl", &one_run("one", 4));
    let sim = ["--runtime", "sim"];
    let first = env.run(&["run", "one.kdl", sim[0], sim[1]]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let plan_args = ["plan", "one.kdl", sim[0], sim[1]];
    let result = entry_of(&env, &plan_args, "vllm", "short").join("samples/0001/result.json");
    std::fs::remove_file(&result).unwrap();
    let path = std::ffi::CString::new(result.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);

    let verify = env.run_within(20, &["store", "verify"]);
    assert_eq!(verify.status.code(), Some(4), "{}", render(&verify));
    assert!(
        stdout(&verify)
            .contains("samples/0001/result.json: cannot be read (a FIFO, not a regular file)"),
        "{}",
        render(&verify)
    );
    let plan = env.run_within(20, &plan_args);
    assert_eq!(status_of(&plan, "vllm", "short"), "missing");
    let redo = env.run_within(60, &["run", "one.kdl", sim[0], sim[1]]);
    assert_eq!(redo.status.code(), Some(0), "{}", stderr(&redo));
    assert_eq!(started(&redo), ["vllm × short"]);
    let verify = env.run_within(20, &["store", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", render(&verify));
}

#[test]
fn temp_files_of_killed_writers_do_not_linger_beside_lockfiles() {
    let env = TestEnv::new();
    env.write("one.kdl", &one_run("one", 5));
    // What a `lock` killed mid-write leaves (its pid gone), and one of a live writer.
    let dead = {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    };
    let stale = format!("lockfiles/.perfpipe-{dead}-AbC123");
    let live = format!("lockfiles/.perfpipe-{}-XyZ789", std::process::id());
    env.write(&stale, "half a lockfile");
    env.write(&live, "being written");
    let lock = env.run(&["lock", "one.kdl", "--offline"]);
    assert_eq!(lock.status.code(), Some(0), "{}", render(&lock));
    assert!(!env.path(&stale).exists());
    assert!(
        env.path(&live).exists(),
        "a live writer's file is left alone"
    );
    assert!(env.path("lockfiles/one.lock").exists());
}

/// A store that is not a directory is the user's to fix (exit 2, in every
/// command that reads it); one that cannot be written is the machine's
/// (exit 1), found before any engine starts; both name the path.
#[test]
fn a_store_that_cannot_be_used_says_where_and_whose_fault() {
    let env = TestEnv::new();
    env.write("one.kdl", &one_run("one", 1));
    env.write("file", "");
    store_snapshot!(env.run(&["plan", "one.kdl", "--runtime", "sim", "--store", "file"]), @r"
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
      × `file` is not a directory, so `file` is not a store
      help: `--store DIR` (or PERFPIPE_STORE) names the store's directory; move
            the file away, or name another directory
    ");
    let refused = |args: &[&str], file: &str| {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", render(&out));
        let err = crate::common::words(&out);
        assert!(
            err.contains(&format!("`{file}` is not a directory")),
            "{err}"
        );
        assert!(!err.contains("engine ready"), "{err}");
    };
    refused(
        &[
            "run",
            "one.kdl",
            "--runtime",
            "sim",
            "--store",
            "file/below",
        ],
        "file",
    );
    refused(&["store", "verify", "--store", "file"], "file");
    for (dir, file) in [
        ("s1", "s1/entries"),
        ("s2", "s2/quarantine"),
        ("s3", "s3/tmp"),
    ] {
        env.write(file, "");
        refused(
            &["plan", "one.kdl", "--runtime", "sim", "--store", dir],
            file,
        );
        refused(
            &["run", "one.kdl", "--runtime", "sim", "--store", dir],
            file,
        );
        refused(&["store", "gc", "--store", dir, "one.kdl"], file);
    }

    // Root writes through permissions, so a lock that cannot be opened
    // stands in for an unwritable store.
    std::fs::create_dir_all(env.path("s4/locks/tmp.lock")).unwrap();
    let out = env.run(&["run", "one.kdl", "--runtime", "sim", "--store", "s4"]);
    assert_eq!(out.status.code(), Some(1), "{}", render(&out));
    let err = crate::common::words(&out);
    assert!(err.contains("cannot use the store"), "{err}");
    assert!(err.contains("`s4/locks/tmp.lock`: Is a directory"), "{err}");
    assert!(!err.contains("engine ready"), "{err}");

    // A read-only store, where permissions bind: as an unprivileged user
    // (root, as in CI, writes through them).
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(env.path("s5")).unwrap();
    std::fs::set_permissions(env.path("s5"), std::fs::Permissions::from_mode(0o555)).unwrap();
    let run = env.cmd(&["run", "one.kdl", "--runtime", "sim", "--store", "s5"]);
    if let Some(mut run) = crate::common::unprivileged(&env, &run) {
        let out = exited(run.output().unwrap(), 1);
        assert!(
            words(&out).contains(
                "cannot use the store failed to open file `s5/perfpipe-store`: Permission denied"
            ),
            "{}",
            render(&out)
        );
        assert!(!words(&out).contains("engine ready"), "{}", render(&out));
    }
}

/// A directory no key names is never committed to, so `store verify` says
/// only `gc` removes it, not that `run` moves it.
#[test]
fn verify_says_only_gc_removes_stray_directories() {
    let env = TestEnv::new();
    env.write("store/entries/ab/not-a-key/inputs.json", "{}");
    let verify = env.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(4), "{}", render(&verify));
    let err = stderr(&verify);
    assert!(
        err.contains("perfpipe: 1 directory that no run's key names where it is, never read and never moved by `perfpipe run`; `perfpipe store gc` removes it"),
        "{err}"
    );
    assert!(!err.contains("redoes"), "{err}");
}

/// A perfpipe killed with `kill -9` in the middle of appending to the
/// index of results (a test hook stops it there, half its record written,
/// and says so) loses no result: the sample was committed first, the torn
/// record is never used, `store verify` finds the index stale (not
/// damaged) and `--repair` rewrites it.
#[test]
fn a_perfpipe_killed_while_appending_to_the_index_loses_no_result() {
    use std::os::unix::process::ExitStatusExt;
    let env = TestEnv::tiny();
    let sim = ["--runtime", "sim"];
    let paused = env.path("paused-in-append");
    let mut child = env
        .cmd(&["run", "tiny.kdl", sim[0], sim[1]])
        .env("PERFPIPE_TEST_PAUSE_IN_INDEX_APPEND", &paused)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !paused.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "perfpipe ended before it appended to the index"
        );
        assert!(std::time::Instant::now() < deadline, "no append in 120 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    let killed = child.wait().unwrap();
    assert_eq!(killed.signal(), Some(libc::SIGKILL));
    let committed = env.samples().len();
    assert!(committed >= 1, "the sample was committed before the append");
    let keys = std::fs::read(env.path("store/index/results.keys")).unwrap();
    assert!(keys.len() > 16, "a torn record is there");

    let verify = env.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", render(&verify));
    let stale = format!(
        "the index of results is stale for {committed} entr{}",
        if committed == 1 { "y" } else { "ies" }
    );
    assert!(stderr(&verify).contains(&stale), "{}", render(&verify));
    // Every committed sample is read (from its entry's files).
    let plan = stdout(&env.run(&["plan", "tiny.kdl", sim[0], sim[1]]));
    let summary = plan.lines().find(|l| l.starts_with("7 runs: ")).unwrap();
    let counted: Vec<usize> = summary
        .split([':', ',', ';'])
        .filter_map(|part| {
            let (n, what) = part.trim().split_once(' ')?;
            ["cached", "failed"]
                .contains(&what)
                .then(|| n.parse().ok())?
        })
        .collect();
    assert_eq!(counted.iter().sum::<usize>(), committed, "{plan}");

    let repair = env.run(&["store", "verify", "--repair"]);
    assert_eq!(repair.status.code(), Some(0), "{}", render(&repair));
    assert!(
        stderr(&repair).contains(&format!(
            "rewrote the index of results from {committed} entr"
        )),
        "{}",
        render(&repair)
    );
    assert!(
        !stderr(&repair).contains("index of results is stale"),
        "{}",
        render(&repair)
    );

    let resumed = env.run(&["run", "tiny.kdl", sim[0], sim[1]]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(env.samples().len(), 7, "each run once, none lost");
    let verify = env.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", render(&verify));
    assert!(!stderr(&verify).contains("index"), "{}", render(&verify));
}
