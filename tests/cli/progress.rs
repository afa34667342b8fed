//! Progress while `run` and `bench` measure: live bars on a terminal (a
//! pseudo-terminal from util-linux's `script`), plain lines in a pipe.

use std::process::{Command, Output};

use crate::bench::Server;
use crate::common::TestEnv;

/// `perfpipe ARGS` on a pseudo-terminal: its stdout and stderr, as drawn.
fn in_terminal(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> Output {
    // A wide terminal: a bar is cut to its width.
    let mut line = format!("stty cols 200 rows 40; {}", env!("CARGO_BIN_EXE_perfpipe"));
    for arg in args {
        line.push(' ');
        line.push_str(arg);
    }
    let mut cmd = Command::new("script");
    cmd.args(["-qfec", &line, "/dev/null"])
        .current_dir(env.path(""))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("PERFPIPE_HOST", "test-host")
        .env("PERFPIPE_NOW", "1795290164")
        .env("PERFPIPE_OFFLINE", "1")
        .env("PERFPIPE_GPU_LOCKS", env.path("gpu-locks"))
        .env("TERM", "xterm")
        .env("COLUMNS", "200");
    cmd.envs(vars.iter().copied());
    cmd.output().expect("`script` (util-linux) runs")
}

/// The bench arguments of these tests: 20 requests, 2 in flight, quick.
fn bench_args(port: &str) -> Vec<&str> {
    vec![
        "bench",
        "--port",
        port,
        "--num-prompts",
        "20",
        "--random-input-len",
        "16",
        "--random-output-len",
        "8",
        "--max-concurrency",
        "2",
    ]
}

/// Numbers that vary from run to run, redacted.
fn filters() -> Vec<(&'static str, &'static str)> {
    let mut filters = crate::common::filters();
    filters.extend([
        (r"\d+ output tok/s", "[N] output tok/s"),
        (r"\d+\.\ds elapsed", "[TIME] elapsed"),
        (r"ETA \d+s", "ETA [N]s"),
    ]);
    filters
}

#[test]
fn bench_in_a_pipe_writes_a_line_per_tenth_not_per_request() {
    let server = Server::start();
    let env = TestEnv::new();
    let port = server.port.to_string();
    let out = env
        .cmd(&bench_args(&port))
        .env("PERFPIPE_PROGRESS_SECS", "0")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains('\r') && !stderr.contains('\x1b'),
        "{stderr}"
    );
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(" requests ("))
        .collect();
    insta::with_settings!({ filters => filters() }, {
    insta::assert_snapshot!(lines.join("\n"), @r"
      2/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
      4/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
      6/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
      8/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
      10/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
      12/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
      14/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
      16/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
      18/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
      20/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed
    ");
    });
    // By default a benchmark shorter than 10 s adds no line to a log.
    let quiet = crate::common::exited(env.run(&bench_args(&port)), 0);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains(" requests ("));
}

#[test]
fn bench_on_a_terminal_redraws_one_bar() {
    let server = Server::start();
    let env = TestEnv::new();
    let port = server.port.to_string();
    let out = in_terminal(&env, &[], &bench_args(&port));
    assert_eq!(out.status.code(), Some(0));
    let drawn = String::from_utf8_lossy(&out.stdout);
    // Redrawn in place (carriage return, erase line), not a line per request.
    assert!(drawn.contains("\r\x1b[2K"), "{drawn:?}");
    assert!(drawn.contains("[#"), "a bar: {drawn:?}");
    assert!(drawn.contains("/20 requests (0 failed)"), "{drawn:?}");
    // The bar goes; a line with the final counts stays.
    assert!(
        drawn.contains("  20/20 requests (0 failed) · "),
        "{drawn:?}"
    );
    assert!(!drawn.contains("2/20 requests (0 failed) · 0 output tok/s\r\n"));
    // vLLM's `--disable-tqdm`: no bar at all.
    let mut quiet = bench_args(&port);
    quiet.push("--disable-tqdm");
    let out = in_terminal(&env, &[], &quiet);
    assert_eq!(out.status.code(), Some(0));
    let drawn = String::from_utf8_lossy(&out.stdout);
    assert!(!drawn.contains("requests (0 failed)"), "{drawn:?}");
}

/// One run, on an engine `PERFPIPE_SIM_LOAD_MS` slows.
fn slow_start(env: &TestEnv) {
    env.write(
        "one.kdl",
        r#"experiment "one" {
    hardware "nvidia-h100-sxm5-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload short {
        dataset random input=16 output=8
        prompts 20
        concurrency 2
    }
    step vllm engine=vllm gpus=1
}"#,
    );
}

#[test]
fn run_in_a_pipe_says_what_a_slow_engine_start_waits_for_and_the_requests_done() {
    let env = TestEnv::new();
    slow_start(&env);
    let out = env
        .cmd(&["run", "one.kdl", "--runtime", "sim"])
        .env("PERFPIPE_PROGRESS_SECS", "0")
        .env("PERFPIPE_SIM_LOAD_MS", "1500")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A line each second it starts (every 15 s by default).
    assert!(
        stderr.contains("      engine still starting after 1s (waiting for /health): INFO perfpipe-sim: loading weights\n"),
        "{stderr}"
    );
    let from = stderr.find("      engine ready").unwrap();
    let to = stderr.find("      done in").unwrap();
    insta::with_settings!({ filters => filters() }, {
        insta::assert_snapshot!(&stderr[from..to], @r"
          engine ready after [TIME]
          sending 20 requests
          2/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
          4/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
          6/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
          8/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
          10/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
          12/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
          14/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
          16/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
          18/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed · ETA [N]s
          20/20 requests (0 failed) · [N] output tok/s · [TIME] elapsed
        ");
    });
}

#[test]
fn run_on_a_terminal_spins_while_the_engine_starts_then_draws_a_bar() {
    let env = TestEnv::new();
    slow_start(&env);
    let out = in_terminal(
        &env,
        &[("PERFPIPE_SIM_LOAD_MS", "1500")],
        &["run", "one.kdl", "--runtime", "sim"],
    );
    assert_eq!(out.status.code(), Some(0));
    let drawn = String::from_utf8_lossy(&out.stdout);
    assert!(
        drawn.contains("[1/1] `vllm` × `short` engine starting, 1s, waiting for /health: INFO perfpipe-sim: loading weights"),
        "{drawn:?}"
    );
    assert!(drawn.contains("[1/1] `vllm` × `short` [#"), "{drawn:?}");
    assert!(
        drawn.contains("      20/20 requests (0 failed) · "),
        "{drawn:?}"
    );
    assert!(drawn.contains("      done in "), "{drawn:?}");
}

#[test]
fn run_on_a_terminal_draws_one_bar_per_launch_under_jobs() {
    let env = TestEnv::tiny();
    let out = in_terminal(
        &env,
        &[("PERFPIPE_SIM_LOAD_MS", "1200")],
        &["run", "tiny.kdl", "--runtime", "sim", "--jobs", "2"],
    );
    let drawn = String::from_utf8_lossy(&out.stdout);
    // Two launches start at once, each its own spinner; drawing both takes
    // the cursor up a line (a single bar never does).
    for bar in [
        "`vllm` × `chat` engine starting",
        "`trtllm` × `chat` engine starting",
    ] {
        assert!(drawn.contains(bar), "{bar}: {drawn:?}");
    }
    assert!(drawn.contains("\x1b[1A"), "{drawn:?}");
}
