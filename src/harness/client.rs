//! One streamed request, timed as `vllm bench serve` v0.11 times it.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::dataset::BenchRequest;
use crate::metrics::RequestRecord;
use crate::spec::Backend;

/// What every request of a benchmark shares.
#[derive(Debug, Clone)]
pub struct RequestSettings {
    pub url: String,
    pub backend: Backend,
    pub model: String,
    pub temperature: f64,
    pub ignore_eos: bool,
}

pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        // A long prefill queue can keep a stream silent for many minutes.
        .read_timeout(Duration::from_secs(3600))
        .build()
        .expect("a plain HTTP client builds")
}

/// Sends `req` and records TTFT (first chunk with `choices`), the gaps between
/// chunks, the latency (to the last chunk, usage included) and the server's
/// `completion_tokens`. `t0` is the benchmark's start.
pub async fn send(
    client: &reqwest::Client,
    settings: &RequestSettings,
    req: &BenchRequest,
    t0: Instant,
) -> RequestRecord {
    let body = match settings.backend {
        Backend::OpenaiChat => json!({
            "model": settings.model,
            "messages": [{"role": "user", "content": req.prompt}],
            "max_completion_tokens": req.output_len,
            "temperature": settings.temperature,
            "stream": true,
            "stream_options": {"include_usage": true},
            "ignore_eos": settings.ignore_eos,
        }),
        Backend::Openai => json!({
            "model": settings.model,
            "prompt": req.prompt,
            "max_tokens": req.output_len,
            "temperature": settings.temperature,
            "stream": true,
            "stream_options": {"include_usage": true},
            "ignore_eos": settings.ignore_eos,
        }),
    };
    let start = Instant::now();
    let mut record = RequestRecord {
        prompt_len: req.prompt_len,
        requested_output_tokens: u64::from(req.output_len),
        start: (start - t0).as_secs_f64(),
        ..Default::default()
    };
    let response = match client.post(&settings.url).json(&body).send().await {
        Ok(r) => r,
        Err(e) => return failed(record, format!("request failed: {e}")),
    };
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        return failed(record, format!("HTTP {status}: {}", text.trim()));
    }
    let mut events = response.bytes_stream().eventsource();
    let mut last = start;
    let mut first = true;
    let mut done = false;
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => return failed(record, format!("stream broke: {e}")),
        };
        let now = Instant::now();
        if event.data.trim() == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = match serde_json::from_str(&event.data) {
            Ok(v) => v,
            Err(e) => return failed(record, format!("malformed chunk `{}`: {e}", event.data)),
        };
        if chunk
            .get("choices")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty())
        {
            if first {
                record.ttft = (now - start).as_secs_f64();
                first = false;
            } else {
                record.itl.push((now - last).as_secs_f64());
            }
        } else if let Some(tokens) = chunk
            .pointer("/usage/completion_tokens")
            .and_then(Value::as_u64)
        {
            record.output_tokens = tokens;
        }
        last = now;
    }
    if !done {
        return failed(record, "stream ended without `[DONE]`".into());
    }
    if first {
        return failed(record, "stream carried no token".into());
    }
    record.latency = (last - start).as_secs_f64();
    record.success = true;
    record
}

fn failed(mut record: RequestRecord, error: String) -> RequestRecord {
    record.success = false;
    record.error = Some(error);
    record
}
