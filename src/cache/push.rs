//! `cache push`: every sample of the keys asked for that the cache lacks,
//! signed (a sample substituted from another machine keeps its signer's
//! signature; published numbers are not measurements and stay home), and
//! `cache sign`: another key's signature added to samples a cache holds
//! under a trusted one. Idempotent: a key's index is read once before
//! anything is uploaded. Samples are hashed and uploaded from the store's
//! files as streams, a few keys at a time, so memory holds a few chunks
//! whatever the number or size of samples; a blob that several samples share
//! is uploaded once, each sample's manifest after its blobs and the key's
//! index last.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::{StreamExt, TryStreamExt};
use tokio::sync::OnceCell;

use super::Error;
use super::artifact::{self, Blob, Change, Index, Signature};
use super::remote::Remote;
use crate::key::RunKey;
use crate::signing::{SecretKey, Signed, TrustedKeys};
use crate::store::{Outcome, Store};

/// Keys (so samples, and their blobs) being uploaded at once.
const UPLOADS: usize = 4;

/// What a push did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pushed {
    pub uploaded: usize,
    /// Samples the cache held, to which this push added a signature.
    pub signed: usize,
    pub already: usize,
    /// Imported (published) samples, never pushed.
    pub published: usize,
}

impl std::ops::AddAssign for Pushed {
    fn add_assign(&mut self, other: Self) {
        self.uploaded += other.uploaded;
        self.signed += other.signed;
        self.already += other.already;
        self.published += other.published;
    }
}

/// The blobs this push has stored, by digest: a blob two samples share is
/// uploaded once, and the second waits for the first's upload (two uploads
/// of one digest at once are refused by Debian's registry: "provided digest
/// did not match uploaded content").
#[derive(Default)]
struct Stored(Mutex<HashMap<String, Arc<OnceCell<()>>>>);

impl Stored {
    async fn put(&self, remote: &Remote, blob: &Blob) -> Result<(), Error> {
        let cell = {
            let mut cells = self.0.lock().expect("no panic holds the digests");
            Arc::clone(cells.entry(blob.digest.clone()).or_default())
        };
        cell.get_or_try_init(|| remote.put_blob(blob))
            .await
            .map(drop)
    }
}

