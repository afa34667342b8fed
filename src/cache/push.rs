//! `cache push`: every sample of the keys asked for that the cache lacks,
//! signed (a sample substituted from another machine keeps its signer's
//! signature; published numbers are not measurements and stay home).
//! Idempotent: a sample is found by its tag before anything is uploaded.
//! Blobs are deduplicated by digest across the whole push and uploaded a few
//! at a time, then the manifests.

use std::collections::BTreeMap;

use futures_util::{StreamExt, TryStreamExt};

use super::artifact::{self, Artifact, tag};
use super::remote::Remote;
use super::{Error, SecretKey, Signed};
use crate::key::RunKey;
use crate::store::{Outcome, Store};

/// Blobs (then manifests) uploaded at once.
const UPLOADS: usize = 4;

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
        // What the cache lacks, key by key (tags listed a few keys at a time).
        let planned: Vec<(Pushed, Vec<(&RunKey, Artifact)>)> = futures_util::stream::iter(runs)
            .map(|(key, material)| lacking(store, key, material, remote, secret))
            .buffered(super::CONCURRENCY)
            .try_collect()
            .await?;
        let mut total = Pushed::default();
        let mut artifacts = Vec::new();
        for (pushed, lacking) in planned {
            total.already += pushed.already;
            total.published += pushed.published;
            artifacts.extend(lacking);
        }
        // Each distinct blob once, whichever samples share it: two uploads
        // of one digest at once are refused by Debian's registry
        // ("provided digest did not match uploaded content").
        let blobs: BTreeMap<&str, &[u8]> = artifacts
            .iter()
            .flat_map(|(_, a)| &a.blobs)
            .map(|(digest, bytes)| (digest.as_str(), bytes.as_slice()))
            .collect();
        futures_util::stream::iter(blobs)
            .map(|(digest, bytes)| remote.put_blob(digest, bytes))
            .buffer_unordered(UPLOADS)
            .try_collect::<Vec<()>>()
            .await?;
        // Then the manifests, whose blobs are all there.
        futures_util::stream::iter(&artifacts)
            .map(|(key, a)| remote.put_manifest(key, &a.tag, &a.manifest))
            .buffer_unordered(UPLOADS)
            .try_collect::<Vec<()>>()
            .await?;
        total.uploaded = artifacts.len();
        Ok(total)
    })
}

/// The samples of `key` the cache lacks, as artifacts; those it has and
/// those never pushed, counted.
async fn lacking<'a>(
    store: &Store,
    key: &'a RunKey,
    material: &str,
    remote: &Remote,
    secret: &SecretKey,
) -> Result<(Pushed, Vec<(&'a RunKey, Artifact)>), Error> {
    let mut pushed = Pushed::default();
    let mut artifacts = Vec::new();
    let samples = store.samples(key)?;
    if samples.is_empty() {
        return Ok((pushed, artifacts));
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
            None => Signed::sign(&files, secret).map_err(|why| Error::Unsignable {
                key: key.to_string(),
                sample: sample.id.clone(),
                why,
            })?,
        };
        if there.contains(&tag(key, &signed.statement)) {
            pushed.already += 1;
            continue;
        }
        artifacts.push((key, artifact::build(material, &files, &signed)));
    }
    Ok((pushed, artifacts))
}
