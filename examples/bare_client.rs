//! A bare streaming client, the yardstick of `scripts/bench-harness.sh`:
//! `c` keep-alive connections, each sending the next of the same requests
//! `perfpipe bench` sends (built by perfpipe's code, words as the
//! tokenizer) in hand-written HTTP/1.1, and reading each response into one
//! 64 KiB buffer of its own: the head, then the chunked body's chunks,
//! whose data it scans for the SSE delimiter (a blank line) to count
//! events, timing the first event that carries a choice. Nothing else: no
//! JSON, no HTTP library, no task but the connection's, no records but the
//! TTFTs. A connection's first request counts its TCP connect in its TTFT,
//! as a cold request of `perfpipe bench` does.
//!
//! Usage: `bare_client PORT NUM_PROMPTS CONCURRENCY INPUT_LEN OUTPUT_LEN [SEED]
//! [--completions]` (model `bench-model`, `ignore_eos`,
//! `/v1/chat/completions` or with `--completions` `/v1/completions`).
#![expect(
    clippy::disallowed_macros,
    reason = "a developer's tool run by hand, outside perfpipe's stderr writer"
)]

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use perfpipe::dataset;
use perfpipe::harness::{RequestSettings, client};
use perfpipe::spec::Backend;
use perfpipe::tokenizer::Tokenizer;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

