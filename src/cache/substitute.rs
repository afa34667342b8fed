//! Substitution: samples a trusted cache holds for runs this store lacks,
//! checked (signature against a trusted key, key material against the key,
//! every blob against its digest) and only then committed. A cache that
//! cannot be reached is a warning: the run is measured instead.

use std::collections::BTreeMap;

use futures_util::StreamExt;

use super::Error;
use super::artifact::{self, Descriptor, Index, Rejected, Wanted};
use super::lacks::{Lacks, Recall};
use super::remote::Remote;
use crate::key::RunKey;
use crate::signing::TrustedKeys;
use crate::signing::statement::{RESULT_PATH, sample_digest};
use crate::store::{PendingSample, Store};

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

impl Offered {
    /// Whether it is a success (a result with numbers), as `run` will find.
    pub fn success(&self) -> bool {
        self.wanted.success
    }
}

/// One sample offered: its name (`<run key>-<first 16 hex of its sample
/// digest>`) and its checked manifest.
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
    /// first cache that offers any, per key. Each key's index is read once
    /// (it embeds its samples' manifests) and each sample checked as `run`
    /// checks it before fetching blobs (a trusted signer whose signature
    /// verifies, format, key material, files named as signed); no blob is
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
        // offered by another entry, is not offered again.
        let mut held = store.statements(key).unwrap_or_default();
        let mut refused = Vec::new();
        let mut error = None;
        for remote in &self.remotes {
            if lacks.known(&remote.location, key) {
                continue;
            }
            let location = remote.location.to_string();
            let index = match remote.index(key).await {
                // A definite "none"; a failure (below) is never remembered.
                Ok(None) => {
                    lacks.remember(&remote.location, key);
                    continue;
                }
                Ok(Some(bytes)) => bytes,
                Err(e) => {
                    error = Some(e);
                    continue;
                }
            };
            lacks.forget(&remote.location, key);
            let index = match Index::parse(key, &index) {
                Ok(index) => index,
                Err(why) => {
                    let tag = key.to_string();
                    let why = refusal(&why);
                    refused.push((location, Outcome::Refused { tag, why }));
                    continue;
                }
            };
            let mut samples = Vec::new();
            for entry in &index.manifests {
                // A held sample needs no check (whoever signed it here).
                if artifact::entry_statement(entry).is_some_and(|s| held.contains(&s)) {
                    continue;
                }
                match artifact::parse(key, entry, &self.trusted) {
                    Ok(wanted) if held.insert(wanted.signed.statement.clone()) => {
                        let tag = name(key, &wanted.signed.statement);
                        samples.push(Offered { tag, wanted });
                    }
                    Ok(_) => {}
                    Err(why) => {
                        let tag = artifact::entry_statement(entry)
                            .map_or_else(|| entry.digest.clone(), |s| name(key, &s));
                        let why = refusal(&why);
                        refused.push((location.clone(), Outcome::Refused { tag, why }));
                    }
                }
            }
            if !samples.is_empty() {
                return (Some(Offer { location, samples }), refused, None);
            }
        }
        (None, refused, error)
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
                            let pending = store.begin_sample()?;
                            let outcome = match pull(remote, key, &offered.wanted, &pending).await {
                                Ok(result) => {
                                    let signed = &offered.wanted.signed;
                                    // `None`: another process stored it meanwhile.
                                    let added = store.add_pending_signed(
                                        key, material, pending, &result, signed,
                                    )?;
                                    if added.is_none() {
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

/// How messages name a sample of `key`: the key and the first 16 hex of its
/// sample digest.
fn name(key: &RunKey, statement: &str) -> String {
    format!("{key}-{}", &sample_digest(statement)[..16])
}

/// Pulls the blobs of one offered sample as streams, each checked against
/// its digest as it arrives and refused as soon as it passes its declared
/// size: the key material and `result.json` into memory, each log into
/// `pending`; then the signature over what was fetched. Gives `result.json`;
/// why the sample is refused otherwise (`pending` is then dropped, and with
/// it what was fetched).
async fn pull(
    remote: &Remote,
    key: &RunKey,
    wanted: &Wanted,
    pending: &PendingSample,
) -> Result<Vec<u8>, String> {
    let manifest = &wanted.manifest;
    let mut material = Vec::new();
    fetch(remote, &manifest.config, &mut material).await?;
    let mut result = Vec::new();
    let mut logs = Vec::new();
    for layer in &manifest.layers {
        // `artifact::parse` checked the titles: `result.json` once, and
        // plain, distinct log names.
        match layer.title().unwrap_or_default() {
            RESULT_PATH => {
                fetch(remote, layer, &mut result).await?;
            }
            title => {
                let name = title.strip_prefix("logs/").unwrap_or(title);
                let mut file = pending.create_log(name).map_err(|e| refusal(&e))?;
                let digest = fetch(remote, layer, &mut file).await?;
                file.sync_all().map_err(|e| refusal(&e))?;
                logs.push((name.to_owned(), digest));
            }
        }
    }
    artifact::check_pulled(key, wanted, material, &result, &logs).map_err(|e| refusal(&e))?;
    Ok(result)
}

/// Streams the blob `descriptor` names into `sink`, checked against its
/// digest; gives that digest (hex).
async fn fetch(
    remote: &Remote,
    descriptor: &Descriptor,
    sink: &mut dyn std::io::Write,
) -> Result<String, String> {
    let got = remote
        .blob_into(&descriptor.digest, descriptor.size, sink)
        .await
        .map_err(|e| refusal(&e))?;
    artifact::check_blob(descriptor, &got).map_err(|e: Rejected| refusal(&e))?;
    Ok(got)
}

/// Why a sample is refused, in words that may quote the cache: redacted of
/// every secret.
fn refusal(e: &dyn std::fmt::Display) -> String {
    crate::secrets::redact(&e.to_string()).into_owned()
}
