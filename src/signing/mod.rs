//! Signed samples, below the store that keeps them and the cache that
//! shares them: ed25519 keys and the canonical statement a signature
//! covers. (pure)
//!
//! - `keys`: ed25519 keys written `NAME:base64`
//! - `statement`: the canonical statement a signature covers, one per sample

pub mod keys;
pub mod statement;

pub use keys::{KeyError, PublicKey, SecretKey, TrustedKeys};
pub use statement::{Refusal, STATEMENT_VERSION, SampleFiles, Signed, sample_digest};
