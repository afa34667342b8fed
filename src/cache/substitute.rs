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

/// What a cache offers of a key that the store lacks, as `plan` counts
/// it: samples `run` will take once their blobs match (each manifest passed
/// every check that needs no blob), each statement once. Only the counts
/// are kept: the checked manifests are let go once counted, so `plan`
/// holds a few bytes per key, not the manifests of the whole study.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub location: String,
    /// Samples that are successes (results with numbers), as `run` will find.
    pub successes: usize,
    /// Samples that are failures.
    pub failures: usize,
}

impl Offer {
    /// The samples offered.
    pub fn samples(&self) -> usize {
        self.successes + self.failures
    }
}

/// The samples of a key that one cache offers, checked as far as they can
/// be without a blob: what `run` pulls, and what [`Offer`] counts.
struct Found<'a> {
    remote: &'a Remote,
    location: String,
    samples: Vec<Offered>,
}

impl Found<'_> {
    fn offer(&self) -> Offer {
        let successes = self.samples.iter().filter(|s| s.wanted.success).count();
        Offer {
            location: self.location.clone(),
            successes,
            failures: self.samples.len() - successes,
        }
    }
}

/// One sample offered: its name (`<run key>-<first 16 hex of its sample
/// digest>`) and its checked manifest.
#[derive(Debug, Clone)]
struct Offered {
    tag: String,
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

/// What one key's asking found: a cache's offer, refusals, a cache's failure.
type Asked<'a> = (Option<Found<'a>>, Outcomes, Option<Error>);

/// [`Asked`], the offer counted ([`Offer`]).
type Counted = (Option<Offer>, Outcomes, Option<Error>);

/// What became of a key's samples, and a cache's failure to answer.
type Took<'k> = (&'k RunKey, Outcomes, Option<Error>);

impl Caches {
    /// What the caches offer for `keys` that the store lacks (`plan`): the
    /// first cache that offers any, per key, as [`Caches::substitute`] finds
    /// it, counted; no blob is fetched.
    pub fn offers(&self, store: &Store, keys: &[RunKey]) -> Offers {
        let runtime = super::runtime(&self.io);
        let lacks = &Lacks::new(store.root(), self.recall);
        runtime.block_on(async {
            let found: Vec<(&RunKey, Counted)> = futures_util::stream::iter(keys)
                .map(|key| async move {
                    // Counted, and its manifests let go, as each key is asked.
                    let (found, refused, error) = self.offer(store, lacks, key).await;
                    (key, (found.map(|f| f.offer()), refused, error))
                })
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
            dedup(&mut out.unreachable);
            out
        })
    }

    /// What the first cache that offers any sample of `key` offers, found
    /// as `run` takes it: the key's index read once (it embeds its samples'
    /// manifests) and each sample checked as far as it can be before
    /// fetching blobs (a trusted signer whose signature verifies, format,
    /// key material, files named as signed). One function for `plan` and
    /// `run`, so `plan` counts only what `run` takes.
    async fn offer<'a>(&'a self, store: &Store, lacks: &Lacks, key: &RunKey) -> Asked<'a> {
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
                let found = Found {
                    remote,
                    location,
                    samples,
                };
                return (Some(found), refused, None);
            }
        }
        (None, refused, error)
    }

    /// Substitutes what the caches offer for `runs` (key and key material).
    /// Each key is asked, pulled and committed before the next is taken up
    /// (a few at a time): what is held while pulling is the keys in flight,
    /// whatever the study's size, and what is kept of each key after is
    /// what became of its samples.
    pub fn substitute(
        &self,
        store: &Store,
        runs: &[(&RunKey, &str)],
    ) -> Result<Substituted, Error> {
        let runtime = super::runtime(&self.io);
        let lacks = &Lacks::new(store.root(), self.recall);
        let results: Vec<Result<Took<'_>, Error>> = runtime.block_on(
            futures_util::stream::iter(runs)
                .map(|&(key, material)| async move {
                    let (found, mut outcomes, error) = self.offer(store, lacks, key).await;
                    if let Some(found) = found {
                        outcomes.extend(take(store, key, material, found).await?);
                    }
                    Ok((key, outcomes, error))
                })
                .buffer_unordered(super::CONCURRENCY)
                .collect(),
        );
        let mut out = Substituted::default();
        for result in results {
            let (key, outcomes, error) = result?;
            out.unreachable.extend(error);
            if !outcomes.is_empty() {
                out.samples.insert(key.clone(), outcomes);
            }
        }
        dedup(&mut out.unreachable);
        Ok(out)
    }
}

/// Pulls each sample `found` offers for `key` (key material `material`)
/// and commits those that pass every check; what became of each.
async fn take(
    store: &Store,
    key: &RunKey,
    material: &str,
    found: Found<'_>,
) -> Result<Outcomes, Error> {
    let mut outcomes = Vec::new();
    for offered in found.samples {
        let pending = store.begin_sample()?;
        let outcome = match pull(found.remote, key, &offered.wanted, &pending).await {
            Ok(result) => {
                let signed = &offered.wanted.signed;
                // `None`: another process stored it meanwhile.
                let added = store.add_pending_signed(key, material, pending, &result, signed)?;
                if added.is_none() {
                    continue;
                }
                Outcome::Added {
                    signer: signed.signer_name().to_owned(),
                }
            }
            Err(why) => Outcome::Refused {
                tag: offered.tag,
                why,
            },
        };
        outcomes.push((found.location.clone(), outcome));
    }
    Ok(outcomes)
}

/// Each cache's failure once, in a stable order (keys are asked a few at
/// a time, in no order).
fn dedup(errors: &mut Vec<Error>) {
    errors.sort_by_key(|e| e.to_string());
    errors.dedup_by_key(|e| e.to_string());
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
