//! What `store gc` removes of `drv/` and `inputs/sha256/`: launch material
//! none of whose runs is kept, damaged material, and the inputs no material
//! that stays reads (or that do not hash to their name).

use std::collections::{BTreeMap, BTreeSet};

use super::gc::{Garbage, GarbageKind};
use super::{Error, Store};
use crate::key::RunKey;

/// What gc found in `drv/` and `inputs/sha256/`.
#[derive(Debug, Default)]
pub struct LaunchGarbage {
    /// To remove.
    pub garbage: Vec<Garbage>,
    /// Unreached, but kept for their age.
    pub young: Vec<Garbage>,
    /// Launch material kept because a kept run is among its runs.
    pub kept_launches: usize,
    /// Inputs kept because kept material reads them.
    pub kept_inputs: usize,
}

impl Store {
    /// What `store gc` removes of the launch material and the input area when
    /// `reached` holds every run key to keep. Material stays while one of
    /// its runs is reached, or while `young` says so of it; an input stays
    /// while material that stays names it, or while `young` says so of it.
    /// Damaged material goes, and so does an input that stays but does not
    /// hash to its name (each is read in full).
    pub fn launch_garbage(
        &self,
        reached: &BTreeSet<RunKey>,
        young: &dyn Fn(&Garbage) -> bool,
    ) -> Result<LaunchGarbage, Error> {
        let mut out = LaunchGarbage::default();
        let mut needed: BTreeSet<String> = BTreeSet::new();
        let mut named: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for file in self.launch_files()? {
            let item = |kind| Garbage {
                path: file.path.clone(),
                key: None,
                kind,
                bytes: file.bytes,
            };
            let material = match file.material {
                Err(damage) => {
                    out.garbage.push(item(GarbageKind::Damaged(damage)));
                    continue;
                }
                Ok(material) => material,
            };
            let inputs = material.inputs();
            for input in &inputs {
                let what = named.entry(input.sha256.clone()).or_default();
                if !what.contains(&input.what) {
                    what.push(input.what.clone());
                }
            }
            let keeps = if material.runs.iter().any(|r| reached.contains(&r.key)) {
                out.kept_launches += 1;
                true
            } else {
                let unreached = item(GarbageKind::UnreachedLaunch {
                    material: Box::new(material),
                    written: file.written,
                });
                if young(&unreached) {
                    out.young.push(unreached);
                    true
                } else {
                    out.garbage.push(unreached);
                    false
                }
            };
            if keeps {
                needed.extend(inputs.into_iter().map(|i| i.sha256));
            }
        }
        for file in self.input_files()? {
            let item = |kind| Garbage {
                path: file.path.clone(),
                key: None,
                kind,
                bytes: file.bytes,
            };
            if needed.contains(&file.sha256) {
                match self.check_input(&file.sha256) {
                    Ok(None) => out.kept_inputs += 1,
                    Ok(Some(damage)) => out.garbage.push(item(GarbageKind::Damaged(damage))),
                    // Removed meanwhile.
                    Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            let unread = item(GarbageKind::UnreadInput {
                what: named.remove(&file.sha256).unwrap_or_default(),
                written: file.written,
            });
            if young(&unread) {
                out.young.push(unread);
            } else {
                out.garbage.push(unread);
            }
        }
        Ok(out)
    }
}
