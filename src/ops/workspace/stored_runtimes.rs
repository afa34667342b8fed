//! Which runtimes the store holds an experiment's results under, written
//! once: `report` reports the one it holds ([`stored_runtime`](crate::ops::workspace::stored_runtimes::stored_runtime): measured
//! runtimes before the simulation), and `plan` and `explain`, which plan
//! the default runtime without `--runtime`, say when that one has nothing
//! stored while another has (`run --runtime sim` stored them).

use std::collections::{BTreeMap, BTreeSet};

use crate::facts::Runtime;
use crate::key::RunKey;
use crate::ops::{Error, Loaded, Selection, Shell};
use crate::plural::count;
use crate::store::Store;

/// The keys of `loaded`'s runs under `runtime`. Those of another runtime
/// than the loaded one come from a current lockfile (uncapped runs only)
/// rather than hashing every run again.
pub fn keys_under(loaded: &Loaded, selection: &Selection, runtime: Runtime) -> Vec<RunKey> {
    let lockfile = match &loaded.lock.old {
        Some(old) if loaded.lock.is_current() && selection.max_prompts.is_none() => Some(old),
        _ => None,
    };
    if runtime == loaded.runtime {
        loaded.runs.iter().map(|r| r.key.clone()).collect()
    } else if let Some(old) = lockfile {
        old.runs
            .iter()
            .filter_map(|r| r.key(runtime).cloned())
            .collect()
    } else {
        crate::key::keyed_runs(&loaded.spec, runtime, &loaded.inputs)
            .into_iter()
            .map(|r| r.key)
            .collect()
    }
}

/// How many of `loaded`'s runs the store holds under each runtime that has
/// some (a presence test per key).
pub fn stored_runs(loaded: &Loaded, selection: &Selection) -> Vec<(Runtime, usize)> {
    let present = loaded.store.presence();
    [Runtime::Docker, Runtime::Local, Runtime::Sim]
        .into_iter()
        .map(|runtime| {
            let keys = keys_under(loaded, selection, runtime);
            let stored = keys.iter().filter(|k| present.has_samples(k)).count();
            (runtime, stored)
        })
        .filter(|(_, stored)| *stored > 0)
        .collect()
}

/// The runtimes under which the store holds some of `loaded`'s runs: a
/// presence test per key, up to the first one held.
pub fn runtimes_with_results(loaded: &Loaded, selection: &Selection) -> Vec<Runtime> {
    let present = loaded.store.presence();
    [Runtime::Docker, Runtime::Local, Runtime::Sim]
        .into_iter()
        .filter(|&runtime| {
            let keys = keys_under(loaded, selection, runtime);
            keys.iter().any(|k| present.has_samples(k))
        })
        .collect()
}

/// Without `--runtime`, when the store holds nothing of `loaded`'s runtime
/// but runs of the experiment under another, says so and how to see them
/// with `command` (`plan`, `explain`); without `--max-prompts`, when it
/// holds no full-size run of the experiment at all but capped ones, says
/// that and how to see them.
pub fn say_if_elsewhere(loaded: &Loaded, selection: &Selection, command: &str, shell: &dyn Shell) {
    let present = loaded.store.presence();
    if loaded.runs.iter().any(|r| present.has_samples(&r.key)) {
        return;
    }
    let experiment = selection.experiment.display();
    let elsewhere = stored_runs(loaded, selection);
    if selection.runtime.is_none() {
        for (runtime, stored) in &elsewhere {
            say!(
                shell,
                "perfpipe: the store holds no run of this experiment under runtime `{}`, but {} under `{}`\n  help: `perfpipe {command} {experiment} --runtime {}` shows those",
                loaded.runtime.name(),
                count(*stored, "run", "runs"),
                runtime.name(),
                runtime.name()
            );
        }
    }
    if !elsewhere.is_empty() || selection.max_prompts.is_some() {
        return;
    }
    // A failure to read the store is for the command to meet, not its note.
    let Ok(capped) = stored_capped(loaded, selection) else {
        return;
    };
    for (runtime, cap, stored) in capped {
        if selection.runtime.is_some_and(|r| r != runtime) {
            continue;
        }
        say!(
            shell,
            "perfpipe: the store holds no full-size run of this experiment, but {} capped at {} under runtime `{}`\n  help: `perfpipe {command} {experiment} --runtime {} --max-prompts {cap}` shows those",
            count(stored, "run", "runs"),
            count(cap as usize, "prompt", "prompts"),
            runtime.name(),
            runtime.name()
        );
    }
}

