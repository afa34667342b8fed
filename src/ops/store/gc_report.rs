//! What `store gc` says: each item it removes (what it was and why it
//! goes), under `--dry-run` why each entry stays, and what it kept and
//! freed in sum.

use super::gc::Collected;
use super::roots::Roots;
use crate::fetch::human_bytes;
use crate::key::{DatasetMaterial, KeyMaterial};
use crate::launch::LaunchMaterial;
use crate::plural::{count, noun};
use crate::store::{Damage, Garbage, GarbageKind, KEEP_YOUNGER_THAN, Removal, StaleTmp};

/// The days [`KEEP_YOUNGER_THAN`] spans, as messages give it.
const KEEP_DAYS: u64 = KEEP_YOUNGER_THAN.as_secs() / 86_400;

/// What the item is and why it goes, and, where it stayed after all, why.
pub fn removal_lines(item: &Garbage, removal: Removal, roots: &Roots) -> String {
    let described = describe(item, roots.unreached());
    match removal {
        Removal::Removed => described,
        Removal::InUse => format!(
            "{described}\n  kept: a running perfpipe holds its key; the next gc looks again"
        ),
        Removal::Changed => format!("{described}\n  kept: a run repaired it meanwhile"),
    }
}

impl Collected {
    /// For standard output after the items: the stale temp dirs, and under
    /// `dry_run` why each entry stays, as why each goes.
    pub fn listing(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .stale
            .iter()
            .map(|s| {
                format!(
                    "temp dir {} ({})\n  left by a perfpipe that was killed",
                    s.path.display(),
                    human_bytes(s.bytes)
                )
            })
            .collect();
        if self.dry_run {
            out.extend(self.why_kept());
        }
        out
    }

    /// Each group in the order of what its items are (engine, model,
    /// runtime, flags, workload), then of their keys: a listing that reads
    /// alike whatever the keys hash to.
    fn why_kept(&self) -> Vec<String> {
        let roots = &self.roots;
        let mut entries: Vec<(String, String)> = self
            .kept
            .iter()
            .map(|key| {
                let by: Vec<String> = roots.keys[key]
                    .iter()
                    .map(|p| format!("`{}`", p.display()))
                    .collect();
                let summary = self
                    .materials
                    .get(key)
                    .map_or("?".into(), |m| entry_summary(m));
                let by = by.join(", ");
                let line = format!("entry {key}: {summary}\n  kept: reached by {by}");
                (format!("{summary}\n{by}"), line)
            })
            .collect();
        let mut young: Vec<(String, String)> = self
            .young
            .iter()
            .filter_map(|item| match &item.kind {
                GarbageKind::Unreached { material, .. } => {
                    let summary = entry_summary(material);
                    let line = format!(
                        "entry {}: {summary}\n  kept: {}, but committed less than {KEEP_DAYS} days ago (`--all` removes it)",
                        item.key.as_ref().map_or("?", |k| k.as_str()),
                        roots.unreached(),
                    );
                    Some((summary, line))
                }
                _ => None,
            })
            .collect();
        let mut launches: Vec<(String, String)> = self
            .young_launch_files
            .iter()
            .map(|item| {
                let described = describe(item, roots.unreached());
                let what = described
                    .split_once("): ")
                    .map_or(described.as_str(), |(_, what)| what)
                    .to_owned();
                let line = format!(
                    "{}, but written or used less than {KEEP_DAYS} days ago (`--all` removes it)",
                    described.replacen("\n  ", "\n  kept: ", 1),
                );
                (what, line)
            })
            .collect();
        let mut out = Vec::new();
        for group in [&mut entries, &mut young, &mut launches] {
            group.sort();
            out.extend(group.drain(..).map(|(_, line)| line));
        }
        out
    }

    /// For standard error: what was kept and why, and what went.
    pub fn summary(&self) -> Vec<String> {
        let mut out = vec![self.kept_entries()];
        out.extend(self.kept_launch_files());
        out.push(match (self.freed.summary(), self.dry_run) {
            (None, _) => "perfpipe: nothing to remove".to_owned(),
            (Some(what), true) => format!(
                "perfpipe: --dry-run: would remove {what}, freeing {}; removed nothing",
                human_bytes(self.freed.bytes)
            ),
            (Some(what), false) => format!(
                "perfpipe: removed {what}, freeing {}",
                human_bytes(self.freed.bytes)
            ),
        });
        out
    }

    fn kept_entries(&self) -> String {
        let roots = &self.roots;
        let lockfile_only = self
            .kept
            .iter()
            .filter(|k| roots.lockfile_only.contains(k))
            .count();
        format!(
            "perfpipe: kept {} reached by {} and {}{}{}",
            count(self.kept.len(), "entry", "entries"),
            count(roots.experiments.len(), "experiment", "experiments"),
            count(roots.lockfiles.len(), "lockfile", "lockfiles"),
            match lockfile_only {
                0 => String::new(),
                n => format!(" ({n} by a lockfile only)"),
            },
            match self.young.len() {
                0 => String::new(),
                n => format!(
                    ", and {} that nothing reaches, committed less than {KEEP_DAYS} days ago (`--all` removes {})",
                    count(n, "entry", "entries"),
                    noun(n, "it", "them")
                ),
            }
        )
    }

