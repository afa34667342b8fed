//! What a killed perfpipe leaves, GPUs that hold processes perfpipe did not
//! start, two perfpipe processes on one store, and secrets in the environment;
//! on the stand-in GPU box of `runtimes.rs`.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{
    TestEnv, assert_secret_absent, contains, exited, files_under, live_processes, pid_alive,
    random_hex, stderr, words,
};
use crate::runtimes::gpu_box;

/// One vLLM step serving slowly enough to be killed mid-benchmark.
fn slow_study(env: &TestEnv, gpus: u32) {
    env.write(
        "slow.kdl",
        &format!(
            r#"experiment "slow" {{
    hardware "nvidia-a100-sxm4-80gb" gpus={gpus}
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload long {{
        dataset random input=16 output=200 seed=1
        prompts 4
    }}
    step vllm engine=vllm gpus=1
}}"#
        ),
    );
}

/// Waits until `ready` holds, or fails after 30 s.
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The one launch record a running perfpipe wrote: `(pid, container)`.
fn recorded_launch(env: &TestEnv) -> Option<(i32, Option<String>)> {
    let root = env.path("gpu-locks/launches");
    for owner in std::fs::read_dir(root).ok()?.flatten() {
        for record in std::fs::read_dir(owner.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let text = std::fs::read_to_string(record.path()).unwrap_or_default();
            let Ok(launch) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue; // the owner's lock file, or a record being replaced
            };
            let pid = launch["pid"].as_i64()? as i32;
            if pid > 0 {
                return Some((pid, launch["container"].as_str().map(str::to_owned)));
            }
        }
    }
    None
}

/// Starts a perfpipe that the test kills: what it writes is not the test's
/// to show (its progress, and the engine's errors as it dies, read like the
/// test's own failures in `cargo test`'s output), so it goes nowhere.
fn spawn_to_kill(mut perfpipe: Command) -> Child {
    perfpipe
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// SIGKILLs perfpipe once its engine streams, as the OOM killer or `kill -9` would.
fn kill_mid_benchmark(env: &TestEnv, mut perfpipe: Child) -> (i32, Option<String>) {
    wait_for("the engine to start", || recorded_launch(env).is_some());
    // Ready within a moment; its 4 requests then stream for 4 s.
    std::thread::sleep(Duration::from_millis(1500));
    perfpipe.kill().unwrap();
    perfpipe.wait().unwrap();
    recorded_launch(env).unwrap()
}

#[test]
fn a_container_left_by_a_killed_perfpipe_is_removed_by_the_next() {
    let env = TestEnv::new();
    slow_study(&env, 1);
    let args = ["run", "slow.kdl", "--runtime", "docker", "--offline"];
    let slow = [("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=0,itl_ms=20")];
    let perfpipe = spawn_to_kill(gpu_box(&env, &args, &slow));
    let (_, container) = kill_mid_benchmark(&env, perfpipe);
    let container = container.expect("docker launches are recorded with their container");

    // The `docker run` client died with perfpipe; its container did not.
    let pid_file = env.path(&format!("standin.log.containers/{container}"));
    let engine: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pid_alive(engine), "the container outlives its client");

    let out = gpu_box(&env, &args, &[]).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("stopped what a killed perfpipe left: `docker` (pid ")
            && err.contains(&format!("container `{container}`), 1 process")),
        "{err}"
    );
    wait_for("the container to be gone", || !pid_alive(engine));
    let log = env.read("standin.log");
    assert!(
        log.contains(&format!(
            "docker\tCUDA_VISIBLE_DEVICES=\trm\t--force\t{container}"
        )),
        "{log}"
    );
    // Stopped before the new engine took the GPU; the run then completed.
    let removed = log.find("\trm\t--force").unwrap();
    assert!(log[removed..].contains("\trun\t"), "{log}");
    assert_eq!(env.samples().len(), 1);
    assert!(
        recorded_launch(&env).is_none(),
        "records are gone with the run"
    );
}

