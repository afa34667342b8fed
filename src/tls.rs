//! The TLS crypto provider every HTTP client needs before it is built:
//! rustls with ring (reqwest's default, aws-lc, would add a C build).

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
