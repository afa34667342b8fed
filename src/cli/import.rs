//! `perfpipe import`: a published "Serving Benchmark Result" block becomes a
//! run's published numbers, stored beside (never instead of) measurements.

use std::io::Read;

use super::args::ImportArgs;
use super::{CliError, LockMode, load};
use crate::exit_code;
use crate::metrics::{MetricSet, Provenance, parse_block};
use crate::ops::plan::build_plan;
use crate::store::{Imported, Outcome, RunResult};

pub fn import(args: &ImportArgs) -> Result<u8, CliError> {
    let common = args.common();
    let loaded = load(&common, LockMode::Read)?;
    let plan = build_plan(&loaded, &common)?;
    let Some(run) = plan
        .runs
        .iter()
        .find(|r| r.step == args.step && r.workload == args.workload)
    else {
        let runs: Vec<String> = plan
            .runs
            .iter()
            .map(|r| format!("`{}` × `{}`", r.step, r.workload))
            .collect();
        return Err(CliError::Usage {
            message: format!(
                "the experiment has no run `{}` × `{}`",
                args.step, args.workload
            ),
            hint: format!("its runs: {}", runs.join(", ")),
        });
    };
    let (text, origin) = match &args.from {
        Some(path) => (
            fs_err::read_to_string(path).map_err(|e| CliError::Usage {
                message: e.to_string(),
                hint: "`--from` names a file holding the block".into(),
            })?,
            path.display().to_string(),
        ),
        None => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| CliError::Usage {
                    message: format!("cannot read standard input: {e}"),
                    hint: "pipe the block in, or name a file with `--from`".into(),
                })?;
            (text, "standard input".to_owned())
        }
    };
    let parsed = parse_block(&text).map_err(|e| CliError::Usage {
        hint: match e {
            crate::metrics::BlockError::Differing { .. } => {
                "import one run's block at a time: keep only this run's in the file".into()
            }
            _ => "paste the block exactly as the page prints it (`vllm bench serve`'s, or GPUStack's rendering of guidellm's), from its `=== Serving Benchmark Result ===` line to its closing `===` line".into(),
        },
        message: format!("{origin}: {e}"),
    })?;
    let prompts = loaded
        .spec
        .workload(&run.workload)
        .expect("plan runs name declared workloads")
        .prompts;
    if let Some(problem) = parsed.request_count_problem(prompts) {
        let line = text
            .lines()
            .position(|l| l.trim_start().starts_with("Successful requests"))
            .map_or(0, |i| i + 1);
        return Err(CliError::Usage {
            message: format!("{origin}: line {line}: {problem}"),
            hint: format!(
                "import the block into the workload it was measured on: `{}` sends {prompts} requests (`prompts`)",
                run.workload
            ),
        });
    }
    let numbers = parsed.numbers();
    let result = RunResult {
        key: run.key.to_string(),
        outcome: Outcome::Imported {
            metrics: numbers.clone(),
            block: text,
            labels: parsed.labels.clone(),
        },
        provenance: Provenance::Published {
            source: args.source.clone().unwrap_or(origin),
        },
        engine_command: Vec::new(),
        engine_launch: None,
        harness_command: Vec::new(),
        telemetry: None,
    };
    let run_name = format!("`{}` × `{}` ({})", run.step, run.workload, run.key.short());
    match loaded
        .store
        .import(&run.key, &run.canonical, &result)
        .map_err(CliError::Store)?
    {
        Imported::Added(_) => eprintln!(
            "perfpipe: imported {} published numbers{} for {run_name}",
            numbers.len(),
            whose(parsed.set)
        ),
        Imported::AlreadyThere { id } => eprintln!(
            "perfpipe: {run_name} already has these {} published numbers (sample {id}); nothing imported",
            numbers.len()
        ),
    }
    if parsed.set != loaded.spec.harness.kind.metric_set() {
        eprintln!(
            "perfpipe: note: the block's numbers are {}'s and the experiment's harness measures \
             under {}'s definitions; reports show each under its own names, never one as the other",
            set_name(parsed.set),
            set_name(loaded.spec.harness.kind.metric_set())
        );
    }
    Ok(exit_code::OK)
}

/// How the import line names a guidellm-era block's numbers.
fn whose(set: MetricSet) -> &'static str {
    match set {
        MetricSet::Vllm => "",
        MetricSet::Guidellm => " (guidellm's, as GPUStack prints them under vLLM's labels)",
    }
}

fn set_name(set: MetricSet) -> &'static str {
    match set {
        MetricSet::Vllm => "vLLM",
        MetricSet::Guidellm => "guidellm",
    }
}
