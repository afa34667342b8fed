//! Run keys: sha256 over the canonical serialization of a run's key material. (pure)

mod args;
mod canonical;
mod cap;
mod diff;
mod material;

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use args::{Flag, canonical_args, parse_flags};
pub use canonical::to_canonical_json;
pub use cap::{key_with_prompts, num_prompts};
pub use diff::{FieldChange, material_changes, material_distance};
pub use material::*;

/// Version of the key schema; bumping it changes every key on purpose.
///
/// History:
/// - 1: first schema (engine, model, runtime, canonical serve args, env, GPU,
///   builtin harness options, workload).
pub const KEY_SCHEMA_VERSION: u32 = 1;

/// A run's key: 64 lowercase hex characters, checked wherever one is read,
/// so a key can name a store path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String")]
pub struct RunKey(String);

impl TryFrom<String> for RunKey {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text).ok_or_else(|| format!("`{text}` is not a run key (64 lowercase hex)"))
    }
}

impl RunKey {
    /// The key of some key material, and the exact bytes it was computed over.
    pub fn of(material: &KeyMaterial) -> (RunKey, String) {
        let value = serde_json::to_value(material).expect("key material is plain data");
        let canonical = to_canonical_json(&value);
        (Self::of_canonical(&canonical), canonical)
    }

    pub fn of_canonical(canonical: &str) -> RunKey {
        Self::of_bytes(canonical.as_bytes())
    }

    /// The key whose key material is `bytes` (e.g. a stored `inputs.json`,
    /// which may not even be UTF-8 once damaged).
    pub fn of_bytes(bytes: &[u8]) -> RunKey {
        RunKey(hex::encode(Sha256::digest(bytes)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_64_lowercase_hex_is_a_key() {
        let key = RunKey::of_canonical("{}");
        assert_eq!(RunKey::parse(key.as_str()), Some(key.clone()));
        let hex = key.as_str();
        for text in [
            String::new(),
            "..".into(),
            hex.to_uppercase(),
            format!("../{}", &hex[3..]),
            format!("{}/", &hex[..63]),
            hex[..63].into(),
            format!("{hex}0"),
            format!("{}g", &hex[..63]),
            format!("{}\0", &hex[..63]),
            format!("{}é", &hex[..62]),
        ] {
            assert_eq!(
                RunKey::parse(&text),
                None,
                "{text:?} must not name a store path"
            );
            let json = serde_json::to_string(&text).unwrap();
            assert!(serde_json::from_str::<RunKey>(&json).is_err(), "{text:?}");
        }
        let json = serde_json::to_string(&key).unwrap();
        assert_eq!(json, format!("\"{hex}\""));
        assert_eq!(serde_json::from_str::<RunKey>(&json).unwrap(), key);
    }
}
