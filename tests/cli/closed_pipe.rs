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

/// `perfpipe ARGS 2>&1 | head -c 0`: standard output and standard error
/// are one pipe, which the reader has closed before perfpipe writes.
fn with_closed_stdout_and_stderr(env: &TestEnv, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    env.cmd(args)
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .output()
        .expect("perfpipe runs")
}

#[test]
fn a_closed_stderr_leaves_the_exit_code_as_it_is_never_a_panic() {
    let env = TestEnv::tiny();
    // An error, said on stderr only.
    let open = env.run(&["plan", "missing.kdl"]);
    assert!(stderr(&open).contains("missing.kdl"), "{}", stderr(&open));
    let closed = with_closed_stdout_and_stderr(&env, &["plan", "missing.kdl"]);
    assert_ne!(closed.status.code(), Some(101), "a panic");
    assert_eq!(closed.status.code(), open.status.code());
    // Success, said on stdout, with notes on stderr.
    let closed = with_closed_stdout_and_stderr(&env, &["plan", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(closed.status.code(), Some(141));
}
