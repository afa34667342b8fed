//! A neutral streaming server, the other end of `scripts/bench-harness.sh`'s
//! client comparisons: one thread, hand-written HTTP/1.1 with keep-alive, one
//! SSE chunk per token in OpenAI's shape (`/v1/completions` and
//! `/v1/chat/completions`), the first token `TTFT_MS` after the request's
//! last byte arrived and each next one `ITL_MS` after the one before (by a
//! fixed schedule, so a late wake-up does not push the rest back). At zero
//! delays, everything due goes out in writes of up to 64 KiB, as a busy
//! server's does, so one core serves well over a million tokens a second and
//! the client is what is measured. A write is one HTTP chunk; with
//! `--chunk-per-event`, each event is an HTTP chunk of its own (as an
//! engine's HTTP server frames the events it is handed), which costs an
//! HTTP client a frame per token. With `--sleep-each`, it is a server that
//! sleeps before every write instead (as a generator awaiting a sleep before
//! each token does): each event is a write and an HTTP chunk of its own,
//! `ITL_MS` after the write before it, so a late wake-up pushes the rest
//! back. With `--tail-gap MS`, usage, `[DONE]` and the body's end are each a
//! write of their own, `MS` after the one before (by default they go with
//! the last token): a client that frees a stream's slot at `[DONE]` but its
//! connection only at the body's end would show it. It neither tokenizes
//! nor checks anything: `max_tokens` (or `max_completion_tokens`) tokens,
//! then usage and `[DONE]`.
//!
//! Usage: `fast_server PORT [TTFT_MS [ITL_MS]] [--chunk-per-event]
//! [--sleep-each] [--tail-gap MS]`; runs until killed.
#![expect(
    clippy::disallowed_macros,
    reason = "a developer's tool run by hand, outside perfpipe's stderr writer"
)]

use std::process::ExitCode;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The most bytes a write carries when many tokens are due at once.
const WRITE_BYTES: usize = 64 * 1024;
/// The most bytes of a request's head and body.
const MAX_REQUEST_BYTES: usize = 16 << 20;

#[derive(Clone, Copy)]
struct Timing {
    ttft: Duration,
    itl: Duration,
    /// Each event an HTTP chunk of its own, rather than each write.
    chunk_per_event: bool,
    /// Each event a write of its own, after a sleep from the write before,
    /// rather than every event due by a fixed schedule at once.
    sleep_each: bool,
    /// Usage, `[DONE]` and the body's end each this long after the write
    /// before; zero: with the last token.
    tail_gap: Duration,
}

const USAGE: &str =
    "usage: fast_server PORT [TTFT_MS [ITL_MS]] [--chunk-per-event] [--sleep-each] [--tail-gap MS]";

fn main() -> ExitCode {
    let Some((port, timing)) = parse(std::env::args().skip(1)) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds");
    let local = tokio::task::LocalSet::new();
    match local.block_on(&runtime, serve(port, timing)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fast_server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The port and timing the arguments ask for; none when they make no sense.
fn parse(mut args: impl Iterator<Item = String>) -> Option<(u16, Timing)> {
    let millis = |a: Option<String>| {
        let ms: u64 = a?.parse().ok()?;
        (ms < 1 << 32).then(|| Duration::from_millis(ms))
    };
    let mut numbers = Vec::new();
    let mut timing = Timing {
        ttft: Duration::ZERO,
        itl: Duration::ZERO,
        chunk_per_event: false,
        sleep_each: false,
        tail_gap: Duration::ZERO,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--chunk-per-event" => timing.chunk_per_event = true,
            "--sleep-each" => timing.sleep_each = true,
            "--tail-gap" => timing.tail_gap = millis(args.next())?,
            _ => numbers.push(arg),
        }
    }
    let mut numbers = numbers.into_iter();
    let port = numbers.next()?.parse().ok()?;
    if let Some(ttft) = numbers.next() {
        timing.ttft = millis(Some(ttft))?;
    }
    if let Some(itl) = numbers.next() {
        timing.itl = millis(Some(itl))?;
    }
    numbers.next().is_none().then_some((port, timing))
}

async fn serve(port: u16, timing: Timing) -> std::io::Result<()> {
    // uvicorn's backlog, as the simulated engine's: 512 cold connections at
    // once overflowed tokio's 128, and each dropped SYN's retry came a
    // second later, inside a TTFT.
    let listener = perfpipe::engine::sim::listen("127.0.0.1", port).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        tokio::task::spawn_local(async move {
            // A client that goes away ends its connection; nothing to report.
            let _ = connection(stream, timing).await;
        });
    }
}

