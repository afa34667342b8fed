//! `perfpipe diff A.lock B.lock`: inputs and run keys that changed, and
//! what the change did to every number both sides have; for a side without
//! numbers, the command that fills it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::workspace::lockfile;
use super::{Error, LockMode, Selection, load};
use crate::analyze::{self, RunRecord};
use crate::facts::Runtime;
use crate::key::RunKey;
use crate::lock;
use crate::report::diff::{Incomplete, InputDiff, LockDiff, RunDiff};
use crate::store::Store;

/// What `diff` compares.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    pub before: PathBuf,
    pub after: PathBuf,
    pub store: PathBuf,
    /// Whose run keys to compare (default docker).
    pub runtime: Option<Runtime>,
    pub metrics: Option<Vec<String>>,
    pub noise_floor: Vec<(String, f64)>,
    pub max_prompts: Option<u32>,
}

pub fn diff(args: &DiffOptions) -> Result<LockDiff, Error> {
    let read = |path: &Path| {
        lockfile::read(path)?.ok_or_else(|| Error::Usage {
            message: format!("`{}` does not exist", path.display()),
            hint: "`perfpipe lock <experiment> --lockfile FILE` writes a lockfile".into(),
        })
    };
    let (before, after) = (read(&args.before)?, read(&args.after)?);
    let store = Store::open(&args.store).map_err(Error::Store)?;
    let experiment = find_experiment(&after.experiment, &args.after);
    let (runtime, max_prompts, chosen) = match args.runtime {
        Some(runtime) => (runtime, args.max_prompts, None),
        None => {
            let (runtime, cap, said) =
                stored_choice(&store, [&before, &after], experiment.as_ref(), args)?;
            (runtime, cap, Some(said))
        }
    };
    let args = &DiffOptions {
        runtime: Some(runtime),
        max_prompts,
        ..args.clone()
    };
    let capped = match args.max_prompts {
        Some(cap) => Some(capped_runs(
            &store,
            experiment.as_ref(),
            &after.experiment,
            cap,
        )?),
        None => None,
    };
    // One per side: finding whether the experiment matches loads it.
    let filled = std::cell::RefCell::new(BTreeMap::<PathBuf, String>::new());
    let fill = |path: &Path, lock: &lock::Lockfile| {
        filled
            .borrow_mut()
            .entry(path.to_owned())
            .or_insert_with(|| fill_command(path, lock, experiment.as_ref(), args, runtime, &store))
            .clone()
    };
    let metrics = args.metrics.clone().unwrap_or_else(|| {
        ["total_token_throughput", "mean_ttft_ms", "mean_tpot_ms"]
            .map(String::from)
            .to_vec()
    });

    let mut floors = analyze::NoiseFloors::default();
    for (metric, pct) in &args.noise_floor {
        if !metrics.contains(metric) {
            return Err(Error::Usage {
                message: format!(
                    "`--noise-floor {metric}=…` names a metric `diff` does not compare"
                ),
                hint: format!("it compares {} (`--metrics` chooses)", metrics.join(", ")),
            });
        }
        floors.set(metric, *pct);
    }

    let changes = lock::input_changes(&before, &after);
    let inputs: Vec<InputDiff> = changes
        .iter()
        .map(|c| InputDiff {
            name: c.name.to_owned(),
            change: match (c.before, c.after) {
                (None, _) => "added",
                (_, None) => "removed",
                _ => "changed",
            },
            detail: c.describe(),
        })
        .collect();
    let key_changes = lock::run_key_changes(&before, &after, runtime);
    let unchanged_runs = after
        .runs
        .iter()
        .filter(|r| {
            !key_changes
                .iter()
                .any(|c| c.step == r.step && c.workload == r.workload)
        })
        .map(|r| format!("{} × {}", r.step, r.workload))
        .collect();

    // Every side's samples in one read of the index of results.
    let stored_keys = key_changes
        .iter()
        .flat_map(|c| [&c.before, &c.after])
        .flatten()
        .map(|key| match &capped {
            Some(capped) => capped.get(key),
            None => Some(key),
        });
    let index = store
        .index_keys(stored_keys.flatten())
        .map_err(Error::Store)?;
    let mut pairs: Vec<(RunRecord, RunRecord)> = Vec::new();
    let mut incomplete = Vec::new();
    for change in &key_changes {
        let record = |key: &Option<RunKey>| -> Result<Option<RunRecord>, Error> {
            let Some(key) = key else { return Ok(None) };
            // A capped run's own key, when the store has it.
            let key = match &capped {
                Some(capped) => match capped.get(key) {
                    Some(capped) => capped,
                    None => {
                        return Ok(Some(analyze::of_samples(
                            &change.step,
                            &change.workload,
                            key,
                            &[],
                        )));
                    }
                },
                None => key,
            };
            let samples = super::report::stored::indexed(&index, key);
            Ok(Some(analyze::of_samples(
                &change.step,
                &change.workload,
                key,
                &samples,
            )))
        };
        let sides = [
            (&args.before, &before, record(&change.before)?),
            (&args.after, &after, record(&change.after)?),
        ];
        let mut missing = false;
        for (path, lock, side) in &sides {
            let reason = match side {
                None => Some("not a run of this lockfile".to_owned()),
                Some(r) if r.metrics.is_empty() => Some(match &r.failure {
                    Some(error) => format!("failed: {error}"),
                    None => format!("no result yet: {}", fill(path, lock)),
                }),
                Some(_) => None,
            };
            if let Some(reason) = reason {
                missing = true;
                incomplete.push(Incomplete {
                    step: change.step.clone(),
                    workload: change.workload.clone(),
                    side: format!("`{}`", path.display()),
                    reason,
                });
            }
        }
        if let [(_, _, Some(b)), (_, _, Some(a))] = sides
            && !missing
        {
            pairs.push((b, a));
        }
    }
    let deltas = analyze::deltas(&pairs, &metrics, &floors);
    let diff = LockDiff {
        before: args.before.display().to_string(),
        after: args.after.display().to_string(),
        experiment: after.experiment.clone(),
        runtime: runtime.name().into(),
        max_prompts: args.max_prompts,
        chosen,
        inputs,
        unchanged_inputs: after
            .inputs
            .iter()
            .filter(|i| !changes.iter().any(|c| c.name == i.name))
            .map(|i| i.name.clone())
            .collect(),
        runs: key_changes
            .into_iter()
            .map(|c| RunDiff {
                step: c.step,
                workload: c.workload,
                key_before: c.before.map(|k| k.to_string()),
                key_after: c.after.map(|k| k.to_string()),
                changed_by: c.causes,
            })
            .collect(),
        unchanged_runs,
        metrics,
        deltas,
        incomplete,
    };
    Ok(diff)
}

