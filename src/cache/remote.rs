//! Reading and writing one cache: its samples' tags for a key, manifests
//! and blobs, over the file system, plain HTTP GETs or the OCI distribution
//! API (no referrers API: a key's samples are found by their tags). Nothing
//! read here is trusted; `artifact` checks it. (effects)

use std::collections::BTreeMap;
use std::path::Path;

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, LOCATION, WWW_AUTHENTICATE};

use super::Error;
use super::artifact::{MANIFEST_TYPE, digest_hex};
use super::credentials::Credential;
use super::location::Location;
use crate::key::RunKey;

/// A cache and the client that reaches it.
#[derive(Debug, Clone)]
pub struct Remote {
    pub location: Location,
    client: reqwest::Client,
    credential: Option<Credential>,
    /// The token a registry's token endpoint gave (`Bearer` challenges).
    token: std::sync::Arc<std::sync::Mutex<Option<String>>>,
}

/// `keys/<key>.json` of a directory or web cache: tag → manifest digest.
type TagList = BTreeMap<String, String>;

impl Remote {
    pub fn new(location: Location) -> Self {
        let client = crate::tls::client_builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .expect("a client with rustls and no proxy settings builds");
        Self {
            location,
            client,
            credential: None,
            token: Default::default(),
        }
    }

    /// Shows `credential` to the cache (`[credentials."HOST"]`).
    pub fn with_credential(mut self, credential: Option<Credential>) -> Self {
        self.credential = credential;
        self
    }