#[test]
fn a_perfpipe_waiting_for_a_killed_ones_gpu_stops_its_container_and_measures() {
    let env = TestEnv::new();
    slow_study(&env, 1);
    let args = ["run", "slow.kdl", "--runtime", "docker", "--offline"];
    let slow = [
        ("STANDIN_GPU_COUNT", "1"),
        ("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=0,itl_ms=20"),
    ];
    let first = spawn_to_kill(gpu_box(&env, &args, &slow));
    wait_for("the first engine to start", || {
        recorded_launch(&env).is_some()
    });
    // The second waits for the run's lock (and the one GPU) the first holds.
    let second = gpu_box(&env, &args, &slow)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (_, container) = kill_mid_benchmark(&env, first);
    let container = container.expect("docker launches are recorded with their container");

    let out = second.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // How many of its processes were still alive when reaped depends on
    // timing (the stand-in's child may have died with it): 1 or 2.
    assert!(
        err.contains(&format!("container `{container}`), 1 process"))
            || err.contains(&format!("container `{container}`), 2 processes")),
        "{err}"
    );
    assert!(!err.contains("Conflict"), "{err}");
    let results = env.results();
    let [(_, result)] = &results[..] else {
        panic!("one sample: {results:?}");
    };
    assert_eq!(
        result["outcome"]["status"], "success",
        "measured, not a failure: {result}"
    );
    // Removed before the second engine took the GPU.
    let log = env.read("standin.log");
    let removed = log
        .find("\trm\t--force")
        .expect("the container was removed");
    assert_eq!(log[removed..].matches("\trun\t").count(), 1, "{log}");
    let again = gpu_box(&env, &args, &slow).output().unwrap();
    assert!(stderr(&again).contains("0 to run"), "{}", stderr(&again));
}

#[test]
fn plan_lists_leftovers_and_a_run_with_nothing_to_do_stops_them() {
    let env = TestEnv::new();
    slow_study(&env, 1);
    let args = ["run", "slow.kdl", "--runtime", "docker", "--offline"];
    let first = gpu_box(&env, &args, &[]).output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    // A second sample, killed while measured: its container is left.
    let more = [&args[..], &["--samples", "2"]].concat();
    let slow = [("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=0,itl_ms=20")];
    let perfpipe = spawn_to_kill(gpu_box(&env, &more, &slow));
    let (_, container) = kill_mid_benchmark(&env, perfpipe);
    let container = container.unwrap();
    let pid_file = env.path(&format!("standin.log.containers/{container}"));
    let engine: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();

    let plan = gpu_box(&env, &["plan", "slow.kdl", "--runtime", "docker"], &[])
        .output()
        .unwrap();
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    assert!(
        words(&plan).contains("a killed perfpipe left `docker` (pid ")
            && words(&plan).contains(&format!(
                "container `{container}`); the next `run` removes the container"
            )),
        "{}",
        stderr(&plan)
    );
    assert!(pid_alive(engine), "plan stops nothing");
    let mut filters = vec![
        (r"\(pid \d+", "(pid [PID]"),
        (r"container `[^`]+`", "container [NAME]"),
    ];
    filters.extend(crate::common::filters());
    insta::with_settings!({ filters => filters }, {
        insta::assert_snapshot!(crate::common::render(&plan), @r"
        exit_code: 0
        ----- stdout -----
        experiment `slow` · runtime `docker` · store `store`
        lockfile `lockfiles/slow.lock`: 4 inputs, 2 unpinned: engine.vllm, model.Qwen/Qwen3-14B@main

        STEP  WORKLOAD  KEY           STATUS   DETAIL
        vllm  long      [SHORT-KEY]  cached   1 sample

        1 run: 1 cached, 0 failed, 0 missing; 0 to run (0 engine launches)

        ----- stderr -----
        perfpipe: a killed perfpipe left `docker` (pid [PID], container [NAME]); the next `run` removes the container
        ");
    });

    let cached = gpu_box(&env, &args, &[]).output().unwrap();
    let err = stderr(&cached);
    assert_eq!(cached.status.code(), Some(0), "{err}");
    assert!(err.contains("0 to run"), "{err}");
    assert!(
        err.contains(&format!("container `{container}`), 1 process")),
        "{err}"
    );
    wait_for("the container to be gone", || !pid_alive(engine));
    assert!(recorded_launch(&env).is_none(), "its record is forgotten");
}

#[test]
fn workers_of_an_engine_whose_perfpipe_was_killed_are_stopped_by_the_next() {
    let env = TestEnv::new();
    slow_study(&env, 1);
    let args = ["run", "slow.kdl", "--runtime", "local"];
    let fault = [
        ("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=0,itl_ms=20"),
        ("STANDIN_FAULT", "worker@Qwen/Qwen3-14B"),
    ];
    let perfpipe = spawn_to_kill(gpu_box(&env, &args, &fault));
    let (engine, _) = kill_mid_benchmark(&env, perfpipe);

    // The engine died with perfpipe (parent-death signal); its worker did not.
    wait_for("the engine to die with perfpipe", || {
        !pid_alive(engine as u32)
    });
    let group = |pgid: i32| {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| pid_alive(*pid))
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                stat.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse::<i32>().ok())
                    == Some(pgid)
            })
            .count()
    };
    assert_eq!(group(engine), 1, "the worker is left");

    let out = gpu_box(&env, &args, &[]).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "stopped what a killed perfpipe left: `vllm` (pid {engine}), 1 process"
        )),
        "{err}"
    );
    assert_eq!(group(engine), 0, "the worker was stopped");
    assert_eq!(env.samples().len(), 1);
}

