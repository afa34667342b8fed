//! `perfpipe fetch`, and the fetching `run` does before it takes any GPU.

use std::collections::BTreeSet;

use super::workspace::lockfile::{self, LockMode, Network};
use super::{Error, Loaded, Selection, Shell, load};
use crate::facts::Runtime;
use crate::fetch::{self, Event, Failure, Fetcher, human_bytes};
use crate::lock::Lockfile;
use crate::plural::count;
use crate::tokio_runtime::Io;

/// Fetches every model and image the lockfile of `selection` pins, as
/// `run --locked` takes the lockfile: present, and matching the experiment.
pub fn fetch(selection: &Selection, io: &Io, shell: &dyn Shell) -> Result<(), Error> {
    let loaded = load(
        selection,
        LockMode::Run {
            locked: true,
            network: Network::Offline,
        },
    )?;
    let experiment = &selection.experiment;
    lockfile::settle_for_fetch(&loaded.lock, experiment, shell)?;
    let lock = &loaded.lock.new;
    let used = inputs_used(&loaded, loaded.runs.iter().map(|r| (&r.step, &r.workload)));
    say!(
        shell,
        "perfpipe: fetching what `{}` pins (runtime `{}`)",
        loaded.lock.path.display(),
        loaded.runtime.name()
    );
    let fetched = fetch_pinned(
        lock,
        &used,
        loaded.runtime,
        Verbosity::Everything,
        io,
        shell,
    )?;
    fail_on(&fetched.failures, experiment, false)?;
    harness_environment(&loaded, false, true, Verbosity::Everything, io, shell)?;
    Ok(())
}

/// The environment perfpipe made for the experiment's external harness,
/// made now when missing (from the installer's cache only when `offline`),
/// holding exactly the packages the lockfile records where it records them.
/// Where the lockfile has no such record yet, it is written (when `record`;
/// `run --locked` only says so). `None`: the built-in harness, or
/// `PERFPIPE_HARNESS_FROM=path` (the program on PATH runs).
pub fn harness_environment(
    loaded: &Loaded,
    offline: bool,
    record: bool,
    verbosity: Verbosity,
    io: &Io,
    shell: &dyn Shell,
) -> Result<Option<std::path::PathBuf>, Error> {
    use crate::fetch::harness_env;
    use crate::lock::names::HARNESS_ENV;
    let Some(wanted) = crate::lock::HarnessRequirement::of(&loaded.spec.harness.kind) else {
        return Ok(None);
    };
    if harness_env::from_path() {
        if verbosity == Verbosity::Everything {
            say!(
                shell,
                "  {HARNESS_ENV}: not fetched: PERFPIPE_HARNESS_FROM=path runs the `{}` on PATH",
                wanted.program
            );
        }
        return Ok(None);
    }
    let state = &loaded.lock;
    let locked = state.new.input(HARNESS_ENV).and_then(|i| i.locked.clone());
    let pinned = locked
        .as_ref()
        .map(crate::lock::recorded_requirements)
        .unwrap_or_default();
    let (env, made) = harness_env::ensure(&wanted, &pinned, offline, io, &mut |line| {
        say!(shell, "{line}")
    })?;
    if !made && verbosity == Verbosity::Everything {
        say!(
            shell,
            "  {HARNESS_ENV}: present: {} in `{}` ({} packages)",
            wanted.requirement(),
            env.prefix.display(),
            env.packages.len()
        );
    }
    let found = env.locked();
    match locked {
        Some(locked) if locked.get("packages") != found.get("packages") => {
            return Err(Error::LockStale {
                message: format!(
                    "the environment `{}` holds other packages than `{}` records for {HARNESS_ENV}: {}",
                    env.prefix.display(),
                    state.path.display(),
                    package_differences(&locked, &found)
                ),
                hint: format!(
                    "`perfpipe lock --update {HARNESS_ENV} EXPERIMENT` records this environment; or move it away, and `perfpipe fetch EXPERIMENT` installs the lockfile's packages"
                ),
            });
        }
        Some(_) => {}
        None if record => {
            let mut lock = state.new.clone();
            if let Some(input) = lock.inputs.iter_mut().find(|i| i.name == HARNESS_ENV) {
                input.locked = Some(found);
            }
            crate::ops::user_files::write_text(&state.path, &crate::lock::render(&lock))?;
            say!(
                shell,
                "perfpipe: recorded {HARNESS_ENV} in `{}`: {} ({} packages)",
                state.path.display(),
                env.address,
                env.packages.len()
            );
        }
        None => say!(
            shell,
            "note: `{}` records no {HARNESS_ENV} (`--locked`); `perfpipe fetch` records the one this run uses",
            state.path.display()
        ),
    }
    Ok(Some(env.prefix))
}

