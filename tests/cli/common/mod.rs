//! A temporary project, the real `perfpipe` binary, and snapshot filters.

use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod fake_registry;
pub mod hub;
pub mod real_vllm;
pub mod s3_server;
pub mod slurm;
pub mod web_cache;

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// A project directory of its own, with a fixed clock and host name.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

impl TestEnv {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// A project holding the tiny experiment and its dataset.
    pub fn tiny() -> Self {
        let env = Self::new();
        env.copy_fixture("experiments/tiny.kdl", "tiny.kdl");
        env.copy_fixture("datasets/sharegpt-tiny.json", "sharegpt-tiny.json");
        env
    }

    /// The tiny project, its workloads sending the 1000 requests of the
    /// published blocks the import tests use (a block must fit its
    /// workload's prompts).
    pub fn tiny_importing() -> Self {
        let env = Self::tiny();
        let kdl = env.read("tiny.kdl");
        let kdl = kdl
            .replace("        prompts 30\n", "        prompts 1000\n")
            .replace("        prompts 40\n", "        prompts 1000\n");
        assert_eq!(kdl.matches("prompts 1000").count(), 2);
        env.write("tiny.kdl", &kdl);
        env
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    pub fn copy_fixture(&self, fixture: &str, rel: &str) {
        let text = std::fs::read_to_string(Path::new(FIXTURES).join(fixture)).unwrap();
        self.write(rel, &text);
    }

    /// `perfpipe ARGS` in the project, with a clean, fixed environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_perfpipe"));
        cmd.args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PERFPIPE_HOST", "test-host")
            .env("PERFPIPE_NOW", "1795290164")
            .env("NO_COLOR", "1")
            .env("PERFPIPE_OFFLINE", "1")
            // GPU locks and launch records of this project only: what one
            // test leaves is not another's to reap.
            .env("PERFPIPE_GPU_LOCKS", self.path("gpu-locks"))
            // External clients are the stand-ins on PATH; the environments
            // perfpipe makes are tested against a real guidellm (real_vllm.rs).
            .env("PERFPIPE_HARNESS_FROM", "path")
            .env("COLUMNS", "100");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("perfpipe runs")
    }

    /// `perfpipe import tiny.kdl --step vllm --workload WORKLOAD --from
    /// block.txt`, with `block` written to `block.txt` first.
    pub fn import_block(&self, workload: &str, block: &str) -> Output {
        self.write("block.txt", block);
        self.run(&[
            "import",
            "tiny.kdl",
            "--step",
            "vllm",
            "--workload",
            workload,
            "--from",
            "block.txt",
        ])
    }

    /// `run`, failing the test (and killing perfpipe) when it has not ended
    /// within `secs`: for what used to hang.
    pub fn run_within(&self, secs: u64, args: &[&str]) -> Output {
        output_within(&mut self.cmd(args), secs)
    }

    /// Sample directories under `store/entries`, as `key/sample` paths.
    pub fn samples(&self) -> Vec<String> {
        let mut out = Vec::new();
        let entries = self.path("store/entries");
        for shard in std::fs::read_dir(entries).into_iter().flatten().flatten() {
            for entry in std::fs::read_dir(shard.path()).unwrap().flatten() {
                for sample in std::fs::read_dir(entry.path().join("samples"))
                    .unwrap()
                    .flatten()
                {
                    out.push(format!(
                        "{}/{}",
                        entry.file_name().to_string_lossy(),
                        sample.file_name().to_string_lossy()
                    ));
                }
            }
        }
        out.sort();
        out
    }
}

impl TestEnv {
    /// Every committed sample: its directory and its parsed `result.json`.
    pub fn results(&self) -> Vec<(PathBuf, serde_json::Value)> {
        self.samples()
            .iter()
            .map(|sample| {
                let (key, id) = sample.split_once('/').unwrap();
                let dir = self.path(&format!("store/entries/{}/{key}/samples/{id}", &key[..2]));
                let text = std::fs::read_to_string(dir.join("result.json")).unwrap();
                (dir, serde_json::from_str(&text).unwrap())
            })
            .collect()
    }
}