/// The experiment file a lockfile was written from: `experiments/*.kdl` and
/// `*.kdl` here that declare `name`, the one named like the lockfile first.
fn find_experiment(name: &str, lockfile: &Path) -> Option<PathBuf> {
    let stem = lockfile.file_stem().unwrap_or_default().to_string_lossy();
    let mut candidates = vec![
        PathBuf::from(format!("experiments/{stem}.kdl")),
        PathBuf::from(format!("{stem}.kdl")),
    ];
    for dir in ["experiments", "."] {
        let mut found: Vec<PathBuf> = fs_err::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "kdl"))
            .map(|p| p.strip_prefix(".").map(Path::to_path_buf).unwrap_or(p))
            .collect();
        found.sort();
        candidates.extend(found);
    }
    candidates.into_iter().find(|path| {
        let Ok(text) = fs_err::read_to_string(path) else {
            return false;
        };
        let source = crate::spec::SourceFile {
            name: path.display().to_string(),
            text,
        };
        crate::spec::parse(&source).is_ok_and(|spec| spec.name == name)
    })
}

/// The prompts the workloads of the experiment in `file` declare.
fn declared_prompts(file: &Path) -> Result<BTreeSet<u32>, Error> {
    let text = fs_err::read_to_string(file).map_err(|source| Error::ReadExperiment {
        path: file.display().to_string(),
        source,
        hint: super::error::experiment_hint(file),
    })?;
    let spec = crate::spec::parse(&crate::spec::SourceFile {
        name: file.display().to_string(),
        text,
    })
    .map_err(|e| Error::Spec(Box::new(e)))?;
    Ok(spec.workloads.iter().map(|w| w.prompts).collect())
}

