//! `perfpipe run` end to end on the simulated engine.

use std::time::{Duration, Instant};

use crate::common::{TestEnv, live_processes, stderr, stdout};
use crate::perfpipe_snapshot;

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
    assert!(
        stderr(&first).contains("perfpipe: ran 7 (failed: 1, as the experiment expects);"),
        "{}",
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
    // The whole table's shape: its columns, each run's status and detail.
    perfpipe_snapshot!("plan_after_a_run", plan);

    // The experiment's runtime, `docker`, has nothing stored: `plan` and
    // `explain` say where the runs are.
    for command in ["plan", "explain"] {
        let docker = env.run(&[command, "tiny.kdl"]);
        assert_eq!(docker.status.code(), Some(0), "{}", stderr(&docker));
        assert!(
            stderr(&docker).contains(&format!(
                "perfpipe: the store holds no run of this experiment under runtime `docker`, but 7 runs under `sim`\n  help: `perfpipe {command} tiny.kdl --runtime sim` shows those"
            )),
            "{}",
            stderr(&docker)
        );
    }
    assert!(!stderr(&plan).contains("holds no run"), "{}", stderr(&plan));

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
    let err = stderr(&out);
    assert!(
        err.contains("perfpipe: ran 7 (failed: 1, unexpectedly);"),
        "{err}"
    );
    // The failure names the logs to read, and `store path` lists them too.
    let (_, after) = err
        .split_once(
            "perfpipe: 1 run failed where the experiment expects no failure; the logs say why:\n",
        )
        .unwrap_or_else(|| panic!("{err}"));
    let named = after.lines().next().unwrap();
    let logs = named
        .strip_prefix("  `trtllm-fp8` × `chat`: ")
        .unwrap_or_else(|| panic!("{named}"));
    let logs: Vec<&str> = logs.split(", ").collect();
    assert!(
        logs.iter().any(|l| l.ends_with("/logs/engine.log")),
        "{logs:?}"
    );
    let paths = env.run(&[
        "store",
        "path",
        "tiny.kdl",
        "trtllm-fp8",
        "chat",
        "--runtime",
        "sim",
    ]);
    assert_eq!(paths.status.code(), Some(0), "{}", stderr(&paths));
    let rows: Vec<Vec<String>> = stdout(&paths)
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect();
    let kinds: Vec<&str> = rows.iter().map(|r| r[2].as_str()).collect();
    assert_eq!(kinds[..3], ["entry", "sample", "result"], "{rows:?}");
    for row in &rows {
        assert_eq!(row[..2], ["trtllm-fp8", "chat"]);
        assert!(env.path(&row[3]).exists(), "{row:?}");
    }
    let listed_logs: Vec<&str> = rows
        .iter()
        .filter(|r| r[2] == "log")
        .map(|r| r[3].as_str())
        .collect();
    assert_eq!(listed_logs, logs);
    let unknown = env.run(&[
        "store",
        "path",
        "tiny.kdl",
        "no-such-step",
        "--runtime",
        "sim",
    ]);
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    let docker = env.run(&["store", "path", "tiny.kdl", "vllm", "--runtime", "docker"]);
    assert_eq!(stdout(&docker), "");
    assert!(
        stderr(&docker).contains(
            "perfpipe: nothing stored under `docker` for `vllm` × `chat`, `vllm` × `short`"
        ),
        "{}",
        stderr(&docker)
    );
    // Recorded, so the next run does not retry it (but still reports it).
    let again = env.run(&["run", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(started(&again).is_empty());
    assert!(
        stderr(&again).contains("perfpipe: ran 0 (failed: 0);")
            && stderr(&again).contains("  `trtllm-fp8` × `chat` (stored by an earlier run): "),
        "{}",
        stderr(&again)
    );
    let retried = env.run(&["run", "tiny.kdl", "--runtime", "sim", "--retry-failed"]);
    assert_eq!(started(&retried), ["trtllm-fp8 × chat"]);
}

#[test]
fn ctrl_c_stops_the_engine_and_commits_nothing() {
    a_signal_stops_the_engine_and_commits_nothing(libc::SIGINT);
}

/// Slurm ends a job (scancel, time limit, preemption) with SIGTERM to its
/// step, then SIGKILL after `KillWait`: perfpipe stops its engines as on Ctrl-C.
#[test]
fn sigterm_stops_the_engine_and_commits_nothing() {
    a_signal_stops_the_engine_and_commits_nothing(libc::SIGTERM);
}

fn a_signal_stops_the_engine_and_commits_nothing(signal: i32) {
    let env = TestEnv::new();
    let tag = format!(
        "signal{signal}x{}x{}",
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
    // Its output is the test's to read, not the terminal's: an interrupted
    // run's messages read like failures in `cargo test`'s output.
    let err_file = env.path("perfpipe.stderr");
    let mut child = env
        .cmd(&["run", "slow.kdl", "--runtime", "sim"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err_file).unwrap())
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
        libc::kill(child.id() as i32, signal);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "perfpipe did not stop after signal {signal}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert_eq!(
        live_processes(&tag),
        Vec::<u32>::new(),
        "an engine survived signal {signal}"
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

/// GPUStack's guidellm-era profile (`request_rate`, `total_requests` on
/// ShareGPT), as the lab ran it: constant arrivals, at most 512 in flight,
/// ShareGPT as benchmark-runner converts it; here on the built-in harness.
const RATE_STUDY: &str = r#"experiment "rates" {
    hardware "nvidia-h100-sxm5-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="0.17.1"
    harness builtin
    workload sharegpt-20rps {
        dataset sharegpt path="sharegpt-tiny.json" conversion="benchmark-runner"
        prompts 12
        rate 20
        arrival constant
        concurrency 512
    }
    workload capped {
        dataset random input=32 output=40 seed=42
        prompts 6
        rate 1000
        arrival constant
        concurrency 2
    }
    step vllm engine=vllm gpus=1
}"#;

/// A sample's request records, in dataset order.
fn journal(dir: &std::path::Path) -> Vec<perfpipe::metrics::RequestRecord> {
    let mut lines: Vec<serde_json::Value> =
        std::fs::read_to_string(dir.join("logs/requests.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    lines.sort_by_key(|l| l["index"].as_u64());
    lines
        .into_iter()
        .map(|l| serde_json::from_value(l["record"].clone()).unwrap())
        .collect()
}

#[test]
fn a_rate_workload_runs_as_the_lab_ran_it_on_the_builtin_harness() {
    let env = TestEnv::new();
    env.write("rates.kdl", RATE_STUDY);
    env.copy_fixture("datasets/sharegpt-tiny.json", "sharegpt-tiny.json");
    let timing = ("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=20,itl_ms=5");
    let out = env
        .cmd(&["run", "rates.kdl", "--runtime", "sim"])
        .env(timing.0, timing.1)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "> **Rate workloads.** `sharegpt-20rps`, `capped` are sent as guidellm sends them"
        ),
        "the report says whose definitions the numbers follow: {}",
        stdout(&out)
    );
    let results = env.results();
    assert_eq!(results.len(), 2, "{results:?}");
    for (dir, result) in &results {
        let records = journal(dir);
        let metrics = &result["outcome"]["metrics"];
        if records.len() == 12 {
            assert_eq!(metrics["completed"], 12);
            // Constant arrivals: request k leaves at k / 20 s.
            let mut starts: Vec<f64> = records.iter().map(|r| r.start).collect();
            starts.sort_by(f64::total_cmp);
            for (k, start) in starts.iter().enumerate() {
                let due = (k + 1) as f64 / 20.0;
                // Never early (a timer), and late only by this machine's load.
                assert!(
                    *start >= due - 0.001 && *start < due + 0.1,
                    "request {k} left at {start}, due at {due}"
                );
            }
            // benchmark-runner's first turns, in file order, each asking for
            // exactly its reply's length (ignore_eos, as guidellm asks).
            let dataset: serde_json::Value =
                serde_json::from_str(&env.read("sharegpt-tiny.json")).unwrap();
            for (i, r) in records.iter().enumerate() {
                let reply = dataset[i]["conversations"][1]["value"].as_str().unwrap();
                let words = reply.split_whitespace().count() as u64;
                assert_eq!(r.requested_output_tokens, words, "request {i}");
                assert_eq!(r.output_tokens, words, "request {i}");
            }
        } else {
            assert_eq!(metrics["completed"], 6);
            // 1000 req/s against a 215 ms request: the cap of 2 holds them back.
            assert!(
                metrics["exact_max_concurrent_requests"].as_f64().unwrap() <= 2.0,
                "{metrics}"
            );
            assert!(
                metrics["duration"].as_f64().unwrap() > 0.6,
                "three waves of two: {metrics}"
            );
        }
    }
}

#[test]
fn random_prompts_come_from_the_prompt_cache_and_keep_their_keys() {
    let study = r#"experiment "cached-prompts" {
    hardware "nvidia-h100-sxm5-80gb" gpus=1
    model "Qwen/Qwen3-8B"
    engine vllm version="0.11.0"
    workload short { dataset random input=16 output=4 seed=3; prompts 4; }
    step vllm engine=vllm gpus=1
}"#;
    let cache = tempfile::tempdir().unwrap();
    let prompts = cache.path().join("perfpipe/prompts");
    let run = |with_cache: bool| {
        let env = TestEnv::new();
        env.write("study.kdl", study);
        let mut cmd = env.cmd(&["run", "study.kdl", "--runtime", "sim"]);
        if with_cache {
            cmd.env("XDG_CACHE_HOME", cache.path());
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let results: Vec<(String, u64)> = env
            .results()
            .iter()
            .map(|(dir, result)| {
                let key = dir.parent().unwrap().parent().unwrap().file_name().unwrap();
                (
                    key.to_string_lossy().into_owned(),
                    result["outcome"]["metrics"]["total_input_tokens"]
                        .as_u64()
                        .unwrap(),
                )
            })
            .collect();
        results
    };
    let inode = |path: &std::path::Path| {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(path).unwrap().ino()
    };

    let cold = run(true);
    let files: Vec<_> = std::fs::read_dir(&prompts).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "run keeps its prompts in the cache");
    let file = files[0].path();
    let kept = inode(&file);

    let warm = run(true);
    assert_eq!(
        inode(&file),
        kept,
        "the warm run reads the file, not rewrites it"
    );
    let uncached = run(false);
    assert_eq!(cold, warm);
    assert_eq!(cold, uncached, "the cache changes neither keys nor prompts");
    assert!(!cold.is_empty());
}

/// A run's prompts are built while its engine starts, not once it is ready
/// (12,000 random prompts take seconds the GPUs would wait): the simulated
/// engine here keeps loading until the prompt cache holds the prompts, so
/// prompts built after it is ready would never come.
#[test]
fn prompts_are_built_while_the_engine_starts() {
    let env = TestEnv::new();
    env.write(
        "study.kdl",
        r#"experiment "early-prompts" {
    hardware "nvidia-h100-sxm5-80gb" gpus=1
    model "Qwen/Qwen3-8B"
    engine vllm version="0.11.0"
    workload short { dataset random input=16 output=4 seed=3; prompts 4; }
    step vllm engine=vllm gpus=1
}"#,
    );
    let cache = env.path("cache");
    let out = env
        .cmd(&[
            "run",
            "study.kdl",
            "--runtime",
            "sim",
            "--startup-timeout",
            "30",
        ])
        .env("XDG_CACHE_HOME", &cache)
        .env("PERFPIPE_SIM_LOAD_UNTIL", cache.join("perfpipe/prompts"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ran 1 (failed: 0)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(env.results().len(), 1);
}

/// `--step NAME` (repeatable, globs) selects the steps `run`, `plan`,
/// `report` and `explain` work on; `run`'s written report stays the whole
/// experiment's, and a name that matches no step is refused with the steps.
#[test]
fn step_selects_the_steps_run_plan_report_and_explain_work_on() {
    let env = TestEnv::new();
    env.write(
        "steps.kdl",
        r#"experiment "steps" {
    hardware "nvidia-h100-sxm5-80gb" gpus=1
    model "Qwen/Qwen3-8B"
    engine vllm version="0.11.0"
    workload short { dataset random input=16 output=4 seed=3; prompts 4; }
    step base engine=vllm gpus=1
    step seqs-8 engine=vllm gpus=1 { args "--max-num-seqs" "8"; }
    step seqs-64 engine=vllm gpus=1 { args "--max-num-seqs" "64"; }
}"#,
    );
    let sim = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--runtime", "sim"]);
        let out = env.run(&all);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        out
    };
    let steps_of = |text: &str| -> Vec<&str> {
        ["`base`", "`seqs-8`", "`seqs-64`"]
            .into_iter()
            .filter(|s| text.contains(s))
            .collect()
    };

    let plan = sim(&["plan", "steps.kdl", "--step", "seqs-*"]);
    assert!(
        stdout(&plan).contains("2 runs: 0 cached, 0 failed, 2 missing; 2 to run"),
        "{}",
        stdout(&plan)
    );
    let run = sim(&["run", "steps.kdl", "--step", "seqs-?", "--step", "base"]);
    assert_eq!(started(&run).len(), 2, "{}", stderr(&run));
    assert_eq!(env.results().len(), 2);
    // The written report is the whole experiment's: seqs-64 is missing there.
    assert_eq!(
        steps_of(&env.read("reports/steps.md")),
        ["`base`", "`seqs-8`", "`seqs-64`"]
    );

    let report = sim(&["report", "steps.kdl", "--step", "seqs-8"]);
    assert_eq!(
        steps_of(&stdout(&report)),
        ["`seqs-8`"],
        "{}",
        stdout(&report)
    );
    let explain = sim(&[
        "explain",
        "steps.kdl",
        "--step",
        "base",
        "--step",
        "seqs-64",
    ]);
    assert_eq!(
        steps_of(&stdout(&explain)),
        ["`base`", "`seqs-64`"],
        "{}",
        stdout(&explain)
    );

    let unknown = env.run(&["plan", "steps.kdl", "--step", "seqs-1*"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    assert!(
        crate::common::words(&unknown).contains(
            "`--step seqs-1*` names no step of the experiment its steps: base, seqs-8, seqs-64 (`*` matches any characters, `?` one)"
        ),
        "{}",
        crate::common::words(&unknown)
    );
}
