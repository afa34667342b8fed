//! `perfpipe report --format md|json|csv` and `perfpipe verify` over a store
//! built from fixed results: measured numbers with known values, two samples
//! where noise matters, and two drivers where the context must warn.

use serde_json::{Value, json};

use crate::common::TestEnv;

const EXPERIMENT: &str = r#"experiment "fixed" {
    title "Fixed results"
    hardware "nvidia-a100-sxm4-80gb" gpus=2
    model "Qwen/Qwen3-14B"
    runtime sim
    engine vllm version="0.11.0"
    engine sglang version="0.5.5.post1"
    workload chat {
        title "Chat"
        dataset random input=64 output=8 seed=1
        prompts 10
    }
    workload long {
        title "Long Prompt"
        dataset random input=512 output=8 seed=1
        prompts 10
    }
    step base engine=vllm gpus=1 {
        expect chat {
            total_token_throughput 1000.00
            mean_tpot_ms 10.00
        }
        expect long {
            total_token_throughput 2000.00
        }
    }
    step fast engine=sglang gpus=1 {
        args "--chunked-prefill-size" "4096"
    }
    step broken engine=vllm model="Qwen/Qwen3-14B-FP8" gpus=1 {
        workloads chat
        expect-failure chat "RuntimeError: Unsupported SM version"
    }
    compare "Engine Selection" baseline=base workload=chat {
        candidate fast broken
    }
    conclusion baseline=base optimized=fast
    report delta-decimals=2 tolerance=5 {
        summary "Engine Selection"
        summary "Batching"
    }
}"#;

const BLOCK: &str = "============ Serving Benchmark Result ============
Successful requests:                     10
Benchmark duration (s):                  1.00
Total input tokens:                      640
Total generated tokens:                  80
Request throughput (req/s):              10.00
Output token throughput (tok/s):         80.00
Total Token throughput (tok/s):          720.00
---------------Time to First Token----------------
Mean TTFT (ms):                          1.00
Median TTFT (ms):                        1.00
P99 TTFT (ms):                           1.00
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          1.00
Median TPOT (ms):                        1.00
P99 TPOT (ms):                           1.00
---------------Inter-token Latency----------------
Mean ITL (ms):                           1.00
Median ITL (ms):                         1.00
P99 ITL (ms):                            1.00
==================================================
";

/// A measured sample with these numbers, as `perfpipe run` would have stored it.
fn measured(key: &str, tps: f64, tpot: f64, driver: &str) -> Value {
    let mut metrics = json!({
        "completed": 10, "failed": 0, "duration": 1.0, "total_input_tokens": 640,
        "total_output_tokens": 80, "request_throughput": 10.0, "output_throughput": tps / 9.0,
        "total_token_throughput": tps, "max_output_tokens_per_s": 80.0,
        "max_concurrent_requests": 10.0, "request_goodput": null
    });
    for (m, v) in [
        ("ttft", 50.0),
        ("tpot", tpot),
        ("itl", tpot),
        ("e2el", 120.0),
    ] {
        for s in ["mean", "median", "std", "p99"] {
            metrics[format!("{s}_{m}_ms")] = json!(v);
        }
    }
    json!({
        "key": key,
        "outcome": {"status": "success", "metrics": metrics, "warnings": []},
        "provenance": {
            "kind": "measured", "host": "gpu-box-1", "perfpipe_version": "0.1.0",
            "started_at": "2026-11-21T10:00:00Z", "finished_at": "2026-11-21T10:05:00Z",
            "gpu": "NVIDIA A100-SXM4-80GB", "gpu_indices": [0], "driver": driver,
            "cuda_version": "12.8"
        },
        "engine_command": []
    })
}

