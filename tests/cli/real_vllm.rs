//! perfpipe against a real vLLM: its CPU build and a tiny random Qwen3,
//! installed outside the clone by `scripts/real-vllm.sh`, and guidellm 0.5.3
//! by `scripts/real-guidellm.sh` (`scripts/test-deps.sh` runs both). Missing,
//! each test fails unless `PERFPIPE_TEST_SKIP=vllm` (never under `CI=true`).
//! About 2.5 minutes together on 2 cores: one shared server for `bench`,
//! three launches of `run`, a start cut short, and vLLM's own client
//! against a recording server (no engine) for the random prompts, the
//! warm-ups, the model named and the API key.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::real_vllm::{self, ARGS, ENV, RealVllm};
use crate::common::{TestEnv, exited, live_processes, random_hex, stderr, words};

/// A study on this machine's CPU: a step per `--max-num-seqs` of `seqs`,
/// two workloads on each launch, the model `model`, measured by `harness`.
fn cpu_study(model: &Path, seqs: &[u32], harness: &str) -> String {
    let cpu = cpu_line();
    let args: Vec<String> = ARGS.iter().map(|a| format!("{a:?}")).collect();
    let env: Vec<String> = ENV.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    let step = |seqs: u32| {
        let name = format!("seqs{seqs}");
        format!(
            "    step {name} engine=vllm {{\n        args {} \"--max-num-seqs\" \"{seqs}\"\n        env {}\n        workloads short long\n    }}\n",
            args.join(" "),
            env.join(" ")
        )
    };
    format!(
        "experiment \"tiny-cpu\" {{\n    {cpu}\n    model {:?}\n    runtime local\n    engine vllm version=\"{}+cpu\"\n    \
         harness {harness} ignore-eos=#true\n    \
         workload short {{ dataset random input=64 output=64; prompts 32; concurrency 8 }}\n    \
         workload long {{ dataset random input=512 output=16; prompts 16; concurrency 4 }}\n{}}}\n",
        model.display(),
        real_vllm::VERSION,
        seqs.iter().map(|s| step(*s)).collect::<String>(),
    )
}

/// This machine's `hardware "cpu"` line, as `/proc/cpuinfo` describes it.
fn cpu_line() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let facts = perfpipe::cpu::parse(&cpuinfo, &meminfo).unwrap();
    format!(
        "hardware \"cpu\" model={:?} cores={} isa={:?}",
        facts.model,
        facts.cores,
        facts.isa.join(" ")
    )
}

/// The tiny model copied into the project: the test changes its bytes.
fn copy_model(env: &TestEnv, vllm: &RealVllm) -> std::path::PathBuf {
    let to = env.path("model");
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&vllm.model).unwrap().flatten() {
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
    to
}

/// `perfpipe ARGS` with the environment's `vllm` on PATH and a tag its
/// children inherit, to find any of them left.
fn perfpipe(env: &TestEnv, vllm: &RealVllm, tag: &str, args: &[&str]) -> Command {
    let mut cmd = env.cmd(args);
    // These tests choose the clients installed beside the engine.
    cmd.env("PERFPIPE_HARNESS_FROM", "path")
        .env("PATH", vllm.path())
        .env("HOME", env.path("home"))
        .env("PERFPIPE_TEST_TAG", tag);
    cmd
}

