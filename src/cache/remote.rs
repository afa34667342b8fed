//! Reading and writing one cache: its samples' tags for a key, manifests
//! and blobs, over the file system, plain HTTP GETs or the OCI distribution
//! API (no referrers API: a key's samples are found by their tags). Nothing
//! read here is trusted; `artifact` checks it. (effects)

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, LOCATION};
use reqwest::{Method, StatusCode, Url};

use super::Error;
use super::artifact::{MANIFEST_TYPE, digest_hex};
use super::credentials::Credential;
use super::location::Location;
use crate::key::RunKey;
use crate::oci::token;
use crate::tls::{BodyError, Limit, transport_error};

/// How long one request may take, its answer included.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Pages of a registry's tag list read at most (of up to 1000 tags each):
/// one that always names a next page is stopped here (docs/result-cache.md).
const MAX_TAG_PAGES: usize = 1000;

/// A tag list (a page, or `keys/<key>.json`) or a manifest: 4 MiB, as
/// registries bound manifests.
const MAX_LISTING_BYTES: Limit = Limit {
    bytes: 4 << 20,
    of: "perfpipe reads of a tag list or a manifest",
};

/// The most bytes of an error's answer read (its first 200 characters
/// are shown).
const ERROR_BODY_BYTES: usize = 4 << 10;

/// A blob's size, as its manifest declares it.
fn declared(bytes: u64) -> Limit {
    Limit {
        bytes,
        of: "its manifest declares",
    }
}

/// A cache and the client that reaches it.
#[derive(Debug, Clone)]
pub struct Remote {
    pub location: Location,
    client: reqwest::Client,
    timeout: Duration,
    credential: Option<Credential>,
    /// The token a registry's token endpoint gave (`Bearer` challenges).
    token: std::sync::Arc<std::sync::Mutex<Option<String>>>,
}

/// `keys/<key>.json` of a directory or web cache: tag → manifest digest.
type TagList = BTreeMap<String, String>;

/// Where a request goes, for the one decision on credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Destination {
    /// What the cache serves: manifests, blobs, tag lists, uploads.
    Cache,
    /// The token endpoint a registry's challenge names (`realm`).
    TokenService,
}

impl Remote {
    pub fn new(location: Location) -> Self {
        Self::with_timeout(location, TIMEOUT)
    }