fn failed(key: &str) -> Value {
    json!({
        "key": key,
        "outcome": {"status": "failure", "kind": "deterministic",
            "error": "RuntimeError: Unsupported SM version for FP8 block scaling GEMM", "log_tail": ""},
        "provenance": {
            "kind": "measured", "host": "gpu-box-1", "perfpipe_version": "0.1.0",
            "started_at": "2026-11-21T10:00:00Z", "finished_at": "2026-11-21T10:05:00Z",
            "gpu": "NVIDIA A100-SXM4-80GB", "gpu_indices": [0], "driver": "570.86.15",
            "cuda_version": "12.8"
        },
        "engine_command": []
    })
}

/// Adds one sample to the run's entry (through `perfpipe import`, which makes
/// the entry), then replaces it with `result(key)`.
fn store(env: &TestEnv, step: &str, workload: &str, result: impl Fn(&str) -> Value) {
    let before = env.samples();
    let out = env.run(&[
        "import",
        "fixed.kdl",
        "--step",
        step,
        "--workload",
        workload,
        "--from",
        "block.txt",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let new = env
        .samples()
        .into_iter()
        .find(|s| !before.contains(s))
        .expect("import adds a sample");
    let (key, id) = new.split_once('/').unwrap();
    let path = format!("store/entries/{}/{key}/samples/{id}/result.json", &key[..2]);
    env.write(&path, &result(key).to_string());
}

fn fixed_store() -> TestEnv {
    let env = TestEnv::new();
    env.write("fixed.kdl", EXPERIMENT);
    env.write("block.txt", BLOCK);
    let old = "570.86.15";
    store(&env, "base", "chat", |k| measured(k, 1020.0, 10.2, old));
    store(&env, "base", "chat", |k| measured(k, 1040.0, 10.4, old));
    store(&env, "base", "long", |k| measured(k, 2300.0, 20.0, old));
    store(&env, "fast", "chat", |k| {
        measured(k, 1060.0, 12.0, "580.65.06")
    });
    store(&env, "fast", "chat", |k| {
        measured(k, 1080.0, 12.2, "580.65.06")
    });
    store(&env, "fast", "long", |k| measured(k, 2500.0, 22.0, old));
    store(&env, "broken", "chat", failed);
    env
}

fn stdout(out: &std::process::Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A report of unchanged results leaves its files as they are: the chart,
/// the slowest part of a no-op `run`, is drawn again only when what it
/// shows changed or its files are not the ones drawn for it.
#[test]
fn the_chart_is_drawn_again_only_when_what_it_shows_changes() {
    use std::os::unix::fs::MetadataExt;
    let env = fixed_store();
    let args = ["report", "fixed.kdl", "--out", "out/fixed.md"];
    let first = stdout(&env.run(&args));
    let files = ["out/fixed.md", "out/fixed.svg", "out/fixed.png"];
    let identities = || -> Vec<(u64, i64, i64)> {
        files
            .iter()
            .map(|f| {
                let m = std::fs::metadata(env.path(f)).unwrap();
                (m.ino(), m.mtime(), m.mtime_nsec())
            })
            .collect()
    };
    let drawn = identities();
    assert_eq!(stdout(&env.run(&args)), first);
    assert_eq!(identities(), drawn, "unchanged results rewrote the report");

    std::fs::write(env.path("out/fixed.png"), b"not a png").unwrap();
    assert_eq!(stdout(&env.run(&args)), first);
    let png = std::fs::read(env.path("out/fixed.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");

    let svg = env.read("out/fixed.svg");
    store(&env, "fast", "long", |k| {
        measured(k, 2900.0, 22.0, "570.86.15")
    });
    assert_ne!(stdout(&env.run(&args)), first);
    assert_ne!(env.read("out/fixed.svg"), svg, "new results, the old chart");
}

/// The report recommends the conclusion's optimized step (`fast`); where
/// the measured numbers put another first, the report says which, by how
/// much and against the noise, rather than leaving the ranking to disagree
/// without a word.
#[test]
fn a_measured_leader_other_than_the_recommendation_is_named_with_its_gap_against_the_noise() {
    let env = fixed_store();
    let agreed = stdout(&env.run(&["report", "fixed.kdl"]));
    assert!(!agreed.contains("ranks first on"), "{agreed}");
    // A third sample of `base` on chat: 1020, 1040 and 1300, mean 1120,
    // above `fast`'s 1070 but within the spread of the samples.
    store(&env, "base", "chat", |k| {
        measured(k, 1300.0, 10.0, "570.86.15")
    });
    let md = stdout(&env.run(&["report", "fixed.kdl"]));
    let said: Vec<&str> = md
        .lines()
        .filter(|l| l.contains("ranks first on"))
        .collect();
    insta::assert_snapshot!(said.join("\n"), @"Measured, `base` ranks first on Chat, not the recommended `fast`: 1120.00 vs 1070.00 total tokens/s, 4.7% more, within the run-to-run noise (±17.0% at 95%, over 3 and 2 samples) (0.3× it): the measurements do not tell them apart.");
}

#[test]
fn markdown_json_and_csv_carry_the_same_numbers() {
    let env = fixed_store();
    let md = stdout(&env.run(&["report", "fixed.kdl", "--out", "out/fixed.md"]));
    insta::with_settings!({ filters => crate::common::filters() }, {
        insta::assert_snapshot!("fixed_md", md);
    });
    assert_eq!(env.read("out/fixed.md"), md);
    assert!(
        md.contains("![Total TPS per benchmark case](fixed.png)"),
        "{md}"
    );
    let png = std::fs::read(env.path("out/fixed.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(env.read("out/fixed.svg").contains("Long Prompt"));

    let json_text = stdout(&env.run(&["report", "fixed.kdl", "--format", "json"]));
    let v: Value = serde_json::from_str(&json_text).unwrap();
    let row = &v["analysis"]["conclusion"]["rows"][0];
    assert_eq!(row["workload"], "chat");
    assert_eq!(
        (row["base_tps"].as_f64(), row["opt_tps"].as_f64()),
        (Some(1030.0), Some(1070.0))
    );
    assert_eq!(
        (row["base_n"].as_u64(), row["within_noise"].as_bool()),
        (Some(2), Some(false))
    );
    insta::with_settings!({ filters => crate::common::filters() }, {
        insta::assert_snapshot!("fixed_json", json_text);
    });

    let csv = stdout(&env.run(&["report", "fixed.kdl", "--format", "csv"]));
    assert!(
        csv.contains("conclusion,,fast,chat,delta_pct,3.8834951456310676,,2,,,\n"),
        "{csv}"
    );
    assert!(
        csv.contains(
            "run,,base,chat,total_token_throughput,1030,,2,14.142135623730951,measured,\n"
        ),
        "{csv}"
    );
    assert!(
        csv.contains(
            "published,,base,long,total_token_throughput,2300.00,2000.00,,,measured,OUTSIDE\n"
        ),
        "{csv}"
    );
    insta::with_settings!({ filters => crate::common::filters() }, {
        insta::assert_snapshot!("fixed_csv", csv);
    });
}

#[test]
fn verify_passes_within_the_tolerance_and_fails_outside_it() {
    let env = fixed_store();
    // chat: 1030 against 1000 (+3%), inside 5%; long: 2300 against 2000 (+15%), outside.
    let all = env.run(&["verify", "fixed.kdl", "--metrics", "total_token_throughput"]);
    assert_eq!(all.status.code(), Some(4));
    insta::assert_snapshot!(String::from_utf8_lossy(&all.stdout), @r"
| Step | Workload | Metric | Published | Measured | Difference | Source | Verdict |
|---|---|---|---:|---:|---:|---|---|
| base | chat | total_token_throughput | 1000.00 | 1030.00 | +3.00% | measured | within |
| base | long | total_token_throughput | 2000.00 | 2300.00 | +15.00% | measured | OUTSIDE |
    ");
    assert!(
        String::from_utf8_lossy(&all.stderr)
            .contains("2 checks within ±5%: 1 within, 1 outside, 0 missing")
    );
    let loose = env.run(&["verify", "fixed.kdl", "--tolerance", "20%"]);
    assert_eq!(
        loose.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&loose.stdout)
    );
    let failures = ["verify", "fixed.kdl", "--metrics", "mean_tpot_ms,failure"];
    let tpot = env.run(&failures);
    assert_eq!(
        tpot.status.code(),
        Some(0),
        "10.3 ms is within 5% of 10.00, and the failure is the published one: {}",
        String::from_utf8_lossy(&tpot.stderr)
    );
    insta::assert_snapshot!(String::from_utf8_lossy(&tpot.stdout), @r"
    | Step | Workload | Metric | Published | Measured | Difference | Source | Verdict |
    |---|---|---|---:|---:|---:|---|---|
    | base | chat | mean_tpot_ms | 10.00 | 10.30 | +3.00% | measured | within |
    | broken | chat | failure | RuntimeError: Unsupported SM version | RuntimeError: Unsupported SM version for FP8 block scaling GEMM | - | measured | within |
    ");

    // The broken step failing for another reason is no longer the published failure.
    let (dir, mut result) = env
        .results()
        .into_iter()
        .find(|(_, r)| r["outcome"]["status"] == "failure")
        .expect("the broken step's failure");
    result["outcome"]["error"] = json!("torch.OutOfMemoryError: CUDA out of memory");
    std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
    let other = env.run(&failures);
    assert_eq!(
        other.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
    insta::assert_snapshot!(String::from_utf8_lossy(&other.stdout), @r"
    | Step | Workload | Metric | Published | Measured | Difference | Source | Verdict |
    |---|---|---|---:|---:|---:|---|---|
    | base | chat | mean_tpot_ms | 10.00 | 10.30 | +3.00% | measured | within |
    | broken | chat | failure | RuntimeError: Unsupported SM version | torch.OutOfMemoryError: CUDA out of memory | - | measured | OUTSIDE |
    ");
    insta::assert_snapshot!(String::from_utf8_lossy(&other.stderr), @"perfpipe: 2 checks within ±5%: 1 within, 1 outside, 0 missing");
}

/// A capped run reports to a file of its own and says it is capped; `report`
/// without `--runtime` shows the runtime the store has results under
/// (measured before simulated), says which, and asks when both measured
/// runtimes have results.
#[test]
fn capped_runs_report_apart_and_report_finds_the_runtime_with_results() {
    let env = TestEnv::new();
    let study = |runtime: &str| {
        format!(
            r#"experiment "cap" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    {runtime}
    engine vllm version="0.11.0"
    workload short {{ dataset random input=32 output=4 seed=1; prompts 10; }}
    step vllm engine=vllm gpus=1
}}"#
        )
    };
    env.write("cap.kdl", &study(""));
    stdout(&env.run(&["run", "cap.kdl", "--runtime", "sim"]));
    let full = env.read("reports/cap.md");
    let capped = env.run(&["run", "cap.kdl", "--runtime", "sim", "--max-prompts", "3"]);
    assert!(
        String::from_utf8_lossy(&capped.stderr)
            .contains("report written to `reports/cap.max-prompts-3.md`"),
        "{}",
        String::from_utf8_lossy(&capped.stderr)
    );
    assert_eq!(env.read("reports/cap.md"), full, "the study's report stays");
    let head = |text: &str| text.lines().take(5).collect::<Vec<_>>().join("\n");
    insta::assert_snapshot!(head(&env.read("reports/cap.max-prompts-3.md")), @r"
    # cap

    Experiment `cap` · hardware 1 × `nvidia-a100-sxm4-80gb` · runtime `sim` · numbers: simulated

    > **Capped.** Every workload sends at most 3 prompts (`--max-prompts 3`): a smoke test, not the study's numbers.
    ");
    insta::assert_snapshot!(head(&full), @r"
    # cap

    Experiment `cap` · hardware 1 × `nvidia-a100-sxm4-80gb` · runtime `sim` · numbers: simulated

    > **Simulated.** These numbers come from perfpipe's simulated engine: they show that the pipeline runs end to end and move with flags and workloads, but they do not predict any GPU.
    ");

    // `report` finds the simulated results without `--runtime sim`.
    let report = |env: &TestEnv| env.run(&["report", "cap.kdl"]);
    let sim = report(&env);
    assert!(
        stdout(&sim).contains("| `vllm` | `short` | `"),
        "{}",
        stdout(&sim)
    );
    insta::assert_snapshot!(String::from_utf8_lossy(&sim.stderr), @"perfpipe: reporting the results under runtime `sim`, the one the store holds results of (`--runtime` chooses)");

    // Imported numbers are filed under the experiment's runtime (docker):
    // measured runtimes come first.
    env.write("block.txt", BLOCK);
    let import = [
        "import",
        "cap.kdl",
        "--step",
        "vllm",
        "--workload",
        "short",
        "--from",
        "block.txt",
    ];
    stdout(&env.run(&import));
    let docker = report(&env);
    assert!(
        stdout(&docker).contains("runtime `docker`"),
        "{}",
        stdout(&docker)
    );
    insta::assert_snapshot!(String::from_utf8_lossy(&docker.stderr), @"perfpipe: reporting the results under runtime `docker`, the one the store holds results of (`--runtime` chooses)");

    env.write("cap.kdl", &study("runtime local"));
    stdout(&env.run(&import));
    let both = report(&env);
    assert_eq!(both.status.code(), Some(2));
    insta::with_settings!({ filters => crate::common::filters() }, {
        insta::assert_snapshot!(crate::common::render(&both), @r"
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
          × the store holds results of this experiment under both `docker` and `local`
          help: name the runtime: `perfpipe report cap.kdl --runtime docker` or
                `perfpipe report cap.kdl --runtime local`
        ");
    });
    let named = env.run(&["report", "cap.kdl", "--runtime", "local"]);
    assert!(stdout(&named).contains("runtime `local`"));
}

/// After only a capped run, plain `report` shows the capped results and says
/// so (it said the store held nothing); `plan` and `explain`, which plan what
/// `run` would run, say where they are and how to see them.
#[test]
fn only_capped_results_are_shown_by_report_and_named_by_plan_and_explain() {
    let env = TestEnv::new();
    env.write(
        "cap.kdl",
        r#"experiment "cap" {
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload short { dataset random input=32 output=4 seed=1; prompts 10; }
    step vllm engine=vllm gpus=1
}"#,
    );
    stdout(&env.run(&["run", "cap.kdl", "--runtime", "sim", "--max-prompts", "3"]));
    let report = env.run(&["report", "cap.kdl"]);
    assert_eq!(
        report.status.code(),
        Some(0),
        "{}",
        crate::common::stderr(&report)
    );
    assert!(
        stdout(&report).contains("(`--max-prompts 3`)")
            && stdout(&report).contains("| `vllm` | `short` | `"),
        "{}",
        stdout(&report)
    );
    insta::assert_snapshot!(crate::common::stderr(&report), @"perfpipe: the store holds no full-size result of this experiment; reporting the 1 run capped at 3 prompts under runtime `sim` (`--max-prompts 3`; `--runtime` and `--max-prompts` choose)");
    for command in ["plan", "explain"] {
        let out = env.run(&[command, "cap.kdl"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            crate::common::stderr(&out)
        );
        assert!(
            crate::common::stderr(&out).contains(&format!(
                "perfpipe: the store holds no full-size run of this experiment, but 1 run capped at 3 prompts under runtime `sim`\n  help: `perfpipe {command} cap.kdl --runtime sim --max-prompts 3` shows those"
            )),
            "{}",
            crate::common::stderr(&out)
        );
    }
}
