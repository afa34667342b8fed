//! Substitution: samples a trusted cache holds for runs this store lacks,
//! checked (signature against a trusted key, key material against the key,
//! every blob against its digest) and only then committed. A cache that
//! cannot be reached is a warning: the run is measured instead.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::StreamExt;

use super::Error;
use super::artifact::{self, Rejected, Wanted};
use super::lacks::{Lacks, Recall};
use super::remote::Remote;
use crate::key::RunKey;
use crate::signing::TrustedKeys;
use crate::signing::statement::{SampleFiles, sample_digest};
use crate::store::Store;

/// The caches a command asks, and whose signatures it accepts.
#[derive(Debug, Clone)]
pub struct Caches {
    pub remotes: Vec<Remote>,
    pub trusted: TrustedKeys,
    /// How long a cache's "none for this key" is believed.
    pub recall: Recall,
    /// The runtime the requests run on.
    pub io: crate::tokio_runtime::Io,
}

/// Samples of a key that a cache offers and the store lacks, each one
/// `run` will take once its blobs match (its manifest passed every check
/// that needs no blob), each statement once.
#[derive(Debug, Clone)]
pub struct Offer {
    pub location: String,
    pub samples: Vec<Offered>,
}

/// One sample offered: its tag and its checked manifest.
#[derive(Debug, Clone)]
pub struct Offered {
    pub tag: String,
    wanted: Wanted,
}

/// One sample that was substituted, or refused and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Added { signer: String },
    Refused { tag: String, why: String },
}

/// What became of samples, by cache location.
type Outcomes = Vec<(String, Outcome)>;

/// What the caches offer for some keys (`plan` counts these), what they
/// hold that is refused, and the caches that could not be asked.
#[derive(Debug, Default)]
pub struct Offers {
    pub offers: BTreeMap<RunKey, Offer>,
    pub refused: BTreeMap<RunKey, Outcomes>,
    pub unreachable: Vec<Error>,
}

/// What substitution did, per key, and the caches it could not ask.
#[derive(Debug, Default)]
pub struct Substituted {
    pub samples: BTreeMap<RunKey, Outcomes>,
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

/// What one key's asking found: an offer, refusals, a cache's failure.
type Asked = (Option<Offer>, Outcomes, Option<Error>);

impl Caches {
    /// The samples each cache offers for `keys` that the store lacks: the
    /// first cache that offers any, per key. Each tag's manifest is fetched
    /// and checked as `run` checks it before fetching blobs (trusted signer,
    /// signature, format, key material, files named as signed); no blob is
    /// fetched. One function for `plan` and `run`, so `plan` counts only
    /// what `run` takes.
    pub fn offers(&self, store: &Store, keys: &[RunKey]) -> Offers {
        let runtime = super::runtime(&self.io);
        let lacks = &Lacks::new(store.root(), self.recall);
        runtime.block_on(async {
            let found: Vec<(&RunKey, Asked)> = futures_util::stream::iter(keys)
                .map(|key| async move { (key, self.offer(store, lacks, key).await) })
                .buffer_unordered(super::CONCURRENCY)
                .collect()
                .await;
            let mut out = Offers::default();
            for (key, (offer, refused, error)) in found {
                if let Some(offer) = offer {
                    out.offers.insert(key.clone(), offer);
                } else if let Some(e) = error {
                    out.unreachable.push(e);
                }
                if !refused.is_empty() {
                    out.refused.insert(key.clone(), refused);
                }
            }
            out.unreachable.sort_by_key(|e| e.to_string());
            out.unreachable.dedup_by_key(|e| e.to_string());
            out
        })
    }