/// Answers the requests of one keep-alive connection, one after the other.
async fn connection(mut stream: TcpStream, timing: Timing) -> std::io::Result<()> {
    let mut buffer = Vec::with_capacity(8192);
    let mut out = Vec::with_capacity(WRITE_BYTES + 4096);
    loop {
        let Some((head_end, length)) = read_head(&mut stream, &mut buffer).await? else {
            return Ok(());
        };
        while buffer.len() < head_end + length {
            if read_more(&mut stream, &mut buffer).await? == 0 {
                return Ok(());
            }
        }
        let received = Instant::now();
        let request = Request::parse(&buffer[..head_end], &buffer[head_end..head_end + length]);
        buffer.drain(..head_end + length);
        match request.path {
            Path::Models => {
                let body = b"{\"object\":\"list\",\"data\":[{\"id\":\"bench-model\",\"object\":\"model\"}]}";
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                stream.write_all(head.as_bytes()).await?;
                stream.write_all(body).await?;
            }
            Path::Other => {
                stream
                    .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    .await?;
            }
            Path::Completions | Path::Chat => {
                stream_tokens(&mut stream, &mut out, &request, received, timing).await?;
            }
        }
    }
}

/// Reads until `buffer` holds a request head; where it ends and the body's length.
async fn read_head(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
) -> std::io::Result<Option<(usize, usize)>> {
    loop {
        if let Some(end) = memchr::memmem::find(buffer, b"\r\n\r\n") {
            let head = std::str::from_utf8(&buffer[..end]).unwrap_or("");
            let length = head
                .lines()
                .filter_map(|line| line.split_once(':'))
                .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, value)| value.trim().parse().ok())
                .unwrap_or(0);
            return Ok(Some((end + 4, length)));
        }
        if buffer.len() > MAX_REQUEST_BYTES || read_more(stream, buffer).await? == 0 {
            return Ok(None);
        }
    }
}

async fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
    buffer.reserve(8192);
    stream.read_buf(buffer).await
}

#[derive(Clone, Copy, PartialEq)]
enum Path {
    Completions,
    Chat,
    Models,
    Other,
}

struct Request {
    path: Path,
    max_tokens: u64,
    /// Words of the prompt, near enough for a usage chunk.
    prompt_tokens: u64,
}

impl Request {
    fn parse(head: &[u8], body: &[u8]) -> Self {
        let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
        let target = line.split(|b| *b == b' ').nth(1).unwrap_or_default();
        let path = match target {
            b"/v1/completions" => Path::Completions,
            b"/v1/chat/completions" => Path::Chat,
            b"/v1/models" => Path::Models,
            _ => Path::Other,
        };
        let max_tokens = number_after(body, b"\"max_tokens\":")
            .or_else(|| number_after(body, b"\"max_completion_tokens\":"))
            .unwrap_or(16);
        let prompt_tokens = body.iter().filter(|b| **b == b' ').count() as u64;
        Self {
            path,
            max_tokens,
            prompt_tokens,
        }
    }
}

