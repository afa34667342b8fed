//! The hand-written studies of the guidellm era run end to end on the
//! simulated engine with `--max-prompts 20`: once under `harness guidellm` as
//! declared (the stand-in guidellm 0.5.3 drives the engine), once under the
//! built-in harness.

use std::process::Output;

use crate::common::{TestEnv, words};
use crate::runtimes::{gpu_box, study};

/// `perfpipe run <name>.kdl --runtime sim --max-prompts 20` with the
/// stand-in guidellm 0.5.3 first on PATH and engines that answer at once.
fn run_sim(env: &TestEnv, name: &str) -> Output {
    let kdl = format!("{name}.kdl");
    let args = ["run", &kdl, "--runtime", "sim", "--max-prompts", "20"];
    let version = ("STANDIN_GUIDELLM_VERSION", "0.5.3");
    gpu_box(env, &args, &[version]).output().unwrap()
}

/// The study with `harness builtin` and without its `expect` blocks: the
/// page's numbers are guidellm's, and an experiment names expectations in
/// the vocabulary of its own harness (`report --published` and `verify` of
/// the declared experiment check them).
fn under_builtin(kdl: &str) -> String {
    let declared = "    harness guidellm version=\"0.5.3\"\n";
    assert!(kdl.contains(declared), "the study declares guidellm 0.5.3");
    let kdl = kdl.replace(declared, "    harness builtin\n");
    let mut kept = String::new();
    let mut in_expect = false;
    for line in kdl.lines() {
        let text = line.trim();
        if in_expect {
            in_expect = text != "}";
        } else if text.starts_with("expect ") && text.ends_with('{') {
            in_expect = true;
        } else {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// Runs the study as declared and checks that `runs` runs were measured by
/// guidellm, stored, and reported with a conclusion holding `shown`.
fn runs_under_guidellm(name: &str, runs: usize, shown: &str) {
    let env = study(name);
    let out = run_sim(&env, name);
    assert_eq!(out.status.code(), Some(0), "{}", words(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("ran {runs} (failed: 0)")),
        "{stderr}"
    );
    let calls = env.read("standin.log");
    let guidellm = calls.lines().filter(|l| l.starts_with("guidellm\t"));
    assert_eq!(
        guidellm.count(),
        runs,
        "every run went through guidellm: {calls}"
    );
    let results = env.results();
    assert_eq!(results.len(), runs, "one sample per run");
    for (dir, result) in &results {
        let metrics = &result["outcome"]["metrics"];
        assert_eq!(metrics["request_totals"]["successful"], 20, "{dir:?}");
    }
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("\n## Conclusion\n"), "{report}");
    assert!(report.contains(shown), "{report}");
}

/// Runs the study under the built-in harness and checks that `runs` runs
/// were measured, stored, and reported with a conclusion holding `shown`.
fn runs_under_builtin(name: &str, runs: usize, shown: &str) {
    let env = study(name);
    let kdl = format!("{name}.kdl");
    env.write(&kdl, &under_builtin(&env.read(&kdl)));
    let out = run_sim(&env, name);
    assert_eq!(out.status.code(), Some(0), "{}", words(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("ran {runs} (failed: 0)")),
        "{stderr}"
    );
    assert!(
        !env.path("standin.log").exists(),
        "no guidellm under builtin"
    );
    let results = env.results();
    assert_eq!(results.len(), runs, "one sample per run");
    for (dir, result) in &results {
        assert_eq!(result["outcome"]["metrics"]["completed"], 20, "{dir:?}");
    }
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("\n## Conclusion\n"), "{report}");
    assert!(report.contains(shown), "{report}");
}

// Each harness is a test of its own: the 9B study's rates (1 to 16 req/s)
// take about 45 s of schedule per harness, whatever the engine's speed.

#[test]
fn qwen3_5_35b_a3b_h200_runs_under_guidellm() {
    runs_under_guidellm("qwen3.5-35b-a3b-h200", 13, "| **Long Context Profile** |");
}

#[test]
fn qwen3_5_35b_a3b_h200_runs_under_builtin() {
    runs_under_builtin("qwen3.5-35b-a3b-h200", 13, "| **Long Context Profile** |");
}

#[test]
fn qwen3_5_9b_h100_latency_runs_under_guidellm() {
    runs_under_guidellm("qwen3.5-9b-h100-latency", 16, "Mean latency:");
}

#[test]
fn qwen3_5_9b_h100_latency_runs_under_builtin() {
    runs_under_builtin("qwen3.5-9b-h100-latency", 16, "Mean latency:");
}

#[test]
fn a_declared_client_that_is_not_installed_is_named_as_the_client() {
    let env = study("qwen3.5-35b-a3b-h200");
    // No stand-ins on PATH: guidellm is not installed.
    let out = env.run(&[
        "run",
        "qwen3.5-35b-a3b-h200.kdl",
        "--runtime",
        "sim",
        "--max-prompts",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = words(&out);
    assert!(
        err.contains("the benchmark client the experiment declares cannot be used")
            && err.contains("guidellm is not installed on this machine's PATH")
            && err.contains("or measure with `harness builtin`")
            && !err.contains("engine ready"),
        "{err}"
    );
}