    fn kept_launch_files(&self) -> Option<String> {
        let young_files = &self.young_launch_files;
        if self.kept_launches + self.kept_inputs + young_files.len() == 0 {
            return None;
        }
        let young = |launch: bool| {
            young_files
                .iter()
                .filter(|g| matches!(g.kind, GarbageKind::UnreachedLaunch { .. }) == launch)
                .count()
        };
        Some(format!(
            "perfpipe: kept {} that kept runs need{}{}",
            count(self.kept_launches, "launch material", "launch materials"),
            match self.kept_inputs {
                0 => String::new(),
                n => format!(
                    ", {} that kept launch material reads",
                    count(n, "input", "inputs")
                ),
            },
            match young_files.len() {
                0 => String::new(),
                n => format!(
                    ", and {} that nothing needs, written or used less than {KEEP_DAYS} days ago (`--all` removes {})",
                    launch_files(young(true), young(false)),
                    noun(n, "it", "them")
                ),
            }
        ))
    }
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
            entry_summary(material),
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

/// `vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 8 · random 64→8, 40 prompts`,
/// from an entry's stored key material.
fn entry_summary(material: &str) -> String {
    match serde_json::from_str::<KeyMaterial>(material) {
        Ok(m) => key_summary(&m),
        Err(e) if e.is_data() => "key material of a form perfpipe does not read".into(),
        Err(_) => "key material that is not JSON".into(),
    }
}

fn key_summary(m: &KeyMaterial) -> String {
    let mut parts = vec![
        format!("{} {}", m.engine.name, m.engine.version),
        m.model.id.clone(),
        m.runtime.name.clone(),
    ];
    if !m.serve_args.is_empty() {
        parts.push(m.serve_args.join(" "));
    }
    let dataset = match &m.workload.dataset {
        DatasetMaterial::Random {
            input_len,
            output_len,
            ..
        } => format!("random {input_len}→{output_len}"),
        DatasetMaterial::Sharegpt { .. } => "sharegpt".into(),
    };
    let prompts = count(m.workload.num_prompts as usize, "prompt", "prompts");
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

/// What gc removed (or, under `--dry-run`, would remove), by kind.
#[derive(Debug, Default)]
pub struct Freed {
    entries: usize,
    samples: usize,
    damaged: usize,
    quarantine: usize,
    tmp: usize,
    launches: usize,
    inputs: usize,
    pub bytes: u64,
}

impl Freed {
    pub(super) fn add(&mut self, item: &Garbage) {
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

    pub(super) fn add_stale(&mut self, stale: &StaleTmp) {
        self.tmp += 1;
        self.bytes += stale.bytes;
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
        (!parts.is_empty()).then(|| crate::plural::and_list(&parts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Key material as a store holds it, with what varies between the cases.
    fn material(
        engine: &str,
        model: &str,
        runtime: &str,
        args: &[&str],
        dataset: &str,
        prompts: u32,
    ) -> String {
        let dataset: serde_json::Value = serde_json::from_str(dataset).unwrap();
        serde_json::json!({
            "schema": 1,
            "runtime": {"name": runtime, "sim_engine_version": null},
            "engine": {"name": engine.split(' ').next(), "version": engine.split(' ').nth(1)},
            "model": {"id": model, "revision": "main"},
            "serve_args": args,
            "env": {},
            "hardware": {"gpu": "H100", "gpus_per_instance": 1},
            "harness": {"name": "builtin", "version": "1", "backend": "openai", "endpoint": "/v1/completions",
                "temperature": 0.0, "ignore_eos": true, "percentile_metrics": "ttft,tpot,itl,e2el",
                "metric_percentiles": "99", "tokenizer": "whitespace-v1"},
            "workload": {"dataset": dataset, "num_prompts": prompts, "request_rate": "inf", "max_concurrency": null}
        })
        .to_string()
    }

    #[test]
    fn an_entry_is_summarized_by_what_changes_its_numbers() {
        let random =
            r#"{"kind":"random","input_len":64,"output_len":8,"range_ratio":0.0,"seed":0}"#;
        let material_text = material(
            "vllm 0.11.0",
            "Qwen/Qwen3-14B",
            "sim",
            &["--max-num-seqs", "8"],
            random,
            40,
        );
        insta::assert_snapshot!(entry_summary(&material_text), @"vllm 0.11.0 · Qwen/Qwen3-14B · sim · --max-num-seqs 8 · random 64→8, 40 prompts");
        let sharegpt = r#"{"kind":"sharegpt","sha256":"00","output_len":null,"seed":0}"#;
        let sharegpt = material("trtllm 1.2.0rc1", "m", "docker", &[], sharegpt, 30);
        insta::assert_snapshot!(entry_summary(&sharegpt), @"trtllm 1.2.0rc1 · m · docker · sharegpt, 30 prompts");
        assert_eq!(entry_summary("{"), "key material that is not JSON");
    }
}
