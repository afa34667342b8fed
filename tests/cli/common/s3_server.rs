//! The real S3-compatible server the `s3://` cache is tested against:
//! s3s-fs (crates.io; scripts/real-s3.sh installs it outside the clone),
//! which checks every request's Signature Version 4. One per test process,
//! started by the first test that asks, on a loopback port, storing in a
//! directory of its own; each test makes its own bucket. A counting proxy
//! in front of it records the requests a test's commands make.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// The s3s-fs version `scripts/real-s3.sh` installs.
pub const S3S_FS_VERSION: &str = "0.14.1";

/// The one account the server knows.
pub const ACCESS_KEY: &str = "perfpipe-test-access-key";
pub const SECRET_KEY: &str = "perfpipe-test-secret-key-0123456789";

pub struct S3Server {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The directory its buckets are in.
    root: PathBuf,
}

static SERVER: OnceLock<Result<S3Server, String>> = OnceLock::new();

/// The shared server, or `None` after [`super::cannot_test`] when s3s-fs
/// is not installed.
pub fn shared() -> Option<&'static S3Server> {
    let bin = super::real_vllm::cache().join(format!("s3s-fs-{S3S_FS_VERSION}/bin/s3s-fs"));
    if !bin.is_file() {
        super::cannot_test(
            "s3",
            &format!(
                "s3s-fs {S3S_FS_VERSION} is not installed at `{}` (scripts/real-s3.sh installs it)",
                bin.display()
            ),
        );
        return None;
    }
    match SERVER.get_or_init(|| start(&bin)) {
        Ok(server) => Some(server),
        Err(why) => panic!("the shared S3 server did not start: {why}"),
    }
}

fn start(bin: &std::path::Path) -> Result<S3Server, String> {
    let port = super::free_port();
    let root = std::env::temp_dir().join(format!("perfpipe-test-s3-{port}"));
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let log = root.with_extension("log");
    // A watchdog stops the server (and removes its directory) once this
    // test process is gone: the server outlives every test that uses it.
    let script = r#"
        "$S3S" --host 127.0.0.1 --port "$PORT" --access-key "$AK" --secret-key "$SK" "$ROOT" >"$LOG" 2>&1 &
        server=$!
        while kill -0 "$TEST_PID" 2>/dev/null && kill -0 "$server" 2>/dev/null; do sleep 1; done
        kill "$server" 2>/dev/null
        wait "$server"
        rm -rf "$ROOT" "$LOG"
    "#;
    Command::new("/bin/bash")
        .args(["-c", script, "watchdog"])
        .env("S3S", bin)
        .env("PORT", port.to_string())
        .env("AK", ACCESS_KEY)
        .env("SK", SECRET_KEY)
        .env("ROOT", &root)
        .env("LOG", &log)
        .env("TEST_PID", std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start bash: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(format!(
                "nothing listens on {port} after 30 s; its log:\n{log}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(S3Server {
        endpoint: format!("http://127.0.0.1:{port}"),
        root,
    })
}

impl S3Server {
    /// A new, empty bucket's name (a directory of the server's root is a
    /// bucket to s3s-fs).
    pub fn bucket(&self) -> String {
        let name = format!("perfpipe-{}", &super::random_hex()[..16]);
        std::fs::create_dir(self.root.join(&name)).unwrap();
        name
    }

    /// The object `path` of `bucket`, as text.
    pub fn read(&self, bucket: &str, path: &str) -> String {
        std::fs::read_to_string(self.root.join(bucket).join(path)).unwrap()
    }

    /// The objects of `bucket`, as paths under it.
    pub fn objects(&self, bucket: &str) -> Vec<String> {
        let dir = self.root.join(bucket);
        super::files_under(&dir)
            .into_iter()
            .map(|f| f.strip_prefix(&dir).unwrap().to_string_lossy().into_owned())
            .collect()
    }
}

/// One request the proxy passed on.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// The `SignedHeaders=` of its `Authorization` (`host;x-amz-date`), or empty.
    pub signed_headers: String,
    /// Its `x-amz-security-token` (temporary credentials' session token).
    pub security_token: Option<String>,
}

