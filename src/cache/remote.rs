//! Reading and writing one cache: a key's index (one read per key, the
//! layout at the top of `location`), sample manifests and blobs, over the
//! file system, plain HTTP GETs, S3's object requests (signed in `s3`) or
//! the OCI distribution API. Blobs are
//! streamed both ways: uploaded from the store's files, and downloaded
//! through a hash into a file, refused as soon as they pass their declared
//! size. Nothing read here is trusted; `artifact` checks it. (effects)

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, ETAG, IF_MATCH, IF_NONE_MATCH, LOCATION,
};
use reqwest::{Method, StatusCode, Url};

use super::Error;
use super::artifact::{Blob, INDEX_TYPE, Index, MANIFEST_TYPE, Source, digest_hex};
use super::credentials::Credential;
use super::location::Location;
use crate::key::RunKey;
use crate::oci::token;
use crate::tls::{BodyError, Limit, transport_error};

/// How long one request may take, its answer included.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Tries of a key's index lookup that failed on the way or with a 5xx or
/// 429 (a definite answer, found or not, is never asked again).
const LOOKUP_TRIES: u32 = 3;

/// Writes of a key's index to a bucket, each after reading it again, when
/// another push changed it between the read and the write.
const INDEX_WRITE_TRIES: u32 = 5;

/// A key's index (`keys/<key>.json`, or its tag): 4 MiB, as registries
/// bound manifests.
const MAX_INDEX_BYTES: Limit = Limit {
    bytes: 4 << 20,
    of: "perfpipe reads of a key's index",
};

/// What is read of a stream at once (upload or download).
const CHUNK_BYTES: usize = 256 << 10;

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

/// A key's index as a cache holds it, and the S3 ETag of that version.
struct Held {
    bytes: Vec<u8>,
    etag: Option<String>,
}

/// What an object's `PUT` asks of the version it replaces (S3's
/// conditional writes).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Precondition {
    /// None: the object is written whatever is there.
    Whatever,
    /// There is none yet (`If-None-Match: *`).
    Absent,
    /// It is still the version of this ETag (`If-Match`).
    Is(String),
}

/// Whether a conditional `PUT` wrote, or found the object changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Put {
    Written,
    Changed,
}

