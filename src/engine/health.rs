//! Waiting for an engine to serve: `/health`, then `/v1/models`.

use std::time::Duration;

use super::process::EngineProcess;

#[derive(Debug)]
pub enum NotReady {
    /// The process exited first.
    Exited(std::process::ExitStatus),
    TimedOut(Duration),
}

/// Polls until the engine answers, it exits, or `timeout` passes.
pub async fn wait_ready(
    client: &reqwest::Client,
    base_url: &str,
    engine: &mut EngineProcess,
    timeout: Duration,
) -> Result<(), NotReady> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(status) = engine.try_exited() {
            return Err(NotReady::Exited(status));
        }
        if answers(client, &format!("{base_url}/health")).await
            && answers(client, &format!("{base_url}/v1/models")).await
        {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(NotReady::TimedOut(timeout));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn answers(client: &reqwest::Client, url: &str) -> bool {
    client
        .get(url)
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
}
