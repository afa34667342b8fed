//! The client of benchmark streams: hyper's HTTP/1 connections, set up as
//! reqwest sets them up (`TCP_NODELAY`, TCP keep-alive probes, `accept: */*`,
//! no redirect followed, no proxy), each with its read buffer bounded, kept
//! in a pool of its own.
//!
//! hyper doubles a connection's read buffer whenever a read fills it, up to
//! ~400 KiB, and keeps it while the connection lives: a client that falls
//! behind 1000 streams holds ~400 MiB in buffers. reqwest has no setting
//! for it; hyper's `max_buf_size` is that bound.
//!
//! The pool is ours because a connection must be back in it before the
//! request that used it ends: the next request is let go when one ends, and
//! a pool that takes its connections back in a task of its own (hyper_util's,
//! reqwest's) lets it find none and open one more, up to 2% more
//! connections than streams at 1000 streams against a fast server.
//!
//! Each server's name is looked up once, before the benchmark's clock
//! starts ([`StreamClient::resolve`]), as vLLM's client caches its lookups:
//! hyper_util's resolver asks the system on a blocking thread for every new
//! connection, inside that request's TTFT (512 streams to `localhost` on one
//! core: ~360 ms added to the first wave's TTFTs).

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Uri;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderMap, HeaderValue};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use thiserror::Error;
use tower_service::Service as _;

/// The bound of a connection's read buffer. hyper reads into the buffer's
/// whole spare room, which its allocator may have doubled past the bound,
/// so a connection holds at most twice this: 1000 streams 64 MiB. Events
/// beyond it wait in the kernel's socket buffer and are read a moment
/// later (a client that falls behind 1000 streams held 289 MiB at hyper's
/// default bound, 131 MiB at this one).
pub const MAX_READ_BUFFER_BYTES: usize = 32 * 1024;

/// reqwest's TCP keep-alive: a probe after 15 s of silence, every 15 s, 3 times.
const TCP_KEEPALIVE: Duration = Duration::from_secs(15);
const TCP_KEEPALIVE_RETRIES: u32 = 3;

/// How long a connection whose response was read to its end may take to be
/// ready for the next request before it is closed instead of pooled.
const READY_WAIT: Duration = Duration::from_secs(1);

/// A streamed response: its status, headers, and a body read as it comes.
pub type Response = hyper::Response<hyper::body::Incoming>;

type Sender = SendRequest<Full<Bytes>>;

/// Idle connections by origin (`scheme://host:port`).
type Pool = Arc<Mutex<HashMap<String, Vec<Sender>>>>;

#[derive(Debug, Error)]
pub enum RequestError {
    #[error("`{url}` is not a URL a request can go to")]
    Url { url: String },
    #[error("cannot connect to {origin}")]
    Connect {
        origin: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(transparent)]
    Http(#[from] hyper::Error),
}

/// The addresses of each host name looked up, kept for the client's life
/// (a benchmark's minutes; vLLM's client keeps them 300 s).
#[derive(Clone, Default)]
struct Resolved {
    hosts: Arc<Mutex<HashMap<String, Vec<SocketAddr>>>>,
}

impl Resolved {
    fn get(&self, host: &str) -> Option<Vec<SocketAddr>> {
        let hosts = self.hosts.lock().expect("the names are never poisoned");
        hosts.get(host).cloned()
    }

    /// Looks `host` up unless it was, and keeps what the system answered.
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<SocketAddr>> {
        if let Some(addrs) = self.get(host) {
            return Ok(addrs);
        }
        // The port is the connector's to set.
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
        let mut hosts = self.hosts.lock().expect("the names are never poisoned");
        hosts.insert(host.to_owned(), addrs.clone());
        Ok(addrs)
    }
}

/// hyper_util's connector asks this for a name's addresses.
impl tower_service::Service<Name> for Resolved {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let resolved = self.clone();
        Box::pin(async move { Ok(resolved.lookup(name.as_str()).await?.into_iter()) })
    }
}

/// Sends the benchmark's requests; cheap to clone (clones share one pool).
#[derive(Clone)]
pub struct StreamClient {
    connector: HttpsConnector<HttpConnector<Resolved>>,
    idle: Pool,
    resolved: Resolved,
}

impl std::fmt::Debug for StreamClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamClient").finish_non_exhaustive()
    }
}

/// A response's connection, which goes back to the pool by
/// [`Lease::release`] once the response has been read to its end; dropped
/// otherwise, which closes it.
pub struct Lease {
    sender: Sender,
    origin: String,
    idle: Pool,
}

