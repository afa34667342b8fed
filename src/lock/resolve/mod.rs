//! Pins over the network: image tags → digests through the OCI distribution
//! API, model revisions → commits through the Hugging Face Hub API. The only
//! part of `lock` that does I/O besides reading and writing the lockfile.
//!
//! Secrets (`HF_TOKEN`, `PERFPIPE_REGISTRY_PASSWORD`) are sent as headers and
//! never put in an error, a lockfile or a log.

mod hf;
mod image;

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::{Attrs, PinError, PinResolver};

use crate::oci::ImageRef;
use crate::tls::transport_error;

/// The Hub perfpipe asks when `HF_ENDPOINT` is not set.
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";

/// The most bytes of a Hub API answer read (a model's info, or its file
/// listing): it lists every file of the model, some 250 bytes each, so 16 MiB
/// holds some 60,000; a longer answer, or one without end, is stopped here.
pub const MAX_HUB_ANSWER: crate::tls::Limit = crate::tls::Limit {
    bytes: 16 << 20,
    of: "perfpipe reads of a Hub API answer",
};

/// Where the Hub answers and the token it is shown: `HF_ENDPOINT` and
/// `HF_TOKEN` (or the older `HUGGING_FACE_HUB_TOKEN`), as huggingface_hub reads them.
#[derive(Clone)]
pub struct HubAccess {
    pub endpoint: String,
    pub token: Option<String>,
}

impl std::fmt::Debug for HubAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("HubAccess")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl HubAccess {
    pub fn from_env() -> Self {
        Self {
            endpoint: env_var("HF_ENDPOINT")
                .unwrap_or_else(|| DEFAULT_HF_ENDPOINT.into())
                .trim_end_matches('/')
                .to_owned(),
            token: env_var("HF_TOKEN").or_else(|| env_var("HUGGING_FACE_HUB_TOKEN")),
        }
    }
}

/// A set, non-empty environment variable.
fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Resolves pins over HTTP(S), blocking the caller on the process's
/// runtime. Its client (TLS, root certificates) is made, and the runtime
/// started, at the first request: a command with nothing to ask sets up nothing.
pub struct Online {
    io: crate::tokio_runtime::Io,
    connection: OnceLock<Result<Connection, String>>,
    hub: HubAccess,
    registry_login: Option<(String, String)>,
    /// Hosts that could not be reached, with the failure: the pins they
    /// serve are not asked again in this command.
    unreachable: Mutex<BTreeMap<String, PinError>>,
}

struct Connection {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for Online {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token or the password.
        f.debug_struct("Online")
            .field("hub", &self.hub)
            .finish_non_exhaustive()
    }
}

impl Online {
    /// Reads the Hub's access ([`HubAccess`]), and `PERFPIPE_REGISTRY_USERNAME`
    /// with `PERFPIPE_REGISTRY_PASSWORD` (sent to a registry's token endpoint,
    /// e.g. `$oauthtoken` and an API key for NGC).
    pub fn from_env(io: &crate::tokio_runtime::Io) -> Self {
        Self {
            io: io.clone(),
            connection: OnceLock::new(),
            hub: HubAccess::from_env(),
            registry_login: env_var("PERFPIPE_REGISTRY_USERNAME")
                .zip(env_var("PERFPIPE_REGISTRY_PASSWORD")),
            unreachable: Mutex::default(),
        }
    }

    fn connection(&self) -> Result<&Connection, PinError> {
        let made = self.connection.get_or_init(|| {
            let client = crate::tls::client_builder()
                .timeout(Duration::from_secs(60))
                .build()
                .map_err(|e| format!("cannot set up an HTTPS client: {e}"))?;
            let runtime = self
                .io
                .handle()
                .map_err(|e| format!("cannot set up an HTTPS client: {e}"))?;
            Ok(Connection { client, runtime })
        });
        made.as_ref().map_err(|e| e.as_str().into())
    }

    /// Asks `host` with `ask`, unless it could not be reached before.
    fn ask(
        &self,
        host: &str,
        ask: impl FnOnce(&Connection) -> Result<Attrs, PinError>,
    ) -> Result<Attrs, PinError> {
        let lock = || self.unreachable.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(failed) = lock().get(host) {
            return Err(failed.clone());
        }
        let result = ask(self.connection()?);
        if let Err(
            e @ PinError {
                unreachable: Some(_),
                ..
            },
        ) = &result
        {
            lock().insert(host.to_owned(), e.clone());
        }
        result
    }
}

impl PinResolver for Online {
    fn image(&self, reference: &str) -> Result<Attrs, PinError> {
        let image = ImageRef::parse(reference)?;
        self.ask(&image.registry, |c| {
            c.runtime.block_on(image::resolve(
                &c.client,
                &image,
                self.registry_login.as_ref(),
            ))
        })
    }

    fn model(&self, repo: &str, revision: &str) -> Result<Attrs, PinError> {
        let endpoint = &self.hub.endpoint;
        self.ask(endpoint, |c| {
            c.runtime.block_on(hf::resolve(
                &c.client,
                endpoint,
                self.hub.token.as_deref(),
                repo,
                revision,
            ))
        })
    }
}

/// A failed request as a [`PinError`]: one that never reached `host` (name
/// lookup, connection, time out) marks it unreachable.
pub(crate) fn request_error(what: &str, host: &str, e: reqwest::Error) -> PinError {
    let unreachable = (e.is_connect() || e.is_timeout()).then(|| host.to_owned());
    PinError {
        message: transport_error(what, e),
        unreachable,
    }
}
