//! One streamed request, timed as `vllm bench serve` v0.11 times it, with
//! the body vLLM 0.32's client sends (`endpoint_request_func.py`).

use futures_util::StreamExt;
use http_body_util::BodyDataStream;
use hyper::StatusCode;
use hyper::header::{HeaderMap, LOCATION};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::bounds;
use super::chunk::{self, Chunk};
use super::http::{Response, StreamClient};
use super::liveness::Liveness;
use super::sse::SseParser;
use crate::dataset::BenchRequest;
use crate::metrics::OutputTokensSource;
use crate::metrics::RequestRecord;
use crate::spec::Backend;
use crate::tokenizer::Tokenizer;

/// What every request of a benchmark shares.
#[derive(Debug, Clone)]
pub struct RequestSettings {
    /// Where requests go, round-robin: one URL per engine instance.
    pub urls: Vec<String>,
    pub backend: Backend,
    pub model: String,
    /// None: no `temperature` in the body, the server's default (vLLM 0.32
    /// sends one only when `--temperature` is given).
    pub temperature: Option<f64>,
    pub ignore_eos: bool,
    /// Counts a response's streamed text when the server sends no usage.
    pub tokenizer: std::sync::Arc<Tokenizer>,
    /// Fields set on every request's body last, as vLLM's `extra_body`
    /// (its sampling parameters `top_p`, `top_k`, `min_p`).
    pub extra_body: serde_json::Map<String, Value>,
    /// Request `i` carries the header `x-request-id: {prefix}{i}`, as
    /// vLLM's `--request-id-prefix` names requests.
    pub request_id_prefix: Option<String>,
    /// `logprobs` of a completions body (vLLM's `--logprobs`; none: `null`).
    pub logprobs: Option<i64>,
    /// Headers every request carries (vLLM's `--header`), under its
    /// `x-request-id`.
    pub headers: std::sync::Arc<HeaderMap>,
}

/// How a benchmark's clients speak TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// Plain HTTP: no root certificates are loaded (engines perfpipe starts
    /// answer plain HTTP on loopback).
    Plain,
    /// `https`, certificates verified against the system's roots.
    Verified,
    /// `https`, any certificate accepted (`bench --insecure`).
    Unverified,
}

impl Tls {
    pub fn of(https: bool, insecure: bool) -> Self {
        match (https, insecure) {
            (false, _) => Self::Plain,
            (true, false) => Self::Verified,
            (true, true) => Self::Unverified,
        }
    }
}

/// The client of a benchmark's other requests (models, health, metrics).
/// It follows no redirect: a server that sends the requests elsewhere is
/// not the one measured ([`redirected`]).
pub fn http_client(tls: Tls) -> reqwest::Client {
    crate::tls::ensure_provider();
    let builder = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        .redirect(reqwest::redirect::Policy::none());
    let builder = match tls {
        Tls::Plain => builder.tls_certs_only([]),
        Tls::Verified => builder,
        Tls::Unverified => builder.tls_danger_accept_invalid_certs(true),
    };
    builder.build().expect("a plain HTTP client builds")
}

/// The most bytes read of a server's `/v1/models` (by `bench` and by an
/// engine's readiness check): a list of models, a few hundred bytes each,
/// and of a gateway's thousands; a longer answer, or one without end, is
/// stopped here.
pub const MAX_MODEL_LIST: crate::tls::Limit = crate::tls::Limit {
    bytes: 4 << 20,
    of: "perfpipe reads of a model list",
};

/// What a redirect answer says, naming where it points: perfpipe measures
/// the server it was given, never another one behind a redirect.
pub fn redirected(status: StatusCode, headers: &HeaderMap) -> Option<String> {
    status.is_redirection().then(|| {
        let location = headers
            .get(LOCATION)
            .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned());
        match location {
            Some(to) => format!("HTTP {status}: redirected to `{to}`, which is not followed"),
            None => format!("HTTP {status}: a redirect, which is not followed"),
        }
    })
}

