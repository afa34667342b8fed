//! `perfpipe store path EXPERIMENT [STEP [WORKLOAD]]`: where each run's
//! files are, one per line in tab-separated columns (step, workload, kind,
//! path), for scripts and for reading a failure's log.

use super::args::StorePathArgs;
use super::{CliError, LockMode, load};
use crate::exit_code;
use crate::ops::plan::build_plan;

pub fn path(args: &StorePathArgs) -> Result<u8, CliError> {
    let common = args.common();
    let loaded = load(&common, LockMode::Read)?;
    let plan = build_plan(&loaded, &common)?;
    let runs: Vec<_> = plan
        .runs
        .iter()
        .filter(|r| args.step.as_ref().is_none_or(|s| *s == r.step))
        .collect();
    if let Some(step) = &args.step
        && runs.is_empty()
    {
        return Err(unknown("step", step, plan.runs.iter().map(|r| &r.step)));
    }
    let runs: Vec<_> = runs
        .into_iter()
        .filter(|r| args.workload.as_ref().is_none_or(|w| *w == r.workload))
        .collect();
    if let (Some(step), Some(workload)) = (&args.step, &args.workload)
        && runs.is_empty()
    {
        let of_step = plan.runs.iter().filter(|r| r.step == *step);
        return Err(unknown(
            &format!("workload of step `{step}`"),
            workload,
            of_step.map(|r| &r.workload),
        ));
    }
    let mut nothing = Vec::new();
    for run in runs {
        let Some(files) = loaded.store.files(&run.key).map_err(CliError::Store)? else {
            nothing.push(format!("`{}` × `{}`", run.step, run.workload));
            continue;
        };
        let line = |kind: &str, path: &std::path::Path| {
            outln!("{}\t{}\t{kind}\t{}", run.step, run.workload, path.display());
        };
        line("entry", &files.dir);
        for sample in &files.samples {
            line("sample", &sample.dir);
            line("result", &sample.result);
            for log in &sample.logs {
                line("log", log);
            }
        }
    }
    if !nothing.is_empty() {
        eoutln!(
            "perfpipe: nothing stored under `{}` for {} (`perfpipe run` measures them; `--runtime` selects another runtime's runs)",
            loaded.runtime.name(),
            nothing.join(", "),
        );
    }
    Ok(exit_code::OK)
}

fn unknown<'a>(what: &str, name: &str, known: impl Iterator<Item = &'a String>) -> CliError {
    let mut names: Vec<&str> = Vec::new();
    for name in known {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    CliError::Usage {
        message: format!("the experiment has no {what} `{name}`"),
        hint: format!("it has: {}", names.join(", ")),
    }
}
