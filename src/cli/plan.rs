//! `perfpipe plan`: every run, its key and status; no side effects.

use std::fmt::Write;

use super::args::{Common, PlanArgs};
use super::{CliError, Loaded, LockMode, load};
use crate::exit_code;
use crate::plan::{self, Plan, PlanOptions, RunStatus};

pub fn plan(args: &PlanArgs) -> Result<u8, CliError> {
    let loaded = load(&args.common, LockMode::Read)?;
    let plan = build_plan(&loaded, &args.common)?;
    print!("{}", render(&loaded, &args.common, &plan));
    Ok(exit_code::OK)
}

/// Keys every run and looks each key up in the store.
pub(super) fn build_plan(loaded: &Loaded, common: &Common) -> Result<Plan, CliError> {
    let runs = plan::keyed_runs(&loaded.spec, loaded.runtime, &loaded.inputs);
    let index = loaded
        .store
        .index(runs.iter().map(|r| &r.key))
        .map_err(CliError::Store)?;
    Ok(plan::build(
        runs,
        &index,
        PlanOptions {
            runtime: loaded.runtime,
            samples: common.samples as usize,
            retry_failed: common.retry_failed,
        },
    ))
}

fn render(loaded: &Loaded, common: &Common, plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "experiment `{}` · runtime `{}` · store `{}`",
        loaded.spec.name,
        plan.options.runtime.name(),
        common.store.display()
    );
    for note in super::sample_notes(loaded) {
        let _ = writeln!(out, "{note}");
    }
    let step_w = plan
        .runs
        .iter()
        .map(|r| r.step.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let work_w = plan
        .runs
        .iter()
        .map(|r| r.workload.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let _ = writeln!(
        out,
        "\n{:step_w$}  {:work_w$}  {:12}  {:7}  DETAIL",
        "STEP", "WORKLOAD", "KEY", "STATUS"
    );
    for r in &plan.runs {
        let detail = match &r.status {
            RunStatus::Cached { samples } => {
                format!("{samples} sample{}", if *samples == 1 { "" } else { "s" })
            }
            RunStatus::Failed { error } => error.clone(),
            RunStatus::Missing { reason } => reason.clone(),
        };
        let _ = writeln!(
            out,
            "{:step_w$}  {:work_w$}  {:12}  {:7}  {detail}",
            r.step,
            r.workload,
            r.key.short(),
            r.status.label()
        );
    }
    let count = |label: &str| {
        plan.runs
            .iter()
            .filter(|r| r.status.label() == label)
            .count()
    };
    let to_run = plan.missing().len();
    let launches = plan.launches(common.fresh_engine).len();
    let _ = writeln!(
        out,
        "\n{} runs: {} cached, {} failed, {} missing; {to_run} to run ({launches} engine launches)",
        plan.runs.len(),
        count("cached"),
        count("failed"),
        count("missing"),
    );
    out
}
