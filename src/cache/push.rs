//! `cache push`: every sample of the keys asked for that the cache lacks,
//! signed (a sample substituted from another machine keeps its signer's
//! signature; published numbers are not measurements and stay home).
//! Idempotent: a sample is found by its tag before anything is uploaded.
//! Samples are read, uploaded and let go a few at a time (memory holds a
//! few samples whatever the size of the push); a blob that several samples
//! share is uploaded once, each sample's manifest after its blobs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::{StreamExt, TryStreamExt};
use tokio::sync::OnceCell;

use super::Error;
use super::artifact::{self, Artifact, tag};
use super::remote::Remote;
use crate::key::RunKey;
use crate::signing::{SecretKey, Signed};
use crate::store::{Outcome, Sample, Store};

/// Keys (so samples, and their blobs) being uploaded at once.
const UPLOADS: usize = 4;

/// What a push did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pushed {
    pub uploaded: usize,
    pub already: usize,
    /// Imported (published) samples, never pushed.
    pub published: usize,
}

impl std::ops::AddAssign for Pushed {
    fn add_assign(&mut self, other: Self) {
        self.uploaded += other.uploaded;
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
    async fn put(&self, remote: &Remote, digest: &str, bytes: &[u8]) -> Result<(), Error> {
        let cell = {
            let mut cells = self.0.lock().expect("no panic holds the digests");
            Arc::clone(cells.entry(digest.to_owned()).or_default())
        };
        cell.get_or_try_init(|| remote.put_blob(digest, bytes))
            .await
            .map(drop)
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
    // Refused before anything is asked, even when nothing would be uploaded.
    if let super::Location::Http(_) = remote.location {
        return Err(Error::ReadOnly {
            location: remote.location.to_string(),
        });
    }
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

/// Uploads the samples of `key` the cache lacks, one after another; counts
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
    let there = remote.tags(key).await?;
    for sample in &samples {
        if matches!(sample.result.outcome, Outcome::Imported { .. }) {
            pushed.published += 1;
            continue;
        }
        let Some(artifact) = lacking(store, key, material, sample, &there, secret)? else {
            pushed.already += 1;
            continue;
        };
        for (digest, bytes) in &artifact.blobs {
            stored.put(remote, digest, bytes).await?;
        }
        remote
            .put_manifest(key, &artifact.tag, &artifact.manifest)
            .await?;
        pushed.uploaded += 1;
    }
    Ok(pushed)
}

/// `sample` of `key` as an artifact, signed, unless the cache has its tag
/// (`there`).
fn lacking(
    store: &Store,
    key: &RunKey,
    material: &str,
    sample: &Sample,
    there: &[String],
    secret: &SecretKey,
) -> Result<Option<Artifact>, Error> {
    let files = store.sample_files(key, sample)?;
    let signed = match store.signature(sample) {
        Some(signed) => signed,
        None => Signed::sign(&files, secret).map_err(|why| Error::Unsignable {
            key: key.to_string(),
            sample: sample.id.clone(),
            why,
        })?,
    };
    if there.contains(&tag(key, &signed.statement)) {
        return Ok(None);
    }
    Ok(Some(artifact::build(material, &files, &signed)))
}
