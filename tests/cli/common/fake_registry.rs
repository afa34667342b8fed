//! A small OCI registry on loopback: serves a directory cache (as `cache
//! push` writes one) through the distribution API as `oci://…/team/cache`
//! (a key's index tagged by the key, sample manifests by digest), lists
//! tags (and as many unrelated ones as asked), takes uploads and throws them
//! away, records the `Authorization` header of every request, and
//! misbehaves as told.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

const REPOSITORY: &str = "team/cache";
const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
const INDEX_TYPE: &str = "application/vnd.oci.image.index.v1+json";

/// How the registry misbehaves; the default is not at all.
#[derive(Debug, Clone, Default)]
pub struct Misbehaviour {
    /// Tags of other things the repository holds, listed by `tags/list`.
    pub unrelated_tags: usize,
    /// An upload is to be sent here (its `Location`).
    pub upload_at: Option<String>,
    /// Every request is answered 500, echoing the login it carried.
    pub echo_login: bool,
    /// Every blob is answered with bytes that never end.
    pub endless_blobs: bool,
    /// Manifests declare every blob this many bytes long.
    pub declared_size: Option<u64>,
    /// A request without a bearer token is answered 401, naming the token
    /// endpoint `/token`, whose answer is a token of [`HUGE_TOKEN_BYTES`]
    /// streamed without a `Content-Length`.
    pub huge_token: bool,
}

/// The length of the token `huge_token` answers: far more than a token.
pub const HUGE_TOKEN_BYTES: usize = 32 << 20;

/// One request the registry received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
}

pub struct FakeRegistry {
    /// `oci://127.0.0.1:PORT/team/cache`.
    pub location: String,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<Shared>,
    _runtime: tokio::runtime::Runtime,
}

struct Shared {
    /// The directory cache served (absent: a cache holding nothing).
    dir: Option<PathBuf>,
    misbehaviour: Misbehaviour,
    seen: Mutex<Vec<Seen>>,
}

impl FakeRegistry {
    pub fn start(dir: Option<PathBuf>, misbehaviour: Misbehaviour) -> Self {
        let state = Arc::new(Shared {
            dir,
            misbehaviour,
            seen: Mutex::default(),
        });
        let runtime = super::runtime();
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&state));
        let port = super::serve(&runtime, app);
        Self {
            location: format!("oci://127.0.0.1:{port}/{REPOSITORY}"),
            base: format!("http://127.0.0.1:{port}"),
            state,
            _runtime: runtime,
        }
    }

    /// The requests received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// `host:port`, as `[credentials."HOST"]` names it.
    pub fn host(&self) -> &str {
        self.base.trim_start_matches("http://")
    }
}