/// Where a request goes, for the one decision on credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Destination {
    /// What the cache serves: indexes, manifests, blobs, uploads.
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
            Location::S3(bucket) => Url::parse(&bucket.base()).ok(),
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
            let request = if credentials {
                self.authorized(request)
            } else {
                request
            };
            let mut request = request
                .build()
                .map_err(|e| self.failed(transport_error(&format!("cannot {what}"), e)))?;
            if credentials {
                self.sign(&mut request);
            }
            Ok::<_, Error>(request)
        };
        let response = self
            .client
            .execute(request()?)
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
        self.client
            .execute(request()?)
            .await
            .map_err(|e| self.transport(e, what))
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if let Location::S3(_) = self.location {
            return request; // signed whole, once built (`Self::sign`)
        }
        let token = self.token.lock().expect("no panic holds the token").clone();
        match (token.as_ref(), &self.credential) {
            (Some(token), _) | (None, Some(Credential::Bearer(token))) => {
                request.header(AUTHORIZATION, format!("Bearer {token}"))
            }
            (None, Some(Credential::Basic { username, password })) => {
                request.basic_auth(username, Some(password))
            }
            // An access key signs the whole request (`Self::sign`).
            (None, None | Some(Credential::AccessKey { .. })) => request,
        }
    }

    /// Signs a request to an S3 cache with its access key; other caches'
    /// requests carry their credentials in a header (`Self::authorized`).
    fn sign(&self, request: &mut reqwest::Request) {
        if let (
            Location::S3(bucket),
            Some(Credential::AccessKey {
                id,
                secret,
                session_token,
                ..
            }),
        ) = (&self.location, &self.credential)
        {
            let key = super::s3::AccessKey {
                id,
                secret,
                session_token: session_token.as_deref(),
            };
            super::s3::sign(request, &bucket.region, &key);
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

    /// The index of `key`'s samples (its bytes, unchecked); `None` when the
    /// cache has no sample of it. One request whatever the cache holds,
    /// tried again (at most `LOOKUP_TRIES` in all) only when it failed on
    /// its way or the cache answered 5xx or 429.
    pub async fn index(&self, key: &RunKey) -> Result<Option<Vec<u8>>, Error> {
        Ok(self.held_index(key).await?.map(|held| held.bytes))
    }

    /// [`Self::index`], with the ETag the cache gave that version (a
    /// bucket's, for a write conditional on it).
    async fn held_index(&self, key: &RunKey) -> Result<Option<Held>, Error> {
        let path = index_path(key);
        let (url, what, accept) = match &self.location {
            Location::Dir(_) => {
                let bytes = self.read(&path, MAX_INDEX_BYTES).await?;
                return Ok(bytes.map(|bytes| Held { bytes, etag: None }));
            }
            Location::Http(base) => (format!("{base}/{path}"), format!("get `{path}`"), None),
            Location::S3(bucket) => (bucket.object_url(&path), format!("get `{path}`"), None),
            Location::Oci(image) => (
                image.manifest_url(key.as_str()),
                format!("get the index `{key}`"),
                Some(INDEX_TYPE),
            ),
        };
        let mut tries = 1;
        let response = loop {
            let last = tries >= LOOKUP_TRIES;
            match self.get(&url, accept, &what).await {
                Ok(response)
                    if !last
                        && (response.status().is_server_error()
                            || response.status() == StatusCode::TOO_MANY_REQUESTS) => {}
                // A timeout (`Error::Timeout`) has taken its time already.
                Err(Error::Cache { .. }) if !last => {}
                answer => break answer?,
            }
            tokio::time::sleep(Duration::from_millis(100 << tries)).await;
            tries += 1;
        };
        if response.status() == StatusCode::NOT_FOUND {
            return self.no_such_object(response, &what).await.map(|_| None);
        }
        let response = self.ok(response, &what).await?;
        let etag = response
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = self.body(response, MAX_INDEX_BYTES, &what).await?;
        Ok(Some(Held { bytes, etag }))
    }

    /// Streams the blob `digest`, which its manifest declares `size` bytes
    /// long, into `sink`: refused as soon as it passes `size`. Gives the
    /// sha256 (hex) of what was read, for the caller to check.
    pub async fn blob_into(
        &self,
        digest: &str,
        size: u64,
        sink: &mut dyn Write,
    ) -> Result<String, Error> {
        let hex = digest_hex(digest).ok_or_else(|| self.failed(format!("digest `{digest}`")))?;
        let limit = declared(size);
        let what = format!("get blob {digest}");
        let mut sink = Bounded::new(sink, size);
        let written = match &self.location {
            Location::Dir(dir) => {
                let path = dir.join("blobs/sha256").join(hex);
                let file = match crate::regular_file::open(&path) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Err(self.failed(format!("the blob {digest} is missing")));
                    }
                    other => other.map_err(|e| self.failed(format!("{what}: {e}")))?,
                };
                std::io::copy(&mut file.take(size + 1), &mut sink).map(drop)
            }
            Location::Http(_) | Location::S3(_) | Location::Oci(_) => {
                let url = match &self.location {
                    Location::Http(base) => format!("{base}/blobs/sha256/{hex}"),
                    Location::S3(bucket) => bucket.object_url(&format!("blobs/sha256/{hex}")),
                    Location::Oci(image) => image.blob_url(digest),
                    Location::Dir(_) => unreachable!(),
                };
                let response = self.get(&url, None, &what).await?;
                if response.status() == StatusCode::NOT_FOUND {
                    return Err(self.failed(format!("the blob {digest} is missing")));
                }
                let mut response = self.ok(response, &what).await?;
                if response.content_length().is_some_and(|len| len > size) {
                    return Err(self.too_long(&what, limit));
                }
                loop {
                    match response.chunk().await {
                        Ok(Some(chunk)) => {
                            if let Err(e) = sink.write_all(&chunk) {
                                break Err(e);
                            }
                        }
                        Ok(None) => break Ok(()),
                        Err(e) => return Err(self.transport(e, &what)),
                    }
                }
            }
        };
        match written {
            Ok(()) if sink.over => Err(self.too_long(&what, limit)),
            Ok(()) => Ok(sink.finish()),
            Err(_) if sink.over => Err(self.too_long(&what, limit)),
            Err(e) => Err(self.failed(format!("cannot {what}: {e}"))),
        }
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
            Location::Oci(_) | Location::S3(_) => {
                unreachable!("registries and buckets are read through their API")
            }
        }
    }

    /// `None` for a 404; for a bucket, an error when the bucket itself is
    /// missing (a cache that is not there is not an empty one).
    async fn no_such_object(
        &self,
        response: reqwest::Response,
        what: &str,
    ) -> Result<Option<Vec<u8>>, Error> {
        let Location::S3(_) = self.location else {
            return Ok(None);
        };
        match super::s3::error_code(&start_of(response).await).as_deref() {
            Some("NoSuchBucket") => Err(self.failed(format!(
                "cannot {what}: the bucket does not exist (NoSuchBucket)"
            ))),
            _ => Ok(None),
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
        if let Location::S3(_) = self.location
            && (status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN)
        {
            let code = super::s3::error_code(&start_of(response).await);
            return Err(Error::S3Denied {
                location: self.location.to_string(),
                what: what.to_owned(),
                status: status.as_u16(),
                code: code.unwrap_or_default(),
                host: self.location.host().unwrap_or_default(),
                from: match &self.credential {
                    Some(Credential::AccessKey { origin, .. }) => Some(*origin),
                    _ => None,
                },
            });
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
            Location::S3(bucket) => {
                let hex = digest_hex(digest).expect("digests pushed are sha256");
                self.exists(&bucket.object_url(&format!("blobs/sha256/{hex}")), digest)
                    .await
            }
            Location::Oci(image) => self.exists(&image.blob_url(digest), digest).await,
            Location::Http(_) => Err(self.read_only()),
        }
    }

    /// Whether a HEAD of `url` (the blob `digest`) finds it.
    async fn exists(&self, url: &str, digest: &str) -> Result<bool, Error> {
        let what = format!("look up {digest}");
        let response = self.send(Method::HEAD, url, &what, true, |r| r).await?;
        match response.status() {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => self.ok(response, &what).await.map(|_| false),
        }
    }

    fn read_only(&self) -> Error {
        Error::ReadOnly {
            location: self.location.to_string(),
        }
    }

    /// Stores a blob the cache lacks, streamed from where it is.
    pub async fn put_blob(&self, blob: &Blob) -> Result<(), Error> {
        if self.has_blob(&blob.digest).await? {
            return Ok(());
        }
        let digest = &blob.digest;
        match &self.location {
            Location::Dir(dir) => {
                let hex = digest_hex(digest).expect("digests pushed are sha256");
                let path = dir.join("blobs/sha256").join(hex);
                copy_into_dir(&blob.source, &path, hex).map_err(|e| self.failed(e))
            }
            Location::S3(_) => {
                let hex = digest_hex(digest).expect("digests pushed are sha256");
                let what = format!("upload {digest}");
                // Its digest is the payload's hash the signature names:
                // streamed, and refused by the server if it differs.
                let path = format!("blobs/sha256/{hex}");
                let whatever = Precondition::Whatever;
                self.put_object(&path, &blob.source, blob.size, hex, &what, &whatever)
                    .await
                    .map(drop)
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
                let what = format!("upload {digest}");
                let response = self
                    .send(Method::PUT, url.as_str(), &what, true, |request| {
                        request
                            .header(CONTENT_TYPE, "application/octet-stream")
                            .header(reqwest::header::CONTENT_LENGTH, blob.size)
                            .body(body_of(&blob.source))
                    })
                    .await?;
                self.ok(response, &what).await.map(drop)
            }
            Location::Http(_) => Err(self.read_only()),
        }
    }

    /// Stores a sample's manifest (by its digest: the key's index names it).
    pub async fn put_manifest(&self, manifest: &[u8]) -> Result<(), Error> {
        let digest = format!("sha256:{}", crate::digest::sha256_hex(manifest));
        match &self.location {
            Location::Dir(_) | Location::S3(_) => {
                self.put_blob(&Blob {
                    digest,
                    size: manifest.len() as u64,
                    source: Source::Bytes(manifest.to_vec()),
                })
                .await
            }
            Location::Oci(image) => {
                let what = format!("put the manifest {digest}");
                self.put_manifest_at(&image.manifest_url(&digest), MANIFEST_TYPE, manifest, &what)
                    .await
            }
            Location::Http(_) => Err(self.read_only()),
        }
    }

    async fn put_manifest_at(
        &self,
        url: &str,
        media_type: &str,
        manifest: &[u8],
        what: &str,
    ) -> Result<(), Error> {
        let body = bytes::Bytes::copy_from_slice(manifest);
        let response = self
            .send(Method::PUT, url, what, true, |request| {
                request.header(CONTENT_TYPE, media_type).body(body.clone())
            })
            .await?;
        self.ok(response, what).await.map(drop)
    }

    /// Changes `key`'s index by `change` (given the index as the cache holds
    /// it now, or a new one), and writes it unless `change` returns false.
    /// The samples it adds are in the cache already. A directory changes it
    /// under its lock; a bucket writes it only if it is still the version
    /// read, else reads and changes it again; a registry has no
    /// compare-and-swap (location.rs).
    pub async fn update_index(
        &self,
        key: &RunKey,
        change: impl Fn(&mut Index) -> bool,
    ) -> Result<(), Error> {
        let changed = |held: Option<Vec<u8>>| -> Result<Option<Vec<u8>>, Error> {
            let mut index = match held {
                Some(bytes) => Index::parse(key, &bytes)
                    .map_err(|e| self.failed(format!("{}: {e}", index_path(key))))?,
                None => Index::new(key),
            };
            Ok(change(&mut index).then(|| index.to_bytes()))
        };
        match &self.location {
            Location::Dir(dir) => {
                let lock = crate::filelock::open(&dir.join(".lock")).map_err(|e| self.failed(e))?;
                lock.lock().map_err(|e| self.failed(e))?;
                let held = self.read(&index_path(key), MAX_INDEX_BYTES).await?;
                if let Some(bytes) = changed(held)? {
                    write_dir_index(dir, key, &bytes).map_err(|e| self.failed(e))?;
                }
                Ok(())
            }
            Location::Oci(image) => {
                if let Some(bytes) = changed(self.index(key).await?)? {
                    let what = format!("put the index `{key}`");
                    self.put_manifest_at(
                        &image.manifest_url(key.as_str()),
                        INDEX_TYPE,
                        &bytes,
                        &what,
                    )
                    .await?;
                }
                Ok(())
            }
            // A bucket has no lock: a compare-and-swap on the ETag.
            Location::S3(_) => {
                let what = format!("put the index `{key}`");
                for tries in 1..=INDEX_WRITE_TRIES {
                    let held = self.held_index(key).await?;
                    let precondition = match &held {
                        None => Precondition::Absent,
                        Some(Held {
                            etag: Some(etag), ..
                        }) => Precondition::Is(etag.clone()),
                        // A server that names no version is written over.
                        Some(_) => Precondition::Whatever,
                    };
                    let Some(bytes) = changed(held.map(|held| held.bytes))? else {
                        return Ok(());
                    };
                    let hash = crate::digest::sha256_hex(&bytes);
                    let size = bytes.len() as u64;
                    let source = Source::Bytes(bytes);
                    let path = index_path(key);
                    match self
                        .put_object(&path, &source, size, &hash, &what, &precondition)
                        .await?
                    {
                        Put::Written => return Ok(()),
                        // Another push wrote it since it was read: read it
                        // again, after a while that differs per process.
                        Put::Changed => {
                            let jitter = u64::from(getrandom::u32().unwrap_or(0) % 100);
                            let wait = (50 << tries) + jitter;
                            tokio::time::sleep(Duration::from_millis(wait)).await;
                        }
                    }
                }
                Err(self.failed(format!(
                    "cannot {what}: other pushes changed it before each of {INDEX_WRITE_TRIES} writes; push again"
                )))
            }
            Location::Http(_) => Err(self.read_only()),
        }
    }
}

