//! The Hub's side of fetching a model: the files of a commit
//! (`GET /api/models/{repo}/revision/{commit}?blobs=true`, as
//! `huggingface_hub`'s `model_info(files_metadata=True)` asks it) and each
//! file's bytes (`GET /{repo}/resolve/{commit}/{file}`), checked as they
//! stream against the listing: sha256 for LFS files, the git blob id for the
//! others.
//!
//! `HF_TOKEN` (or `HUGGING_FACE_HUB_TOKEN`) is sent as a bearer header, and
//! dropped by the client when the Hub redirects to another host (its CDN);
//! it is never put in an error or a file.

use std::io::Write;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::StatusCode;
use reqwest::header::AUTHORIZATION;
use serde::Deserialize;
use sha1::Sha1;
use sha2::{Digest, Sha256};

use super::cache::{check_blob_name, check_file_name};
use super::{Check, RemoteFile};
use crate::lock::resolve::{HubAccess, MAX_HUB_ANSWER};
use crate::tls::{answer_within, transport_error};

/// A download fails when it receives fewer than this many bytes in a
/// [`RATE_WINDOW`] (about 17 KiB/s): the read timeout alone lets a server
/// sending one byte a minute hold it forever.
pub const MIN_WINDOW_BYTES: u64 = 1 << 20;

/// The window over which a download's rate is measured;
/// `PERFPIPE_FETCH_RATE_WINDOW_SECS` sets another (the tests use 1).
pub const RATE_WINDOW: Duration = Duration::from_secs(60);

/// A file listing is small: it has this long in all.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(120);

/// A Hub client: `HF_ENDPOINT` (else huggingface.co) and the token.
pub struct Hub {
    client: reqwest::Client,
    endpoint: String,
    token: Option<String>,
    rate_window: Duration,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("Hub")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// Why a download did not give the listed bytes.
#[derive(Debug)]
pub enum DownloadError {
    /// The connection failed or broke off, or the Hub is overloaded: worth another try.
    Transport(String),
    /// The Hub refused (no access, no such file).
    Refused(String),
    /// The bytes are not the listed ones.
    Mismatch(String),
    /// Writing the temp file failed (a full disk).
    Write(std::io::Error),
}

impl std::fmt::Display for DownloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(m) | Self::Refused(m) | Self::Mismatch(m) => f.write_str(m),
            Self::Write(e) => write!(f, "cannot write the download: {e}"),
        }
    }
}

#[derive(Deserialize)]
struct Info {
    sha: Option<String>,
    #[serde(default)]
    siblings: Vec<Sibling>,
}

#[derive(Deserialize)]
struct Sibling {
    rfilename: String,
    size: Option<u64>,
    #[serde(rename = "blobId")]
    blob_id: Option<String>,
    lfs: Option<Lfs>,
}

#[derive(Deserialize)]
struct Lfs {
    sha256: String,
    size: Option<u64>,
}

