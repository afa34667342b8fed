//! The shared result cache: samples signed by the machine that measured
//! them, kept as OCI artifacts in a directory, on a static web server, in
//! an S3 bucket or in an OCI registry, and substituted into the store instead of measuring
//! (docs/result-cache.md). Trust comes only from the user's configuration or
//! the command line.
//!
//! - keys and the signed statement are `crate::signing`, below the store
//! - `keygen`: writes a key pair (files)
//! - `artifact`: a sample as an OCI artifact, and the checks of a pulled one (pure)
//! - `credentials`: per-cache secrets named in the user's config.toml (env, files)
//! - `location`, `remote`: where a cache is, and reading and writing it (effects)
//! - `s3`: an S3 bucket's addresses and the signature of its requests (pure
//!   but for the `AWS_*` variables a bucket's address falls back on)
//! - `lacks`: the short-lived memory of what a cache has no sample of (files)
//! - `push`, `substitute`: the workflows of `cache push` and of `run`/`plan`

mod artifact;
mod credentials;
mod keygen;
mod lacks;
mod location;
mod push;
mod remote;
mod s3;
mod substitute;
#[cfg(test)]
mod tampering;

pub use artifact::Rejected;
pub use credentials::{
    Credential, CredentialSource, CredentialSources, for_location as credential_for,
};
pub use lacks::{DEFAULT_NEGATIVE_TTL, Recall};
pub use location::Location;
pub use push::{Pushed, Vouched, push, sign};
pub use remote::Remote;
pub use substitute::{Caches, Offer, Offers, Outcome, Substituted};

use crate::signing::{KeyError, PublicKey, Refusal, TrustedKeys};
pub use keygen::{KeyPair, keygen, read_secret};

use std::path::PathBuf;

/// What can go wrong with keys and caches.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum Error {
    #[error(transparent)]
    #[diagnostic(help(
        "a public key is the line `perfpipe cache keygen` prints, e.g. `alice-1:Gq3…=`; a secret key is the file it writes"
    ))]
    Key(#[from] KeyError),
    #[error("`{}` already exists", path.display())]
    #[diagnostic(help(
        "a key is never overwritten (results signed with it would no longer verify); pick another NAME or `--dir`"
    ))]
    KeyExists { path: PathBuf },
    #[error("cannot use the key file `{}`", path.display())]
    #[diagnostic(help("`perfpipe cache keygen NAME` writes a key pair"))]
    KeyFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` does not hold a secret key written `NAME:base64` ({why})", path.display())]
    #[diagnostic(help(
        "name the `.secret` file `perfpipe cache keygen NAME` wrote; its text is never shown"
    ))]
    NotASecretKey { path: PathBuf, why: String },
    #[error("the secret key `{}` may be read by others (mode {mode:o})", path.display())]
    #[diagnostic(help(
        "anyone who can read it can sign results in your name: `chmod 600 {}`, as ssh asks of a private key",
        path.display()
    ))]
    SecretKeyReadable { path: PathBuf, mode: u32 },
    #[error("`{location}` is not a cache location: {why}")]
    #[diagnostic(help(
        "a cache is a directory, a static web server's URL (`https://host/path`, read-only), an OCI registry's repository (`oci://host/repository`) or an S3 bucket (`s3://bucket/prefix`, `?endpoint=http://host:port` for an S3-compatible server)"
    ))]
    Location { location: String, why: String },
    #[error("cache `{location}`: {message}")]
    #[diagnostic(help(
        "check that the cache is reachable and writable by you; `--no-substitute` measures without asking caches"
    ))]
    Cache { location: String, message: String },
    #[error("cache `{location}` named `{url}`, which would leave HTTPS for cleartext HTTP")]
    #[diagnostic(help(
        "perfpipe never follows a cache from HTTPS to HTTP (credentials and answers would cross the network in the clear); the registry or server is misconfigured or tampered with"
    ))]
    Downgrade { location: String, url: String },
    #[error("cache `{location}` did not {what} within {seconds} s (timed out)")]
    #[diagnostic(help(
        "the cache is slow or unreachable; try again later, or `--no-substitute` to measure without asking caches"
    ))]
    Timeout {
        location: String,
        what: String,
        seconds: u64,
    },
    #[error("the credentials for `{host}` cannot be used: {why}")]
    #[diagnostic(help(
        "under `[credentials.\"{host}\"]` in your config.toml: `username` with `password-env` (a variable's name) or `password-file`, or `token-file` alone; for an s3:// cache's temporary credentials, also `session-token-env` or `session-token-file` (docs/result-cache.md)"
    ))]
    Credentials { host: String, why: String },
    #[error(
        "cache `{location}` refused to {what} (HTTP {status}): {}",
        if *sent { format!("it did not accept the credentials of `[credentials.\"{host}\"]` in your config.toml") }
        else { format!("it wants credentials, which go under `[credentials.\"{host}\"]` in your config.toml") }
    )]
    #[diagnostic(help(
        "`username` with `password-env` or `password-file`, or `token-file` (docs/result-cache.md); check that this account may read (and, to push, write) the repository"
    ))]
    Denied {
        location: String,
        what: String,
        status: u16,
        host: String,
        sent: bool,
    },
    #[error(
        "cache `{location}` refused to {what} (HTTP {status}{}): {}",
        if code.is_empty() { String::new() } else { format!(" {code}") },
        s3::denied_because(Some(code.as_str()).filter(|c| !c.is_empty()), *from, host)
    )]
    #[diagnostic(help("{}", s3::where_keys_go(host, *from)))]
    S3Denied {
        location: String,
        what: String,
        status: u16,
        /// S3's error code (`SignatureDoesNotMatch`), or empty.
        code: String,
        host: String,
        /// Where the access key sent came from; `None`: none was sent.
        from: Option<credentials::KeyOrigin>,
    },
    #[error("cache `{location}` is a web server, read-only to perfpipe")]
    #[diagnostic(help(
        "push to the directory the web server serves, or to a registry (`oci://host/repository`)"
    ))]
    ReadOnly { location: String },
    #[error("caches are configured but no key is trusted, so no cached result could be used")]
    #[diagnostic(help(
        "add your colleagues' public keys to `public-keys` under `[trust]` in your config.toml, or pass `--trusted-key NAME:BASE64`"
    ))]
    NoTrustedKeys,
    #[error("no cache to push to")]
    #[diagnostic(help(
        "name one with `--to LOCATION`, or `push-to` under `[cache]` in your config.toml"
    ))]
    NoPushTarget,
    #[error("no secret key to sign with")]
    #[diagnostic(help(
        "`perfpipe cache keygen NAME` makes one; name its file with `--secret-key FILE` or `secret-key-file` under `[cache]` in your config.toml"
    ))]
    NoSecretKey,
    #[error("sample {sample} of `{key}` cannot be signed: {why}")]
    Unsignable {
        key: String,
        sample: String,
        why: Refusal,
    },
    #[error(transparent)]
    #[diagnostic(transparent)]
    Store(#[from] crate::store::Error),
}

