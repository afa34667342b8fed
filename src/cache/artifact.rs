//! A sample as an OCI artifact, and a run key's index of its samples with
//! their signatures (the layout is at the top of `location`): the key
//! material as the sample's config, the result and each log as layers, the
//! statement in its annotations; signatures only in the key's index, so the
//! sample's bytes are the same whoever signs it. Pulled artifacts are
//! checked here, blob by blob, before anything is stored. (pure)

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;
use crate::key::RunKey;
use crate::signing::keys::{PublicKey, TrustedKeys};
use crate::signing::statement::{
    RESULT_PATH, Refusal, Signed, file_list, log_path, statement_files, statement_of,
};
use crate::store::StoredFiles;

/// The manifest type of a sample: an OCI image manifest.
pub const MANIFEST_TYPE: &str = crate::oci::OCI_MANIFEST;
/// The manifest type of a key's index: an OCI image index.
pub const INDEX_TYPE: &str = "application/vnd.oci.image.index.v1+json";
pub const ARTIFACT_TYPE: &str = "application/vnd.perfpipe.sample.v2";
const SAMPLES_TYPE: &str = "application/vnd.perfpipe.samples.v1";
const MATERIAL_TYPE: &str = "application/vnd.perfpipe.key-material.v1+json";
const RESULT_TYPE: &str = "application/vnd.perfpipe.result.v1+json";
const LOG_TYPE: &str = "application/vnd.perfpipe.log.v1";
const TITLE: &str = "org.opencontainers.image.title";
const STATEMENT: &str = "dev.perfpipe.statement";
const SIGNATURES: &str = "dev.perfpipe.signatures";
const KEY: &str = "dev.perfpipe.key";
/// `success` (a result with numbers) or `failure`: what `plan` counts a
/// sample as before fetching its result, which `run` checks it against.
const OUTCOME: &str = "dev.perfpipe.outcome";

type Annotations = BTreeMap<String, String>;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: u32,
    pub media_type: String,
    #[serde(default)]
    pub artifact_type: String,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    #[serde(default)]
    pub annotations: Annotations,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub digest: String,
    pub size: u64,
    /// The content itself, base64 (OCI 1.1's embedded data): a key's index
    /// carries each sample's manifest, so one read answers everything
    /// `plan` checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: Annotations,
}

impl Descriptor {
    fn of(media_type: &str, digest_hex: &str, size: u64, title: Option<&str>) -> Self {
        Self {
            media_type: media_type.to_owned(),
            artifact_type: None,
            digest: format!("sha256:{digest_hex}"),
            size,
            data: None,
            annotations: title
                .map(|t| [(TITLE.to_owned(), t.to_owned())].into())
                .unwrap_or_default(),
        }
    }

    pub fn title(&self) -> Option<&str> {
        self.annotations.get(TITLE).map(String::as_str)
    }
}

/// The sha256 hex a `sha256:<hex>` digest names, if it is one.
pub fn digest_hex(digest: &str) -> Option<&str> {
    let hex = digest.strip_prefix("sha256:")?;
    (hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then_some(hex)
}

/// The most bytes a pulled sample's blobs may declare together (its key
/// material, result and logs), checked before any is fetched; each blob is
/// then read up to its declared size and no further (docs/result-cache.md).
pub const MAX_SAMPLE_BYTES: u64 = 256 << 20;

/// One signature of a sample's statement, as a key's index keeps them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// The signer's public key, `NAME:base64`.
    pub signer: String,
    /// base64 ed25519 signature of the statement.
    pub signature: String,
}

impl From<&Signed> for Signature {
    fn from(signed: &Signed) -> Self {
        Self {
            signer: signed.signer.clone(),
            signature: signed.signature.clone(),
        }
    }
}

