//! `perfpipe bench` against a real server process (the simulated engine).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{TestEnv, render};

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
fn a_model_list_longer_than_a_model_list_is_not_read_past_its_limit() {
    use axum::routing::get;
    let rt = crate::common::runtime();
    let app = axum::Router::new().route(
        "/v1/models",
        get(|| async { crate::common::huge_body(b"{\"data\":[{\"id\":\"", 64 << 20) }),
    );
    let port = crate::common::serve(&rt, app);
    let out = TestEnv::new().run(&["bench", "--port", &port.to_string(), "--num-prompts", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = crate::common::words(&out);
    assert!(
        err.contains(&format!(
            "cannot list the models of `http://127.0.0.1:{port}`: its answer is longer than the 4194304 bytes perfpipe reads of a model list"
        )),
        "{err}"
    );
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

/// Each refused with exit 2, for its own reason: the message is snapshotted,
/// so an option refused for another (an unknown flag, a missing dataset)
/// shows.
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
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", render(&out));
        let option = args[1].trim_start_matches("--");
        crate::perfpipe_snapshot!(format!("bad_options_{option}"), out);
    }
}

/// A server that answers the `n`-th connection (from 0) with `answer`, after
/// reading its request.
fn server_of(answer: fn(usize, &mut std::net::TcpStream)) -> u16 {
    use std::io::{BufRead, BufReader, Read};
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
                answer(n, &mut stream);
            });
        }
    });
    port
}

const SSE: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
const TOKEN: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" hi\"}}]}\n\n";

/// A server that misbehaves in a different way for each connection, in order.
fn misbehaving_server() -> u16 {
    server_of(|n, stream| {
        use std::io::Write;
        let (sse, token) = (SSE, TOKEN);
        let usage =
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3}}\n\n";
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
    })
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

/// A server that exceeds a different bound for each connection, in order.
fn unbounded_server() -> u16 {
    server_of(|n, stream| {
        use std::io::Write;
        let big = |bytes: usize| "x".repeat(bytes);
        let _ = match n {
            // Tokens forever, ignoring `max_completion_tokens`.
            0 => (|| {
                stream.write_all(SSE.as_bytes())?;
                loop {
                    stream.write_all(TOKEN.as_bytes())?;
                    std::thread::sleep(Duration::from_millis(2));
                }
            })(),
            // One endless line.
            1 => (|| {
                stream.write_all(format!("{SSE}{TOKEN}data: ").as_bytes())?;
                let chunk = big(64 << 10);
                loop {
                    stream.write_all(chunk.as_bytes())?;
                }
            })(),
            // An event trickled a byte at a time, forever.
            2 => (|| {
                stream.write_all(format!("{SSE}{TOKEN}data: {{").as_bytes())?;
                loop {
                    std::thread::sleep(Duration::from_millis(200));
                    stream.write_all(b" ")?;
                }
            })(),
            // A malformed event of 10 MB, over the event bound.
            3 => stream.write_all(format!("{SSE}{TOKEN}data: {}\n\n", big(10 << 20)).as_bytes()),
            // A malformed event of 500 kB, within it.
            4 => stream.write_all(format!("{SSE}{TOKEN}data: {}\n\n", big(500_000)).as_bytes()),
            // An error of 10 MB.
            5 => stream.write_all(
                format!(
                    "HTTP/1.1 500 Internal Server Error\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
                    10 << 20,
                    big(10 << 20)
                )
                .as_bytes(),
            ),
            // An error in the stream of 500 kB.
            _ => stream.write_all(
                format!(
                    "{SSE}{TOKEN}data: {{\"error\":{{\"message\":\"{}\"}}}}\n\n",
                    big(500_000)
                )
                .as_bytes(),
            ),
        };
    })
}

