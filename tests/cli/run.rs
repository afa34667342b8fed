//! `perfpipe run` end to end on the simulated engine.

use std::time::{Duration, Instant};

use crate::common::{TestEnv, live_processes, stderr, stdout};

/// `(step, workload)` of every run the executor started, from its progress lines.
fn started(output: &std::process::Output) -> Vec<String> {
    stderr(output)
        .lines()
        .filter(|l| l.starts_with('['))
        .map(|l| {
            l.split_once("] ")
                .unwrap()
                .1
                .rsplit_once(" (")
                .unwrap()
                .0
                .replace('`', "")
        })
        .collect()
}

#[test]
fn runs_every_run_once_then_finds_them_cached() {
    let env = TestEnv::tiny();
    let first = env.run(&["run", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let mut runs = started(&first);
    runs.sort();
    assert_eq!(
        runs,
        [
            "trtllm × chat",
            "trtllm × short",
            "trtllm-fp8 × chat",
            "vllm × chat",
            "vllm × short",
            "vllm-seqs-64 × short",
            "vllm-seqs-8 × short",
        ]
    );
    let report = stdout(&first);
    assert!(report.contains("numbers: simulated"), "{report}");
    assert!(
        report.contains("3 published numbers are not compared with simulated ones"),
        "{report}"
    );
    assert!(report.contains("Result: trtllm ×2 ("), "{report}");
    assert!(
        report
            .contains("failed: `RuntimeError: Unsupported SM version for FP8 block scaling GEMM`")
    );
    assert!(
        stderr(&first).contains(
            "failed as the experiment expects: RuntimeError: Unsupported SM version for FP8 block scaling GEMM"
        ),
        "a declared failure is not reported as an error: {}",
        stderr(&first)
    );
    assert_eq!(env.read("reports/tiny.md"), report);
    // Seven runs, seven committed samples (the deterministic failure included), nothing half-written.
    let samples = env.samples();
    assert_eq!(samples.len(), 7, "{samples:?}");
    assert_eq!(std::fs::read_dir(env.path("store/tmp")).unwrap().count(), 0);

    let plan = env.run(&["plan", "tiny.kdl", "--runtime", "sim"]);
    assert!(
        stdout(&plan).contains("7 runs: 6 cached, 1 failed, 0 missing; 0 to run"),
        "{}",
        stdout(&plan)
    );

    let second = env.run(&["run", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(second.status.code(), Some(0));
    assert!(started(&second).is_empty(), "{}", stderr(&second));
    assert_eq!(
        env.samples(),
        samples,
        "a cached run must not start an engine"
    );
    assert_eq!(stdout(&second), report, "the same report, from the store");
}

#[test]
fn editing_one_flag_reruns_exactly_the_runs_of_that_step() {
    let env = TestEnv::tiny();
    assert_eq!(
        env.run(&["run", "tiny.kdl", "--runtime", "sim"])
            .status
            .code(),
        Some(0)
    );

    // Renaming steps, reformatting and comments keep every key.
    let text = env.read("tiny.kdl");
    let renamed = text
        .replace(
            "step vllm engine",
            "// renamed\n    step   vllm-baseline   engine",
        )
        .replace("baseline=vllm ", "baseline=vllm-baseline ");
    env.write("tiny.kdl", &renamed);
    let again = env.run(&["run", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(started(&again).is_empty(), "{}", stderr(&again));

    env.write(
        "tiny.kdl",
        &renamed.replace("--max_num_tokens=4096", "--max_num_tokens=8192"),
    );
    let edited = env.run(&["run", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(edited.status.code(), Some(0), "{}", stderr(&edited));
    assert_eq!(started(&edited), ["trtllm × chat", "trtllm × short"]);
}

#[test]
fn an_unexpected_failure_is_stored_and_exits_1() {
    let env = TestEnv::tiny();
    let text = env.read("tiny.kdl");
    let start = text.find("        expect-failure").unwrap();
    let end = start + text[start..].find('\n').unwrap() + 1;
    env.write("tiny.kdl", &format!("{}{}", &text[..start], &text[end..]));
    let out = env.run(&["run", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // Recorded, so the next run does not retry it (but still reports it).
    let again = env.run(&["run", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(started(&again).is_empty());
    let retried = env.run(&["run", "tiny.kdl", "--runtime", "sim", "--retry-failed"]);
    assert_eq!(started(&retried), ["trtllm-fp8 × chat"]);
}

#[test]
fn ctrl_c_stops_the_engine_and_commits_nothing() {
    let env = TestEnv::new();
    let tag = format!(
        "sigint{}x{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    );
    env.write(
        "slow.kdl",
        &format!(
            r#"experiment "slow" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "test/{tag}-14B"
    engine vllm version="0.11.0"
    workload long-output {{
        dataset random input=16 output=8000
        prompts 8
    }}
    step vllm engine=vllm gpus=1
}}"#
        ),
    );
    let mut child = env
        .cmd(&["run", "slow.kdl", "--runtime", "sim"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while live_processes(&tag).is_empty() {
        assert!(Instant::now() < deadline, "the engine never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Let the benchmark start streaming.
    std::thread::sleep(Duration::from_millis(1500));
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "perfpipe did not stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    assert_eq!(
        live_processes(&tag),
        Vec::<u32>::new(),
        "an engine survived Ctrl-C"
    );
    assert!(
        env.samples().is_empty(),
        "an interrupted run must not be committed"
    );
    assert_eq!(std::fs::read_dir(env.path("store/tmp")).unwrap().count(), 0);
}

#[test]
fn each_sample_keeps_a_journal_its_metrics_can_be_recomputed_from() {
    use perfpipe::metrics::{MetricOptions, RequestRecord, compute};

    let env = TestEnv::tiny();
    assert_eq!(
        env.run(&["run", "tiny.kdl", "--runtime", "sim"])
            .status
            .code(),
        Some(0)
    );
    let mut checked = 0;
    for (dir, result) in env.results() {
        if result["outcome"]["status"] != "success" {
            continue;
        }
        let journal = std::fs::read_to_string(dir.join("logs/requests.jsonl")).unwrap();
        let records: Vec<RequestRecord> = journal
            .lines()
            .map(|l| {
                serde_json::from_value(
                    serde_json::from_str::<serde_json::Value>(l).unwrap()["record"].clone(),
                )
                .unwrap()
            })
            .collect();
        let stored = &result["outcome"]["metrics"];
        let again = compute(
            &records,
            stored["duration"].as_f64().unwrap(),
            &MetricOptions::default(),
        );
        assert_eq!(again.completed, stored["completed"].as_u64().unwrap());
        assert_eq!(
            again.total_output_tokens,
            stored["total_output_tokens"].as_u64().unwrap()
        );
        assert!((again.mean_ttft_ms - stored["mean_ttft_ms"].as_f64().unwrap()).abs() < 1e-6);
        assert!((again.p99_itl_ms - stored["p99_itl_ms"].as_f64().unwrap()).abs() < 1e-6);
        checked += 1;
    }
    assert_eq!(checked, 6, "every successful run has a journal");
}

#[test]
fn a_dotted_file_name_is_kept_whole_in_its_lockfile_and_report() {
    let env = TestEnv::new();
    let study = |name: &str, seed: u32| {
        format!(
            r#"experiment "{name}" {{
    hardware "nvidia-h100-sxm5-80gb" gpus=1
    model "Qwen/Qwen3-8B"
    engine vllm version="0.11.0"
    workload short {{ dataset random input=16 output=4 seed={seed}; prompts 4; }}
    step vllm engine=vllm gpus=1
}}"#
        )
    };
    env.write("qwen3.5-9b-latency.kdl", &study("latency", 1));
    env.write("qwen3.5-9b-throughput.kdl", &study("throughput", 2));
    for file in ["qwen3.5-9b-latency.kdl", "qwen3.5-9b-throughput.kdl"] {
        let run = env.run(&["run", file, "--runtime", "sim"]);
        assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    }
    let names = |dir: &str| {
        let mut names: Vec<String> = std::fs::read_dir(env.path(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names("lockfiles"),
        ["qwen3.5-9b-latency.lock", "qwen3.5-9b-throughput.lock"]
    );
    assert!(names("reports").contains(&"qwen3.5-9b-latency.md".to_owned()));
    assert!(names("reports").contains(&"qwen3.5-9b-throughput.md".to_owned()));

    // A lockfile written where earlier versions put it still pins the study.
    std::fs::rename(
        env.path("lockfiles/qwen3.5-9b-latency.lock"),
        env.path("lockfiles/qwen3.lock"),
    )
    .unwrap();
    let locked = env.run(&[
        "run",
        "qwen3.5-9b-latency.kdl",
        "--runtime",
        "sim",
        "--locked",
    ]);
    assert_eq!(locked.status.code(), Some(0), "{}", stderr(&locked));
    assert!(stderr(&locked).contains("0 to run"), "{}", stderr(&locked));
    std::fs::remove_file(env.path("lockfiles/qwen3.5-9b-throughput.lock")).unwrap();
    let other = env.run(&["plan", "qwen3.5-9b-throughput.kdl", "--runtime", "sim"]);
    assert!(
        stdout(&other).contains("lockfile `lockfiles/qwen3.5-9b-throughput.lock`: none yet"),
        "another study's old lockfile is not this one's: {}",
        stdout(&other)
    );
    let lock = env.run(&["lock", "qwen3.5-9b-latency.kdl", "--offline"]);
    assert_eq!(lock.status.code(), Some(0), "{}", stderr(&lock));
    assert!(
        stderr(&lock)
            .contains("wrote `lockfiles/qwen3.5-9b-latency.lock` from `lockfiles/qwen3.lock`"),
        "{}",
        stderr(&lock)
    );
    assert_eq!(
        env.read("lockfiles/qwen3.5-9b-latency.lock"),
        env.read("lockfiles/qwen3.lock")
    );
}
