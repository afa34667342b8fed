//! `--runtime local` and `--runtime docker` on a stand-in GPU box: stand-in
//! `vllm`, `python3 -m sglang.launch_server`, `trtllm-serve`, `docker` and
//! `nvidia-smi` record how perfpipe called them, then serve as the simulated
//! engine so every run completes.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::{FIXTURES, TestEnv, stderr, words};

/// `perfpipe ARGS` with the stand-ins first on PATH.
fn on_gpu_box(env: &TestEnv, args: &[&str], extra: &[(&str, &str)]) -> Output {
    gpu_box(env, args, extra).output().unwrap()
}

/// The command of [`on_gpu_box`], to start it.
pub fn gpu_box(env: &TestEnv, args: &[&str], extra: &[(&str, &str)]) -> Command {
    let mut cmd: Command = env.cmd(args);
    cmd.env("PATH", format!("{FIXTURES}/standins:/usr/bin:/bin"))
        .env("HOME", env.path("home"))
        .env("PERFPIPE_BIN", env!("CARGO_BIN_EXE_perfpipe"))
        .env("STANDIN_LOG", env.path("standin.log"))
        .env("PERFPIPE_GPU_LOCKS", env.path("gpu-locks"))
        // Stand-in engines answer at once: the argv is what is tested here.
        .env("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=0,itl_ms=0");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

/// A scratch directory holding `experiments/<name>.kdl` and the ShareGPT sample.
pub fn study(name: &str) -> TestEnv {
    let env = TestEnv::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    env.write(
        &format!("{name}.kdl"),
        &std::fs::read_to_string(root.join("experiments").join(format!("{name}.kdl"))).unwrap(),
    );
    env.write(
        "datasets/sharegpt-sample.json",
        &std::fs::read_to_string(root.join("datasets/sharegpt-sample.json")).unwrap(),
    );
    env
}

/// The stand-in log with ports, keys and temp paths made stable.
fn calls(env: &TestEnv) -> String {
    let log = env
        .read("standin.log")
        .replace(env.dir.path().to_str().unwrap(), "[TEMP]");
    let port = regex_lite_replace(&log, "--port\t", "[PORT]");
    port.replace('\t', " ")
}

/// Replaces the token after each `marker` (up to the next tab or newline).
fn regex_lite_replace(text: &str, marker: &str, with: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at + marker.len()]);
        rest = &rest[at + marker.len()..];
        let end = rest.find(['\t', '\n']).unwrap_or(rest.len());
        out.push_str(with);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn run_study(name: &str, runtime: &str) {
    let env = study(name);
    let out = on_gpu_box(
        &env,
        &[
            "run",
            &format!("{name}.kdl"),
            "--runtime",
            runtime,
            "--max-prompts",
            "2",
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("numbers: measured"), "{report}");
    insta::with_settings!({ filters => vec![(r"perfpipe-[0-9a-f]{12}", "perfpipe-[KEY]")] }, {
        insta::assert_snapshot!(format!("{name}-{runtime}"), calls(&env));
    });
}

#[test]
fn qwen3_14b_local() {
    run_study("qwen3-14b-a100", "local");
}

#[test]
fn qwen3_14b_docker() {
    run_study("qwen3-14b-a100", "docker");
}

#[test]
fn qwen3_235b_local() {
    run_study("qwen3-235b-a100", "local");
}

#[test]
fn qwen3_235b_docker() {
    run_study("qwen3-235b-a100", "docker");
}

#[test]
fn h100s_refuse_an_a100_experiment() {
    let env = study("qwen3-14b-a100");
    let out = on_gpu_box(
        &env,
        &["run", "qwen3-14b-a100.kdl", "--runtime", "local"],
        &[("STANDIN_GPU_NAME", "NVIDIA H100 80GB HBM3")],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = words(&out);
    assert!(
        err.contains("the experiment declares 8 × `NVIDIA A100-SXM4-80GB`, but this machine has 8 × `NVIDIA H100 80GB HBM3`"),
        "{err}"
    );
    assert!(
        !Path::new(&env.path("standin.log")).exists(),
        "no engine may start"
    );
}

#[test]
fn a_local_engine_of_another_version_is_refused_before_any_run() {
    let env = study("qwen3-235b-a100");
    let out = on_gpu_box(
        &env,
        &["run", "qwen3-235b-a100.kdl", "--runtime", "local"],
        &[("STANDIN_VLLM_VERSION", "0.10.2")],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = words(&out);
    assert!(
        err.contains(
            "vLLM on this machine is version `0.10.2`, but the experiment declares `0.11.0`"
        ),
        "{err}"
    );
    assert!(
        !Path::new(&env.path("standin.log")).exists(),
        "no engine may start"
    );
}

#[test]
fn the_engine_version_is_read_from_its_package_metadata_not_its_cli() {
    // A Python environment whose `vllm` prints 0.11.0 (the stand-in) but
    // whose installed package says 0.10.2: the metadata is what is read.
    let env = study("qwen3-235b-a100");
    let bin = env.path("venv/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let vllm = bin.join("vllm");
    std::fs::write(
        &vllm,
        format!("#!/bin/sh\nexec {FIXTURES}/standins/vllm \"$@\"\n"),
    )
    .unwrap();
    std::fs::set_permissions(&vllm, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.write(
        "venv/lib/python3.11/site-packages/vllm-0.10.2+cpu.dist-info/METADATA",
        "Metadata-Version: 2.1\nName: vllm\nVersion: 0.10.2+cpu\n",
    );
    let out = gpu_box(
        &env,
        &["run", "qwen3-235b-a100.kdl", "--runtime", "local"],
        &[],
    )
    .env(
        "PATH",
        format!("{}:{FIXTURES}/standins:/usr/bin:/bin", bin.display()),
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = words(&out);
    assert!(
        err.contains(
            "vLLM on this machine is version `0.10.2+cpu`, but the experiment declares `0.11.0`"
        ),
        "{err}"
    );
}

#[test]
fn a_cpu_study_on_another_cpu_is_refused_with_this_machines_line() {
    let env = TestEnv::new();
    env.write("model/config.json", "{}");
    env.write(
        "cpu.kdl",
        &format!(
            "experiment e {{\n hardware \"cpu\" model=\"Imaginary CPU 9000\" cores=4096\n model {:?}\n \
             runtime local\n engine vllm version=\"0.32.0+cpu\"\n \
             workload w {{ dataset random input=8 output=8; prompts 1 }}\n step s engine=vllm\n}}\n",
            env.path("model").display()
        ),
    );
    let out = on_gpu_box(&env, &["run", "cpu.kdl"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = words(&out);
    assert!(
        err.contains("the experiment declares `hardware \"cpu\" model=\"Imaginary CPU 9000\" cores=4096 isa=\"\"`, but this machine has `hardware \"cpu\" model="),
        "{err}"
    );
    assert!(err.contains("declare this machine's"), "{err}");
    assert!(
        !Path::new(&env.path("standin.log")).exists(),
        "no engine may start"
    );
}

/// One step per way an engine or its server misbehaves (the stand-ins'
/// faults, `tests/fixtures/standins/_log.sh`): each ends within its bound,
/// recorded as what happened, and the experiment goes on.
#[test]
fn each_failure_ends_as_its_kind_and_the_rest_of_the_experiment_completes() {
    let env = TestEnv::new();
    env.write(
        "faults.kdl",
        r#"experiment "faults" {
    hardware "nvidia-a100-sxm4-80gb" gpus=8
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0" startup-timeout=2
    engine trtllm version="1.2.0rc1"
    engine sglang version="0.5.5.post1"
    workload short {
        dataset random input=16 output=64 seed=1
        prompts 4
    }
    step ok engine=vllm gpus=1
    step fp8 engine=trtllm model="Qwen/Qwen3-14B-FP8" gpus=1
    step hangs engine=vllm model="Qwen/Qwen3-8B" gpus=1
    step deaf engine=vllm model="Qwen/Qwen3-0.6B" gpus=1
    step dies engine=vllm model="Qwen/Qwen3-4B" gpus=1
    step port engine=vllm model="Qwen/Qwen3-1.7B" gpus=1
    step errors engine=vllm model="Qwen/Qwen3-32B" gpus=1
    step malformed engine=vllm model="Qwen/Qwen3-30B-A3B" gpus=1
    step truncated engine=trtllm model="Qwen/Qwen3-14B-AWQ" gpus=1
    step stalls engine=sglang model="Qwen/Qwen3-4B-AWQ" gpus=1
    step silent engine=vllm model="Qwen/Qwen3-8B-AWQ" gpus=1
}"#,
    );
    let faults = [
        "hang@Qwen/Qwen3-8B",
        "no-answer-health@Qwen/Qwen3-0.6B",
        "die@Qwen/Qwen3-4B",
        "port-once@Qwen/Qwen3-1.7B",
        "http-errors@Qwen/Qwen3-32B",
        "malformed-sse@Qwen/Qwen3-30B-A3B",
        "truncated-sse@Qwen/Qwen3-14B-AWQ",
        "stall-stream@Qwen/Qwen3-4B-AWQ",
        "no-answer@Qwen/Qwen3-8B-AWQ",
    ]
    .join(";");
    // The stall timeout is ten minutes unless set: the bound shows it was honoured.
    let args = [
        "run",
        "faults.kdl",
        "--runtime",
        "local",
        "--stall-timeout",
        "1",
        "--jobs",
        "4",
    ];
    let started = Instant::now();
    let out = on_gpu_box(&env, &args, &[("STANDIN_FAULT", &faults)]);
    assert!(
        started.elapsed() < Duration::from_secs(300),
        "every wait is bounded"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // The port race is retried on another port and then succeeds.
    assert!(
        err.contains("transient failure, retrying: OSError: [Errno 98] Address already in use"),
        "{err}"
    );
    // An engine that hangs and one that takes /health and never answers both
    // time out after vLLM's declared `startup-timeout`, three times each
    // (transient: retried, never cached).
    let retried = err.matches("retrying: engine did not answer /health within 2s");
    let failed = err.matches("failed: engine did not answer /health within 2s");
    assert_eq!((retried.count(), failed.count()), (4, 2), "{err}");
    let report = String::from_utf8_lossy(&out.stdout);
    // The runs table: requests completed, or why there is no number.
    let row = |step: &str| {
        let start = format!("| `{step}` | `short` | ");
        report
            .lines()
            .find(|l| {
                l.strip_prefix(&start)
                    .is_some_and(|rest| rest.starts_with('`'))
            })
            .unwrap_or_else(|| panic!("no row for {step}: {report}"))
            .to_owned()
    };
    for (steps, cell) in [
        (&["ok", "port"][..], "| measured | 4 |"),
        (
            &["errors", "malformed", "truncated", "stalls"],
            "| measured | 2 |",
        ),
        (&["fp8", "dies", "silent"], "| measured | failed |"),
        (&["hangs", "deaf"], "| not run |"),
    ] {
        for step in steps {
            assert!(row(step).contains(cell), "{step}: {report}");
        }
    }
    for outcome in [
        "- `fp8` × `short`: `RuntimeError: Unsupported SM version for FP8 block scaling GEMM`",
        "- `dies` × `short`: `engine exited with exit status: 1 during the benchmark: RuntimeError: CUDA error: an illegal memory access was encountered`",
        "- `silent` × `short`: `every request failed: 4 of 4 requests failed (first: no response while the server sent nothing for 1s)`",
        // Warnings from the harness: a run that counted failed requests says so.
        "- `errors` × `short`: 2 of 4 requests failed (first: HTTP 50",
        "- `malformed` × `short`: 2 of 4 requests failed (first: malformed chunk",
        "- `truncated` × `short`: 2 of 4 requests failed (first: stream",
        "- `stalls` × `short`: 2 of 4 requests failed (first: stream stalled: the server sent nothing for 1s)",
    ] {
        assert!(report.contains(outcome), "{report}");
    }

    // What the store holds of each run that reached its benchmark: counts
    // that add up to every request, and each failed request's reason.
    let results = env.results();
    let run = |model: &str| {
        let (dir, result) = results
            .iter()
            .find(|(_, r)| {
                r["engine_command"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|a| a == model)
            })
            .unwrap_or_else(|| panic!("no result for {model}"));
        let journal = std::fs::read_to_string(dir.join("logs/requests.jsonl")).unwrap();
        let mut errors: Vec<String> = journal
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter_map(|l| l["record"]["error"].as_str().map(str::to_owned))
            .collect();
        errors.sort();
        let harness_log = std::fs::read_to_string(dir.join("logs/harness.log")).unwrap();
        for e in &errors {
            assert!(harness_log.contains(e.as_str()), "{model}: {harness_log}");
        }
        let outcome = &result["outcome"];
        let counts = (
            outcome["status"].as_str().unwrap().to_owned(),
            outcome["metrics"]["completed"].as_u64(),
            outcome["metrics"]["failed"].as_u64(),
        );
        (counts, errors, journal.lines().count())
    };
    let success = |completed, failed| ("success".to_owned(), Some(completed), Some(failed));
    let (counts, errors, journaled) = run("Qwen/Qwen3-14B");
    assert_eq!((counts, errors.len(), journaled), (success(4, 0), 0, 4));
    let (counts, errors, journaled) = run("Qwen/Qwen3-32B");
    assert_eq!((counts, journaled), (success(2, 2), 4));
    assert_eq!(
        errors,
        [
            r#"HTTP 500 Internal Server Error: {"error":{"message":"EngineCore encountered an issue.","type":"InternalServerError","param":null,"code":500}}"#,
            r#"HTTP 503 Service Unavailable: {"error":{"message":"The server is overloaded.","type":"ServiceUnavailableError","param":null,"code":503}}"#,
        ]
    );
    let (counts, errors, _) = run("Qwen/Qwen3-30B-A3B");
    assert_eq!(counts, success(2, 2));
    assert_eq!(
        errors,
        [r#"malformed chunk `{"id":"cmpl-1","choices":[{"index":0,"text"`"#; 2]
    );
    let (counts, errors, _) = run("Qwen/Qwen3-14B-AWQ");
    assert_eq!(counts, success(2, 2));
    assert_eq!(
        errors,
        [
            "stream broke: error reading a body from connection: end of file before message length reached",
            "stream ended inside an event"
        ]
    );
    let (counts, errors, _) = run("Qwen/Qwen3-4B-AWQ");
    assert_eq!(counts, success(2, 2));
    assert_eq!(
        errors,
        ["stream stalled: the server sent nothing for 1s"; 2]
    );
    let (counts, errors, journaled) = run("Qwen/Qwen3-8B-AWQ");
    assert_eq!((counts, journaled), (("failure".to_owned(), None, None), 4));
    assert_eq!(
        errors,
        ["no response while the server sent nothing for 1s"; 4]
    );

    // Deterministic failures are cached, transient ones are not; runs that
    // counted their failed requests are results.
    let plan = on_gpu_box(&env, &["plan", "faults.kdl", "--runtime", "local"], &[]);
    let plan = String::from_utf8_lossy(&plan.stdout);
    let status = |step: &str| {
        plan.lines()
            .find(|l| l.starts_with(&format!("{step} ")))
            .unwrap()
            .split_whitespace()
            .nth(3)
            .unwrap()
            .to_owned()
    };
    let steps = [
        "ok",
        "port",
        "errors",
        "malformed",
        "truncated",
        "stalls",
        "fp8",
        "dies",
        "silent",
        "hangs",
        "deaf",
    ];
    assert_eq!(
        steps.map(status),
        [
            "cached", "cached", "cached", "cached", "cached", "cached", "failed", "failed",
            "failed", "missing", "missing"
        ],
        "{plan}"
    );

    // Run again with the default stall timeout and another startup timeout
    // (neither is in a key): only the runs that failed transiently run again,
    // and though nothing of them is stored, the command fails.
    let launched = env.read("standin.log").lines().count();
    let again = on_gpu_box(
        &env,
        &[
            "run",
            "faults.kdl",
            "--runtime",
            "local",
            "--startup-timeout",
            "1",
        ],
        &[("STANDIN_FAULT", &faults)],
    );
    let err = stderr(&again);
    assert_eq!(again.status.code(), Some(1), "{err}");
    for step in ["hangs", "deaf"] {
        assert!(
            err.contains(&format!("perfpipe: `{step}` × `short` failed on every attempt for a cause that may pass, so nothing is stored and the next `run` tries again: engine did not answer /health within 1s")),
            "{err}"
        );
    }
    let log = env.read("standin.log");
    let relaunched: Vec<&str> = log.lines().skip(launched).collect();
    assert_eq!(relaunched.len(), 6, "{log}");
    assert!(
        relaunched
            .iter()
            .all(|l| l.contains("\tQwen/Qwen3-8B\t") || l.contains("\tQwen/Qwen3-0.6B\t")),
        "{log}"
    );
}

#[test]
fn a_steps_runs_share_one_engine_which_restarts_after_a_crash() {
    let env = TestEnv::new();
    env.write(
        "shared.kdl",
        r#"experiment "shared" {
    hardware "nvidia-a100-sxm4-80gb" gpus=8
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    engine trtllm version="1.2.0rc1"
    workload a {
        dataset random input=16 output=64 seed=1
        prompts 4
    }
    workload b {
        dataset random input=16 output=64 seed=2
        prompts 4
    }
    workload c {
        dataset random input=16 output=64 seed=3
        prompts 4
    }
    step ok engine=vllm gpus=1
    step crashes-once engine=vllm model="Qwen/Qwen3-8B" gpus=1
    step fp8 engine=trtllm model="Qwen/Qwen3-14B-FP8" gpus=1
}"#,
    );
    let plan = on_gpu_box(&env, &["plan", "shared.kdl", "--runtime", "local"], &[]);
    assert!(String::from_utf8_lossy(&plan.stdout).contains("9 to run (3 engine launches)"));
    let fresh = on_gpu_box(
        &env,
        &["plan", "shared.kdl", "--runtime", "local", "--fresh-engine"],
        &[],
    );
    assert!(String::from_utf8_lossy(&fresh.stdout).contains("9 to run (9 engine launches)"));

    let out = on_gpu_box(
        &env,
        &["run", "shared.kdl", "--runtime", "local"],
        &[("STANDIN_FAULT", "die-once@Qwen/Qwen3-8B")],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = env.read("standin.log");
    let launches = |model: &str| {
        log.lines()
            .filter(|l| l.contains(&format!("\t{model}\t")))
            .count()
    };
    assert_eq!(
        launches("Qwen/Qwen3-14B"),
        1,
        "three runs on one engine:\n{log}"
    );
    assert_eq!(
        launches("Qwen/Qwen3-8B"),
        2,
        "restarted once after the crash:\n{log}"
    );
    assert_eq!(
        launches("Qwen/Qwen3-14B-FP8"),
        1,
        "a deterministic start failure is not retried:\n{log}"
    );

    // Provenance: each run's position on its engine, and the prefix cache reset between runs.
    let mut seen = Vec::new();
    for (_, result) in env.results() {
        let launch = &result["engine_launch"];
        let status = result["outcome"]["status"].as_str().unwrap().to_owned();
        seen.push((
            launch["position"].as_u64(),
            launch["prefix_cache"].as_str().map(str::to_owned),
            status,
        ));
    }
    seen.sort();
    let fresh = Some("fresh".to_owned());
    let reset = Some("reset".to_owned());
    assert_eq!(
        seen,
        [
            (None, None, "failure".into()),
            (None, None, "failure".into()),
            (None, None, "failure".into()),
            (Some(1), fresh.clone(), "failure".into()),
            (Some(1), fresh.clone(), "success".into()),
            (Some(1), fresh, "success".into()),
            (Some(2), reset.clone(), "success".into()),
            (Some(2), reset.clone(), "success".into()),
            (Some(3), reset, "success".into()),
        ]
    );
}

#[test]
fn vllm_bench_serve_measures_when_the_experiment_names_it() {
    let env = TestEnv::tiny();
    let text = env.read("tiny.kdl").replace(
        r#"harness builtin backend="openai-chat""#,
        r#"harness vllm-bench version="0.11.0" backend="openai-chat""#,
    );
    env.write("client.kdl", &text);
    let builtin = on_gpu_box(&env, &["plan", "tiny.kdl", "--runtime", "sim"], &[]);
    let client = on_gpu_box(&env, &["plan", "client.kdl", "--runtime", "sim"], &[]);
    let keys = |out: &Output| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                l.split_whitespace()
                    .nth(2)
                    .filter(|k| k.len() == 12)
                    .map(str::to_owned)
            })
            .collect::<Vec<_>>()
    };
    assert!(
        keys(&builtin)
            .iter()
            .zip(keys(&client))
            .all(|(a, b)| *a != b),
        "the harness is part of every key"
    );

    let out = on_gpu_box(&env, &["run", "client.kdl", "--runtime", "sim"], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("| `vllm` | `chat` |") && report.contains("simulated | 30 |"),
        "{report}"
    );
    let log = env.read("standin.log");
    let bench = log
        .lines()
        .find(|l| l.contains("\tbench\tserve\t"))
        .unwrap();
    let bench = regex_lite_replace(bench, "--base-url\t", "[URL]")
        .replace(env.dir.path().to_str().unwrap(), "[TEMP]");
    insta::with_settings!({ filters => vec![(r"entries/../[0-9a-f]{64}|tmp/proc-[0-9]+-[A-Za-z0-9]+/sample-[A-Za-z0-9]+", "[SAMPLE]")] }, {
        insta::assert_snapshot!(bench.replace('\t', " "), @"vllm CUDA_VISIBLE_DEVICES= bench serve --backend openai-chat --base-url [URL] --endpoint /v1/chat/completions --model Qwen/Qwen3-14B --dataset-name sharegpt --dataset-path sharegpt-tiny.json --seed 0 --num-prompts 30 --request-rate inf --temperature 0 --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 99 --result-dir [TEMP]/store/[SAMPLE]/logs --result-filename vllm-bench-result.json --save-result --save-detailed");
    });
    assert_eq!(
        log.lines()
            .filter(|l| l.contains("\tbench\tserve\t"))
            .count(),
        6,
        "one client run per successful run"
    );

    let old = on_gpu_box(
        &env,
        &["run", "client.kdl", "--runtime", "sim", "--retry-failed"],
        &[("STANDIN_VLLM_VERSION", "0.10.2")],
    );
    assert_eq!(old.status.code(), Some(2));
    assert!(words(&old).contains(
        "vllm bench serve on this machine is version `0.10.2`, but the experiment declares `0.11.0`"
    ));
}

const GUIDELLM_STUDY: &str = r#"experiment "guide" {
    hardware "nvidia-a100-sxm4-80gb" gpus=2
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    harness guidellm version="0.7.2" ignore-eos=#true
    workload short {
        dataset random input=64 output=8 seed=42
        prompts 12
        concurrency 4
    }
    step vllm engine=vllm gpus=1 {
        expect short {
            tokens_per_second_mean 1000.0
        }
    }
}"#;

#[test]
fn guidellm_measures_under_its_own_definitions() {
    let env = TestEnv::new();
    env.write("guide.kdl", GUIDELLM_STUDY);
    // A slow first token makes guidellm's TPOT (which includes it) differ from its ITL.
    let timing = ("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=60,itl_ms=5");
    let out = on_gpu_box(&env, &["run", "guide.kdl", "--runtime", "local"], &[timing]);
    assert_eq!(out.status.code(), Some(0), "{}", words(&out));

    let log = env.read("standin.log");
    let call = log.lines().find(|l| l.starts_with("guidellm\t")).unwrap();
    let call = call.replace(env.dir.path().to_str().unwrap(), "[TEMP]");
    insta::with_settings!({ filters => vec![(r"http://127\.0\.0\.1:\d+", "[URL]"), (r"entries/../[0-9a-f]{64}|tmp/proc-[0-9]+-[A-Za-z0-9]+/sample-[A-Za-z0-9]+", "[SAMPLE]")] }, {
        insta::assert_snapshot!(call.replace('\t', " "), @r#"guidellm CUDA_VISIBLE_DEVICES= run --backend {"kind":"openai_http","target":"[URL]","model":"Qwen/Qwen3-14B","request_format":"/v1/chat/completions","extras":{"body":{"temperature":0.0,"ignore_eos":true}}} --data kind=synthetic_text,prompt_tokens=64,output_tokens=8 --profile kind=concurrent,streams=4 --constraint kind=max_requests,count=12 --seed kind=static,value=42 --output kind=json,path=[TEMP]/store/[SAMPLE]/logs/guidellm-benchmarks.json --disable-console-interactive"#);
    });

    let results = env.results();
    let [(dir, result)] = results.as_slice() else {
        panic!("one run, one sample: {results:?}")
    };
    let metrics = &result["outcome"]["metrics"];
    assert_eq!(metrics["request_totals"]["successful"], 12);
    assert!(metrics.get("mean_tpot_ms").is_none(), "never vLLM's names");
    let written: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("logs/guidellm-benchmarks.json")).unwrap(),
    )
    .unwrap();
    let stat = |v: &serde_json::Value, metric: &str| v[metric]["mean"].as_f64().unwrap();
    let stored = &metrics["successful"];
    let reported = &written["benchmarks"][0]["metrics"];
    for metric in [
        "tokens_per_second",
        "time_per_output_token_ms",
        "inter_token_latency_ms",
    ] {
        assert_eq!(
            stat(stored, metric),
            stat(&reported[metric], "successful"),
            "{metric}"
        );
    }
    let (tpot, itl) = (
        stat(stored, "time_per_output_token_ms"),
        stat(stored, "inter_token_latency_ms"),
    );
    assert!(
        tpot > itl + 3.0,
        "guidellm's TPOT includes the 60 ms TTFT: {tpot} vs {itl}"
    );

    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("> **Definitions.** Numbers are guidellm's"),
        "{report}"
    );
    assert!(
        report.contains("| time_per_output_token_ms mean |"),
        "{report}"
    );
    assert!(
        report.contains(&format!("| {:.2} |", stat(stored, "tokens_per_second"))),
        "the runs table shows guidellm's own Total TPS: {report}"
    );

    let old = on_gpu_box(
        &env,
        &[
            "run",
            "guide.kdl",
            "--runtime",
            "local",
            "--store",
            "other-store",
        ],
        &[("STANDIN_GUIDELLM_VERSION", "0.6.0")],
    );
    assert_eq!(old.status.code(), Some(2));
    assert!(
        words(&old).contains(
            "guidellm on this machine is version `0.6.0`, but the experiment declares `0.7.2`"
        ),
        "{}",
        words(&old)
    );
}

/// GPUStack's guidellm-era profile as benchmark-runner ran it: guidellm 0.5.3,
/// constant arrivals at `request_rate`, `total_requests`, at most 512 in
/// flight, ShareGPT converted by benchmark-runner's rules.
const LAB_PROFILE: &str = r#"experiment "lab" {
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    harness guidellm version="0.5.3"
    workload sharegpt-20rps {
        dataset sharegpt path="sharegpt-tiny.json" conversion="benchmark-runner"
        prompts 10
        rate 20
        arrival constant
        concurrency 512
    }
    step vllm engine=vllm gpus=1
}"#;

#[test]
fn guidellm_runs_a_rate_workload_in_the_cli_of_its_version() {
    let env = TestEnv::new();
    env.write("lab.kdl", LAB_PROFILE);
    env.copy_fixture("datasets/sharegpt-tiny.json", "sharegpt-tiny.json");
    let v053 = ("STANDIN_GUIDELLM_VERSION", "0.5.3");
    let out = on_gpu_box(&env, &["run", "lab.kdl", "--runtime", "local"], &[v053]);
    assert_eq!(out.status.code(), Some(0), "{}", words(&out));

    let log = env.read("standin.log");
    let call = log.lines().find(|l| l.starts_with("guidellm\t")).unwrap();
    let call = call.replace(env.dir.path().to_str().unwrap(), "[TEMP]");
    insta::with_settings!({ filters => vec![(r"http://127\.0\.0\.1:\d+", "[URL]"), (r"entries/../[0-9a-f]{64}|tmp/proc-[0-9]+-[A-Za-z0-9]+/sample-[A-Za-z0-9]+", "[SAMPLE]")] }, {
        insta::assert_snapshot!(call.replace('\t', " "), @r#"guidellm CUDA_VISIBLE_DEVICES= GUIDELLM__MAX_CONCURRENCY=512 benchmark run --target [URL] --model Qwen/Qwen3-14B --backend openai_http --request-type chat_completions --request-formatter-kwargs {"extras":{"body":{"temperature":0.0}}} --processor Qwen/Qwen3-14B --data [TEMP]/store/[SAMPLE]/logs/sharegpt-benchmark-runner.jsonl --profile constant --rate 20 --max-requests 10 --sample-requests 10 --random-seed 0 --output-path [TEMP]/store/[SAMPLE]/logs/guidellm-benchmarks.json --disable-console-interactive"#);
    });

    let results = env.results();
    let [(dir, result)] = results.as_slice() else {
        panic!("one run, one sample: {results:?}")
    };
    assert_eq!(
        result["outcome"]["metrics"]["request_totals"]["successful"],
        10
    );
    // The converted file stays with the sample: ⌊1.2·10⌋ first turns in file order.
    let converted =
        std::fs::read_to_string(dir.join("logs/sharegpt-benchmark-runner.jsonl")).unwrap();
    let dataset: serde_json::Value = serde_json::from_str(&env.read("sharegpt-tiny.json")).unwrap();
    let lines: Vec<serde_json::Value> = converted
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 12);
    for (i, line) in lines.iter().enumerate() {
        let turns = &dataset[i]["conversations"];
        assert_eq!(line["text"], turns[0]["value"]);
        let reply = turns[1]["value"].as_str().unwrap();
        assert_eq!(
            line["output_tokens_count"],
            reply.split_whitespace().count()
        );
    }

    // guidellm 0.7 has no `benchmark` command: the same study runs as `guidellm run`.
    let v072 = ("STANDIN_GUIDELLM_VERSION", "0.7.2");
    let newer = LAB_PROFILE.replace(r#"version="0.5.3""#, r#"version="0.7.2""#);
    env.write("lab.kdl", &newer);
    let out = on_gpu_box(&env, &["run", "lab.kdl", "--runtime", "local"], &[v072]);
    assert_eq!(out.status.code(), Some(0), "{}", words(&out));
    let log = env.read("standin.log");
    let call = log
        .lines()
        .filter(|l| l.starts_with("guidellm\t"))
        .nth(1)
        .unwrap();
    assert!(
        call.contains("\trun\t") && call.contains("\tkind=constant,rate=20,max_concurrency=512\t"),
        "{call}"
    );
}

#[test]
fn guidellm_refuses_what_it_cannot_express() {
    let env = TestEnv::new();
    let text = GUIDELLM_STUDY
        .replace(
            "dataset random input=64 output=8 seed=42",
            r#"dataset sharegpt path="s.json""#,
        )
        .replace("tokens_per_second_mean", "total_token_throughput");
    env.write("guide.kdl", &text);
    let out = env.run(&["plan", "guide.kdl", "--runtime", "sim"]);
    assert_eq!(out.status.code(), Some(2));
    let text = words(&out);
    assert!(
        text.contains("guidellm cannot run workload `short` as declared: it reads ShareGPT conversations only after a conversion of their own"),
        "{text}"
    );
    assert!(
        text.contains("unknown node `total_token_throughput`"),
        "{text}"
    );
}

#[test]
fn measure_all_drives_every_replica_on_disjoint_gpus() {
    let env = TestEnv::new();
    let experiment = |measure: &str| {
        format!(
            r#"experiment "replicas" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=8
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload short {{
        dataset random input=16 output=32 seed=1
        prompts 10
    }}
    step two engine=vllm gpus=2 replicas=2 measure={measure}
}}"#
        )
    };
    env.write("one.kdl", &experiment("one"));
    env.write("all.kdl", &experiment("all"));
    let key = |file: &str| {
        let plan = on_gpu_box(&env, &["plan", file, "--runtime", "local"], &[]);
        String::from_utf8_lossy(&plan.stdout)
            .lines()
            .find(|l| l.starts_with("two "))
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .to_owned()
    };
    assert_ne!(
        key("one.kdl"),
        key("all.kdl"),
        "measuring all replicas is another measurement"
    );

    // 32 tokens 40 ms apart: the load lasts over a second, so telemetry samples it.
    let slow = [("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=0,itl_ms=40")];
    let out = on_gpu_box(&env, &["run", "all.kdl", "--runtime", "local"], &slow);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = env.read("standin.log");
    // Both replicas start at once, so their calls land in either order.
    let mut devices: Vec<&str> = log.lines().map(|l| l.split('\t').nth(1).unwrap()).collect();
    devices.sort();
    assert_eq!(
        devices,
        ["CUDA_VISIBLE_DEVICES=0,1", "CUDA_VISIBLE_DEVICES=2,3"]
    );

    let (_, result) = env.results().remove(0);
    let outcome = &result["outcome"];
    let per_instance = outcome["per_instance"].as_array().unwrap();
    assert_eq!(per_instance.len(), 2);
    let completed: Vec<u64> = per_instance
        .iter()
        .map(|m| m["completed"].as_u64().unwrap())
        .collect();
    assert_eq!(completed, [5, 5], "round-robin");
    assert_eq!(outcome["metrics"]["completed"], 10, "the aggregate");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("| `two` | `short` |"), "{report}");

    // Telemetry of the run's four GPUs (the stand-in's GPU 1 is power-capped) and both engines,
    // sampled once a second while the load runs.
    let telemetry = &result["telemetry"];
    assert!(
        telemetry["gpu_samples"].as_u64().unwrap() >= 4,
        "{telemetry}"
    );
    assert!(
        telemetry["engine_samples"].as_u64().unwrap() >= 1,
        "{telemetry}"
    );
    assert_eq!(
        telemetry["throttling"],
        serde_json::json!(["0x0000000000000004"])
    );
    assert_eq!(telemetry["max_temperature_c"], 84.0);
    assert!(
        (telemetry["mean_power_w"].as_f64().unwrap() - (301.25 * 3.0 + 398.5) / 4.0).abs() < 1e-9
    );
    assert!(
        report.contains("| `two` | `short` | 325.6 | 95 | 84 | SW power cap |"),
        "{report}"
    );
}