impl Lease {
    /// Waits until hyper has finished the response, so the connection can
    /// take the next request, and pools it; call once the body has ended.
    pub async fn release(mut self) {
        if let Ok(Ok(())) = tokio::time::timeout(READY_WAIT, self.sender.ready()).await {
            let mut idle = self.idle.lock().expect("the pool is never poisoned");
            idle.entry(self.origin).or_default().push(self.sender);
        }
    }
}

impl StreamClient {
    /// The system's root certificates are loaded only for a server spoken to
    /// over `https`: engines perfpipe starts answer plain HTTP on loopback.
    pub fn new(tls: super::client::Tls) -> Self {
        use super::client::Tls;
        crate::tls::ensure_provider();
        let resolved = Resolved::default();
        let mut tcp = HttpConnector::new_with_resolver(resolved.clone());
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_keepalive(Some(TCP_KEEPALIVE));
        tcp.set_keepalive_interval(Some(TCP_KEEPALIVE));
        tcp.set_keepalive_retries(Some(TCP_KEEPALIVE_RETRIES));
        let builder = hyper_rustls::HttpsConnectorBuilder::new();
        let builder = match tls {
            Tls::Verified => builder
                .try_with_platform_verifier()
                .expect("the platform's certificate verifier loads"),
            Tls::Unverified => builder.with_tls_config(crate::tls::unverified_client_config()),
            Tls::Plain => builder.with_tls_config(
                rustls::ClientConfig::builder()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth(),
            ),
        };
        let connector = builder.https_or_http().enable_http1().wrap_connector(tcp);
        Self {
            connector,
            idle: Pool::default(),
            resolved,
        }
    }

    /// Looks up the host of each of `urls` now, before any request's clock
    /// starts; connections then use what was found. A name that is not
    /// found here is looked up again by the request, which reports why.
    pub async fn resolve(&self, urls: &[String]) {
        for url in urls {
            let Ok(uri) = url.parse::<Uri>() else {
                continue;
            };
            // hyper_util connects to an address as it is, asking no one.
            match uri.host() {
                Some(host)
                    if host.parse::<std::net::IpAddr>().is_err() && !host.starts_with('[') =>
                {
                    let _ = self.resolved.lookup(host).await;
                }
                _ => {}
            }
        }
    }

