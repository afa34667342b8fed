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
    /// Starts `program args` in a new process group with `env` added. Call
    /// it inside a tokio runtime.
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
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: prctl, getppid and raise are async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                // Dies with perfpipe even under SIGKILL, which skips every destructor.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // perfpipe died before the signal was armed.
                if libc::getppid() != parent {
                    libc::raise(libc::SIGKILL);
                }
                Ok(())
            });
        }
        let runtime = tokio::runtime::Handle::current();
        let child = launcher::run(move || {
            let _entered = runtime.enter();
            cmd.spawn()
        })?;
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        Ok(Self { child, pgid })
    }

    /// The engine's pid, which is also its process group.
    pub fn pid(&self) -> i32 {
        self.pgid
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

/// The thread engines are forked from. PR_SET_PDEATHSIG fires when the
/// *thread* that forked the child ends, not the process: tokio's blocking
/// threads end after 10 s idle, which would kill a healthy engine. This one
/// lives as long as perfpipe.
mod launcher {
    use std::sync::mpsc::{Sender, channel};
    use std::sync::{Mutex, OnceLock};

    type Job = Box<dyn FnOnce() + Send>;

    static JOBS: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();

    /// Runs `job` on the launcher thread and returns what it returned.
    pub fn run<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> T {
        let jobs = JOBS.get_or_init(|| {
            let (tx, rx) = channel::<Job>();
            std::thread::Builder::new()
                .name("perfpipe-launcher".into())
                .spawn(move || rx.into_iter().for_each(|job| job()))
                .expect("the launcher thread starts");
            Mutex::new(tx)
        });
        let (done, result) = channel();
        jobs.lock()
            .expect("not poisoned")
            .send(Box::new(move || {
                let _ = done.send(job());
            }))
            .expect("the launcher thread lives as long as perfpipe");
        result.recv().expect("the launcher thread runs every job")
    }
}

/// A port nothing listens on right now (another process may take it before
/// the engine binds; that failure is classified transient and retried).
pub fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}