/// A proxy on its own loopback port that passes every request on to the
/// server unchanged (its `Host` too, which the signature covers) and
/// records it.
pub struct CountingProxy {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    _runtime: tokio::runtime::Runtime,
}

struct Upstream {
    base: String,
    client: reqwest::Client,
    seen: Arc<Mutex<Vec<Seen>>>,
    hold: Option<Hold>,
}

/// Writes of keys' indexes passed on one at a time, as S3 makes a
/// conditional write atomic (s3s-fs checks the condition, then writes).
/// The first is held until a second write of the same object comes, and
/// passed on before it: two pushes of one key thus both read its index
/// before either writes it.
#[derive(Default)]
struct Hold {
    /// The object the first index write went to, once one came.
    first: Mutex<Option<String>>,
    /// Whether a second write of it came.
    paired: std::sync::atomic::AtomicBool,
    second: tokio::sync::Notify,
    /// The first took its turn (the second's is next).
    first_passed: tokio::sync::Notify,
    /// Whose turn it is to be passed on.
    turn: tokio::sync::Mutex<()>,
}

impl Hold {
    /// Waits for the turn of a `PUT` of `target` (held while it is passed
    /// on); `None` for one that is not an index's.
    async fn turn(&self, target: &str) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        let object = target.split('?').next().unwrap_or(target).to_owned();
        if !object.contains("/keys/") {
            return None;
        }
        let first = {
            let mut first = self.first.lock().unwrap();
            match first.as_ref() {
                None => {
                    *first = Some(object.clone());
                    true
                }
                Some(_) => false,
            }
        };
        // Should its pair not come, each is passed on after 30 s.
        let wait = Duration::from_secs(30);
        if first {
            let _ = tokio::time::timeout(wait, self.second.notified()).await;
            let turn = self.turn.lock().await;
            self.first_passed.notify_one();
            return Some(turn);
        }
        let second = self.first.lock().unwrap().as_deref() == Some(object.as_str())
            && !self.paired.swap(true, std::sync::atomic::Ordering::SeqCst);
        if second {
            self.second.notify_one();
            let _ = tokio::time::timeout(wait, self.first_passed.notified()).await;
        }
        Some(self.turn.lock().await)
    }
}

impl CountingProxy {
    pub fn start(server: &S3Server) -> Self {
        Self::with(server, None)
    }

    /// A proxy that passes writes of keys' indexes on one at a time, the
    /// first held until a second write of it comes ([`Hold`]).
    pub fn holding_the_first_index_write(server: &S3Server) -> Self {
        Self::with(server, Some(Hold::default()))
    }

    fn with(server: &S3Server, hold: Option<Hold>) -> Self {
        let seen = Arc::default();
        let upstream = Arc::new(Upstream {
            base: server.endpoint.clone(),
            client: perfpipe::tls::client_builder().build().unwrap(),
            seen: Arc::clone(&seen),
            hold,
        });
        let runtime = super::runtime();
        let app = axum::Router::new().fallback(pass_on).with_state(upstream);
        let port = super::serve(&runtime, app);
        Self {
            endpoint: format!("http://127.0.0.1:{port}"),
            seen,
            _runtime: runtime,
        }
    }

    /// The requests passed on so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn pass_on(State(upstream): State<Arc<Upstream>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let signed_headers = parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("SignedHeaders=").nth(1))
        .and_then(|v| v.split(',').next())
        .unwrap_or_default()
        .to_owned();
    let security_token = parts
        .headers
        .get("x-amz-security-token")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    upstream.seen.lock().unwrap().push(Seen {
        method: parts.method.to_string(),
        target: target.clone(),
        signed_headers,
        security_token,
    });
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let _turn = match &upstream.hold {
        Some(hold) if parts.method == axum::http::Method::PUT => hold.turn(&target).await,
        _ => None,
    };
    let forwarded = upstream
        .client
        .request(parts.method, format!("{}{target}", upstream.base))
        .headers(parts.headers)
        .body(body)
        .send()
        .await;
    let Ok(answer) = forwarded else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let status = answer.status();
    let headers = answer.headers().clone();
    let bytes = answer.bytes().await.unwrap_or_default();
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}