/// The signatures an index's entry carries (none when unreadable).
fn signatures(entry: &Descriptor) -> Vec<Signature> {
    entry
        .annotations
        .get(SIGNATURES)
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

/// Where a blob to push is: in memory (the key material) or a store file,
/// streamed from there.
#[derive(Debug, Clone)]
pub enum Source {
    Bytes(Vec<u8>),
    File(PathBuf),
}

#[derive(Debug, Clone)]
pub struct Blob {
    /// `sha256:<hex>`.
    pub digest: String,
    pub size: u64,
    pub source: Source,
}

/// A sample ready to push: its manifest (and digest) and its blobs.
#[derive(Debug)]
pub struct Artifact {
    pub manifest: Vec<u8>,
    pub blobs: Vec<Blob>,
}

/// Whether a result is a success, as a manifest says it (`dev.perfpipe.outcome`).
fn outcome_word(success: bool) -> &'static str {
    if success { "success" } else { "failure" }
}

/// The signer-independent artifact of a stored sample with `statement`,
/// a success (with numbers) or not.
pub fn build(material: &str, files: &StoredFiles, statement: &str, success: bool) -> Artifact {
    let material_hex = sha256_hex(material.as_bytes());
    let result_hex = sha256_hex(&files.result);
    let mut blobs = vec![
        Blob {
            digest: format!("sha256:{material_hex}"),
            size: material.len() as u64,
            source: Source::Bytes(material.as_bytes().to_vec()),
        },
        Blob {
            digest: format!("sha256:{result_hex}"),
            size: files.result.len() as u64,
            source: Source::Bytes(files.result.clone()),
        },
    ];
    let mut layers = vec![Descriptor::of(
        RESULT_TYPE,
        &result_hex,
        files.result.len() as u64,
        Some(RESULT_PATH),
    )];
    for log in &files.logs {
        let title = log_path(&log.name);
        layers.push(Descriptor::of(
            LOG_TYPE,
            &log.digest,
            log.size,
            Some(&title),
        ));
        blobs.push(Blob {
            digest: format!("sha256:{}", log.digest),
            size: log.size,
            source: Source::File(log.path.clone()),
        });
    }
    let manifest = Manifest {
        schema_version: 2,
        media_type: MANIFEST_TYPE.into(),
        artifact_type: ARTIFACT_TYPE.into(),
        config: Descriptor::of(MATERIAL_TYPE, &material_hex, material.len() as u64, None),
        layers,
        annotations: [
            (STATEMENT.to_owned(), statement.to_owned()),
            (OUTCOME.to_owned(), outcome_word(success).to_owned()),
        ]
        .into(),
    };
    Artifact {
        manifest: serde_json::to_vec_pretty(&manifest).expect("a manifest is plain data"),
        blobs,
    }
}

/// A run key's index: its samples' manifests (embedded) and signatures.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    pub schema_version: u32,
    pub media_type: String,
    #[serde(default)]
    pub artifact_type: String,
    #[serde(default)]
    pub manifests: Vec<Descriptor>,
    #[serde(default)]
    pub annotations: Annotations,
}

/// What adding a signed sample to an index changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The sample was not there: its blobs and manifest must be uploaded.
    Sample,
    /// The sample was there without this signature.
    Signature,
    Nothing,
}

impl Index {
    pub fn new(key: &RunKey) -> Self {
        Self {
            schema_version: 2,
            media_type: INDEX_TYPE.into(),
            artifact_type: SAMPLES_TYPE.into(),
            manifests: Vec::new(),
            annotations: [(KEY.to_owned(), key.to_string())].into(),
        }
    }

    /// The index a cache holds for `key`; refused when it is not one.
    pub fn parse(key: &RunKey, bytes: &[u8]) -> Result<Self, Rejected> {
        let index: Self = serde_json::from_slice(bytes)
            .map_err(|e| Rejected::NotASample(format!("its index: {e}")))?;
        if index.artifact_type != SAMPLES_TYPE {
            return Err(Rejected::NotASample(format!(
                "an index of artifact type `{}`",
                index.artifact_type
            )));
        }
        if index.annotations.get(KEY).map(String::as_str) != Some(key.as_str()) {
            return Err(Rejected::NotASample("the index of another key".into()));
        }
        Ok(index)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("an index is plain data")
    }

