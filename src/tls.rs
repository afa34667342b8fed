//! The TLS crypto provider every HTTP client needs before it is built:
//! rustls with ring (reqwest's default, aws-lc, would add a C build).

/// Installs it once per process; later calls do nothing.
pub fn ensure_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
