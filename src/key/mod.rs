//! Run keys: sha256 over the canonical serialization of a run's key material. (pure)

mod args;
mod canonical;
mod diff;
mod material;

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use args::{Flag, canonical_args, parse_flags};
pub use canonical::to_canonical_json;
pub use diff::{FieldChange, material_changes};
pub use material::*;

/// Version of the key schema; bumping it changes every key on purpose.
///
/// History:
/// - 1: first schema (engine, model, runtime, canonical serve args, env, GPU,
///   builtin harness options, workload).
pub const KEY_SCHEMA_VERSION: u32 = 1;

/// A run's key: 64 lowercase hex characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RunKey(String);

impl RunKey {
    /// The key of some key material, and the exact bytes it was computed over.
    pub fn of(material: &KeyMaterial) -> (RunKey, String) {
        let value = serde_json::to_value(material).expect("key material is plain data");
        let canonical = to_canonical_json(&value);
        (Self::of_canonical(&canonical), canonical)
    }

    pub fn of_canonical(canonical: &str) -> RunKey {
        RunKey(hex::encode(Sha256::digest(canonical.as_bytes())))
    }

    /// Accepts only what a key looks like, so a key can name a store path.
    pub fn parse(s: &str) -> Option<RunKey> {
        (s.len() == 64
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        .then(|| RunKey(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 12 characters, as `plan` shows it.
    pub fn short(&self) -> &str {
        &self.0[..12]
    }
}

impl fmt::Display for RunKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
