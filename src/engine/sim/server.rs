//! The simulated engine's OpenAI-compatible HTTP server: `/health`,
//! `/v1/models`, and streaming `/v1/completions` and `/v1/chat/completions`
//! with one SSE chunk per token and a final usage chunk.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::scheduler::{Event, Submission};
use crate::tokenizer::Tokenizer;

pub struct AppState {
    pub engine: crate::facts::EngineKind,
    pub stats: Arc<super::scheduler::Stats>,
    /// Tokens the simulated KV cache holds.
    pub kv_capacity: u64,
    pub model: String,
    /// Counts prompt tokens as the engine would (the model's tokenizer if this machine has it).
    pub tokenizer: Tokenizer,
    pub max_model_len: u32,
    pub tokens: TokenSource,
    pub next_id: AtomicU64,
    pub created: u64,
}

/// Where a request's tokens come from.
pub enum TokenSource {
    /// The batching scheduler and its speed model.
    Scheduler(mpsc::UnboundedSender<Submission>),
    /// Every request on its own: first token after `ttft`, then one every
    /// `itl` (as fast as possible when zero). A test server for the load generator.
    Fixed {
        ttft: Duration,
        itl: Duration,
        /// Stamp each write with `: t=<monotonic ns> recv=<ns>` (an SSE comment).
        probe: bool,
        /// Write every event on its own instead of all that are ready at once.
        one_per_write: bool,
    },
    /// Every request on its own, its latencies a function of the requests in
    /// flight when it arrived ([`super::timing`]).
    Load {
        timing: super::timing::LoadTiming,
        in_flight: Arc<AtomicU64>,
    },
}

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/health", get(|| async { StatusCode::OK }))
        .route("/v1/models", get(models))
        .route("/metrics", get(prometheus))
        // vLLM's (with VLLM_SERVER_DEV_MODE=1) and SGLang's ways to empty the prefix cache;
        // the simulation has none to empty.
        .route("/reset_prefix_cache", post(|| async { StatusCode::OK }))
        .route("/flush_cache", post(|| async { StatusCode::OK }))
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat_completions))
        .with_state(state)
}

/// A request counted in flight until it is dropped: when its last token is
/// out (before the final event, so the client's next request never finds it
/// still counted) or its client left.
struct InFlight(Arc<AtomicU64>, Arc<super::scheduler::Stats>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let left = self.0.fetch_sub(1, Ordering::SeqCst) - 1;
        self.1.running.store(left, Ordering::Relaxed);
    }
}

/// Emits a request's tokens on a fixed schedule: `ttft`, then every `itl`.
async fn fixed_timing(
    tx: mpsc::UnboundedSender<Event>,
    ttft: Duration,
    itl: Duration,
    prompt_tokens: u32,
    max_tokens: u32,
    in_flight: Option<InFlight>,
) {
    let start = tokio::time::Instant::now();
    for n in 0..max_tokens {
        if !itl.is_zero() || n == 0 {
            tokio::time::sleep_until(start + ttft + itl * n).await;
        } else if n % 64 == 0 {
            tokio::task::yield_now().await;
        }
        if tx.send(Event::Token).is_err() {
            return;
        }
    }
    drop(in_flight);
    let _ = tx.send(Event::Done {
        prompt_tokens,
        completion_tokens: max_tokens,
    });
}

/// The engine's gauges in Prometheus text, under the real engine's names.
async fn prometheus(State(state): State<Arc<AppState>>) -> Response {
    use std::fmt::Write as _;
    use std::sync::atomic::Ordering::Relaxed;
    let (running, waiting) = (
        state.stats.running.load(Relaxed),
        state.stats.waiting.load(Relaxed),
    );
    let usage = state.stats.kv_tokens.load(Relaxed) as f64 / state.kv_capacity.max(1) as f64;
    let model = &state.model;
    let mut text = String::new();
    match state.engine {
        crate::facts::EngineKind::Sglang => {
            let _ = writeln!(
                text,
                "sglang:num_running_reqs{{model_name=\"{model}\"}} {running}"
            );
            let _ = writeln!(
                text,
                "sglang:num_queue_reqs{{model_name=\"{model}\"}} {waiting}"
            );
            let _ = writeln!(text, "sglang:token_usage{{model_name=\"{model}\"}} {usage}");
        }
        _ => {
            let _ = writeln!(text, "# TYPE vllm:num_requests_running gauge");
            let _ = writeln!(
                text,
                "vllm:num_requests_running{{model_name=\"{model}\"}} {running}"
            );
            let _ = writeln!(
                text,
                "vllm:num_requests_waiting{{model_name=\"{model}\"}} {waiting}"
            );
            let _ = writeln!(
                text,
                "vllm:gpu_cache_usage_perc{{model_name=\"{model}\"}} {usage}"
            );
            let _ = writeln!(
                text,
                "vllm:num_preemptions_total{{model_name=\"{model}\"}} 0"
            );
        }
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn models(State(state): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{
            "id": state.model,
            "object": "model",
            "created": state.created,
            "owned_by": "perfpipe-sim",
            "max_model_len": state.max_model_len,
        }]
    }))
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Deserialize)]
struct CompletionRequest {
    model: String,
    prompt: String,
    max_tokens: Option<u32>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<StreamOptions>,
}

