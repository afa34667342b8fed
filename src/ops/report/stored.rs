//! The one loader of what analysis reads of the store beside the results
//! the plan read: each sample's signer, and the request journals, each read
//! once (an SLO's attainment and the charts' distributions share them).

use crate::analyze::{RunRecord, Stored, StoredSample, curves};
use crate::key::RunKey;
use crate::ops::Error;
use crate::plan::Plan;
use crate::store::{Sample, Store, StoreIndex};

/// The samples `index` holds for the runs of `plan`, with their signers, and
/// the journals of the runs with an SLO (their records need them). The
/// samples are moved out of `index`, not copied: at 10,000 runs a second
/// copy of every result was a third of what `run`'s report held.
pub fn load(plan: &Plan, mut index: StoreIndex) -> Result<Stored, Error> {
    let mut stored = Stored::new();
    for run in &plan.runs {
        // A key two runs share was moved at its first run.
        if let std::collections::btree_map::Entry::Vacant(entry) = stored.entry(run.key.clone()) {
            let samples = index.entries.remove(&run.key).unwrap_or_default();
            entry.insert(samples.into_iter().map(signed).collect());
        }
    }
    let with_slo: Vec<&RunKey> = plan
        .runs
        .iter()
        .filter(|r| r.slo.is_some())
        .map(|r| &r.key)
        .collect();
    read_journals(&mut stored, with_slo)?;
    Ok(stored)
}

/// The samples `index` holds of `key`, with their signers (no journal).
pub fn indexed(index: &StoreIndex, key: &RunKey) -> Vec<StoredSample> {
    index.samples(key).iter().cloned().map(signed).collect()
}

/// The samples of `key` with their signers (no journal), read from `store`.
pub fn samples(store: &Store, key: &RunKey) -> Result<Vec<StoredSample>, Error> {
    let samples = store.samples(key).map_err(Error::Store)?;
    Ok(samples.into_iter().map(signed).collect())
}

/// Reads the journals the charts show (of `runs` that have results), those
/// not read yet.
pub fn read_charted_journals(stored: &mut Stored, runs: &[RunRecord]) -> Result<(), Error> {
    let keys: Vec<RunKey> = runs.iter().filter_map(curves::charted).collect();
    read_journals(stored, &keys)
}

/// The journal files the charts show, in order: their paths are what
/// [`read_charted_journals`] reads.
pub fn charted_journal_paths(stored: &Stored, runs: &[RunRecord]) -> Vec<std::path::PathBuf> {
    runs.iter()
        .filter_map(curves::charted)
        .flat_map(|key| crate::analyze::samples_of(stored, &key))
        .filter(|s| s.sample.metrics().is_some())
        .map(|s| s.sample.journal_path())
        .collect()
}

/// Reads the journal of every measured sample of `keys` not read yet.
fn read_journals<K: std::borrow::Borrow<RunKey>>(
    stored: &mut Stored,
    keys: impl IntoIterator<Item = K>,
) -> Result<(), Error> {
    for key in keys {
        let Some(samples) = stored.get_mut(key.borrow()) else {
            continue;
        };
        for s in samples.iter_mut() {
            if s.journal.is_none() && s.sample.metrics().is_some() {
                s.journal = Some(s.sample.journal().map_err(Error::Store)?);
            }
        }
    }
    Ok(())
}

/// `sample` with its signer, when a cache supplied it.
fn signed(sample: Sample) -> StoredSample {
    let signer = sample.signature().map(|s| s.signer_name().to_owned());
    StoredSample {
        signer,
        ..StoredSample::of(sample)
    }
}