#[test]
fn gpus_holding_foreign_processes_are_not_used_and_their_oom_is_not_cached() {
    let env = TestEnv::new();
    env.write(
        "two.kdl",
        r#"experiment "two" {
    hardware "nvidia-a100-sxm4-80gb" gpus=4
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload short {
        dataset random input=16 output=16 seed=1
        prompts 2
    }
    step first engine=vllm gpus=1
    step second engine=vllm model="Qwen/Qwen3-8B" gpus=1
}"#,
    );
    // GPU 0 runs someone else's job.
    env.write(
        "gpu-apps",
        "GPU-00000000-standin, 999, python3 train.py, 81000\n",
    );
    let apps = env.path("gpu-apps");
    let faults = [
        ("STANDIN_GPU_COUNT", "4"),
        ("STANDIN_GPU_APPS", apps.to_str().unwrap()),
        ("STANDIN_FAULT", "oom-foreign-once@Qwen/Qwen3-8B"),
    ];
    let out = gpu_box(&env, &["run", "two.kdl", "--runtime", "local"], &faults)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let devices: Vec<(String, String)> = env
        .read("standin.log")
        .lines()
        .filter(|l| l.contains("\tserve\t"))
        .map(|l| {
            let fields: Vec<&str> = l.split('\t').collect();
            (fields[1].to_owned(), fields[3].to_owned())
        })
        .collect();
    let on = |gpu: &str, model: &str| (format!("CUDA_VISIBLE_DEVICES={gpu}"), model.to_owned());
    assert_eq!(
        devices,
        [
            on("1", "Qwen/Qwen3-14B"),
            // A process appeared on GPU 1 as the engine loaded: its OOM is
            // retried elsewhere, not cached as the configuration's failure.
            on("1", "Qwen/Qwen3-8B"),
            on("2", "Qwen/Qwen3-8B"),
        ]
    );
    assert!(
        err.contains("transient failure, retrying: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (processes perfpipe did not start hold memory on its GPUs: GPU 1: pid 4242 `python3` (70312 MiB))"),
        "{err}"
    );
    let statuses: Vec<String> = env
        .results()
        .iter()
        .map(|(_, r)| r["outcome"]["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses, ["success", "success"]);
}

#[test]
fn a_run_waits_while_every_gpu_holds_a_foreign_process() {
    let env = TestEnv::new();
    slow_study(&env, 1);
    env.write("gpu-apps", "GPU-00000000-standin, 999, python3, 81000\n");
    let apps = env.path("gpu-apps");
    let err_file = env.path("stderr");
    let one_gpu = [
        ("STANDIN_GPU_COUNT", "1"),
        ("STANDIN_GPU_APPS", apps.to_str().unwrap()),
    ];
    let mut perfpipe = gpu_box(&env, &["run", "slow.kdl", "--runtime", "local"], &one_gpu)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .spawn()
        .unwrap();
    wait_for("the waiting message", || {
        std::fs::read_to_string(&err_file)
            .unwrap_or_default()
            .contains("GPU 0: pid 999 `python3` (81000 MiB)")
    });
    assert!(!env.path("standin.log").exists(), "no engine started");
    // The job holds the GPU a while longer, then ends; the run goes on.
    let held = Duration::from_secs(3);
    std::thread::sleep(held);
    std::fs::write(&apps, "").unwrap();
    let status = perfpipe.wait().unwrap();
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert!(status.success(), "{err}");
    assert!(
        err.contains("waiting for 1 free GPU; not using GPUs that hold processes perfpipe did not start:\n        GPU 0: pid 999 `python3` (81000 MiB)"),
        "{err}"
    );
    // The engine's start-up is timed from its launch, not from the wait.
    let ready_after: f64 = err
        .split_once("engine ready after ")
        .and_then(|(_, rest)| rest.split_once('s'))
        .and_then(|(secs, _)| secs.parse().ok())
        .unwrap_or_else(|| panic!("no ready line: {err}"));
    assert!(ready_after < held.as_secs_f64(), "{err}");
    assert_eq!(env.samples().len(), 1);
}

#[test]
fn two_perfpipes_on_one_store_measure_each_run_once() {
    let env = TestEnv::new();
    env.write(
        "pair.kdl",
        r#"experiment "pair" {
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload a {
        dataset random input=16 output=32 seed=1
        prompts 4
    }
    workload b {
        dataset random input=16 output=32 seed=2
        prompts 4
    }
    step first engine=vllm gpus=1
    step second engine=vllm model="Qwen/Qwen3-8B" gpus=1
}"#,
    );
    // One GPU: the two processes also contend for it.
    let args = ["run", "pair.kdl", "--runtime", "local"];
    let slow = [
        ("STANDIN_GPU_COUNT", "1"),
        ("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=0,itl_ms=5"),
    ];
    let start = || {
        gpu_box(&env, &args, &slow)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (one, two) = (start(), start());
    let outs: Vec<Output> = [one, two]
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for out in &outs {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    }
    let measured: usize = outs
        .iter()
        .map(|o| stderr(o).matches("      done in ").count())
        .sum();
    assert_eq!(measured, 4, "each of the 4 runs measured by one process");
    let samples = env.samples();
    let mut keys: Vec<&str> = samples
        .iter()
        .map(|s| s.split('/').next().unwrap())
        .collect();
    keys.dedup();
    assert_eq!((samples.len(), keys.len()), (4, 4), "{samples:?}");
}

#[test]
fn secrets_in_the_environment_reach_no_file_and_no_output() {
    let env = TestEnv::new();
    slow_study(&env, 1);
    let secret = format!("secret-{}", random_hex());
    let password = format!("hunter2-{}", random_hex());
    let mut outputs = Vec::new();
    for runtime in ["local", "docker"] {
        let args = ["run", "slow.kdl", "--runtime", runtime, "--offline"];
        let vars = [
            ("HF_TOKEN", secret.as_str()),
            ("PERFPIPE_REGISTRY_PASSWORD", password.as_str()),
            // The engine prints its environment to its log.
            ("STANDIN_FAULT", "print-env@Qwen/Qwen3-14B"),
        ];
        let out = gpu_box(&env, &args, &vars).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        outputs.push(out);
    }
    // The results of both runtimes, each read back (this one report used to
    // refuse: two runtimes' results, none named).
    for runtime in ["local", "docker"] {
        let report = ["report", "slow.kdl", "--runtime", runtime];
        outputs.push(exited(env.run(&report), 0));
        let explain = ["explain", "slow.kdl", "vllm", "--runtime", runtime];
        outputs.push(exited(env.run(&explain), 0));
    }
    let written = files_under(env.dir.path());
    let engine_logs: Vec<&Path> = written
        .iter()
        .filter(|p| p.ends_with("engine.log"))
        .map(|p| p.as_path())
        .collect();
    assert_eq!(engine_logs.len(), 2, "{written:?}");
    // The local engine printed its environment; the log kept says so, redacted.
    let logs: String = engine_logs
        .iter()
        .map(|log| std::fs::read_to_string(log).unwrap())
        .collect();
    assert!(logs.contains("HF_TOKEN=[redacted HF_TOKEN]"), "{logs}");
    assert!(
        logs.contains("PERFPIPE_REGISTRY_PASSWORD=[redacted PERFPIPE_REGISTRY_PASSWORD]"),
        "{logs}"
    );
    // Docker passes the token by name only; the stand-in records its argv.
    assert!(env.read("standin.log").contains("\t-e\tHF_TOKEN\t"));
    for secret in [&secret, &password] {
        assert_secret_absent(&written, &outputs, secret);
        assert!(live_processes(secret).is_empty());
    }
}

/// One vLLM step of three quick requests.
fn quick_study(env: &TestEnv, extra: &str) {
    env.write(
        "quick.kdl",
        &format!(
            r#"experiment "quick" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload short {{
        dataset random input=16 output=4 seed=1
        prompts 3
        concurrency 1
    }}
    step vllm engine=vllm gpus=1 {{
        {extra}
    }}
}}"#
        ),
    );
}

