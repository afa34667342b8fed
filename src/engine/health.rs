//! Waiting for an engine to serve: `/health`, then `/v1/models` listing the
//! model it was started with.

use std::time::Duration;

use super::process::EngineProcess;
use crate::harness::client::MAX_MODEL_LIST;

#[derive(Debug)]
pub enum NotReady {
    /// The process exited first.
    Exited(std::process::ExitStatus),
    /// The timeout passed; what the last probe saw.
    TimedOut(Duration, Seen),
}

/// What the last probe of a starting engine saw.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// `/health` did not answer with a success.
    NoHealth,
    /// `/health` answered, `/v1/models` did not (or not as JSON).
    NoModels,
    /// `/v1/models` answered without the model: these are what it lists.
    Lists(Vec<String>),
}

impl Seen {
    /// What a starting engine is waiting for, after this probe.
    pub fn waiting_for(&self) -> &'static str {
        match self {
            Self::NoHealth => "waiting for /health",
            Self::NoModels => "waiting for /v1/models",
            Self::Lists(_) => "waiting for the model in /v1/models",
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Self::NoHealth => 0,
            Self::NoModels => 1,
            Self::Lists(_) => 2,
        }
    }
}

impl NotReady {
    /// Why the engine is not ready, for a run's error.
    pub fn timed_out_message(after: Duration, seen: &Seen, model: &str) -> String {
        let secs = after.as_secs();
        match seen {
            Seen::NoHealth => format!("engine did not answer /health within {secs}s"),
            Seen::NoModels => {
                format!("engine answered /health but not /v1/models within {secs}s")
            }
            Seen::Lists(ids) if ids.is_empty() => format!(
                "engine answered /health but /v1/models listed no model, not `{model}`, within {secs}s"
            ),
            Seen::Lists(ids) => format!(
                "engine answered /health but /v1/models listed {}, not `{model}`, within {secs}s (another server on the port, or another `--served-model-name`?)",
                ids.iter()
                    .take(5)
                    .map(|id| format!("`{id}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// How long one `/health` or `/v1/models` request may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How often a start is reported as still going: often enough for a live
/// display; a log shows fewer.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Polls until the engine answers with `model` listed, it exits, or `timeout`
/// passes; `still_starting` hears every second how long it has been and
/// what the last probe saw.
pub async fn wait_ready(
    client: &reqwest::Client,
    base_url: &str,
    model: &str,
    engine: &mut EngineProcess,
    timeout: Duration,
    still_starting: &mut dyn FnMut(Duration, &Seen),
) -> Result<(), NotReady> {
    let began = tokio::time::Instant::now();
    let deadline = crate::clock::deadline(began, timeout);
    let mut next_progress = began + PROGRESS_EVERY;
    // The most the engine showed: a last probe cut short by the deadline
    // must not hide that it had answered `/health`.
    let mut seen = Seen::NoHealth;
    loop {
        if let Some(status) = engine.try_exited() {
            return Err(NotReady::Exited(status));
        }
        // A server that accepts and never answers holds each probe until its
        // timeout: none may outlast the deadline.
        let probe =
            || PROBE_TIMEOUT.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
        let now_seen = if !answers(client, &format!("{base_url}/health"), probe()).await {
            Seen::NoHealth
        } else {
            match listed(client, base_url, probe()).await {
                Some(ids) if ids.iter().any(|id| id == model) => return Ok(()),
                Some(ids) => Seen::Lists(ids),
                None => Seen::NoModels,
            }
        };
        if now_seen.rank() >= seen.rank() {
            seen = now_seen;
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(NotReady::TimedOut(timeout, seen));
        }
        if now >= next_progress {
            still_starting(now - began, &seen);
            next_progress += PROGRESS_EVERY;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn answers(client: &reqwest::Client, url: &str, timeout: Duration) -> bool {
    client
        .get(url)
        .timeout(timeout)
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
}

/// The model ids `/v1/models` lists (another engine left on the port would
/// not list the model this one was started with).
async fn listed(
    client: &reqwest::Client,
    base_url: &str,
    timeout: Duration,
) -> Option<Vec<String>> {
    let response = client
        .get(format!("{base_url}/v1/models"))
        .timeout(timeout)
        .send()
        .await
        .ok()?;
    let body = crate::tls::body_at_most(response, MAX_MODEL_LIST.bytes)
        .await
        .ok()?;
    let body: serde_json::Value = serde_json::from_slice(&body).ok()?;
    let models = body["data"].as_array()?;
    Some(
        models
            .iter()
            .map(|m| match &m["id"] {
                serde_json::Value::String(id) => id.clone(),
                other => other.to_string(),
            })
            .collect(),
    )
}
