//! The canonical statement a signature covers, one per sample, in the manner
//! of a Nix narinfo's fingerprint:
//!
//! ```text
//! perfpipe-sample-2;<key>;<provenance digest>;result.json=<sha256>,logs/<name>=<sha256>,…
//! ```
//!
//! Every file of the sample is named with its path in the sample and its
//! digest, sorted by path, so a signature covers which bytes are which file
//! (an engine log passed off as the harness log no longer verifies). Digests
//! are lowercase hex sha256; the provenance digest is that of the canonical
//! JSON of `result.json`'s `provenance`. The key is the sha256 of the key
//! material, so the statement pins every byte of the sample and its layout.
//! Log names are refused unless plain (`[A-Za-z0-9._-]`, not starting with a
//! dot, at most [`MAX_LOG_NAME`] bytes) and distinct, so the list has one
//! reading and every name can be a file in any store. (pure)

use serde::{Deserialize, Serialize};

use super::keys::{PublicKey, SecretKey, TrustedKeys};
use crate::digest::sha256_hex;
use crate::key::RunKey;

pub const STATEMENT_VERSION: &str = "perfpipe-sample-2";

/// Statements of this prefix but another version are perfpipe's own older
/// formats: refused with what to do rather than as a forgery.
const STATEMENT_FAMILY: &str = "perfpipe-sample-";

/// The longest log name signed (far below any file system's name limit).
pub const MAX_LOG_NAME: usize = 128;

/// The path of the result in a sample (and its layer's title in a cache).
pub const RESULT_PATH: &str = "result.json";

/// A sample's files, as the statement covers them.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleFiles {
    pub key: RunKey,
    pub result: Vec<u8>,
    /// `logs/<name>` and its bytes.
    pub logs: Vec<(String, Vec<u8>)>,
}

/// The path of the log `name` in a sample (and its layer's title in a cache).
pub fn log_path(name: &str) -> String {
    format!("logs/{name}")
}

/// Whether `name` may be the name of a signed log: plain characters only,
/// so that it is a file name everywhere and never a separator, a path or
/// markup.
fn is_plain_log_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_LOG_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `text` as a message may quote it: escaped, and cut after 64 characters.
fn shown(text: &str) -> String {
    let mut cut: String = text.chars().take(64).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut.escape_default().to_string()
}

/// The statement's list of files: `path=digest` of every file (paths are
/// `result.json` and `logs/<name>`), sorted by path. Refuses a bad or
/// repeated path, and a list without exactly one result.
pub fn file_list<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<String, Refusal> {
    let mut listed = std::collections::BTreeMap::new();
    for (path, digest) in files {
        let plain_log = path.strip_prefix("logs/").is_some_and(is_plain_log_name);
        if path != RESULT_PATH && !plain_log {
            return Err(Refusal::BadName(shown(path)));
        }
        if listed.insert(path, digest).is_some() {
            return Err(Refusal::RepeatedName(shown(path)));
        }
    }
    if !listed.contains_key(RESULT_PATH) {
        return Err(Refusal::NoResult);
    }
    Ok(listed
        .iter()
        .map(|(path, digest)| format!("{path}={digest}"))
        .collect::<Vec<_>>()
        .join(","))
}

impl SampleFiles {
    /// The statement of these files; refused when a log's name is not
    /// plain or repeats, or `result.json` is not JSON with a `provenance`.
    pub fn statement(&self) -> Result<String, Refusal> {
        let logs: Vec<(String, String)> = self
            .logs
            .iter()
            .map(|(name, bytes)| (name.clone(), sha256_hex(bytes)))
            .collect();
        statement_of(&self.key, &self.result, &logs)
    }
}

