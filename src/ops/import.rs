//! `perfpipe import`: a published "Serving Benchmark Result" block becomes a
//! run's published numbers, stored beside (never instead of) measurements.

use super::plan::build_plan;
use super::{Error, LockMode, Selection, Shell, load};
use crate::metrics::{MetricSet, Provenance, parse_block};
use crate::store::{Imported, Outcome, RunResult};

/// A block to import, and where it came from.
#[derive(Debug, Clone)]
pub struct Block {
    pub text: String,
    /// The file it was read from, or "standard input".
    pub origin: String,
    /// `--source`: where the numbers were published (else `origin`).
    pub source: Option<String>,
}

/// Imports the block `read` gives (read once the run is known) as the
/// published numbers of `step` × `workload`.
pub fn import(
    selection: &Selection,
    step: &str,
    workload: &str,
    read: impl FnOnce() -> Result<Block, Error>,
    shell: &dyn Shell,
) -> Result<(), Error> {
    let common = selection;
    let loaded = load(common, LockMode::Read)?;
    let plan = build_plan(&loaded, common)?;
    let Some(run) = plan
        .runs
        .iter()
        .find(|r| r.step == step && r.workload == workload)
    else {
        let runs: Vec<String> = plan
            .runs
            .iter()
            .map(|r| format!("`{}` × `{}`", r.step, r.workload))
            .collect();
        return Err(Error::Usage {
            message: format!("the experiment has no run `{}` × `{}`", step, workload),
            hint: format!("its runs: {}", runs.join(", ")),
        });
    };
    let Block {
        text,
        origin,
        source,
    } = read()?;
    let parsed = parse_block(&text).map_err(|e| Error::Usage {
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
        return Err(Error::Usage {
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
            source: source.unwrap_or(origin),
        },
        engine_command: Vec::new(),
        engine_launch: None,
        harness_command: Vec::new(),
        telemetry: None,
        slurm: None,
    };
    let run_name = format!("`{}` × `{}` ({})", run.step, run.workload, run.key.short());
    match loaded
        .store
        .import(&run.key, &run.canonical, &result)
        .map_err(Error::Store)?
    {
        Imported::Added(_) => say!(
            shell,
            "perfpipe: imported {} published numbers{} for {run_name}",
            numbers.len(),
            whose(parsed.set)
        ),
        Imported::AlreadyThere { id } => say!(
            shell,
            "perfpipe: {run_name} already has these {} published numbers (sample {id}); nothing imported",
            numbers.len()
        ),
    }
    if parsed.set != loaded.spec.harness.kind.metric_set() {
        say!(
            shell,
            "perfpipe: note: the block's numbers are {}'s and the experiment's harness measures \
             under {}'s definitions; reports show each under its own names, never one as the other",
            set_name(parsed.set),
            set_name(loaded.spec.harness.kind.metric_set())
        );
    }
    Ok(())
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