#[test]
fn jobs_run_launches_at_once_on_disjoint_gpus_and_queue_when_none_are_free() {
    let env = TestEnv::new();
    let experiment = |gpus: u32| {
        format!(
            r#"experiment "jobs" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=8
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload short {{
        dataset random input=16 output=32 seed=1
        prompts 8
    }}
    step a engine=vllm model="Qwen/Qwen3-8B" gpus={gpus}
    step b engine=vllm model="Qwen/Qwen3-4B" gpus={gpus}
}}"#
        )
    };
    env.write("four.kdl", &experiment(4));
    let out = on_gpu_box(
        &env,
        &["run", "four.kdl", "--runtime", "local", "--jobs", "2"],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut devices: Vec<String> = env
        .read("standin.log")
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap().to_owned())
        .collect();
    devices.sort();
    assert_eq!(
        devices,
        [
            "CUDA_VISIBLE_DEVICES=0,1,2,3",
            "CUDA_VISIBLE_DEVICES=4,5,6,7"
        ]
    );

    env.write("six.kdl", &experiment(6));
    std::fs::remove_file(env.path("standin.log")).unwrap();
    let out = on_gpu_box(
        &env,
        &["run", "six.kdl", "--runtime", "local", "--jobs", "2"],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("waiting for 6 free GPUs"), "{err}");
    let devices: Vec<String> = env
        .read("standin.log")
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap().to_owned())
        .collect();
    assert_eq!(
        devices,
        [
            "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5",
            "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5"
        ]
    );
}