    async fn offer(&self, store: &Store, lacks: &Lacks, key: &RunKey) -> Asked {
        // A sample is its statement: one the store holds, or one already
        // offered under another tag, is not offered again.
        let mut held = store.statements(key).unwrap_or_default();
        let local: BTreeSet<String> = held
            .iter()
            .map(|statement| sample_digest(statement)[..16].to_owned())
            .collect();
        let mut refused = Vec::new();
        let mut error = None;
        for remote in &self.remotes {
            if lacks.known(&remote.location, key) {
                continue;
            }
            let location = remote.location.to_string();
            match remote.tags(key).await {
                // A definite "none"; a failure (below) is never remembered.
                Ok(tags) if tags.is_empty() => lacks.remember(&remote.location, key),
                Ok(tags) => {
                    lacks.forget(&remote.location, key);
                    let mut samples = Vec::new();
                    // Tags naming a held sample's digest need no manifest.
                    for tag in tags
                        .into_iter()
                        .filter(|t| !local.iter().any(|d| t.ends_with(&format!("-{d}"))))
                    {
                        match self.wanted(remote, key, &tag).await {
                            Ok(wanted) if held.insert(wanted.signed.statement.clone()) => {
                                samples.push(Offered { tag, wanted });
                            }
                            Ok(_) => {}
                            Err(why) => {
                                refused.push((location.clone(), Outcome::Refused { tag, why }))
                            }
                        }
                    }
                    if !samples.is_empty() {
                        return (Some(Offer { location, samples }), refused, None);
                    }
                }
                Err(e) => error = Some(e),
            }
        }
        (None, refused, error)
    }

    /// The manifest of one tag, checked; why it is refused otherwise.
    async fn wanted(&self, remote: &Remote, key: &RunKey, tag: &str) -> Result<Wanted, String> {
        let manifest = remote.manifest(key, tag).await.map_err(|e| refusal(&e))?;
        artifact::parse(key, &manifest, &self.trusted).map_err(|e: Rejected| refusal(&e))
    }

    /// Substitutes what the caches offer for `runs` (key and key material).
    pub fn substitute(
        &self,
        store: &Store,
        runs: &[(RunKey, String)],
    ) -> Result<Substituted, Error> {
        let keys: Vec<RunKey> = runs.iter().map(|(k, _)| k.clone()).collect();
        let Offers {
            offers,
            refused,
            unreachable,
        } = self.offers(store, &keys);
        let runtime = super::runtime(&self.io);
        let mut out = Substituted {
            samples: refused,
            unreachable,
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
        let results: Vec<Result<(RunKey, Outcomes), Error>> = runtime.block_on(
            futures_util::stream::iter(pulls)
                .map(|(key, offer, material)| {
                    let remote = remotes[&offer.location];
                    async move {
                        let mut outcomes = Vec::new();
                        for offered in &offer.samples {
                            let outcome = match pull(remote, key, &offered.wanted).await {
                                Ok(files) => {
                                    let signed = &offered.wanted.signed;
                                    // `None`: another process stored it meanwhile.
                                    if store.add_signed(key, material, &files, signed)?.is_none() {
                                        continue;
                                    }
                                    Outcome::Added {
                                        signer: signed.signer_name().to_owned(),
                                    }
                                }
                                Err(why) => Outcome::Refused {
                                    tag: offered.tag.clone(),
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
            out.samples.entry(key).or_default().extend(outcomes);
        }
        Ok(out)
    }
}

/// The blobs of one offered sample, checked against its manifest and
/// signature; why it is refused otherwise.
async fn pull(remote: &Remote, key: &RunKey, wanted: &Wanted) -> Result<SampleFiles, String> {
    let mut blobs = Vec::new();
    for descriptor in std::iter::once(&wanted.manifest.config).chain(&wanted.manifest.layers) {
        let blob = remote.blob(&descriptor.digest, descriptor.size).await;
        blobs.push(blob.map_err(|e| refusal(&e))?);
    }
    let (_material, files) = artifact::assemble(key, wanted, blobs).map_err(|e| refusal(&e))?;
    Ok(files)
}

/// Why a sample is refused, in words that may quote the cache: redacted of
/// every secret.
fn refusal(e: &dyn std::fmt::Display) -> String {
    crate::secrets::redact(&e.to_string()).into_owned()
}