    /// POSTs `body` as JSON to `url`, with `headers` over the ones reqwest
    /// sent (in its order) and `x-request-id` over them when given, as
    /// vLLM's client sets them, on an idle connection if the pool has one.
    /// A pooled connection the server closed meanwhile is replaced by a new
    /// one if the request was not yet written.
    pub async fn post(
        &self,
        url: &str,
        body: Bytes,
        headers: &HeaderMap,
        request_id: Option<&str>,
    ) -> Result<(Response, Lease), RequestError> {
        let bad_url = || RequestError::Url {
            url: url.to_owned(),
        };
        let uri: Uri = url.parse().map_err(|_| bad_url())?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(bad_url());
        };
        let origin = format!("{scheme}://{authority}");
        // As hyper_util's client writes it: the port only when not the scheme's.
        let default_port = if scheme == "https" { 443 } else { 80 };
        let host = match authority.port_u16() {
            Some(port) if port != default_port => format!("{}:{port}", authority.host()),
            _ => authority.host().to_owned(),
        };
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let mut request = hyper::Request::post(path)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(id) = request_id {
            request = request.header("x-request-id", id);
        }
        let mut request = request
            .header(ACCEPT, HeaderValue::from_static("*/*"))
            .header(HOST, host)
            .body(Full::new(body))
            .map_err(|_| bad_url())?;
        for (name, value) in headers {
            if request_id.is_none() || name.as_str() != "x-request-id" {
                request.headers_mut().insert(name, value.clone());
            }
        }
        loop {
            let (mut sender, pooled) = match self.take_idle(&origin) {
                Some(sender) => (sender, true),
                None => (self.connect(&uri, &origin).await?, false),
            };
            match sender.try_send_request(request).await {
                Ok(response) => {
                    let idle = self.idle.clone();
                    return Ok((
                        response,
                        Lease {
                            sender,
                            origin,
                            idle,
                        },
                    ));
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if pooled => request = unsent,
                    _ => return Err(e.into_error().into()),
                },
            }
        }
    }

    /// The last connection pooled for `origin` that can take a request;
    /// those the server closed are dropped.
    fn take_idle(&self, origin: &str) -> Option<Sender> {
        let mut idle = self.idle.lock().expect("the pool is never poisoned");
        let senders = idle.get_mut(origin)?;
        std::iter::from_fn(|| senders.pop()).find(SendRequest::is_ready)
    }

    async fn connect(&self, uri: &Uri, origin: &str) -> Result<Sender, RequestError> {
        let io = self
            .connector
            .clone()
            .call(uri.clone())
            .await
            .map_err(|source| RequestError::Connect {
                origin: origin.to_owned(),
                source,
            })?;
        let (sender, connection) = http1::Builder::new()
            .max_buf_size(MAX_READ_BUFFER_BYTES)
            .handshake(io)
            .await?;
        // Ends when the server closes the connection or its sender is dropped.
        tokio::spawn(connection);
        Ok(sender)
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

    /// A server answering each request with a two-byte body: on its first
    /// connection one request, then it closes; on later ones, every request.
    /// The connections it accepted, and each request's head.
    fn closes_its_first_connection() -> (u16, std::sync::mpsc::Receiver<String>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (heads, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().flatten().enumerate() {
                let heads = heads.clone();
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    loop {
                        let mut head = format!("connection {n}\n");
                        let mut length = 0;
                        loop {
                            let mut line = String::new();
                            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            if line == "\r\n" {
                                break;
                            }
                            if let Some(v) = line.strip_prefix("content-length:") {
                                length = v.trim().parse().unwrap();
                            }
                            head.push_str(&line);
                        }
                        reader.read_exact(&mut vec![0; length]).unwrap();
                        heads.send(head).unwrap();
                        let reply = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                        if stream.write_all(reply.as_bytes()).is_err() || n == 0 {
                            return;
                        }
                    }
                });
            }
        });
        (port, received)
    }

    /// Sends one request and reads its response to its end.
    async fn post(client: &StreamClient, url: &str) {
        let (response, lease) = client
            .post(
                url,
                Bytes::from_static(b"{}"),
                &HeaderMap::new(),
                Some("r-7"),
            )
            .await
            .unwrap();
        let mut body = BodyDataStream::new(response.into_body());
        while body.next().await.is_some() {}
        lease.release().await;
    }

    #[tokio::test]
    async fn requests_go_as_reqwest_sent_them_and_reuse_a_connection_while_it_is_open() {
        let (port, heads) = closes_its_first_connection();
        let client = StreamClient::new(crate::harness::Tls::Plain);
        let url = format!("http://127.0.0.1:{port}/v1/completions");
        post(&client, &url).await;
        // The server closed the first connection: the pool drops it.
        tokio::time::sleep(Duration::from_millis(100)).await;
        post(&client, &url).await;
        post(&client, &url).await;
        let heads: Vec<String> = heads.try_iter().collect();
        let head = |n| {
            format!(
                "connection {n}\nPOST /v1/completions HTTP/1.1\r\ncontent-type: application/json\r\n\
                 x-request-id: r-7\r\naccept: */*\r\nhost: 127.0.0.1:{port}\r\ncontent-length: 2\r\n"
            )
        };
        assert_eq!(heads, [head(0), head(1), head(1)]);
    }

    #[tokio::test]
    async fn connections_use_the_addresses_looked_up_before_the_clock_started() {
        let (port, heads) = closes_its_first_connection();
        let client = StreamClient::new(crate::harness::Tls::Plain);
        client
            .resolve(&[format!("http://localhost:{port}/v1/completions")])
            .await;
        let found = client.resolved.get("localhost").expect("looked up");
        assert!(found.iter().all(|a| a.ip().is_loopback()), "{found:?}");
        // A name no system resolves (RFC 6761): connections to it can only
        // use what the client already holds, as every one made after
        // `resolve` does, never a lookup of their own.
        client
            .resolved
            .hosts
            .lock()
            .unwrap()
            .insert("perfpipe.invalid".into(), found);
        let url = format!("http://perfpipe.invalid:{port}/v1/completions");
        post(&client, &url).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        post(&client, &url).await;
        assert_eq!(heads.try_iter().count(), 2, "both went to the server");
    }

    #[tokio::test]
    async fn a_refused_connect_names_the_server() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/v1/completions");
        let Err(e) = StreamClient::new(crate::harness::Tls::Plain)
            .post(&url, Bytes::new(), &HeaderMap::new(), None)
            .await
        else {
            panic!("nothing listens on {port}");
        };
        assert_eq!(
            e.to_string(),
            format!("cannot connect to http://127.0.0.1:{port}")
        );
    }

    #[tokio::test]
    async fn a_connection_never_reads_more_than_its_bound_at_once() {
        // hyper would grow its buffer to ~400 KiB reading this.
        let size = 4 << 20;
        let port = one_large_chunk(size);
        let client = StreamClient::new(crate::harness::Tls::Plain);
        let url = format!("http://127.0.0.1:{port}/v1/completions");
        let (response, _) = client
            .post(&url, Bytes::from_static(b"{}"), &HeaderMap::new(), None)
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