/// The output of `command`, failing the test (and killing it) when it has
/// not ended within `secs`: for what used to hang.
pub fn output_within(command: &mut Command, secs: u64) -> Output {
    let child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("perfpipe starts");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(output) => output.expect("perfpipe runs"),
        Err(_) => {
            // SAFETY: signals our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
            panic!("`perfpipe {}` did not end within {secs}s", args.join(" "));
        }
    }
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Exit code, stdout and stderr in one text, for snapshots.
pub fn render(output: &Output) -> String {
    format!(
        "exit_code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
        output
            .status
            .code()
            .map_or("signal".into(), |c| c.to_string()),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Filters shared by every CLI snapshot: keys, temp paths, times.
pub fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"\b[0-9a-f]{64}\b", "[KEY]"),
        (r"\b[0-9a-f]{12}\b", "[SHORT-KEY]"),
        (r"/tmp/\.tmp[A-Za-z0-9]+", "[TEMP]"),
        (r"\d+\.\ds\b", "[TIME]"),
    ]
}

#[macro_export]
macro_rules! perfpipe_snapshot {
    ($output:expr, @$snapshot:literal) => {{
        let rendered = $crate::common::render(&$output);
        insta::with_settings!({ filters => $crate::common::filters() }, {
            insta::assert_snapshot!(rendered, @$snapshot);
        });
    }};
    ($name:expr, $output:expr) => {{
        let rendered = $crate::common::render(&$output);
        insta::with_settings!({ filters => $crate::common::filters() }, {
            insta::assert_snapshot!($name, rendered);
        });
    }};
}

/// A runtime for the stand-in servers a test starts.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Serves `app` on a loopback port of its own; returns the port.
pub fn serve(rt: &tokio::runtime::Runtime, app: axum::Router) -> u16 {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    rt.spawn(async move { axum::serve(listener, app).await.unwrap() });
    port
}

/// An answer of `start` then `b'a'`s, `bytes` long in all, a chunk at a
/// time and without a `Content-Length`: only reading it tells its length.
/// `start` opens a JSON string (`{"token":"`), which the answer never
/// closes: a reader that took it whole would find no JSON either.
pub fn huge_body(start: &'static [u8], bytes: usize) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    use futures_util::{StreamExt as _, stream};
    const CHUNK: usize = 64 << 10;
    let start = stream::once(async move { Ok::<_, std::convert::Infallible>(start.to_vec()) });
    let rest = stream::repeat_with(|| Ok(vec![b'a'; CHUNK])).take(bytes / CHUNK);
    axum::body::Body::from_stream(start.chain(rest)).into_response()
}

/// A fresh random string, for secrets each test makes up.
pub fn random_hex() -> String {
    let a = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let b = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("{a:016x}{b:016x}")
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// `output`, after asserting that it exited with `code`: every "does not
/// contain" check reads an output through this first, since a command that
/// failed early (or a refused argument) contains nothing at all.
#[track_caller]
pub fn exited(output: Output, code: i32) -> Output {
    assert_eq!(output.status.code(), Some(code), "{}", render(&output));
    output
}

/// The names `PERFPIPE_TEST_SKIP` takes, each with what it skips, as the
/// README lists them (`every_skip_name_is_in_the_readme`).
pub const SKIP_NAMES: &[(&str, &str)] = &[
    (
        "slurm",
        "the Slurm tests' two-node cluster (root, slurm-wlm, munge)",
    ),
    ("browser", "the HTML report loaded in headless Chromium"),
    (
        "unprivileged",
        "tests where file permissions must bind, as `nobody` through `setpriv` when root",
    ),
    ("vllm", "vLLM's CPU build and guidellm 0.5.3"),
    ("s3", "the `s3://` cache against s3s-fs"),
    (
        "python",
        "`fetch` building a guidellm environment with `/usr/bin/python3`",
    ),
];

/// A test that cannot run on this machine fails, unless `PERFPIPE_TEST_SKIP`
/// (a comma-separated list of [`SKIP_NAMES`]) names it: a run that tests
/// nothing never looks green by accident. Under `CI=true` nothing is skipped.
#[track_caller]
pub fn cannot_test(what: &str, why: &str) {
    assert!(
        SKIP_NAMES.iter().any(|(name, _)| *name == what),
        "`{what}` is not a skip name of common::SKIP_NAMES (list it there and in the README)"
    );
    let listed = std::env::var("PERFPIPE_TEST_SKIP").unwrap_or_default();
    let opted_out = listed.split(',').any(|name| name.trim() == what);
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        opted_out && !ci,
        "cannot test {what} here: {why}; PERFPIPE_TEST_SKIP={what} skips it knowingly (never under CI=true)"
    );
    eprintln!("skipped, as PERFPIPE_TEST_SKIP asks: {what}: {why}");
}