    /// Adds `signature` to the sample whose manifest is `manifest`, and the
    /// sample when the index lacks it.
    pub fn add(&mut self, manifest: &[u8], signature: Signature) -> Change {
        let digest = format!("sha256:{}", sha256_hex(manifest));
        if self.manifests.iter().any(|m| m.digest == digest) {
            return self.add_signature(&digest, signature);
        }
        let mut entry = Descriptor {
            media_type: MANIFEST_TYPE.into(),
            artifact_type: Some(ARTIFACT_TYPE.into()),
            digest,
            size: manifest.len() as u64,
            data: Some(base64::engine::general_purpose::STANDARD.encode(manifest)),
            annotations: Annotations::new(),
        };
        set_signatures(&mut entry, &[signature]);
        self.manifests.push(entry);
        Change::Sample
    }

    /// Adds `signature` to the sample `digest` (`sha256:<hex>` of its
    /// manifest) the index holds; nothing when it lacks it or has it so.
    pub fn add_signature(&mut self, digest: &str, signature: Signature) -> Change {
        let Some(entry) = self.manifests.iter_mut().find(|m| m.digest == digest) else {
            return Change::Nothing;
        };
        let mut held = signatures(entry);
        if held.contains(&signature) {
            return Change::Nothing;
        }
        held.push(signature);
        set_signatures(entry, &held);
        Change::Signature
    }

    /// Whether the index holds the sample `digest`.
    pub fn holds(&self, digest: &str) -> bool {
        self.manifests.iter().any(|m| m.digest == digest)
    }

    /// Whether the sample `digest` (`sha256:<hex>` of its manifest) is held
    /// with a signature by `signer` (`NAME:base64`).
    pub fn signed_by(&self, digest: &str, signer: &str) -> bool {
        self.manifests
            .iter()
            .filter(|m| m.digest == digest)
            .any(|m| signatures(m).iter().any(|s| s.signer == signer))
    }
}

fn set_signatures(entry: &mut Descriptor, signatures: &[Signature]) {
    entry.annotations.insert(
        SIGNATURES.to_owned(),
        serde_json::to_string(signatures).expect("signatures are plain data"),
    );
}

/// Why a pulled sample is not stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("its manifest is not a perfpipe sample ({0})")]
    NotASample(String),
    #[error("its key material hashes to `{got}`, not to the run's key")]
    MaterialNotKey { got: String },
    #[error("the blob `{name}` does not match its digest (it hashes to sha256:{got})")]
    BlobMismatch { name: String, got: String },
    #[error(
        "its blobs declare {declared} bytes, more than the {MAX_SAMPLE_BYTES} perfpipe fetches for a sample"
    )]
    TooLarge { declared: u64 },
    #[error("its result is not a result of the run ({0})")]
    BadResult(String),
    #[error(transparent)]
    Signature(#[from] Refusal),
}

/// What a manifest says must be fetched, checked before any blob is, and
/// the trusted signature that vouches for it.
#[derive(Debug, Clone)]
pub struct Wanted {
    pub manifest: Manifest,
    pub signed: Signed,
    /// Whether its result is a success, as its manifest says (checked
    /// against the result once fetched).
    pub success: bool,
}

