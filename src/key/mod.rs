//! Run keys: sha256 over the canonical serialization of a run's key material. (pure)

mod args;
mod canonical;
mod cap;
mod diff;
mod material;

use crate::digest::Digest;

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

/// A run's key: the sha256 of its canonical key material, 64 lowercase hex
/// characters, checked wherever one is read, so a key can name a store path.
pub type RunKey = Digest<RunKind>;

/// What a [`RunKey`] names: a run's key material.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RunKind {}

impl crate::digest::Kind for RunKind {
    const TYPE: &'static str = "RunKey";
    const WHAT: &'static str = "run key";
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