/// Refused before anything is asked: a web server is read-only.
fn writable(remote: &Remote) -> Result<(), Error> {
    match remote.location {
        super::Location::Http(_) => Err(Error::ReadOnly {
            location: remote.location.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Pushes the samples of `runs` (key and key material) to `remote`.
pub fn push(
    store: &Store,
    runs: &[(RunKey, String)],
    remote: &Remote,
    secret: &SecretKey,
    io: &crate::tokio_runtime::Io,
) -> Result<Pushed, Error> {
    writable(remote)?;
    let stored = Stored::default();
    super::runtime(io).block_on(async {
        futures_util::stream::iter(runs)
            .map(|(key, material)| push_key(store, key, material, remote, secret, &stored))
            .buffer_unordered(UPLOADS)
            .try_fold(Pushed::default(), |mut total, pushed| async move {
                total += pushed;
                Ok(total)
            })
            .await
    })
}

/// The index `remote` holds for `key`, or an empty one.
async fn index_of(remote: &Remote, key: &RunKey) -> Result<Option<Index>, Error> {
    let Some(bytes) = remote.index(key).await? else {
        return Ok(None);
    };
    Index::parse(key, &bytes)
        .map(Some)
        .map_err(|e| Error::Cache {
            location: remote.location.to_string(),
            message: format!("the index of `{key}`: {e}"),
        })
}

/// Uploads the samples of `key` the cache lacks, one after another, and
/// adds this push's signatures to those it holds without them; counts
/// those it has and those never pushed.
async fn push_key(
    store: &Store,
    key: &RunKey,
    material: &str,
    remote: &Remote,
    secret: &SecretKey,
    stored: &Stored,
) -> Result<Pushed, Error> {
    let mut pushed = Pushed::default();
    let samples = store.samples(key)?;
    if samples.is_empty() {
        return Ok(pushed);
    }
    let held = index_of(remote, key)
        .await?
        .unwrap_or_else(|| Index::new(key));
    let mut added: Vec<(Vec<u8>, Signature)> = Vec::new();
    for sample in &samples {
        if matches!(sample.result.outcome, Outcome::Imported { .. }) {
            pushed.published += 1;
            continue;
        }
        let files = store.stored_files(key, sample)?;
        let signed = match store.signature(sample) {
            Some(signed) => signed,
            None => {
                let statement = files.statement().map_err(|why| Error::Unsignable {
                    key: key.to_string(),
                    sample: sample.id.clone(),
                    why,
                })?;
                Signed::over(statement, secret)
            }
        };
        let success = sample.metrics().is_some();
        let artifact = artifact::build(material, &files, &signed.statement, success);
        let digest = format!("sha256:{}", crate::digest::sha256_hex(&artifact.manifest));
        if held.signed_by(&digest, &signed.signer) {
            pushed.already += 1;
            continue;
        }
        if held.holds(&digest) {
            pushed.signed += 1;
        } else {
            for blob in &artifact.blobs {
                stored.put(remote, blob).await?;
            }
            remote.put_manifest(&artifact.manifest).await?;
            pushed.uploaded += 1;
        }
        added.push((artifact.manifest, Signature::from(&signed)));
    }
    if !added.is_empty() {
        remote
            .update_index(key, |index| {
                added.iter().fold(false, |changed, (manifest, signature)| {
                    index.add(manifest, signature.clone()) != Change::Nothing || changed
                })
            })
            .await?;
    }
    Ok(pushed)
}

/// What `cache sign` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Vouched {
    /// Samples given the new key's signature.
    pub signed: usize,
    /// Samples that had it already.
    pub already: usize,
    /// Samples left unsigned: no trusted signature verifies over them
    /// (key, then why).
    pub refused: Vec<(RunKey, String)>,
}

/// Adds `secret`'s signature to every sample of `keys` that `remote` holds
/// under a signature by a key of `trusted` that verifies over the sample's
/// statement (checked as `run` checks it before fetching blobs); a sample
/// without one is left as it is and named.
pub fn sign(
    keys: &[RunKey],
    remote: &Remote,
    secret: &SecretKey,
    trusted: &TrustedKeys,
    io: &crate::tokio_runtime::Io,
) -> Result<Vouched, Error> {
    writable(remote)?;
    super::runtime(io).block_on(async {
        futures_util::stream::iter(keys)
            .map(|key| sign_key(key, remote, secret, trusted))
            .buffer_unordered(super::CONCURRENCY)
            .try_fold(Vouched::default(), |mut total, one| async move {
                total.signed += one.signed;
                total.already += one.already;
                total.refused.extend(one.refused);
                Ok(total)
            })
            .await
    })
}

async fn sign_key(
    key: &RunKey,
    remote: &Remote,
    secret: &SecretKey,
    trusted: &TrustedKeys,
) -> Result<Vouched, Error> {
    let mut vouched = Vouched::default();
    let Some(index) = index_of(remote, key).await? else {
        return Ok(vouched);
    };
    let signer = secret.public().to_string();
    let mut added = Vec::new();
    for entry in &index.manifests {
        if index.signed_by(&entry.digest, &signer) {
            vouched.already += 1;
            continue;
        }
        match artifact::parse(key, entry, trusted) {
            Ok(wanted) => {
                let signed = Signed::over(wanted.signed.statement, secret);
                added.push((entry.digest.clone(), Signature::from(&signed)));
                vouched.signed += 1;
            }
            Err(why) => vouched.refused.push((key.clone(), why.to_string())),
        }
    }
    if !added.is_empty() {
        remote
            .update_index(key, |index| {
                added.iter().fold(false, |changed, (digest, signature)| {
                    index.add_signature(digest, signature.clone()) != Change::Nothing || changed
                })
            })
            .await?;
    }
    Ok(vouched)
}
