//! `perfpipe store gc [--dry-run] [--all] [FILE...]`: removes the entries
//! no experiment and no lockfile reaches (once 7 days old, or all), the
//! launch material and inputs no kept run needs, damage,
//! quarantine and the temp dirs of killed runs, saying what each was and why
//! it goes; `--dry-run` also says why each entry stays.

use serde_json::Value;

use super::CliError;
use super::args::StoreGcArgs;
use crate::drv::LaunchMaterial;
use crate::exit_code;
use crate::fetch::human_bytes;
use crate::ops::gc::{Collected, GcOptions};
use crate::plural::count;
use crate::store::{Damage, Garbage, GarbageKind, KEEP_YOUNGER_THAN, Removal};

pub fn gc(args: &StoreGcArgs) -> Result<u8, CliError> {
    let mut tally = Tally::default();
    let Collected {
        roots,
        kept,
        young,
        stale,
        materials,
        young_launch_files,
        kept_launches,
        kept_inputs,
        ..
    } = crate::ops::gc::gc(
        &GcOptions {
            store: args.store.path().to_owned(),
            roots: args.roots.clone(),
            dry_run: args.dry_run,
            all: args.all,
        },
        &mut |item, removal, roots| {
            outln!("{}", describe(item, roots.unreached()));
            match removal {
                Removal::Removed => tally.add(item),
                Removal::InUse => {
                    outln!("  kept: a running perfpipe holds its key; the next gc looks again")
                }
                Removal::Changed => outln!("  kept: a run repaired it meanwhile"),
            }
        },
    )?;
    for s in &stale {
        outln!("temp dir {} ({})", s.path.display(), human_bytes(s.bytes));
        outln!("  left by a perfpipe that was killed");
        tally.tmp += 1;
        tally.bytes += s.bytes;
    }
    if args.dry_run {
        // Why each entry stays, as why each goes.
        for key in &kept {
            let by: Vec<String> = roots.keys[key]
                .iter()
                .map(|p| format!("`{}`", p.display()))
                .collect();
            outln!(
                "entry {key}: {}\n  kept: reached by {}",
                materials.get(key).map_or("?".into(), |m| summary(m)),
                by.join(", ")
            );
        }
        for item in &young {
            if let GarbageKind::Unreached { material, .. } = &item.kind {
                outln!(
                    "entry {}: {}\n  kept: {}, but committed less than {} days ago (`--all` removes it)",
                    item.key.as_ref().map_or("?", |k| k.as_str()),
                    summary(material),
                    roots.unreached(),
                    KEEP_YOUNGER_THAN.as_secs() / 86_400
                );
            }
        }
        for item in &young_launch_files {
            outln!(
                "{}, but written or used less than {} days ago (`--all` removes it)",
                describe(item, roots.unreached()).replacen("\n  ", "\n  kept: ", 1),
                KEEP_YOUNGER_THAN.as_secs() / 86_400
            );
        }
    }

    let lockfile_only = kept
        .iter()
        .filter(|k| roots.lockfile_only.contains(k))
        .count();
    eoutln!(
        "perfpipe: kept {} reached by {} and {}{}{}",
        count(kept.len(), "entry", "entries"),
        count(roots.experiments.len(), "experiment", "experiments"),
        count(roots.lockfiles.len(), "lockfile", "lockfiles"),
        match lockfile_only {
            0 => String::new(),
            n => format!(" ({n} by a lockfile only)"),
        },
        match young.len() {
            0 => String::new(),
            n => format!(
                ", and {} that nothing reaches, committed less than {} days ago (`--all` removes {})",
                count(n, "entry", "entries"),
                KEEP_YOUNGER_THAN.as_secs() / 86_400,
                crate::plural::noun(n, "it", "them")
            ),
        }
    );
    if kept_launches + kept_inputs + young_launch_files.len() > 0 {
        let young = |launch: bool| {
            young_launch_files
                .iter()
                .filter(|g| matches!(g.kind, GarbageKind::UnreachedLaunch { .. }) == launch)
                .count()
        };
        eoutln!(
            "perfpipe: kept {} that kept runs need{}{}",
            count(kept_launches, "launch material", "launch materials"),
            match kept_inputs {
                0 => String::new(),
                n => format!(
                    ", {} that kept launch material reads",
                    count(n, "input", "inputs")
                ),
            },
            match young_launch_files.len() {
                0 => String::new(),
                n => format!(
                    ", and {} that nothing needs, written or used less than {} days ago (`--all` removes {})",
                    launch_files(young(true), young(false)),
                    KEEP_YOUNGER_THAN.as_secs() / 86_400,
                    crate::plural::noun(n, "it", "them")
                ),
            }
        );
    }
    let what = tally.summary();
    match (what, args.dry_run) {
        (None, _) => eoutln!("perfpipe: nothing to remove"),
        (Some(what), true) => eoutln!(
            "perfpipe: --dry-run: would remove {what}, freeing {}; removed nothing",
            human_bytes(tally.bytes)
        ),
        (Some(what), false) => {
            eoutln!(
                "perfpipe: removed {what}, freeing {}",
                human_bytes(tally.bytes)
            )
        }
    }
    Ok(exit_code::OK)
}

