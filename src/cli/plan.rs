//! `perfpipe plan`: every run, its key and status; no side effects (but the
//! launch material `--write-launches` asks for).

use std::fmt::Write;
use std::time::Duration;

use super::Loaded;
use super::args::PlanArgs;
use crate::ops::Error;
use crate::ops::Selection;

use crate::exit_code;
use crate::facts::EngineKind;
use crate::launch::{LaunchKey, LaunchMaterial};
use crate::ops::plan::{PlanOptions, Planned};
use crate::plan::{Plan, RunStatus};
use crate::plural::{and_list, count};
use crate::tokio_runtime::Io;

pub fn plan(args: &PlanArgs, io: &Io) -> Result<u8, Error> {
    let options = PlanOptions {
        selection: args.selection(),
        substitution: args.substitute.options(),
        offline: args.offline,
        write_launches: args.write_launches,
        io: io.clone(),
    };
    let common = &options.selection;
    let Planned {
        loaded,
        plan,
        estimate,
        later_probes,
        offers,
        saved_gpu_hours,
        launches: launch_materials,
        leftovers,
    } = crate::ops::plan::plan(&options, &super::Stderr)?;
    out!("{}", render(&loaded, common, &plan, &offers));
    out!(
        "{}",
        render_launches(&launch_materials, args.write_launches)
    );
    if !offers.is_empty() {
        outln!(
            "substitutable: {} from trusted caches, saving {saved_gpu_hours:.1} GPU-hours of the estimate",
            count(offers.len(), "run", "runs"),
        );
    }
    // `plan` stops nothing; it says what the next `run` will stop.
    for found in leftovers {
        let what = super::describe_launch(&found.launch);
        match (&found.launch.container, found.processes) {
            (Some(_), _) => eoutln!(
                "perfpipe: a killed perfpipe left {what}; the next `run` removes the container"
            ),
            (None, 0) => {}
            (None, n) => eoutln!(
                "perfpipe: a killed perfpipe left {what} with {n} live processes; the next `run` stops them"
            ),
        }
    }
    if estimate.launches > 0 {
        let untimed = match estimate.untimed {
            0 => String::new(),
            1 => "; 1 run has no earlier result of its workload and counts only its launch".into(),
            n => format!(
                "; {n} runs have no earlier result of their workload and count only their launch"
            ),
        };
        // A search's later probes run on its configuration's launch.
        let probes = match later_probes {
            0 => String::new(),
            n => format!(
                "; the searches take up to {n} more {} on these launches, untimed",
                crate::plural::noun(n, "probe", "probes")
            ),
        };
        outln!(
            "estimate: {:.1} GPU-hours ({} at a typical start of {}, plus benchmark times of earlier results{untimed}{probes})",
            estimate.gpu_hours,
            launches(estimate.launches),
            typical_starts(&estimate.starts),
        );
    }
    super::left_to_exit(plan);
    super::left_to_exit_loaded(loaded);
    Ok(exit_code::OK)
}

fn render(
    loaded: &Loaded,
    common: &Selection,
    plan: &Plan,
    offers: &std::collections::BTreeMap<crate::key::RunKey, crate::cache::Offer>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "experiment `{}` · runtime `{}` · store `{}`",
        loaded.spec.name,
        plan.options.runtime.name(),
        common.store.display()
    );
    let lock = &loaded.lock;
    let _ = match &lock.old {
        None => writeln!(
            out,
            "lockfile `{}`: none yet; `perfpipe lock` or `perfpipe run` writes it",
            lock.path.display()
        ),
        Some(_) if !lock.is_current() => writeln!(
            out,
            "lockfile `{}`: out of date (`perfpipe lock` updates it); the keys below are the ones `run` would use",
            lock.path.display()
        ),
        Some(_) => writeln!(
            out,
            "lockfile `{}`: {}",
            lock.path.display(),
            super::lockfile::pin_summary(&lock.new)
        ),
    };
    for note in super::input_notes(loaded) {
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
    let status_w = if offers.is_empty() { 7 } else { 13 };
    let _ = writeln!(
        out,
        "\n{:step_w$}  {:work_w$}  {:12}  {:status_w$}  DETAIL",
        "STEP", "WORKLOAD", "KEY", "STATUS"
    );
    for r in &plan.runs {
        let detail = match &r.status {
            RunStatus::Cached { samples } => count(*samples, "sample", "samples"),
            RunStatus::Failed { error } => error.clone(),
            RunStatus::Missing { reason } => reason.clone(),
        };
        let (label, detail) = match offers.get(&r.key) {
            Some(offer) => (
                "substitutable",
                format!(
                    "{} in `{}`; {detail}",
                    count(offer.samples(), "sample", "samples"),
                    offer.location
                ),
            ),
            None => (r.status.label(), detail),
        };
        let _ = writeln!(
            out,
            "{:step_w$}  {:work_w$}  {:12}  {:status_w$}  {detail}",
            r.step,
            r.workload,
            r.key.short(),
            label
        );
    }
    let with = |label: &str| {
        plan.runs
            .iter()
            .filter(|r| r.status.label() == label)
            .count()
    };
    let to_run = plan.missing().len();
    let _ = writeln!(
        out,
        "\n{}: {} cached, {} failed, {} missing; {to_run} to run ({})",
        count(plan.runs.len(), "run", "runs"),
        with("cached"),
        with("failed"),
        with("missing"),
        launches(plan.launches(common.fresh_engine).len()),
    );
    out.push_str(&super::slo_search::render(&loaded.searches));
    out
}

/// Each launch the missing runs need: its key as Slurm names its job
/// (`pp-<12 hex>`), which `perfpipe realise` takes once the material is
/// `written`, and the runs it serves.
fn render_launches(launches: &[(LaunchKey, LaunchMaterial)], written: bool) -> String {
    let mut out = String::new();
    if launches.is_empty() {
        return out;
    }
    let how = if written {
        "`perfpipe realise LAUNCH` runs one from its material alone"
    } else {
        "`perfpipe plan --write-launches` writes their material for `perfpipe realise LAUNCH`"
    };
    let _ = writeln!(out, "\n{} ({how}):", launches_word(launches.len()));
    for (key, m) in launches {
        let runs: Vec<String> = m
            .runs
            .iter()
            .map(|r| format!("{} × {}", r.step, r.workload))
            .collect();
        let _ = writeln!(
            out,
            "  {}  {} {} · {}: {}",
            key.short(),
            m.engine.engine,
            m.engine.version,
            count(m.runs.len(), "run", "runs"),
            runs.join(", ")
        );
    }
    out
}

fn launches_word(n: usize) -> &'static str {
    crate::plural::noun(n, "launch", "launches")
}

/// `5 min for vLLM and SGLang, 15 min for TensorRT-LLM`: the engines the
/// estimate launches, grouped by their start.
fn typical_starts(starts: &[(EngineKind, Duration)]) -> String {
    let mut minutes: Vec<u64> = starts.iter().map(|(_, d)| d.as_secs() / 60).collect();
    minutes.sort_unstable();
    minutes.dedup();
    minutes
        .iter()
        .map(|m| {
            let names: Vec<&str> = starts
                .iter()
                .filter(|(_, d)| d.as_secs() / 60 == *m)
                .map(|(kind, _)| kind.display_name())
                .collect();
            format!("{m} min for {}", and_list(&names))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn launches(n: usize) -> String {
    count(n, "engine launch", "engine launches")
}