#[test]
fn requests_exceeding_a_bound_are_cut_off_and_say_which_in_short_errors() {
    let port = unbounded_server();
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
        "7",
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
        started.elapsed() < Duration::from_secs(20),
        "every request ends"
    );
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_str(&env.read("r.json")).unwrap();
    let xs = format!("{} … ", "x".repeat(200));
    // The trickle's length so far depends on timing.
    let trickled = "stream stalled: an event did not end within 1s (";
    let mut errors: Vec<String> = json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .map(|e| match e.strip_prefix(trickled) {
            Some(rest) if rest.ends_with(" bytes of it received)") => {
                format!("{trickled}N bytes of it received)")
            }
            _ => e.to_owned(),
        })
        .collect();
    errors.sort();
    let mut expected = [
        "response cut off: more than 19 events for 3 tokens asked".to_owned(),
        "response cut off: an event of more than 1048576 bytes".to_owned(),
        format!("{trickled}N bytes of it received)"),
        "response cut off: an event of more than 1048576 bytes".to_owned(),
        format!("malformed chunk `{xs}(500000 bytes)`"),
        format!("HTTP 500 Internal Server Error: {xs}(more than 65536 bytes)"),
        format!("server error in stream: {xs}(500000 bytes)"),
    ];
    expected.sort();
    assert_eq!(errors, expected);
    // Nothing the size of what the server sent.
    assert!(env.read("r.json").len() < 20_000);
    assert!(out.stderr.len() < 20_000, "{}", out.stderr.len());
}