/// The sample an index's `entry` names, checked as far as it can be without
/// a blob: its embedded manifest matches its digest, one of its signatures
/// is by a trusted key and verifies over its statement, which is in this
/// version's format and names `key` and exactly the manifest's files.
pub fn parse(key: &RunKey, entry: &Descriptor, trusted: &TrustedKeys) -> Result<Wanted, Rejected> {
    let bytes = entry
        .data
        .as_deref()
        .and_then(|data| base64::engine::general_purpose::STANDARD.decode(data).ok())
        .ok_or_else(|| Rejected::NotASample("an index entry without its manifest".into()))?;
    if format!("sha256:{}", sha256_hex(&bytes)) != entry.digest {
        return Err(Rejected::NotASample(
            "an index entry whose manifest does not match its digest".into(),
        ));
    }
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| Rejected::NotASample(e.to_string()))?;
    if manifest.artifact_type != ARTIFACT_TYPE {
        return Err(Rejected::NotASample(format!(
            "artifact type `{}`",
            manifest.artifact_type
        )));
    }
    let statement = manifest
        .annotations
        .get(STATEMENT)
        .cloned()
        .ok_or_else(|| Rejected::NotASample(format!("no `{STATEMENT}` annotation")))?;
    let success = match manifest.annotations.get(OUTCOME).map(String::as_str) {
        Some("success") => true,
        Some("failure") => false,
        _ => {
            return Err(Rejected::NotASample(format!(
                "no `{OUTCOME}` annotation of `success` or `failure`"
            )));
        }
    };
    // The cheap refusals first, before a byte of the blobs is fetched.
    let signed = trusted_signature(&statement, &signatures(entry), trusted)?;
    if manifest.config.digest != format!("sha256:{key}") {
        return Err(Rejected::MaterialNotKey {
            got: manifest.config.digest.clone(),
        });
    }
    let mut declared = 0u64;
    for layer in std::iter::once(&manifest.config).chain(&manifest.layers) {
        if digest_hex(&layer.digest).is_none() {
            return Err(Rejected::NotASample(format!("digest `{}`", layer.digest)));
        }
        declared = declared.saturating_add(layer.size);
    }
    if declared > MAX_SAMPLE_BYTES {
        return Err(Rejected::TooLarge { declared });
    }
    if manifest.layers.iter().any(|layer| layer.title().is_none()) {
        return Err(Rejected::NotASample("a layer without a title".into()));
    }
    // The files the layers name are the files signed, by path and digest.
    let listed = file_list(manifest.layers.iter().map(|layer| {
        (
            layer.title().unwrap_or_default(),
            digest_hex(&layer.digest).unwrap_or_default(),
        )
    }))?;
    if statement_files(&statement)? != (key.as_str(), listed.as_str()) {
        return Err(Refusal::NotTheSigned.into());
    }
    Ok(Wanted {
        manifest,
        signed,
        success,
    })
}

/// The statement an index's entry carries, unchecked (to pass over a
/// sample a store holds without checking it again).
pub fn entry_statement(entry: &Descriptor) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(entry.data.as_deref()?)
        .ok()?;
    let manifest: Manifest = serde_json::from_slice(&bytes).ok()?;
    manifest.annotations.get(STATEMENT).cloned()
}

/// The first of `signatures` by a trusted key that verifies over
/// `statement` (a statement in an older format is refused as such);
/// otherwise why none is used: the trusted signer whose signature fails, or
/// every signer, none trusted.
fn trusted_signature(
    statement: &str,
    signatures: &[Signature],
    trusted: &TrustedKeys,
) -> Result<Signed, Refusal> {
    statement_files(statement)?;
    let mut bad = None;
    for signature in signatures {
        let Ok(signer) = PublicKey::parse(&signature.signer) else {
            continue;
        };
        if !trusted.trusts(&signer) {
            continue;
        }
        let signed = Signed {
            statement: statement.to_owned(),
            signer: signature.signer.clone(),
            signature: signature.signature.clone(),
        };
        match signed.check_signature() {
            Ok(_) => return Ok(signed),
            Err(e) => bad = Some(e),
        }
    }
    if let Some(refusal) = bad {
        return Err(refusal);
    }
    let names: Vec<String> = signatures
        .iter()
        .map(|s| format!("`{}`", s.signer.split(':').next().unwrap_or_default()))
        .collect();
    match names.as_slice() {
        [] => Err(Refusal::Unsigned),
        [one] => Err(Refusal::Untrusted(one.trim_matches('`').to_owned())),
        _ => Err(Refusal::NoneTrusted(crate::plural::and_list(&names))),
    }
}

/// A blob fetched as `descriptor` names it hashed to `got` (hex): refused
/// unless that is its digest.
pub fn check_blob(descriptor: &Descriptor, got: &str) -> Result<(), Rejected> {
    if format!("sha256:{got}") == descriptor.digest {
        return Ok(());
    }
    Err(Rejected::BlobMismatch {
        name: descriptor.title().unwrap_or("key material").to_owned(),
        got: got.to_owned(),
    })
}

