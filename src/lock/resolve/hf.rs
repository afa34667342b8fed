//! A model's branch or tag → its commit, through the Hub's
//! `GET /api/models/{repo}/revision/{revision}` (as `huggingface_hub`'s
//! `model_info(repo, revision=…)` asks it).

use reqwest::StatusCode;
use reqwest::header::AUTHORIZATION;

use super::{MAX_HUB_ANSWER, request_error};
use crate::facts::is_commit;
use crate::lock::{Attrs, PinError};
use crate::tls::{BodyError, body_at_most};

pub async fn resolve(
    client: &reqwest::Client,
    endpoint: &str,
    token: Option<&str>,
    repo: &str,
    revision: &str,
) -> Result<Attrs, PinError> {
    let url = format!(
        "{endpoint}/api/models/{repo}/revision/{}",
        encode_segment(revision)
    );
    let mut request = client.get(&url);
    if let Some(token) = token {
        request = request.header(AUTHORIZATION, format!("Bearer {token}"));
    }
    let what = format!("cannot ask {endpoint} for `{repo}`");
    let response = request
        .send()
        .await
        .map_err(|e| request_error(&what, endpoint, e))?;
    match response.status() {
        s if s.is_success() => {}
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            return Err(format!(
                "{endpoint} refused `{repo}` ({}): the model is gated or private; set HF_TOKEN to a token with access",
                response.status()
            )
            .into());
        }
        StatusCode::NOT_FOUND => {
            return Err(format!(
                "{endpoint} has no model `{repo}`, or no revision `{revision}` of it"
            )
            .into());
        }
        s => return Err(format!("{endpoint} answered {s} for `{repo}`").into()),
    }
    let body = body_at_most(response, MAX_HUB_ANSWER.bytes)
        .await
        .map_err(|e| match e {
            BodyError::TooLong => {
                format!("{what}: {}", MAX_HUB_ANSWER.exceeded_by("its answer")).into()
            }
            BodyError::Transport(e) => request_error(&what, endpoint, e),
        })?;
    let info: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| format!("{what}: its answer is not JSON: {e}"))?;
    match info["sha"].as_str() {
        Some(sha) if is_commit(sha) => {
            Ok(Attrs::from([("revision".into(), sha.to_ascii_lowercase())]))
        }
        _ => Err(format!("{endpoint} answered for `{repo}` without a commit sha").into()),
    }
}

/// Percent-encodes a revision as one path segment (`refs/pr/1` → `refs%2Fpr%2F1`).
fn encode_segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn revisions_are_one_path_segment() {
        assert_eq!(super::encode_segment("refs/pr/1"), "refs%2Fpr%2F1");
        assert_eq!(super::encode_segment("v1.0"), "v1.0");
    }
}
