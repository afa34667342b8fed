//! The TLS crypto provider every HTTP client needs before it is built:
//! rustls with ring (reqwest's default, aws-lc, would add a C build); the
//! client builder of the registries, the Hub and the result cache, and the
//! one message of a request that failed on its way.

/// Installs it once per process; later calls do nothing.
pub fn ensure_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client for the registries and the Hub: connection timeout, user agent.
pub fn client_builder() -> reqwest::ClientBuilder {
    ensure_provider();
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .user_agent(concat!("perfpipe/", env!("CARGO_PKG_VERSION")))
}

/// `reqwest`'s error without the URL (a token endpoint's URL holds no
/// secret, but a proxy's or a cache's might) and with its causes, which say
/// what failed: `{what}: {error}: {cause}…`.
pub fn transport_error(what: &str, e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut message = format!("{what}: {e}");
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    message
}
