//! Values that cannot be measured are refused where they enter, with a
//! message and exit 2, before any server is contacted or engine started;
//! a measurement is never lost to a file that cannot be written.

use std::process::Output;
use std::time::{Duration, Instant};

use crate::bench::Server;
use crate::common::{TestEnv, free_port, stderr, stdout, words};
use crate::perfpipe_snapshot;

/// `perfpipe ARGS` exits 2 at once; nothing listens on the port `bench` names,
/// so reaching the server would be exit 1.
fn refused(env: &TestEnv, args: &[&str]) -> Output {
    let started = Instant::now();
    let out = env.run(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{args:?} must be refused at once"
    );
    out
}

fn bench(extra: &[&str]) -> Vec<String> {
    let port = free_port().to_string();
    ["bench", "--port", &port, "--num-prompts", "2"]
        .iter()
        .chain(extra)
        .map(|s| (*s).to_owned())
        .collect()
}

fn refused_bench(env: &TestEnv, extra: &[&str]) -> Output {
    let args = bench(extra);
    refused(env, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// An experiment with one workload of `rate` and an engine of `startup`.
fn experiment(env: &TestEnv, rate: &str, startup: &str) {
    env.write(
        "e.kdl",
        &format!(
            r#"experiment "e" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0" startup-timeout={startup}
    workload w {{
        dataset random input=8 output=8
        prompts 1
        rate {rate}
    }}
    step s engine=vllm gpus=1
}}
"#
        ),
    );
}

#[test]
fn rates_and_burstiness_without_a_schedule_are_refused() {
    let env = TestEnv::new();
    let out = refused_bench(&env, &["--request-rate", "1e-300"]);
    perfpipe_snapshot!("bad_values_rate_1e-300", out);
    refused_bench(&env, &["--request-rate", "0"]);
    refused_bench(&env, &["--request-rate=-5"]);
    refused_bench(&env, &["--request-rate", "nan"]);
    let out = refused_bench(&env, &["--request-rate", "5", "--burstiness", "0"]);
    assert!(words(&out).contains("burstiness must be a finite number above 0"));
    refused_bench(&env, &["--burstiness", "inf"]);

    experiment(&env, "1e-300", "60");
    let out = refused(&env, &["plan", "e.kdl", "--runtime", "sim"]);
    perfpipe_snapshot!("bad_values_experiment_rate_1e-300", out);
}

#[test]
fn timeouts_past_a_week_are_refused() {
    let env = TestEnv::new();
    experiment(&env, "\"inf\"", "60");
    let huge = "18446744073709551615";
    let out = refused(
        &env,
        &[
            "run",
            "e.kdl",
            "--runtime",
            "sim",
            "--startup-timeout",
            huge,
        ],
    );
    perfpipe_snapshot!("bad_values_startup_timeout", out);
    refused(
        &env,
        &["run", "e.kdl", "--runtime", "sim", "--stall-timeout", huge],
    );
    refused(
        &env,
        &[
            "run",
            "e.kdl",
            "--runtime",
            "sim",
            "--startup-timeout",
            "604801",
        ],
    );
    refused_bench(&env, &["--stall-timeout", huge]);
    refused_bench(&env, &["--stall-timeout", "0"]);

    experiment(&env, "\"inf\"", "4294967295");
    let out = refused(&env, &["plan", "e.kdl", "--runtime", "sim"]);
    assert!(
        words(&out).contains("must be between 1 and 604800 (a week)"),
        "{}",
        stderr(&out)
    );
}

