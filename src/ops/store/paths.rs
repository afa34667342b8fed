//! `perfpipe store path EXPERIMENT [STEP [WORKLOAD]]`: where each selected
//! run's files are in the store (its entry, each sample, its result and
//! logs).

use std::path::PathBuf;

use crate::facts::Runtime;
use crate::ops::plan::build_plan;
use crate::ops::{Error, LockMode, Selection, load};

/// One stored file of a run.
#[derive(Debug, Clone)]
pub struct RunFile {
    pub step: String,
    pub workload: String,
    /// `entry`, `sample`, `result` or `log`.
    pub kind: &'static str,
    pub path: PathBuf,
}

/// The stored files of the selected runs, in plan order.
#[derive(Debug)]
pub struct RunFiles {
    pub files: Vec<RunFile>,
    /// The runs the store holds nothing for, as "`step` × `workload`".
    pub unstored: Vec<String>,
    /// The runtime whose runs these are.
    pub runtime: Runtime,
}

/// The files of every run of `selection`'s experiment, or of `step`'s runs,
/// or of its run of `workload`; a step or workload the experiment lacks is
/// an error naming those it has.
pub fn run_files(
    selection: &Selection,
    step: Option<&str>,
    workload: Option<&str>,
) -> Result<RunFiles, Error> {
    let loaded = load(selection, LockMode::Read)?;
    let plan = build_plan(&loaded, selection)?;
    let runs: Vec<_> = plan
        .runs
        .iter()
        .filter(|r| step.is_none_or(|s| s == r.step))
        .collect();
    if let Some(step) = step
        && runs.is_empty()
    {
        return Err(unknown("step", step, plan.runs.iter().map(|r| &r.step)));
    }
    let runs: Vec<_> = runs
        .into_iter()
        .filter(|r| workload.is_none_or(|w| w == r.workload))
        .collect();
    if let (Some(step), Some(workload)) = (step, workload)
        && runs.is_empty()
    {
        let of_step = plan.runs.iter().filter(|r| r.step == step);
        return Err(unknown(
            &format!("workload of step `{step}`"),
            workload,
            of_step.map(|r| &r.workload),
        ));
    }
    let mut out = RunFiles {
        files: Vec::new(),
        unstored: Vec::new(),
        runtime: loaded.runtime,
    };
    for run in runs {
        let Some(files) = loaded.store.files(&run.key).map_err(Error::Store)? else {
            out.unstored
                .push(format!("`{}` × `{}`", run.step, run.workload));
            continue;
        };
        let mut file = |kind: &'static str, path: &PathBuf| {
            out.files.push(RunFile {
                step: run.step.clone(),
                workload: run.workload.clone(),
                kind,
                path: path.clone(),
            });
        };
        file("entry", &files.dir);
        for sample in &files.samples {
            file("sample", &sample.dir);
            file("result", &sample.result);
            for log in &sample.logs {
                file("log", log);
            }
        }
    }
    Ok(out)
}

fn unknown<'a>(what: &str, name: &str, known: impl Iterator<Item = &'a String>) -> Error {
    let mut names: Vec<&str> = Vec::new();
    for name in known {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    Error::Usage {
        message: format!("the experiment has no {what} `{name}`"),
        hint: format!("it has: {}", names.join(", ")),
    }
}