use crate::error_kind::ErrorKind;
use crate::tokio_runtime::Io;

/// Keys (or samples) asked about at once, per command.
const CONCURRENCY: usize = 8;

/// The runtime a cache workflow runs its requests on (commands are not
/// async): the process's one, which starts here if nothing started it.
fn runtime(io: &Io) -> tokio::runtime::Handle {
    io.handle().expect("the runtime starts")
}

/// The caches a command asks, and those `--offline` leaves out.
#[derive(Debug)]
pub struct Configured {
    /// `None` when no cache is to be asked.
    pub caches: Option<Caches>,
    /// Web and registry caches not asked under `--offline`, to be said once.
    pub skipped_offline: Vec<Location>,
}

impl Caches {
    /// The caches and trusted keys a command uses, from the command line
    /// or the user's configuration. Under `--offline`, only directory
    /// caches (no network); the others are listed as skipped.
    pub fn configure(
        substituters: &[String],
        trusted_keys: &[String],
        offline: bool,
        recall: Recall,
        credentials: &CredentialSources,
        io: &Io,
    ) -> Result<Configured, Error> {
        let mut remotes = Vec::new();
        let mut skipped_offline = Vec::new();
        for text in substituters {
            let location = Location::parse(text)?;
            if offline && location.is_network() {
                skipped_offline.push(location);
            } else {
                let credential = credentials::for_location(credentials, &location)?;
                remotes.push(Remote::new(location).with_credential(credential));
            }
        }
        if remotes.is_empty() {
            return Ok(Configured {
                caches: None,
                skipped_offline,
            });
        }
        let keys = trusted_keys
            .iter()
            .map(|k| PublicKey::parse(k))
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err(Error::NoTrustedKeys);
        }
        Ok(Configured {
            caches: Some(Self {
                remotes,
                trusted: TrustedKeys::new(keys),
                recall,
                io: io.clone(),
            }),
            skipped_offline,
        })
    }
}

impl Error {
    /// The user's for what the user gives (keys, locations), else the environment's.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Key(_)
            | Self::KeyExists { .. }
            | Self::KeyFile { .. }
            | Self::NotASecretKey { .. }
            | Self::SecretKeyReadable { .. }
            | Self::Location { .. }
            | Self::Credentials { .. }
            | Self::Denied { .. }
            | Self::S3Denied { .. }
            | Self::ReadOnly { .. }
            | Self::NoTrustedKeys
            | Self::NoPushTarget
            | Self::NoSecretKey => ErrorKind::Usage,
            Self::Cache { .. }
            | Self::Downgrade { .. }
            | Self::Timeout { .. }
            | Self::Unsignable { .. } => ErrorKind::Environment,
            Self::Store(e) if e.is_usage() => ErrorKind::Usage,
            Self::Store(_) => ErrorKind::Environment,
        }
    }
}
