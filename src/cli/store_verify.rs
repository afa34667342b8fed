//! `perfpipe store verify`: every entry's key material re-hashed against its
//! name, every result parsed, every launch material and input re-hashed
//! against its name; damage listed with its path. Reads only.

use super::CliError;
use super::args::StoreVerifyArgs;
use crate::exit_code;
use crate::fetch::human_bytes;
use crate::ops::store::gc::existing;
use crate::plural::count;

pub fn verify(args: &StoreVerifyArgs) -> Result<u8, CliError> {
    let store = existing(args.store.path())?;
    let found = store.verify().map_err(CliError::Store)?;
    let quarantined = store.quarantined().map_err(CliError::Store)?;
    let stale = store.stale_tmp(false).map_err(CliError::Store)?;
    for f in &found.findings {
        outln!("damaged      {}: {}", f.path.display(), f.damage);
    }
    for path in &quarantined {
        outln!("quarantined  {}", path.display());
    }
    for s in &stale {
        outln!(
            "stale        {} ({}): temp dir of a perfpipe that was killed",
            s.path.display(),
            human_bytes(s.bytes)
        );
    }
    let damaged = found.findings.len();
    let mut checked = vec![
        count(found.entries, "entry", "entries"),
        count(found.samples, "sample", "samples"),
    ];
    if found.launches + found.inputs > 0 {
        checked.push(count(found.launches, "launch material", "launch materials"));
        checked.push(count(found.inputs, "input", "inputs"));
    }
    let last = checked.pop().unwrap_or_default();
    eoutln!(
        "perfpipe: store `{}`: checked {} and {last}: {}",
        args.store.path().display(),
        checked.join(", "),
        if damaged == 0 {
            "no damage".to_owned()
        } else {
            format!("{damaged} damaged")
        }
    );
    let stray = found
        .findings
        .iter()
        .filter(|f| f.damage.is_stray())
        .count();
    let launch_damage = found
        .findings
        .iter()
        .filter(|f| f.damage.is_launch_file())
        .count();
    if damaged > stray + launch_damage {
        eoutln!(
            "perfpipe: damage is never used: `perfpipe run` redoes the runs it held and moves it to `{}`; `perfpipe store gc` removes it",
            store.root().join("quarantine").display()
        );
    }
    if stray > 0 {
        eoutln!(
            "perfpipe: {} that no run's key names where it is, never read and never moved by `perfpipe run`; `perfpipe store gc` removes {}",
            count(stray, "directory", "directories"),
            them(stray)
        );
    }
    if launch_damage > 0 {
        eoutln!(
            "perfpipe: {}, never used (`perfpipe realise` refuses {}): `perfpipe store gc` removes {}, and `perfpipe plan --write-launches` or `perfpipe run` of {} experiment writes {} again",
            count(
                launch_damage,
                "damaged launch material or input",
                "damaged launch materials or inputs"
            ),
            them(launch_damage),
            them(launch_damage),
            if launch_damage == 1 { "its" } else { "their" },
            them(launch_damage)
        );
    }
    if found.empty > 0 {
        eoutln!(
            "perfpipe: {} without samples (a run killed before its first commit; the next run completes it)",
            count(found.empty, "entry", "entries")
        );
    }
    if !quarantined.is_empty() {
        eoutln!(
            "perfpipe: {} in quarantine, kept for inspection and never read (`perfpipe store gc` removes {})",
            count(quarantined.len(), "damaged item", "damaged items"),
            them(quarantined.len())
        );
    }
    if !stale.is_empty() {
        eoutln!(
            "perfpipe: {} of killed runs (the next `perfpipe run` or `perfpipe store gc` removes {})",
            count(stale.len(), "stale temp dir", "stale temp dirs"),
            them(stale.len())
        );
    }
    Ok(if damaged > 0 {
        exit_code::VERIFY_FAILED
    } else {
        exit_code::OK
    })
}

fn them(n: usize) -> &'static str {
    if n == 1 { "it" } else { "them" }
}
