//! The client of benchmark streams: hyper_util's pooled HTTP/1 client, set
//! up as reqwest sets it up (keep-alive pool, `TCP_NODELAY`, TCP keep-alive
//! probes, `accept: */*`, no redirect followed, no proxy), with each
//! connection's read buffer bounded.
//!
//! hyper doubles a connection's read buffer whenever a read fills it, up to
//! ~400 KiB, and keeps it while the connection lives: a client that falls
//! behind 1000 streams holds ~400 MiB in buffers. reqwest has no setting
//! for it; hyper_util's `http1_max_buf_size` is that bound.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use thiserror::Error;

/// The bound of a connection's read buffer. hyper reads into the buffer's
/// whole spare room, which its allocator may have doubled past the bound,
/// so a connection holds at most twice this: 1000 streams 64 MiB. Events
/// beyond it wait in the kernel's socket buffer and are read a moment
/// later (a client that falls behind 1000 streams held 289 MiB at hyper's
/// default bound, 131 MiB at this one).
pub const MAX_READ_BUFFER_BYTES: usize = 32 * 1024;

/// How long an idle connection stays pooled (reqwest's default).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// reqwest's TCP keep-alive: a probe after 15 s of silence, every 15 s, 3 times.
const TCP_KEEPALIVE: Duration = Duration::from_secs(15);
const TCP_KEEPALIVE_RETRIES: u32 = 3;

/// A streamed response: its status, headers, and a body read as it comes.
pub type Response = hyper::Response<hyper::body::Incoming>;

#[derive(Debug, Error)]
pub enum RequestError {
    #[error("`{url}` is not a URL a request can go to")]
    Url {
        url: String,
        #[source]
        source: hyper::http::Error,
    },
    #[error(transparent)]
    Send(#[from] hyper_util::client::legacy::Error),
}

/// Sends the benchmark's requests; cheap to clone (clones share one pool).
#[derive(Clone)]
pub struct StreamClient {
    inner: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl std::fmt::Debug for StreamClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamClient").finish_non_exhaustive()
    }
}

impl StreamClient {
    /// The system's root certificates are loaded only for a server spoken to
    /// over `https`: engines perfpipe starts answer plain HTTP on loopback.
    pub fn new(https: bool) -> Self {
        crate::tls::ensure_provider();
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_keepalive(Some(TCP_KEEPALIVE));
        tcp.set_keepalive_interval(Some(TCP_KEEPALIVE));
        tcp.set_keepalive_retries(Some(TCP_KEEPALIVE_RETRIES));
        let tls = hyper_rustls::HttpsConnectorBuilder::new();
        let tls = match https {
            true => tls
                .try_with_platform_verifier()
                .expect("the platform's certificate verifier loads"),
            false => tls.with_tls_config(
                rustls::ClientConfig::builder()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth(),
            ),
        };
        let connector = tls.https_or_http().enable_http1().wrap_connector(tcp);
        let inner = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .pool_max_idle_per_host(usize::MAX)
            .http1_max_buf_size(MAX_READ_BUFFER_BYTES)
            .build(connector);
        Self { inner }
    }

    /// POSTs `body` as JSON to `url`, with `x-request-id` when given; the
    /// headers are those reqwest sent, in its order.
    pub async fn post(
        &self,
        url: &str,
        body: Bytes,
        request_id: Option<&str>,
    ) -> Result<Response, RequestError> {
        let mut request = hyper::Request::post(url)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(id) = request_id {
            request = request.header("x-request-id", id);
        }
        let request = request
            .header(ACCEPT, HeaderValue::from_static("*/*"))
            .body(Full::new(body))
            .map_err(|source| RequestError::Url {
                url: url.to_owned(),
                source,
            })?;
        Ok(self.inner.request(request).await?)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};

    use futures_util::StreamExt;
    use http_body_util::BodyDataStream;

    use super::*;

    /// A server that answers one request with a chunk of `size` bytes,
    /// written at once; its port.
    fn one_large_chunk(size: usize) -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            reader.read_exact(&mut vec![0; length]).unwrap();
            let head = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
            let mut reply = format!("{head}{size:x}\r\n").into_bytes();
            reply.resize(reply.len() + size, b'x');
            reply.extend_from_slice(b"\r\n0\r\n\r\n");
            let _ = stream.write_all(&reply);
        });
        port
    }

    #[tokio::test]
    async fn a_connection_never_reads_more_than_its_bound_at_once() {
        // hyper would grow its buffer to ~400 KiB reading this.
        let size = 4 << 20;
        let port = one_large_chunk(size);
        let client = StreamClient::new(false);
        let url = format!("http://127.0.0.1:{port}/v1/completions");
        let response = client
            .post(&url, Bytes::from_static(b"{}"), None)
            .await
            .unwrap();
        // Behind the server, as a client of 1000 streams falls behind: the
        // socket's buffers are full when reading starts.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut body = BodyDataStream::new(response.into_body());
        let (mut total, mut largest) = (0, 0);
        while let Some(data) = body.next().await {
            let data = data.unwrap();
            total += data.len();
            largest = largest.max(data.len());
        }
        assert_eq!(total, size);
        assert!(
            largest <= 2 * MAX_READ_BUFFER_BYTES,
            "{largest} bytes in one read"
        );
    }
}