/// Two lines: what the item is, and why it goes.
fn describe(item: &Garbage, unreached: &str) -> String {
    let size = human_bytes(item.bytes);
    let path = item.path.display();
    match &item.kind {
        GarbageKind::Unreached {
            material, samples, ..
        } => format!(
            "entry {} ({}, {size}): {}\n  {unreached}",
            item.key.as_ref().map_or("?", |k| k.as_str()),
            count(*samples, "sample", "samples"),
            summary(material),
        ),
        GarbageKind::UnreachedLaunch { material, .. } => format!(
            "launch {} ({size}): {}\n  its runs are {unreached}",
            item.path.file_stem().unwrap_or_default().to_string_lossy(),
            launch_summary(material)
        ),
        GarbageKind::UnreadInput { what, .. } => format!(
            "input {} ({}{size})\n  read by no launch material that stays",
            item.path.file_name().unwrap_or_default().to_string_lossy(),
            what.iter().map(|w| format!("{w}, ")).collect::<String>()
        ),
        GarbageKind::Damaged(damage) => {
            let what = match damage {
                Damage::LaunchMismatch(_) | Damage::LaunchInvalid(_) => "launch material",
                Damage::InputMismatch(_) => "input",
                Damage::Unreadable(_) => "special file",
                _ if damage.spoils_entry() => "entry",
                _ => "sample",
            };
            let file = damage.file().map(|f| format!("`{f}` ")).unwrap_or_default();
            format!("{what} {path} ({size})\n  damaged: {file}{damage}")
        }
        GarbageKind::Quarantined { items } => format!(
            "quarantine {path} ({}, {size})\n  damage a run moved out of the entry, kept for inspection until a gc",
            count(*items, "item", "items")
        ),
    }
}

