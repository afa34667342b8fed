//! What the stand-ins for the Hugging Face Hub of the `lock` tests (its
//! revision API) and the `fetch` tests (its listing and downloads) share:
//! the bearer token they take, what they were asked, their errors, and the
//! experiment that asks them.

use std::process::Command;
use std::sync::Mutex;

use axum::Json;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{TestEnv, random_hex};

/// The image digest the experiment pins its engine at, so that only the
/// model needs the Hub.
pub const IMAGE_DIGEST: &str = "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e";

/// What a stand-in Hub was asked: the path as sent, its query, and
/// `Authorization`.
#[derive(Debug, Clone, PartialEq)]
pub struct HubRequest {
    pub path: String,
    pub query: Option<String>,
    pub authorization: Option<String>,
}

/// The token a stand-in Hub takes as a bearer, and the requests it got.
pub struct HubLog {
    pub token: String,
    asked: Mutex<Vec<HubRequest>>,
}

impl HubLog {
    /// A log with a token of its own (`secret-hf-…`: a secret by its value).
    pub fn new() -> Self {
        Self {
            token: format!("secret-hf-{}", random_hex()),
            asked: Mutex::default(),
        }
    }

    /// Records a request; its `Authorization`.
    pub fn record(&self, uri: &Uri, headers: &HeaderMap) -> Option<String> {
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.asked.lock().unwrap().push(HubRequest {
            path: uri.path().to_owned(),
            query: uri.query().map(str::to_owned),
            authorization: authorization.clone(),
        });
        authorization
    }

    pub fn asked(&self) -> Vec<HubRequest> {
        self.asked.lock().unwrap().clone()
    }

    /// `Authorization` with the token.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }
}

/// An error as the Hub answers it: `{"error": message}`.
pub fn hub_error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

/// A one-step experiment of `model` (its `model …` line) under `runtime`,
/// its image pinned as declared ([`IMAGE_DIGEST`]).
pub fn hub_experiment(model: &str, runtime: &str) -> String {
    format!(
        r#"experiment "hub" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=2
    {model}
    runtime {runtime}
    engine vllm version="0.11.0" image="vllm/vllm-openai@sha256:{IMAGE_DIGEST}"
    harness builtin backend="openai-chat"

    workload short {{
        dataset random input=16 output=4
        prompts 8
    }}

    step vllm engine=vllm gpus=1
}}
"#
    )
}

/// `perfpipe ARGS` asking the Hub at `endpoint`.
pub fn hub_cmd(env: &TestEnv, endpoint: &str, args: &[&str]) -> Command {
    let mut cmd = env.cmd(args);
    cmd.env("HF_ENDPOINT", endpoint);
    cmd
}