/// Of each of `keys` (sets of full-size runs, one per runtime), how many
/// the store holds capped results of, by cap: a stored entry whose key
/// material, with a workload's declared prompts (`declared`) in place of its
/// fewer ones, is the key of one of the set. One pass over the entries for
/// every set (each pass reads every entry's `inputs.json`).
pub fn stored_caps(
    store: &Store,
    keys: &[BTreeSet<RunKey>],
    declared: &BTreeSet<u32>,
) -> Result<Vec<BTreeMap<u32, usize>>, crate::store::Error> {
    let mut caps = vec![BTreeMap::new(); keys.len()];
    let present = store.presence();
    for (key, text) in store.entries()? {
        let Ok(material) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let Some(prompts) = crate::key::num_prompts(&material) else {
            continue;
        };
        let full_size: Vec<RunKey> = (declared.iter())
            .filter(|&&d| d > prompts)
            .map(|&d| crate::key::key_with_prompts(&material, d))
            .collect();
        if full_size.is_empty() {
            continue;
        }
        let mut held = None;
        for (keys, caps) in keys.iter().zip(&mut caps) {
            if full_size.iter().any(|k| keys.contains(k))
                && *held.get_or_insert_with(|| present.has_samples(&key))
            {
                *caps.entry(prompts).or_insert(0) += 1;
            }
        }
    }
    Ok(caps)
}

/// The cap of the most results (the larger of two with as many).
pub fn best_cap(caps: &BTreeMap<u32, usize>) -> Option<(u32, usize)> {
    caps.iter()
        .max_by_key(|(cap, n)| (**n, **cap))
        .map(|(cap, n)| (*cap, *n))
}

/// Under each runtime whose full-size runs of `loaded` the store holds
/// capped results of: the cap of the most, and how many.
pub fn stored_capped(
    loaded: &Loaded,
    selection: &Selection,
) -> Result<Vec<(Runtime, u32, usize)>, Error> {
    let uncapped = Selection {
        max_prompts: None,
        ..selection.clone()
    };
    let declared: BTreeSet<u32> = loaded
        .uncapped
        .workloads
        .iter()
        .map(|w| w.prompts)
        .collect();
    let runtimes = [Runtime::Docker, Runtime::Local, Runtime::Sim];
    let keys: Vec<BTreeSet<RunKey>> = (runtimes.iter())
        .map(|&runtime| keys_under(loaded, &uncapped, runtime).into_iter().collect())
        .collect();
    let caps = stored_caps(&loaded.store, &keys, &declared).map_err(Error::Store)?;
    Ok((runtimes.into_iter().zip(caps))
        .filter_map(|(runtime, caps)| best_cap(&caps).map(|(cap, n)| (runtime, cap, n)))
        .collect())
}

/// Without `--runtime` (and `--max-prompts`), which results of `loaded`
/// `report` shows: see [`choose`]; said on stderr. `None`: those
/// `selection` names.
pub fn choose_stored(
    loaded: &Loaded,
    selection: &Selection,
    command: &str,
    shell: &dyn Shell,
) -> Result<Option<Selection>, Error> {
    if selection.runtime.is_some() {
        return Ok(None);
    }
    let with_results = runtimes_with_results(loaded, selection);
    let choosing = Choosing {
        of: "this experiment",
        // `reporting`.
        doing: &format!("{}ing", command.trim_end_matches('e')),
        otherwise: &format!("{}ing runtime", command.trim_end_matches('e')),
        command: format!("perfpipe {command} {}", selection.experiment.display()),
        fallback: loaded.runtime,
    };
    let chosen = choose(&choosing, &with_results, selection.max_prompts, || {
        stored_capped(loaded, selection)
    })?;
    say!(shell, "{}", chosen.said);
    Ok(Some(Selection {
        runtime: Some(chosen.runtime),
        max_prompts: chosen.max_prompts,
        ..selection.clone()
    }))
}

