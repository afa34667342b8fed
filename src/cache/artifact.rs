//! A sample as an OCI artifact: the key material as its config, the result
//! and each log as layers, the signature in its annotations; tagged
//! `<run key>-<first 16 hex of the sample digest>`. Pulled artifacts are
//! checked here, blob by blob, before anything is stored. (pure)

use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;
use crate::key::RunKey;
use crate::signing::keys::TrustedKeys;
use crate::signing::statement::{
    RESULT_PATH, Refusal, SampleFiles, Signed, file_list, log_path, sample_digest, statement_files,
};

/// The manifest type of a sample: an OCI image manifest.
pub const MANIFEST_TYPE: &str = crate::oci::OCI_MANIFEST;
pub const ARTIFACT_TYPE: &str = "application/vnd.perfpipe.sample.v1";
const MATERIAL_TYPE: &str = "application/vnd.perfpipe.key-material.v1+json";
const RESULT_TYPE: &str = "application/vnd.perfpipe.result.v1+json";
const LOG_TYPE: &str = "application/vnd.perfpipe.log.v1";
const TITLE: &str = "org.opencontainers.image.title";
const STATEMENT: &str = "dev.perfpipe.statement";
const SIGNER: &str = "dev.perfpipe.signer";
const SIGNATURE: &str = "dev.perfpipe.signature";

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
    pub annotations: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, String>,
}

impl Descriptor {
    fn of(media_type: &str, bytes: &[u8], title: Option<&str>) -> Self {
        Self {
            media_type: media_type.to_owned(),
            digest: format!("sha256:{}", sha256_hex(bytes)),
            size: bytes.len() as u64,
            annotations: title
                .map(|t| [(TITLE.to_owned(), t.to_owned())].into())
                .unwrap_or_default(),
        }
    }

    fn title(&self) -> Option<&str> {
        self.annotations.get(TITLE).map(String::as_str)
    }
}

/// The tag of a sample of `key` with this statement.
pub fn tag(key: &RunKey, statement: &str) -> String {
    format!("{key}-{}", &sample_digest(statement)[..16])
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

/// A sample ready to push: its manifest bytes and every blob by digest.
#[derive(Debug)]
pub struct Artifact {
    pub tag: String,
    pub manifest: Vec<u8>,
    pub blobs: Vec<(String, Vec<u8>)>,
}

pub fn build(material: &str, files: &SampleFiles, signed: &Signed) -> Artifact {
    let mut blobs = vec![material.as_bytes().to_vec(), files.result.clone()];
    let mut layers = vec![Descriptor::of(
        RESULT_TYPE,
        &files.result,
        Some(RESULT_PATH),
    )];
    for (name, bytes) in &files.logs {
        layers.push(Descriptor::of(LOG_TYPE, bytes, Some(&log_path(name))));
        blobs.push(bytes.clone());
    }
    let manifest = Manifest {
        schema_version: 2,
        media_type: MANIFEST_TYPE.into(),
        artifact_type: ARTIFACT_TYPE.into(),
        config: Descriptor::of(MATERIAL_TYPE, material.as_bytes(), None),
        layers,
        annotations: [
            (STATEMENT.to_owned(), signed.statement.clone()),
            (SIGNER.to_owned(), signed.signer.clone()),
            (SIGNATURE.to_owned(), signed.signature.clone()),
        ]
        .into(),
    };
    Artifact {
        tag: tag(&files.key, &signed.statement),
        manifest: serde_json::to_vec_pretty(&manifest).expect("a manifest is plain data"),
        blobs: blobs
            .into_iter()
            .map(|b| (format!("sha256:{}", sha256_hex(&b)), b))
            .collect(),
    }
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

/// What a manifest says must be fetched, checked before any blob is.
#[derive(Debug, Clone)]
pub struct Wanted {
    pub manifest: Manifest,
    pub signed: Signed,
}

pub fn parse(key: &RunKey, bytes: &[u8], trusted: &TrustedKeys) -> Result<Wanted, Rejected> {
    let manifest: Manifest =
        serde_json::from_slice(bytes).map_err(|e| Rejected::NotASample(e.to_string()))?;
    if manifest.artifact_type != ARTIFACT_TYPE {
        return Err(Rejected::NotASample(format!(
            "artifact type `{}`",
            manifest.artifact_type
        )));
    }
    let get = |name: &str| {
        manifest
            .annotations
            .get(name)
            .cloned()
            .ok_or_else(|| Rejected::NotASample(format!("no `{name}` annotation")))
    };
    let signed = Signed {
        statement: get(STATEMENT)?,
        signer: get(SIGNER)?,
        signature: get(SIGNATURE)?,
    };
    // The cheap refusals first, before a byte of the blobs is fetched.
    let signer = crate::signing::PublicKey::parse(&signed.signer)
        .map_err(|_| Refusal::BadSigner(signed.signer.clone()))?;
    if !trusted.trusts(&signer) {
        return Err(Refusal::Untrusted(signer.name).into());
    }
    signed.check_signature()?;
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
    if statement_files(&signed.statement)? != (key.as_str(), listed.as_str()) {
        return Err(Refusal::NotTheSigned.into());
    }
    Ok(Wanted { manifest, signed })
}

/// Checks fetched blobs (by descriptor, in manifest order: config first)
/// and the signature over them; gives the key material and the files.
pub fn assemble(
    key: &RunKey,
    wanted: &Wanted,
    blobs: Vec<Vec<u8>>,
) -> Result<(String, SampleFiles), Rejected> {
    let descriptors: Vec<&Descriptor> = std::iter::once(&wanted.manifest.config)
        .chain(&wanted.manifest.layers)
        .collect();
    for (descriptor, bytes) in descriptors.iter().zip(&blobs) {
        let got = sha256_hex(bytes);
        if format!("sha256:{got}") != descriptor.digest {
            return Err(Rejected::BlobMismatch {
                name: descriptor.title().unwrap_or("key material").to_owned(),
                got,
            });
        }
    }
    let mut blobs = blobs.into_iter();
    let material = blobs.next().unwrap_or_default();
    let got = RunKey::of_bytes(&material);
    if got != *key {
        return Err(Rejected::MaterialNotKey {
            got: got.to_string(),
        });
    }
    let material = String::from_utf8(material)
        .map_err(|_| Rejected::NotASample("key material is not UTF-8".into()))?;
    // `parse` checked the titles: `result.json` once, and plain log names.
    let mut result = None;
    let mut logs = Vec::new();
    for (layer, bytes) in wanted.manifest.layers.iter().zip(blobs) {
        match layer.title().unwrap_or_default() {
            RESULT_PATH => result = Some(bytes),
            title => {
                let name = title.strip_prefix("logs/").unwrap_or(title);
                logs.push((name.to_owned(), bytes));
            }
        }
    }
    let result = result.ok_or(Refusal::NoResult)?;
    let parsed: crate::store::RunResult =
        serde_json::from_slice(&result).map_err(|e| Rejected::BadResult(e.to_string()))?;
    if parsed.key != key.as_str() {
        return Err(Rejected::BadResult(format!("it names `{}`", parsed.key)));
    }
    let files = SampleFiles {
        key: key.clone(),
        result,
        logs,
    };
    wanted.signed.check(&files)?;
    Ok((material, files))
}