fn number_after(text: &[u8], key: &[u8]) -> Option<u64> {
    let at = memchr::memmem::find(text, key)? + key.len();
    let rest = text[at..].trim_ascii_start();
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// The response: its head at once, then each token when due, every event
/// already due in one write (at most about [`WRITE_BYTES`]; with
/// `sleep_each`, one event a write, each after a sleep), then usage and
/// `[DONE]` with the last token (or each after the tail gap), and the
/// chunked body's end.
async fn stream_tokens(
    stream: &mut TcpStream,
    out: &mut Vec<u8>,
    request: &Request,
    received: Instant,
    timing: Timing,
) -> std::io::Result<()> {
    stream
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
              cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n",
        )
        .await?;
    let (prefix, suffix, last_suffix): (&[u8], &[u8], &[u8]) = match request.path {
        Path::Chat => (
            b"data: {\"id\":\"chatcmpl-0\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"bench-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
            b"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
            b"\"},\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n",
        ),
        _ => (
            b"data: {\"id\":\"cmpl-0\",\"object\":\"text_completion\",\"created\":0,\"model\":\"bench-model\",\"choices\":[{\"index\":0,\"text\":\"",
            b"\",\"logprobs\":null,\"finish_reason\":null}]}\n\n",
            b"\",\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n",
        ),
    };
    let n = request.max_tokens;
    let chunk_per_event = timing.chunk_per_event || timing.sleep_each;
    let mut next = 1;
    // When the next write is due: by the schedule, token k at
    // TTFT + (k-1)·ITL after the request arrived; sleeping, ITL after the
    // write before.
    let mut due = received + timing.ttft;
    let scheduled = |k: u64| received + timing.ttft + timing.itl * (k.max(1) as u32 - 1);
    loop {
        // A timer, even one already due, waits for the runtime's next tick.
        if due > Instant::now() {
            tokio::time::sleep_until(due).await;
        }
        let now = Instant::now();
        let mut body = Body::new(out, chunk_per_event);
        while next <= n {
            let suffix = if next == n { last_suffix } else { suffix };
            body.event(&[prefix, b" hi", suffix]);
            next += 1;
            if timing.sleep_each || body.len() >= WRITE_BYTES || scheduled(next) > now {
                break;
            }
        }
        if next <= n {
            body.finish(false);
            stream.write_all(out).await?;
            due = if timing.sleep_each {
                Instant::now() + timing.itl
            } else {
                scheduled(next)
            };
            continue;
        }
        let usage = format!(
            "data: {{\"id\":\"cmpl-0\",\"object\":\"text_completion\",\"created\":0,\"model\":\"bench-model\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{p},\"total_tokens\":{t},\"completion_tokens\":{n}}}}}\n\n",
            p = request.prompt_tokens,
            t = request.prompt_tokens + n,
        );
        let tail: [&[u8]; 2] = [usage.as_bytes(), b"data: [DONE]\n\n"];
        if timing.tail_gap.is_zero() {
            for event in tail {
                body.event(&[event]);
            }
            body.finish(true);
            return stream.write_all(out).await;
        }
        body.finish(false);
        stream.write_all(out).await?;
        for event in tail {
            tokio::time::sleep(timing.tail_gap).await;
            let mut body = Body::new(out, chunk_per_event);
            body.event(&[event]);
            body.finish(false);
            stream.write_all(out).await?;
        }
        tokio::time::sleep(timing.tail_gap).await;
        return stream.write_all(b"0\r\n\r\n").await;
    }
}

/// One write of a chunked body: its events, framed as one chunk or as a
/// chunk each.
struct Body<'a> {
    out: &'a mut Vec<u8>,
    chunk_per_event: bool,
}

impl<'a> Body<'a> {
    /// A write's chunk starts with its size, written once known: eight hex
    /// digits (leading zeros are allowed) stand in for it.
    const SIZE: &'static [u8] = b"00000000\r\n";

    fn new(out: &'a mut Vec<u8>, chunk_per_event: bool) -> Self {
        out.clear();
        if !chunk_per_event {
            out.extend_from_slice(Self::SIZE);
        }
        Self {
            out,
            chunk_per_event,
        }
    }

    fn len(&self) -> usize {
        self.out.len()
    }

    fn event(&mut self, parts: &[&[u8]]) {
        if self.chunk_per_event {
            let size: usize = parts.iter().map(|p| p.len()).sum();
            hex(self.out, size);
            self.out.extend_from_slice(b"\r\n");
        }
        for part in parts {
            self.out.extend_from_slice(part);
        }
        if self.chunk_per_event {
            self.out.extend_from_slice(b"\r\n");
        }
    }

    /// Closes the write's chunk, and with `last` the body.
    fn finish(self, last: bool) {
        if !self.chunk_per_event {
            let size = self.out.len() - Self::SIZE.len();
            let mut digits = Vec::with_capacity(8);
            hex(&mut digits, size);
            let at = 8 - digits.len();
            self.out[at..8].copy_from_slice(&digits);
            self.out.extend_from_slice(b"\r\n");
        }
        if last {
            self.out.extend_from_slice(b"0\r\n\r\n");
        }
    }
}

/// Appends `n` in lowercase hex, without leading zeros.
fn hex(out: &mut Vec<u8>, n: usize) {
    let digits = (usize::BITS - n.leading_zeros()).div_ceil(4).max(1);
    for shift in (0..digits).rev() {
        out.push(b"0123456789abcdef"[(n >> (4 * shift)) & 0xf]);
    }
}