/// How a command about stored results (`report`, `diff`) words what
/// [`choose`] chose.
pub struct Choosing<'a> {
    /// Whose results: "this experiment", "these lockfiles' runs".
    pub of: &'a str,
    /// What the command does with those chosen: "reporting", "comparing".
    pub doing: &'a str,
    /// What it does when the store holds none: "reporting runtime",
    /// "comparing their keys under runtime".
    pub otherwise: &'a str,
    /// The command as typed, to which the hint adds `--runtime R`.
    pub command: String,
    /// The runtime shown when the store holds no result.
    pub fallback: Runtime,
}

/// What [`choose`] chose, and the line that says so (for stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub runtime: Runtime,
    pub max_prompts: Option<u32>,
    pub said: String,
}

/// Without `--runtime`, which results a command about stored results
/// shows, one rule for `report` and `diff`: the runtime the store holds
/// results under (`with_results`, of the cap asked: see
/// [`stored_runtime`]); else, without `--max-prompts` when it holds only
/// capped results (`capped`: by runtime, the cap of the most and how many),
/// those of the cap of the most; else `fallback`. Two measured runtimes
/// with results are for the user to choose.
pub fn choose(
    choosing: &Choosing,
    with_results: &[Runtime],
    max_prompts: Option<u32>,
    capped: impl FnOnce() -> Result<Vec<(Runtime, u32, usize)>, Error>,
) -> Result<Chosen, Error> {
    let Choosing { of, doing, .. } = choosing;
    let ambiguous = |runtimes: Vec<Runtime>| {
        let names: Vec<String> = runtimes.iter().map(|r| format!("`{}`", r.name())).collect();
        Error::Usage {
            message: format!(
                "the store holds results of {of} under both {}",
                names.join(" and ")
            ),
            hint: format!(
                "name the runtime: {}",
                runtimes
                    .iter()
                    .map(|r| format!("`{} --runtime {}`", choosing.command, r.name()))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        }
    };
    match stored_runtime(with_results) {
        StoredRuntime::One(runtime) => {
            let capped = max_prompts
                .map(|cap| {
                    format!(
                        ", capped at {} (`--max-prompts {cap}`)",
                        count(cap as usize, "prompt", "prompts")
                    )
                })
                .unwrap_or_default();
            return Ok(Chosen {
                runtime,
                max_prompts,
                said: format!(
                    "perfpipe: {doing} the results under runtime `{}`{capped}, the one the store holds results of (`--runtime` chooses)",
                    runtime.name()
                ),
            });
        }
        StoredRuntime::Ambiguous(runtimes) => return Err(ambiguous(runtimes)),
        StoredRuntime::None => {}
    }
    let capped = match max_prompts {
        Some(_) => Vec::new(),
        None => capped()?,
    };
    let runtimes: Vec<Runtime> = capped.iter().map(|c| c.0).collect();
    match stored_runtime(&runtimes) {
        StoredRuntime::One(runtime) => {
            let (_, cap, stored) = capped
                .into_iter()
                .find(|c| c.0 == runtime)
                .expect("a runtime of `capped`");
            Ok(Chosen {
                runtime,
                max_prompts: Some(cap),
                said: format!(
                    "perfpipe: the store holds no full-size result of {of}; {doing} the {} capped at {} under runtime `{}` (`--max-prompts {cap}`; `--runtime` and `--max-prompts` choose)",
                    count(stored, "run", "runs"),
                    count(cap as usize, "prompt", "prompts"),
                    runtime.name()
                ),
            })
        }
        StoredRuntime::Ambiguous(runtimes) => Err(ambiguous(runtimes)),
        StoredRuntime::None => Ok(Chosen {
            runtime: choosing.fallback,
            max_prompts,
            said: format!(
                "perfpipe: the store holds no result of {of} under any runtime yet; {} `{}` (`--runtime` chooses)",
                choosing.otherwise,
                choosing.fallback.name()
            ),
        }),
    }
}

/// What the store's results say about the runtime to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredRuntime {
    /// The one runtime to report (measured if any has results, else `sim`).
    One(Runtime),
    /// Results under both measured runtimes: the user must choose.
    Ambiguous(Vec<Runtime>),
    /// No result under any runtime.
    None,
}

