//! vLLM's CPU build and the tiny random Qwen3 that `scripts/real-vllm.sh`
//! installs outside the clone, and one `vllm serve` of them shared by every
//! test that needs a server: started when a test first asks, stopped when the
//! test process ends (a watchdog stops its process group then, whatever
//! ended the process).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The version `scripts/real-vllm.sh` installs.
pub const VERSION: &str = "0.32.0";

/// What the engine needs on a 2-core machine without GPUs: 1 GiB of KV
/// cache, and `/reset_prefix_cache` (a dev-mode endpoint since 0.10).
pub const ENV: &[(&str, &str)] = &[
    ("VLLM_CPU_KVCACHE_SPACE", "1"),
    ("VLLM_SERVER_DEV_MODE", "1"),
];

/// Serve arguments that keep a start short: no graph capture, a short context.
pub const ARGS: &[&str] = &[
    "--max-model-len",
    "2048",
    "--dtype",
    "bfloat16",
    "--enforce-eager",
];

pub struct RealVllm {
    /// The virtual environment's `bin`, with `vllm` in it.
    pub bin: PathBuf,
    /// The tiny model's directory.
    pub model: PathBuf,
}

impl RealVllm {
    /// The installation, or `None` after [`super::cannot_test`] (which fails
    /// the test unless `PERFPIPE_TEST_SKIP=vllm` and not `CI=true`).
    pub fn installed() -> Option<Self> {
        let cache = cache();
        let venv = cache.join(format!("vllm-{VERSION}"));
        let model = cache.join("qwen3-tiny");
        let ready = venv.join(".perfpipe-installed").is_file()
            && model.join(".perfpipe-made").is_file()
            && venv.join("bin/vllm").is_file();
        if !ready {
            super::cannot_test(
                "vllm",
                &format!(
                    "vLLM's CPU build is not installed in `{}` (scripts/real-vllm.sh installs it)",
                    cache.display()
                ),
            );
            return None;
        }
        Some(Self {
            bin: venv.join("bin"),
            model,
        })
    }

    /// PATH with the environment's `vllm` first.
    pub fn path(&self) -> String {
        format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display())
    }
}

/// The guidellm version `scripts/real-guidellm.sh` installs (the lab's pages').
pub const GUIDELLM_VERSION: &str = "0.5.3";

/// The `bin` of guidellm's own environment, with `guidellm` in it, or `None`
/// after [`super::cannot_test`] (as [`RealVllm::installed`]).
pub fn guidellm_bin() -> Option<PathBuf> {
    let venv = cache().join(format!("guidellm-{GUIDELLM_VERSION}"));
    let ready = venv.join(".perfpipe-installed").is_file() && venv.join("bin/guidellm").is_file();
    if !ready {
        super::cannot_test(
            "vllm",
            &format!(
                "guidellm {GUIDELLM_VERSION} is not installed in `{}` (scripts/real-guidellm.sh installs it)",
                venv.display()
            ),
        );
        return None;
    }
    Some(venv.join("bin"))
}

/// The `uv` `scripts/python-env.sh` finds (the one it installed into the
/// test cache, else one on PATH) and the cache it filled (`UV_CACHE_DIR`,
/// else the user's), or `None` after [`super::cannot_test`].
pub fn uv() -> Option<(PathBuf, PathBuf)> {
    let installed = cache().join("uv/bin/uv");
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("uv"))
            .find(|u| u.is_file())
    });
    let Some(uv) = installed.is_file().then_some(installed).or(on_path) else {
        super::cannot_test(
            "vllm",
            "no `uv` in the test cache or on PATH (scripts/real-guidellm.sh installs one)",
        );
        return None;
    };
    let uv_cache = match std::env::var_os("UV_CACHE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/uv"),
    };
    Some((uv, uv_cache))
}

/// Where `scripts/real-vllm.sh`, `scripts/real-guidellm.sh` and `scripts/real-s3.sh` install.
pub fn cache() -> PathBuf {
    match std::env::var_os("PERFPIPE_TEST_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/perfpipe-test")
        }
    }
}

/// The shared server.
pub struct Server {
    pub base_url: String,
    pub model: PathBuf,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();

/// The one `vllm serve` of the tiny model this test process shares,
/// started by the first test that asks (its start is waited for once).
pub fn shared_server(vllm: &RealVllm) -> &'static Server {
    let started = SERVER.get_or_init(|| start(vllm));
    match started {
        Ok(server) => server,
        Err(why) => panic!("the shared vLLM server did not start: {why}"),
    }
}

fn start(vllm: &RealVllm) -> Result<Server, String> {
    let port = super::free_port();
    let log = std::env::temp_dir().join(format!("perfpipe-test-vllm-{port}.log"));
    // The watchdog is the group's leader: it starts vLLM in the background,
    // waits while this test process lives, then stops the whole group
    // (vLLM's API server, engine core and workers), itself spared.
    let script = r#"
        trap '' TERM
        "$VLLM" serve "$MODEL" --host 127.0.0.1 --port "$PORT" "$@" >"$LOG" 2>&1 &
        while kill -0 "$TEST_PID" 2>/dev/null; do sleep 1; done
        kill -TERM -- -$$
        sleep 10
        kill -KILL -- -$$
    "#;
    let mut cmd = Command::new("/bin/bash");
    cmd.args(["-c", script, "watchdog"])
        .args(ARGS)
        .env("VLLM", vllm.bin.join("vllm"))
        .env("MODEL", &vllm.model)
        .env("PORT", port.to_string())
        .env("LOG", &log)
        .env("TEST_PID", std::process::id().to_string())
        .env("PATH", vllm.path())
        .envs(ENV.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.spawn().map_err(|e| format!("cannot start bash: {e}"))?;
    let base_url = format!("http://127.0.0.1:{port}");
    wait_healthy(&base_url, &log)?;
    Ok(Server {
        base_url,
        model: vllm.model.clone(),
    })
}

/// Waits for `/health`; a start takes 70-130 s here, longer under load.
fn wait_healthy(base_url: &str, log: &Path) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(600);
    while Instant::now() < deadline {
        if get(&format!("{base_url}/health")).is_some_and(|(status, _)| status == 200) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let tail = std::fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = tail.lines().rev().take(20).collect();
    Err(format!(
        "no answer on {base_url}/health within 600 s; its log ends:\n{}",
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    ))
}

/// `GET url`: the status and the body, `None` when nothing answers.
pub fn get(url: &str) -> Option<(u16, String)> {
    http("GET", url)
}

/// `POST url` with no body.
pub fn post(url: &str) -> Option<(u16, String)> {
    http("POST", url)
}

/// One HTTP/1.0 exchange over loopback (the server closes the connection).
fn http(method: &str, url: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = std::net::TcpStream::connect(authority).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {authority}\r\nContent-Length: 0\r\n\r\n"
    )
    .ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}