/// Where a key's index is in a directory, web or S3 cache.
fn index_path(key: &RunKey) -> String {
    format!("keys/{key}.json")
}

/// A sink that hashes what it is given and refuses (marking `over`) what
/// would take it past `limit` bytes, before writing any of it.
struct Bounded<'a> {
    inner: &'a mut dyn Write,
    hasher: sha2::Sha256,
    written: u64,
    limit: u64,
    over: bool,
}

impl<'a> Bounded<'a> {
    fn new(inner: &'a mut dyn Write, limit: u64) -> Self {
        use sha2::Digest as _;
        Self {
            inner,
            hasher: sha2::Sha256::new(),
            written: 0,
            limit,
            over: false,
        }
    }

    /// The sha256 (hex) of what was written.
    fn finish(self) -> String {
        use sha2::Digest as _;
        hex::encode(self.hasher.finalize())
    }
}

impl Write for Bounded<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use sha2::Digest as _;
        if self.written + buf.len() as u64 > self.limit {
            self.over = true;
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                "longer than declared",
            ));
        }
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A request body of `source`: a file is read a chunk at a time as the
/// request is sent, never whole.
fn body_of(source: &Source) -> reqwest::Body {
    match source {
        Source::Bytes(bytes) => reqwest::Body::from(bytes.clone()),
        Source::File(path) => {
            let chunks = futures_util::stream::try_unfold(
                (path.clone(), None::<std::fs::File>),
                |(path, file)| async move {
                    let mut file = match file {
                        Some(file) => file,
                        None => crate::store::open_entry_file(&path)?,
                    };
                    let mut chunk = vec![0u8; CHUNK_BYTES];
                    let n = file.read(&mut chunk)?;
                    if n == 0 {
                        return Ok::<_, std::io::Error>(None);
                    }
                    chunk.truncate(n);
                    Ok(Some((bytes::Bytes::from(chunk), (path, Some(file)))))
                },
            );
            reqwest::Body::wrap_stream(chunks)
        }
    }
}