#[test]
fn a_server_that_sends_no_usage_has_its_text_counted_with_the_tokenizer() {
    // Three chunks of two words each, and no usage chunk.
    let port = server_of(|_, stream| {
        use std::io::Write;
        let chunk =
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" hello world\"}}]}\n\n";
        std::thread::sleep(Duration::from_millis(20));
        let _ = stream.write_all(format!("{SSE}{chunk}").as_bytes());
        for _ in 0..2 {
            std::thread::sleep(Duration::from_millis(20));
            let _ = stream.write_all(chunk.as_bytes());
        }
        let _ = stream.write_all(b"data: [DONE]\n\n");
    });
    let env = TestEnv::new();
    let tokenizer = format!("{}/tokenizer/tokenizer.json", crate::common::FIXTURES);
    let out = env.run(&[
        "bench",
        "--port",
        &port.to_string(),
        "--model",
        "m",
        "--tokenizer",
        &tokenizer,
        "--backend",
        "openai-chat",
        "--num-prompts",
        "2",
        "--random-input-len",
        "4",
        "--random-output-len",
        "8",
        "--save-result",
        "--result-filename",
        "r.json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let json: serde_json::Value = serde_json::from_str(&env.read("r.json")).unwrap();
    // " hello world" three times is 12 tokens of the fixture's tokenizer per
    // response: not its 3 chunks, and not 0.
    assert_eq!(json["total_output_tokens"], 24, "{json}");
    assert_eq!(json["output_tokens_source"], "tokenizer");
    assert!(json["mean_tpot_ms"].as_f64().unwrap() > 0.0);
    assert!(
        err.contains("warning: 2 of 2 responses carried no usage: their output tokens were counted from the streamed text with the tokenizer"),
        "{err}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("Total generated tokens:                  24"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_trickled_event_stalls_even_while_other_requests_stream() {
    use std::sync::atomic::{AtomicU64, Ordering};
    // When the server saw the trickled request's connection closed, in ms.
    static TRICKLE_CLOSED_MS: AtomicU64 = AtomicU64::new(0);
    let port = server_of(|n, stream| {
        use std::io::Write;
        let started = Instant::now();
        let mut send = |bytes: &[u8], pause: u64| {
            std::thread::sleep(Duration::from_millis(pause));
            stream.write_all(bytes).is_ok()
        };
        if !send(format!("{SSE}{TOKEN}").as_bytes(), 0) {
            return;
        }
        if n == 0 {
            // One byte of an event every 200 ms, forever.
            send(b"data: {", 0);
            while send(b" ", 200) {}
            TRICKLE_CLOSED_MS.store(started.elapsed().as_millis() as u64, Ordering::SeqCst);
        } else {
            // Tokens every 200 ms, ignoring the limit: the engine is alive.
            while send(TOKEN.as_bytes(), 200) {}
        }
    });
    let env = TestEnv::new();
    let out = env.run(&[
        "bench",
        "--port",
        &port.to_string(),
        "--model",
        "m",
        "--backend",
        "openai-chat",
        "--num-prompts",
        "2",
        "--max-concurrency",
        "2",
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
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_str(&env.read("r.json")).unwrap();
    let mut errors: Vec<&str> = json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    errors.sort();
    assert_eq!(
        errors[0],
        "response cut off: more than 19 events for 3 tokens asked"
    );
    assert!(
        errors[1].starts_with("stream stalled: an event did not end within 1s ("),
        "{errors:?}"
    );
    // Cut off at its own stall timeout, not once the other stream ended (~4 s).
    let closed = TRICKLE_CLOSED_MS.load(Ordering::SeqCst);
    assert!((900..2500).contains(&closed), "closed after {closed} ms");
}

/// A keep-alive server that ends each stream's chunked body in a write of its
/// own, after `[DONE]`, as servers do; it counts the connections it accepted
/// and the most it held open at once.
fn keep_alive_server() -> (u16, std::sync::Arc<[std::sync::atomic::AtomicUsize; 3]>) {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    // Accepted, open now, most open at once.
    let counts = Arc::new([0, 0, 0].map(AtomicUsize::new));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server_counts = counts.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let counts = server_counts.clone();
            counts[0].fetch_add(1, Ordering::SeqCst);
            let open = counts[1].fetch_add(1, Ordering::SeqCst) + 1;
            counts[2].fetch_max(open, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                'requests: loop {
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            break 'requests;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    let _ = reader.read_exact(&mut body);
                    let usage = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\n\n";
                    let events = format!("{TOKEN}{usage}data: [DONE]\n\n");
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                    let reply = format!("{head}{:x}\r\n{events}\r\n", events.len());
                    if stream.write_all(reply.as_bytes()).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                    if stream.write_all(b"0\r\n\r\n").is_err() {
                        break;
                    }
                }
                counts[1].fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (port, counts)
}

#[test]
fn a_benchmark_reuses_its_connections_and_opens_one_per_stream() {
    use std::sync::atomic::Ordering;
    let (port, counts) = keep_alive_server();
    let env = TestEnv::new();
    let out = env.run(&[
        "bench",
        "--port",
        &port.to_string(),
        "--model",
        "m",
        "--backend",
        "openai-chat",
        "--num-prompts",
        "400",
        "--max-concurrency",
        "16",
        "--random-input-len",
        "4",
        "--random-output-len",
        "1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let [accepted, _, most_open] = counts.as_ref().each_ref().map(|c| c.load(Ordering::SeqCst));
    // `/v1/models` is not asked (the model is given): every connection is a
    // stream's, and each is back in the pool before the next request goes,
    // though the server ends each body in a write of its own, 5 ms later.
    assert_eq!(most_open, 16, "connections open at once");
    assert_eq!(accepted, 16, "connections for 400 requests");
}

/// The simulated engine `bench` can be tried against (docs/metrics.md):
/// an unknown `PERFPIPE_SIM_GPU` is refused with the types it knows.
#[test]
fn the_simulated_engine_names_the_gpu_types_it_knows() {
    let env = TestEnv::new();
    let out = env
        .cmd(&["sim-engine", "vllm", "serve", "Qwen/Qwen3-14B"])
        .env("PERFPIPE_SIM_GPU", "h100")
        .output()
        .unwrap();
    let err = crate::common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("one of nvidia-a100-sxm4-80gb, ")
            && err.contains("huawei-ascend-910b-64gb; got `h100`"),
        "{err}"
    );
}