/// `httpx 0.27.0 → 0.28.1, rich (none) → 14.0.0`: what differs between
/// two records' packages. (pure)
fn package_differences(recorded: &crate::lock::Attrs, found: &crate::lock::Attrs) -> String {
    let split = |a: &crate::lock::Attrs| -> std::collections::BTreeMap<String, String> {
        crate::lock::recorded_requirements(a)
            .into_iter()
            .filter_map(|r| {
                r.split_once("==")
                    .map(|(n, v)| (n.to_owned(), v.to_owned()))
            })
            .collect()
    };
    let (before, after) = (split(recorded), split(found));
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let none = "(none)".to_owned();
    names
        .into_iter()
        .filter(|n| before.get(*n) != after.get(*n))
        .map(|n| {
            format!(
                "{n} {} → {}",
                before.get(n).unwrap_or(&none),
                after.get(n).unwrap_or(&none)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lockfile's names of what `runs` (step, workload) use. A search's
/// probes are not in the lockfile: they use what their searched workload
/// declares.
pub fn inputs_used<'a>(
    loaded: &Loaded,
    runs: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> BTreeSet<String> {
    let lock = &loaded.lock.new;
    runs.into_iter()
        .flat_map(|(step, workload)| match lock.run(step, workload) {
            Some(locked) => locked.uses.clone(),
            None => {
                let declared = &loaded.declared;
                let step = declared.steps.iter().find(|s| &s.name.value == step);
                let searched = loaded.spec.workload(workload).map(|w| w.declared_name());
                match (step, searched) {
                    (Some(step), Some(searched)) => crate::lock::uses(declared, step, searched),
                    _ => Vec::new(),
                }
            }
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// `fetch`: every input, present or not.
    Everything,
    /// `run`: only what is fetched or wrong.
    Missing,
}

/// What fetching did.
#[derive(Debug, Default)]
pub struct Fetched {
    /// Some model file arrived in the cache (a tokenizer may be among them).
    pub models_changed: bool,
    /// Inputs that could not be fetched (a model the Hub could not list but
    /// the cache has a snapshot of is a warning under `run`, not one of them).
    pub failures: Vec<Failure>,
}

/// Fetches the pinned models and (under docker) images among the inputs
/// named in `used`: lists, checks free space, downloads, verifies.
pub fn fetch_pinned(
    lock: &Lockfile,
    used: &BTreeSet<String>,
    runtime: Runtime,
    verbosity: Verbosity,
    io: &Io,
    shell: &dyn Shell,
) -> Result<Fetched, Error> {
    let everything = verbosity == Verbosity::Everything;
    let wants = fetch::wants(lock, used, runtime == Runtime::Docker);
    if everything {
        for input in &wants.unpinned {
            say!(
                shell,
                "  {input}: unpinned: run `perfpipe lock` first (not fetched by tag or branch)"
            );
        }
        for dataset in &wants.datasets {
            say!(
                shell,
                "  {}: present (sha256 {}…, checked on every load)",
                dataset.input,
                &dataset.sha256[..dataset.sha256.len().min(12)]
            );
        }
    } else if !wants.unpinned.is_empty() {
        say!(
            shell,
            "note: not fetched, unpinned: {} (`perfpipe lock` pins them)",
            wants.unpinned.join(", ")
        );
    }
    if wants.models.is_empty() && wants.images.is_empty() {
        if everything {
            say!(shell, "perfpipe: nothing pinned to fetch");
        }
        return Ok(Fetched::default());
    }
    let fetcher = Fetcher::from_env(io).map_err(Error::FetchSetup)?;
    if let Some(mounted) = mounted_hub().filter(|_| runtime == Runtime::Docker)
        && !wants.models.is_empty()
        && mounted != fetcher.cache()
    {
        say!(
            shell,
            "warning: models go to `{}` (HF_HUB_CACHE), but engine containers see `{}` (HF_HOME/hub, which the docker runtime mounts)",
            fetcher.cache().display(),
            mounted.display()
        );
    }
    let survey = fetcher.survey(&wants);
    if (everything || !survey.nothing_to_do() || !survey.failures.is_empty())
        && !wants.models.is_empty()
    {
        say!(
            shell,
            "perfpipe: models from {} into `{}`",
            fetcher.endpoint(),
            fetcher.cache().display()
        );
    }
    for model in &survey.models {
        let (missing, links) = (model.missing.len(), model.link_only.len());
        if missing + links == 0 {
            if everything {
                say!(
                    shell,
                    "  {}: present ({}, {})",
                    model.want.input,
                    count(model.files.len(), "file", "files"),
                    human_bytes(model.total_bytes())
                );
            }
            continue;
        }
        let links = if links > 0 {
            format!(", {links} already cached under another revision")
        } else {
            String::new()
        };
        // `model.X@main` says which commit it is; `model.X@<commit>` already does.
        let at = if model.want.input.ends_with(&model.want.commit) {
            String::new()
        } else {
            format!(" (commit {})", model.want.commit)
        };
        say!(
            shell,
            "  {}{at}: {missing} of {} to download ({} of {}){links}",
            model.want.input,
            count(model.files.len(), "file", "files"),
            human_bytes(model.missing_bytes()),
            human_bytes(model.total_bytes()),
        );
    }
    for image in &survey.images {
        if !image.present {
            say!(
                shell,
                "  {}: to pull: {}",
                image.want.input,
                image.want.image
            );
        } else if everything {
            say!(
                shell,
                "  {}: present: {}",
                image.want.input,
                image.want.image
            );
        }
    }
    let mut failures = Vec::new();
    for failure in survey.failures.iter().cloned() {
        if failure.cached && !everything {
            say!(
                shell,
                "warning: cannot check {} against the Hub ({}); the engine loads the snapshot the cache has",
                failure.input,
                failure.message
            );
        } else {
            say!(shell, "  {}: {}", failure.input, failure.message);
            failures.push(failure);
        }
    }
    let space = fetch::check_space(&survey).map_err(|e| match e {
        fetch::Error::NoSpace { ref dir, .. } => Error::NoSpace {
            message: e.to_string(),
            dir: dir.clone(),
        },
        other => Error::FetchSetup(other),
    })?;
    if space.needed > 0 {
        say!(
            shell,
            "perfpipe: {} to download, {} free in `{}`",
            human_bytes(space.needed),
            human_bytes(space.free),
            space.at.display()
        );
    }
    let models_changed = survey
        .models
        .iter()
        .any(|m| !m.missing.is_empty() || !m.link_only.is_empty());
    let before = failures.len();
    failures.extend(fetcher.fetch(&survey, &mut |event| print_event(shell, event)));
    for failure in &failures[before..] {
        say!(shell, "  {}: {}", failure.input, failure.message);
    }
    let downloaded: Vec<u64> = survey
        .models
        .iter()
        .flat_map(|m| m.missing.iter().map(|f| f.size))
        .collect();
    if !downloaded.is_empty() && failures.is_empty() {
        say!(
            shell,
            "perfpipe: downloaded {} ({}), each matching the digest the Hub lists for its commit",
            count(downloaded.len(), "file", "files"),
            human_bytes(downloaded.iter().sum())
        );
    }
    if failures.is_empty() && (everything || !survey.nothing_to_do()) {
        let what = match (wants.models.is_empty(), wants.images.is_empty()) {
            (false, false) => "model and image",
            (false, true) => "model",
            _ => "image",
        };
        say!(shell, "perfpipe: every pinned {what} is on this machine");
    }
    Ok(Fetched {
        models_changed,
        failures,
    })
}

/// Exit 1 when anything could not be fetched (under `run`: before anything ran).
pub fn fail_on(failures: &[Failure], experiment: &std::path::Path, run: bool) -> Result<(), Error> {
    if failures.is_empty() {
        return Ok(());
    }
    let mut inputs: Vec<&str> = failures.iter().map(|f| f.input.as_str()).collect();
    inputs.dedup();
    Err(Error::FetchFailed {
        inputs: inputs.join(", "),
        hint: format!(
            "{}the lines above say why; `perfpipe fetch {}` tries again and keeps what was fetched",
            if run {
                "nothing ran and no GPU was taken; "
            } else {
                ""
            },
            experiment.display()
        ),
    })
}

/// The hub cache the docker runtime mounts into containers: `HF_HOME/hub`.
fn mounted_hub() -> Option<std::path::PathBuf> {
    let home = match std::env::var_os("HF_HOME") {
        Some(home) => std::path::PathBuf::from(home),
        None => std::path::PathBuf::from(std::env::var_os("HOME")?).join(".cache/huggingface"),
    };
    Some(home.join("hub"))
}

fn print_event(shell: &dyn Shell, event: Event<'_>) {
    match event {
        Event::Downloading {
            model,
            file,
            index,
            total,
        } => say!(
            shell,
            "  [{}/{total}] {} ({}) of {}",
            index + 1,
            file.name,
            human_bytes(file.size),
            model.repo
        ),
        Event::Progress { file, done } => say!(
            shell,
            "        {:>3}% ({} of {})",
            done * 100 / file.size.max(1),
            human_bytes(done),
            human_bytes(file.size)
        ),
        Event::Retrying { file, error } => {
            say!(
                shell,
                "        {}: {error}; downloading it again",
                file.name
            )
        }
        Event::Pulling { image } => say!(shell, "  docker pull {}", image.image),
    }
}