/// Without `--runtime`: the results the store holds of the two lockfiles'
/// runs, chosen as `report` chooses (`stored_runtimes::choose`; their keys
/// under docker when it holds none), and the line that says which.
fn stored_choice(
    store: &Store,
    locks: [&lock::Lockfile; 2],
    experiment: Option<&PathBuf>,
    args: &DiffOptions,
) -> Result<(Runtime, Option<u32>, String), Error> {
    use super::workspace::stored_runtimes::{Choosing, best_cap, choose, stored_caps};
    let keys = |runtime: Runtime| -> BTreeSet<RunKey> {
        locks
            .iter()
            .flat_map(|l| l.runs.iter().filter_map(|r| r.key(runtime).cloned()))
            .collect()
    };
    let runtimes = [Runtime::Docker, Runtime::Local, Runtime::Sim];
    // By runtime, the count of stored results of each cap.
    type Caps = Vec<(Runtime, BTreeMap<u32, usize>)>;
    let caps = |file: &Path| -> Result<Caps, Error> {
        let declared = declared_prompts(file)?;
        let keys: Vec<_> = runtimes.into_iter().map(&keys).collect();
        let caps = stored_caps(store, &keys, &declared).map_err(Error::Store)?;
        Ok(runtimes.into_iter().zip(caps).collect())
    };
    // With `--max-prompts`, the runtimes of its capped results; else of full-size ones.
    let present = store.presence();
    let with_results: Vec<Runtime> = match (args.max_prompts, experiment) {
        (Some(cap), Some(file)) => caps(file)?
            .into_iter()
            .filter(|(_, caps)| caps.contains_key(&cap))
            .map(|(runtime, _)| runtime)
            .collect(),
        (Some(_), None) => Vec::new(),
        (None, _) => runtimes
            .into_iter()
            .filter(|r| keys(*r).iter().any(|k| present.has_samples(k)))
            .collect(),
    };
    let command = format!(
        "perfpipe diff {} {}",
        args.before.display(),
        args.after.display()
    );
    let choosing = Choosing {
        of: "these lockfiles' runs",
        doing: "comparing",
        otherwise: "comparing their keys under runtime",
        command,
        fallback: Runtime::Docker,
    };
    let chosen = choose(&choosing, &with_results, args.max_prompts, || {
        let Some(file) = experiment else {
            return Ok(Vec::new());
        };
        Ok(caps(file)?
            .into_iter()
            .filter_map(|(runtime, caps)| best_cap(&caps).map(|(cap, n)| (runtime, cap, n)))
            .collect())
    })?;
    Ok((chosen.runtime, chosen.max_prompts, chosen.said))
}

/// Every stored run capped at `cap` prompts, by the key of the declared run
/// it caps: its key material with the prompts of a workload of `experiment`.
fn capped_runs(
    store: &Store,
    experiment: Option<&PathBuf>,
    name: &str,
    cap: u32,
) -> Result<BTreeMap<RunKey, RunKey>, Error> {
    let Some(file) = experiment else {
        return Err(Error::Usage {
            message: format!(
                "`--max-prompts` needs the file of experiment `{name}`, to know its workloads' prompts; none in `experiments/` or here declares it"
            ),
            hint: "run `perfpipe diff` in the experiment's project directory".into(),
        });
    };
    let declared = declared_prompts(file)?;
    let mut out = BTreeMap::new();
    for (key, text) in store.entries().map_err(Error::Store)? {
        let Ok(material) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let Some(prompts) = crate::key::num_prompts(&material) else {
            continue;
        };
        for &declared in declared.iter().filter(|&&p| p.min(cap) == prompts) {
            out.insert(
                crate::key::key_with_prompts(&material, declared),
                key.clone(),
            );
        }
    }
    Ok(out)
}

/// The command that measures what `path` pins, or, when its experiment has
/// changed since (`run --locked` would exit 3) or is not here, what to do.
fn fill_command(
    path: &Path,
    lock: &lock::Lockfile,
    experiment: Option<&PathBuf>,
    args: &DiffOptions,
    runtime: Runtime,
    store: &Store,
) -> String {
    let cap = args
        .max_prompts
        .map(|n| format!(" --max-prompts {n}"))
        .unwrap_or_default();
    let options = format!(
        "--lockfile {} --locked --runtime {}{cap}",
        path.display(),
        runtime.name()
    );
    let Some(file) = experiment else {
        return format!(
            "no file of experiment `{}` is in `experiments/` or here; run it with `{options}`",
            lock.experiment
        );
    };
    let command = format!("`perfpipe run {} {options}`", file.display());
    if matches(file, path, args) {
        command
    } else if args.max_prompts.is_none()
        && super::run::older::runnable_from_material(store, lock, runtime)
    {
        // The runs of an older lockfile, from the material the store recorded.
        format!(
            "`perfpipe run {} --lockfile {} --runtime {}` (runs them from the launch material the store recorded, without the experiment as it was)",
            file.display(),
            path.display(),
            runtime.name()
        )
    } else {
        format!(
            "`{}` has changed since `{}` was written, so `run --locked` would refuse it (exit 3); restore the experiment as it was then (e.g. from version control) and run {command}",
            file.display(),
            path.display()
        )
    }
}

/// Whether `file` still resolves to exactly the lockfile at `path`.
fn matches(file: &Path, path: &Path, args: &DiffOptions) -> bool {
    let common = Selection {
        runtime: args.runtime,
        ..Selection::declared(file, Some(path.to_owned()), &args.store)
    };
    load(&common, LockMode::Read).is_ok_and(|loaded| loaded.lock.is_current())
}
