//! `cache push`: every sample of the keys asked for that the cache lacks,
//! signed (a sample substituted from another machine keeps its signer's
//! signature; published numbers are not measurements and stay home).
//! Idempotent: a sample is found by its tag before anything is uploaded.

use futures_util::StreamExt;

use super::artifact::{self, tag};
use super::remote::Remote;
use super::{Error, SecretKey, Signed};
use crate::key::RunKey;
use crate::store::{Outcome, Store};

/// What a push did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pushed {
    pub uploaded: usize,
    pub already: usize,
    /// Imported (published) samples, never pushed.
    pub published: usize,
}

/// Pushes the samples of `runs` (key and key material) to `remote`.
pub fn push(
    store: &Store,
    runs: &[(RunKey, String)],
    remote: &Remote,
    secret: &SecretKey,
) -> Result<Pushed, Error> {
    // Refused before anything is asked, even when nothing would be uploaded.
    if let super::Location::Http(_) = remote.location {
        return Err(Error::ReadOnly {
            location: remote.location.to_string(),
        });
    }
    let runtime = super::runtime();
    runtime.block_on(async {
        let results: Vec<Result<Pushed, Error>> = futures_util::stream::iter(runs)
            .map(|(key, material)| push_key(store, key, material, remote, secret))
            // One key at a time: samples share blobs (identical logs), and
            // Debian's registry refuses one of two concurrent uploads of a
            // digest ("provided digest did not match uploaded content").
            .buffered(1)
            .collect()
            .await;
        let mut total = Pushed::default();
        for pushed in results {
            let pushed = pushed?;
            total.uploaded += pushed.uploaded;
            total.already += pushed.already;
            total.published += pushed.published;
        }
        Ok(total)
    })
}

async fn push_key(
    store: &Store,
    key: &RunKey,
    material: &str,
    remote: &Remote,
    secret: &SecretKey,
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
        let files = store.sample_files(key, sample)?;
        let signed = match store.signature(sample) {
            Some(signed) => signed,
            None => Signed::sign(&files, secret).ok_or_else(|| Error::Unsignable {
                key: key.to_string(),
                sample: sample.id.clone(),
            })?,
        };
        if there.contains(&tag(key, &signed.statement)) {
            pushed.already += 1;
            continue;
        }
        let artifact = artifact::build(material, &files, &signed);
        for (digest, bytes) in &artifact.blobs {
            remote.put_blob(digest, bytes).await?;
        }
        remote
            .put_manifest(key, &artifact.tag, &artifact.manifest)
            .await?;
        pushed.uploaded += 1;
    }
    Ok(pushed)
}