#[derive(Deserialize)]
struct ChatMessage {
    content: ChatContent,
}

/// A message's text, or its parts (vLLM's client sends `[{"type": "text",
/// "text": ...}]`); parts other than text carry none.
#[derive(Deserialize)]
#[serde(untagged)]
enum ChatContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Deserialize)]
struct ContentPart {
    #[serde(default)]
    text: String,
}

impl ChatContent {
    fn text(&self) -> String {
        match self {
            ChatContent::Text(text) => text.clone(),
            ChatContent::Parts(parts) => parts.iter().map(|p| p.text.as_str()).collect(),
        }
    }
}

#[derive(Deserialize)]
struct ChatRequest {
    model: String,
    messages: Vec<ChatMessage>,
    max_tokens: Option<u32>,
    max_completion_tokens: Option<u32>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<StreamOptions>,
}

#[derive(Clone, Copy, PartialEq)]
enum Api {
    Completions,
    Chat,
}

async fn completions(
    State(state): State<Arc<AppState>>,
    Json(req): Json<CompletionRequest>,
) -> Response {
    let usage = req.stream_options.is_some_and(|o| o.include_usage);
    generate(
        state,
        Api::Completions,
        req.model,
        &req.prompt,
        req.max_tokens,
        req.stream,
        usage,
    )
    .await
}

async fn chat_completions(
    State(state): State<Arc<AppState>>,
    Json(req): Json<ChatRequest>,
) -> Response {
    let prompt: Vec<String> = req.messages.iter().map(|m| m.content.text()).collect();
    let usage = req.stream_options.is_some_and(|o| o.include_usage);
    let max_tokens = req.max_completion_tokens.or(req.max_tokens);
    generate(
        state,
        Api::Chat,
        req.model,
        &prompt.join("\n"),
        max_tokens,
        req.stream,
        usage,
    )
    .await
}

fn error(status: StatusCode, kind: &str, message: String) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "code": status.as_u16()}});
    (status, Json(body)).into_response()
}

async fn generate(
    state: Arc<AppState>,
    api: Api,
    model: String,
    prompt: &str,
    max_tokens: Option<u32>,
    stream: bool,
    include_usage: bool,
) -> Response {
    if model != state.model {
        return error(
            StatusCode::NOT_FOUND,
            "NotFoundError",
            format!("The model `{model}` does not exist."),
        );
    }
    let prompt_tokens = state.tokenizer.count(prompt) as u32;
    let max_tokens = max_tokens.unwrap_or(16);
    if prompt_tokens + max_tokens > state.max_model_len {
        return error(
            StatusCode::BAD_REQUEST,
            "BadRequestError",
            format!(
                "This model's maximum context length is {} tokens. However, you requested {} tokens ({prompt_tokens} in the messages, {max_tokens} in the completion).",
                state.max_model_len,
                prompt_tokens + max_tokens
            ),
        );
    }
    let received_ns = crate::clock::monotonic_ns();
    let (tx, rx) = mpsc::unbounded_channel();
    let probe = matches!(state.tokens, TokenSource::Fixed { probe: true, .. });
    let write_limit = match state.tokens {
        TokenSource::Fixed {
            one_per_write: true,
            ..
        } => 1,
        _ => 64 * 1024,
    };
    match &state.tokens {
        TokenSource::Scheduler(scheduler) => {
            let submission = Submission {
                prompt_tokens,
                max_tokens,
                events: tx,
            };
            if scheduler.send(submission).is_err() {
                return error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailable",
                    "engine is shutting down".into(),
                );
            }
        }
        TokenSource::Fixed { ttft, itl, .. } => {
            tokio::spawn(fixed_timing(
                tx,
                *ttft,
                *itl,
                prompt_tokens,
                max_tokens,
                None,
            ));
        }
        TokenSource::Load { timing, in_flight } => {
            let k = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            state.stats.running.store(k, Ordering::Relaxed);
            let (ttft, itl) = timing.at(k);
            let leaving = InFlight(in_flight.clone(), state.stats.clone());
            tokio::spawn(fixed_timing(
                tx,
                ttft,
                itl,
                prompt_tokens,
                max_tokens,
                Some(leaving),
            ));
        }
    }
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let chunks = Chunks::new(api, id, &model, state.created, max_tokens);
    if stream {
        let body = futures_util::stream::unfold(
            (rx, chunks, 0u32, false),
            move |(mut rx, c, mut n, done)| async move {
                if done {
                    return None;
                }
                // Everything already produced goes out in one write, as a busy server's does.
                let mut out = String::new();
                let mut next = rx.recv().await;
                if probe {
                    let _ = writeln!(
                        out,
                        ": t={} recv={received_ns}",
                        crate::clock::monotonic_ns()
                    );
                }
                loop {
                    match next {
                        Some(Event::Token) => {
                            n += 1;
                            c.push_token(&mut out, n);
                        }
                        Some(Event::Done {
                            prompt_tokens,
                            completion_tokens,
                        }) => {
                            if include_usage {
                                out.push_str(&c.usage(prompt_tokens, completion_tokens));
                            }
                            out.push_str("data: [DONE]\n\n");
                            return Some((Ok::<_, Infallible>(Bytes::from(out)), (rx, c, n, true)));
                        }
                        None if out.is_empty() => return None,
                        None => break,
                    }
                    if out.len() >= write_limit {
                        break;
                    }
                    match rx.try_recv() {
                        Ok(event) => next = Some(event),
                        Err(_) => break,
                    }
                }
                Some((Ok(Bytes::from(out)), (rx, c, n, false)))
            },
        );
        Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(Body::from_stream(body))
            .expect("static headers are valid")
    } else {
        let mut rx = rx;
        let mut text = String::new();
        let mut n = 0;
        loop {
            match rx.recv().await {
                Some(Event::Token) => {
                    n += 1;
                    text.push_str(word(n));
                }
                Some(Event::Done {
                    prompt_tokens,
                    completion_tokens,
                }) => {
                    return Json(chunks.whole(&text, prompt_tokens, completion_tokens))
                        .into_response();
                }
                None => {
                    return error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "InternalServerError",
                        "generation aborted".into(),
                    );
                }
            }
        }
    }
}

