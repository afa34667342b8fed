//! `bench` with the `vllm bench serve` options added after v0.11: the
//! requests a server captures and the result file, against what vLLM's
//! source (benchmarks/serve.py, lib/endpoint_request_func.py) does.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::common::{TestEnv, runtime, serve};

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    body: Value,
    request_id: Option<String>,
    headers: HeaderMap,
    /// Seconds after the first request arrived.
    at: f64,
}

/// An OpenAI-compatible server that records every completion request and
/// answers each with two tokens and their usage.
fn capturing_server(rt: &tokio::runtime::Runtime) -> (u16, Arc<Mutex<Vec<Seen>>>) {
    let server = Capturing::start(rt, json!({"data": [{"id": "m"}]}), None);
    (server.port, server.seen)
}

/// A capturing server, and the headers of each `/v1/models` lookup.
struct Capturing {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    lookups: Arc<Mutex<Vec<HeaderMap>>>,
}

impl Capturing {
    /// A server that lists `models`, records every completion request and
    /// answers each with two tokens and their usage, but for the request
    /// `refused` names (by its `x-request-id`): a 401 quoting its
    /// `Authorization`, as a proxy may.
    fn start(rt: &tokio::runtime::Runtime, models: Value, refused: Option<&str>) -> Self {
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let lookups: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
        let first: Arc<Mutex<Option<Instant>>> = Arc::default();
        let (record, looked_up) = (seen.clone(), lookups.clone());
        let refused = refused.map(str::to_owned);
        let app = Router::new()
            .route(
                "/v1/models",
                get(move |headers: HeaderMap| {
                    looked_up.lock().unwrap().push(headers);
                    let models = models.clone();
                    async move { axum::Json(models) }
                }),
            )
            .route(
                "/v1/completions",
                post(move |headers: HeaderMap, body: String| {
                    let (record, first, refused) = (record.clone(), first.clone(), refused.clone());
                    async move {
                        let now = Instant::now();
                        let at = (now - *first.lock().unwrap().get_or_insert(now)).as_secs_f64();
                        let request_id = headers
                            .get("x-request-id")
                            .map(|v| v.to_str().unwrap().to_owned());
                        let authorization = headers
                            .get("authorization")
                            .map(|v| v.to_str().unwrap().to_owned());
                        record.lock().unwrap().push(Seen {
                            body: serde_json::from_str(&body).unwrap(),
                            request_id: request_id.clone(),
                            headers,
                            at,
                        });
                        if request_id.is_some() && request_id == refused {
                            let error = json!({"error": format!("invalid {authorization:?}")});
                            return (
                                axum::http::StatusCode::UNAUTHORIZED,
                                [("content-type", "application/json")],
                                error.to_string(),
                            );
                        }
                        let chunk = |text: &str| {
                            format!("data: {}\n\n", json!({"choices": [{"text": text}]}))
                        };
                        let usage = json!({"choices": [], "usage": {"completion_tokens": 2}});
                        (
                            axum::http::StatusCode::OK,
                            [("content-type", "text/event-stream")],
                            format!(
                                "{}{}data: {usage}\n\ndata: [DONE]\n\n",
                                chunk("a"),
                                chunk(" b")
                            ),
                        )
                    }
                }),
            );
        Self {
            port: serve(rt, app),
            seen,
            lookups,
        }
    }
}

fn bench(env: &TestEnv, port: u16, extra: &[&str]) -> std::process::Output {
    let port = port.to_string();
    let mut args = vec![
        "bench",
        "--port",
        &port,
        "--tokenizer",
        "whitespace",
        "--random-input-len",
        "4",
        "--random-output-len",
        "2",
    ];
    if !extra.contains(&"--num-prompts") {
        args.extend(["--num-prompts", "6"]);
    }
    args.extend(extra);
    env.run(&args)
}

