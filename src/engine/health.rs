//! Waiting for an engine to serve: `/health`, then `/v1/models` listing the
//! model it was started with.

use std::time::Duration;

use super::process::EngineProcess;

#[derive(Debug)]
pub enum NotReady {
    /// The process exited first.
    Exited(std::process::ExitStatus),
    TimedOut(Duration),
}

/// How long one `/health` or `/v1/models` request may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How often a long start is reported as still going.
const PROGRESS_EVERY: Duration = Duration::from_secs(15);

/// Polls until the engine answers with `model` listed, it exits, or `timeout`
/// passes; `still_starting` hears of a long start every 15 s.
pub async fn wait_ready(
    client: &reqwest::Client,
    base_url: &str,
    model: &str,
    engine: &mut EngineProcess,
    timeout: Duration,
    still_starting: &mut dyn FnMut(Duration),
) -> Result<(), NotReady> {
    let began = tokio::time::Instant::now();
    let deadline = crate::clock::deadline(began, timeout);
    let mut next_progress = began + PROGRESS_EVERY;
    loop {
        if let Some(status) = engine.try_exited() {
            return Err(NotReady::Exited(status));
        }
        // A server that accepts and never answers holds each probe until its
        // timeout: none may outlast the deadline.
        let probe =
            || PROBE_TIMEOUT.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
        if answers(client, &format!("{base_url}/health"), probe()).await
            && serves(client, base_url, model, probe()).await
        {
            return Ok(());
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(NotReady::TimedOut(timeout));
        }
        if now >= next_progress {
            still_starting(now - began);
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

/// `/v1/models` lists `model` (another engine left on the port would not).
async fn serves(client: &reqwest::Client, base_url: &str, model: &str, timeout: Duration) -> bool {
    let Ok(response) = client
        .get(format!("{base_url}/v1/models"))
        .timeout(timeout)
        .send()
        .await
    else {
        return false;
    };
    let Ok(body) = response.json::<serde_json::Value>().await else {
        return false;
    };
    body["data"]
        .as_array()
        .is_some_and(|models| models.iter().any(|m| m["id"] == model))
}
