//! The simulated engine's OpenAI-compatible HTTP server: `/health`,
//! `/v1/models`, and streaming `/v1/completions` and `/v1/chat/completions`
//! with one SSE chunk per token and a final usage chunk.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
use crate::tokenizer;

pub struct AppState {
    pub model: String,
    pub max_model_len: u32,
    pub scheduler: mpsc::UnboundedSender<Submission>,
    pub next_id: AtomicU64,
    pub created: u64,
}

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/health", get(|| async { StatusCode::OK }))
        .route("/v1/models", get(models))
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat_completions))
        .with_state(state)
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
    content: String,
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
    let prompt: Vec<&str> = req.messages.iter().map(|m| m.content.as_str()).collect();
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
    let prompt_tokens = tokenizer::count(prompt) as u32;
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
    let (tx, rx) = mpsc::unbounded_channel();
    let submission = Submission {
        prompt_tokens,
        max_tokens,
        events: tx,
    };
    if state.scheduler.send(submission).is_err() {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            "engine is shutting down".into(),
        );
    }
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let chunks = Chunks {
        api,
        id: match api {
            Api::Completions => format!("cmpl-{id}"),
            Api::Chat => format!("chatcmpl-{id}"),
        },
        model,
        created: state.created,
        max_tokens,
    };
    if stream {
        let body = futures_util::stream::unfold(
            (rx, chunks, 0u32, false),
            move |(mut rx, c, n, done)| async move {
                if done {
                    return None;
                }
                let text = match rx.recv().await {
                    Some(Event::Token) => c.token(n + 1),
                    Some(Event::Done {
                        prompt_tokens,
                        completion_tokens,
                    }) => {
                        let mut out = String::new();
                        if include_usage {
                            out.push_str(&c.usage(prompt_tokens, completion_tokens));
                        }
                        out.push_str("data: [DONE]\n\n");
                        return Some((Ok::<_, Infallible>(Bytes::from(out)), (rx, c, n, true)));
                    }
                    None => return None,
                };
                Some((Ok(Bytes::from(text)), (rx, c, n + 1, false)))
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

/// Renders a request's SSE chunks in the API's shape.
struct Chunks {
    api: Api,
    id: String,
    model: String,
    created: u64,
    max_tokens: u32,
}

const WORDS: &[&str] = &[
    " the", " engine", " serves", " tokens", " quickly", " and", " well", ".",
];

fn word(n: u32) -> &'static str {
    WORDS[n as usize % WORDS.len()]
}

impl Chunks {
    fn token(&self, n: u32) -> String {
        let finish = if n == self.max_tokens {
            json!("length")
        } else {
            Value::Null
        };
        let choice = match self.api {
            Api::Completions => {
                json!({"index": 0, "text": word(n), "logprobs": null, "finish_reason": finish})
            }
            Api::Chat => {
                json!({"index": 0, "delta": {"content": word(n)}, "logprobs": null, "finish_reason": finish})
            }
        };
        self.event(json!([choice]), None)
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
