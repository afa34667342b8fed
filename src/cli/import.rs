//! `perfpipe import`: a published "Serving Benchmark Result" block becomes a
//! run's published numbers, stored beside (never instead of) measurements.

use std::io::Read;

use super::args::ImportArgs;
use super::plan::build_plan;
use super::{CliError, LockMode, load};
use crate::exit_code;
use crate::metrics::{Provenance, parse_block};
use crate::store::{Outcome, RunResult};

pub fn import(args: &ImportArgs) -> Result<u8, CliError> {
    let loaded = load(&args.common, LockMode::Read)?;
    let plan = build_plan(&loaded, &args.common)?;
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
            _ => "paste the block exactly as `vllm bench serve` printed it, from its `=== Serving Benchmark Result ===` line to its closing `===` line".into(),
        },
        message: format!("{origin}: {e}"),
    })?;
    let result = RunResult {
        key: run.key.to_string(),
        outcome: Outcome::Imported {
            metrics: parsed.metrics.clone(),
            block: text,
        },
        provenance: Provenance::Published {
            source: args.source.clone().unwrap_or(origin),
        },
        engine_command: Vec::new(),
        engine_launch: None,
        harness_command: Vec::new(),
        telemetry: None,
    };
    let store = &loaded.store;
    let lock = store.lock(&run.key).map_err(CliError::Store)?;
    let pending = store.begin_sample().map_err(CliError::Store)?;
    pending
        .commit(store, &run.key, &run.canonical, &result, &lock)
        .map_err(CliError::Store)?;
    eprintln!(
        "perfpipe: imported {} published numbers for `{}` × `{}` ({})",
        parsed.metrics.len(),
        run.step,
        run.workload,
        run.key.short()
    );
    Ok(exit_code::OK)
}