/// `nobody` on Debian: the user a root test drops to where permissions
/// must bind (root writes through them).
const UNPRIVILEGED: u32 = 65534;

/// `command` (one of `TestEnv::cmd`, its environment cleared) run by an
/// unprivileged user who owns the project: as it is when the test is not
/// root, else through util-linux's `setpriv`, with `env` given to `nobody`
/// and the binary linked into it (the target dir may sit where `nobody`
/// cannot reach, as under `/root`). `None` (after `cannot_test`) when root
/// cannot drop its rights.
pub fn unprivileged(env: &TestEnv, command: &Command) -> Option<Command> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        let mut same = Command::new(command.get_program());
        copy_setup(command, &mut same);
        return Some(same);
    }
    let setpriv = Path::new("/usr/bin/setpriv");
    if !setpriv.is_file() {
        cannot_test("unprivileged", "/usr/bin/setpriv (util-linux) is missing");
        return None;
    }
    give_to_nobody(env.dir.path());
    // Linked after the hand-over: the link shares the target dir's file.
    let binary = env.path("perfpipe-bin");
    if std::fs::hard_link(command.get_program(), &binary).is_err() {
        std::fs::copy(command.get_program(), &binary).unwrap();
    }
    let mut dropped = Command::new(setpriv);
    dropped
        .arg(format!("--reuid={UNPRIVILEGED}"))
        .arg(format!("--regid={UNPRIVILEGED}"))
        .args(["--clear-groups", "--"])
        .arg(&binary);
    copy_setup(command, &mut dropped);
    Some(dropped)
}

/// `path` and everything under it, owned by `nobody` (links themselves).
fn give_to_nobody(path: &Path) {
    std::os::unix::fs::lchown(path, Some(UNPRIVILEGED), Some(UNPRIVILEGED)).unwrap();
    if path.symlink_metadata().unwrap().is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            give_to_nobody(&entry.unwrap().path());
        }
    }
}

/// `from`'s arguments, environment (cleared first) and directory onto `to`.
fn copy_setup(from: &Command, to: &mut Command) {
    to.args(from.get_args()).env_clear();
    for (name, value) in from.get_envs() {
        match value {
            Some(value) => to.env(name, value),
            None => to.env_remove(name),
        };
    }
    if let Some(dir) = from.get_current_dir() {
        to.current_dir(dir);
    }
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// stderr with miette's line wrapping and box drawing undone.
pub fn words(out: &Output) -> String {
    stderr(out)
        .split_whitespace()
        .filter(|w| !["│", "╰─▶", "help:"].contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A secret is in none of `files` and in no output perfpipe printed.
pub fn assert_secret_absent(files: &[PathBuf], outputs: &[Output], secret: &str) {
    for path in files {
        let bytes = std::fs::read(path).unwrap();
        assert!(
            !contains(&bytes, secret),
            "{} holds the secret",
            path.display()
        );
    }
    for out in outputs {
        assert!(!contains(&out.stdout, secret), "stdout holds the secret");
        assert!(!contains(&out.stderr, secret), "stderr holds the secret");
    }
}

pub fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Live (not zombie) processes whose command line or environment contains
/// `needle` (children inherit a tag put in perfpipe's environment).
pub fn live_processes(needle: &str) -> Vec<u32> {
    let has = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).contains(needle);
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| pid_alive(*pid))
        .filter(|pid| {
            has(std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
                || has(std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default())
        })
        .collect()
}

/// Whether `pid` is a live (not zombie) process.
pub fn pid_alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next())
        .is_some_and(|state| state != 'Z')
}

/// The README's test section lists every skip name with what it skips, and
/// its command line skips them all: a person running the tests can tell
/// what each skip leaves untested.
#[test]
fn every_skip_name_is_in_the_readme() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let names: Vec<&str> = SKIP_NAMES.iter().map(|(name, _)| *name).collect();
    let line = format!("PERFPIPE_TEST_SKIP={} cargo test --locked", names.join(","));
    assert!(readme.contains(&line), "the README lacks `{line}`");
    for (name, what) in SKIP_NAMES {
        let item = format!("- `{name}`: {what}");
        assert!(readme.contains(&item), "the README lacks `{item}`");
    }
}