    fn with_timeout(location: Location, timeout: Duration) -> Self {
        let client = crate::tls::client_builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                // reqwest drops `Authorization` on a redirect to another
                // origin; a redirect from HTTPS to cleartext is not followed.
                let from = attempt.previous().last();
                if from.is_some_and(|from| is_downgrade(from, attempt.url())) {
                    attempt.error("a redirect from HTTPS to cleartext HTTP, which perfpipe refuses")
                } else if attempt.previous().len() > 10 {
                    attempt.error("more than 10 redirects")
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .expect("a client with rustls and no proxy settings builds");
        Self {
            location,
            client,
            timeout,
            credential: None,
            token: Default::default(),
        }
    }

    /// Shows `credential` to the cache (`[credentials."HOST"]`).
    pub fn with_credential(mut self, credential: Option<Credential>) -> Self {
        self.credential = credential;
        self
    }

    /// The origin (scheme, host, port) the cache's credentials are for.
    fn home(&self) -> Option<Url> {
        match &self.location {
            Location::Dir(_) => None,
            Location::Http(base) => Url::parse(base).ok(),
            Location::Oci(image) => Url::parse(&image.api_base()).ok(),
        }
    }

    /// Whether a request to `url` may carry the credentials: the one place
    /// that decides, for every request the cache makes. They go to the
    /// origin they are configured for, and a login to the token service the
    /// registry names when it is reached over HTTPS (the registry delegates
    /// its logins there, as `docker login` has it); never elsewhere: a
    /// `Link` or `Location` naming another origin is asked without them. A
    /// URL that would leave HTTPS for cleartext is refused altogether.
    fn shows_credentials(&self, url: &Url, to: Destination) -> Result<bool, Error> {
        let Some(home) = self.home() else {
            return Ok(false);
        };
        if is_downgrade(&home, url) {
            // The cache named it: it may quote a secret.
            return Err(Error::Downgrade {
                location: self.location.to_string(),
                url: crate::secrets::redact(url.as_str()).into_owned(),
            });
        }
        Ok(url.origin() == home.origin()
            || (to == Destination::TokenService && url.scheme() == "https"))
    }

    /// Sends the request `configure` makes of `method url`, with the
    /// credentials where [`Self::shows_credentials`] allows them; when a
    /// registry answers 401 with a token challenge, gets a token for the
    /// repository (`write`: pull and push) and sends it once more. `what`
    /// names the request in messages.
    async fn send(
        &self,
        method: Method,
        url: &str,
        what: &str,
        write: bool,
        configure: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, Error> {
        let url = Url::parse(url)
            .map_err(|_| self.failed(format!("cannot {what}: `{url}` is not a URL")))?;
        let credentials = self.shows_credentials(&url, Destination::Cache)?;
        let request = || {
            let request = configure(self.client.request(method.clone(), url.clone()));
            if credentials {
                self.authorized(request)
            } else {
                request
            }
        };
        let response = request()
            .send()
            .await
            .map_err(|e| self.transport(e, what))?;
        let Location::Oci(image) = &self.location else {
            return Ok(response);
        };
        let challenge = token::challenge(&response);
        if !credentials
            || response.status() != StatusCode::UNAUTHORIZED
            || !token::is_bearer(&challenge)
        {
            return Ok(response);
        }
        let scope = token::scope(&image.repository, write);
        let login = match &self.credential {
            Some(Credential::Basic { username, password }) => {
                Some((username.clone(), password.clone()))
            }
            _ => None,
        };
        let realm = token::realm(&challenge).and_then(|r| Url::parse(&r).ok());
        let login = match realm {
            Some(realm) if self.shows_credentials(&realm, Destination::TokenService)? => login,
            _ => None,
        };
        let token = token::bearer(
            &self.client,
            &challenge,
            &image.registry,
            &scope,
            login.as_ref(),
        )
        .await
        .map_err(|e| self.failed(e))?;
        crate::secrets::add_configured("a token of the registry", &token);
        *self.token.lock().expect("no panic holds the token") = Some(token);
        request().send().await.map_err(|e| self.transport(e, what))
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let token = self.token.lock().expect("no panic holds the token").clone();
        match (token.as_ref(), &self.credential) {
            (Some(token), _) | (None, Some(Credential::Bearer(token))) => {
                request.header(AUTHORIZATION, format!("Bearer {token}"))
            }
            (None, Some(Credential::Basic { username, password })) => {
                request.basic_auth(username, Some(password))
            }
            (None, None) => request,
        }
    }

    /// An error of this cache; `what` (which may quote the cache's answers)
    /// is redacted of every secret perfpipe knows (`crate::secrets`).
    fn failed(&self, what: impl std::fmt::Display) -> Error {
        Error::Cache {
            location: self.location.to_string(),
            message: crate::secrets::redact(&what.to_string()).into_owned(),
        }
    }

    /// A request that failed on its way: a timeout says so.
    fn transport(&self, e: reqwest::Error, what: &str) -> Error {
        if e.is_timeout() {
            return Error::Timeout {
                location: self.location.to_string(),
                what: what.to_owned(),
                seconds: self.timeout.as_secs(),
            };
        }
        self.failed(transport_error(&format!("cannot {what}"), e))
    }

    /// The body of `response`, refused once it is longer than `limit`.
    async fn body(
        &self,
        response: reqwest::Response,
        limit: Limit,
        what: &str,
    ) -> Result<Vec<u8>, Error> {
        crate::tls::body_at_most(response, limit.bytes)
            .await
            .map_err(|e| match e {
                BodyError::TooLong => self.too_long(what, limit),
                BodyError::Transport(e) => self.transport(e, what),
            })
    }

    fn too_long(&self, what: &str, limit: Limit) -> Error {
        self.failed(format!("cannot {what}: {}", limit.exceeded_by("it")))
    }

    /// The tags of `key`'s samples; none when the cache has no sample of it.
    pub async fn tags(&self, key: &RunKey) -> Result<Vec<String>, Error> {
        match &self.location {
            Location::Dir(_) | Location::Http(_) => {
                Ok(self.tag_list(key).await?.into_keys().collect())
            }
            Location::Oci(image) => {
                let prefix = format!("{key}-");
                let mut url = Some(image.tags_url());
                let mut tags = Vec::new();
                let mut pages = 0;
                while let Some(this) = url.take() {
                    pages += 1;
                    if pages > MAX_TAG_PAGES {
                        return Err(Error::EndlessTagList {
                            location: self.location.to_string(),
                            pages: MAX_TAG_PAGES,
                        });
                    }
                    let response = self.get(&this, None, "list tags").await?;
                    if response.status() == StatusCode::NOT_FOUND {
                        return Ok(Vec::new());
                    }
                    let response = self.ok(response, "list tags").await?;
                    url = next_page(&response);
                    #[derive(serde::Deserialize)]
                    struct Tags {
                        tags: Option<Vec<String>>,
                    }
                    let page = self.body(response, MAX_LISTING_BYTES, "list tags").await?;
                    let page: Tags = serde_json::from_slice(&page)
                        .map_err(|e| self.failed(format!("its tag list: {e}")))?;
                    tags.extend(
                        page.tags
                            .unwrap_or_default()
                            .into_iter()
                            .filter(|t| t.starts_with(&prefix)),
                    );
                }
                Ok(tags)
            }
        }
    }

    async fn tag_list(&self, key: &RunKey) -> Result<TagList, Error> {
        let path = format!("keys/{key}.json");
        let Some(bytes) = self.read(&path, MAX_LISTING_BYTES).await? else {
            return Ok(TagList::new());
        };
        serde_json::from_slice(&bytes).map_err(|e| self.failed(format!("{path}: {e}")))
    }

    /// The manifest of `key`'s sample tagged `tag`.
    pub async fn manifest(&self, key: &RunKey, tag: &str) -> Result<Vec<u8>, Error> {
        match &self.location {
            Location::Dir(_) | Location::Http(_) => {
                let list = self.tag_list(key).await?;
                let digest = list
                    .get(tag)
                    .ok_or_else(|| self.failed(format!("no tag `{tag}`")))?;
                self.blob_at_most(digest, MAX_LISTING_BYTES).await
            }
            Location::Oci(image) => {
                let url = image.manifest_url(tag);
                let what = format!("get `{tag}`");
                let response = self.get(&url, Some(MANIFEST_TYPE), &what).await?;
                let response = self.ok(response, &what).await?;
                self.body(response, MAX_LISTING_BYTES, &what).await
            }
        }
    }

    /// The bytes of the blob `digest`, which its manifest declares `size`
    /// bytes long: no more is read (the caller checks the digest).
    pub async fn blob(&self, digest: &str, size: u64) -> Result<Vec<u8>, Error> {
        self.blob_at_most(digest, declared(size)).await
    }

    /// The bytes of the blob `digest`, refused past `limit`.
    async fn blob_at_most(&self, digest: &str, limit: Limit) -> Result<Vec<u8>, Error> {
        let hex = digest_hex(digest).ok_or_else(|| self.failed(format!("digest `{digest}`")))?;
        let bytes = match &self.location {
            Location::Dir(_) | Location::Http(_) => {
                self.read(&format!("blobs/sha256/{hex}"), limit).await?
            }
            Location::Oci(image) => {
                let url = image.blob_url(digest);
                let what = format!("get blob {digest}");
                let response = self.get(&url, None, &what).await?;
                let response = self.ok(response, &what).await?;
                Some(self.body(response, limit, &what).await?)
            }
        };
        bytes.ok_or_else(|| self.failed(format!("the blob {digest} is missing")))
    }

    /// A file of a directory or web cache, refused past `limit`; `None`
    /// when absent.
    async fn read(&self, path: &str, limit: Limit) -> Result<Option<Vec<u8>>, Error> {
        match &self.location {
            Location::Dir(dir) => {
                match crate::regular_file::read_at_most(&dir.join(path), limit.bytes) {
                    Ok(bytes) => Ok(Some(bytes)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                        Err(self.too_long(&format!("read `{path}`"), limit))
                    }
                    Err(e) => Err(self.failed(format!("{path}: {e}"))),
                }
            }
            Location::Http(base) => {
                let what = format!("get `{path}`");
                let response = self.get(&format!("{base}/{path}"), None, &what).await?;
                if response.status() == StatusCode::NOT_FOUND {
                    return Ok(None);
                }
                let response = self.ok(response, &what).await?;
                Ok(Some(self.body(response, limit, &what).await?))
            }
            Location::Oci(_) => unreachable!("registries are read through the API"),
        }
    }

    async fn get(
        &self,
        url: &str,
        accept: Option<&str>,
        what: &str,
    ) -> Result<reqwest::Response, Error> {
        self.send(Method::GET, url, what, false, |request| match accept {
            Some(accept) => request.header(ACCEPT, accept),
            None => request,
        })
        .await
    }

    /// The response when it succeeded; else what the cache answered.
    async fn ok(
        &self,
        response: reqwest::Response,
        what: &str,
    ) -> Result<reqwest::Response, Error> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(Error::Denied {
                location: self.location.to_string(),
                what: what.to_owned(),
                status: status.as_u16(),
                host: self.location.host().unwrap_or_default(),
                sent: self.credential.is_some(),
            });
        }
        let body = String::from_utf8_lossy(&start_of(response).await).into_owned();
        Err(self.failed(format!(
            "cannot {what}: HTTP {status} {}",
            body.chars().take(200).collect::<String>().trim()
        )))
    }

