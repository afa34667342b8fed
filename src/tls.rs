//! The TLS crypto provider every HTTP client needs before it is built:
//! rustls with ring (reqwest's default, aws-lc, would add a C build); the
//! client builder of the registries, the Hub and the result cache, the one
//! bounded read of an answer's body, and the one message of a request that
//! failed on its way.

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

/// The most bytes read of one kind of answer, and what bounds it, for the
/// message that refuses a longer one.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    pub bytes: u64,
    /// What the bound is, after the byte count: "perfpipe reads of a manifest".
    pub of: &'static str,
}

impl Limit {
    /// `{answer} is longer than the {bytes} bytes {of}`: `answer` says which
    /// answer ("the token endpoint's answer"); the caller says from where.
    pub fn exceeded_by(&self, answer: &str) -> String {
        format!(
            "{answer} is longer than the {} bytes {}",
            self.bytes, self.of
        )
    }
}

/// Why an answer's body was not read whole.
#[derive(Debug)]
pub enum BodyError {
    /// It is longer than the limit: by its `Content-Length`, or as read.
    TooLong,
    Transport(reqwest::Error),
}

/// The body of `response`, read a chunk at a time and refused once it is
/// longer than `limit` bytes: an answer that never ends is stopped there.
pub async fn body_at_most(
    mut response: reqwest::Response,
    limit: u64,
) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|len| len > limit) {
        return Err(BodyError::TooLong);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Transport)? {
        if (bytes.len() + chunk.len()) as u64 > limit {
            return Err(BodyError::TooLong);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The body of `response` within `limit`, or the message that says why not:
/// `{what}: {answer} is longer than …` or the transport error after `what`.
pub async fn answer_within(
    response: reqwest::Response,
    limit: Limit,
    what: &str,
    answer: &str,
) -> Result<Vec<u8>, String> {
    body_at_most(response, limit.bytes)
        .await
        .map_err(|e| match e {
            BodyError::TooLong => format!("{what}: {}", limit.exceeded_by(answer)),
            BodyError::Transport(e) => transport_error(what, e),
        })
}

#[cfg(test)]
mod tests {
    use super::Limit;

    #[test]
    fn a_refused_answer_is_named_with_the_limit_and_what_it_bounds() {
        let limit = Limit {
            bytes: 4 << 20,
            of: "perfpipe reads of a manifest",
        };
        assert_eq!(
            limit.exceeded_by("the manifest it sent"),
            "the manifest it sent is longer than the 4194304 bytes perfpipe reads of a manifest"
        );
    }
}

/// A client configuration that accepts any server certificate (a
/// self-signed one too), checking only that the server holds the key of
/// the certificate it sent: `bench --insecure`, as vLLM's `ssl=False`.
pub fn unverified_client_config() -> rustls::ClientConfig {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(std::sync::Arc::new(AnyCertificate(provider)))
        .with_no_client_auth()
}

#[derive(Debug)]
struct AnyCertificate(std::sync::Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