/// An engine answering `/health` without listing the model in `/v1/models`
/// was reported as not answering `/health`; what it lists is said.
#[test]
fn an_engine_serving_another_model_is_reported_with_what_it_lists() {
    let env = TestEnv::new();
    env.write(
        "other.kdl",
        r#"experiment "other" {
    hardware "nvidia-a100-sxm4-80gb" gpus=8
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0" startup-timeout=2
    workload short {
        dataset random input=16 output=4 seed=1
        prompts 2
    }
    step other engine=vllm gpus=1
}"#,
    );
    let out = on_gpu_box(
        &env,
        &["run", "other.kdl", "--runtime", "local"],
        &[("STANDIN_FAULT", "other-model@Qwen/Qwen3-14B")],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("engine answered /health but /v1/models listed `other/model`, not `Qwen/Qwen3-14B`, within 2s"),
        "{err}"
    );
    assert!(!err.contains("did not answer /health"), "{err}");
}

/// On SIGTERM (Slurm's `scancel`, a time limit) every launch in flight stops
/// its containers with `docker stop`, not only the first to see the signal:
/// killing the docker client leaves a container running.
#[test]
fn sigterm_stops_the_containers_of_every_launch_in_flight() {
    let env = TestEnv::new();
    let tag = format!(
        "sigterm{}x{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    );
    env.write(
        "two.kdl",
        &format!(
            r#"experiment "two" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=8
    model "test/{tag}-14B"
    engine vllm version="0.11.0"
    workload long-output {{
        dataset random input=16 output=8000
        prompts 8
    }}
    step a engine=vllm gpus=4
    step b engine=vllm model="test/{tag}-8B" gpus=4
}}"#
        ),
    );
    let mut child = gpu_box(
        &env,
        &["run", "two.kdl", "--runtime", "docker", "--jobs", "2"],
        &[
            ("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=0,itl_ms=20"),
            ("STANDIN_STOP_SECONDS", "1"),
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let containers = env.path("standin.log.containers");
    let running = || std::fs::read_dir(&containers).map_or(0, |d| d.count());
    let deadline = Instant::now() + Duration::from_secs(30);
    while running() < 2 {
        assert!(Instant::now() < deadline, "two containers never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "perfpipe did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    assert_eq!(running(), 0, "a container was left running");
    assert_eq!(crate::common::live_processes(&tag), Vec::<u32>::new());
}

/// A local model directory this machine lacks (a page's `/workspace/…`, a
/// cluster's storage seen from a laptop): the study plans, keyed by the
/// path alone, and says so; `run` refuses before anything starts, naming
/// the directory, as the engine could not load it.
#[test]
fn a_model_directory_this_machine_lacks_plans_with_a_note_and_run_refuses_it() {
    let env = TestEnv::tiny();
    let absent = "/nonexistent-perfpipe-test/Qwen3-14B";
    let text = env
        .read("tiny.kdl")
        .replace("model \"Qwen/Qwen3-14B\"", &format!("model \"{absent}\""));
    env.write("tiny.kdl", &text);
    let plan = crate::common::exited(env.run(&["plan", "tiny.kdl"]), 0);
    let plan_text = crate::common::stdout(&plan);
    assert!(
        plan_text.contains(&format!(
            "note: model directory `{absent}` is not on this machine"
        )),
        "{plan_text}"
    );
    let run = crate::common::exited(env.run(&["run", "tiny.kdl", "--runtime", "docker"]), 2);
    assert!(
        words(&run).contains(&format!("cannot read model directory `{absent}`")),
        "{}",
        stderr(&run)
    );
    assert!(env.samples().is_empty(), "nothing was measured");
}

#[test]
fn a_runs_gpu_series_is_kept_a_line_per_sample_and_gpu_and_charted() {
    let env = TestEnv::new();
    env.write(
        "series.kdl",
        r#"experiment "series" {
    hardware "nvidia-a100-sxm4-80gb" gpus=8
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload short {
        dataset random input=16 output=32 seed=1
        prompts 3
        concurrency 1
    }
    step two engine=vllm gpus=2
}"#,
    );
    // 3 requests one at a time, 32 tokens 40 ms apart: the load lasts some
    // 4 s, so telemetry samples the run's two GPUs several times.
    let slow = [("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=0,itl_ms=40")];
    let out = on_gpu_box(&env, &["run", "series.kdl", "--runtime", "local"], &slow);
    crate::common::exited(out, 0);
    let (dir, result) = env.results().remove(0);
    let samples = result["telemetry"]["gpu_samples"].as_u64().unwrap();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("logs/telemetry.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let times: Vec<f64> = lines.iter().map(|l| l["t_s"].as_f64().unwrap()).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "every line timed, in the order read: {times:?}"
    );
    let gpu: Vec<(f64, &serde_json::Value)> = lines
        .iter()
        .filter_map(|l| Some((l["t_s"].as_f64()?, l.get("gpu")?)))
        .collect();
    assert_eq!(
        gpu.len() as u64,
        samples,
        "a line per sample the summary counted"
    );
    for index in [0, 1] {
        let of: Vec<&(f64, &serde_json::Value)> =
            gpu.iter().filter(|(_, g)| g["index"] == index).collect();
        assert_eq!(
            of.len() as u64 * 2,
            samples,
            "as many of GPU {index} as of the other"
        );
        // Each sample follows a period of a second: the n-th is n seconds in or later.
        let last = of.last().unwrap().0;
        assert!(
            of.len() >= 2 && of.len() as f64 <= last.floor(),
            "{} by {last} s",
            of.len()
        );
    }
    // What the stand-in prints: GPU 1 runs hot and is power-capped.
    assert_eq!(
        gpu[0].1,
        &serde_json::json!({"index": 0, "power_w": 301.25, "sm_clock_mhz": 1410.0,
            "temperature_c": 66.0, "throttle_reasons": "0x0000000000000000",
            "memory_used_mib": 70123.0, "utilization_pct": 97.0, "throttle_reason_names": []})
    );
    assert_eq!(
        gpu[1].1,
        &serde_json::json!({"index": 1, "power_w": 398.5, "sm_clock_mhz": 1275.0,
            "temperature_c": 84.0, "throttle_reasons": "0x0000000000000004",
            "memory_used_mib": 70123.0, "utilization_pct": 88.0,
            "throttle_reason_names": ["SW power cap"]})
    );

    // The report draws it, the mean of the two GPUs.
    let report = std::fs::read_to_string(env.path("reports/series.md")).unwrap();
    assert!(
        report.contains("](series.gpu-short.png)"),
        "the markdown links the chart: {report}"
    );
    let svg = std::fs::read_to_string(env.path("reports/series.gpu-short.svg")).unwrap();
    assert!(svg.contains("GPU power and utilization over time"), "{svg}");
    let html = std::fs::read_to_string(env.path("reports/series.html")).unwrap();
    assert!(html.contains("GPU power and utilization over time"));
}