#[test]
fn sampling_options_and_request_ids_go_on_each_request_as_vllm_sends_them() {
    let rt = runtime();
    let (port, seen) = capturing_server(&rt);
    let env = TestEnv::new();
    let out = bench(
        &env,
        port,
        &[
            "--top-p",
            "0.9",
            "--top-k",
            "-1",
            "--min-p",
            "0.05",
            "--temperature",
            "0.7",
            "--request-id-prefix",
            "run7-",
            "--num-warmups",
            "2",
            "--trust-remote-code",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::common::stderr(&out)
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 8);
    // vLLM's payload.update(extra_body): the sampling group on the body.
    for s in &seen {
        assert_eq!(s.body["top_p"], 0.9);
        assert_eq!(s.body["top_k"], -1);
        assert_eq!(s.body["min_p"], 0.05);
        assert_eq!(s.body["temperature"], 0.7);
    }
    // Warm-ups carry no id; request i is `{prefix}{i}`.
    let mut ids: Vec<Option<String>> = seen.iter().map(|s| s.request_id.clone()).collect();
    ids.sort();
    let mut expected: Vec<Option<String>> = vec![None, None];
    expected.extend((0..6).map(|i| Some(format!("run7-{i}"))));
    assert_eq!(ids, expected);

    // Without the options: no sampling field, no temperature either (vLLM
    // 0.32 leaves it to the server), and a random `bench-XXXXXXXX-` prefix.
    let (port, seen) = capturing_server(&rt);
    let out = bench(&env, port, &[]);
    assert_eq!(out.status.code(), Some(0));
    let seen = seen.lock().unwrap().clone();
    for s in &seen {
        assert!(s.body.get("top_p").is_none() && s.body.get("min_p").is_none());
        assert!(s.body.get("temperature").is_none(), "{}", s.body);
        let id = s.request_id.as_deref().unwrap();
        assert!(
            id.starts_with("bench-") && id.len() == "bench-12345678-0".len(),
            "{id}"
        );
    }
}

#[test]
fn backend_vllm_is_the_completions_api_and_the_last_of_a_repeated_option_wins() {
    let rt = runtime();
    let (port, seen) = capturing_server(&rt);
    let env = TestEnv::new();
    // As `vllm bench serve` (argparse) takes them: `--backend vllm` is its
    // name for the completions API, and a repeated option keeps its last value.
    let out = bench(
        &env,
        port,
        &[
            "--backend",
            "vllm",
            "--num-prompts",
            "9",
            "--num-prompts",
            "3",
            "--temperature",
            "0.5",
            "--temperature",
            "0.25",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::common::stderr(&out)
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "the last --num-prompts");
    assert!(
        seen.iter()
            .all(|s| s.body["temperature"] == 0.25 && s.body.get("prompt").is_some())
    );
}

#[test]
fn metadata_and_appended_results_are_written_as_vllm_writes_them() {
    let rt = runtime();
    let (port, _) = capturing_server(&rt);
    let env = TestEnv::new();
    for run in ["1", "2"] {
        let out = bench(
            &env,
            port,
            &[
                "--append-result",
                "--result-filename",
                "r.jsonl",
                "--disable-tqdm",
                "--metadata",
                "tp=1",
                &format!("run = {run}"),
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            crate::common::stderr(&out)
        );
    }
    let text = env.read("r.jsonl");
    let results: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), 2, "{text}");
    for (i, r) in results.iter().enumerate() {
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys[6..10],
            ["num_prompts", "tp", "run", "request_rate"],
            "after num_prompts, trimmed at the first `=`"
        );
        assert_eq!(r["run"], (i + 1).to_string());
        assert_eq!(r["completed"], 6);
    }
    let bad = bench(&env, port, &["--metadata", "tp"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(crate::common::stderr(&bad).contains("invalid `--metadata` `tp`"));
    for empty in ["=", " =x"] {
        let bad = bench(&env, port, &["--metadata", empty]);
        assert_eq!(bad.status.code(), Some(2), "{empty}");
        let err = crate::common::words(&bad);
        assert!(
            err.contains(&format!("invalid `--metadata` `{empty}`")),
            "{err}"
        );
    }
}

#[test]
fn a_linear_ramp_sends_faster_as_it_goes_and_records_its_rates() {
    let rt = runtime();
    let (port, seen) = capturing_server(&rt);
    let env = TestEnv::new();
    let out = bench(
        &env,
        port,
        &[
            "--num-prompts",
            "30",
            "--ramp-up-strategy",
            "linear",
            "--ramp-up-start-rps",
            "20",
            "--ramp-up-end-rps",
            "200",
            "--save-result",
            "--label",
            "ramp",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::common::stderr(&out)
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 30);
    let mut at: Vec<f64> = seen.iter().map(|s| s.at).collect();
    at.sort_by(f64::total_cmp);
    // vLLM's rates: 20 + 180 i / 29. The first ten gaps are drawn at
    // 20 to 75 req/s, the last ten at 144 to 200: the first third takes longer.
    let first = at[10] - at[0];
    let last = at[29] - at[19];
    assert!(first > last, "{first} {last}");
    let name = std::fs::read_dir(env.path(""))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("ramp-ramp-up-linear-20qps-200qps-m-"))
        .expect("vLLM's ramp file name");
    let r: Value = serde_json::from_str(&env.read(&name)).unwrap();
    assert_eq!(r["request_rate"], "inf");
    assert_eq!(
        (
            &r["ramp_up_strategy"],
            &r["ramp_up_start_rps"],
            &r["ramp_up_end_rps"]
        ),
        (&json!("linear"), &json!(20), &json!(200))
    );
    let rps: Vec<u64> = r["rps_change_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["rps"].as_u64().unwrap())
        .collect();
    assert_eq!(rps, (20..=200).collect::<Vec<_>>());
}

#[test]
fn options_vllm_refuses_or_the_server_would_are_refused_before_any_request() {
    let rt = runtime();
    let (port, seen) = capturing_server(&rt);
    let env = TestEnv::new();
    for (args, says) in [
        (
            &["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1"][..],
            "needs both",
        ),
        (
            &[
                "--ramp-up-strategy",
                "linear",
                "--ramp-up-start-rps",
                "1",
                "--ramp-up-end-rps",
                "2",
                "--request-rate",
                "5",
            ],
            "sets the request rate",
        ),
        (
            &[
                "--ramp-up-strategy",
                "exponential",
                "--ramp-up-start-rps",
                "0",
                "--ramp-up-end-rps",
                "2",
            ],
            "rate of 0",
        ),
        (
            &[
                "--ramp-up-strategy",
                "linear",
                "--ramp-up-start-rps",
                "5",
                "--ramp-up-end-rps",
                "2",
            ],
            "above its end",
        ),
        (&["--ramp-up-end-rps", "2"], "need `--ramp-up-strategy`"),
        (&["--top-p", "0"], "invalid `--top-p` `0`"),
        (&["--top-k", "-2"], "invalid `--top-k` `-2`"),
        (&["--min-p", "1.5"], "invalid `--min-p` `1.5`"),
    ] {
        let out = bench(&env, port, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = crate::common::stderr(&out);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // vLLM's other datasets: named, with why.
    for (name, why) in [
        ("prefix_repetition", "numpy"),
        ("hf", "never downloads"),
        ("sonnet", "chat template"),
        ("burstgpt", "pandas"),
        ("random-mm", "images"),
        ("spec_bench", "chat template"),
    ] {
        let out = bench(&env, port, &["--dataset-name", name]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = crate::common::words(&out);
        assert!(
            err.contains(&format!("`--dataset-name {name}` is not supported")) && err.contains(why),
            "{name}: {err}"
        );
    }
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn a_custom_dataset_sends_vllms_prompts_in_vllms_order() {
    let rt = runtime();
    let (port, seen) = capturing_server(&rt);
    let env = TestEnv::new();
    let lines: String = (0..8)
        .map(|i| format!("{{\"prompt\": \"prompt {i}\"}}\n"))
        .collect();
    env.write("prompts.jsonl", &lines);
    let custom = [
        "--dataset-name",
        "custom",
        "--dataset-path",
        "prompts.jsonl",
    ];
    let refused = bench(&env, port, &custom);
    assert_eq!(refused.status.code(), Some(2));
    assert!(crate::common::words(&refused).contains("chat template"));
    let mut args = custom.to_vec();
    args.extend([
        "--custom-skip-chat-template",
        "--num-prompts",
        "3",
        "--max-concurrency",
        "1",
        "--request-id-prefix",
        "c-",
    ]);
    let out = bench(&env, port, &args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::common::stderr(&out)
    );
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by_key(|s| s.request_id.clone());
    let sent: Vec<(&str, u64)> = seen
        .iter()
        .map(|s| {
            (
                s.body["prompt"].as_str().unwrap(),
                s.body["max_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    // vLLM v0.11: random.seed(0); random.shuffle(8 lines) = [4, 1, 5, 2, 0,
    // 3, 7, 6], the first three taken, each asking for 256 tokens.
    assert_eq!(
        sent,
        [("prompt 4", 256), ("prompt 1", 256), ("prompt 5", 256)]
    );
}

/// `Seen`'s header `name`, if sent.
fn header<'a>(seen: &'a Seen, name: &str) -> Option<&'a str> {
    seen.headers.get(name).map(|v| v.to_str().unwrap())
}

#[test]
fn vllm_0_32_s_request_options_set_the_bodies_and_headers_vllm_sends() {
    let rt = runtime();
    let (port, seen) = capturing_server(&rt);
    let env = TestEnv::new();
    let out = bench(
        &env,
        port,
        &[
            "--model",
            "org/m",
            "--served-model-name",
            "served",
            "--top-p",
            "0.9",
            "--temperature",
            "0.5",
            // vLLM's `{**sampling_params, **extra_body}`: these win.
            "--extra-body",
            r#"{"chat_template_kwargs": {"enable_thinking": false}, "top_p": 0.5}"#,
            "--logprobs",
            "3",
            // argparse keeps the last `--header`'s values only.
            "--header",
            "x-dropped=1",
            "--header",
            " x-tenant = lab ",
            "x-request-id=mine",
            "--num-warmups",
            "1",
            "--request-id-prefix",
            "r-",
            "--no-stream",
            "--random-batch-size",
            "1",
            "--save-result",
            "--result-filename",
            "r.json",
        ],
    );
    let out = crate::common::exited(out, 0);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 7, "{}", crate::common::stderr(&out));
    for s in &seen {
        assert_eq!(s.body["model"], "served");
        assert_eq!(s.body["top_p"], 0.5);
        assert_eq!(s.body["temperature"], 0.5);
        assert_eq!(
            s.body["chat_template_kwargs"],
            json!({"enable_thinking": false})
        );
        assert_eq!(s.body["logprobs"], 3);
        assert_eq!(s.body["stream"], true, "--no-stream streams, as vLLM's");
        assert!(
            s.body["prompt"].is_string(),
            "--random-batch-size 1: one prompt"
        );
        assert_eq!(header(s, "x-tenant"), Some("lab"));
        assert_eq!(header(s, "x-dropped"), None);
    }
    // The request id wins over `--header`'s, which the warm-up (no id) keeps.
    let mut ids: Vec<&str> = seen
        .iter()
        .map(|s| header(s, "x-request-id").unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, ["mine", "r-0", "r-1", "r-2", "r-3", "r-4", "r-5"]);
    // `--model` names the model in the result, as vLLM's `model_id`.
    let result: Value = serde_json::from_str(&env.read("r.json")).unwrap();
    assert_eq!(result["model_id"], "org/m");
}

#[test]
fn served_model_name_counts_with_model_only_and_logprobs_go_in_completions_bodies_only() {
    let rt = runtime();
    let (port, seen) = capturing_server(&rt);
    let env = TestEnv::new();
    // Without `--model`: the server's first model, as vLLM's `model_name`.
    let out = bench(
        &env,
        port,
        &["--served-model-name", "served", "--num-prompts", "2"],
    );
    crate::common::exited(out, 0);
    let bodies: Vec<Value> = seen.lock().unwrap().drain(..).map(|s| s.body).collect();
    assert_eq!(bodies.len(), 2);
    assert!(
        bodies
            .iter()
            .all(|b| b["model"] == "m" && b["logprobs"].is_null()),
        "{bodies:?}"
    );
}

#[test]
fn backend_vllm_names_its_result_file_and_backend_vllm_as_vllm_does() {
    let rt = runtime();
    let (port, _) = capturing_server(&rt);
    let env = TestEnv::new();
    let out = bench(
        &env,
        port,
        &["--backend", "vllm", "--save-result", "--num-prompts", "2"],
    );
    crate::common::exited(out, 0);
    let name = std::fs::read_dir(env.path(""))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".json"))
        .expect("a result file");
    assert!(name.starts_with("vllm-infqps-m-"), "{name}");
    let result: Value = serde_json::from_str(&env.read(&name)).unwrap();
    assert_eq!(
        (&result["backend"], &result["endpoint_type"]),
        (&json!("vllm"), &json!("vllm"))
    );
}

#[test]
fn a_random_prefix_begins_every_prompt() {
    let rt = runtime();
    let (port, seen) = capturing_server(&rt);
    let env = TestEnv::new();
    let out = bench(&env, port, &["--random-prefix-len", "3"]);
    crate::common::exited(out, 0);
    let prompts: Vec<Vec<String>> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| {
            s.body["prompt"]
                .as_str()
                .unwrap()
                .split(' ')
                .map(str::to_owned)
                .collect()
        })
        .collect();
    assert_eq!(prompts.len(), 6);
    for p in &prompts {
        assert_eq!(p.len(), 3 + 4, "{p:?}");
        assert_eq!(p[..3], prompts[0][..3], "the prefix is drawn once");
    }
    assert!(prompts.iter().any(|p| p[3..] != prompts[0][3..]));
}

#[test]
fn options_that_would_send_what_vllm_does_not_or_fail_every_request_are_refused() {
    let rt = runtime();
    let (port, seen) = capturing_server(&rt);
    let env = TestEnv::new();
    for (args, says) in [
        (&["--random-batch-size", "4"][..], "embeddings benchmarks"),
        (&["--extra-body", "[1]"], "is not a JSON object"),
        (&["--extra-body", "{"], "invalid `--extra-body`"),
        (&["--header", "x-tenant"], "invalid `--header` `x-tenant`"),
        (&["--header", "bad name=1"], "not a header name"),
        // A value is never quoted: it may be a key.
        (
            &["--header", "Authorization=Bearer sk-9f2\u{7}"],
            "invalid `--header` `Authorization=…`: not a header value",
        ),
        (&["--logprobs", "-2"], "invalid `--logprobs` `-2`"),
    ] {
        let out = bench(&env, port, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = crate::common::words(&out);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("sk-9f2"), "{err}");
    }
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn the_ready_check_sends_the_first_prompt_until_it_succeeds_and_stops_at_its_timeout() {
    let rt = runtime();
    let (port, seen) = capturing_server(&rt);
    let env = TestEnv::new();
    let out = bench(
        &env,
        port,
        &[
            "--ready-check-timeout-sec",
            "30",
            "--request-id-prefix",
            "r-",
        ],
    );
    crate::common::exited(out, 0);
    let seen = seen.lock().unwrap().clone();
    // vLLM's test run: the first prompt, without a request id, then the 6.
    assert_eq!(seen.len(), 7);
    let check = seen.iter().find(|s| s.request_id.is_none()).unwrap();
    let first = seen
        .iter()
        .find(|s| s.request_id.as_deref() == Some("r-0"))
        .unwrap();
    assert_eq!(check.body, first.body);

    // A server that never answers well: the benchmark never starts.
    let tries = Arc::new(Mutex::new(0));
    let counted = tries.clone();
    let app = Router::new().route(
        "/v1/completions",
        post(move || {
            let counted = counted.clone();
            async move {
                *counted.lock().unwrap() += 1;
                (axum::http::StatusCode::SERVICE_UNAVAILABLE, "loading")
            }
        }),
    );
    let down = serve(&rt, app);
    let out = bench(
        &env,
        down,
        &["--model", "m", "--ready-check-timeout-sec", "1"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        crate::common::stderr(&out)
    );
    let err = crate::common::words(&out);
    assert!(
        err.contains("did not answer the first prompt within") && err.contains("HTTP 503"),
        "{err}"
    );
    assert_eq!(*tries.lock().unwrap(), 1, "one try, then the timeout");
}

/// An `https` server of one self-signed certificate (made by the openssl
/// CLI) that answers every completion with two tokens; its port.
fn self_signed_server(dir: &std::path::Path) -> u16 {
    use std::io::{Read, Write};
    let run = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("the openssl CLI (/usr/bin/openssl) is installed");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "key.pem",
        "-out",
        "cert.der",
        "-outform",
        "DER",
        "-days",
        "1",
        "-subj",
        "/CN=perfpipe-test",
    ]);
    run(&[
        "pkcs8", "-topk8", "-nocrypt", "-in", "key.pem", "-outform", "DER", "-out", "key.der",
    ]);
    let cert =
        rustls::pki_types::CertificateDer::from(std::fs::read(dir.join("cert.der")).unwrap());
    let key =
        rustls::pki_types::PrivateKeyDer::Pkcs8(std::fs::read(dir.join("key.der")).unwrap().into());
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap(),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let mut seen = Vec::new();
                let mut buf = [0; 4096];
                // The headers, then the body's length.
                let body_at = loop {
                    let Ok(n) = tls.read(&mut buf) else { return };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&seen[..body_at]).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                while seen.len() < body_at + length {
                    let Ok(n) = tls.read(&mut buf) else { return };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                }
                let events = "data: {\"choices\": [{\"text\": \"a\"}]}\n\ndata: {\"choices\": [{\"text\": \" b\"}]}\n\n\
                              data: {\"choices\": [], \"usage\": {\"completion_tokens\": 2}}\n\ndata: [DONE]\n\n";
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{events}",
                    events.len()
                );
                let _ = tls.flush();
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    port
}

#[test]
fn insecure_accepts_a_self_signed_certificate_that_is_refused_without_it() {
    let env = TestEnv::new();
    let port = self_signed_server(&env.path(""));
    let url = format!("https://127.0.0.1:{port}");
    let args = |insecure: bool| {
        let mut args = vec![
            "bench",
            "--base-url",
            &url,
            "--model",
            "m",
            "--tokenizer",
            "whitespace",
            "--random-input-len",
            "4",
            "--random-output-len",
            "2",
            "--num-prompts",
            "2",
        ];
        if insecure {
            args.push("--insecure");
        }
        args
    };
    let refused = env.run(&args(false));
    assert_eq!(
        refused.status.code(),
        Some(1),
        "{}",
        crate::common::stderr(&refused)
    );
    assert!(crate::common::stderr(&refused).contains("2 of 2 requests failed"));
    let out = crate::common::exited(env.run(&args(true)), 0);
    assert!(
        crate::common::stdout(&out).contains("Successful requests:                     2"),
        "{}",
        crate::common::stdout(&out)
    );
}

/// vLLM 0.32's warm-up (serve.py, `benchmark`): the first request's input,
/// `--num-warmups` times, without request id; not the first N prompts.
#[test]
fn warm_ups_send_the_first_prompt_num_warmups_times_as_vllm_does() {
    let rt = runtime();
    let (port, seen) = capturing_server(&rt);
    let env = TestEnv::new();
    // More warm-ups than prompts: sent in waves, each the first prompt.
    let out = bench(
        &env,
        port,
        &[
            "--num-prompts",
            "3",
            "--num-warmups",
            "5",
            "--request-id-prefix",
            "r-",
        ],
    );
    crate::common::exited(out, 0);
    let seen = seen.lock().unwrap().clone();
    let prompt = |id: Option<&str>| -> Vec<Value> {
        seen.iter()
            .filter(|s| s.request_id.as_deref() == id)
            .map(|s| s.body["prompt"].clone())
            .collect()
    };
    let first = prompt(Some("r-0"));
    assert_eq!(first.len(), 1);
    assert_ne!(first, prompt(Some("r-1")), "the prompts differ");
    assert_eq!(prompt(None), vec![first[0].clone(); 5]);
}

/// vLLM 0.32's `get_first_model_from_server` (serve.py): without
/// `--model`, requests carry `data[0].id` and the result's `model_id` (and
/// the tokenizer, and the file's name) is `data[0].root`;
/// `--served-model-name` counts only with `--model`.
#[test]
fn without_model_requests_carry_the_first_models_id_and_the_result_names_its_root() {
    let rt = runtime();
    let models = json!({"object": "list", "data": [
        {"id": "alias", "object": "model", "root": "org/base-model"},
        {"id": "other", "object": "model", "root": "org/other"},
    ]});
    let server = Capturing::start(&rt, models, None);
    let env = TestEnv::new();
    let out = bench(
        &env,
        server.port,
        &[
            "--num-prompts",
            "2",
            "--served-model-name",
            "ignored",
            "--save-result",
        ],
    );
    crate::common::exited(out, 0);
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.body["model"] == "alias"), "{seen:?}");
    let name = std::fs::read_dir(env.path(""))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".json"))
        .expect("a result file");
    // vLLM's `{label}-{rate}qps-{model_id.split("/")[-1]}-{date}.json`.
    assert!(name.starts_with("openai-infqps-base-model-"), "{name}");
    let result: Value = serde_json::from_str(&env.read(&name)).unwrap();
    assert_eq!(result["model_id"], "org/base-model");
}

