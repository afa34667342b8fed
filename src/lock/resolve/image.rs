//! Tag → digest through the OCI distribution API, with the bearer-token
//! handshake Docker Hub and NGC use; an image index (manifest list) is
//! resolved to its linux/amd64 manifest.

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use sha2::{Digest, Sha256};

use super::{request_error, transport_error};
use crate::lock::{Attrs, PinError};

const INDEX_TYPES: &[&str] = &[
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];
const MANIFEST_TYPES: &[&str] = &[
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
];

/// An image reference split as the distribution API addresses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// `docker.io`, `nvcr.io`, `localhost:5000`.
    pub registry: String,
    /// `vllm/vllm-openai` (`library/ubuntu` for Docker Hub's official images).
    pub repository: String,
    /// A tag, or a `sha256:` digest.
    pub reference: String,
}

impl ImageRef {
    /// Parses as docker does: the first component names a registry when it
    /// has a `.` or a `:` or is `localhost`; otherwise Docker Hub.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad =
            || format!("`{text}` is not an image reference such as `vllm/vllm-openai:v0.11.0`");
        let (name, digest) = match text.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (text, None),
        };
        let (name, tag) = match name.rfind(':') {
            Some(i) if !name[i..].contains('/') => (&name[..i], &name[i + 1..]),
            _ => (name, "latest"),
        };
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first.to_owned(), rest.to_owned())
            }
            _ if name.contains('/') => ("docker.io".to_owned(), name.to_owned()),
            _ => ("docker.io".to_owned(), format!("library/{name}")),
        };
        let valid = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-/:".contains(&b))
        };
        if !valid(&registry)
            || !valid(&repository)
            || !valid(tag)
            || repository.contains("..")
            || repository.split('/').any(str::is_empty)
        {
            return Err(bad());
        }
        Ok(Self {
            registry,
            repository,
            reference: digest.unwrap_or(tag).to_owned(),
        })
    }

    /// Where the API answers: Docker Hub's API host; plain HTTP on loopback
    /// (as docker treats `localhost` registries), HTTPS elsewhere.
    pub fn api_base(&self) -> String {
        let host = self
            .registry
            .rsplit_once(':')
            .map_or(self.registry.as_str(), |(h, _)| h);
        match self.registry.as_str() {
            "docker.io" => "https://registry-1.docker.io".into(),
            _ if host == "localhost" || host.starts_with("127.") || host == "[::1]" => {
                format!("http://{}", self.registry)
            }
            _ => format!("https://{}", self.registry),
        }
    }

    /// The reference that names exactly `digest`.
    pub fn pinned(&self, digest: &str) -> String {
        format!("{}/{}@{digest}", self.registry, self.repository)
    }
}

/// `{image: <registry>/<repo>@<digest>}`, plus `index=<digest>` when the tag
/// names an index and `image` is its linux/amd64 manifest.
pub async fn resolve(
    client: &reqwest::Client,
    image: &ImageRef,
    login: Option<&(String, String)>,
) -> Result<Attrs, PinError> {
    let url = format!(
        "{}/v2/{}/manifests/{}",
        image.api_base(),
        image.repository,
        image.reference
    );
    let what = format!("cannot ask {} for `{}`", image.registry, image.repository);
    // The first request says whether the registry can be reached at all.
    let response = get(client, &url, None)
        .await
        .map_err(|e| request_error(&what, &image.registry, e))?;
    Ok(answered(client, image, login, &url, &what, response).await?)
}

/// A manifest request for `url`, with the bearer `token` when there is one.
fn get(
    client: &reqwest::Client,
    url: &str,
    token: Option<String>,
) -> impl Future<Output = reqwest::Result<reqwest::Response>> {
    let mut request = client
        .get(url)
        .header(ACCEPT, [INDEX_TYPES, MANIFEST_TYPES].concat().join(", "));
    if let Some(token) = token {
        request = request.header(AUTHORIZATION, format!("Bearer {token}"));
    }
    request.send()
}

