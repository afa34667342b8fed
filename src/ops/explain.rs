//! `perfpipe explain`: why each run is cached, failed or missing; for a
//! missing run, the nearest stored run and the fields that differ.

use std::fmt::Write;

use serde_json::Value;

use super::plan::build_plan;
use super::{Error, LockMode, Selection, Shell, load};
use crate::key::{RunKey, material_changes, material_distance};
use crate::plan::RunStatus;
use crate::store::{Outcome, Sample, Store};

/// Explains each run of `selection`'s experiment (of `step` alone, if
/// given), as the text `explain` prints.
pub fn explain(
    selection: &Selection,
    step: Option<&str>,
    shell: &dyn Shell,
) -> Result<String, Error> {
    let loaded = load(selection, LockMode::Read)?;
    if let Some(step) = step
        && loaded.spec.step(step).is_none()
    {
        let steps: Vec<&str> = loaded
            .spec
            .steps
            .iter()
            .map(|s| s.name.value.as_str())
            .collect();
        return Err(Error::Usage {
            message: format!("the experiment has no step `{step}`"),
            hint: format!("its steps: {}", steps.join(", ")),
        });
    }
    let plan = build_plan(&loaded, selection)?;
    super::workspace::stored_runtimes::say_if_elsewhere(&loaded, selection, "explain", shell);
    let stored = stored_materials(&loaded.store)?;
    let mut out = String::new();
    for run in plan
        .runs
        .iter()
        .filter(|r| step.is_none_or(|s| s == r.step))
    {
        let _ = writeln!(
            out,
            "`{}` × `{}`: {} (key {})",
            run.step,
            run.workload,
            run.status.label(),
            run.key.short()
        );
        match &run.status {
            RunStatus::Cached { .. } => {
                for sample in loaded.store.samples(&run.key).map_err(Error::Store)? {
                    let _ = writeln!(out, "  sample {}: {}", sample.id, origin(&sample));
                }
            }
            RunStatus::Failed { error } => {
                let _ = writeln!(
                    out,
                    "  a stored failure, not run again without `--retry-failed`: {error}"
                );
                for sample in loaded.store.samples(&run.key).map_err(Error::Store)? {
                    if sample.signature().is_some() {
                        let _ = writeln!(out, "  sample {}: {}", sample.id, origin(&sample));
                    }
                }
            }
            RunStatus::Missing { reason } => {
                let _ = writeln!(out, "  {reason}");
                let material =
                    serde_json::to_value(&run.material).expect("key material is plain data");
                match nearest_stored_run(&loaded.store, &stored, &run.key, &material)? {
                    Some(nearest) => describe_nearest(&mut out, &nearest, &material),
                    None => {
                        let _ = writeln!(out, "  the store holds no other run to compare it with");
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Every stored entry's key, with its key material as JSON.
fn stored_materials(store: &Store) -> Result<Vec<(RunKey, Value)>, Error> {
    Ok(store
        .entries()
        .map_err(Error::Store)?
        .into_iter()
        .filter_map(|(key, text)| Some((key, serde_json::from_str(&text).ok()?)))
        .collect())
}

/// A stored run near another, with its samples.
#[derive(Debug)]
pub struct NearestRun<'a> {
    pub key: &'a RunKey,
    pub material: &'a Value,
    pub samples: Vec<Sample>,
}

/// The stored run (of another key than `own`, whose samples the run's
/// status already tells) whose key material differs from `material` in the
/// fewest fields, serve flags counted one by one, a run with a successful
/// sample before a failed one; `None`: the store holds no other run.
pub fn nearest_stored_run<'a>(
    store: &Store,
    stored: &'a [(RunKey, Value)],
    own: &RunKey,
    material: &Value,
) -> Result<Option<NearestRun<'a>>, Error> {
    let mut candidates: Vec<(usize, &RunKey, &Value)> = stored
        .iter()
        .filter(|(key, _)| key != own)
        .map(|(key, m)| (material_distance(m, material), key, m))
        .collect();
    candidates.sort_by_key(|(distance, key, _)| (*distance, (*key).clone()));
    let mut failed: Option<(usize, NearestRun<'a>)> = None;
    for (distance, key, m) in candidates {
        if failed.as_ref().is_some_and(|(d, _)| distance > *d) {
            break;
        }
        let samples = store.samples(key).map_err(Error::Store)?;
        if samples.is_empty() {
            continue;
        }
        let run = NearestRun {
            key,
            material: m,
            samples,
        };
        if run
            .samples
            .iter()
            .all(|s| matches!(s.result.outcome, Outcome::Failure { .. }))
        {
            // A failure only if no success is as near.
            failed.get_or_insert((distance, run));
            continue;
        }
        return Ok(Some(run));
    }
    Ok(failed.map(|(_, run)| run))
}

fn describe_nearest(out: &mut String, nearest: &NearestRun<'_>, material: &Value) {
    let samples = &nearest.samples;
    let last = samples.last().expect("a stored run has a sample");
    let _ = writeln!(
        out,
        "  nearest stored run: {} ({}, {}); it differs in:",
        nearest.key.short(),
        crate::plural::count(samples.len(), "sample", "samples"),
        origin(last)
    );
    for change in material_changes(nearest.material, material) {
        let show = |v: Option<String>| {
            v.filter(|v| !v.is_empty())
                .unwrap_or_else(|| "(none)".into())
        };
        let line = if change.path.starts_with("serve_args ") {
            // One flag: added, removed, or its values changed.
            match (change.before, change.after) {
                (None, Some(added)) => format!("serve_args: added `{added}`"),
                (Some(removed), None) => format!("serve_args: removed `{removed}`"),
                (before, after) => format!("serve_args: `{}` → `{}`", show(before), show(after)),
            }
        } else {
            format!(
                "{}: {} → {}",
                change.path,
                show(change.before),
                show(change.after)
            )
        };
        let _ = writeln!(out, "    {line}");
    }
}

/// Where a sample's numbers came from.
fn origin(sample: &Sample) -> String {
    let what = match &sample.result.outcome {
        Outcome::Success { .. } => crate::analyze::Source::of(&sample.result.provenance).label(),
        Outcome::Imported { .. } => "imported",
        Outcome::Failure { .. } => "failed",
    };
    let signer = sample
        .signature()
        .map(|s| format!("; from a cache, signed by `{}`", s.signer_name()))
        .unwrap_or_default();
    format!(
        "{what} ({}{signer})",
        sample.result.provenance.environment()
    )
}