    /// Sends the request `build` makes, with the credential; when a registry
    /// answers 401 with a token challenge, gets a token for the repository
    /// (`write`: pull and push) and sends it once more.
    async fn send(
        &self,
        build: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
        write: bool,
    ) -> Result<reqwest::Response, Error> {
        let response = self.authorized(build(&self.client)).send().await;
        let response = response.map_err(|e| self.failed(without_url(e)))?;
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let Location::Oci(image) = &self.location else {
            return Ok(response);
        };
        if response.status() != StatusCode::UNAUTHORIZED
            || !crate::lock::resolve::token::is_bearer(challenge)
        {
            return Ok(response);
        }
        let access = if write { "pull,push" } else { "pull" };
        let scope = format!("repository:{}:{access}", image.repository);
        let login = match &self.credential {
            Some(Credential::Basic { username, password }) => {
                Some((username.clone(), password.clone()))
            }
            _ => None,
        };
        let token = crate::lock::resolve::token::bearer(
            &self.client,
            challenge,
            &image.registry,
            &scope,
            login.as_ref(),
        )
        .await
        .map_err(|e| self.failed(e))?;
        *self.token.lock().expect("no panic holds the token") = Some(token);
        let response = self.authorized(build(&self.client)).send().await;
        response.map_err(|e| self.failed(without_url(e)))
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

    fn failed(&self, what: impl std::fmt::Display) -> Error {
        Error::Cache {
            location: self.location.to_string(),
            message: what.to_string(),
        }
    }

    /// The tags of `key`'s samples; none when the cache has no sample of it.
    pub async fn tags(&self, key: &RunKey) -> Result<Vec<String>, Error> {
        match &self.location {
            Location::Dir(_) | Location::Http(_) => {
                Ok(self.tag_list(key).await?.into_keys().collect())
            }
            Location::Oci(image) => {
                let prefix = format!("{key}-");
                let mut url = Some(format!(
                    "{}/v2/{}/tags/list?n=1000",
                    image.api_base(),
                    image.repository
                ));
                let mut tags = Vec::new();
                while let Some(next) = url.take() {
                    let response = self.get(&next, None).await?;
                    if response.status() == StatusCode::NOT_FOUND {
                        return Ok(Vec::new());
                    }
                    let response = self.ok(response, "list tags").await?;
                    url = next_page(&response, &image.api_base());
                    #[derive(serde::Deserialize)]
                    struct Tags {
                        tags: Option<Vec<String>>,
                    }
                    let page: Tags = response
                        .json()
                        .await
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
        let Some(bytes) = self.read(&format!("keys/{key}.json")).await? else {
            return Ok(TagList::new());
        };
        serde_json::from_slice(&bytes).map_err(|e| self.failed(format!("keys/{key}.json: {e}")))
    }

    /// The manifest of `key`'s sample tagged `tag`.
    pub async fn manifest(&self, key: &RunKey, tag: &str) -> Result<Vec<u8>, Error> {
        match &self.location {
            Location::Dir(_) | Location::Http(_) => {
                let list = self.tag_list(key).await?;
                let digest = list
                    .get(tag)
                    .ok_or_else(|| self.failed(format!("no tag `{tag}`")))?;
                self.blob(digest).await
            }
            Location::Oci(image) => {
                let url = format!(
                    "{}/v2/{}/manifests/{tag}",
                    image.api_base(),
                    image.repository
                );
                let response = self.get(&url, Some(MANIFEST_TYPE)).await?;
                let response = self.ok(response, &format!("get `{tag}`")).await?;
                Ok(response.bytes().await.map_err(|e| self.failed(e))?.to_vec())
            }
        }
    }

    /// The bytes of the blob `digest` (not checked here).
    pub async fn blob(&self, digest: &str) -> Result<Vec<u8>, Error> {
        let hex = digest_hex(digest).ok_or_else(|| self.failed(format!("digest `{digest}`")))?;
        let bytes = match &self.location {
            Location::Dir(_) | Location::Http(_) => {
                self.read(&format!("blobs/sha256/{hex}")).await?
            }
            Location::Oci(image) => {
                let url = format!(
                    "{}/v2/{}/blobs/{digest}",
                    image.api_base(),
                    image.repository
                );
                let response = self.get(&url, None).await?;
                let response = self.ok(response, &format!("get blob {digest}")).await?;
                Some(response.bytes().await.map_err(|e| self.failed(e))?.to_vec())
            }
        };
        bytes.ok_or_else(|| self.failed(format!("the blob {digest} is missing")))
    }

    /// A file of a directory or web cache; `None` when absent.
    async fn read(&self, path: &str) -> Result<Option<Vec<u8>>, Error> {
        match &self.location {
            Location::Dir(dir) => match fs_err::read(dir.join(path)) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(self.failed(e)),
            },
            Location::Http(base) => {
                let response = self.get(&format!("{base}/{path}"), None).await?;
                if response.status() == StatusCode::NOT_FOUND {
                    return Ok(None);
                }
                let response = self.ok(response, &format!("get `{path}`")).await?;
                Ok(Some(
                    response.bytes().await.map_err(|e| self.failed(e))?.to_vec(),
                ))
            }
            Location::Oci(_) => unreachable!("registries are read through the API"),
        }
    }

    async fn get(&self, url: &str, accept: Option<&str>) -> Result<reqwest::Response, Error> {
        self.send(
            |client| {
                let request = client.get(url);
                match accept {
                    Some(accept) => request.header(ACCEPT, accept),
                    None => request,
                }
            },
            false,
        )
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
        let body = response.text().await.unwrap_or_default();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(Error::Denied {
                location: self.location.to_string(),
                what: what.to_owned(),
                status: status.as_u16(),
                host: self.location.host().unwrap_or_default(),
                sent: self.credential.is_some(),
            });
        }
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
                let url = format!(
                    "{}/v2/{}/blobs/{digest}",
                    image.api_base(),
                    image.repository
                );
                let response = self.send(|client| client.head(&url), true).await?;
                match response.status() {
                    s if s.is_success() => Ok(true),
                    StatusCode::NOT_FOUND => Ok(false),
                    _ => self
                        .ok(response, &format!("look up {digest}"))
                        .await
                        .map(|_| false),
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
                let base = image.api_base();
                let start = format!("{base}/v2/{}/blobs/uploads/", image.repository);
                let response = self
                    .send(
                        |client| {
                            client
                                .post(&start)
                                .header(reqwest::header::CONTENT_LENGTH, 0)
                        },
                        true,
                    )
                    .await?;
                let response = self.ok(response, "start an upload").await?;
                let upload = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| self.failed("an upload without a Location"))?;
                let upload = absolute(upload, &base);
                let separator = if upload.contains('?') { '&' } else { '?' };
                let url = format!("{upload}{separator}digest={digest}");
                let response = self
                    .send(
                        |client| {
                            client
                                .put(&url)
                                .header(CONTENT_TYPE, "application/octet-stream")
                                .body(bytes.to_vec())
                        },
                        true,
                    )
                    .await?;
                self.ok(response, &format!("upload {digest}"))
                    .await
                    .map(drop)
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
                let digest = format!("sha256:{}", super::sha256_hex(manifest));
                self.put_blob(&digest, manifest).await?;
                tag_in_dir(dir, key, tag, &digest, manifest.len()).map_err(|e| self.failed(e))
            }
            Location::Oci(image) => {
                let url = format!(
                    "{}/v2/{}/manifests/{tag}",
                    image.api_base(),
                    image.repository
                );
                let response = self
                    .send(
                        |client| {
                            client
                                .put(&url)
                                .header(CONTENT_TYPE, MANIFEST_TYPE)
                                .body(manifest.to_vec())
                        },
                        true,
                    )
                    .await?;
                self.ok(response, &format!("tag `{tag}`")).await.map(drop)
            }
            Location::Http(_) => Err(self.read_only()),
        }
    }
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

/// Whole or not at all: a reader never sees half a file; a killed push's
/// temp file is the next push's to remove (`dir_temp`).
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    super::dir_temp::write_atomic(path, bytes)
}

/// The next page of a tag list (`Link: </v2/…?last=…>; rel="next"`).
fn next_page(response: &reqwest::Response, base: &str) -> Option<String> {
    let link = response.headers().get("link")?.to_str().ok()?;
    let target = link.split(';').next()?.trim();
    let target = target.strip_prefix('<')?.strip_suffix('>')?;
    Some(absolute(target, base))
}

fn absolute(target: &str, base: &str) -> String {
    if target.starts_with("http://") || target.starts_with("https://") {
        target.to_owned()
    } else {
        format!("{base}{target}")
    }
}

/// reqwest's message without the URL (the location is named already).
fn without_url(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        message = format!("{message}: {s}");
        source = s.source();
    }
    message
}