/// The pin from the registry's first answer: through its token handshake
/// when it asks for one, and to the linux/amd64 image of an index.
async fn answered(
    client: &reqwest::Client,
    image: &ImageRef,
    login: Option<&(String, String)>,
    url: &str,
    what: &str,
    mut response: reqwest::Response,
) -> Result<Attrs, String> {
    if response.status() == StatusCode::UNAUTHORIZED {
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let scope = format!("repository:{}:pull", image.repository);
        let token =
            super::token::bearer(client, &challenge, &image.registry, &scope, login).await?;
        response = get(client, url, Some(token))
            .await
            .map_err(|e| transport_error(what, e))?;
    }
    match response.status() {
        s if s.is_success() => {}
        StatusCode::NOT_FOUND => {
            return Err(format!(
                "{} has no `{}:{}`",
                image.registry, image.repository, image.reference
            ));
        }
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            return Err(format!(
                "{} refused access to `{}`: set PERFPIPE_REGISTRY_USERNAME and PERFPIPE_REGISTRY_PASSWORD",
                image.registry, image.repository
            ));
        }
        s => {
            return Err(format!(
                "{} answered {s} for `{}`",
                image.registry, image.repository
            ));
        }
    }
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let announced = header("docker-content-digest");
    let content_type = header(CONTENT_TYPE.as_str()).unwrap_or_default();
    let body = response
        .bytes()
        .await
        .map_err(|e| transport_error(what, e))?;
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(&body)));
    if announced.as_ref().is_some_and(|a| *a != digest) {
        return Err(format!(
            "{} sent a manifest for `{}` whose sha256 is not the Docker-Content-Digest it announced",
            image.registry, image.repository
        ));
    }
    let manifest: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| format!("{} sent a manifest that is not JSON: {e}", image.registry))?;
    let media_type = manifest["mediaType"].as_str().unwrap_or(&content_type);
    let is_index = INDEX_TYPES.iter().any(|t| media_type.starts_with(t))
        || (media_type.is_empty() && manifest["manifests"].is_array());
    if !is_index {
        return Ok(Attrs::from([("image".into(), image.pinned(&digest))]));
    }
    let amd64 = manifest["manifests"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["platform"]["os"] == "linux" && m["platform"]["architecture"] == "amd64")
        .and_then(|m| m["digest"].as_str())
        .ok_or_else(|| {
            format!(
                "`{}:{}` has no linux/amd64 image",
                image.repository, image.reference
            )
        })?;
    Ok(Attrs::from([
        ("image".into(), image.pinned(amd64)),
        ("index".into(), digest),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_read_as_docker_reads_them() {
        let cases = [
            (
                "vllm/vllm-openai:v0.11.0",
                "docker.io",
                "vllm/vllm-openai",
                "v0.11.0",
                "https://registry-1.docker.io",
            ),
            (
                "ubuntu",
                "docker.io",
                "library/ubuntu",
                "latest",
                "https://registry-1.docker.io",
            ),
            (
                "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc1",
                "nvcr.io",
                "nvidia/tensorrt-llm/release",
                "1.2.0rc1",
                "https://nvcr.io",
            ),
            (
                "localhost:5000/x/y:t",
                "localhost:5000",
                "x/y",
                "t",
                "http://localhost:5000",
            ),
            (
                "127.0.0.1:5000/y@sha256:ab",
                "127.0.0.1:5000",
                "y",
                "sha256:ab",
                "http://127.0.0.1:5000",
            ),
        ];
        for (text, registry, repository, reference, base) in cases {
            let r = ImageRef::parse(text).unwrap();
            assert_eq!(
                (
                    r.registry.as_str(),
                    r.repository.as_str(),
                    r.reference.as_str()
                ),
                (registry, repository, reference),
                "{text}"
            );
            assert_eq!(r.api_base(), base);
        }
        for bad in ["", "a b:c", "x/../y:z", "x:"] {
            assert!(ImageRef::parse(bad).is_err(), "{bad}");
        }
    }
}