/// A number out of bounds says the bound, whatever its form: `1e9` was
/// "invalid digit found in string", and `-5` got clap's tip "use '-- -5'"
/// (then "-5 is not in 1..=4294967295", a bound no count has).
#[test]
fn a_count_or_timeout_out_of_bounds_says_the_bound() {
    let env = TestEnv::new();
    experiment(&env, "\"inf\"", "60");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "e.kdl", "--runtime", "sim"];
        args.extend(extra);
        refused(&env, &args)
    };
    for value in ["1e9", "-5", "2.5"] {
        let said = words(&run(&["--startup-timeout", value]));
        assert!(
            said.contains(&format!(
                "`{value}` is not a whole number of seconds in 1..=604800 (a week)"
            )),
            "{said}"
        );
    }
    perfpipe_snapshot!(
        "bad_values_startup_timeout_1e9",
        run(&["--startup-timeout", "1e9"])
    );
    for value in ["1e9", "2.5", "0"] {
        let said = words(&run(&["--max-prompts", value]));
        assert!(
            said.contains(&format!("`{value}` is not a whole number in 1..=1000000")),
            "{said}"
        );
    }
    let out = run(&["--max-prompts", "-5"]);
    assert!(!words(&out).contains("'-- -5'"), "{}", words(&out));
    perfpipe_snapshot!("bad_values_max_prompts_negative", out);
}

#[test]
fn counts_no_memory_holds_are_refused() {
    let env = TestEnv::new();
    let out = refused_bench(&env, &["--num-warmups", "1000000000"]);
    perfpipe_snapshot!("bad_values_num_warmups", out);
    refused_bench(&env, &["--num-prompts", "1000001"]);
    refused_bench(&env, &["--num-prompts", "0"]);
    refused_bench(&env, &["--random-input-len", "0"]);
    let out = refused_bench(&env, &["--random-input-len", "4000000000"]);
    perfpipe_snapshot!("bad_values_prompt_tokens", out);

    // An experiment's workloads, as `run` would build them.
    for (dataset, prompts, expected) in [
        (
            "random input=8 output=8",
            "4294967295",
            "a workload has at most 1000000 prompts",
        ),
        (
            "random input=4000000000 output=8",
            "1",
            "more than the 1073741824 prompt tokens",
        ),
    ] {
        env.write(
            "e.kdl",
            &format!(
                r#"experiment "e" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload w {{
        dataset {dataset}
        prompts {prompts}
    }}
    step s engine=vllm gpus=1
}}
"#
            ),
        );
        let out = refused(&env, &["plan", "e.kdl", "--runtime", "sim"]);
        assert!(words(&out).contains(expected), "{}", stderr(&out));
    }
}

