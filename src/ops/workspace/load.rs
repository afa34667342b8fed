//! What every command loads first: the experiment, resolved against its
//! lockfile, its inputs hashed, its runs keyed, the store opened.

use std::path::{Path, PathBuf};

use super::lockfile::{self, LockMode, LockState};
use crate::facts::Runtime;
use crate::inputs::{self, ResolvedInputs};
use crate::ops::Error;
use crate::spec::{self, SourceFile, Spec};
use crate::store::Store;

/// Which runs of which experiment a command works on, and how.
#[derive(Debug, Clone)]
pub struct Selection {
    pub experiment: PathBuf,
    /// `--runtime` (else the experiment's, else docker).
    pub runtime: Option<Runtime>,
    pub store: PathBuf,
    pub samples: u32,
    pub retry_failed: bool,
    pub fresh_engine: bool,
    pub max_prompts: Option<u32>,
    pub lockfile: Option<PathBuf>,
    /// `--step NAME` (repeatable; `*` and `?` match any run of characters
    /// and any one): only the runs of the steps these name. Empty: every step.
    pub steps: Vec<String>,
}

impl Selection {
    /// The declared runs of `experiment`, uncapped, one sample each, on the
    /// experiment's own runtime: for an experiment file a command found
    /// itself (gc roots, diff) or was given.
    pub fn declared(experiment: &Path, lockfile: Option<PathBuf>, store: &Path) -> Self {
        Self {
            experiment: experiment.to_owned(),
            runtime: None,
            store: store.to_owned(),
            samples: 1,
            retry_failed: false,
            fresh_engine: false,
            max_prompts: None,
            lockfile,
            steps: Vec::new(),
        }
    }

    /// Whether the runs of step `name` are selected (`--step`).
    pub fn wants_step(&self, name: &str) -> bool {
        self.steps.is_empty() || self.steps.iter().any(|glob| glob_matches(glob, name))
    }

    /// Refuses a `--step` that names no step of `spec`.
    fn check_steps(&self, spec: &Spec) -> Result<(), Error> {
        let names: Vec<&str> = spec.steps.iter().map(|s| s.name.value.as_str()).collect();
        match self
            .steps
            .iter()
            .find(|glob| !names.iter().any(|name| glob_matches(glob, name)))
        {
            None => Ok(()),
            Some(glob) => Err(Error::Usage {
                message: format!("`--step {glob}` names no step of the experiment"),
                hint: format!(
                    "its steps: {} (`*` matches any characters, `?` one)",
                    names.join(", ")
                ),
            }),
        }
    }
}

