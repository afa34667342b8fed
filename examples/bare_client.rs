//! A bare streaming client, the yardstick of `scripts/bench-harness.sh`'s
//! accuracy case: `c` keep-alive connections on hyper's own HTTP/1 client,
//! each sending the next of the same requests `perfpipe bench` sends (built
//! by perfpipe's code, words as the tokenizer) and timing its first line
//! of data that carries a choice. Nothing else: no JSON, no records but the
//! TTFTs. A connection's first request counts its TCP connect in its TTFT,
//! as a cold request of `perfpipe bench` does.
//!
//! Usage: `bare_client PORT NUM_PROMPTS CONCURRENCY INPUT_LEN OUTPUT_LEN [SEED]`
//! (model `bench-model`, `/v1/chat/completions`, `ignore_eos`).
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
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap_or(u64::MAX))
        .collect();
    let [port, n, c, input, output, rest @ ..] = args.as_slice() else {
        eprintln!("usage: bare_client PORT NUM_PROMPTS CONCURRENCY INPUT_LEN OUTPUT_LEN [SEED]");
        return ExitCode::from(2);
    };
    let seed = rest.first().copied().unwrap_or(0);
    let tokenizer = Arc::new(Tokenizer::Whitespace);
    let prompts = dataset::random(
        &tokenizer,
        *input as u32,
        *output as u32,
        0.0,
        seed,
        *n as u32,
    );
    let settings = RequestSettings {
        urls: vec![format!("http://127.0.0.1:{port}/v1/chat/completions")],
        backend: Backend::OpenaiChat,
        model: "bench-model".into(),
        temperature: Some(0.0),
        ignore_eos: true,
        tokenizer,
        extra_body: Default::default(),
        request_id_prefix: None,
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
    let workers: Vec<_> = (0..*c)
        .map(|_| {
            let (bodies, next, address) = (bodies.clone(), next.clone(), address.clone());
            tokio::spawn(async move { connection(&address, &bodies, &next).await })
        })
        .collect();
    let mut ttfts = Vec::new();
    for worker in workers {
        match worker.await.expect("a worker does not panic") {
            Ok(mine) => ttfts.extend(mine),
            Err(e) => {
                eprintln!("bare client: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let ms: Vec<f64> = ttfts.iter().map(|t| t.as_secs_f64() * 1000.0).collect();
    let _ = writeln!(
        std::io::stdout(),
        "bare client: {} requests on {c} connections; TTFT mean {:.2} ms, p99 {:.2} ms",
        ms.len(),
        ms.iter().sum::<f64>() / ms.len().max(1) as f64,
        perfpipe::metrics::percentile(&ms, 99.0),
    );
    ExitCode::SUCCESS
}

/// One connection: opened at once, then the next request as soon as the
/// last one's body has ended. The TTFT of each request sent on it.
async fn connection(
    address: &str,
    bodies: &[Bytes],
    next: &AtomicUsize,
) -> Result<Vec<Duration>, Box<dyn std::error::Error + Send + Sync>> {
    let mut start = Instant::now();
    let stream = tokio::net::TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let mut ttfts = Vec::new();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(body) = bodies.get(i) else { break };
        sender.ready().await?;
        let request = hyper::Request::post("/v1/chat/completions")
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
                .any(|line| line.starts_with(b"data: ") && contains(line, b"\"choices\":[{"))
            {
                first = Some(start.elapsed());
            }
            partial.drain(..ended);
        }
        ttfts.push(first.ok_or("a stream carried no choice")?);
        start = Instant::now();
    }
    Ok(ttfts)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