    /// Whether the cache holds the blob `digest`.
    async fn has_blob(&self, digest: &str) -> Result<bool, Error> {
        match &self.location {
            Location::Dir(dir) => {
                let hex = digest_hex(digest).expect("digests pushed are sha256");
                Ok(dir.join("blobs/sha256").join(hex).is_file())
            }
            Location::Oci(image) => {
                let url = image.blob_url(digest);
                let what = format!("look up {digest}");
                let response = self.send(Method::HEAD, &url, &what, true, |r| r).await?;
                match response.status() {
                    s if s.is_success() => Ok(true),
                    StatusCode::NOT_FOUND => Ok(false),
                    _ => self.ok(response, &what).await.map(|_| false),
                }
            }
            Location::Http(_) => Err(self.read_only()),
        }
    }

    fn read_only(&self) -> Error {
        Error::ReadOnly {
            location: self.location.to_string(),
        }
    }

    /// Stores a blob the cache lacks.
    pub async fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<(), Error> {
        if self.has_blob(digest).await? {
            return Ok(());
        }
        match &self.location {
            Location::Dir(dir) => {
                let hex = digest_hex(digest).expect("digests pushed are sha256");
                write_atomic(&dir.join("blobs/sha256").join(hex), bytes).map_err(|e| self.failed(e))
            }
            Location::Oci(image) => {
                let start = image.uploads_url();
                let what = "start an upload";
                let response = self
                    .send(Method::POST, &start, what, true, |request| {
                        request.header(reqwest::header::CONTENT_LENGTH, 0)
                    })
                    .await?;
                let response = self.ok(response, what).await?;
                let upload = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|target| response.url().join(target).ok())
                    .ok_or_else(|| self.failed("an upload without a Location"))?;
                let mut url = upload;
                url.query_pairs_mut().append_pair("digest", digest);
                let body = bytes::Bytes::copy_from_slice(bytes);
                let what = format!("upload {digest}");
                let response = self
                    .send(Method::PUT, url.as_str(), &what, true, |request| {
                        request
                            .header(CONTENT_TYPE, "application/octet-stream")
                            .body(body.clone())
                    })
                    .await?;
                self.ok(response, &what).await.map(drop)
            }
            Location::Http(_) => Err(self.read_only()),
        }
    }

    /// Tags `manifest` as `tag`, a sample of `key`; its blobs are there.
    pub async fn put_manifest(
        &self,
        key: &RunKey,
        tag: &str,
        manifest: &[u8],
    ) -> Result<(), Error> {
        match &self.location {
            Location::Dir(dir) => {
                let digest = format!("sha256:{}", crate::digest::sha256_hex(manifest));
                self.put_blob(&digest, manifest).await?;
                tag_in_dir(dir, key, tag, &digest, manifest.len()).map_err(|e| self.failed(e))
            }
            Location::Oci(image) => {
                let url = image.manifest_url(tag);
                let body = bytes::Bytes::copy_from_slice(manifest);
                let what = format!("tag `{tag}`");
                let response = self
                    .send(Method::PUT, &url, &what, true, |request| {
                        request
                            .header(CONTENT_TYPE, MANIFEST_TYPE)
                            .body(body.clone())
                    })
                    .await?;
                self.ok(response, &what).await.map(drop)
            }
            Location::Http(_) => Err(self.read_only()),
        }
    }
}

