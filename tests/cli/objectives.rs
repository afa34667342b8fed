//! Studies that optimize mean end-to-end latency: comparisons and the
//! conclusion rank by it, lowest first, and print speed ratios as the latency
//! pages do ("Mean latency: 1.66s/req → 0.62s/req (2.7x faster)").

use crate::common::{TestEnv, stderr, stdout};

fn latency_report() -> String {
    let env = TestEnv::new();
    env.copy_fixture("experiments/latency.kdl", "latency.kdl");
    env.copy_fixture("datasets/sharegpt-tiny.json", "sharegpt-tiny.json");
    let out = env.run(&["report", "latency.kdl", "--published"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

#[test]
fn a_latency_study_ranks_by_mean_latency_and_prints_how_much_faster() {
    let report = latency_report();
    // The page's conclusion cells (its BS=8 baseline prints 1.78: the one
    // cell where TTFT + TPOT × (tokens per request − 1) gives 1.77).
    for row in [
        "| **ShareGPT BS=1** | Mean latency: 1.66s/req | Mean latency: 0.62s/req <span style=\"background-color:lightgreen;\">(2.7x faster)</span> |",
        "| **ShareGPT BS=4** | Mean latency: 1.68s/req | Mean latency: 0.77s/req <span style=\"background-color:lightgreen;\">(2.2x faster)</span> |",
        "| **ShareGPT BS=8** | Mean latency: 1.77s/req | Mean latency: 1.10s/req <span style=\"background-color:lightgreen;\">(1.6x faster)</span> |",
    ] {
        assert!(report.contains(row), "{row}\n{report}");
    }
    // The page: "SGLang(1.61 s) < vLLM (1.68 s) > TensorRT-LLM (1.74 s)".
    assert!(
        report.contains(
            "Mean latency per request: SGLang (1.61 s) < vLLM (1.68 s) < TensorRT-LLM (1.74 s)"
        ),
        "{report}"
    );
    insta::assert_snapshot!(report);
}

#[test]
fn a_latency_study_charts_mean_latency() {
    let env = TestEnv::new();
    env.copy_fixture("experiments/latency.kdl", "latency.kdl");
    env.copy_fixture("datasets/sharegpt-tiny.json", "sharegpt-tiny.json");
    let out = env.run(&[
        "report",
        "latency.kdl",
        "--published",
        "--out",
        "r/latency.md",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        env.read("r/latency.md")
            .contains("![Mean latency per benchmark case](latency.png)")
    );
    let svg = env.read("r/latency.svg");
    assert!(svg.contains("Mean latency (s/req)"), "{svg}");
    // The bars are seconds per request: BS=1's 1.66 and 0.62.
    let labels: Vec<&str> = svg.lines().map(str::trim).collect();
    assert!(
        labels.contains(&"1.66") && labels.contains(&"0.62"),
        "{svg}"
    );
}

/// From measured results (the simulated engine's), the ranking is by the
/// run's own `mean_e2el_ms`, lowest first.
#[test]
fn stored_results_rank_by_their_measured_end_to_end_latency() {
    let env = TestEnv::new();
    env.write(
        "sim-latency.kdl",
        r#"experiment "sim-latency" {
    hardware "nvidia-h100-sxm5-80gb" gpus=1
    model "Qwen/Qwen3-8B"
    runtime sim
    engine vllm version="0.11.0"
    engine sglang version="0.5.3.post3"
    objective latency
    workload w {
        dataset random input=64 output=16 seed=1
        prompts 6
        concurrency 2
    }
    step vllm engine=vllm gpus=1
    step sglang engine=sglang gpus=1
    compare "Engine Selection" baseline=vllm { candidate sglang; }
    conclusion baseline=vllm optimized=sglang
}"#,
    );
    let out = env.run_within(60, &["run", "sim-latency.kdl"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = stdout(&out);
    // The numbers ranked: each run's own mean E2EL, from the report's JSON.
    let json = env.run(&["report", "sim-latency.kdl", "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let e2el = |step: &str| -> f64 {
        let runs = json["analysis"]["runs"].as_array().unwrap();
        let run = runs.iter().find(|r| r["step"] == step).unwrap();
        run["metrics"]["mean_e2el_ms"].as_f64().unwrap()
    };
    let (vllm, sglang) = (e2el("vllm"), e2el("sglang"));
    assert_ne!(vllm, sglang, "a ranking needs two different latencies");
    let s = |ms: f64| format!("{:.2}", ms / 1000.0);
    let mut ranked = [("vLLM", vllm), ("SGLang", sglang)];
    ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
    let ranking = format!(
        "Mean latency per request: {} ({} s) < {} ({} s)",
        ranked[0].0,
        s(ranked[0].1),
        ranked[1].0,
        s(ranked[1].1)
    );
    assert!(report.lines().any(|l| l == ranking), "{ranking}\n{report}");
    // The conclusion: how many times faster SGLang serves a request than vLLM.
    let (ratio, colour) = if sglang <= vllm {
        (format!("{:.1}x faster", vllm / sglang), "lightgreen")
    } else {
        (format!("{:.1}x slower", sglang / vllm), "#ffd6d6")
    };
    let conclusion = format!(
        "| Mean latency: {}s/req | Mean latency: {}s/req <span style=\"background-color:{colour};\">({ratio})</span> |",
        s(vllm),
        s(sglang),
    );
    assert!(report.contains(&conclusion), "{conclusion}\n{report}");
}