/// A secret's value as it appears inside a JSON string, and inside one twice.
fn escaped_forms(secret: &str) -> [String; 2] {
    let once = serde_json::to_string(secret).unwrap();
    let once = once[1..once.len() - 1].to_owned();
    let twice = serde_json::to_string(&once).unwrap();
    [once.clone(), twice[1..twice.len() - 1].to_owned()]
}

#[test]
fn secrets_a_server_echoes_reach_no_file_and_no_output_and_counts_are_no_secrets() {
    let env = TestEnv::new();
    quick_study(&env, "");
    // JSON escapes a quote and a backslash: a replace on serialized bytes misses it.
    let token = format!("hf_\"q\\{}", random_hex());
    let password = format!("hunter2-{}", random_hex());
    let short = "key-555";
    let vars = [
        ("HF_TOKEN", token.as_str()),
        ("PERFPIPE_REGISTRY_PASSWORD", password.as_str()),
        ("MY_API_KEY", short),
        ("TOKENIZERS_PARALLELISM", "false"),
        ("MAX_TOKENS", "512"),
        ("STANDIN_FAULT", "echo-secrets@Qwen/Qwen3-14B"),
    ];
    let args = ["run", "quick.kdl", "--runtime", "local"];
    let run = gpu_box(&env, &args, &vars).output().unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let report = exited(
        gpu_box(&env, &["report", "quick.kdl"], &vars)
            .output()
            .unwrap(),
        0,
    );
    let outputs = vec![run, report];

    // The server's errors are kept, with the secrets redacted and the rest as sent.
    let (dir, _) = &env.results()[0];
    let journal = std::fs::read_to_string(dir.join("logs/requests.jsonl")).unwrap();
    let mut errors: Vec<String> = journal
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter_map(|l| l["record"]["error"].as_str().map(str::to_owned))
        .collect();
    errors.sort();
    let echoed = "HF_TOKEN=[redacted HF_TOKEN] PERFPIPE_REGISTRY_PASSWORD=[redacted PERFPIPE_REGISTRY_PASSWORD] MY_API_KEY=[redacted MY_API_KEY] TOKENIZERS_PARALLELISM=false MAX_TOKENS=512";
    // An error body is quoted by its first 200 bytes.
    assert_eq!(errors.len(), 2, "{errors:?}");
    let body = r#"HTTP 500 Internal Server Error: {"error":{"message":"bad credentials: "#;
    assert!(
        errors[0].starts_with(&format!("{body}{}", &echoed[..155])),
        "{errors:?}"
    );
    assert_eq!(
        errors[1],
        format!("server error in stream: lost the session of {echoed}")
    );
    let engine_log = std::fs::read_to_string(dir.join("logs/engine.log")).unwrap();
    assert!(
        engine_log.contains(&format!("INFO:     environment: {echoed}")),
        "{engine_log}"
    );

    let written = files_under(env.dir.path());
    for secret in [token.as_str(), password.as_str(), short] {
        assert_secret_absent(&written, &outputs, secret);
        for form in escaped_forms(secret) {
            assert_secret_absent(&written, &outputs, &form);
        }
    }
    for out in &outputs {
        assert!(!contains(&out.stdout, "[redacted TOKENIZERS"));
        assert!(!contains(&out.stderr, "[redacted MAX_TOKENS"));
    }
}

