//! `perfpipe diff`: what changed between two lockfiles and what it did to
//! the numbers, as markdown or JSON. (pure)

use std::fmt::Write;

use serde::Serialize;

use crate::analyze::Delta;

/// Everything `perfpipe diff` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LockDiff {
    pub before: String,
    pub after: String,
    pub experiment: String,
    /// Whose keys are compared.
    pub runtime: String,
    /// The `--max-prompts` cap of the runs compared.
    pub max_prompts: Option<u32>,
    /// Without `--runtime`: which results were chosen, and why (said on stderr).
    #[serde(skip)]
    pub chosen: Option<String>,
    pub inputs: Vec<InputDiff>,
    pub unchanged_inputs: Vec<String>,
    pub runs: Vec<RunDiff>,
    /// `step × workload` of the runs whose key did not change.
    pub unchanged_runs: Vec<String>,
    pub metrics: Vec<String>,
    pub deltas: Vec<Delta>,
    /// Runs with a new key that have no numbers on one side.
    pub incomplete: Vec<Incomplete>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputDiff {
    pub name: String,
    /// `added`, `removed` or `changed`.
    pub change: &'static str,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunDiff {
    pub step: String,
    pub workload: String,
    pub key_before: Option<String>,
    pub key_after: Option<String>,
    /// The inputs it uses that changed; empty when its own declaration did.
    pub changed_by: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Incomplete {
    pub step: String,
    pub workload: String,
    /// Which lockfile's side lacks numbers.
    pub side: String,
    /// Why, and the command that fills it.
    pub reason: String,
}

pub fn markdown(diff: &LockDiff) -> String {
    let mut out = String::new();
    let capped = diff
        .max_prompts
        .map(|n| {
            let prompts = crate::plural::count(n as usize, "prompt", "prompts");
            format!(", runs capped at {prompts} (`--max-prompts {n}`)")
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "# Lockfile diff: `{}` → `{}`\n\nExperiment `{}`; run keys under runtime `{}`{capped}.\n",
        diff.before, diff.after, diff.experiment, diff.runtime
    );
    out.push_str("## Inputs\n\n");
    if diff.inputs.is_empty() {
        out.push_str("No input changed.\n");
    } else {
        out.push_str("| | input | change |\n| --- | --- | --- |\n");
        for i in &diff.inputs {
            let sign = match i.change {
                "added" => "+",
                "removed" => "−",
                _ => "~",
            };
            let _ = writeln!(out, "| {sign} | {} | {} |", i.name, i.detail);
        }
    }
    list(&mut out, "Unchanged", &diff.unchanged_inputs);

    out.push_str("\n## Runs\n\n");
    if diff.runs.is_empty() {
        out.push_str("No run key changed.\n");
    } else {
        out.push_str("| step | workload | key before | key after | changed by |\n| --- | --- | --- | --- | --- |\n");
        for r in &diff.runs {
            let short =
                |k: &Option<String>| k.as_deref().map_or("∅".to_owned(), |k| k[..12].to_owned());
            let by = if r.changed_by.is_empty() {
                "its own declaration (flags, environment, GPUs or workload)".to_owned()
            } else {
                r.changed_by.join(", ")
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {by} |",
                r.step,
                r.workload,
                short(&r.key_before),
                short(&r.key_after)
            );
        }
    }
    list(&mut out, "Unchanged keys", &diff.unchanged_runs);

    out.push_str("\n## Results\n\n");
    if diff.deltas.is_empty() {
        out.push_str("No run with a new key has numbers on both sides yet.\n");
    } else {
        out.push_str("| step | workload | metric | before | after | Δ | verdict |\n| --- | --- | --- | --- | --- | --- | --- |\n");
        for d in &diff.deltas {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:+.1}% | {} |",
                d.step,
                d.workload,
                d.metric,
                value(d.before, d.before_sd, d.before_n),
                value(d.after, d.after_sd, d.after_n),
                d.delta_pct,
                d.verdict_text()
            );
        }
    }
    if !diff.incomplete.is_empty() {
        out.push_str("\nNot compared:\n\n");
        for i in &diff.incomplete {
            let _ = writeln!(
                out,
                "- `{}` × `{}`, {}: {}",
                i.step, i.workload, i.side, i.reason
            );
        }
    }
    out
}

/// `1234.56`, or `1234.56 ± 12.30 (n=3)` with several samples.
fn value(v: f64, sd: Option<f64>, n: usize) -> String {
    match sd {
        Some(sd) if n > 1 => format!("{v:.2} ± {sd:.2} (n={n})"),
        _ => format!("{v:.2}"),
    }
}

fn list(out: &mut String, label: &str, items: &[String]) {
    if !items.is_empty() {
        let _ = writeln!(out, "\n{label}: {}.", items.join(", "));
    }
}

pub fn json(diff: &LockDiff) -> String {
    let mut text = serde_json::to_string_pretty(diff).expect("a diff is plain data");
    text.push('\n');
    text
}