impl Hub {
    /// Reads the Hub's endpoint and token ([`HubAccess`]).
    pub fn from_env() -> std::io::Result<Self> {
        // No overall timeout: a shard of a large model takes minutes. A
        // connection that stalls for a minute is broken, and retried.
        let client = crate::tls::client_builder()
            .read_timeout(Duration::from_secs(60))
            .build()
            .map_err(std::io::Error::other)?;
        let HubAccess { endpoint, token } = HubAccess::from_env();
        let rate_window = std::env::var("PERFPIPE_FETCH_RATE_WINDOW_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(RATE_WINDOW, Duration::from_secs);
        Ok(Self {
            client,
            endpoint,
            token,
            rate_window,
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn get(&self, url: &str) -> reqwest::RequestBuilder {
        let request = self.client.get(url);
        match &self.token {
            Some(token) => request.header(AUTHORIZATION, format!("Bearer {token}")),
            None => request,
        }
    }

    /// Every file of `repo` at `commit`, with its size and digest.
    pub async fn list(&self, repo: &str, commit: &str) -> Result<Vec<RemoteFile>, String> {
        let endpoint = &self.endpoint;
        let url = format!("{endpoint}/api/models/{repo}/revision/{commit}?blobs=true");
        let what = format!("cannot ask {endpoint} for the files of `{repo}`");
        let response = self
            .get(&url)
            .timeout(LIST_TIMEOUT)
            .send()
            .await
            .map_err(|e| transport_error(&what, e))?;
        match response.status() {
            s if s.is_success() => {}
            s @ (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) => {
                return Err(format!(
                    "{endpoint} refused `{repo}` ({s}): the model is gated or private; set HF_TOKEN to a token with access"
                ));
            }
            StatusCode::NOT_FOUND => {
                return Err(format!(
                    "{endpoint} has no model `{repo}`, or no commit `{commit}` of it"
                ));
            }
            s => return Err(format!("{endpoint} answered {s} for `{repo}`")),
        }
        let body = answer_within(response, MAX_HUB_ANSWER, &what, "its listing").await?;
        let info: Info = serde_json::from_slice(&body)
            .map_err(|e| format!("{what}: its listing is not the Hub's JSON: {e}"))?;
        if info
            .sha
            .as_deref()
            .is_some_and(|sha| !sha.eq_ignore_ascii_case(commit))
        {
            return Err(format!(
                "{endpoint} answered for `{repo}` at `{commit}` with another commit"
            ));
        }
        info.siblings
            .into_iter()
            .map(|s| remote_file(s).map_err(|e| format!("{endpoint}, `{repo}`: {e}")))
            .collect()
    }

    /// Streams `file` into `out`, calling `progress` with the bytes so far,
    /// and checks its size and digest against the listing.
    pub async fn download(
        &self,
        repo: &str,
        commit: &str,
        file: &RemoteFile,
        out: &mut std::fs::File,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), DownloadError> {
        let endpoint = &self.endpoint;
        let url = format!(
            "{endpoint}/{repo}/resolve/{commit}/{}",
            encode_path(&file.name)
        );
        let name = &file.name;
        let what = format!("cannot download `{name}` of `{repo}` from {endpoint}");
        let transport = |e| DownloadError::Transport(transport_error(&what, e));
        let response = self.get(&url).send().await.map_err(transport)?;
        match response.status() {
            s if s.is_success() => {}
            s if s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS => {
                return Err(DownloadError::Transport(format!(
                    "{endpoint} answered {s} for `{name}` of `{repo}`"
                )));
            }
            s => {
                return Err(DownloadError::Refused(format!(
                    "{endpoint} answered {s} for `{name}` of `{repo}`"
                )));
            }
        }
        let mut hasher = Hasher::new(&file.check, file.size);
        let mut done: u64 = 0;
        let mut body = response.bytes_stream();
        let mut window = (tokio::time::Instant::now(), done);
        loop {
            let next = tokio::time::timeout_at(window.0 + self.rate_window, body.next()).await;
            if window.0.elapsed() >= self.rate_window {
                let got = done - window.1;
                if got < MIN_WINDOW_BYTES {
                    return Err(DownloadError::Transport(format!(
                        "{what}: too slow: {got} bytes in {}s, below the minimum of {MIN_WINDOW_BYTES} bytes per {}s",
                        self.rate_window.as_secs(),
                        self.rate_window.as_secs()
                    )));
                }
                window = (tokio::time::Instant::now(), done);
            }
            let chunk = match next {
                Ok(Some(chunk)) => chunk.map_err(transport)?,
                Ok(None) => break,
                Err(_) => continue, // the window ended; checked above
            };
            done += chunk.len() as u64;
            if done > file.size {
                return Err(DownloadError::Mismatch(format!(
                    "`{name}` of `{repo}` is larger than the {} bytes the Hub lists",
                    file.size
                )));
            }
            out.write_all(&chunk).map_err(DownloadError::Write)?;
            hasher.update(&chunk);
            progress(done);
        }
        out.sync_all().map_err(DownloadError::Write)?;
        if done < file.size {
            return Err(DownloadError::Transport(format!(
                "{what}: the connection ended after {done} of {} bytes",
                file.size
            )));
        }
        let (kind, got) = hasher.finish();
        let want = match &file.check {
            Check::Sha256(hex) | Check::GitBlob(hex) => hex,
        };
        if !got.eq_ignore_ascii_case(want) {
            return Err(DownloadError::Mismatch(format!(
                "`{name}` of `{repo}` is not the file the Hub lists at `{commit}`: its {kind} is {got}, the listing says {want}"
            )));
        }
        Ok(())
    }
}

/// A listed file: LFS files are stored under their sha256, the others under
/// their git blob id (as `huggingface_hub` names blobs by ETag).
fn remote_file(s: Sibling) -> Result<RemoteFile, String> {
    check_file_name(&s.rfilename)?;
    let missing = |what| format!("the listing has no {what} for `{}`", s.rfilename);
    let (blob, size, check) = match s.lfs {
        Some(lfs) => {
            let size = lfs.size.or(s.size).ok_or_else(|| missing("size"))?;
            let sha = lfs.sha256.to_ascii_lowercase();
            (sha.clone(), size, Check::Sha256(sha))
        }
        None => {
            let id = s
                .blob_id
                .ok_or_else(|| missing("blob id"))?
                .to_ascii_lowercase();
            let size = s.size.ok_or_else(|| missing("size"))?;
            (id.clone(), size, Check::GitBlob(id))
        }
    };
    check_blob_name(&blob)?;
    Ok(RemoteFile {
        name: s.rfilename,
        size,
        blob,
        check,
    })
}

enum Hasher {
    Sha256(Sha256),
    GitBlob(Sha1),
}

impl Hasher {
    fn new(check: &Check, size: u64) -> Self {
        match check {
            Check::Sha256(_) => Self::Sha256(Sha256::new()),
            Check::GitBlob(_) => {
                let mut sha1 = Sha1::new();
                sha1.update(format!("blob {size}\0").as_bytes());
                Self::GitBlob(sha1)
            }
        }
    }

    fn update(&mut self, bytes: &[u8]) {
        match self {
            Self::Sha256(h) => h.update(bytes),
            Self::GitBlob(h) => h.update(bytes),
        }
    }

    /// What was computed, and its hex digest.
    fn finish(self) -> (&'static str, String) {
        match self {
            Self::Sha256(h) => ("sha256", hex::encode(h.finalize())),
            Self::GitBlob(h) => ("git blob id", hex::encode(h.finalize())),
        }
    }
}

/// Percent-encodes each segment of a file path, keeping the slashes.
fn encode_path(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(char::from(b))
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_blob_ids_are_computed_as_git_does() {
        // `printf 'hello\n' | git hash-object --stdin`
        let mut h = Hasher::new(&Check::GitBlob(String::new()), 6);
        h.update(b"hello\n");
        assert_eq!(h.finish().1, "ce013625030ba8dba906f756967f9e9ca394464a");
    }

    #[test]
    fn listings_become_files_named_by_digest() {
        let info: Info = serde_json::from_value(serde_json::json!({
            "sha": "c".repeat(40),
            "siblings": [
                {"rfilename": "config.json", "size": 2, "blobId": "A".repeat(40)},
                {"rfilename": "model.safetensors", "size": 9, "blobId": "d".repeat(40),
                 "lfs": {"sha256": "e".repeat(64), "size": 9, "pointerSize": 130}},
            ]
        }))
        .unwrap();
        let files: Vec<RemoteFile> = info
            .siblings
            .into_iter()
            .map(|s| remote_file(s).unwrap())
            .collect();
        assert_eq!(files[0].blob, "a".repeat(40));
        assert_eq!(files[0].check, Check::GitBlob("a".repeat(40)));
        assert_eq!(files[1].blob, "e".repeat(64));
        assert_eq!(files[1].size, 9);
        assert_eq!(files[1].check, Check::Sha256("e".repeat(64)));
        let escape: Sibling = serde_json::from_value(serde_json::json!(
            {"rfilename": "../../x", "size": 1, "blobId": "a".repeat(40)}
        ))
        .unwrap();
        assert!(remote_file(escape).is_err());
    }

    #[test]
    fn file_paths_keep_their_slashes() {
        assert_eq!(encode_path("original/a b.json"), "original/a%20b.json");
    }
}