/// Checks a pulled sample whose every blob matched its digest: the key
/// material is the run's, `result.json` a result of it, and the statement of
/// the files (the result's bytes and each log's `(name, sha256)`) the one
/// signed. Gives the key material.
pub fn check_pulled(
    key: &RunKey,
    wanted: &Wanted,
    material: Vec<u8>,
    result: &[u8],
    logs: &[(String, String)],
) -> Result<String, Rejected> {
    let got = RunKey::of_bytes(&material);
    if got != *key {
        return Err(Rejected::MaterialNotKey {
            got: got.to_string(),
        });
    }
    let material = String::from_utf8(material)
        .map_err(|_| Rejected::NotASample("key material is not UTF-8".into()))?;
    let parsed: crate::store::RunResult =
        serde_json::from_slice(result).map_err(|e| Rejected::BadResult(e.to_string()))?;
    if parsed.key != key.as_str() {
        return Err(Rejected::BadResult(format!("it names `{}`", parsed.key)));
    }
    let success = matches!(parsed.outcome, crate::store::Outcome::Success { .. });
    if success != wanted.success {
        return Err(Rejected::BadResult(format!(
            "its manifest says it is a {}, and it is a {}",
            outcome_word(wanted.success),
            outcome_word(success)
        )));
    }
    wanted
        .signed
        .check_statement(&statement_of(key, result, logs))?;
    Ok(material)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing::SecretKey;

    #[test]
    fn a_sample_is_added_once_and_each_signature_once() {
        let key = RunKey::of_canonical("{}");
        let alice = SecretKey::generate("alice").unwrap();
        let bob = SecretKey::generate("bob").unwrap();
        let mut index = Index::new(&key);
        let manifest = br#"{"a": 1}"#;
        let by = |k: &SecretKey| Signature::from(&Signed::over("s".into(), k));
        assert_eq!(index.add(manifest, by(&alice)), Change::Sample);
        assert_eq!(index.add(manifest, by(&alice)), Change::Nothing);
        assert_eq!(index.add(manifest, by(&bob)), Change::Signature);
        assert_eq!(index.manifests.len(), 1);
        assert_eq!(signatures(&index.manifests[0]).len(), 2);
        let digest = format!("sha256:{}", sha256_hex(manifest));
        assert!(index.signed_by(&digest, &bob.public().to_string()));
        let again = Index::parse(&key, &index.to_bytes()).unwrap();
        assert_eq!(again.manifests.len(), 1);
        let other = RunKey::of_canonical("[]");
        assert!(
            Index::parse(&other, &index.to_bytes()).is_err(),
            "another key's"
        );
    }

    #[test]
    fn any_trusted_signature_that_verifies_is_taken() {
        let alice = SecretKey::generate("alice").unwrap();
        let bob = SecretKey::generate("bob").unwrap();
        let statement = format!("perfpipe-sample-2;{};p;result.json=x", "k".repeat(64));
        let by = |k: &SecretKey| Signature::from(&Signed::over(statement.clone(), k));
        let both = [by(&alice), by(&bob)];
        let only_bob = TrustedKeys::new(vec![bob.public()]);
        let signed = trusted_signature(&statement, &both, &only_bob).unwrap();
        assert_eq!(signed.signer_name(), "bob");
        let nobody = TrustedKeys::new(vec![SecretKey::generate("carol").unwrap().public()]);
        let refused = trusted_signature(&statement, &both, &nobody).unwrap_err();
        assert_eq!(refused, Refusal::NoneTrusted("`alice` and `bob`".into()));
        let forged = [Signature {
            signature: by(&alice).signature,
            ..by(&bob)
        }];
        assert!(matches!(
            trusted_signature(&statement, &forged, &only_bob),
            Err(Refusal::BadSignature(_))
        ));
        assert_eq!(
            trusted_signature(&statement, &[], &only_bob),
            Err(Refusal::Unsigned)
        );
    }
}