/// The first [`ERROR_BODY_BYTES`] or so of an answer's body (what can be
/// read of it: the rest is left unread).
async fn start_of(mut response: reqwest::Response) -> Vec<u8> {
    let mut bytes = Vec::new();
    while bytes.len() < ERROR_BODY_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    bytes
}

/// Whether going from `from` to `to` leaves HTTPS for cleartext.
fn is_downgrade(from: &Url, to: &Url) -> bool {
    from.scheme() == "https" && to.scheme() != "https"
}

/// Records `tag` in `keys/<key>.json` and the OCI layout's `index.json`,
/// under the cache's lock (two pushes to one directory never lose a tag).
fn tag_in_dir(
    dir: &Path,
    key: &RunKey,
    tag: &str,
    digest: &str,
    size: usize,
) -> std::io::Result<()> {
    let lock = crate::filelock::open(&dir.join(".lock"))?;
    lock.lock()?;
    let layout = dir.join("oci-layout");
    if !layout.exists() {
        write_atomic(&layout, br#"{"imageLayoutVersion": "1.0.0"}"#)?;
    }
    let list_path = dir.join("keys").join(format!("{key}.json"));
    let mut list: TagList = read_json(&list_path)?.unwrap_or_default();
    list.insert(tag.to_owned(), digest.to_owned());
    write_atomic(&list_path, &serde_json::to_vec_pretty(&list)?)?;
    let index_path = dir.join("index.json");
    let mut index: serde_json::Value = read_json(&index_path)?.unwrap_or_else(
        || serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}),
    );
    let manifests = index["manifests"]
        .as_array_mut()
        .ok_or_else(|| std::io::Error::other("index.json has no `manifests` list"))?;
    manifests.retain(|m| m["annotations"]["org.opencontainers.image.ref.name"] != tag);
    manifests.push(serde_json::json!({
        "mediaType": MANIFEST_TYPE,
        "artifactType": super::artifact::ARTIFACT_TYPE,
        "digest": digest,
        "size": size,
        "annotations": {"org.opencontainers.image.ref.name": tag},
    }));
    write_atomic(&index_path, &serde_json::to_vec_pretty(&index)?)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> std::io::Result<Option<T>> {
    match fs_err::read(path) {
        Ok(bytes) => Ok(Some(
            serde_json::from_slice(&bytes).map_err(std::io::Error::other)?,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whole or not at all: a reader never sees half a file. Each file is
/// first a `.perfpipe-tmp-<random>` beside its place, locked while its
/// writer lives; a push killed meanwhile leaves one, which the next push to
/// that directory removes (its lock is free), and nothing else.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::atomic_write::AtomicWrite::new()
        .temp(crate::atomic_write::Temp::Locked(".perfpipe-tmp-"))
        .synced()
        .write(path, bytes)
}

/// The next page of a tag list (`Link: </v2/…?last=…>; rel="next"`),
/// relative to the page that names it.
fn next_page(response: &reqwest::Response) -> Option<String> {
    let link = response.headers().get("link")?.to_str().ok()?;
    let target = link.split(';').next()?.trim();
    let target = target.strip_prefix('<')?.strip_suffix('>')?;
    Some(response.url().join(target).ok()?.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(location: &str) -> Remote {
        Remote::new(Location::parse(location).unwrap())
    }

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn credentials_go_to_their_origin_only_and_never_to_cleartext() {
        let registry = remote("oci://registry.example/team/cache");
        let shows = |to: &str, dest| registry.shows_credentials(&url(to), dest);
        let cache = Destination::Cache;
        assert!(shows("https://registry.example/v2/team/cache/tags/list", cache).unwrap());
        for elsewhere in [
            "https://other.example/v2/team/cache/tags/list",
            "https://registry.example:8443/v2/",
            "https://registry.example.evil.example/v2/",
        ] {
            assert!(!shows(elsewhere, cache).unwrap(), "{elsewhere}");
        }
        // A registry's token service takes the login over HTTPS only.
        assert!(shows("https://auth.example/token", Destination::TokenService).unwrap());
        for downgrade in [
            "http://registry.example/v2/team/cache/tags/list",
            "http://other.example/upload",
        ] {
            let e = shows(downgrade, cache).unwrap_err();
            assert!(matches!(e, Error::Downgrade { .. }), "{e}");
            assert!(e.to_string().contains("cleartext"), "{e}");
        }
        let e = shows("http://auth.example/token", Destination::TokenService).unwrap_err();
        assert!(matches!(e, Error::Downgrade { .. }), "{e}");

        // A loopback registry is plain HTTP: another port is another origin.
        let local = remote("oci://127.0.0.1:5000/team/cache");
        assert!(
            local
                .shows_credentials(&url("http://127.0.0.1:5000/v2/"), Destination::Cache)
                .unwrap()
        );
        assert!(
            !local
                .shows_credentials(&url("http://127.0.0.1:5001/v2/"), Destination::Cache)
                .unwrap()
        );
        assert!(
            !local
                .shows_credentials(&url("http://auth.example/token"), Destination::TokenService)
                .unwrap()
        );
        let web = remote("https://cache.example/team");
        assert!(
            web.shows_credentials(
                &url("https://cache.example/team/keys/k.json"),
                Destination::Cache
            )
            .unwrap()
        );
        assert!(
            remote("/srv/cache")
                .shows_credentials(&url("http://x/"), Destination::Cache)
                .is_ok_and(|s| !s)
        );
    }

    #[test]
    fn a_cache_that_stops_answering_times_out_saying_so() {
        // Answers the headers of a long body, then nothing.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                let mut stream = stream;
                let mut request = [0u8; 4096];
                let _ = std::io::Read::read(&mut stream, &mut request);
                let _ = std::io::Write::write_all(
                    &mut stream,
                    b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{\"",
                );
                held.push(stream);
            }
        });
        let slow = Remote::with_timeout(Location::Http(base), Duration::from_secs(1));
        let key = RunKey::of_bytes(b"{}");
        let e = super::super::runtime(&crate::tokio_runtime::Io::new())
            .block_on(slow.tags(&key))
            .unwrap_err();
        assert!(matches!(e, Error::Timeout { seconds: 1, .. }), "{e}");
        let message = e.to_string();
        assert!(
            message.contains(&slow.location.to_string())
                && message.contains("within 1 s (timed out)"),
            "{message}"
        );
        assert!(!message.contains("decoding"), "{message}");
    }
}
