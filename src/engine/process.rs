//! An engine process: its own process group, an argv (never a shell), output
//! to a log file; stopped with SIGTERM to the group, then SIGKILL.
//! The only place perfpipe spawns engines.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

/// A running engine; dropping it kills the whole group.
pub struct EngineProcess {
    child: tokio::process::Child,
    pgid: i32,
}

impl EngineProcess {
    /// Starts `program args` in a new process group with `env` added.
    #[expect(
        clippy::disallowed_methods,
        reason = "the one place engines are spawned"
    )]
    pub fn spawn(
        program: &Path,
        args: &[String],
        env: &BTreeMap<String, String>,
        log: &Path,
    ) -> std::io::Result<Self> {
        let log = fs_err::File::create(log)?.into_parts().0;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .envs(env)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .kill_on_drop(true);
        // SAFETY: prctl is async-signal-safe; it only sets a flag on the child.
        unsafe {
            cmd.pre_exec(|| {
                // Dies with perfpipe even under SIGKILL (fires when the spawning thread exits).
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        Ok(Self { child, pgid })
    }

    /// The exit status, if the engine has exited.
    pub fn try_exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits until the engine exits by itself.
    pub async fn exited(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// SIGTERM to the group, `grace` to exit, then SIGKILL to the group.
    pub async fn stop(&mut self, grace: Duration) {
        self.signal_group(libc::SIGTERM);
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            self.signal_group(libc::SIGKILL);
            let _ = self.child.wait().await;
        }
        // Workers the engine started may outlive it; the group goes too.
        self.signal_group(libc::SIGKILL);
    }

    fn signal_group(&self, signal: i32) {
        if self.pgid > 0 {
            // SAFETY: plain syscall on a process group we created.
            unsafe {
                libc::killpg(self.pgid, signal);
            }
        }
    }
}

impl Drop for EngineProcess {
    fn drop(&mut self) {
        self.signal_group(libc::SIGKILL);
    }
}

/// Runs a short-lived tool (`nvidia-smi`, `vllm --version`, `docker stop`) to
/// completion, with an argv and a time limit, and returns its output.
#[expect(clippy::disallowed_methods, reason = "the one place tools are run")]
pub async fn run_tool(
    program: &str,
    args: &[&str],
    timeout: Duration,
) -> std::io::Result<std::process::Output> {
    let child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(timeout, child).await {
        Ok(output) => output,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("`{program}` did not finish within {}s", timeout.as_secs()),
        )),
    }
}

/// Runs a long tool (`docker pull`) to completion, with an argv and a time
/// limit, its output going to perfpipe's stderr (stdout is for reports).
#[expect(clippy::disallowed_methods, reason = "the one place tools are run")]
pub async fn run_tool_to_stderr(
    program: &str,
    args: &[&str],
    timeout: Duration,
) -> std::io::Result<ExitStatus> {
    use std::os::fd::AsFd;
    let stderr =
        || -> std::io::Result<Stdio> { Ok(std::io::stderr().as_fd().try_clone_to_owned()?.into()) };
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stderr()?)
        .stderr(stderr()?)
        .kill_on_drop(true)
        .spawn()?;
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => status,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("`{program}` did not finish within {}s", timeout.as_secs()),
        )),
    }
}

/// A port nothing listens on right now (another process may take it before
/// the engine binds; that failure is classified transient and retried).
pub fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}
