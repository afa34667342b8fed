//! An image tag → its digest, through the OCI distribution API (`crate::oci`,
//! with the bearer-token handshake Docker Hub and NGC use); an image index
//! (manifest list) is resolved to its linux/amd64 manifest.

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};

use super::request_error;
use crate::lock::{Attrs, PinError};
use crate::oci::{INDEX_TYPES, ImageRef, MANIFEST_TYPES, token};
use crate::tls::{Limit, answer_within, transport_error};

/// The most bytes of a manifest or an index read: registries refuse
/// manifests past 4 MiB (distribution's default), and a longer answer, or
/// one without end, is stopped here.
const MAX_MANIFEST: Limit = Limit {
    bytes: 4 << 20,
    of: "perfpipe reads of a manifest",
};

/// The most bytes of a repository's tag list read (its first page).
const MAX_TAGS: Limit = Limit {
    bytes: 1 << 20,
    of: "perfpipe reads of a tag list",
};

/// The first page of `image`'s repository's tags, when the registry lists
/// them (with the bearer token the manifest request got, if any).
async fn tags(
    client: &reqwest::Client,
    image: &ImageRef,
    bearer: Option<String>,
) -> Option<Vec<String>> {
    let mut request = client.get(image.tags_url());
    if let Some(token) = bearer {
        request = request.header(AUTHORIZATION, format!("Bearer {token}"));
    }
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = answer_within(response, MAX_TAGS, "", "the tag list")
        .await
        .ok()?;
    #[derive(serde::Deserialize)]
    struct TagList {
        tags: Option<Vec<String>>,
    }
    let list: TagList = serde_json::from_slice(&body).ok()?;
    Some(list.tags.unwrap_or_default())
}

/// Up to three of `tags` nearest `tag`, nearest first (a version's tags
/// share its prefix: `v0.9.7` is near `v0.99.7`).
fn nearest_tags<'a>(tag: &str, tags: &'a [String]) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = tags
        .iter()
        .map(|t| (strsim::jaro_winkler(tag, t), t.as_str()))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(3).map(|(_, t)| t).collect()
}

/// `{image: <registry>/<repo>@<digest>}`, plus `index=<digest>` when the tag
/// names an index and `image` is its linux/amd64 manifest.
pub async fn resolve(
    client: &reqwest::Client,
    image: &ImageRef,
    login: Option<&(String, String)>,
) -> Result<Attrs, PinError> {
    let url = image.manifest_url(&image.reference);
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
    let mut bearer = None;
    if response.status() == StatusCode::UNAUTHORIZED {
        let challenge = token::challenge(&response);
        let scope = token::scope(&image.repository, false);
        let token = token::bearer(client, &challenge, &image.registry, &scope, login).await?;
        bearer = Some(token.clone());
        response = get(client, url, Some(token))
            .await
            .map_err(|e| transport_error(what, e))?;
    }
    match response.status() {
        s if s.is_success() => {}
        StatusCode::NOT_FOUND => {
            // An engine's image tagged with a version it never released
            // (`v0.99.7`): the tags it has say what was meant.
            let nearest = match tags(client, image, bearer).await {
                Some(tags) => match nearest_tags(&image.reference, &tags)[..] {
                    [] => " (it lists no tag)".to_owned(),
                    ref some => format!(" (its tags nearest it: {})", some.join(", ")),
                },
                None => String::new(),
            };
            return Err(format!(
                "{} has no `{}:{}`{nearest}",
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
    let body = answer_within(response, MAX_MANIFEST, what, "the manifest it sent").await?;
    let digest = format!("sha256:{}", crate::digest::sha256_hex(&body));
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
    fn the_tags_nearest_a_version_never_released_are_its_neighbours() {
        let tags: Vec<String> = [
            "latest", "v0.9.2", "v0.10.0", "v0.11.0", "nightly", "v0.9.1",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            nearest_tags("v0.9.7", &tags),
            ["v0.9.1", "v0.9.2", "v0.10.0"]
        );
        assert_eq!(nearest_tags("v0.9.7", &[]), Vec::<&str>::new());
    }
}
