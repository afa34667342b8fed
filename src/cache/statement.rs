//! The canonical statement a signature covers, one per sample, in the manner
//! of a Nix narinfo's fingerprint:
//!
//! ```text
//! perfpipe-sample-1;<key>;<sha256 of result.json>;<log digests, sorted, comma-separated>;<provenance digest>
//! ```
//!
//! Digests are lowercase hex sha256; the provenance digest is that of the
//! canonical JSON of `result.json`'s `provenance`. The key is the sha256 of
//! the key material, so the statement pins every byte of the sample. (pure)

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::keys::{PublicKey, SecretKey, TrustedKeys};
use crate::key::RunKey;

pub const STATEMENT_VERSION: &str = "perfpipe-sample-1";

/// A sample's files, as the statement covers them.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleFiles {
    pub key: RunKey,
    pub result: Vec<u8>,
    /// `logs/<name>` and its bytes.
    pub logs: Vec<(String, Vec<u8>)>,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl SampleFiles {
    /// The statement of these files; `None` when `result.json` is not JSON
    /// with a `provenance` (no sample).
    pub fn statement(&self) -> Option<String> {
        let result: serde_json::Value = serde_json::from_slice(&self.result).ok()?;
        let provenance = result.get("provenance")?;
        let provenance = crate::key::to_canonical_json(provenance);
        let mut logs: Vec<String> = self.logs.iter().map(|(_, b)| sha256_hex(b)).collect();
        logs.sort();
        Some(format!(
            "{STATEMENT_VERSION};{};{};{};{}",
            self.key,
            sha256_hex(&self.result),
            logs.join(","),
            sha256_hex(provenance.as_bytes())
        ))
    }
}

/// The sample's digest: the sha256 of its statement. Two machines' samples
/// of a key differ in it (their provenance alone differs), so it names them
/// apart in a cache's tags.
pub fn sample_digest(statement: &str) -> String {
    sha256_hex(statement.as_bytes())
}

/// `signature.json` beside a substituted sample's `result.json`, and the
/// signature a cache's manifest carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signed {
    pub statement: String,
    /// The signer's public key, `NAME:base64`.
    pub signer: String,
    /// base64 ed25519 signature of `statement`.
    pub signature: String,
}

/// Why a signed sample is not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("its signer `{0}` is not a public key written `NAME:base64`")]
    BadSigner(String),
    #[error("signed by `{0}`, which is not among the trusted keys")]
    Untrusted(String),
    #[error("the signature does not verify under `{0}`'s key")]
    BadSignature(String),
    #[error("its files are not the ones signed (the statement signed differs from theirs)")]
    NotTheSigned,
    #[error("its result.json is not a result with a provenance")]
    NoProvenance,
}

impl Signed {
    pub fn sign(files: &SampleFiles, key: &SecretKey) -> Option<Self> {
        let statement = files.statement()?;
        Some(Self {
            signature: key.sign(&statement),
            signer: key.public().to_string(),
            statement,
        })
    }

    /// The signer's name, for reports.
    pub fn signer_name(&self) -> &str {
        self.signer.split(':').next().unwrap_or_default()
    }

    /// Whether the signature covers exactly `files` and verifies under the
    /// key it names (trusted or not: `store verify` rechecks this).
    pub fn check(&self, files: &SampleFiles) -> Result<PublicKey, Refusal> {
        let signer =
            PublicKey::parse(&self.signer).map_err(|_| Refusal::BadSigner(self.signer.clone()))?;
        let statement = files.statement().ok_or(Refusal::NoProvenance)?;
        if statement != self.statement {
            return Err(Refusal::NotTheSigned);
        }
        if !signer.verifies(&self.statement, &self.signature) {
            return Err(Refusal::BadSignature(signer.name));
        }
        Ok(signer)
    }

    /// [`Signed::check`], and the signer is trusted.
    pub fn check_trusted(&self, files: &SampleFiles, trusted: &TrustedKeys) -> Result<(), Refusal> {
        let signer =
            PublicKey::parse(&self.signer).map_err(|_| Refusal::BadSigner(self.signer.clone()))?;
        if !trusted.trusts(&signer) {
            return Err(Refusal::Untrusted(signer.name));
        }
        self.check(files).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> SampleFiles {
        SampleFiles {
            key: RunKey::of_canonical("{}"),
            result: br#"{"provenance": {"kind": "simulated", "host": "a"}, "outcome": 1}"#.to_vec(),
            logs: vec![
                ("engine.log".into(), b"engine".to_vec()),
                ("harness.log".into(), b"harness".to_vec()),
            ],
        }
    }

    #[test]
    fn the_statement_is_the_documented_line() {
        let s = files().statement().unwrap();
        let parts: Vec<&str> = s.split(';').collect();
        assert_eq!(parts[0], "perfpipe-sample-1");
        assert_eq!(parts[1], RunKey::of_canonical("{}").as_str());
        assert_eq!(parts[2], sha256_hex(&files().result));
        let mut logs = [sha256_hex(b"engine"), sha256_hex(b"harness")];
        logs.sort();
        assert_eq!(parts[3], logs.join(","));
        assert_eq!(
            parts[4],
            sha256_hex(br#"{"host":"a","kind":"simulated"}"#),
            "the canonical JSON of the provenance"
        );
        let mut reordered = files();
        reordered.logs.reverse();
        assert_eq!(
            reordered.statement().unwrap(),
            s,
            "log order does not matter"
        );
    }

    #[test]
    fn a_change_to_any_file_breaks_the_signature() {
        let alice = SecretKey::generate("alice").unwrap();
        let trusted = TrustedKeys::new(vec![alice.public()]);
        let signed = Signed::sign(&files(), &alice).unwrap();
        assert_eq!(signed.check_trusted(&files(), &trusted), Ok(()));
        assert_eq!(signed.signer_name(), "alice");
        let mut changed = files();
        changed.result[20] ^= 1;
        assert_eq!(signed.check(&changed), Err(Refusal::NotTheSigned));
        let mut log = files();
        log.logs[0].1.push(b'!');
        assert_eq!(signed.check(&log), Err(Refusal::NotTheSigned));
        let forged = Signed {
            signature: SecretKey::generate("alice")
                .unwrap()
                .sign(&signed.statement),
            ..signed.clone()
        };
        assert_eq!(
            forged.check(&files()),
            Err(Refusal::BadSignature("alice".into()))
        );
        let bob = SecretKey::generate("bob").unwrap();
        let by_bob = Signed::sign(&files(), &bob).unwrap();
        assert_eq!(
            by_bob.check_trusted(&files(), &trusted),
            Err(Refusal::Untrusted("bob".into()))
        );
    }
}
