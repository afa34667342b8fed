//! `perfpipe store verify`: every entry's key material re-hashed against its
//! name, every result parsed, every launch material and input re-hashed
//! against its name; damage listed with its path, with what it means and
//! what removes it. Reads only.

use std::path::{Path, PathBuf};

use super::existing;
use crate::fetch::human_bytes;
use crate::ops::Error;
use crate::plural::{count, noun};
use crate::store::{IndexCheck, StaleTmp, Verification};

/// What `store verify` found in a store.
#[derive(Debug)]
pub struct StoreCheck {
    /// The store as it was named.
    pub store: PathBuf,
    pub found: Verification,
    /// Damage a run moved out of its entry.
    pub quarantined: Vec<PathBuf>,
    /// Temp dirs of killed runs (left in place).
    pub stale: Vec<StaleTmp>,
    /// The index of results against the entries.
    pub index: IndexCheck,
    /// With `--repair`: the entries the index was rewritten with.
    pub reindexed: Option<usize>,
}

/// Checks the store at `store`, which must exist; with `repair`, rewrites
/// its index of results from the entries first (and changes nothing else).
pub fn verify_store(store: &Path, repair: bool) -> Result<StoreCheck, Error> {
    let opened = existing(store)?;
    let reindexed = if repair {
        Some(opened.rebuild_index().map_err(Error::Store)?)
    } else {
        None
    };
    Ok(StoreCheck {
        store: store.to_owned(),
        found: opened.verify().map_err(Error::Store)?,
        quarantined: opened.quarantined().map_err(Error::Store)?,
        stale: opened.stale_tmp(false).map_err(Error::Store)?,
        index: opened.verify_index().map_err(Error::Store)?,
        reindexed,
    })
}

impl StoreCheck {
    /// Damaged items found (quarantine, stale temp dirs and a stale index
    /// are not damage; an index that gives other samples than the files is).
    pub fn damaged(&self) -> usize {
        self.found.findings.len() + self.index.wrong.len()
    }

    /// For standard output: each damaged, quarantined and stale item.
    pub fn listing(&self) -> Vec<String> {
        let damaged = self
            .found
            .findings
            .iter()
            .map(|f| format!("damaged      {}: {}", f.path.display(), f.damage));
        let quarantined = self
            .quarantined
            .iter()
            .map(|path| format!("quarantined  {}", path.display()));
        let stale = self.stale.iter().map(|s| {
            format!(
                "stale        {} ({}): temp dir of a perfpipe that was killed",
                s.path.display(),
                human_bytes(s.bytes)
            )
        });
        let wrong = self.index.wrong.iter().map(|path| {
            format!(
                "damaged      {}: the index of results gives other samples than this entry's files",
                path.display()
            )
        });
        damaged
            .chain(wrong)
            .chain(quarantined)
            .chain(stale)
            .collect()
    }

    /// For standard error: what was checked, and what each kind of finding
    /// means and what removes it.
    pub fn summary(&self) -> Vec<String> {
        let found = &self.found;
        let damaged = self.damaged();
        let mut checked = vec![
            count(found.entries, "entry", "entries"),
            count(found.samples, "sample", "samples"),
        ];
        if found.launches + found.inputs > 0 {
            checked.push(count(found.launches, "launch material", "launch materials"));
            checked.push(count(found.inputs, "input", "inputs"));
        }
        let last = checked.pop().unwrap_or_default();
        let mut out = vec![format!(
            "perfpipe: store `{}`: checked {} and {last}: {}",
            self.store.display(),
            checked.join(", "),
            if damaged == 0 {
                "no damage".to_owned()
            } else {
                format!("{damaged} damaged")
            }
        )];
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
            out.push(format!(
                "perfpipe: damage is never used: `perfpipe run` redoes the runs it held and moves it to `{}`; `perfpipe store gc` removes it",
                self.store.join("quarantine").display()
            ));
        }
        if stray > 0 {
            out.push(format!(
                "perfpipe: {} that no run's key names where it is, never read and never moved by `perfpipe run`; `perfpipe store gc` removes {}",
                count(stray, "directory", "directories"),
                them(stray)
            ));
        }
        if launch_damage > 0 {
            out.push(format!(
                "perfpipe: {}, never used (`perfpipe realise` refuses {}): `perfpipe store gc` removes {}, and `perfpipe plan --write-launches` or `perfpipe run` of {} experiment writes {} again",
                count(
                    launch_damage,
                    "damaged launch material or input",
                    "damaged launch materials or inputs"
                ),
                them(launch_damage),
                them(launch_damage),
                noun(launch_damage, "its", "their"),
                them(launch_damage)
            ));
        }
        out.extend(self.index_summary());
        if found.empty > 0 {
            out.push(format!(
                "perfpipe: {} without samples (a run killed before its first commit; the next run completes it)",
                count(found.empty, "entry", "entries")
            ));
        }
        if !self.quarantined.is_empty() {
            out.push(format!(
                "perfpipe: {} in quarantine, kept for inspection and never read (`perfpipe store gc` removes {})",
                count(self.quarantined.len(), "damaged item", "damaged items"),
                them(self.quarantined.len())
            ));
        }
        if !self.stale.is_empty() {
            out.push(format!(
                "perfpipe: {} of killed runs (the next `perfpipe run` or `perfpipe store gc` removes {})",
                count(self.stale.len(), "stale temp dir", "stale temp dirs"),
                them(self.stale.len())
            ));
        }
        out
    }
}

impl StoreCheck {
    /// What became of the index, when it needs saying: rewritten, stale
    /// (harmless: those entries are read from their files) or wrong.
    fn index_summary(&self) -> Vec<String> {
        let index = &self.index;
        let mut out = Vec::new();
        if let Some(n) = self.reindexed {
            out.push(format!(
                "perfpipe: rewrote the index of results from {}",
                count(n, "entry", "entries")
            ));
        }
        if index.stale > 0 {
            out.push(format!(
                "perfpipe: the index of results is stale for {} (read from their files meanwhile; the next `plan` or `report` of their runs records them again, `perfpipe store verify --repair` rewrites it)",
                count(index.stale, "entry", "entries")
            ));
        }
        if index.removed > 0 {
            out.push(format!(
                "perfpipe: the index of results holds records of {} no longer in the store (never used; `perfpipe store gc` or `perfpipe store verify --repair` drops them)",
                count(index.removed, "entry", "entries")
            ));
        }
        if !index.wrong.is_empty() {
            out.push(format!(
                "perfpipe: the index of results gives other samples than the files for {} (a file edited in place); `perfpipe store verify --repair` rewrites it from the entries",
                count(index.wrong.len(), "entry", "entries")
            ));
        }
        out
    }
}

fn them(n: usize) -> &'static str {
    noun(n, "it", "them")
}