fn telemetry_lines(sample: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(sample.join("logs/telemetry.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_cpu_study_runs_on_a_real_vllm_and_is_keyed_by_the_model_s_bytes() {
    let Some(vllm) = RealVllm::installed() else {
        return;
    };
    let env = TestEnv::new();
    let model = copy_model(&env, &vllm);
    env.write("cpu.kdl", &cpu_study(&model, &[4, 8], "builtin"));
    let tag = format!("real-vllm-{}", random_hex());
    let out = perfpipe(&env, &vllm, &tag, &["run", "cpu.kdl"])
        .output()
        .unwrap();
    exited(out, 0);
    assert_eq!(
        live_processes(&tag),
        Vec::<u32>::new(),
        "no vLLM process is left"
    );

    let results = env.results();
    assert_eq!(results.len(), 4, "2 steps × 2 workloads");
    let mut positions = Vec::new();
    for (dir, result) in &results {
        let provenance = &result["provenance"];
        assert_eq!(provenance["kind"], "measured_on_cpu", "{provenance}");
        assert!(provenance.get("gpu").is_none() && provenance.get("driver").is_none());
        assert_eq!(
            result["outcome"]["status"], "success",
            "{}",
            result["outcome"]
        );
        let lines = telemetry_lines(dir);
        assert!(
            !lines.iter().any(|l| l.get("gpu").is_some()),
            "no GPU sample: {lines:?}"
        );
        // vLLM 0.32 names it `vllm:kv_cache_usage_perc`, not
        // `vllm:gpu_cache_usage_perc`: read, it is a number.
        let start = &lines[0]["engine_start"];
        assert!(start["kv_cache_usage"].is_f64(), "{lines:?}");
        assert!(start["running"].is_f64() && start["preemptions_total"].is_f64());
        let processes: Vec<&serde_json::Value> =
            lines.iter().filter_map(|l| l.get("process")).collect();
        assert!(
            processes.len() >= 2,
            "the engine's processes at start and end"
        );
        assert!(
            processes
                .iter()
                .all(|p| p["rss_mib"].as_f64().unwrap() > 100.0)
        );
        let launch = &result["engine_launch"];
        positions.push((
            launch["position"].as_u64().unwrap(),
            launch["prefix_cache"].as_str().unwrap().to_owned(),
        ));
    }
    positions.sort();
    assert_eq!(
        positions,
        [
            (1, "fresh".to_owned()),
            (1, "fresh".to_owned()),
            (2, "reset".to_owned()),
            (2, "reset".to_owned())
        ],
        "the second run on each engine follows a prefix-cache reset"
    );

    let report = env.read("reports/cpu.md");
    assert!(
        report.contains("| Engine CPU (s) | Max engine RSS (MiB) |")
            && !report.contains("Mean power"),
        "{report}"
    );

    // Everything is stored: a second run starts nothing.
    let samples = env.samples();
    let again = exited(
        perfpipe(&env, &vllm, &tag, &["run", "cpu.kdl"])
            .output()
            .unwrap(),
        0,
    );
    assert!(
        stderr(&again).contains("4 runs, 4 in the store, 0 to run"),
        "{}",
        stderr(&again)
    );
    assert_eq!(env.samples(), samples);

    // One byte of the weights: every run is missing.
    let weights = model.join("model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&weights, bytes).unwrap();
    let plan = exited(
        perfpipe(&env, &vllm, &tag, &["plan", "cpu.kdl"])
            .output()
            .unwrap(),
        0,
    );
    let plan = crate::common::stdout(&plan);
    assert!(
        plan.contains("4 runs: 0 cached, 0 failed, 4 missing"),
        "{plan}"
    );
}

#[test]
fn perfpipe_killed_while_vllm_starts_leaves_no_vllm_process_and_vllm_bench_measures_next() {
    let Some(vllm) = RealVllm::installed() else {
        return;
    };
    let env = TestEnv::new();
    // Measured by vLLM's own client from the same environment.
    let harness = format!("vllm-bench version=\"{}\"", real_vllm::VERSION);
    env.write("cpu.kdl", &cpu_study(&vllm.model, &[4], &harness));
    let tag = format!("real-vllm-{}", random_hex());
    let mut child = perfpipe(&env, &vllm, &tag, &["run", "cpu.kdl"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let perfpipe_pid = child.id();
    // Until vLLM's API server has started its engine core: a start well on its way.
    let deadline = Instant::now() + Duration::from_secs(300);
    while vllm_processes(&tag, perfpipe_pid) < 2 {
        assert!(Instant::now() < deadline, "vLLM never started");
        std::thread::sleep(Duration::from_millis(200));
    }
    // SAFETY: kill has no preconditions; the pid is our child's.
    unsafe { libc::kill(perfpipe_pid as i32, libc::SIGKILL) };
    child.wait().unwrap();
    // The engine dies with perfpipe (its parent-death signal), and its
    // engine core with it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !live_processes(&tag).is_empty() {
        assert!(
            Instant::now() < deadline,
            "vLLM processes outlived perfpipe: {:?}",
            live_processes(&tag)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The next run measures: nothing of the killed one is in its way.
    let out = perfpipe(&env, &vllm, &tag, &["run", "cpu.kdl"])
        .output()
        .unwrap();
    exited(out, 0);
    let results = env.results();
    assert_eq!(results.len(), 2);
    for (dir, result) in &results {
        assert_eq!(
            result["outcome"]["status"], "success",
            "{}",
            result["outcome"]
        );
        let argv: Vec<&str> = result["harness_command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(argv[..3], ["vllm", "bench", "serve"]);
        assert!(dir.join("logs/vllm-bench-result.json").is_file());
    }
    assert_eq!(live_processes(&tag), Vec::<u32>::new());
}

/// Tagged processes other than perfpipe itself.
fn vllm_processes(tag: &str, perfpipe: u32) -> usize {
    live_processes(tag)
        .into_iter()
        .filter(|pid| *pid != perfpipe)
        .count()
}

#[test]
fn bench_measures_a_real_vllm_as_vllm_bench_serve_would() {
    let Some(vllm) = RealVllm::installed() else {
        return;
    };
    let server = real_vllm::shared_server(&vllm);
    let env = TestEnv::new();
    let model = server.model.display().to_string();
    let base_url = server.base_url.as_str();
    let out = env
        .cmd(&[
            "bench",
            "--base-url",
            base_url,
            "--backend",
            "vllm",
            "--model",
            &model,
            "--tokenizer",
            &model,
            "--dataset-name",
            "random",
            "--random-input-len",
            "128",
            "--random-output-len",
            "32",
            "--num-prompts",
            "32",
            "--max-concurrency",
            "8",
            "--ignore-eos",
            "--save-result",
            "--result-filename",
            "result.json",
        ])
        .output()
        .unwrap();
    let out = exited(out, 0);
    let result: serde_json::Value = serde_json::from_str(&env.read("result.json")).unwrap();
    assert_eq!(result["completed"], 32, "{}", stderr(&out));
    assert_eq!(result["failed"], 0);
    // With ignore_eos the engine generates every token asked for, and says so.
    assert_eq!(result["total_output_tokens"], 32 * 32);

    // What perfpipe's vLLM code assumes of the server, as 0.32 serves it.
    let version = real_vllm::get(&format!("{base_url}/version")).unwrap();
    let version: serde_json::Value = serde_json::from_str(&version.1).unwrap();
    assert!(
        perfpipe::pyenv::versions_match(
            &format!("{}+cpu", real_vllm::VERSION),
            version["version"].as_str().unwrap()
        ),
        "{version}"
    );
    let (status, metrics) = real_vllm::get(&format!("{base_url}/metrics")).unwrap();
    assert_eq!(status, 200);
    let sample = perfpipe::metrics::telemetry::engine_sample(
        &perfpipe::metrics::telemetry::parse_prometheus(&metrics),
    );
    assert!(
        sample.running.is_some()
            && sample.waiting.is_some()
            && sample.kv_cache_usage.is_some()
            && sample.preemptions_total.is_some(),
        "{sample:?}"
    );
    let (status, _) = real_vllm::post(&format!("{base_url}/reset_prefix_cache")).unwrap();
    assert_eq!(status, 200, "dev mode serves the reset");
}

#[test]
fn a_cpu_study_measured_by_a_real_guidellm_0_5_3_agrees_with_its_own_records() {
    let Some(vllm) = RealVllm::installed() else {
        return;
    };
    let Some(guidellm) = real_vllm::guidellm_bin() else {
        return;
    };
    let env = TestEnv::new();
    let harness = format!("guidellm version=\"{}\"", real_vllm::GUIDELLM_VERSION);
    env.write("cpu.kdl", &cpu_study(&vllm.model, &[8], &harness));
    let tag = format!("real-guidellm-{}", random_hex());
    let path = format!("{}:{}", guidellm.display(), vllm.path());
    let out = perfpipe(&env, &vllm, &tag, &["run", "cpu.kdl"])
        .env("PATH", path)
        .output()
        .unwrap();
    exited(out, 0);
    assert_eq!(live_processes(&tag), Vec::<u32>::new());

    let results = env.results();
    assert_eq!(results.len(), 2, "one step × 2 workloads");
    let mut asked = Vec::new();
    for (dir, result) in &results {
        let outcome = &result["outcome"];
        assert_eq!(outcome["status"], "success", "{outcome}");
        let argv: Vec<&str> = result["harness_command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(argv[..3], ["guidellm", "benchmark", "run"]);
        // The study's workloads: short (64 in, 64 out, 32 prompts) and
        // long (512 in, 16 out, 16 prompts).
        let (prompts, output_len) = if argv.contains(&"prompt_tokens=64,output_tokens=64") {
            (32, 64)
        } else {
            assert!(
                argv.contains(&"prompt_tokens=512,output_tokens=16"),
                "{argv:?}"
            );
            (16, 16)
        };
        asked.push(prompts);
        let stored = &outcome["metrics"];
        assert_eq!(stored["guidellm_version"], real_vllm::GUIDELLM_VERSION);
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("logs/guidellm-benchmarks.json")).unwrap(),
        )
        .unwrap();
        check_against_records(&report["benchmarks"][0], stored, prompts, output_len);
    }
    asked.sort();
    assert_eq!(asked, [16, 32]);
}

/// guidellm's aggregates, as perfpipe stored them, recomputed from the
/// report's per-request records: every request asked for made and recorded,
/// the successful count those in guidellm's measured window (0.5.3 counts
/// only requests that overlap it, and one may fall outside), the means the
/// records' means (TPOT weighted by output tokens and ITL by the gaps between
/// them, as guidellm's distributions are), within 1e-6 relative.
fn check_against_records(
    benchmark: &serde_json::Value,
    stored: &serde_json::Value,
    prompts: u64,
    output_len: u64,
) {
    let made = &benchmark["scheduler_metrics"]["requests_made"];
    assert_eq!(made["total"], prompts, "{made}");
    assert_eq!(made["successful"], prompts, "{made}");
    let records = benchmark["requests"]["successful"].as_array().unwrap();
    assert_eq!(
        records.len() as u64,
        prompts,
        "every request's record is kept"
    );
    let number = |r: &serde_json::Value, key: &str| r[key].as_f64().unwrap();
    let window = &benchmark["scheduler_metrics"];
    let (start, end) = (
        number(window, "measure_start_time"),
        number(window, "measure_end_time"),
    );
    let measured: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| {
            number(r, "request_end_time") >= start && number(r, "request_start_time") <= end
        })
        .collect();
    assert_eq!(
        stored["request_totals"]["successful"],
        measured.len(),
        "guidellm's count is its window's records"
    );
    assert_eq!(stored["request_totals"]["errored"], 0);
    assert!(
        measured.len() as u64 >= prompts - 1,
        "{} of {prompts}",
        measured.len()
    );
    for r in &measured {
        // ignore_eos: the engine generates every token asked for.
        assert_eq!(number(r, "output_tokens"), output_len as f64);
    }
    let weighted = |key: &str, weight: &dyn Fn(&serde_json::Value) -> f64| {
        let total: f64 = measured.iter().map(|r| weight(r)).sum();
        measured
            .iter()
            .map(|r| number(r, key) * weight(r))
            .sum::<f64>()
            / total
    };
    let each = |_: &serde_json::Value| 1.0;
    let latency = measured
        .iter()
        .map(|r| number(r, "request_end_time") - number(r, "request_start_time"))
        .sum::<f64>()
        / measured.len() as f64;
    let recomputed = [
        ("request_latency", latency),
        (
            "time_to_first_token_ms",
            weighted("time_to_first_token_ms", &each),
        ),
        ("prompt_token_count", weighted("prompt_tokens", &each)),
        ("output_token_count", weighted("output_tokens", &each)),
        (
            "time_per_output_token_ms",
            weighted("time_per_output_token_ms", &|r| number(r, "output_tokens")),
        ),
        (
            "inter_token_latency_ms",
            weighted("inter_token_latency_ms", &|r| {
                number(r, "output_tokens") - 1.0
            }),
        ),
    ];
    for (metric, value) in recomputed {
        let mean = stored["successful"][metric]["mean"].as_f64().unwrap();
        assert!(
            (mean - value).abs() <= 1e-6 * value.abs().max(1e-9),
            "{metric}: guidellm's mean {mean}, its records' {value}"
        );
    }
}

/// An OpenAI-compatible server that records every `/v1/completions` body
/// and answers it with two chunks and its `completion_tokens`, and
/// `prompt_tokens` ([`server_count`]) only when `max_tokens` is even: a
/// client's total input tokens then adds its own count of some prompts to
/// the server's of the others, both as vLLM 0.32 counts them. Everything
/// else, `/tokenize` included, is 404: vLLM then skips its prompt
/// re-alignment.
fn recording_server(
    rt: &tokio::runtime::Runtime,
    models: serde_json::Value,
) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<Recorded>>>) {
    use axum::routing::{get, post};
    use serde_json::json;
    let seen: std::sync::Arc<std::sync::Mutex<Vec<Recorded>>> = Default::default();
    let record = seen.clone();
    let app = axum::Router::new()
        .route(
            "/v1/models",
            get(move || async move { axum::Json(models) }),
        )
        .route(
            "/v1/completions",
            post(move |headers: axum::http::HeaderMap, body: String| {
                let record = record.clone();
                async move {
                    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
                    let tokens = body["max_tokens"].clone();
                    let chunk = |text: &str| {
                        let data = json!({"id": "cmpl-0", "object": "text_completion", "created": 1,
                            "choices": [{"index": 0, "text": text, "logprobs": null, "finish_reason": null}]});
                        format!("data: {data}\n\n")
                    };
                    let mut usage = json!({"completion_tokens": tokens});
                    if let Some(count) = server_count(&body) {
                        usage["prompt_tokens"] = count.into();
                    }
                    let authorization = headers
                        .get("authorization")
                        .map(|v| v.to_str().unwrap().to_owned());
                    record.lock().unwrap().push(Recorded {
                        body,
                        authorization,
                    });
                    let usage = json!({"id": "cmpl-0", "object": "text_completion", "created": 1,
                        "choices": [], "usage": usage});
                    (
                        [("content-type", "text/event-stream")],
                        format!(
                            "{}{}data: {usage}\n\ndata: [DONE]\n\n",
                            chunk(" a"),
                            chunk(" b")
                        ),
                    )
                }
            }),
        );
    (crate::common::serve(rt, app), seen)
}

/// A completion request as the recording server saw it.
#[derive(Debug, Clone, PartialEq)]
struct Recorded {
    body: serde_json::Value,
    authorization: Option<String>,
}

/// The model list of a vLLM serving `model` under its own name.
fn listing(model: &str) -> serde_json::Value {
    serde_json::json!({"object": "list", "data": [{"id": model, "object": "model", "root": model}]})
}

/// The recording server's `usage.prompt_tokens` of a body: none when its
/// `max_tokens` is odd, else 10000 and the prompt's bytes, a count no
/// client's own could be (the prompts here are under 200 tokens).
fn server_count(body: &serde_json::Value) -> Option<u64> {
    let prompt = body["prompt"].as_str()?;
    (body["max_tokens"].as_u64()? % 2 == 0).then(|| 10_000 + prompt.len() as u64)
}

/// The recorded bodies, whole, sorted by prompt and `max_tokens`: the
/// multiset a client sent, whatever order its concurrent requests arrived
/// in. No field is left out: both clients name the model as `--model`
/// gives it, and the request id travels in a header, not the body.
fn sent(recorded: &[Recorded]) -> Vec<serde_json::Value> {
    let mut sent: Vec<serde_json::Value> = recorded.iter().map(|r| r.body.clone()).collect();
    sent.sort_by_key(|b| (b["prompt"].to_string(), b["max_tokens"].as_u64()));
    sent
}

#[test]
fn bench_sends_the_random_prompts_vllm_bench_serve_0_32_sends() {
    let Some(vllm) = RealVllm::installed() else {
        return;
    };
    let rt = crate::common::runtime();
    let model = vllm.model.display().to_string();
    let (port, seen) = recording_server(&rt, listing(&model));
    let base_url = format!("http://127.0.0.1:{port}");
    let env = TestEnv::new();
    // A range ratio, a seed other than the default and a vocabulary with
    // a special id inside it (<|endoftext|> is 0): every draw of vLLM's.
    let workload = [
        "--base-url",
        &base_url,
        "--backend",
        "openai",
        "--endpoint",
        "/v1/completions",
        "--model",
        &model,
        "--tokenizer",
        &model,
        "--dataset-name",
        "random",
        "--random-input-len",
        "96",
        "--random-output-len",
        "16",
        "--random-range-ratio",
        "0.5",
        "--num-prompts",
        "48",
        "--seed",
        "11",
        "--max-concurrency",
        "4",
        "--save-result",
        "--result-dir",
    ];

    let vllm_out = Command::new(vllm.bin.join("vllm"))
        .args(["bench", "serve"])
        .args(workload)
        .args([env.path("vllm").to_str().unwrap(), "--result-filename"])
        .args(["result.json", "--disable-tqdm"])
        .env("PATH", vllm.path())
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    let vllm_out = exited(vllm_out, 0);
    // 0.32 sends no initial test request unless `--ready-check-timeout-sec`.
    let by_vllm = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(by_vllm.len(), 48, "{}", stderr(&vllm_out));

    let ours = env
        .cmd(&["bench"])
        .args(workload)
        .args([env.path("ours").to_str().unwrap(), "--result-filename"])
        .args(["result.json"])
        .output()
        .unwrap();
    let ours = exited(ours, 0);
    let by_perfpipe = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(by_perfpipe.len(), 48, "{}", stderr(&ours));

    // The whole bodies, compared as JSON values (the order of their keys
    // aside): prompts, lengths, sampling fields and flags alike.
    let (theirs, mine) = (sent(&by_vllm), sent(&by_perfpipe));
    let differ = theirs.iter().zip(&mine).filter(|(a, b)| a != b).count();
    assert_eq!(
        differ,
        0,
        "{differ} of 48 request bodies differ; first (vLLM's, perfpipe's): {:?}",
        theirs.iter().zip(&mine).find(|(a, b)| a != b)
    );
    let counted_by_server: u64 = theirs.iter().filter_map(server_count).sum();
    assert!(counted_by_server > 0, "some max_tokens are even");

    let result = |dir: &str| -> serde_json::Value {
        serde_json::from_str(&env.read(&format!("{dir}/result.json"))).unwrap()
    };
    let (theirs, mine) = (result("vllm"), result("ours"));
    assert_eq!(theirs["completed"], 48, "{theirs}");
    // The server's count where it gives one, the client's own elsewhere:
    // equal totals need both, since the server's counts are 10000 more
    // than any a client makes.
    assert_eq!(
        mine["total_input_tokens"], theirs["total_input_tokens"],
        "the same prompts, counted alike"
    );
    let total = theirs["total_input_tokens"].as_u64().unwrap();
    assert!(
        total > counted_by_server,
        "{total}: the server's counts taken"
    );
    eprintln!(
        "48 random prompts, seed 11: {} input tokens in both, {} of them the server's",
        total, counted_by_server
    );
}

/// vLLM 0.32's own client and perfpipe against one recording server
/// listing the model under another name, with `OPENAI_API_KEY` set and
/// warm-ups: the same bodies (the warm-ups the first prompt again, the
/// model the listed `id`), each with `Bearer` and the key, and the listed
/// `root` as the result's `model_id`.
#[test]
fn bench_warms_up_names_the_model_and_sends_the_key_as_vllm_bench_serve_0_32_does() {
    let Some(vllm) = RealVllm::installed() else {
        return;
    };
    let rt = crate::common::runtime();
    let model = vllm.model.display().to_string();
    let models = serde_json::json!({"object": "list", "data": [
        {"id": "served-alias", "object": "model", "root": model},
    ]});
    let (port, seen) = recording_server(&rt, models);
    let base_url = format!("http://127.0.0.1:{port}");
    let env = TestEnv::new();
    let key = format!("sk-{}", random_hex());
    let workload = [
        "--base-url",
        &base_url,
        "--backend",
        "openai",
        "--endpoint",
        "/v1/completions",
        "--tokenizer",
        &model,
        "--dataset-name",
        "random",
        "--random-input-len",
        "32",
        "--random-output-len",
        "4",
        "--num-prompts",
        "4",
        "--num-warmups",
        "3",
        "--max-concurrency",
        "2",
        "--seed",
        "5",
        "--save-result",
        "--result-filename",
        "result.json",
        "--result-dir",
    ];
    let vllm_out = Command::new(vllm.bin.join("vllm"))
        .args(["bench", "serve"])
        .args(workload)
        .args([env.path("vllm").to_str().unwrap(), "--disable-tqdm"])
        .env("PATH", vllm.path())
        .env("HF_HUB_OFFLINE", "1")
        .env("OPENAI_API_KEY", &key)
        .output()
        .unwrap();
    let vllm_out = exited(vllm_out, 0);
    let by_vllm = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(by_vllm.len(), 7, "{}", stderr(&vllm_out));
    let ours = env
        .cmd(&["bench"])
        .args(workload)
        .arg(env.path("ours"))
        .env("OPENAI_API_KEY", &key)
        .output()
        .unwrap();
    let ours = exited(ours, 0);
    let by_perfpipe = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(by_perfpipe.len(), 7, "{}", stderr(&ours));

    assert_eq!(sent(&by_vllm), sent(&by_perfpipe));
    let first = &by_vllm[0].body;
    assert_eq!(first["model"], "served-alias");
    let warm_ups = by_vllm.iter().filter(|r| r.body == *first).count();
    // Three warm-ups, then the same request measured.
    assert_eq!(warm_ups, 4, "{by_vllm:?}");
    let bearer = format!("Bearer {key}");
    for recorded in by_vllm.iter().chain(&by_perfpipe) {
        assert_eq!(recorded.authorization.as_deref(), Some(bearer.as_str()));
    }
    let model_id = |dir: &str| -> serde_json::Value {
        let result: serde_json::Value =
            serde_json::from_str(&env.read(&format!("{dir}/result.json"))).unwrap();
        result["model_id"].clone()
    };
    assert_eq!(model_id("vllm"), model.as_str());
    assert_eq!(model_id("ours"), model.as_str());
}

/// guidellm 0.5.3 as perfpipe provides it: `fetch` installs it from the
/// package index (uv's cache, shared with `scripts/real-guidellm.sh`, so it
/// takes seconds and no network) into an environment under the user's
/// cache directory, addressed by what defines it, and records it in the
/// lockfile; a second `fetch` finds it; `run` measures through it with no
/// guidellm on PATH.
#[test]
fn fetch_installs_the_declared_guidellm_into_an_environment_run_uses() {
    let Some(vllm) = RealVllm::installed() else {
        return;
    };
    let Some(guidellm) = real_vllm::guidellm_bin() else {
        return;
    };
    let Some((uv, uv_cache)) = real_vllm::uv() else {
        return;
    };
    let env = TestEnv::new();
    let model = copy_model(&env, &vllm);
    env.write(
        "sim.kdl",
        &format!(
            "experiment \"guidellm-env\" {{\n    hardware \"nvidia-h100-sxm5-80gb\" gpus=1\n    \
             model {:?}\n    runtime sim\n    engine vllm version=\"0.11.0\"\n    \
             harness guidellm version=\"{}\" backend=\"openai\"\n    \
             workload w {{ dataset random input=64 output=16; prompts 8; concurrency 4 }}\n    \
             step vllm engine=vllm gpus=1\n}}\n",
            model.display(),
            real_vllm::GUIDELLM_VERSION
        ),
    );
    // Completions: the simulated engine refuses the list of content parts
    // real guidellm sends to the chat endpoint (422).
    // The interpreter the test's guidellm was made with, by its real path
    // (not a pyenv shim, which needs the user's HOME).
    let python = std::fs::canonicalize(guidellm.join("python")).unwrap();
    let home = env.path("home");
    let path = "/usr/local/bin:/usr/bin:/bin";
    for dir in std::env::split_paths(path) {
        assert!(!dir.join("guidellm").exists(), "no guidellm on PATH");
    }
    let perfpipe = |args: &[&str]| {
        let mut cmd = env.cmd(args);
        cmd.env_remove("PERFPIPE_HARNESS_FROM")
            .env("PATH", path)
            .env("HOME", &home)
            .env("PERFPIPE_PYTHON", &python)
            .env("PERFPIPE_UV", &uv)
            .env("UV_CACHE_DIR", &uv_cache)
            .env("UV_OFFLINE", "1");
        cmd.output().unwrap()
    };
    exited(perfpipe(&["lock", "sim.kdl"]), 0);
    let lockfile = env.read("lockfiles/sim.lock");
    assert!(
        lockfile.contains(
            "input \"harness.env\" {\n    original requirement=\"guidellm==0.5.3\"\n    unpinned\n}"
        ),
        "`lock` installs nothing: {lockfile}"
    );

    let fetched = exited(perfpipe(&["fetch", "sim.kdl"]), 0);
    let said = stderr(&fetched);
    assert!(
        said.contains("perfpipe: installing guidellm==0.5.3 into"),
        "{said}"
    );
    let envs = home.join(".cache/perfpipe/envs");
    let made: Vec<String> = std::fs::read_dir(&envs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    let address = &made[0];
    assert!(address.ends_with("-guidellm-0.5.3"), "{address}");
    let prefix = envs.join(address);
    assert!(prefix.join("bin/guidellm").is_file());
    assert_eq!(
        std::fs::read_dir(envs.join(".building"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().unwrap().is_dir())
            .count(),
        0,
        "nothing half-made is left"
    );
    let lockfile = env.read("lockfiles/sim.lock");
    let record = lockfile
        .lines()
        .skip_while(|l| *l != "input \"harness.env\" {")
        .nth(2)
        .unwrap()
        .to_owned();
    assert!(
        record.starts_with(&format!("    locked env=\"{address}\" packages=\"")),
        "{record}"
    );
    assert!(record.contains(" guidellm==0.5.3 "), "{record}");
    assert!(record.contains(" python=\"3."), "{record}");

    let again = exited(perfpipe(&["fetch", "sim.kdl"]), 0);
    let said = stderr(&again);
    assert!(!said.contains("installing"), "{said}");
    assert!(
        said.contains(&format!(
            "harness.env: present: guidellm==0.5.3 in `{}`",
            prefix.display()
        )),
        "{said}"
    );
    assert_eq!(
        env.read("lockfiles/sim.lock"),
        lockfile,
        "a second fetch changes nothing"
    );

    let ran = exited(perfpipe(&["run", "sim.kdl", "--locked"]), 0);
    assert!(!stderr(&ran).contains("installing"), "{}", stderr(&ran));
    let results = env.results();
    assert_eq!(results.len(), 1);
    let (_, result) = &results[0];
    assert_eq!(
        result["outcome"]["status"], "success",
        "{}",
        result["outcome"]
    );
    assert_eq!(
        result["outcome"]["metrics"]["guidellm_version"],
        real_vllm::GUIDELLM_VERSION
    );
    let argv: Vec<&str> = result["harness_command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let bin = prefix.join("bin");
    assert_eq!(
        argv[..4],
        [
            bin.join("python").to_str().unwrap(),
            bin.join("guidellm").to_str().unwrap(),
            "benchmark",
            "run"
        ]
    );

    // An environment holding other packages than the lockfile records is
    // not the one it pins: refused as a stale lockfile, naming the package.
    let other = lockfile.replace(" guidellm==0.5.3 ", " guidellm==0.5.2 ");
    assert_ne!(other, lockfile);
    env.write("lockfiles/sim.lock", &other);
    let refused = words(&exited(perfpipe(&["fetch", "sim.kdl"]), 3));
    assert!(
        refused.contains("holds other packages than `lockfiles/sim.lock` records for harness.env: guidellm 0.5.2 → 0.5.3"),
        "{refused}"
    );
    assert!(
        refused.contains("perfpipe lock --update harness.env"),
        "{refused}"
    );

    // `run` makes a missing environment itself, as the lockfile records it
    // (every package pinned), offline from uv's cache (the tests' `run` is
    // `--offline`), before any engine starts.
    env.write("lockfiles/sim.lock", &lockfile);
    std::fs::rename(&envs, env.path("envs-moved")).unwrap();
    let ran = exited(perfpipe(&["run", "sim.kdl", "--max-prompts", "4"]), 0);
    let said = stderr(&ran);
    let installing = said
        .lines()
        .position(|l| l.starts_with("perfpipe: installing guidellm==0.5.3 into"))
        .unwrap_or_else(|| panic!("{said}"));
    let line = said.lines().nth(installing).unwrap();
    assert!(
        line.contains("packages as the lockfile records them, offline (from its cache)"),
        "{line}"
    );
    let started = said.lines().position(|l| l.starts_with("[1/1]")).unwrap();
    assert!(
        installing < started,
        "installed before the engine started: {said}"
    );
    assert!(prefix.join("bin/guidellm").is_file(), "at the same address");
    assert_eq!(env.read("lockfiles/sim.lock"), lockfile);
    assert_eq!(env.results().len(), 2);
}