#[tokio::main]
async fn main() -> ExitCode {
    let completions = std::env::args().any(|a| a == "--completions");
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter(|a| a != "--completions")
        .map(|a| a.parse().unwrap_or(u64::MAX))
        .collect();
    let [port, n, c, input, output, rest @ ..] = args.as_slice() else {
        eprintln!(
            "usage: bare_client PORT NUM_PROMPTS CONCURRENCY INPUT_LEN OUTPUT_LEN [SEED] [--completions]"
        );
        return ExitCode::from(2);
    };
    let (backend, path) = match completions {
        true => (Backend::Openai, "/v1/completions"),
        false => (Backend::OpenaiChat, "/v1/chat/completions"),
    };
    let seed = rest.first().copied().unwrap_or(0);
    let tokenizer = Arc::new(Tokenizer::Whitespace);
    let prompts = dataset::random(
        &tokenizer,
        dataset::Shape::unprefixed(*input as u32, *output as u32, 0.0),
        seed,
        *n as u32,
    );
    let settings = RequestSettings {
        urls: vec![format!("http://127.0.0.1:{port}{path}")],
        backend,
        model: "bench-model".into(),
        temperature: Some(0.0),
        ignore_eos: true,
        tokenizer,
        extra_body: Default::default(),
        request_id_prefix: None,
        logprobs: None,
        headers: Default::default(),
    };
    let bodies: Arc<Vec<Bytes>> = Arc::new(
        prompts
            .iter()
            .enumerate()
            .map(|(i, p)| client::prepare(&settings, p, i).body)
            .collect(),
    );
    let next = Arc::new(AtomicUsize::new(0));
    let address = format!("127.0.0.1:{port}");
    let started = Instant::now();
    // The process's CPU over the same window as `perfpipe bench`'s.
    let window = perfpipe::host::Window::start();
    let workers: Vec<_> = (0..*c)
        .map(|_| {
            let (bodies, next, address) = (bodies.clone(), next.clone(), address.clone());
            tokio::spawn(async move { connection(&address, path, &bodies, &next).await })
        })
        .collect();
    let mut ttfts = Vec::new();
    let mut tokens = 0;
    for worker in workers {
        match worker.await.expect("a worker does not panic") {
            Ok((mine, counted)) => {
                ttfts.extend(mine);
                tokens += counted;
            }
            Err(e) => {
                eprintln!("bare client: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let used = window.finish();
    let ms: Vec<f64> = ttfts.iter().map(|t| t.as_secs_f64() * 1000.0).collect();
    let _ = writeln!(
        std::io::stdout(),
        "bare client: {} requests on {c} connections in {seconds:.2} s; {tokens} output tokens, {:.0} output tok/s; client CPU {:.2} s; TTFT mean {:.2} ms, p99 {:.2} ms",
        ms.len(),
        tokens as f64 / seconds,
        used.cpu,
        ms.iter().sum::<f64>() / ms.len().max(1) as f64,
        perfpipe::metrics::percentile(&ms, 99.0),
    );
    ExitCode::SUCCESS
}

/// The most bytes of one read: as many as the fast server writes at once
/// (16 KiB reads cost a fourth more system time at 256 streams).
const READ_BYTES: usize = 64 * 1024;

/// What every chunk with a choice holds, whichever the endpoint.
const CHOICE: &[u8] = b"\"choices\":[{";

/// Events of a stream that are not tokens: the usage chunk and `[DONE]`
/// (every server of the benchmark ends a stream with both, as vLLM's does
/// when asked for usage).
const TAIL_EVENTS: u64 = 2;

/// One connection: opened at once, then the next request as soon as the
/// last one's body has ended. The TTFT of each request sent on it, and the
/// tokens they carried.
async fn connection(
    address: &str,
    path: &str,
    bodies: &[Bytes],
    next: &AtomicUsize,
) -> Result<(Vec<Duration>, u64), Box<dyn std::error::Error + Send + Sync>> {
    let start = Instant::now();
    let mut stream = TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    // A connection's first request counts its connect.
    let mut reader = Reader::new(start);
    let mut request = Vec::new();
    let mut ttfts = Vec::new();
    let mut tokens = 0;
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(body) = bodies.get(i) else { break };
        request.clear();
        write!(
            request,
            "POST {path} HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
             accept: */*\r\ncontent-length: {}\r\n\r\n",
            body.len()
        )?;
        request.extend_from_slice(body);
        stream.write_all(&request).await?;
        let (ttft, events) = reader.response(&mut stream).await?;
        ttfts.push(ttft);
        tokens += events.saturating_sub(TAIL_EVENTS);
        reader.started = Instant::now();
    }
    Ok((ttfts, tokens))
}

/// Reads responses off one connection into one buffer: the head, then the
/// chunked body's chunks, counting the events of their data by the SSE
/// delimiter (a blank line) and timing the first event that carries a
/// choice. Nothing else is parsed.
struct Reader {
    buffer: Box<[u8]>,
    /// The unread bytes are `buffer[at..end]`.
    at: usize,
    end: usize,
    /// When the request being answered was sent.
    started: Instant,
    /// When the last read returned: the time of every byte it brought.
    read_at: Instant,
    blank_line: memchr::memmem::Finder<'static>,
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

impl Reader {
    fn new(started: Instant) -> Self {
        Self {
            buffer: vec![0; READ_BYTES].into_boxed_slice(),
            at: 0,
            end: 0,
            started,
            read_at: started,
            blank_line: memchr::memmem::Finder::new(b"\n\n"),
        }
    }

    /// Reads more.
    async fn fill(&mut self, stream: &mut TcpStream) -> Result<(), Failure> {
        if self.at == self.end {
            (self.at, self.end) = (0, 0);
        } else if self.end == self.buffer.len() {
            self.buffer.copy_within(self.at..self.end, 0);
            (self.at, self.end) = (0, self.end - self.at);
        }
        if self.end == self.buffer.len() {
            return Err("a response's head or chunk size line is longer than the buffer".into());
        }
        match stream.read(&mut self.buffer[self.end..]).await? {
            0 => Err("the server closed the connection inside a response".into()),
            n => {
                self.end += n;
                self.read_at = Instant::now();
                Ok(())
            }
        }
    }

    /// Where the unread bytes up to `end` start, reading until `end`
    /// comes; they are then read, `end` too.
    async fn line(&mut self, stream: &mut TcpStream, end: &[u8]) -> Result<usize, Failure> {
        loop {
            if let Some(i) = memchr::memmem::find(&self.buffer[self.at..self.end], end) {
                let line = self.at;
                self.at += i + end.len();
                return Ok(line);
            }
            self.fill(stream).await?;
        }
    }

    /// One response: its TTFT and how many events its body held.
    async fn response(&mut self, stream: &mut TcpStream) -> Result<(Duration, u64), Failure> {
        let head = self.line(stream, b"\r\n\r\n").await?;
        if !self.buffer[head..].starts_with(b"HTTP/1.1 200") {
            return Err("the server did not answer 200".into());
        }
        let mut first: Option<Duration> = None;
        // The start of the first event, kept until one with a choice has come.
        let mut opening = Vec::new();
        let mut events = 0;
        // Whether the data so far ends with a line's end (an event's blank
        // line may straddle two chunks).
        let mut newline = false;
        loop {
            let size_line = self.line(stream, b"\r\n").await?;
            let digits = &self.buffer[size_line..self.at - 2];
            let digits = digits.split(|b| *b == b';').next().unwrap_or_default();
            let mut left = usize::from_str_radix(std::str::from_utf8(digits)?.trim(), 16)?;
            if left == 0 {
                self.line(stream, b"\r\n").await?;
                return Ok((first.ok_or("a stream carried no choice")?, events));
            }
            while left > 0 {
                if self.at == self.end {
                    self.fill(stream).await?;
                }
                let take = left.min(self.end - self.at);
                let data = &self.buffer[self.at..self.at + take];
                events += self.blank_line.find_iter(data).count() as u64;
                if newline && data[0] == b'\n' {
                    events += 1;
                }
                newline = data[take - 1] == b'\n';
                if first.is_none() {
                    opening.extend_from_slice(data);
                    if chosen(&opening) {
                        first = Some(self.read_at - self.started);
                    }
                }
                self.at += take;
                left -= take;
            }
            // The chunk's closing `\r\n`.
            self.line(stream, b"\r\n").await?;
        }
    }
}

/// Whether an event that has ended in `data` carries a choice.
fn chosen(data: &[u8]) -> bool {
    let ended = memchr::memmem::rfind(data, b"\n\n").map_or(0, |i| i + 2);
    memchr::memmem::find(&data[..ended], CHOICE).is_some()
}
