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
    brackets_of(&analysis(env, "search.kdl"))
}

/// Each search's (step, largest passing, smallest failing, probes, cached)
/// in `analysis`.
fn brackets_of(analysis: &Value) -> Vec<(String, Value, Value, u64, u64)> {
    analysis["searches"]
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
    // What the rerun says before it runs, each a whole sentence.
    let err = stderr(&again);
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("within an SLO"))
        .collect();
    insta::assert_snapshot!(said.join("\n"), @"perfpipe: 1 search of the largest load within an SLO; none needs another probe (the store holds every probe each takes)");
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

/// Three configurations searched over the same workload (issue 38: a
/// launch per probe, round-robin across configurations, before).
fn three_configurations(env: &TestEnv) {
    let kdl = env.read("search.kdl").replace(
        "    step vllm engine=vllm gpus=1",
        "    step vllm engine=vllm gpus=1
    step seqs engine=vllm gpus=1 {
        args \"--max-num-seqs\" \"64\"
    }
    step batched engine=vllm gpus=1 {
        args \"--max-num-batched-tokens\" \"4096\"
    }",
    );
    env.write("search.kdl", &kdl);
}

/// Each result's (launch id, position on it, the step's serve arguments),
/// by launch and position.
fn launches_of_results(env: &TestEnv) -> Vec<(String, u64, String)> {
    let mut launches = Vec::new();
    for (_, result) in env.results() {
        let launch = &result["engine_launch"];
        let argv: Vec<&str> = result["engine_command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        // What follows `--port N`: the step's own arguments.
        let port = argv.iter().position(|a| *a == "--port").unwrap();
        launches.push((
            launch["id"].as_str().unwrap().to_owned(),
            launch["position"].as_u64().unwrap(),
            argv[port + 2..].join(" "),
        ));
    }
    launches.sort();
    launches
}

#[test]
fn the_probes_of_a_configuration_run_on_one_engine_launch_one_after_another() {
    let env = search_study();
    three_configurations(&env);
    // `plan` counts a launch per configuration, and the later probes on them.
    let plan = env.run(&["plan", "search.kdl", "--runtime", "docker"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    let text = stdout(&plan);
    let estimate = text.lines().find(|l| l.starts_with("estimate:")).unwrap();
    insta::assert_snapshot!(estimate, @"estimate: 0.2 GPU-hours (3 engine launches at a typical start of 5 min for vLLM, plus benchmark times of earlier results; 3 runs have no earlier result of their workload and count only their launch; the searches take up to 12 more probes on these launches, untimed)");

    // Each configuration: 1 passes, 8 fails, then 4, 6, 5.
    let out = run(&env, "search.kdl");
    let err = stderr(&out);
    assert!(err.contains("ran 15 (failed: 0)"), "{err}");
    // One launch per configuration, not one per probe.
    assert_eq!(err.matches("engine ready after").count(), 3, "{err}");
    // Progress counts the probes of every search together, each
    // configuration's in a row: at most 3 × 5 (from, to, then up to three
    // bisections of 1..=8).
    let started: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with('['))
        .map(|l| l.split(" (").next().unwrap())
        .collect();
    insta::assert_snapshot!(started.join("\n"), @r"
    [1/≤15] `vllm` × `chat@c=1`
    [2/≤15] `vllm` × `chat@c=8`
    [3/≤15] `vllm` × `chat@c=4`
    [4/≤15] `vllm` × `chat@c=6`
    [5/≤15] `vllm` × `chat@c=5`
    [6/≤15] `seqs` × `chat@c=1`
    [7/≤15] `seqs` × `chat@c=8`
    [8/≤15] `seqs` × `chat@c=4`
    [9/≤15] `seqs` × `chat@c=6`
    [10/≤15] `seqs` × `chat@c=5`
    [11/≤15] `batched` × `chat@c=1`
    [12/≤15] `batched` × `chat@c=8`
    [13/≤15] `batched` × `chat@c=4`
    [14/≤15] `batched` × `chat@c=6`
    [15/15] `batched` × `chat@c=5`
    ");
    // Each result records its launch: the probes of a step share one, in order.
    let launches = launches_of_results(&env);
    let ids: std::collections::BTreeSet<&str> = launches.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(ids.len(), 3, "{launches:?}");
    let positions: Vec<u64> = launches.iter().map(|l| l.1).collect();
    assert_eq!(
        positions,
        [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5],
        "{launches:?}"
    );
}

/// An engine that dies in the middle of a search fails the probe it served
/// (stored with its engine log, as a step's run would be: a load the
/// engine dies under does not pass), and the search goes on on a new
/// launch of its configuration, as a step's runs do.
#[test]
fn an_engine_that_dies_mid_search_fails_its_probe_and_the_next_probe_relaunches_it() {
    let env = search_study();
    three_configurations(&env);
    // Requests long enough that the engine dies (0.5 s after it listens,
    // its tokens 50 ms apart) in the first probe it serves, `c=8`: `c=1`
    // is stored first by a workload declaring it, without the fault.
    let kdl = env.read("search.kdl").replace("output=4", "output=40");
    env.write("search.kdl", &kdl);
    env.write(
        "first.kdl",
        &kdl.replace("search concurrency from=1 to=8", "concurrency 1"),
    );
    let on_box = |experiment: &str, fault: &str| {
        crate::runtimes::gpu_box(
            &env,
            &["run", experiment, "--runtime", "local"],
            &[SEARCH_TIMING, ("STANDIN_FAULT", fault)],
        )
        .output()
        .unwrap()
    };
    let first = on_box("first.kdl", "");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    std::fs::remove_file(env.path("standin.log")).unwrap();

    let out = on_box("search.kdl", "die-once@--max-num-seqs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // c=8 fails everywhere (on `seqs` as its engine died), then 4, 6, 5.
    assert!(err.contains("ran 12 (failed: 1, unexpectedly)"), "{err}");
    assert!(
        err.contains("\n  `seqs` × `chat@c=8`: ") && !err.contains("earlier run"),
        "the probe the engine died in, named as run now: {err}"
    );
    let json = env.run(&[
        "report",
        "search.kdl",
        "--runtime",
        "local",
        "--format",
        "json",
    ]);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let analysis = &serde_json::from_slice::<Value>(&json.stdout).unwrap()["analysis"];
    assert_eq!(
        brackets_of(analysis)
            .iter()
            .map(|b| (b.0.as_str(), b.1.clone(), b.2.clone()))
            .collect::<Vec<_>>(),
        [
            ("vllm", 4.0.into(), 5.0.into()),
            ("seqs", 4.0.into(), 5.0.into()),
            ("batched", 4.0.into(), 5.0.into()),
        ]
    );
    // `seqs` was launched again for its next probe; the others once each.
    let log = env.read("standin.log");
    let serves = |args: &str| {
        log.lines()
            .filter(|l| l.starts_with("vllm\t") && l.contains("\tserve\t"))
            .filter(|l| l.contains(args))
            .count()
    };
    assert_eq!(serves(""), 4, "{log}");
    assert_eq!(serves("--max-num-seqs"), 2, "{log}");
    // Its results: c=1 (the first run's), c=8 on the launch that died,
    // then 4, 6, 5 in order on the next.
    let launches = launches_of_results(&env);
    let seqs: Vec<&(String, u64, String)> = launches
        .iter()
        .filter(|l| l.2 == "--max-num-seqs 64")
        .collect();
    let ids: std::collections::BTreeSet<&str> = seqs.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(ids.len(), 3, "{launches:?}");
    let mut positions: Vec<u64> = seqs.iter().map(|l| l.1).collect();
    positions.sort_unstable();
    assert_eq!(positions, [1, 1, 1, 2, 3], "{launches:?}");
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

/// `slo p99_ttft_ms=300` is refused at its place, pointing to the
/// objective (`ttft_ms=`) and to `attainment=`, the search's percentile.
#[test]
fn a_percentile_in_an_slo_points_to_attainment() {
    let env = search_study();
    let kdl = env
        .read("search.kdl")
        .replace("slo ttft_ms=450", "slo p99_ttft_ms=300");
    env.write("search.kdl", &kdl);
    let plan = crate::common::exited(env.run(&["plan", "search.kdl"]), 2);
    insta::assert_snapshot!(stderr(&plan));
}
