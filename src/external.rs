//! Short external commands perfpipe runs and reads (`nvidia-smi`, `docker`,
//! `vllm --version`, `sbatch`, `squeue`): an argv (never a shell), a time
//! limit, captured output with the environment's secrets redacted, and one
//! error type. The only place they are run. Long-lived engines are not
//! these: they live in `engine::process`, in process groups of their own.

use std::ffi::OsStr;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` did not finish within {limit:?}")]
    TimedOut { command: String, limit: Duration },
    #[error("`{command}` failed ({status}){}", stderr_suffix(.stderr))]
    Failed {
        command: String,
        status: ExitStatus,
        stderr: String,
    },
}

fn stderr_suffix(stderr: &str) -> String {
    match stderr.trim() {
        "" => String::new(),
        text => format!(": {text}"),
    }
}

/// What a command printed, and how it ended.
#[derive(Debug, Clone)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// This output when the command succeeded, else [`Error::Failed`].
    pub fn success(self, program: &str, args: &[&str]) -> Result<Self, Error> {
        if self.status.success() {
            Ok(self)
        } else {
            Err(Error::Failed {
                command: command_line(program, args),
                status: self.status,
                stderr: self.stderr,
            })
        }
    }
}

/// What a command gets besides its argv.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extra<'a> {
    /// Variables added to its environment.
    pub env: &'a [(&'a str, &'a OsStr)],
    /// Its standard input (else none).
    pub stdin: Option<&'a [u8]>,
}

/// Runs `program args` to completion within `limit` and returns its output
/// whatever its exit status.
pub async fn output(program: &str, args: &[&str], limit: Duration) -> Result<Output, Error> {
    output_with(program, args, Extra::default(), limit).await
}

/// [`output`] with an environment or an input.
pub async fn output_with(
    program: &str,
    args: &[&str],
    extra: Extra<'_>,
    limit: Duration,
) -> Result<Output, Error> {
    let mut expression = extra
        .env
        .iter()
        .fold(expression(program, args), |e, (name, value)| {
            e.env(name, value)
        });
    // duct's first redirection of a stream wins: choose stdin once.
    expression = match extra.stdin {
        Some(input) => expression.stdin_bytes(input),
        None => expression.stdin_null(),
    }
    .stdout_capture()
    .stderr_capture();
    let out = wait(program, args, expression, limit).await?;
    // What a tool prints may end up in a message or a result.
    let secrets = crate::secrets::env();
    Ok(Output {
        status: out.status,
        stdout: secrets
            .redact(&String::from_utf8_lossy(&out.stdout))
            .into_owned(),
        stderr: secrets
            .redact(&String::from_utf8_lossy(&out.stderr))
            .into_owned(),
    })
}

/// Runs `program args` and returns what it printed when it succeeded; a
/// failure carries its stderr.
pub async fn read(program: &str, args: &[&str], limit: Duration) -> Result<String, Error> {
    read_with(program, args, Extra::default(), limit).await
}

/// [`read`] with an environment or an input.
pub async fn read_with(
    program: &str,
    args: &[&str],
    extra: Extra<'_>,
    limit: Duration,
) -> Result<String, Error> {
    Ok(output_with(program, args, extra, limit)
        .await?
        .success(program, args)?
        .stdout)
}

/// Runs a long command (`docker pull`) to success, everything it prints going
/// to perfpipe's stderr (stdout is for reports).
pub async fn run_to_stderr(program: &str, args: &[&str], limit: Duration) -> Result<(), Error> {
    let expression = expression(program, args).stdin_null().stdout_to_stderr();
    let out = wait(program, args, expression, limit).await?;
    if !out.status.success() {
        return Err(Error::Failed {
            command: command_line(program, args),
            status: out.status,
            stderr: String::new(),
        });
    }
    Ok(())
}

#[expect(clippy::disallowed_methods, reason = "the one place tools are run")]
fn expression(program: &str, args: &[&str]) -> duct::Expression {
    duct::cmd(program, args).unchecked()
}

/// Starts `expression` and waits for it on a blocking thread (duct blocks).
/// The command is killed when `limit` passes or when the caller stops
/// waiting (a dropped future, as on Ctrl-C).
async fn wait(
    program: &str,
    args: &[&str],
    expression: duct::Expression,
    limit: Duration,
) -> Result<std::process::Output, Error> {
    let handle = Arc::new(expression.start().map_err(|source| Error::Spawn {
        program: program.to_owned(),
        source,
    })?);
    let _kill_on_drop = KillOnDrop(Arc::clone(&handle));
    let waiting = Arc::clone(&handle);
    let waited = tokio::task::spawn_blocking(move || {
        waiting
            .wait_timeout(limit)
            .map(|finished| finished.cloned())
    })
    .await
    .expect("waiting on a command does not panic");
    match waited {
        Ok(Some(out)) => Ok(out),
        Ok(None) => Err(Error::TimedOut {
            command: command_line(program, args),
            limit,
        }),
        Err(source) => Err(Error::Spawn {
            program: program.to_owned(),
            source,
        }),
    }
}

/// Kills a command nobody waits for any more; a no-op once it exited.
struct KillOnDrop(Arc<duct::Handle>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
    }
}

fn command_line(program: &str, args: &[&str]) -> String {
    std::iter::once(program)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn output_is_captured_whatever_the_status() {
        let out = output("sh", &["-c", "echo out; echo err >&2; exit 3"], LIMIT)
            .await
            .unwrap();
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
        assert_eq!(out.status.code(), Some(3));
    }

    #[tokio::test]
    async fn an_input_and_variables_reach_the_command() {
        let value = std::ffi::OsString::from("from-env");
        let extra = Extra {
            env: &[("PERFPIPE_EXTERNAL_TEST", &value)],
            stdin: Some(b"from-stdin"),
        };
        let out = read_with(
            "sh",
            &["-c", "cat; echo \" $PERFPIPE_EXTERNAL_TEST\""],
            extra,
            LIMIT,
        )
        .await
        .unwrap();
        assert_eq!(out, "from-stdin from-env\n");
    }

    #[tokio::test]
    async fn a_failure_carries_the_command_and_its_stderr() {
        let err = read("sh", &["-c", "echo nope >&2; exit 2"], LIMIT)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Failed { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.starts_with("`sh -c echo nope >&2; exit 2` failed ("),
            "{text}"
        );
        assert!(text.ends_with("): nope"), "{text}");
    }

    #[tokio::test]
    async fn a_missing_program_names_the_program() {
        let err = read("perfpipe-no-such-tool", &["--version"], LIMIT)
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot run `perfpipe-no-such-tool`: "),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_command_past_its_limit_is_killed() {
        let started = std::time::Instant::now();
        let err = read("sleep", &["30"], Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::TimedOut { .. }), "{err:?}");
        assert_eq!(err.to_string(), "`sleep 30` did not finish within 200ms");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