/// Copies `source` to `path` of a directory cache, whole or not at all,
/// refused unless it hashes to `hex` (a store file changed since it was
/// hashed is not published under the old digest).
fn copy_into_dir(source: &Source, path: &Path, hex: &str) -> std::io::Result<()> {
    let mut pending = crate::atomic_write::AtomicWrite::new()
        .temp(crate::atomic_write::Temp::Locked(".perfpipe-tmp-"))
        .synced()
        .begin(path)?;
    let got = {
        let mut sink = Bounded::new(pending.file(), u64::MAX);
        match source {
            Source::Bytes(bytes) => sink.write_all(bytes)?,
            Source::File(from) => {
                std::io::copy(&mut crate::store::open_entry_file(from)?, &mut sink)?;
            }
        }
        sink.finish()
    };
    if got != hex {
        return Err(std::io::Error::other(format!(
            "{} changed while it was pushed (it hashes to sha256:{got})",
            match source {
                Source::File(from) => from.display().to_string(),
                Source::Bytes(_) => "a blob".into(),
            }
        )));
    }
    pending.commit()
}

impl Remote {
    /// `PUT`s the object `path` of an S3 cache, `size` bytes streamed from
    /// `source`, whose sha256 the signature names, if what it replaces meets
    /// `precondition`: [`Put::Changed`] when it does not (S3's 412; AWS
    /// answers 409 to a write racing another conditional one).
    async fn put_object(
        &self,
        path: &str,
        source: &Source,
        size: u64,
        sha256_hex: &str,
        what: &str,
        precondition: &Precondition,
    ) -> Result<Put, Error> {
        let Location::S3(bucket) = &self.location else {
            unreachable!("objects are an S3 cache's")
        };
        let response = self
            .send(
                Method::PUT,
                &bucket.object_url(path),
                what,
                true,
                |request| {
                    let request = request
                        .header(CONTENT_TYPE, "application/octet-stream")
                        .header(reqwest::header::CONTENT_LENGTH, size)
                        .header("x-amz-content-sha256", sha256_hex)
                        .body(body_of(source));
                    match precondition {
                        Precondition::Whatever => request,
                        Precondition::Absent => request.header(IF_NONE_MATCH, "*"),
                        Precondition::Is(etag) => request.header(IF_MATCH, etag),
                    }
                },
            )
            .await?;
        let status = response.status();
        if *precondition != Precondition::Whatever
            && (status == StatusCode::PRECONDITION_FAILED || status == StatusCode::CONFLICT)
        {
            return Ok(Put::Changed);
        }
        self.ok(response, what).await.map(|_| Put::Written)
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

/// Writes `keys/<key>.json` of a directory cache (its lock held), and the
/// OCI layout's `oci-layout` and empty `index.json` the first time.
fn write_dir_index(dir: &Path, key: &RunKey, bytes: &[u8]) -> std::io::Result<()> {
    let layout = dir.join("oci-layout");
    if !layout.exists() {
        write_atomic(&layout, br#"{"imageLayoutVersion": "1.0.0"}"#)?;
    }
    let index = dir.join("index.json");
    if !index.exists() {
        let empty =
            serde_json::json!({"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": []});
        write_atomic(&index, &serde_json::to_vec_pretty(&empty)?)?;
    }
    write_atomic(&dir.join(index_path(key)), bytes)
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
            .block_on(slow.index(&key))
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