/// vLLM 0.32's `_get_headers` (lib/endpoint_request_func.py): every
/// request carries `Authorization: Bearer $OPENAI_API_KEY`, under
/// `--header`'s; the key is in nothing perfpipe prints or writes, though a
/// server quotes it.
#[test]
fn openai_api_key_goes_on_every_request_and_in_nothing_written() {
    let rt = runtime();
    let server = Capturing::start(&rt, json!({"data": [{"id": "m"}]}), Some("r-1"));
    let env = TestEnv::new();
    let key = format!("sk-{}", crate::common::random_hex());
    let port = server.port.to_string();
    let mut args = vec![
        "bench",
        "--port",
        &port,
        "--tokenizer",
        "whitespace",
        "--random-input-len",
        "4",
        "--random-output-len",
        "2",
        "--num-prompts",
        "3",
        "--num-warmups",
        "1",
        "--request-id-prefix",
        "r-",
        "--save-detailed",
        "--result-filename",
        "r.json",
        "--journal",
        "requests.jsonl",
    ];
    let out = env.cmd(&args).env("OPENAI_API_KEY", &key).output().unwrap();
    // The request the server refused failed, quoting the key.
    let out = crate::common::exited(out, 1);
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{}", crate::common::stderr(&out));
    let bearer = format!("Bearer {key}");
    assert!(
        seen.iter()
            .all(|s| header(s, "authorization") == Some(bearer.as_str())),
        "{seen:?}"
    );
    // The model lookup too (vLLM 0.32 sends it `--header`'s only, and fails
    // against a server that wants the key).
    let lookups = server.lookups.lock().unwrap().clone();
    assert_eq!(lookups.len(), 1);
    assert_eq!(lookups[0]["authorization"], bearer.as_str());
    let result: Value = serde_json::from_str(&env.read("r.json")).unwrap();
    assert!(
        result["errors"]
            .to_string()
            .contains("[redacted OPENAI_API_KEY]"),
        "{}",
        result["errors"]
    );
    crate::common::assert_secret_absent(
        &[env.path("r.json"), env.path("requests.jsonl")],
        &[out],
        &key,
    );

    // `--header`'s wins, as vLLM's `headers |= extra_headers`.
    args.extend(["--header", "Authorization=Bearer mine"]);
    server.seen.lock().unwrap().clear();
    let out = env.cmd(&args).env("OPENAI_API_KEY", &key).output().unwrap();
    crate::common::exited(out, 1);
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    assert!(
        seen.iter()
            .all(|s| header(s, "authorization") == Some("Bearer mine"))
    );
}
