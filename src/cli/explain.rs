//! `perfpipe explain`: why each run is cached, failed or missing; for a
//! missing run, the nearest stored run and the fields that differ.

use std::fmt::Write;

use serde_json::Value;

use super::args::ExplainArgs;
use super::plan::build_plan;
use super::{CliError, LockMode, load};
use crate::exit_code;
use crate::key::{RunKey, material_changes};
use crate::plan::RunStatus;
use crate::store::{Outcome, Sample, Store};

pub fn explain(args: &ExplainArgs) -> Result<u8, CliError> {
    let common = args.common();
    let loaded = load(&common, LockMode::Read)?;
    if let Some(step) = &args.step
        && loaded.spec.step(step).is_none()
    {
        let steps: Vec<&str> = loaded
            .spec
            .steps
            .iter()
            .map(|s| s.name.value.as_str())
            .collect();
        return Err(CliError::Usage {
            message: format!("the experiment has no step `{step}`"),
            hint: format!("its steps: {}", steps.join(", ")),
        });
    }
    let plan = build_plan(&loaded, &common)?;
    let stored: Vec<(RunKey, Value)> = loaded
        .store
        .entries()
        .map_err(CliError::Store)?
        .into_iter()
        .filter_map(|(key, text)| Some((key, serde_json::from_str(&text).ok()?)))
        .collect();
    let mut out = String::new();
    for run in plan
        .runs
        .iter()
        .filter(|r| args.step.as_ref().is_none_or(|s| *s == r.step))
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
                for sample in loaded.store.samples(&run.key).map_err(CliError::Store)? {
                    let _ = writeln!(out, "  sample {}: {}", sample.id, origin(&sample));
                }
            }
            RunStatus::Failed { error } => {
                let _ = writeln!(
                    out,
                    "  a stored failure, not run again without `--retry-failed`: {error}"
                );
            }
            RunStatus::Missing { reason } => {
                let _ = writeln!(out, "  {reason}");
                let material =
                    serde_json::to_value(&run.material).expect("key material is plain data");
                nearest(&mut out, &loaded.store, &stored, &material)?;
            }
        }
    }
    out!("{out}");
    Ok(exit_code::OK)
}

/// The stored run whose key material differs from `material` in the fewest
/// fields, and those fields.
fn nearest(
    out: &mut String,
    store: &Store,
    stored: &[(RunKey, Value)],
    material: &Value,
) -> Result<(), CliError> {
    let mut candidates: Vec<(usize, &RunKey, &Value)> = stored
        .iter()
        .map(|(key, m)| (material_changes(m, material).len(), key, m))
        .collect();
    candidates.sort_by_key(|(distance, key, _)| (*distance, (*key).clone()));
    for (_, key, m) in candidates {
        let samples = store.samples(key).map_err(CliError::Store)?;
        let Some(last) = samples.last() else { continue };
        let _ = writeln!(
            out,
            "  nearest stored run: {} ({} sample{}, {}); it differs in:",
            key.short(),
            samples.len(),
            if samples.len() == 1 { "" } else { "s" },
            origin(last)
        );
        for change in material_changes(m, material) {
            let show = |v: Option<String>| {
                v.filter(|v| !v.is_empty())
                    .unwrap_or_else(|| "(none)".into())
            };
            let _ = writeln!(
                out,
                "    {}: {} → {}",
                change.path,
                show(change.before),
                show(change.after)
            );
        }
        return Ok(());
    }
    let _ = writeln!(out, "  the store holds no run to compare it with");
    Ok(())
}

/// Where a sample's numbers came from.
fn origin(sample: &Sample) -> String {
    let what = match &sample.result.outcome {
        Outcome::Success { .. } => crate::analyze::Source::of(&sample.result.provenance).label(),
        Outcome::Imported { .. } => "imported",
        Outcome::Failure { .. } => "failed",
    };
    format!("{what} ({})", sample.result.provenance.environment())
}