/// `vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 8 · random 64→8, 40 prompts`.
fn summary(material: &str) -> String {
    let Ok(m) = serde_json::from_str::<Value>(material) else {
        return "key material that is not JSON".into();
    };
    let text = |pointer: &str| {
        m.pointer(pointer)
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .unwrap_or_else(|| "?".into())
    };
    let mut parts = vec![
        format!("{} {}", text("/engine/name"), text("/engine/version")),
        text("/model/id"),
        text("/runtime/name"),
    ];
    let args: Vec<String> = m["serve_args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| a.as_str().unwrap_or("?").to_owned())
        .collect();
    if !args.is_empty() {
        parts.push(args.join(" "));
    }
    let dataset = match m.pointer("/workload/dataset/kind").and_then(Value::as_str) {
        Some("random") => format!(
            "random {}→{}",
            text("/workload/dataset/input_len"),
            text("/workload/dataset/output_len")
        ),
        Some(kind) => kind.to_owned(),
        None => "?".into(),
    };
    let prompts = match m.pointer("/workload/num_prompts").and_then(Value::as_u64) {
        Some(n) => count(n as usize, "prompt", "prompts"),
        None => format!("{} prompts", text("/workload/num_prompts")),
    };
    parts.push(format!("{dataset}, {prompts}"));
    parts.join(" · ")
}

/// `vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 8 · 2 runs`.
fn launch_summary(m: &LaunchMaterial) -> String {
    let mut parts = vec![
        format!("{} {}", m.engine.engine, m.engine.version),
        m.engine.model.id.clone(),
        m.runtime.clone(),
    ];
    if !m.engine.args.is_empty() {
        parts.push(m.engine.args.join(" "));
    }
    parts.push(count(m.runs.len(), "run", "runs"));
    parts.join(" · ")
}

/// `2 launch materials and 1 input`, leaving out what there is none of.
fn launch_files(launches: usize, inputs: usize) -> String {
    match (launches, inputs) {
        (l, 0) => count(l, "launch material", "launch materials"),
        (0, i) => count(i, "input", "inputs"),
        (l, i) => format!(
            "{} and {}",
            count(l, "launch material", "launch materials"),
            count(i, "input", "inputs")
        ),
    }
}

#[derive(Default)]
struct Tally {
    entries: usize,
    samples: usize,
    damaged: usize,
    quarantine: usize,
    tmp: usize,
    launches: usize,
    inputs: usize,
    bytes: u64,
}

impl Tally {
    fn add(&mut self, item: &Garbage) {
        self.bytes += item.bytes;
        match &item.kind {
            GarbageKind::Unreached { samples, .. } => {
                self.entries += 1;
                self.samples += samples;
            }
            GarbageKind::Damaged(_) => self.damaged += 1,
            GarbageKind::Quarantined { .. } => self.quarantine += 1,
            GarbageKind::UnreachedLaunch { .. } => self.launches += 1,
            GarbageKind::UnreadInput { .. } => self.inputs += 1,
        }
    }

    /// `1 entry (2 samples), 1 damaged item and 1 temp dir`; `None`: nothing.
    fn summary(&self) -> Option<String> {
        let parts: Vec<String> = [
            (self.entries > 0).then(|| {
                format!(
                    "{} ({})",
                    count(self.entries, "entry", "entries"),
                    count(self.samples, "sample", "samples")
                )
            }),
            (self.launches > 0)
                .then(|| count(self.launches, "launch material", "launch materials")),
            (self.inputs > 0).then(|| count(self.inputs, "input", "inputs")),
            (self.damaged > 0).then(|| count(self.damaged, "damaged item", "damaged items")),
            (self.quarantine > 0)
                .then(|| count(self.quarantine, "quarantine dir", "quarantine dirs")),
            (self.tmp > 0).then(|| count(self.tmp, "temp dir", "temp dirs")),
        ]
        .into_iter()
        .flatten()
        .collect();
        match &parts[..] {
            [] => None,
            [one] => Some(one.clone()),
            [init @ .., last] => Some(format!("{} and {last}", init.join(", "))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_summarized_by_what_changes_its_numbers() {
        let material = r#"{"engine":{"name":"vllm","version":"0.11.0"},"model":{"id":"Qwen/Qwen3-14B","revision":"main"},"runtime":{"name":"sim"},"serve_args":["--max-num-seqs","8"],"workload":{"dataset":{"kind":"random","input_len":64,"output_len":8},"num_prompts":40}}"#;
        insta::assert_snapshot!(summary(material), @"vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 8 · random 64→8, 40 prompts");
        let sharegpt = r#"{"engine":{"name":"trtllm","version":"1.2.0rc1"},"model":{"id":"m"},"runtime":{"name":"docker"},"serve_args":[],"workload":{"dataset":{"kind":"sharegpt"},"num_prompts":30}}"#;
        insta::assert_snapshot!(summary(sharegpt), @"trtllm 1.2.0rc1 · m · docker · sharegpt, 30 prompts");
        assert_eq!(summary("{"), "key material that is not JSON");
    }
}
