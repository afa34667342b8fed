//! `perfpipe store gc`: finds what no experiment and no lockfile reaches
//! (once 7 days old, or all) — entries, the launch material of no kept run
//! and the inputs of no kept material — damage, quarantine and the temp dirs
//! of killed runs, and removes them (or, with `dry_run`, only says so).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::existing;
use super::gc_report::Freed;
use super::roots::{Roots, roots};
use crate::key::RunKey;
use crate::ops::Error;
use crate::store::{Garbage, GarbageKind, Removal, StaleTmp, Store};

/// What `store gc` is asked to do.
#[derive(Debug, Clone)]
pub struct GcOptions {
    pub store: PathBuf,
    /// The experiments and lockfiles whose runs to keep; none: the project's.
    pub roots: Vec<PathBuf>,
    pub dry_run: bool,
    /// Also remove unreached entries committed, and launch material and
    /// inputs written or used, in the last 7 days.
    pub all: bool,
}

/// What gc found and kept.
#[derive(Debug)]
pub struct Collected {
    pub store: Store,
    pub roots: Roots,
    /// The sound entries the roots reach.
    pub kept: Vec<RunKey>,
    /// Unreached entries kept for their age.
    pub young: Vec<Garbage>,
    /// Temp dirs of killed runs (removed unless `dry_run`).
    pub stale: Vec<StaleTmp>,
    /// Every entry's key material, under `dry_run` (to say why each stays).
    pub materials: BTreeMap<RunKey, String>,
    /// Launch material and inputs nothing needs, kept for their age.
    pub young_launch_files: Vec<Garbage>,
    /// Launch material kept because a kept run is among its runs.
    pub kept_launches: usize,
    /// Inputs kept because kept launch material reads them.
    pub kept_inputs: usize,
    /// What went (under `dry_run`, what would go), stale temp dirs included.
    pub freed: Freed,
    pub dry_run: bool,
}

/// Removes what nothing reaches, telling `removed` of each item as it goes,
/// with the roots (under `dry_run` each as [`Removal::Removed`], removing
/// nothing).
pub fn gc(
    options: &GcOptions,
    removed: &mut dyn FnMut(&Garbage, Removal, &Roots),
) -> Result<Collected, Error> {
    let store = existing(&options.store)?;
    let roots = roots(&options.roots, &options.store)?;
    let reached: BTreeSet<RunKey> = roots.keys.keys().cloned().collect();
    let now = crate::clock::unix_now();
    let (young, garbage): (Vec<Garbage>, Vec<Garbage>) = store
        .garbage(&reached)
        .map_err(Error::Store)?
        .into_iter()
        .partition(|g| !options.all && g.is_young(now));
    let spoiled: Vec<_> = garbage
        .iter()
        .filter(|g| matches!(&g.kind, GarbageKind::Damaged(d) if d.spoils_entry()))
        .filter_map(|g| g.key.as_ref())
        .collect();
    let kept: Vec<_> = store
        .entry_dirs()
        .map_err(Error::Store)?
        .into_iter()
        .filter_map(|d| d.key)
        .filter(|k| roots.reaches(k) && !spoiled.contains(&k))
        .collect();
    // Launch material lives while a run it serves is kept; inputs while
    // material that lives reads them.
    let mut kept_runs = reached;
    kept_runs.extend(young.iter().filter_map(|g| g.key.clone()));
    let launches = store
        .launch_garbage(&kept_runs, &|g| !options.all && g.is_young(now))
        .map_err(Error::Store)?;
    let stale = store.stale_tmp(!options.dry_run).map_err(Error::Store)?;
    let mut freed = Freed::default();
    for item in garbage.iter().chain(&launches.garbage) {
        let removal = if options.dry_run {
            Removal::Removed
        } else {
            store.remove(item).map_err(Error::Store)?
        };
        if removal == Removal::Removed {
            freed.add(item);
        }
        removed(item, removal, &roots);
    }
    for s in &stale {
        freed.add_stale(s);
    }
    if !options.dry_run {
        store.remove_idle_locks().map_err(Error::Store)?;
        // The index of results keeps no record of an entry that went.
        store.prune_index().map_err(Error::Store)?;
    }
    let materials = if options.dry_run {
        store.entries().map_err(Error::Store)?.into_iter().collect()
    } else {
        BTreeMap::new()
    };
    Ok(Collected {
        store,
        roots,
        kept,
        young,
        stale,
        materials,
        young_launch_files: launches.young,
        kept_launches: launches.kept_launches,
        kept_inputs: launches.kept_inputs,
        freed,
        dry_run: options.dry_run,
    })
}