/// Sends `req` and records TTFT (first chunk with `choices`), the gaps between
/// chunks, the latency (to the last chunk, usage included) and the server's
/// `completion_tokens`. `t0` is the benchmark's start. Chunks that arrive in
/// one network read share its timestamp. A request fails when it stalls: when
/// neither it nor any other request to its engine instance has received an
/// event for the stall timeout (see `liveness`), or when an event it has
/// begun to receive does not end within it. It is cut off, and fails, when
/// its response exceeds a bound (see `bounds`).
pub async fn send(
    client: &StreamClient,
    settings: &RequestSettings,
    req: &Prepared,
    t0: Instant,
    liveness: &Liveness,
) -> RequestRecord {
    let start = Instant::now();
    let start_ns = crate::clock::monotonic_ns();
    let stall = liveness.stall();
    let mut record = RequestRecord {
        instance: req.target as u32,
        prompt_len: req.prompt_len,
        requested_output_tokens: u64::from(req.output_len),
        start: (start - t0).as_secs_f64(),
        ..Default::default()
    };
    let sent = client.post(
        &settings.urls[req.target],
        req.body.clone(),
        &settings.headers,
        req.request_id.as_deref(),
    );
    let (response, lease) = match liveness.within(req.target, start, sent).await {
        Some(Ok(sent)) => sent,
        Some(Err(e)) => return failed(record, format!("request failed: {}", chain(&e))),
        None => {
            return failed(
                record,
                format!(
                    "no response while the server sent nothing for {}s",
                    stall.as_secs()
                ),
            );
        }
    };
    let status = response.status();
    if let Some(error) = redirected(status, response.headers()) {
        return failed(record, error);
    }
    if !status.is_success() {
        let error = error_response(response, req.target, liveness).await;
        return failed(record, error);
    }
    let max_events = bounds::max_events(u64::from(req.output_len));
    let mut body = BodyDataStream::new(response.into_body());
    let mut parser = SseParser::default();
    let mut chunks = chunk::Reader::default();
    let mut alive = Instant::now();
    let mut received = 0_u64;
    let mut since_event = 0_u64;
    let mut events = 0_u64;
    // When the event being read began: it must end within the stall timeout,
    // whatever the other requests hear (a trickle of bytes is no sign of life).
    let mut unfinished_since: Option<Instant> = None;
    let mut last = start;
    let mut first = true;
    // What vLLM's client counts when the server sends no usage.
    let mut text = String::new();
    let mut outcome: Option<Result<(), String>> = None;
    // One timer for the whole stream, armed at the earliest moment it could
    // stall and armed again when that comes: a timer per read (put in
    // tokio's timer wheel, then taken out) was a twentieth of the client's
    // time against a server sending each event as a chunk of its own.
    // Deadlines only move later, except that an event begun must end within
    // the stall timeout, which is never earlier than the deadline armed
    // before it began.
    let deadline = |alive: Instant, unfinished_since: Option<Instant>| {
        let heard = liveness.deadline(req.target, alive);
        unfinished_since.map_or(heard, |since| {
            heard.min(crate::clock::deadline(since, stall))
        })
    };
    let mut stall_timer = std::pin::pin!(tokio::time::sleep_until(deadline(alive, None)));
    while outcome.is_none() {
        let read = tokio::select! {
            biased;
            read = body.next() => Some(read),
            () = &mut stall_timer => {
                let at = deadline(alive, unfinished_since);
                if at > Instant::now() {
                    stall_timer.as_mut().reset(at);
                    continue;
                }
                None
            }
        };
        let read = match read {
            Some(Some(Ok(bytes))) => bytes,
            Some(Some(Err(e))) => return failed(record, format!("stream broke: {}", chain(&e))),
            Some(None) => break,
            None => return failed(record, stalled(&parser, since_event, stall)),
        };
        received += read.len() as u64;
        if received > bounds::MAX_RESPONSE_BYTES {
            return failed(
                record,
                format!(
                    "response cut off: more than {} bytes",
                    bounds::MAX_RESPONSE_BYTES
                ),
            );
        }
        let now = Instant::now();
        let events_before = events;
        let fed = parser.feed(&read, |data| {
            events += 1;
            if outcome.is_some() {
                return;
            }
            if events > max_events {
                outcome = Some(Err(format!(
                    "response cut off: more than {max_events} events for {} tokens asked",
                    req.output_len
                )));
                return;
            }
            let (read, token_text) = chunks.read(data);
            match read {
                Some(Chunk::Done) => outcome = Some(Ok(())),
                Some(Chunk::Choices { completion_tokens }) => {
                    if completion_tokens.is_some() {
                        record.prompt_len = chunk::prompt_tokens(data).unwrap_or(record.prompt_len);
                    }
                    if first {
                        record.ttft = (now - start).as_secs_f64();
                        first = false;
                    } else {
                        record.itl.push(now - last);
                    }
                    record.output_tokens = completion_tokens.unwrap_or(record.output_tokens);
                    text.extend(token_text);
                    last = now;
                }
                Some(Chunk::Usage { completion_tokens }) => {
                    record.output_tokens = completion_tokens.unwrap_or(record.output_tokens);
                    // vLLM 0.32 counts a prompt as the server does when it says.
                    record.prompt_len = chunk::prompt_tokens(data).unwrap_or(record.prompt_len);
                    last = now;
                }
                Some(Chunk::Error) => {
                    outcome = Some(Err(format!(
                        "server error in stream: {}",
                        bounds::quote(chunk::error_message(data).as_bytes())
                    )))
                }
                None => {
                    outcome = Some(Err(format!("malformed chunk `{}`", bounds::quote(data))));
                }
            }
        });
        if let Err(too_large) = fed
            && outcome.is_none()
        {
            return failed(
                record,
                format!(
                    "response cut off: an event of more than {} bytes",
                    too_large.limit
                ),
            );
        }
        // Only events are signs of life: comments (keep-alives) and bytes of
        // an event that never ends are not.
        let heard = events > events_before;
        if heard {
            alive = now;
            since_event = 0;
            liveness.heard_at(req.target, now);
        } else {
            since_event += read.len() as u64;
        }
        unfinished_since = match (parser.is_truncated(), heard) {
            (false, _) => None,
            (true, true) => Some(now),
            (true, false) => unfinished_since.or(Some(now)),
        };
        if let Some(probe) = parser.take_probe() {
            // Only against perfpipe's stamping server: the clock of its stamps.
            let now_ns =
                crate::clock::monotonic_ns().saturating_sub(now.elapsed().as_nanos() as u64);
            record
                .client_delays
                .push(now_ns.saturating_sub(probe.written_ns) as f64 / 1e9);
            record
                .server_received
                .get_or_insert(probe.received_ns.saturating_sub(start_ns) as f64 / 1e9);
        }
    }
    match outcome {
        Some(Ok(())) if first => failed(record, "stream carried no token".into()),
        Some(Ok(())) => {
            record.latency = (last - start).as_secs_f64();
            if drain(body, received, stall).await {
                lease.release().await;
            }
            record.success = true;
            // `vllm bench serve` counts the text when usage is absent or 0.
            if record.output_tokens == 0 {
                record.output_tokens = settings.tokenizer.count_generated(&text) as u64;
                record.output_tokens_source = OutputTokensSource::Tokenizer;
            }
            record
        }
        Some(Err(reason)) => failed(record, reason),
        None if parser.is_truncated() => failed(record, "stream ended inside an event".into()),
        None => failed(record, "stream ended without `[DONE]`".into()),
    }
}

