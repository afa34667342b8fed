//! A bare streaming client, the yardstick of `scripts/bench-harness.sh`:
//! `c` keep-alive connections on hyper's own HTTP/1 client, each sending
//! the next of the same requests `perfpipe bench` sends (built by
//! perfpipe's code, words as the tokenizer), timing its first line of data
//! that carries a choice and counting the chunks with a choice. Nothing
//! else: no JSON, no records but the TTFTs. A connection's first request
//! counts its TCP connect in its TTFT, as a cold request of `perfpipe
//! bench` does.
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
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use perfpipe::dataset;
use perfpipe::harness::{RequestSettings, client};
use perfpipe::spec::Backend;
use perfpipe::tokenizer::Tokenizer;

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
    let ms: Vec<f64> = ttfts.iter().map(|t| t.as_secs_f64() * 1000.0).collect();
    let _ = writeln!(
        std::io::stdout(),
        "bare client: {} requests on {c} connections in {seconds:.2} s; {:.0} output tok/s; TTFT mean {:.2} ms, p99 {:.2} ms",
        ms.len(),
        tokens as f64 / seconds,
        ms.iter().sum::<f64>() / ms.len().max(1) as f64,
        perfpipe::metrics::percentile(&ms, 99.0),
    );
    ExitCode::SUCCESS
}

/// One connection: opened at once, then the next request as soon as the
/// last one's body has ended. The TTFT of each request sent on it, and the
/// chunks with a choice they carried.
async fn connection(
    address: &str,
    path: &str,
    bodies: &[Bytes],
    next: &AtomicUsize,
) -> Result<(Vec<Duration>, usize), Box<dyn std::error::Error + Send + Sync>> {
    let mut start = Instant::now();
    let stream = tokio::net::TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let mut ttfts = Vec::new();
    let mut tokens = 0;
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(body) = bodies.get(i) else { break };
        sender.ready().await?;
        let request = hyper::Request::post(path)
            .header(hyper::header::HOST, address)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(body.clone()))?;
        let mut response = sender.send_request(request).await?.into_body();
        let mut first: Option<Duration> = None;
        // The end of the last line a frame left unfinished.
        let mut partial = Vec::new();
        while let Some(frame) = response.frame().await {
            let frame = frame?;
            let Some(data) = frame.data_ref() else {
                continue;
            };
            // A choice split across two frames goes uncounted: rare, and
            // only ever fewer tokens for the yardstick.
            tokens += memchr::memmem::find_iter(data, CHOICE).count();
            if first.is_some() {
                continue;
            }
            partial.extend_from_slice(data);
            let ended = partial
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1);
            if partial[..ended]
                .split(|b| *b == b'\n')
                .any(|line| line.starts_with(b"data: ") && contains(line, CHOICE))
            {
                first = Some(start.elapsed());
            }
            partial.drain(..ended);
        }
        ttfts.push(first.ok_or("a stream carried no choice")?);
        start = Instant::now();
    }
    Ok((ttfts, tokens))
}

/// What every chunk with a choice holds, whichever the endpoint.
const CHOICE: &[u8] = b"\"choices\":[{";

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