/// Renders a request's SSE chunks in the API's shape; a token chunk is a
/// precomputed prefix, the word, and a suffix, so emitting one is cheap.
struct Chunks {
    api: Api,
    id: String,
    model: String,
    created: u64,
    max_tokens: u32,
    prefix: String,
}

const WORDS: &[&str] = &[
    " the", " engine", " serves", " tokens", " quickly", " and", " well", ".",
];

fn word(n: u32) -> &'static str {
    WORDS[n as usize % WORDS.len()]
}

impl Chunks {
    fn new(api: Api, id: u64, model: &str, created: u64, max_tokens: u32) -> Self {
        let (id, object, field) = match api {
            Api::Completions => (format!("cmpl-{id}"), "text_completion", r#""text":"#),
            Api::Chat => (
                format!("chatcmpl-{id}"),
                "chat.completion.chunk",
                r#""delta":{"content":"#,
            ),
        };
        let prefix = format!(
            r#"data: {{"id":"{id}","object":"{object}","created":{created},"model":{},"choices":[{{"index":0,{field}"#,
            Value::String(model.to_owned())
        );
        Self {
            api,
            id,
            model: model.to_owned(),
            created,
            max_tokens,
            prefix,
        }
    }

    fn push_token(&self, out: &mut String, n: u32) {
        out.push_str(&self.prefix);
        out.push('"');
        out.push_str(word(n));
        out.push('"');
        if self.api == Api::Chat {
            out.push('}');
        }
        out.push_str(if n == self.max_tokens {
            r#","logprobs":null,"finish_reason":"length"}]}"#
        } else {
            r#","logprobs":null,"finish_reason":null}]}"#
        });
        out.push_str("\n\n");
    }

    fn usage(&self, prompt: u32, completion: u32) -> String {
        self.event(json!([]), Some(usage(prompt, completion)))
    }

    fn event(&self, choices: Value, usage: Option<Value>) -> String {
        let object = match self.api {
            Api::Completions => "text_completion",
            Api::Chat => "chat.completion.chunk",
        };
        let mut chunk = json!({"id": self.id, "object": object, "created": self.created, "model": self.model, "choices": choices});
        if let Some(u) = usage {
            chunk["usage"] = u;
        }
        format!("data: {chunk}\n\n")
    }

    fn whole(&self, text: &str, prompt: u32, completion: u32) -> Value {
        let choice = match self.api {
            Api::Completions => json!({"index": 0, "text": text, "finish_reason": "length"}),
            Api::Chat => {
                json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"})
            }
        };
        let object = match self.api {
            Api::Completions => "text_completion",
            Api::Chat => "chat.completion",
        };
        json!({"id": self.id, "object": object, "created": self.created, "model": self.model,
               "choices": [choice], "usage": usage(prompt, completion)})
    }
}

fn usage(prompt: u32, completion: u32) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}