/// Reads what follows `[DONE]` up to the end of the body (the chunked
/// encoding's last chunk often comes in a write of its own): a body dropped
/// before its end closes its connection, and the next request would pay a
/// TCP connect inside its TTFT while the server holds more connections than
/// streams. Bounded by the response bound and the stall timeout; the
/// measurement is already taken. Whether the body ended.
async fn drain<E>(
    mut body: impl futures_util::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    mut received: u64,
    stall: std::time::Duration,
) -> bool {
    let rest = async {
        while let Some(read) = body.next().await {
            let Ok(bytes) = read else { return false };
            received += bytes.len() as u64;
            if received > bounds::MAX_RESPONSE_BYTES {
                return false;
            }
        }
        true
    };
    tokio::time::timeout(stall, rest).await.unwrap_or(false)
}

/// Why a stream stalled, by what the server last sent.
fn stalled(parser: &SseParser, since_event: u64, stall: std::time::Duration) -> String {
    let stall = stall.as_secs();
    match parser.pending_bytes() {
        0 if since_event == 0 => format!("stream stalled: the server sent nothing for {stall}s"),
        0 => format!(
            "stream stalled: the server sent no event for {stall}s, only {since_event} bytes of comments or blank lines"
        ),
        pending => format!(
            "stream stalled: an event did not end within {stall}s ({pending} bytes of it received)"
        ),
    }
}

/// The error of a response that is not a success: its status and the
/// start of its body, read up to a bound and while the server sends it.
async fn error_response(response: Response, target: usize, liveness: &Liveness) -> String {
    let status = response.status();
    let mut body = BodyDataStream::new(response.into_body());
    let mut text = Vec::new();
    let mut alive = Instant::now();
    let mut whole = true;
    loop {
        match liveness.within(target, alive, body.next()).await {
            Some(Some(Ok(bytes))) => {
                alive = Instant::now();
                let room = bounds::MAX_ERROR_BODY_BYTES - text.len();
                text.extend_from_slice(&bytes[..bytes.len().min(room)]);
                if bytes.len() > room {
                    whole = false;
                    break;
                }
            }
            Some(Some(Err(_)) | None) => break,
            // The body of an error may never come either.
            None if text.is_empty() => {
                return format!(
                    "HTTP {status}, and no body while the server sent nothing for {}s",
                    liveness.stall().as_secs()
                );
            }
            None => {
                whole = false;
                break;
            }
        }
    }
    match text.trim_ascii() {
        [] => format!("HTTP {status}"),
        trimmed if whole => format!("HTTP {status}: {}", bounds::quote(trimmed)),
        _ => format!("HTTP {status}: {}", bounds::quote_partial(&text)),
    }
}

