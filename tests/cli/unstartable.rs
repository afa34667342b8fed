//! Engines an experiment may declare but perfpipe cannot start (MindIE; any
//! engine on Ascend NPUs outside the simulator): the experiment plans, reports
//! its published numbers and imports, and `run` refuses before anything starts.

use crate::common::{TestEnv, stderr, stdout, words};

fn ascend() -> TestEnv {
    let env = TestEnv::new();
    env.copy_fixture("experiments/ascend.kdl", "ascend.kdl");
    env.copy_fixture("datasets/sharegpt-tiny.json", "sharegpt-tiny.json");
    env
}

#[test]
fn an_experiment_with_mindie_plans_and_reports_its_published_numbers() {
    let env = ascend();
    let plan = env.run(&["plan", "ascend.kdl"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    assert!(stdout(&plan).contains("mindie"), "{}", stdout(&plan));
    let report = env.run(&["report", "ascend.kdl", "--published"]);
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let text = stdout(&report);
    assert!(
        text.contains("Result: MindIE (5634.45 tok/s) > vLLM-Ascend (3143.94 tok/s)"),
        "{text}"
    );
    assert!(text.contains("`mindie serve Qwen/Qwen3-8B`"), "{text}");
}

#[test]
fn run_refuses_mindie_before_anything_starts() {
    let env = ascend();
    for runtime in ["sim", "docker"] {
        let out = env.run(&["run", "ascend.kdl", "--runtime", runtime]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = words(&out);
        // The first step it cannot start, in declared order: under docker,
        // vLLM-Ascend too (no Ascend NPUs); under sim, MindIE.
        let (step, engine) = if runtime == "sim" {
            ("mindie", "MindIE")
        } else {
            ("vllm", "vLLM-Ascend")
        };
        assert!(
            err.contains(&format!(
                "step `{step}` cannot run: perfpipe cannot start {engine} under `--runtime {runtime}`"
            )),
            "{err}"
        );
        assert!(stderr(&out).contains("help:"), "a hint: {err}");
        assert!(err.contains("`report --published`"), "{err}");
    }
    // Nothing started, nothing written: no lockfile, no store entry, no report.
    for dir in ["lockfiles", "store", "reports"] {
        assert!(!env.path(dir).exists(), "`{dir}` was written");
    }
}

#[test]
fn vllm_ascend_runs_on_the_simulated_engine() {
    let env = ascend();
    let text = env.read("ascend.kdl").replace(
        "compare \"Engine Selection\" baseline=vllm {\n        candidate mindie\n    }\n    conclusion baseline=vllm optimized=mindie",
        "",
    );
    let text = text.replace(
        &text[text.find("    step mindie").unwrap()..text.find("    report {").unwrap()],
        "",
    );
    assert!(!text.contains("mindie engine"), "{text}");
    env.write(
        "ascend.kdl",
        &text.replace("engine mindie version=\"2.1RC1\"\n", ""),
    );
    let out = env.run_within(
        60,
        &[
            "run",
            "ascend.kdl",
            "--runtime",
            "sim",
            "--max-prompts",
            "4",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.results().len(), 1);
}
