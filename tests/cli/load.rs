//! Load as an axis: a workload listing several concurrencies is a run per
//! value, each keyed and cached on its own.

use crate::common::{TestEnv, stderr, stdout};
use crate::perfpipe_snapshot;

/// The simulated engine's load-dependent timing: a request's TTFT is
/// 2 ms + 20 ms per request in flight when it arrived.
pub const LOAD_TIMING: (&str, &str) = (
    "PERFPIPE_SIM_TIMING",
    "load:ttft_ms=2,ttft_ms_per_req=40,itl_ms=1",
);

/// `perfpipe run EXPERIMENT` under the simulated `timing`, which must succeed.
pub fn run_timed(env: &TestEnv, experiment: &str, timing: (&str, &str)) -> std::process::Output {
    let out = env
        .cmd(&["run", experiment])
        .env(timing.0, timing.1)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

fn load_study() -> TestEnv {
    let env = TestEnv::new();
    env.copy_fixture("experiments/load.kdl", "load.kdl");
    env
}

#[test]
fn three_configurations_by_five_loads_run_once_and_plan_lists_every_point() {
    let env = load_study();
    let plan = env.run(&["plan", "load.kdl"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    let listed: Vec<(String, String)> = stdout(&plan)
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (step, workload) = (words.next()?, words.next()?);
            workload
                .starts_with("chat@")
                .then(|| (step.to_owned(), workload.to_owned()))
        })
        .collect();
    let expected: Vec<(String, String)> = ["vllm", "vllm-seqs", "sglang"]
        .iter()
        .flat_map(|s| [1, 2, 4, 8, 16].map(|c| (s.to_string(), format!("chat@c={c}"))))
        .collect();
    assert_eq!(listed, expected, "{}", stdout(&plan));
    assert!(stdout(&plan).contains("15 runs: 0 cached, 0 failed, 15 missing"));
    // The whole table's shape: a row per point, the launches, the estimate.
    perfpipe_snapshot!("plan_of_a_load_grid", plan);

    let first = run_timed(&env, "load.kdl", LOAD_TIMING);
    assert!(
        stderr(&first).contains("ran 15 (failed: 0)"),
        "{}",
        stderr(&first)
    );
    assert_eq!(env.samples().len(), 15);

    let again = run_timed(&env, "load.kdl", LOAD_TIMING);
    assert_eq!(env.samples().len(), 15, "a second run runs nothing");
    assert!(!stderr(&again).contains("ran 15"), "{}", stderr(&again));

    // Each point's load is a plain field of its record, for curves.
    let json = env.run(&["report", "load.kdl", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let runs = report["analysis"]["runs"].as_array().unwrap();
    let loads: Vec<(&str, &str, u64)> = runs
        .iter()
        .map(|r| {
            (
                r["step"].as_str().unwrap(),
                r["declared_workload"].as_str().unwrap(),
                r["concurrency"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        loads[..5],
        [
            ("vllm", "chat", 1),
            ("vllm", "chat", 2),
            ("vllm", "chat", 4),
            ("vllm", "chat", 8),
            ("vllm", "chat", 16)
        ]
    );
    // The simulated TTFT grows with the load: 2 + 40 × 1 ms alone.
    let ttft: Vec<f64> = runs[..5]
        .iter()
        .map(|r| r["metrics"]["mean_ttft_ms"].as_f64().unwrap())
        .collect();
    assert!(
        ttft[0] >= 12.0 && ttft.windows(2).all(|w| w[0] < w[1]),
        "{ttft:?}"
    );
}

#[test]
fn a_point_of_an_axis_has_the_key_of_a_workload_declaring_its_value_alone() {
    let env = load_study();
    let key_of = |env: &TestEnv, workload: &str| {
        let plan = stdout(&env.run(&["plan", "load.kdl"]));
        plan.lines()
            .find(|l| l.starts_with("vllm ") && l.split_whitespace().nth(1) == Some(workload))
            .and_then(|l| l.split_whitespace().nth(2).map(str::to_owned))
            .unwrap_or_else(|| panic!("no `{workload}` in {plan}"))
    };
    let point = key_of(&env, "chat@c=8");
    let kdl = env
        .read("load.kdl")
        .replace("concurrency 1 2 4 8 16", "concurrency 8");
    env.write("load.kdl", &kdl);
    assert_eq!(key_of(&env, "chat"), point);
}

/// Each point's SLO attainment from the JSON report: (concurrency, met, sent).
fn attainment(env: &TestEnv) -> Vec<(u64, u64, u64)> {
    let json = env.run(&["report", "load.kdl", "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    report["analysis"]["runs"].as_array().unwrap()[..5]
        .iter()
        .map(|r| {
            (
                r["concurrency"].as_u64().unwrap(),
                r["slo"]["met"].as_u64().unwrap(),
                r["slo"]["sent"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn slo_attainment_follows_the_load_and_a_new_slo_runs_nothing() {
    let env = load_study();
    let run = |env: &TestEnv| run_timed(env, "load.kdl", LOAD_TIMING);
    let first = run(&env);
    // TTFT = 2 + 40·k ms for the k-th request in flight: within 182 ms up to
    // k = 4 (162 ms; 20 ms to spare on a loaded machine), so every request
    // at c ≤ 4 and the first 4 of 24 at c = 8, 16.
    assert_eq!(
        attainment(&env),
        [
            (1, 24, 24),
            (2, 24, 24),
            (4, 24, 24),
            (8, 4, 24),
            (16, 4, 24)
        ]
    );
    assert!(
        stdout(&first).contains("SLO attainment"),
        "{}",
        stdout(&first)
    );
    assert!(
        stdout(&first).contains("| `vllm` | `chat@c=8` | `ttft_ms<=182` | 4/24 | 16.7% |"),
        "{}",
        stdout(&first)
    );
    let points = |env: &TestEnv| -> Vec<String> {
        stdout(&env.run(&["plan", "load.kdl"]))
            .lines()
            .filter(|l| l.contains("chat@"))
            .map(str::to_owned)
            .collect()
    };
    let keys = points(&env);

    // Within 262 ms: k ≤ 6 (242 ms). Only the analysis changes.
    let kdl = env
        .read("load.kdl")
        .replace("slo ttft_ms=182", "slo ttft_ms=262");
    env.write("load.kdl", &kdl);
    assert_eq!(points(&env), keys, "an SLO is no key material");
    run(&env);
    assert_eq!(env.samples().len(), 15, "a new SLO runs nothing");
    assert_eq!(
        attainment(&env),
        [
            (1, 24, 24),
            (2, 24, 24),
            (4, 24, 24),
            (8, 6, 24),
            (16, 6, 24)
        ]
    );
}
