//! Names that are sha256 digests: 64 lowercase hex characters, checked
//! wherever one is read, so a digest can name a store path. One type,
//! [`Digest`], told apart by what it names (a run's key, a launch's), so
//! that one is never passed for the other. (pure)

use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

/// The sha256 of `bytes` as 64 lowercase hex characters: what a
/// [`Digest`] holds, and what a signed statement and a chart name files by.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The sha256 (64 lowercase hex) of everything `reader` gives, and its
/// length, read a block at a time: a file of any size is hashed in bounded
/// memory.
pub fn sha256_hex_of_reader(mut reader: impl std::io::Read) -> std::io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut length = 0u64;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
        length += n as u64;
    }
    Ok((hex::encode(hasher.finalize()), length))
}

/// A sha256 that text is formatted into (`write!`): a large `Debug`
/// rendering (a report's whole analysis) is hashed as it is written, never
/// held whole.
#[derive(Default)]
pub struct Sha256Writer(pub Sha256);

impl fmt::Debug for Sha256Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sha256Writer")
    }
}

impl fmt::Write for Sha256Writer {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.0.update(text.as_bytes());
        Ok(())
    }
}

/// What a [`Digest`] names: a marker type, for its type's name and messages.
pub trait Kind {
    /// The name of its type, as `Debug` shows it (`RunKey`).
    const TYPE: &'static str;
    /// What it is, in messages (`run key`).
    const WHAT: &'static str;
}

/// The sha256 of something, as 64 lowercase hex characters, kept inline:
/// a study's 10,000 run keys are made, cloned and compared on every `plan`,
/// each without an allocation of its own.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest<K> {
    /// ASCII (lowercase hex), so always UTF-8.
    hex: [u8; 64],
    kind: PhantomData<K>,
}

impl<K: Kind> Digest<K> {
    /// The digest of `bytes`.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        let mut hex = [0; 64];
        hex::encode_to_slice(Sha256::digest(bytes), &mut hex).expect("32 bytes are 64 hex digits");
        Self::new(hex)
    }

    /// Accepts only what a digest looks like, so it can name a store path.
    pub fn parse(s: &str) -> Option<Self> {
        let hex: [u8; 64] = s.as_bytes().try_into().ok()?;
        hex.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            .then(|| Self::new(hex))
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.hex).expect("a digest is hex digits")
    }

    /// The first 12 characters, as `plan` shows it.
    pub fn short(&self) -> &str {
        &self.as_str()[..12]
    }

    fn new(hex: [u8; 64]) -> Self {
        Self {
            hex,
            kind: PhantomData,
        }
    }
}

impl<K: Kind> fmt::Display for Digest<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<K: Kind> fmt::Debug for Digest<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple(K::TYPE).field(&self.as_str()).finish()
    }
}

impl<K: Kind> TryFrom<String> for Digest<K> {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text)
            .ok_or_else(|| format!("`{text}` is not a {} (64 lowercase hex)", K::WHAT))
    }
}

impl<K: Kind> Serialize for Digest<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_newtype_struct(K::TYPE, self.as_str())
    }
}

impl<'de, K: Kind> Deserialize<'de> for Digest<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(DigestVisitor(PhantomData))
    }
}

/// Reads a digest from the text as the deserializer has it (no copy of it).
struct DigestVisitor<K>(PhantomData<K>);

impl<K: Kind> serde::de::Visitor<'_> for DigestVisitor<K> {
    type Value = Digest<K>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} (64 lowercase hex)", K::WHAT)
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Digest<K>, E> {
        Digest::parse(text)
            .ok_or_else(|| E::custom(format!("`{text}` is not a {} (64 lowercase hex)", K::WHAT)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_formatted_into_a_sha256_writer_hashes_as_the_whole_text() {
        use std::fmt::Write as _;
        let runs: Vec<(u32, f64)> = (0..1000).map(|i| (i, f64::from(i) / 7.0)).collect();
        let mut writer = Sha256Writer::default();
        write!(writer, "runs {runs:?}\nend").unwrap();
        assert_eq!(
            hex::encode(writer.0.finalize()),
            sha256_hex(format!("runs {runs:?}\nend").as_bytes())
        );
    }
}
