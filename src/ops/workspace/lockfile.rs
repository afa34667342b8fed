//! How each command treats the lockfile: read it, write it as `run` and
//! `lock` do, or refuse a stale one under `--locked`.

use std::path::{Path, PathBuf};

use super::load::Selection;
use crate::facts::Runtime;
use crate::lock::{self, Lockfile, PinPolicy, PinResolver, Problem, Update};
use crate::ops::{Error, Shell};
use crate::plural::count;
use crate::tokio_runtime::Io;

/// What a command may do with the lockfile.
#[derive(Debug, Clone)]
pub enum LockMode {
    /// Use its pins; never write it, never ask the network.
    Read,
    /// `run`: write it when missing or out of date, pinning new inputs
    /// (over `network`, if online); with `locked`, refuse any change instead.
    Run { locked: bool, network: Network },
    /// `lock`: also fill open pins, and re-resolve what `update` names.
    Lock { network: Network, update: Update },
}

/// Whether pins may be asked of the network, and the runtime that asks.
#[derive(Debug, Clone)]
pub enum Network {
    /// `--offline`: ask nothing.
    Offline,
    Online(Io),
}

impl Network {
    pub fn new(offline: bool, io: &Io) -> Self {
        if offline {
            Self::Offline
        } else {
            Self::Online(io.clone())
        }
    }
}

/// The lockfile as loaded, and as the experiment now resolves it.
#[derive(Debug)]
pub struct LockState {
    pub path: PathBuf,
    /// What the file held (`None`: there was none).
    pub old: Option<Lockfile>,
    pub new: Lockfile,
    /// Pins that could not be resolved.
    pub problems: Vec<Problem>,
    /// The file differs from the experiment only in tokenizers: this machine
    /// lacks (or has other) tokenizer files than where it was written, which
    /// fetching the pinned models may bring.
    pub only_tokenizers_differ: bool,
    /// Where `old` was read from when it is not `path` (see [`read_legacy`]).
    pub legacy: Option<PathBuf>,
    /// Under [`LockMode::Read`], nothing writes the lockfile: `new` holds the
    /// keys of this runtime only, and is compared with `old`'s keys of it.
    pub keyed_for: Option<Runtime>,
}

impl LockState {
    pub fn is_current(&self) -> bool {
        match (&self.old, self.keyed_for) {
            (None, _) => false,
            (Some(old), Some(runtime)) => old.keyed_for_equals(runtime, &self.new),
            (Some(old), None) => *old == self.new,
        }
    }
}

/// `--lockfile`, else `lockfiles/<experiment file stem>.lock`: the whole
/// stem, dots included (`qwen3.5-9b.kdl` → `qwen3.5-9b.lock`).
pub fn lockfile_path(common: &Selection) -> PathBuf {
    common.lockfile.clone().unwrap_or_else(|| {
        let stem = common.experiment.file_stem().unwrap_or_default();
        PathBuf::from("lockfiles").join(format!("{}.lock", stem.to_string_lossy()))
    })
}

/// The lockfile of `experiment` where perfpipe used to write it for a file
/// name with a dot (`qwen3.5-9b.kdl` → `lockfiles/qwen3.lock`), when it is
/// there and is that experiment's (another dotted file may have written it).
/// It pins as before; `lock` and `run` write it at its own path.
pub fn read_legacy(
    common: &Selection,
    experiment: &str,
) -> Result<Option<(PathBuf, Lockfile)>, Error> {
    if common.lockfile.is_some() {
        return Ok(None);
    }
    let stem = common.experiment.file_stem().unwrap_or_default();
    let legacy = PathBuf::from("lockfiles").join(stem).with_extension("lock");
    if legacy == lockfile_path(common) {
        return Ok(None);
    }
    Ok(read(&legacy)?
        .filter(|l| l.experiment == experiment)
        .map(|l| (legacy, l)))
}

