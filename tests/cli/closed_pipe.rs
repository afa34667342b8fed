//! A reader that closes the pipe early (`perfpipe plan … | head -1`) ends
//! perfpipe quietly with 141 (128 + SIGPIPE), as the shell reports a tool
//! SIGPIPE ended, never with a panic.

use std::process::Stdio;

use crate::common::{TestEnv, stderr};

/// `perfpipe ARGS` whose standard output is a pipe the reader has closed
/// before perfpipe writes anything.
fn with_closed_stdout(env: &TestEnv, args: &[&str]) -> std::process::Output {
    let mut child = env
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("perfpipe starts");
    drop(child.stdout.take());
    child.wait_with_output().expect("perfpipe runs")
}

#[test]
fn a_closed_pipe_ends_plan_and_gc_quietly_with_141() {
    let env = TestEnv::tiny();
    env.write("store/tmp/proc-4242-dead/owner.lock", "");
    for args in [
        &["plan", "tiny.kdl", "--runtime", "sim"][..],
        &["store", "gc", "--dry-run", "tiny.kdl"],
    ] {
        let out = with_closed_stdout(&env, args);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("panicked") && !stderr(&out).contains("Broken pipe"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_full_disk_behind_stdout_is_an_error_not_a_panic() {
    let env = TestEnv::tiny();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = env
        .cmd(&["plan", "tiny.kdl", "--runtime", "sim"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("perfpipe: cannot write to standard output: No space left on device"),
        "{}",
        stderr(&out)
    );
}
