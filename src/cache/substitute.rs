//! Substitution: samples a trusted cache holds for runs this store lacks,
//! checked (signature against a trusted key, key material against the key,
//! every blob against its digest) and only then committed. A cache that
//! cannot be reached is a warning: the run is measured instead.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::StreamExt;

use super::artifact::{self, Rejected};
use super::lacks::{Lacks, Recall};
use super::remote::Remote;
use super::statement::sample_digest;
use super::{Error, TrustedKeys};
use crate::key::RunKey;
use crate::store::Store;

/// The caches a command asks, and whose signatures it accepts.
#[derive(Debug, Clone)]
pub struct Caches {
    pub remotes: Vec<Remote>,
    pub trusted: TrustedKeys,
    /// How long a cache's "none for this key" is believed.
    pub recall: Recall,
}

/// Samples of a key that a cache offers and the store lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub location: String,
    pub tags: Vec<String>,
}

/// One sample that was substituted, or refused and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Added { signer: String },
    Refused { tag: String, why: String },
}

/// A key and what became of each sample offered for it, by cache.
type KeyOutcomes = (RunKey, Vec<(String, Outcome)>);

/// What substitution did, per key, and the caches it could not ask.
#[derive(Debug, Default)]
pub struct Substituted {
    pub samples: BTreeMap<RunKey, Vec<(String, Outcome)>>,
    pub unreachable: Vec<Error>,
}

impl Substituted {
    pub fn added(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Added { .. }))
    }

    pub fn refused(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Refused { .. }))
    }

    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.samples
            .values()
            .flatten()
            .filter(|(_, o)| f(o))
            .count()
    }
}

impl Caches {
    /// The samples each cache offers for `keys` that the store lacks: the
    /// first cache that has any, per key (no blob is fetched).
    pub fn offers(&self, store: &Store, keys: &[RunKey]) -> (BTreeMap<RunKey, Offer>, Vec<Error>) {
        let runtime = super::runtime();
        let lacks = &Lacks::new(store.root(), self.recall);
        runtime.block_on(async {
            let found: Vec<_> = futures_util::stream::iter(keys)
                .map(|key| async move { (key, self.offer(store, lacks, key).await) })
                .buffer_unordered(super::CONCURRENCY)
                .collect()
                .await;
            let mut offers = BTreeMap::new();
            let mut errors = Vec::new();
            for (key, found) in found {
                match found {
                    (Some(offer), _) => {
                        offers.insert(key.clone(), offer);
                    }
                    (None, Some(e)) => errors.push(e),
                    (None, None) => {}
                }
            }
            errors.sort_by_key(|e| e.to_string());
            errors.dedup_by_key(|e| e.to_string());
            (offers, errors)
        })
    }

    async fn offer(
        &self,
        store: &Store,
        lacks: &Lacks,
        key: &RunKey,
    ) -> (Option<Offer>, Option<Error>) {
        let local = local_digests(store, key);
        let mut error = None;
        for remote in &self.remotes {
            if lacks.known(&remote.location, key) {
                continue;
            }
            match remote.tags(key).await {
                // A definite "none"; a failure (below) is never remembered.
                Ok(tags) if tags.is_empty() => lacks.remember(&remote.location, key),
                Ok(tags) => {
                    lacks.forget(&remote.location, key);
                    let tags: Vec<String> = tags
                        .into_iter()
                        .filter(|t| !local.iter().any(|d| t.ends_with(&format!("-{d}"))))
                        .collect();
                    if !tags.is_empty() {
                        let location = remote.location.to_string();
                        return (Some(Offer { location, tags }), None);
                    }
                }
                Err(e) => error = Some(e),
            }
        }
        (None, error)
    }

    /// Substitutes what the caches offer for `runs` (key and key material).
    pub fn substitute(
        &self,
        store: &Store,
        runs: &[(RunKey, String)],
    ) -> Result<Substituted, Error> {
        let keys: Vec<RunKey> = runs.iter().map(|(k, _)| k.clone()).collect();
        let (offers, unreachable) = self.offers(store, &keys);
        let runtime = super::runtime();
        let mut out = Substituted {
            unreachable,
            ..Default::default()
        };
        let remotes: BTreeMap<String, &Remote> = self
            .remotes
            .iter()
            .map(|r| (r.location.to_string(), r))
            .collect();
        let pulls: Vec<(&RunKey, &Offer, &str)> = runs
            .iter()
            .filter_map(|(key, material)| Some((key, offers.get(key)?, material.as_str())))
            .collect();
        let results: Vec<Result<KeyOutcomes, Error>> = runtime.block_on(
            futures_util::stream::iter(pulls)
                .map(|(key, offer, material)| {
                    let remote = remotes[&offer.location];
                    async move {
                        let mut outcomes = Vec::new();
                        for tag in &offer.tags {
                            let outcome = match self.pull(remote, key, tag).await {
                                Ok((_, files, signed)) => {
                                    store.add_signed(key, material, &files, &signed)?;
                                    Outcome::Added {
                                        signer: signed.signer_name().to_owned(),
                                    }
                                }
                                Err(why) => Outcome::Refused {
                                    tag: tag.clone(),
                                    why,
                                },
                            };
                            outcomes.push((offer.location.clone(), outcome));
                        }
                        Ok((key.clone(), outcomes))
                    }
                })
                .buffer_unordered(super::CONCURRENCY)
                .collect(),
        );
        for result in results {
            let (key, outcomes) = result?;
            out.samples.insert(key, outcomes);
        }
        Ok(out)
    }

    /// One sample, checked; the reason it is refused otherwise.
    async fn pull(
        &self,
        remote: &Remote,
        key: &RunKey,
        tag: &str,
    ) -> Result<(String, super::SampleFiles, super::Signed), String> {
        // Why, in words that may quote the cache: redacted of every secret.
        let why = |e: &dyn std::fmt::Display| crate::secrets::redact(&e.to_string()).into_owned();
        let manifest = remote.manifest(key, tag).await.map_err(|e| why(&e))?;
        let wanted =
            artifact::parse(key, &manifest, &self.trusted).map_err(|e: Rejected| why(&e))?;
        let mut blobs = Vec::new();
        for descriptor in std::iter::once(&wanted.manifest.config).chain(&wanted.manifest.layers) {
            let blob = remote.blob(&descriptor.digest, descriptor.size).await;
            blobs.push(blob.map_err(|e| why(&e))?);
        }
        let (material, files) = artifact::assemble(key, &wanted, blobs).map_err(|e| why(&e))?;
        Ok((material, files, wanted.signed))
    }
}

/// The first 16 hex of the digest of each sample `key` has in the store.
fn local_digests(store: &Store, key: &RunKey) -> BTreeSet<String> {
    let Ok(samples) = store.samples(key) else {
        return BTreeSet::new();
    };
    samples
        .iter()
        .filter_map(|s| store.sample_files(key, s).ok()?.statement())
        .map(|statement| sample_digest(&statement)[..16].to_owned())
        .collect()
}