/// `with_results`: the runtimes under which the store holds a result of
/// some run of the experiment.
pub fn stored_runtime(with_results: &[Runtime]) -> StoredRuntime {
    let measured: Vec<Runtime> = [Runtime::Docker, Runtime::Local]
        .into_iter()
        .filter(|r| with_results.contains(r))
        .collect();
    match measured[..] {
        [one] => StoredRuntime::One(one),
        [] if with_results.contains(&Runtime::Sim) => StoredRuntime::One(Runtime::Sim),
        [] => StoredRuntime::None,
        _ => StoredRuntime::Ambiguous(measured),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Runtime::{Docker, Local, Sim};

    #[test]
    fn measured_results_come_before_simulated_and_two_measured_runtimes_are_ambiguous() {
        assert_eq!(stored_runtime(&[Sim]), StoredRuntime::One(Sim));
        assert_eq!(stored_runtime(&[Sim, Local]), StoredRuntime::One(Local));
        assert_eq!(stored_runtime(&[Docker, Sim]), StoredRuntime::One(Docker));
        assert_eq!(
            stored_runtime(&[Docker, Local, Sim]),
            StoredRuntime::Ambiguous(vec![Docker, Local])
        );
        assert_eq!(stored_runtime(&[]), StoredRuntime::None);
    }

    fn diffing() -> Choosing<'static> {
        Choosing {
            of: "these lockfiles' runs",
            doing: "comparing",
            otherwise: "comparing their keys under runtime",
            command: "perfpipe diff a.lock b.lock".into(),
            fallback: Docker,
        }
    }

    fn reporting() -> Choosing<'static> {
        Choosing {
            of: "this experiment",
            doing: "reporting",
            otherwise: "reporting runtime",
            command: "perfpipe report x.kdl".into(),
            fallback: Sim,
        }
    }

    /// `report` and `diff` choose by one rule, each in its own words.
    #[test]
    fn report_and_diff_choose_the_stored_runtime_then_the_stored_cap_then_their_default() {
        let no_caps = || Ok(Vec::new());
        let chosen = choose(&diffing(), &[Sim], None, no_caps).unwrap();
        assert_eq!((chosen.runtime, chosen.max_prompts), (Sim, None));
        assert_eq!(
            chosen.said,
            "perfpipe: comparing the results under runtime `sim`, the one the store holds results of (`--runtime` chooses)"
        );
        let chosen = choose(&reporting(), &[Sim, Local], Some(3), no_caps).unwrap();
        assert_eq!((chosen.runtime, chosen.max_prompts), (Local, Some(3)));
        assert_eq!(
            chosen.said,
            "perfpipe: reporting the results under runtime `local`, capped at 3 prompts (`--max-prompts 3`), the one the store holds results of (`--runtime` chooses)"
        );

        // Only capped results: those of the cap of the most.
        let capped = || Ok(vec![(Sim, 3, 2)]);
        for (choosing, said) in [
            (
                diffing(),
                "perfpipe: the store holds no full-size result of these lockfiles' runs; comparing the 2 runs capped at 3 prompts under runtime `sim` (`--max-prompts 3`; `--runtime` and `--max-prompts` choose)",
            ),
            (
                reporting(),
                "perfpipe: the store holds no full-size result of this experiment; reporting the 2 runs capped at 3 prompts under runtime `sim` (`--max-prompts 3`; `--runtime` and `--max-prompts` choose)",
            ),
        ] {
            let chosen = choose(&choosing, &[], None, capped).unwrap();
            assert_eq!((chosen.runtime, chosen.max_prompts), (Sim, Some(3)));
            assert_eq!(chosen.said, said);
        }
        // A cap asked is not replaced by another.
        let asked = choose(&diffing(), &[], Some(5), capped).unwrap();
        assert_eq!((asked.runtime, asked.max_prompts), (Docker, Some(5)));

        let nothing = choose(&diffing(), &[], None, no_caps).unwrap();
        assert_eq!((nothing.runtime, nothing.max_prompts), (Docker, None));
        assert_eq!(
            nothing.said,
            "perfpipe: the store holds no result of these lockfiles' runs under any runtime yet; comparing their keys under runtime `docker` (`--runtime` chooses)"
        );

        let Err(Error::Usage { message, hint }) =
            choose(&diffing(), &[Docker, Local], None, no_caps)
        else {
            panic!("two measured runtimes are for the user to choose");
        };
        assert_eq!(
            message,
            "the store holds results of these lockfiles' runs under both `docker` and `local`"
        );
        assert_eq!(
            hint,
            "name the runtime: `perfpipe diff a.lock b.lock --runtime docker` or `perfpipe diff a.lock b.lock --runtime local`"
        );
    }
}
