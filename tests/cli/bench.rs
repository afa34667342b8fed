//! `perfpipe bench` against a real server process (the simulated engine).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::TestEnv;

/// The simulated engine on a free port; killed on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_perfpipe"))
            .args([
                "sim-engine",
                "vllm",
                "serve",
                "Qwen/Qwen3-14B",
                "--port",
                &port.to_string(),
            ])
            .env("PERFPIPE_SIM_GPU", "nvidia-h100-sxm5-80gb")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the simulated engine did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn prints_vllms_block_and_writes_vllms_json() {
    let server = Server::start();
    let env = TestEnv::new();
    let port = server.port.to_string();
    let out = env.run(&[
        "bench",
        "--port",
        &port,
        "--backend",
        "openai-chat",
        "--num-prompts",
        "40",
        "--random-input-len",
        "32",
        "--random-output-len",
        "16",
        "--max-concurrency",
        "8",
        "--request-rate",
        "200",
        "--burstiness",
        "0.5",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,99.9",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        "results",
        "--result-filename",
        "r.json",
        "--num-warmups",
        "4",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for row in [
        "============ Serving Benchmark Result ============",
        "Successful requests:                     40",
        "Maximum request concurrency:             8",
        "Request rate configured (RPS):           200.00",
        "Total input tokens:                      1280",
        "Total generated tokens:                  640",
        "P99.9 ITL (ms):",
        "----------------End-to-end Latency----------------",
    ] {
        assert!(stdout.contains(row), "missing `{row}` in\n{stdout}");
    }
    let json: serde_json::Value = serde_json::from_str(&env.read("results/r.json")).unwrap();
    assert_eq!(json["completed"], 40);
    assert_eq!(json["total_output_tokens"], 640);
    assert_eq!(json["request_rate"], 200.0);
    assert_eq!(
        json["model_id"], "Qwen/Qwen3-14B",
        "discovered from /v1/models"
    );
    assert_eq!(json["itls"].as_array().unwrap().len(), 40);
    assert!(json["p99.9_tpot_ms"].as_f64().unwrap() > 0.0);
    assert!(json["exact_max_concurrent_requests"].as_f64().unwrap() <= 8.0);
}

#[test]
fn an_unreachable_server_is_an_error_with_a_hint() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = TestEnv::new().run(&["bench", "--port", &port.to_string(), "--num-prompts", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot list the models"), "{err}");
    assert!(err.contains("is the server running?"), "{err}");
}

#[test]
fn a_refused_request_counts_as_failed_not_dropped() {
    let server = Server::start();
    let out = TestEnv::new().run(&[
        "bench",
        "--port",
        &server.port.to_string(),
        "--model",
        "no-such-model",
        "--num-prompts",
        "3",
        "--save-result",
        "--result-filename",
        "r.json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Successful requests:                     0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Failed requests:                         3"),
        "{stdout}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("3 of 3 requests failed (first: HTTP 404 Not Found"),
        "{err}"
    );
}

#[test]
fn bad_options_exit_2() {
    let env = TestEnv::new();
    for args in [
        &["bench", "--request-rate", "fast"][..],
        &["bench", "--percentile-metrics", "ttft,latency"],
        &["bench", "--goodput", "itl:5"],
        &["bench", "--dataset-name", "sharegpt"],
    ] {
        let out = env.run(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
