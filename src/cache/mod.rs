//! The shared result cache: samples signed by the machine that measured
//! them, kept as OCI artifacts in a directory, on a static web server or in
//! an OCI registry, and substituted into the store instead of measuring
//! (docs/result-cache.md). Trust comes only from the user's configuration or
//! the command line.
//!
//! - `keys`: ed25519 keys written `NAME:base64` (pure)
//! - `statement`: the canonical statement a signature covers (pure)
//! - `keygen`: writes a key pair (files)

mod keygen;
mod keys;
mod statement;

pub use keygen::{KeyPair, keygen, read_secret};
pub use keys::{KeyError, PublicKey, SecretKey, TrustedKeys};
pub use statement::{Refusal, STATEMENT_VERSION, SampleFiles, Signed, sample_digest, sha256_hex};

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
}

impl Error {
    /// 2 for what the user gives (keys, locations), 1 for the environment.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Key(_) | Self::KeyExists { .. } | Self::KeyFile { .. } => crate::exit_code::USAGE,
        }
    }
}
