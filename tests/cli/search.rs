//! The largest load within an SLO: a search probes each configuration by
//! bisection, every probe an ordinary cached run, on the simulated engine's
//! deterministic load timing: TTFT = 2 + 100·k ms for the k-th request in
//! flight, so `ttft_ms=450` holds up to k = 4 and `ttft_ms=650` up to k = 6,
//! each 48 ms from its bound on the passing side (a busy machine only adds).

use serde_json::Value;

use crate::common::{TestEnv, stderr, stdout};

/// The simulated engine's load timing these searches are checked on.
const SEARCH_TIMING: (&str, &str) = (
    "PERFPIPE_SIM_TIMING",
    "load:ttft_ms=2,ttft_ms_per_req=100,itl_ms=1",
);

fn search_study() -> TestEnv {
    let env = TestEnv::new();
    env.copy_fixture("experiments/search.kdl", "search.kdl");
    env
}

fn run(env: &TestEnv, experiment: &str) -> std::process::Output {
    crate::load::run_timed(env, experiment, SEARCH_TIMING)
}

fn analysis(env: &TestEnv, experiment: &str) -> Value {
    let json = env.run(&["report", experiment, "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    serde_json::from_slice::<Value>(&json.stdout).unwrap()["analysis"].clone()
}

/// Each search's (step, largest passing, smallest failing, probes, cached).
fn brackets(env: &TestEnv) -> Vec<(String, Value, Value, u64, u64)> {
    analysis(env, "search.kdl")["searches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step"].as_str().unwrap().to_owned(),
                s["bracket"]["largest_passing"].clone(),
                s["bracket"]["smallest_failing"].clone(),
                s["bracket"]["probes"].as_u64().unwrap(),
                s["cached"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_search_finds_the_brute_force_bracket_with_fewer_probes_and_a_rerun_runs_nothing() {
    let env = search_study();
    let first = run(&env, "search.kdl");
    // 1 passes, 8 fails, then 4, 6, 5: five probes.
    assert!(
        stderr(&first).contains("ran 5 (failed: 0)"),
        "{}",
        stderr(&first)
    );
    // The run's report: every probe ran now, none cached.
    let row = "| `vllm` | `chat` | concurrency 1..=8 | `ttft_ms<=450` at 99% | 4 | 5 | 5 |";
    assert!(
        stdout(&first).contains(&format!("{row} 0 |")),
        "{}",
        stdout(&first)
    );
    assert_eq!(
        brackets(&env),
        [("vllm".to_owned(), 4.0.into(), 5.0.into(), 5, 5)]
    );
    assert_eq!(env.samples().len(), 5);

    let again = run(&env, "search.kdl");
    assert_eq!(env.samples().len(), 5, "a second run runs nothing");
    assert!(
        stderr(&again).contains("perfpipe: 1 search of the largest load within an SLO; none needs another probe (the store holds every probe each takes)\n"),
        "{}",
        stderr(&again)
    );
    assert!(
        stderr(&again).contains("ran 0 (failed: 0)"),
        "{}",
        stderr(&again)
    );
    assert!(
        stdout(&again).contains(&format!("{row} 5 |")),
        "{}",
        stdout(&again)
    );

    // The brute-force sweep of 1..=8 reuses the five probes (same keys) and
    // finds the same bracket from the attainment of every point.
    let sweep = env.read("search.kdl").replace(
        "search concurrency from=1 to=8",
        "concurrency 1 2 3 4 5 6 7 8",
    );
    env.write("sweep.kdl", &sweep);
    let swept = run(&env, "sweep.kdl");
    assert!(
        stderr(&swept).contains("ran 3 (failed: 0)"),
        "{}",
        stderr(&swept)
    );
    let runs = analysis(&env, "sweep.kdl")["runs"]
        .as_array()
        .unwrap()
        .clone();
    let points: Vec<(u64, bool)> = runs
        .iter()
        .map(|r| {
            let (met, sent) = (
                r["slo"]["met"].as_u64().unwrap(),
                r["slo"]["sent"].as_u64().unwrap(),
            );
            (r["concurrency"].as_u64().unwrap(), met * 100 >= 99 * sent)
        })
        .collect();
    assert_eq!(points.len(), 8, "{points:?}");
    let passing = points.iter().filter(|p| p.1).map(|p| p.0).max();
    let failing = points.iter().filter(|p| !p.1).map(|p| p.0).min();
    assert_eq!((passing, failing), (Some(4), Some(5)), "{points:?}");
}

#[test]
fn a_changed_slo_runs_only_the_new_probes_it_needs() {
    let env = search_study();
    run(&env, "search.kdl");
    assert_eq!(env.samples().len(), 5);

    // Within 650 ms: 1, 8, 4 and 6 are stored, only 7 is new.
    let looser = env.read("search.kdl").replace("ttft_ms=450", "ttft_ms=650");
    env.write("search.kdl", &looser);
    let plan = env.run(&["plan", "search.kdl"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    let search_lines: String = stdout(&plan)
        .lines()
        .skip_while(|l| !l.starts_with("searches of"))
        .take(3)
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(search_lines, @r"
    searches of the largest load within the SLO:
      vllm × chat: concurrency 1..=8, passing at 99% of requests within ttft_ms<=650
        stored c=1 pass, c=8 fail, c=4 pass, c=6 pass; next c=7 (missing); the probes after it are unknown until it ends
    ");
    let out = run(&env, "search.kdl");
    assert!(
        stderr(&out).contains("ran 1 (failed: 0)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(env.samples().len(), 6);
    assert_eq!(
        brackets(&env),
        [("vllm".to_owned(), 6.0.into(), 7.0.into(), 5, 5)]
    );
    // Of the run's five probes, four came from the store.
    assert!(
        stdout(&out).contains("| `ttft_ms<=650` at 99% | 6 | 7 | 5 | 4 |"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_report_gives_the_bracket_per_configuration_best_first() {
    let env = search_study();
    // A stricter workload declared first (within 250 ms: k ≤ 2) ranks last.
    let kdl = env.read("search.kdl").replace(
            "    workload chat {",
            "    workload strict {\n        dataset random input=32 output=4 seed=1\n        \
             prompts 8\n        slo ttft_ms=250\n        search concurrency from=1 to=8\n    }\n\n    workload chat {",
        );
    env.write("search.kdl", &kdl);
    run(&env, "search.kdl");
    let md = stdout(&env.run(&["report", "search.kdl"]));
    let section: String = md
        .lines()
        .skip_while(|l| !l.starts_with("## Largest load"))
        .take_while(|l| !l.starts_with("## Context"))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(section, @r"
    ## Largest load within the SLO

    Each configuration's load found by bisection: a load passes when at least the attainment of the requests sent met the SLO. Best first; probes are ordinary runs (cached: from the store, not run now).

    | Step | Workload | Search | SLO | Largest passing | Smallest failing | Probes | Cached |
    |---|---|---|---|---:|---:|---:|---:|
    | `vllm` | `chat` | concurrency 1..=8 | `ttft_ms<=450` at 99% | 4 | 5 | 5 | 5 |
    | `vllm` | `strict` | concurrency 1..=8 | `ttft_ms<=250` at 99% | 2 | 3 | 5 | 5 |
    ");
}

#[test]
fn the_probes_of_a_configuration_run_on_one_engine_launch_one_after_another() {
    let env = search_study();
    // Two configurations, each searched: 1 passes, 8 fails, then 4, 6, 5.
    let kdl = env.read("search.kdl").replace(
        "    step vllm engine=vllm gpus=1",
        "    step vllm engine=vllm gpus=1\n    step seqs engine=vllm gpus=1 {\n        args \"--max-num-seqs\" \"64\"\n    }",
    );
    env.write("search.kdl", &kdl);
    let out = run(&env, "search.kdl");
    let err = stderr(&out);
    assert!(err.contains("ran 10 (failed: 0)"), "{err}");
    // One launch per configuration, not one per probe.
    assert_eq!(err.matches("engine ready after").count(), 2, "{err}");
    // Progress counts the probes of both searches together, each
    // configuration's in a row: at most 2 × 5 (from, to, then up to three
    // bisections of 1..=8).
    let started: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with('['))
        .map(|l| l.split(" (").next().unwrap())
        .collect();
    insta::assert_snapshot!(started.join("\n"), @r"
    [1/≤10] `vllm` × `chat@c=1`
    [2/≤10] `vllm` × `chat@c=8`
    [3/≤10] `vllm` × `chat@c=4`
    [4/≤10] `vllm` × `chat@c=6`
    [5/≤10] `vllm` × `chat@c=5`
    [6/≤10] `seqs` × `chat@c=1`
    [7/≤10] `seqs` × `chat@c=8`
    [8/≤10] `seqs` × `chat@c=4`
    [9/≤10] `seqs` × `chat@c=6`
    [10/10] `seqs` × `chat@c=5`
    ");
    // Each result records its launch: the probes of a step share one, in order.
    let mut launches: Vec<(String, u64)> = Vec::new();
    for sample in env.samples() {
        let (key, id) = sample.split_once('/').unwrap();
        let path = format!("store/entries/{}/{key}/samples/{id}/result.json", &key[..2]);
        let result: Value = serde_json::from_str(&env.read(&path)).unwrap();
        let launch = &result["engine_launch"];
        launches.push((
            launch["id"].as_str().unwrap().to_owned(),
            launch["position"].as_u64().unwrap(),
        ));
    }
    launches.sort();
    let ids: std::collections::BTreeSet<&str> = launches.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(ids.len(), 2, "{launches:?}");
    let positions: Vec<u64> = launches.iter().map(|l| l.1).collect();
    assert_eq!(positions, [1, 2, 3, 4, 5, 1, 2, 3, 4, 5], "{launches:?}");
}

/// A concurrency past the workload's prompts measures no more load: `plan`
/// (and `run`) say so, once per workload.
#[test]
fn a_concurrency_past_the_prompts_is_noted() {
    let env = search_study();
    let kdl = env.read("search.kdl").replace(
        "search concurrency from=1 to=8",
        "search concurrency from=1 to=256",
    );
    env.write("search.kdl", &kdl);
    let plan = env.run(&["plan", "search.kdl"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    // `plan` prints its notes with the plan.
    let text = crate::common::stdout(&plan);
    let notes: Vec<&str> = text.lines().filter(|l| l.starts_with("note:")).collect();
    insta::assert_snapshot!(notes.join("\n"), @"note: workload `chat` reaches concurrency 256 but sends 8 prompts: no more than that are ever in flight, so a concurrency above 8 measures the same load (`prompts` sends more)");
}