/// The statement of a sample of `key` whose `result.json` is `result` and
/// whose logs are `(name, sha256 hex)`: what [`SampleFiles::statement`]
/// says, for a caller that hashed large logs as a stream.
pub fn statement_of(
    key: &RunKey,
    result: &[u8],
    logs: &[(String, String)],
) -> Result<String, Refusal> {
    let parsed: serde_json::Value =
        serde_json::from_slice(result).map_err(|_| Refusal::NoProvenance)?;
    let provenance = parsed.get("provenance").ok_or(Refusal::NoProvenance)?;
    let provenance = crate::key::to_canonical_json(provenance);
    let paths: Vec<(String, &str)> = logs
        .iter()
        .map(|(name, digest)| (log_path(name), digest.as_str()))
        .collect();
    let result_digest = sha256_hex(result);
    let files = file_list(
        std::iter::once((RESULT_PATH, result_digest.as_str()))
            .chain(paths.iter().map(|(p, d)| (p.as_str(), *d))),
    )?;
    Ok(format!(
        "{STATEMENT_VERSION};{key};{};{files}",
        sha256_hex(provenance.as_bytes()),
    ))
}

/// The key and the list of files a statement names, when it is in this
/// version's format; refused when it is in an older one.
pub fn statement_files(statement: &str) -> Result<(&str, &str), Refusal> {
    let fields: Vec<&str> = statement.split(';').collect();
    match fields.as_slice() {
        [STATEMENT_VERSION, key, _provenance, files] => Ok((key, files)),
        [version, ..] if version.starts_with(STATEMENT_FAMILY) => {
            Err(Refusal::OldFormat(shown(version)))
        }
        _ => Err(Refusal::NotTheSigned),
    }
}
/// The sample's digest: the sha256 of its statement, which identifies the
/// sample: a store holds one sample per statement, however many tags or
/// caches offer it. Two machines' samples of a key differ in it (their
/// provenance alone differs), so it names them apart in a cache's tags.
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
    #[error("signed by {0}, none of them among the trusted keys")]
    NoneTrusted(String),
    #[error("it carries no signature")]
    Unsigned,
    #[error("the signature does not verify under `{0}`'s key")]
    BadSignature(String),
    #[error("its files are not the ones signed (the statement signed differs from theirs)")]
    NotTheSigned,
    #[error(
        "its statement is in the format `{0}`, which does not name its files; this perfpipe uses only `{STATEMENT_VERSION}` (pushing the sample again signs it so)"
    )]
    OldFormat(String),
    #[error(
        "it has a file named `{0}`: a sample holds `result.json` and `logs/NAME`, NAME of letters, digits, `.`, `_` and `-` (at most {MAX_LOG_NAME}, not starting with `.`)"
    )]
    BadName(String),
    #[error("it names the file `{0}` twice")]
    RepeatedName(String),
    #[error("it has no result.json")]
    NoResult,
    #[error("its result.json is not a result with a provenance")]
    NoProvenance,
}

impl Signed {
    /// Signs `files`; refused when they have no statement (a bad or
    /// repeated log name, no provenance).
    pub fn sign(files: &SampleFiles, key: &SecretKey) -> Result<Self, Refusal> {
        Ok(Self::over(files.statement()?, key))
    }

    /// `key`'s signature over `statement` (made from files, or one that
    /// another trusted signature vouches for: `cache sign`).
    pub fn over(statement: String, key: &SecretKey) -> Self {
        Self {
            signature: key.sign(&statement),
            signer: key.public().to_string(),
            statement,
        }
    }

    /// The signer's name, for reports.
    pub fn signer_name(&self) -> &str {
        self.signer.split(':').next().unwrap_or_default()
    }

    /// The signer's key, when the statement is in this version's format and
    /// the signature verifies under it (trusted or not): the checks that
    /// need no file, made before any is fetched.
    pub fn check_signature(&self) -> Result<PublicKey, Refusal> {
        let signer =
            PublicKey::parse(&self.signer).map_err(|_| Refusal::BadSigner(self.signer.clone()))?;
        statement_files(&self.statement)?;
        if !signer.verifies(&self.statement, &self.signature) {
            return Err(Refusal::BadSignature(signer.name));
        }
        Ok(signer)
    }