#[test]
fn a_secret_too_short_to_redact_is_refused_before_anything_runs() {
    let env = TestEnv::new();
    quick_study(&env, "");
    let args = ["run", "quick.kdl", "--runtime", "local"];
    let out = gpu_box(&env, &args, &[("MY_API_KEY", "abc")])
        .output()
        .unwrap();
    let err = words(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`MY_API_KEY` holds a secret of 3 characters; perfpipe redacts secrets of 4 or more and refuses shorter ones"),
        "{err}"
    );
    assert!(!err.contains("abc"), "{err}");
    assert!(!env.path("standin.log").exists(), "nothing ran");
    assert!(!env.path("lockfiles").exists(), "nothing was written");
}

#[test]
fn a_secret_in_key_material_is_refused_before_anything_runs() {
    let env = TestEnv::new();
    let secret = format!("hf_{}", random_hex());
    quick_study(&env, &format!(r#"args "--api-key" "{secret}""#));
    let args = ["run", "quick.kdl", "--runtime", "local"];
    let out = gpu_box(&env, &args, &[("HF_TOKEN", secret.as_str())])
        .output()
        .unwrap();
    let err = words(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "the key material of `vllm` × `short` holds the value of `HF_TOKEN`, a secret"
        ),
        "{err}"
    );
    assert!(!contains(&out.stderr, &secret));
    assert!(!env.path("standin.log").exists(), "nothing ran");
    assert!(!env.path("store").exists(), "nothing was stored");
}

#[test]
fn an_engine_log_that_is_not_utf8_is_kept_whole_and_its_failure_matches() {
    let env = TestEnv::new();
    quick_study(
        &env,
        r#"expect-failure short "Unsupported SM version for FP8 block scaling GEMM""#,
    );
    let args = ["run", "quick.kdl", "--runtime", "local"];
    let out = gpu_box(
        &env,
        &args,
        &[("STANDIN_FAULT", "fail-binary@Qwen/Qwen3-14B")],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (dir, result) = &env.results()[0];
    assert_eq!(
        result["outcome"]["error"],
        "RuntimeError: Unsupported SM version for FP8 block scaling GEMM"
    );
    let log = std::fs::read(dir.join("logs/engine.log")).unwrap();
    assert!(
        log.windows(2).any(|w| w == b"\xff\xfe"),
        "the bytes are kept: {}",
        String::from_utf8_lossy(&log)
    );
    assert!(contains(
        &log,
        "RuntimeError: Unsupported SM version for FP8 block scaling GEMM"
    ));
}

#[test]
fn oversized_events_leave_a_small_store_entry_report_and_output() {
    let env = TestEnv::new();
    quick_study(&env, "");
    let args = ["run", "quick.kdl", "--runtime", "local"];
    let fault = [("STANDIN_FAULT", "oversized-sse@Qwen/Qwen3-14B")];
    let out = gpu_box(&env, &args, &fault).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (dir, _) = &env.results()[0];
    let journal = std::fs::read_to_string(dir.join("logs/requests.jsonl")).unwrap();
    let mut errors: Vec<String> = journal
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter_map(|l| l["record"]["error"].as_str().map(str::to_owned))
        .collect();
    errors.sort();
    assert_eq!(
        errors,
        [
            format!("malformed chunk `{} … (500000 bytes)`", "x".repeat(200)),
            "response cut off: an event of more than 1048576 bytes".to_owned(),
        ]
    );
    let entry: u64 = files_under(dir)
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    assert!(entry < 200_000, "the sample holds {entry} bytes");
    let report = std::fs::metadata(env.path("reports/quick.md"))
        .unwrap()
        .len();
    assert!(report < 50_000, "the report is {report} bytes");
    assert!(out.stderr.len() + out.stdout.len() < 50_000);
}
