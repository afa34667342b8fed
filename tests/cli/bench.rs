//! `perfpipe bench` against a real server process (the simulated engine).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::TestEnv;

/// The simulated engine on a free port; killed on drop.
pub(crate) struct Server {
    child: Child,
    pub(crate) port: u16,
}

impl Server {
    pub(crate) fn start() -> Self {
        let port = crate::common::free_port();
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
        "--journal",
        "requests.jsonl",
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
    // One journal line per measured request (warm-ups are not journaled).
    assert_eq!(env.read("requests.jsonl").lines().count(), 40);
}

#[test]
fn an_unreachable_server_is_an_error_with_a_hint() {
    let port = crate::common::free_port();
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

/// A server that misbehaves in a different way for each connection, in order.
fn misbehaving_server() -> u16 {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let next = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let n = next.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let sse = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                let token =
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" hi\"}}]}\n\n";
                let usage = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3}}\n\n";
                let reply = match n % 8 {
                    0 => format!("{sse}{token}{token}{token}{usage}data: [DONE]\n\n"),
                    1 => "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: 23\r\nconnection: close\r\n\r\n{\"error\":\"overloaded\"}\n".into(),
                    2 => format!("{sse}{token}data: {{\"choices\":[{{\"delta\"\n\ndata: [DONE]\n\n"),
                    3 => format!("{sse}{token}data: {{\"choi"),
                    4 => {
                        let _ = stream.write_all(format!("{sse}{token}").as_bytes());
                        std::thread::sleep(Duration::from_secs(4));
                        String::new()
                    }
                    5 => {
                        std::thread::sleep(Duration::from_secs(4));
                        String::new()
                    }
                    6 => {
                        // Promises a body and keeps the connection open without sending it.
                        let _ = stream.write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: 64\r\n\r\n");
                        std::thread::sleep(Duration::from_secs(60));
                        String::new()
                    }
                    _ => format!("{sse}{token}data: {{\"error\":{{\"message\":\"engine died\",\"code\":500}}}}\n\n"),
                };
                let _ = stream.write_all(reply.as_bytes());
            });
        }
    });
    port
}

#[test]
fn every_kind_of_broken_request_fails_with_its_reason_and_the_benchmark_ends() {
    let port = misbehaving_server();
    let env = TestEnv::new();
    let started = Instant::now();
    let out = env.run(&[
        "bench",
        "--port",
        &port.to_string(),
        "--model",
        "m",
        "--backend",
        "openai-chat",
        "--num-prompts",
        "8",
        "--max-concurrency",
        "1",
        "--random-input-len",
        "4",
        "--random-output-len",
        "3",
        "--stall-timeout",
        "1",
        "--save-detailed",
        "--result-filename",
        "r.json",
    ]);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the benchmark must end"
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_str(&env.read("r.json")).unwrap();
    assert_eq!(
        (json["completed"].as_u64(), json["failed"].as_u64()),
        (Some(1), Some(7))
    );
    assert_eq!(json["total_output_tokens"], 3, "usage of the good request");
    let mut errors: Vec<&str> = json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    // Which request met which misbehaviour depends on arrival order at the server.
    errors.sort();
    let mut expected = [
        "",
        "HTTP 500 Internal Server Error: {\"error\":\"overloaded\"}",
        "malformed chunk `{\"choices\":[{\"delta\"`",
        "stream ended inside an event",
        "stream stalled: the server sent nothing for 1s",
        "no response while the server sent nothing for 1s",
        "HTTP 503 Service Unavailable, and no body while the server sent nothing for 1s",
        "server error in stream: engine died",
    ];
    expected.sort();
    assert_eq!(errors, expected);
}
