//! Matrix sweeps: several `vary` nodes are their product, each point a step
//! of its own measured at every load point of its workloads.

use crate::common::{TestEnv, stderr, stdout};
use crate::load::{LOAD_TIMING, run_timed};

const POINTS: [&str; 4] = [
    "sched@max-num-batched-tokens=4096,max-num-seqs=64",
    "sched@max-num-batched-tokens=4096,max-num-seqs=128",
    "sched@max-num-batched-tokens=8192,max-num-seqs=64",
    "sched@max-num-batched-tokens=8192,max-num-seqs=128",
];

fn matrix_study() -> TestEnv {
    let env = TestEnv::new();
    env.copy_fixture("experiments/matrix.kdl", "matrix.kdl");
    env
}

/// `plan`'s (step, workload, key) lines.
fn planned(env: &TestEnv) -> Vec<(String, String, String)> {
    let plan = env.run(&["plan", "matrix.kdl"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    stdout(&plan)
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (step, workload, key) = (words.next()?, words.next()?, words.next()?);
            step.starts_with("sched")
                .then(|| (step.to_owned(), workload.to_owned(), key.to_owned()))
        })
        .collect()
}

#[test]
fn a_two_by_two_matrix_at_two_loads_is_eight_runs_run_once() {
    let env = matrix_study();
    let plan = planned(&env);
    let listed: Vec<(&str, &str)> = plan
        .iter()
        .map(|(s, w, _)| (s.as_str(), w.as_str()))
        .collect();
    let expected: Vec<(&str, &str)> = POINTS
        .iter()
        .flat_map(|p| [(*p, "chat@c=1"), (*p, "chat@c=4")])
        .collect();
    assert_eq!(listed, expected);
    let mut keys: Vec<&str> = plan.iter().map(|(_, _, k)| k.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 8, "each run has its own key: {plan:?}");

    let run = |env: &TestEnv| run_timed(env, "matrix.kdl", LOAD_TIMING);
    let first = run(&env);
    assert!(
        stderr(&first).contains("ran 8 (failed: 0)"),
        "{}",
        stderr(&first)
    );
    assert_eq!(env.samples().len(), 8);
    let again = run(&env);
    assert_eq!(env.samples().len(), 8, "a second run runs nothing");
    assert!(!stderr(&again).contains("ran 8"), "{}", stderr(&again));

    // A report's runs carry each point's settings and load as plain fields.
    let json = env.run(&["report", "matrix.kdl", "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let runs = report["analysis"]["runs"].as_array().unwrap();
    let fields: Vec<(&str, &str, &str, u64)> = runs
        .iter()
        .map(|r| {
            (
                r["sweep"].as_str().unwrap(),
                r["settings"]["--max-num-batched-tokens"].as_str().unwrap(),
                r["settings"]["--max-num-seqs"].as_str().unwrap(),
                r["concurrency"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        fields[..4],
        [
            ("sched", "4096", "64", 1),
            ("sched", "4096", "64", 4),
            ("sched", "4096", "128", 1),
            ("sched", "4096", "128", 4),
        ]
    );
    assert_eq!(fields.len(), 8);
}

#[test]
fn a_matrix_point_has_the_key_of_a_step_declaring_its_flags() {
    let env = matrix_study();
    let point = planned(&env)
        .into_iter()
        .find(|(s, w, _)| s == POINTS[3] && w == "chat@c=4")
        .unwrap();
    let kdl = env.read("matrix.kdl").replace(
        r#"sweep sched engine=vllm gpus=1 {
        vary "--max-num-batched-tokens" 4096 8192
        vary "--max-num-seqs" 64 128
    }"#,
        r#"step sched-big engine=vllm gpus=1 {
        args "--max-num-seqs" 128 "--max-num-batched-tokens" 8192
    }"#,
    );
    env.write("matrix.kdl", &kdl);
    let plan = stdout(&env.run(&["plan", "matrix.kdl"]));
    let key = plan
        .lines()
        .find(|l| l.starts_with("sched-big ") && l.contains("chat@c=4"))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap_or_else(|| panic!("{plan}"));
    assert_eq!(key, point.2);
}

#[test]
fn a_flag_following_the_load_runs_each_point_at_its_own_concurrency() {
    let env = matrix_study();
    let kdl = env
        .read("matrix.kdl")
        .replace("concurrency 1 4", "concurrency 1 4 64")
        .replace(
            r#"vary "--max-num-seqs" 64 128"#,
            r#"vary "--max-num-seqs" 1 4 load=concurrency"#,
        );
    env.write("matrix.kdl", &kdl);
    let listed: Vec<(String, String)> = planned(&env).into_iter().map(|(s, w, _)| (s, w)).collect();
    let expected: Vec<(String, String)> = [4096, 8192]
        .iter()
        .flat_map(|t| {
            [1, 4].map(|c| {
                (
                    format!("sched@max-num-batched-tokens={t},max-num-seqs={c}"),
                    format!("chat@c={c}"),
                )
            })
        })
        .collect();
    assert_eq!(listed, expected);
}
