//! Substitution in `run` and `plan`: what trusted caches offer for the
//! missing runs (`crate::cache`), said through the shell.

use std::collections::BTreeMap;

use super::{Error, Shell};
use crate::cache::{Caches, Offer, Outcome};
use crate::key::RunKey;
use crate::plan::{Plan, PlannedRun};
use crate::store::Store;

/// `run`: substitutes what the caches offer for the missing runs of `plan`;
/// says what came from where and what was refused. Whether any was added.
pub fn substitute(
    caches: &Caches,
    store: &Store,
    plan: &Plan,
    shell: &dyn Shell,
) -> Result<bool, Error> {
    // The plan's own keys and key material, not copies of them.
    let runs: Vec<(&RunKey, &str)> = plan
        .missing()
        .into_iter()
        .map(|r| (&r.key, r.canonical.as_str()))
        .collect();
    if runs.is_empty() {
        return Ok(false);
    }
    let done = caches.substitute(store, &runs).map_err(Error::Cache)?;
    for e in &done.unreachable {
        say!(shell, "warning: {e}; measuring instead");
    }
    for run in plan.missing() {
        for (location, outcome) in done.samples.get(&run.key).into_iter().flatten() {
            match outcome {
                Outcome::Added { signer } => say!(
                    shell,
                    "perfpipe: `{}` × `{}` ({}): substituted a sample signed by `{signer}` from `{location}`",
                    run.step,
                    run.workload,
                    run.key.short()
                ),
                Outcome::Refused { .. } => {
                    say_refused(shell, run, location, outcome, "nothing of it was stored");
                }
            }
        }
    }
    Ok(done.added() > 0)
}

/// A sample refused from `location`, why, and what that means (`then`).
fn say_refused(shell: &dyn Shell, run: &PlannedRun, location: &str, outcome: &Outcome, then: &str) {
    if let Outcome::Refused { tag, why } = outcome {
        say!(
            shell,
            "warning: `{}` × `{}`: refused `{tag}` from `{location}`: {why}; {then}",
            run.step,
            run.workload
        );
    }
}

/// `plan`: what the caches offer for the missing runs that `run` would take
/// (manifests checked, no blob fetched), and what it would refuse.
pub fn offers(
    caches: &Caches,
    store: &Store,
    plan: &Plan,
    shell: &dyn Shell,
) -> BTreeMap<RunKey, Offer> {
    let keys: Vec<RunKey> = plan.missing().iter().map(|r| r.key.clone()).collect();
    if keys.is_empty() {
        return BTreeMap::new();
    }
    let found = caches.offers(store, &keys);
    for e in found.unreachable {
        say!(shell, "warning: {e}");
    }
    for run in plan.missing() {
        for (location, outcome) in found.refused.get(&run.key).into_iter().flatten() {
            say_refused(shell, run, location, outcome, "`run` will not use it");
        }
    }
    found.offers
}

/// `plan` as it will be once the offered samples are substituted: each
/// run's status by the plan's own rule ([`crate::plan::status_of`]) over the
/// samples the store holds and those offered (a success counts towards
/// `--samples`, a failure is a failure), as `run` decides after substituting.
pub fn after_substitution(plan: &Plan, offers: &BTreeMap<RunKey, Offer>, store: &Store) -> Plan {
    let mut after = plan.clone();
    for run in &mut after.runs {
        let Some(offer) = offers.get(&run.key) else {
            continue;
        };
        let held = store.samples(&run.key).unwrap_or_default();
        let ok = held.iter().filter(|s| s.metrics().is_some()).count() + offer.successes;
        let failure = held
            .iter()
            .rev()
            .find_map(|s| match &s.result.outcome {
                crate::store::Outcome::Failure { error, .. } => Some(error.clone()),
                _ => None,
            })
            .or_else(|| {
                (offer.failures > 0).then(|| format!("a failure from `{}`", offer.location))
            });
        run.status = crate::plan::status_of(ok, failure, plan.options);
    }
    after
}

/// The offers after which their run is no longer missing: what `plan`
/// counts as substitutable. A run `run` would measure anyway (too few
/// samples for `--samples`, a failure retried by `--retry-failed`) gets the
/// samples but is not counted.
pub fn substitutable(after: &Plan, offers: BTreeMap<RunKey, Offer>) -> BTreeMap<RunKey, Offer> {
    let missing: std::collections::HashSet<&RunKey> =
        after.missing().into_iter().map(|r| &r.key).collect();
    offers
        .into_iter()
        .filter(|(key, _)| !missing.contains(key))
        .collect()
}