/// A request ready to send: its body is encoded before the clock starts, so
/// encoding 512 prompts does not show up as their TTFT.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub body: bytes::Bytes,
    pub prompt_len: u64,
    pub output_len: u32,
    /// Which of the settings' URLs it goes to.
    pub target: usize,
    pub request_id: Option<String>,
}

/// The `index`-th request, encoded, and sent to instance `index mod instances`.
pub fn prepare(settings: &RequestSettings, req: &BenchRequest, index: usize) -> Prepared {
    Prepared {
        body: request_body(settings, req).to_string().into(),
        prompt_len: req.prompt_len,
        output_len: req.output_len,
        target: index % settings.urls.len().max(1),
        request_id: settings
            .request_id_prefix
            .as_ref()
            .map(|prefix| format!("{prefix}{index}")),
    }
}

fn request_body(settings: &RequestSettings, req: &BenchRequest) -> Value {
    let mut body = base_body(settings, req);
    if let Value::Object(fields) = &mut body {
        fields.extend(settings.extra_body.clone());
    }
    body
}

fn base_body(settings: &RequestSettings, req: &BenchRequest) -> Value {
    let mut body = match settings.backend {
        // vLLM 0.32 sends a chat prompt as one text part.
        Backend::OpenaiChat => json!({
            "model": settings.model,
            "messages": [{"role": "user", "content": [{"type": "text", "text": req.prompt}]}],
            "max_completion_tokens": req.output_len,
            "stream": true,
            "stream_options": {"include_usage": true},
        }),
        // `repetition_penalty` and `logprobs` (`--logprobs`, else `null`)
        // are in every completions body of vLLM 0.32's; chat bodies have none.
        Backend::Openai => json!({
            "model": settings.model,
            "prompt": req.prompt,
            "repetition_penalty": 1.0,
            "max_tokens": req.output_len,
            "logprobs": settings.logprobs,
            "stream": true,
            "stream_options": {"include_usage": true},
        }),
    };
    if let Value::Object(fields) = &mut body {
        // vLLM 0.32 sets these only when asked: a server's defaults stand.
        if let Some(temperature) = settings.temperature {
            fields.insert("temperature".into(), json!(temperature));
        }
        if settings.ignore_eos || req.exact_output {
            fields.insert("ignore_eos".into(), json!(true));
        }
    }
    body
}

/// An error with its causes: hyper's own text ("error reading a body from
/// connection") does not say what happened.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        source = cause.source();
    }
    text
}

/// A failed request; its reason may quote the server, so it loses the
/// environment's secrets here, before anything records it.
fn failed(mut record: RequestRecord, error: String) -> RequestRecord {
    record.success = false;
    record.error = Some(crate::secrets::redact(&error).into_owned());
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(backend: Backend, temperature: Option<f64>) -> RequestSettings {
        RequestSettings {
            urls: vec!["http://127.0.0.1:1/v1/completions".into()],
            backend,
            model: "m".into(),
            temperature,
            ignore_eos: false,
            tokenizer: std::sync::Arc::new(Tokenizer::Whitespace),
            extra_body: [("top_p".to_owned(), json!(0.9))].into_iter().collect(),
            request_id_prefix: None,
            logprobs: None,
            headers: Default::default(),
        }
    }

    fn request(exact_output: bool) -> BenchRequest {
        BenchRequest {
            prompt: "hi there".into(),
            prompt_len: 2,
            output_len: 7,
            exact_output,
        }
    }

    /// The bodies of vLLM 0.32's `endpoint_request_func.py`, for the same
    /// options: temperature and `ignore_eos` only when asked.
    #[test]
    fn bodies_are_vllm_0_32s() {
        let completions = request_body(&settings(Backend::Openai, None), &request(false));
        assert_eq!(
            completions,
            json!({"model": "m", "prompt": "hi there", "repetition_penalty": 1.0,
                "max_tokens": 7, "logprobs": null, "stream": true,
                "stream_options": {"include_usage": true}, "top_p": 0.9})
        );
        let chat = request_body(&settings(Backend::OpenaiChat, Some(0.0)), &request(true));
        assert_eq!(
            chat,
            json!({"model": "m",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi there"}]}],
                "max_completion_tokens": 7, "stream": true,
                "stream_options": {"include_usage": true},
                "temperature": 0.0, "ignore_eos": true, "top_p": 0.9})
        );
    }
}