#[test]
fn warmups_beyond_the_prompts_go_in_waves() {
    let server = Server::start();
    let out = TestEnv::new().run(&[
        "bench",
        "--port",
        &server.port.to_string(),
        "--model",
        "Qwen/Qwen3-14B",
        "--tokenizer",
        "whitespace",
        "--random-input-len",
        "16",
        "--random-output-len",
        "4",
        "--num-prompts",
        "2",
        "--num-warmups",
        "5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("Successful requests:                     2"));
}

#[test]
fn outputs_that_cannot_be_written_are_refused_before_measuring() {
    let env = TestEnv::tiny();
    let out = refused_bench(&env, &["--save-result", "--result-dir", "/proc"]);
    assert!(
        words(&out).contains("cannot write `/proc`"),
        "{}",
        stderr(&out)
    );
    std::fs::create_dir_all(env.path("a-dir")).unwrap();
    let out = refused_bench(&env, &["--journal", "a-dir"]);
    perfpipe_snapshot!("bad_values_journal_dir", out);
    refused_bench(&env, &["--save-result", "--result-filename", "a-dir"]);

    let out = refused(
        &env,
        &["run", "tiny.kdl", "--runtime", "sim", "--report", "a-dir"],
    );
    perfpipe_snapshot!("bad_values_report_dir", out);
    assert!(!stderr(&out).contains("engine ready"));
    // The chart is written beside the report.
    std::fs::create_dir_all(env.path("r.svg")).unwrap();
    let out = refused(
        &env,
        &["run", "tiny.kdl", "--runtime", "sim", "--report", "r.md"],
    );
    assert!(
        words(&out).contains("cannot write `r.svg`"),
        "{}",
        stderr(&out)
    );
    assert!(!env.path("store/entries").exists(), "nothing ran");
}

#[test]
fn a_result_that_cannot_be_written_after_measuring_keeps_its_numbers() {
    let server = Server::start();
    let env = TestEnv::new();
    let port = server.port.to_string();
    let args = [
        "bench",
        "--port",
        &port,
        "--model",
        "Qwen/Qwen3-14B",
        "--tokenizer",
        "whitespace",
        "--random-input-len",
        "16",
        "--random-output-len",
        "4",
        "--num-prompts",
        "2",
        "--save-result",
        "--result-dir",
        "results",
    ];
    // The default file name is known only once measured (the clock is fixed
    // here): a directory in its place makes the write fail after measuring.
    let first = env.run(&args);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let written = std::fs::read_dir(env.path("results"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(&written).unwrap();
    std::fs::create_dir(&written).unwrap();

    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("Serving Benchmark Result"));
    assert!(stdout(&out).contains("Successful requests:                     2"));
    let said = words(&out);
    assert!(said.contains("measured, but cannot write"), "{said}");
    assert!(
        said.contains("the result block above has the numbers"),
        "{said}"
    );
}

#[test]
fn no_concurrency_and_a_nan_burstiness_are_refused_not_a_hang() {
    let env = TestEnv::new();
    let out = refused_bench(&env, &["--max-concurrency", "0"]);
    perfpipe_snapshot!("bad_values_max_concurrency_0", out);
    let out = refused_bench(&env, &["--request-rate", "5", "--burstiness", "nan"]);
    perfpipe_snapshot!("bad_values_burstiness_nan", out);
}

#[test]
fn a_named_tokenizer_loads_or_fails() {
    let env = TestEnv::new();
    let out = refused_bench(&env, &["--tokenizer", "/etc/passwd"]);
    perfpipe_snapshot!("bad_values_tokenizer_passwd", out);
    let out = refused_bench(&env, &["--tokenizer", "no-such/model"]);
    assert!(
        words(&out).contains("no tokenizer `no-such/model` on this machine"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_base_url_is_http_with_a_host() {
    let env = TestEnv::new();
    let out = refused(&env, &["bench", "--base-url", "notaurl"]);
    perfpipe_snapshot!("bad_values_base_url", out);
    for url in ["ftp://h", "http://", "http://h?q=1"] {
        refused(&env, &["bench", "--base-url", url]);
    }
    refused(&env, &["bench", "--host", "a b"]);
}

#[test]
fn a_redirect_is_an_error_naming_its_location() {
    use axum::http::{StatusCode, header};
    let rt = crate::common::runtime();
    let app = axum::Router::new().fallback(|| async {
        (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, "http://elsewhere.invalid/v1")],
        )
    });
    let port = crate::common::serve(&rt, app).to_string();
    let env = TestEnv::new();
    let base = ["bench", "--port", &port, "--num-prompts", "2"];
    let out = env.run(&base);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        words(&out).contains("redirected to `http://elsewhere.invalid/v1`"),
        "{}",
        stderr(&out)
    );
    let args: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--model", "m", "--tokenizer", "whitespace"])
        .collect();
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = words(&out);
    assert!(
        said.contains("2 of 2 requests failed (first: HTTP 307 Temporary Redirect: redirected to `http://elsewhere.invalid/v1`, which is not followed)"),
        "{said}"
    );
}

#[test]
fn range_ratio_and_temperature_are_checked_as_vllm_does() {
    let env = TestEnv::new();
    let out = refused_bench(&env, &["--random-range-ratio", "5"]);
    perfpipe_snapshot!("bad_values_range_ratio", out);
    refused_bench(&env, &["--random-range-ratio", "nan"]);
    refused_bench(&env, &["--random-range-ratio", "1"]);
    refused_bench(&env, &["--random-range-ratio=-0.1"]);
    let out = refused_bench(&env, &["--temperature", "nan"]);
    perfpipe_snapshot!("bad_values_temperature_nan", out);
    refused_bench(&env, &["--temperature=-1"]);
}