/// Whether `name` matches the glob `pattern`: `*` any run of characters
/// (none too), `?` any one, every other character itself.
fn glob_matches(pattern: &str, name: &str) -> bool {
    let (pattern, name): (Vec<char>, Vec<char>) =
        (pattern.chars().collect(), name.chars().collect());
    // The classic backtracking match: on a mismatch, the last `*` takes one
    // more character.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// What every command loads first.
#[derive(Debug)]
pub struct Loaded {
    /// The experiment as declared (its inputs as the lockfile names them).
    pub declared: Spec,
    /// The experiment as it runs: pinned images and model commits applied,
    /// workloads capped by `--max-prompts`.
    pub spec: Spec,
    /// The experiment pinned but not capped: the lockfile's runs.
    pub uncapped: Spec,
    pub runtime: Runtime,
    /// Every run of `spec` with its key under `runtime`.
    pub runs: Vec<crate::key::KeyedRun>,
    pub inputs: ResolvedInputs,
    pub store: Store,
    pub lock: LockState,
    /// Where each search of the largest load within an SLO stands; its
    /// probes are points of `spec` and runs of `runs`.
    pub searches: Vec<crate::analyze::search::SearchResult>,
}

/// Parses the experiment, resolves it against its lockfile as `mode`
/// allows, and finds its files. Writes nothing but, unless `mode` only
/// reads, the store's cache of input hashes.
/// Each declared engine version its engine has not released, as perfpipe's
/// list knows them (`facts::releases`), a sentence each; under `sim` and
/// `docker` only: `local` checks the installed engine's own version. An
/// engine whose image `lockfile` pins as declared is released: its registry
/// had the tag when `lock` asked, whatever the list (of a date) says.
pub fn unreleased_engines(
    spec: &Spec,
    runtime: Runtime,
    lockfile: Option<&crate::lock::Lockfile>,
) -> Vec<String> {
    use crate::facts::releases::{AS_OF, Known, known};
    if runtime == Runtime::Local {
        return Vec::new();
    }
    let requests = crate::lock::pin_requests(spec);
    let pinned = |engine: &crate::spec::EngineDecl| {
        let name = crate::lock::names::engine(engine.kind);
        let Some(request) = requests.iter().find(|r| r.name == name) else {
            return false;
        };
        lockfile.is_some_and(|lock| {
            lock.inputs
                .iter()
                .any(|i| i.name == name && i.original == request.original && i.locked.is_some())
        })
    };
    spec.engines
        .iter()
        .filter(|engine| !pinned(engine))
        .filter_map(|engine| match known(engine.kind, &engine.version) {
            Known::Unknown { newest } => Some(format!(
                "`engine {} version=\"{}\"`: {} has released no such version that perfpipe knows of (its list, to {newest}, is of {AS_OF}, and no lockfile pins its image: `perfpipe lock` asks the registry; `--runtime {}` would {} it all the same)",
                engine.kind.name(),
                engine.version,
                engine.kind.display_name(),
                runtime.name(),
                match runtime {
                    Runtime::Sim => "simulate",
                    _ => "try to pull the image of",
                },
            )),
            Known::Released | Known::Unlisted => None,
        })
        .collect()
}

/// An input of the experiment that cannot be used; a dataset file that is
/// missing or not a file is shown where the experiment names it.
fn input_error(source: &SourceFile, declared: &Spec, e: inputs::Error) -> Error {
    let (workload, path, label, help) = match &e {
        inputs::Error::MissingDataset { workload, path } => (
            workload,
            path,
            "no such file",
            "the experiment's paths are relative to the project root (the directory holding `perfpipe.toml`, else `experiments/`), not to where perfpipe is typed; a `sharegpt` dataset may name a `sample=` file to use when the real one is absent",
        ),
        inputs::Error::NotAFile { workload, path, .. } => (
            workload,
            path,
            "not a file",
            "`path=` (and `sample=`) name the dataset's JSON file itself, from the project root",
        ),
        inputs::Error::Dataset { .. } => return Error::Dataset(e),
        _ => return Error::Inputs(e),
    };
    // A point of a sweep (`chat@c=8`) is declared as its workload (`chat`).
    let declared_as = declared
        .workload(workload)
        .map_or(workload.as_str(), |w| w.declared_name());
    match spec::dataset_file_span(&source.text, declared_as, path) {
        Some(span) => Error::Spec(Box::new(crate::spec::SpecErrors::new(
            &source.name,
            source.text.clone(),
            vec![crate::spec::SpecDiagnostic::new(span, e.to_string(), label).with_help(help)],
        ))),
        None if matches!(e, inputs::Error::NotAFile { .. }) => Error::NotAFile(e),
        None => Error::Inputs(e),
    }
}

pub fn load(common: &Selection, mode: LockMode) -> Result<Loaded, Error> {
    let path = &common.experiment;
    let text = fs_err::read_to_string(path).map_err(|source| Error::ReadExperiment {
        path: path.display().to_string(),
        source,
        hint: crate::ops::error::experiment_hint(path),
    })?;
    let source = SourceFile {
        name: path.display().to_string(),
        text,
    };
    let declared = spec::parse(&source).map_err(|e| Error::Spec(Box::new(e)))?;
    common.check_steps(&declared)?;
    let lock_path = lockfile::lockfile_path(common);
    let (old, legacy) = match lockfile::read(&lock_path)? {
        Some(old) => (Some(old), None),
        None => match lockfile::read_legacy(common, &declared.name)? {
            Some((path, old)) => (Some(old), Some(path)),
            None => (None, None),
        },
    };
    let runtime = common
        .runtime
        .or(declared.runtime)
        .unwrap_or(Runtime::Docker);
    if let (LockMode::Run { locked: true, .. }, Some(first)) = (
        &mode,
        unreleased_engines(&declared, runtime, old.as_ref()).first(),
    ) {
        return Err(Error::Usage {
            message: first.clone(),
            hint: "under `--locked` a version must be one the engine released: correct it, or run without `--locked`".into(),
        });
    }
    let (policy, resolver) = lockfile::pin_policy(&mode, runtime);
    let (pins, problems) = crate::lock::resolve_pins(
        &crate::lock::pin_requests(&declared),
        old.as_ref(),
        &policy,
        resolver.as_deref(),
    );
    let mut pins = pins;
    pins.extend(harness_env_pin(&declared, old.as_ref(), &mode));
    let mut spec = crate::lock::apply_pins(&declared, &pins);
    let store = Store::open(&common.store).map_err(Error::Store)?;
    // What is written into a lockfile is read from the files themselves.
    let rehash = matches!(
        mode,
        LockMode::Lock { .. } | LockMode::Run { locked: true, .. }
    );
    let mut hashes = inputs::HashCache::open(store.hash_cache_path(), !rehash);
    let inputs = inputs::resolve(&spec, Path::new(""), &mut hashes)
        .map_err(|e| input_error(&source, &declared, e))?;
    // A command that only reads (`plan`, `report`, `store gc --dry-run`, …)
    // writes nothing, not even this cache; one that writes keeps it in its
    // store once that is marked.
    if !matches!(mode, LockMode::Read) && store.mark_if_present() {
        hashes.save(crate::store::is_marked);
    }
    let declared_runs = crate::key::keyed_runs(&spec, runtime, &inputs);
    // A lockfile nothing writes is only compared: its runs need the keys of
    // this runtime, not of every runtime.
    let keyed_for = matches!(mode, LockMode::Read).then_some(runtime);
    let runtimes = keyed_for.map_or(crate::lock::RUNTIMES.to_vec(), |rt| vec![rt]);
    let new = crate::lock::build_with_keys(
        &declared,
        &spec,
        pins.clone(),
        &inputs,
        &runtimes,
        Some((runtime, &declared_runs)),
    );
    // The same as `new` (for this runtime's keys), or not only in tokenizers.
    let equals = |old: &crate::lock::Lockfile, other: &crate::lock::Lockfile| match keyed_for {
        Some(runtime) => old.keyed_for_equals(runtime, other),
        None => old == other,
    };
    let only_tokenizers_differ = match &old {
        Some(old) if !equals(old, &new) => equals(
            old,
            &crate::lock::build_with_keys(
                &declared,
                &spec,
                pins,
                &tokenizers_of(old, &declared, &spec, &inputs),
                &runtimes,
                None,
            ),
        ),
        _ => false,
    };
    // A capped workload is another workload with keys of its own; the
    // lockfile keeps the declared ones.
    let uncapped = spec.clone();
    let mut runs = match common.max_prompts {
        Some(cap) => {
            for workload in &mut spec.workloads {
                workload.prompts = workload.prompts.min(cap);
            }
            crate::key::keyed_runs(&spec, runtime, &inputs)
        }
        None => declared_runs,
    };
    let mut inputs = inputs;
    let searches = crate::ops::slo_search::expand(
        &mut spec,
        runtime,
        &mut inputs,
        &store,
        plan_options(common, runtime),
    )?;
    if !searches.is_empty() {
        runs = crate::key::keyed_runs(&spec, runtime, &inputs);
    }
    refuse_secrets(&runs, &new)?;
    Ok(Loaded {
        declared,
        spec,
        uncapped,
        runtime,
        runs,
        inputs,
        store,
        searches,
        lock: LockState {
            path: lock_path,
            old,
            new,
            problems,
            only_tokenizers_differ,
            legacy,
            keyed_for,
        },
    })
}

/// The `harness.env` input: kept as the old lockfile pins it; `lock`
/// pins it from the environment on this machine when that is made (it
/// installs nothing: `fetch` and `run` do).
fn harness_env_pin(
    declared: &Spec,
    old: Option<&crate::lock::Lockfile>,
    mode: &LockMode,
) -> Option<crate::lock::Input> {
    use crate::lock::{Update, names::HARNESS_ENV};
    let (asks, renew) = match mode {
        LockMode::Lock { update, .. } => (
            true,
            match update {
                Update::Nothing => false,
                Update::All => true,
                Update::Only(names) => names.contains(HARNESS_ENV),
            },
        ),
        _ => (false, false),
    };
    crate::lock::env_input(declared, old, renew, |wanted| {
        let io = crate::tokio_runtime::Io::new();
        asks.then(|| crate::fetch::harness_env::find(wanted, &io).ok().flatten())
            .flatten()
            .map(|env| env.locked())
    })
}

/// How `common` plans: what counts as a stored run.
pub fn plan_options(common: &Selection, runtime: Runtime) -> crate::plan::PlanOptions {
    crate::plan::PlanOptions {
        runtime,
        samples: common.samples as usize,
        retry_failed: common.retry_failed,
    }
}

/// Key material is stored, and a lockfile written, as is (rewriting either
/// would change a key): one holding a secret's value is refused before
/// anything is written or run.
pub fn refuse_secrets(
    runs: &[crate::key::KeyedRun],
    lock: &crate::lock::Lockfile,
) -> Result<(), Error> {
    let secrets = crate::secrets::env();
    for run in runs {
        let what = format!("the key material of `{}` × `{}`", run.step, run.workload);
        secrets
            .refuse_in(&what, &run.canonical)
            .map_err(Error::Secret)?;
    }
    secrets
        .refuse_in("the lockfile", &crate::lock::render(lock))
        .map_err(Error::Secret)
}

/// `inputs` with each model's tokenizer as `old` pins it, as a machine that
/// has those tokenizers would resolve them.
fn tokenizers_of(
    old: &crate::lock::Lockfile,
    declared: &Spec,
    pinned: &Spec,
    inputs: &ResolvedInputs,
) -> ResolvedInputs {
    let mut as_pinned = inputs.clone();
    for (step, pinned_step) in declared.steps.iter().zip(&pinned.steps) {
        let id = old
            .input(&crate::lock::names::tokenizer(&step.model))
            .and_then(|i| i.locked.as_ref())
            .and_then(|l| l.get("id"));
        if let Some(id) = id {
            as_pinned.tokenizers.insert(
                (
                    pinned_step.model.id.clone(),
                    pinned_step.model.revision.clone(),
                ),
                inputs::ResolvedTokenizer {
                    id: id.clone(),
                    path: None,
                },
            );
        }
    }
    as_pinned
}

/// Says which workloads measure the shipped sample instead of the declared
/// dataset, and which local model directories this machine does not have.
pub fn input_notes(loaded: &Loaded) -> Vec<String> {
    let samples = loaded
        .inputs
        .datasets
        .iter()
        .filter(|(_, d)| d.is_sample)
        .map(|(workload, d)| {
            format!(
                "note: workload `{workload}` uses the sample dataset `{}` (the declared file is absent)",
                d.path.display()
            )
        });
    let models = loaded.inputs.absent_models.iter().map(|path| {
        format!(
            "note: model directory `{path}` is not on this machine: its runs are keyed by the path alone (where the directory is, its files' sha256 is in each key)"
        )
    });
    samples
        .chain(models)
        .chain(concurrency_past_prompts(&loaded.uncapped))
        .collect()
}

/// A note per workload whose concurrency (or searched concurrency) exceeds
/// its prompts: no more requests than it sends are ever in flight, so every
/// load above measures the same load.
fn concurrency_past_prompts(spec: &Spec) -> Vec<String> {
    let mut notes: Vec<(String, String)> = Vec::new();
    for workload in &spec.workloads {
        let searched = workload
            .search
            .as_ref()
            .filter(|s| s.axis == crate::spec::SearchAxis::Concurrency)
            .map(|s| s.to);
        let most = workload
            .concurrency
            .map(f64::from)
            .into_iter()
            .chain(searched)
            .reduce(f64::max);
        let name = workload.declared_name();
        match most {
            Some(most)
                if most > f64::from(workload.prompts) && !notes.iter().any(|(n, _)| n == name) =>
            {
                notes.push((
                    name.to_owned(),
                    format!(
                        "note: workload `{name}` reaches concurrency {most} but sends {}: no more than that are ever in flight, so a concurrency above {} measures the same load (`prompts` sends more)",
                        crate::plural::count(workload.prompts as usize, "prompt", "prompts"),
                        workload.prompts
                    ),
                ));
            }
            _ => {}
        }
    }
    notes.into_iter().map(|(_, note)| note).collect()
}

#[cfg(test)]
mod tests {
    use super::glob_matches;

    #[test]
    fn step_globs_match_any_run_of_characters_or_one() {
        for (glob, name) in [
            ("vllm", "vllm"),
            ("vllm*", "vllm-seqs@--max-num-seqs=8"),
            ("*seqs*", "vllm-seqs@--max-num-seqs=8"),
            ("v?lm", "vllm"),
            ("*", ""),
            ("a*b*c", "aXbYbc"),
        ] {
            assert!(glob_matches(glob, name), "{glob} {name}");
        }
        for (glob, name) in [
            ("vllm", "vllm-seqs"),
            ("v?lm", "vlm"),
            ("a*b", "ab-c"),
            ("", "x"),
        ] {
            assert!(!glob_matches(glob, name), "{glob} {name}");
        }
    }
}