    /// Whether the signature covers exactly `files` and verifies under the
    /// key it names (trusted or not: whoever reads a signed sample from the
    /// store rechecks this).
    pub fn check(&self, files: &SampleFiles) -> Result<PublicKey, Refusal> {
        self.check_statement(&files.statement())
    }

    /// [`Signed::check`] of files whose statement is `statement` (computed
    /// by whoever hashed them).
    pub fn check_statement(
        &self,
        statement: &Result<String, Refusal>,
    ) -> Result<PublicKey, Refusal> {
        let signer = self.check_signature()?;
        if *statement.as_ref().map_err(Clone::clone)? != self.statement {
            return Err(Refusal::NotTheSigned);
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
        assert_eq!(parts[0], "perfpipe-sample-2");
        assert_eq!(parts[1], RunKey::of_canonical("{}").as_str());
        assert_eq!(
            parts[2],
            sha256_hex(br#"{"host":"a","kind":"simulated"}"#),
            "the canonical JSON of the provenance"
        );
        assert_eq!(
            parts[3],
            format!(
                "logs/engine.log={},logs/harness.log={},result.json={}",
                sha256_hex(b"engine"),
                sha256_hex(b"harness"),
                sha256_hex(&files().result)
            ),
            "every file with its path, sorted by path"
        );
        assert_eq!(statement_files(&s), Ok((parts[1], parts[3])));
        let mut reordered = files();
        reordered.logs.reverse();
        assert_eq!(
            reordered.statement().unwrap(),
            s,
            "log order does not matter"
        );
    }

    #[test]
    fn swapped_logs_are_not_the_files_signed() {
        let alice = SecretKey::generate("alice").unwrap();
        let signed = Signed::sign(&files(), &alice).unwrap();
        let mut swapped = files();
        swapped.logs[0].0 = "harness.log".into();
        swapped.logs[1].0 = "engine.log".into();
        assert_eq!(signed.check(&swapped), Err(Refusal::NotTheSigned));
    }

    #[test]
    fn repeated_or_unplain_log_names_have_no_statement() {
        let mut repeated = files();
        repeated.logs[1].0 = "engine.log".into();
        assert_eq!(
            repeated.statement(),
            Err(Refusal::RepeatedName("logs/engine.log".into()))
        );
        for bad in [
            String::new(),
            ".hidden".into(),
            "a/b".into(),
            "a\0b".into(),
            "é.log".into(),
            "a b".into(),
            "x;y".into(),
            "x=y".into(),
            "x,y".into(),
            "a".repeat(MAX_LOG_NAME + 1),
        ] {
            let mut named = files();
            named.logs[0].0 = bad.clone();
            assert!(
                matches!(named.statement(), Err(Refusal::BadName(_))),
                "{bad:?}"
            );
        }
        let mut longest = files();
        longest.logs[0].0 = "a".repeat(MAX_LOG_NAME);
        assert!(longest.statement().is_ok());
        // What a refusal quotes is escaped and short.
        let mut nul = files();
        nul.logs[0].0 = format!("x\0{}", "x".repeat(500));
        let why = nul.statement().unwrap_err().to_string();
        assert!(!why.contains('\0') && why.len() < 400, "{why}");
    }

    #[test]
    fn an_older_format_is_refused_as_such() {
        let alice = SecretKey::generate("alice").unwrap();
        let statement = "perfpipe-sample-1;k;r;l;p".to_owned();
        let old = Signed {
            signature: alice.sign(&statement),
            signer: alice.public().to_string(),
            statement,
        };
        assert_eq!(
            old.check(&files()),
            Err(Refusal::OldFormat("perfpipe-sample-1".into()))
        );
        assert!(
            old.check_signature()
                .unwrap_err()
                .to_string()
                .contains("pushing the sample again")
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