async fn answer(State(state): State<Arc<Shared>>, request: Request) -> Response {
    let method = request.method().clone();
    let uri = request.uri().clone();
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    state.seen.lock().unwrap().push(Seen {
        method: method.to_string(),
        path: uri.to_string(),
        authorization: authorization.clone(),
    });
    // Whatever was sent is read, as a registry reads an upload.
    let _ = axum::body::to_bytes(request.into_body(), usize::MAX).await;
    let bad = &state.misbehaviour;
    if bad.echo_login {
        let login = authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Basic "))
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let body = format!(
            "login failed for {login} (Authorization: {})",
            authorization.unwrap_or_default()
        );
        return (StatusCode::INTERNAL_SERVER_ERROR, body).into_response();
    }
    if bad.huge_token {
        if uri.path() == "/token" {
            return huge_token();
        }
        if !authorization.is_some_and(|a| a.starts_with("Bearer ")) {
            let challenge = format!("Bearer realm=\"http://{host}/token\",service=\"fake\"");
            let mut response = StatusCode::UNAUTHORIZED.into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_str(&challenge).unwrap(),
            );
            return response;
        }
    }
    let Some(rest) = uri.path().strip_prefix(&format!("/v2/{REPOSITORY}/")) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    match (&method, rest) {
        (&Method::GET, "tags/list") => state.tags(),
        (&Method::GET, _) if rest.starts_with("manifests/") => {
            state.manifest(&rest["manifests/".len()..])
        }
        (&Method::GET | &Method::HEAD, _) if rest.starts_with("blobs/sha256:") => {
            state.blob(&rest["blobs/sha256:".len()..], method == Method::HEAD)
        }
        (&Method::POST, "blobs/uploads/") => {
            let at = bad
                .upload_at
                .clone()
                .unwrap_or_else(|| format!("/v2/{REPOSITORY}/blobs/uploads/u1"));
            let mut response = StatusCode::ACCEPTED.into_response();
            response
                .headers_mut()
                .insert(header::LOCATION, HeaderValue::from_str(&at).unwrap());
            response
        }
        (&Method::PUT, _) => StatusCode::CREATED.into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `{"token":"aaa…`, [`HUGE_TOKEN_BYTES`] long, without a `Content-Length`.
fn huge_token() -> Response {
    super::huge_body(b"{\"token\":\"", HUGE_TOKEN_BYTES)
}

impl Shared {
    /// The keys whose index the directory holds, then the unrelated tags.
    fn tags(&self) -> Response {
        let mut tags: Vec<String> = Vec::new();
        if let Some(dir) = &self.dir {
            for entry in std::fs::read_dir(dir.join("keys")).into_iter().flatten() {
                let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                tags.push(name.trim_end_matches(".json").to_owned());
            }
        }
        tags.extend((0..self.misbehaviour.unrelated_tags).map(|i| format!("other-{i:08}")));
        axum::Json(serde_json::json!({"name": REPOSITORY, "tags": tags})).into_response()
    }

    /// A key's index (by tag) or a sample's manifest (by digest).
    fn manifest(&self, reference: &str) -> Response {
        let Some(dir) = &self.dir else {
            return StatusCode::NOT_FOUND.into_response();
        };
        if let Some(hex) = reference.strip_prefix("sha256:") {
            return match std::fs::read(self.blob_path(hex)) {
                Ok(bytes) => ([(header::CONTENT_TYPE, MANIFEST_TYPE)], bytes).into_response(),
                Err(_) => StatusCode::NOT_FOUND.into_response(),
            };
        }
        let Ok(bytes) = std::fs::read(dir.join("keys").join(format!("{reference}.json"))) else {
            return StatusCode::NOT_FOUND.into_response();
        };
        let mut index: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        if let Some(size) = self.misbehaviour.declared_size {
            // Each sample's manifest declares `size` for every blob, and the
            // index names the manifest so changed (by its new digest).
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::STANDARD;
            for entry in index["manifests"].as_array_mut().unwrap() {
                let data = b64.decode(entry["data"].as_str().unwrap()).unwrap();
                let mut manifest: serde_json::Value = serde_json::from_slice(&data).unwrap();
                manifest["config"]["size"] = size.into();
                for layer in manifest["layers"].as_array_mut().unwrap() {
                    layer["size"] = size.into();
                }
                let data = serde_json::to_vec(&manifest).unwrap();
                entry["digest"] = format!("sha256:{}", sha256_hex(&data)).into();
                entry["size"] = data.len().into();
                entry["data"] = b64.encode(&data).into();
            }
        }
        (
            [(header::CONTENT_TYPE, INDEX_TYPE)],
            serde_json::to_vec(&index).unwrap(),
        )
            .into_response()
    }

    fn blob(&self, hex: &str, head: bool) -> Response {
        if self.misbehaviour.endless_blobs && !head {
            let zeros = futures_util::stream::repeat_with(|| {
                Ok::<_, std::convert::Infallible>(vec![b'0'; 64 << 10])
            });
            return Body::from_stream(zeros).into_response();
        }
        match self
            .dir
            .as_ref()
            .map(|_| std::fs::read(self.blob_path(hex)))
        {
            Some(Ok(bytes)) if !head => bytes.into_response(),
            Some(Ok(_)) => StatusCode::OK.into_response(),
            _ => StatusCode::NOT_FOUND.into_response(),
        }
    }

    fn blob_path(&self, hex: &str) -> PathBuf {
        self.dir.as_ref().unwrap().join("blobs/sha256").join(hex)
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}
