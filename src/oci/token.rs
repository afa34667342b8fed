//! The distribution API's token handshake (Docker Hub, NGC, GHCR, Harbor):
//! a 401 names a token endpoint in `WWW-Authenticate: Bearer realm=…`, which
//! gives a bearer token for a scope, with the user's login when there is one.
//! Used by `lock` (pull) and by the result cache (pull, push).

use reqwest::header::WWW_AUTHENTICATE;

use crate::tls::{Limit, answer_within, transport_error};

/// The most bytes of a token endpoint's answer read: a token and its expiry
/// take a few KiB; a longer answer, or one without end, is stopped here.
const MAX_TOKEN: Limit = Limit {
    bytes: 1 << 20,
    of: "perfpipe reads of a token",
};

/// The challenge of an answer (`WWW-Authenticate`), empty when it has none.
pub fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The scope a token is asked for: `repository:NAME:pull`, with `push` to write.
pub fn scope(repository: &str, push: bool) -> String {
    let access = if push { "pull,push" } else { "pull" };
    format!("repository:{repository}:{access}")
}

/// The bearer token a `WWW-Authenticate: Bearer realm=…,service=…` challenge
/// from `registry` asks for, for `scope` (`repository:NAME:pull[,push]`).
pub async fn bearer(
    client: &reqwest::Client,
    challenge: &str,
    registry: &str,
    scope: &str,
    login: Option<&(String, String)>,
) -> Result<String, String> {
    let params = challenge_params(challenge);
    let realm = params
        .iter()
        .find(|(k, _)| k == "realm")
        .map(|(_, v)| v.as_str())
        .ok_or_else(|| {
            format!("{registry} asks for authentication perfpipe does not speak: `{challenge}`")
        })?;
    let mut url = reqwest::Url::parse(realm)
        .map_err(|_| format!("{registry} named a token endpoint that is not a URL"))?;
    {
        let mut query = url.query_pairs_mut();
        if let Some((_, service)) = params.iter().find(|(k, _)| k == "service") {
            query.append_pair("service", service);
        }
        query.append_pair("scope", scope);
    }
    let mut request = client.get(url);
    if let Some((user, password)) = login {
        request = request.basic_auth(user, Some(password));
    }
    let what = format!("cannot get a token for `{scope}`");
    let response = request
        .send()
        .await
        .map_err(|e| transport_error(&what, e))?;
    if !response.status().is_success() {
        return Err(format!(
            "{what}: the token endpoint answered {}",
            response.status()
        ));
    }
    let body = answer_within(response, MAX_TOKEN, &what, "the token endpoint's answer").await?;
    let body: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| format!("{what}: the token endpoint's answer is not JSON: {e}"))?;
    body["token"]
        .as_str()
        .or(body["access_token"].as_str())
        .map(str::to_owned)
        .ok_or_else(|| format!("{what}: the answer holds no token"))
}

/// The token endpoint a challenge names (`realm`), if any: the cache decides
/// from it whether the user's login may be sent there.
pub fn realm(challenge: &str) -> Option<String> {
    challenge_params(challenge)
        .into_iter()
        .find(|(k, _)| k == "realm")
        .map(|(_, v)| v)
}

/// Whether a `WWW-Authenticate` header asks for the token handshake.
pub fn is_bearer(challenge: &str) -> bool {
    challenge.trim_start().starts_with("Bearer ")
}

/// `Bearer realm="…",service="…",scope="…"` → its parameters.
fn challenge_params(challenge: &str) -> Vec<(String, String)> {
    let Some(rest) = challenge.trim().strip_prefix("Bearer ") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut rest = rest.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let (value, next) = match after.strip_prefix('"') {
            Some(quoted) => match quoted.split_once('"') {
                Some((v, next)) => (v, next),
                None => (quoted, ""),
            },
            None => after.split_once(',').unwrap_or((after, "")),
        };
        out.push((key, value.to_owned()));
        rest = next.trim().trim_start_matches(',').trim();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_split_into_their_parameters() {
        let params = challenge_params(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:vllm/vllm-openai:pull""#,
        );
        assert_eq!(
            params,
            [
                (
                    "realm".to_owned(),
                    "https://auth.docker.io/token".to_owned()
                ),
                ("service".into(), "registry.docker.io".into()),
                ("scope".into(), "repository:vllm/vllm-openai:pull".into()),
            ]
        );
        assert!(challenge_params("Basic realm=\"x\"").is_empty());
    }
}