/// Writes a current lockfile read from its old path at its own.
pub fn move_legacy(state: &LockState, shell: &dyn Shell) -> Result<(), Error> {
    if let Some(legacy) = &state.legacy {
        write(state)?;
        say!(
            shell,
            "perfpipe: wrote `{}` from `{}` (lockfiles take the whole file name now); delete the old one",
            state.path.display(),
            legacy.display()
        );
    }
    Ok(())
}

pub fn read(path: &Path) -> Result<Option<Lockfile>, Error> {
    match fs_err::read_to_string(path) {
        Ok(text) => lock::parse(&path.display().to_string(), &text)
            .map(Some)
            .map_err(|e| not_a_lockfile(path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::ReadLockfile {
            path: path.display().to_string(),
            source,
        }),
    }
}

/// A file that is no lockfile at all is not damage to delete: say what it
/// is and which file was meant.
fn not_a_lockfile(path: &Path, e: lock::Error) -> Error {
    let lock::Error::NotALockfile { first, .. } = &e else {
        return Error::Lockfile(e);
    };
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let hint = if first.as_deref() == Some("experiment") {
        format!(
            "`{}` is an experiment; its lockfile is `lockfiles/{stem}.lock` (`perfpipe lock {}` writes it)",
            path.display(),
            path.display()
        )
    } else {
        "name a lockfile written by `perfpipe lock`: `lockfiles/<experiment>.lock`, or a copy of one".to_owned()
    };
    Error::Usage {
        message: e.to_string(),
        hint,
    }
}

/// How pins are found under `mode` for runs under `runtime`: the policy,
/// and the network if allowed (set up only when a request is made).
pub fn pin_policy(mode: &LockMode, runtime: Runtime) -> (PinPolicy, Option<Box<dyn PinResolver>>) {
    let online = |network: &Network| -> Option<Box<dyn PinResolver>> {
        match network {
            Network::Offline => None,
            Network::Online(io) => Some(Box::new(lock::resolve::Online::from_env(io))),
        }
    };
    match mode {
        LockMode::Read | LockMode::Run { locked: true, .. } => (PinPolicy::default(), None),
        LockMode::Run { network, .. } => (
            PinPolicy {
                needed_under: Some(runtime),
                ..PinPolicy::default()
            },
            online(network),
        ),
        LockMode::Lock { network, update } => (
            PinPolicy {
                fill_unpinned: true,
                update: update.clone(),
                needed_under: None,
            },
            online(network),
        ),
    }
}

/// Under `run`: writes the lockfile if it changed and says how, or refuses
/// under `--locked`.
pub fn settle_for_run(
    state: &LockState,
    locked: bool,
    experiment: &Path,
    shell: &dyn Shell,
) -> Result<(), Error> {
    if state.is_current() {
        return if locked {
            Ok(())
        } else {
            move_legacy(state, shell)
        };
    }
    let fix = format!("perfpipe lock {}", experiment.display());
    if locked {
        let message = match &state.old {
            None => format!("`{}` does not exist", state.path.display()),
            Some(old) => {
                say!(
                    shell,
                    "perfpipe: the experiment no longer matches `{}`:",
                    state.path.display()
                );
                for line in change_lines(old, &state.new) {
                    say!(shell, "{line}");
                }
                format!("`{}` is out of date", state.path.display())
            }
        };
        return Err(Error::LockStale {
            message,
            hint: format!("`{fix}` updates it; commit the lockfile with the experiment"),
        });
    }
    write(state)?;
    match &state.old {
        None => say!(
            shell,
            "perfpipe: wrote `{}` ({})",
            state.path.display(),
            pin_summary(&state.new)
        ),
        Some(old) => {
            say!(shell, "perfpipe: updated `{}`:", state.path.display());
            for line in change_lines(old, &state.new) {
                say!(shell, "{line}");
            }
        }
    }
    report_problems(state, shell);
    Ok(())
}

/// Before fetching: the lockfile must match the experiment, as under
/// `run --locked`, except for tokenizers, which fetching the models brings.
pub fn settle_for_fetch(
    state: &LockState,
    experiment: &Path,
    shell: &dyn Shell,
) -> Result<(), Error> {
    if state.is_current() {
        return Ok(());
    }
    if let (true, Some(old)) = (state.only_tokenizers_differ, &state.old) {
        let names: Vec<&str> = lock::input_changes(old, &state.new)
            .iter()
            .map(|c| c.name)
            .collect();
        say!(
            shell,
            "perfpipe: this machine does not have the tokenizers `{}` pins ({}); fetching their models brings them",
            state.path.display(),
            names.join(", ")
        );
        return Ok(());
    }
    settle_for_run(state, true, experiment, shell)
}

pub fn write(state: &LockState) -> Result<(), Error> {
    crate::ops::user_files::write_text(&state.path, &lock::render(&state.new))
}

/// `  ~ engine.vllm: version 0.11.0 → 0.17.1`, one per changed input, then
/// how many run keys moved.
pub fn change_lines(old: &Lockfile, new: &Lockfile) -> Vec<String> {
    let mut lines: Vec<String> = lock::input_changes(old, new)
        .iter()
        .map(|c| {
            let sign = match (c.before, c.after) {
                (None, _) => '+',
                (_, None) => '-',
                _ => '~',
            };
            format!("  {sign} {}: {}", c.name, c.describe())
        })
        .collect();
    let moved = new
        .runs
        .iter()
        .filter(|r| old.run(&r.step, &r.workload) != Some(r))
        .count();
    if moved > 0 {
        lines.push(format!(
            "  {} with new keys (`perfpipe explain` says why each one runs)",
            count(moved, "run", "runs")
        ));
    }
    if lines.is_empty() {
        lines.push("  runs added, removed or renamed".into());
    }
    lines
}

/// `7 inputs, 2 unpinned: engine.vllm, model.Qwen/Qwen3-14B@main`.
pub fn pin_summary(lock: &Lockfile) -> String {
    let unpinned: Vec<&str> = lock.unpinned().map(|i| i.name.as_str()).collect();
    if unpinned.is_empty() {
        format!(
            "{}, all pinned",
            count(lock.inputs.len(), "input", "inputs")
        )
    } else {
        format!(
            "{}, {} unpinned: {}",
            count(lock.inputs.len(), "input", "inputs"),
            unpinned.len(),
            unpinned.join(", ")
        )
    }
}

/// One warning per pin that failed, except that a host that could not be
/// reached is said once, with every pin it left open.
pub fn report_problems(state: &LockState, shell: &dyn Shell) {
    let mut unreachable: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for p in &state.problems {
        match &p.unreachable {
            None if p.kept => say!(
                shell,
                "warning: cannot refresh the pin of {}, so it keeps the one the lockfile had: {}",
                p.input,
                p.message
            ),
            None => say!(shell, "warning: cannot pin {}: {}", p.input, p.message),
            Some(host) => match unreachable.iter_mut().find(|(h, ..)| h == host) {
                Some((.., inputs)) => inputs.push(&p.input),
                None => unreachable.push((host, &p.message, vec![&p.input])),
            },
        }
    }
    for (host, message, inputs) in unreachable {
        let (kept, open): (Vec<&str>, Vec<&str>) = inputs
            .iter()
            .partition(|input| state.problems.iter().any(|p| p.kept && p.input == **input));
        if !open.is_empty() {
            say!(
                shell,
                "warning: cannot reach {host}, so {} stay{} unpinned (`perfpipe lock` pins them where it is reachable; `--offline` asks no network)\n  {message}",
                open.join(", "),
                if open.len() == 1 { "s" } else { "" },
            );
        }
        if !kept.is_empty() {
            say!(
                shell,
                "warning: cannot reach {host}, so {} keep{} the pin{} the lockfile had (`perfpipe lock --update` refreshes them where it is reachable)\n  {message}",
                kept.join(", "),
                if kept.len() == 1 { "s" } else { "" },
                if kept.len() == 1 { "" } else { "s" },
            );
        }
    }
}
