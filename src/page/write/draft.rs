//! Every decision of the writer: workloads, one step per measured
//! configuration (sweeps where the page sweeps one flag), expectations,
//! comparisons, the conclusion and the report layout. Where the page is
//! ambiguous the most faithful reading is taken and a `TODO:` quotes it.

use std::collections::BTreeMap;

use super::cells::{
    cell_lines, cell_number, delta_decimals, format_delta, printed_delta, says_per_device,
    strip_bold,
};
use super::hardware;
use super::workloads::{self, Workload, slug};
use crate::metrics::{MetricSet, ParsedBlock};
use crate::page::command::{Serving, engine_named, flags, serving};
use crate::page::model::{At, Config, Outcome, Page, Role};
use crate::spec::{CellMetric, PrintedLine, Quantity};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Draft {
    pub name: String,
    pub header: Vec<String>,
    pub title: String,
    pub hardware_comments: Vec<String>,
    pub gpu_type: String,
    pub gpus: u32,
    pub model: String,
    pub model_comments: Vec<String>,
    pub latency: bool,
    pub engines: Vec<(String, String)>,
    pub engine_comments: Vec<String>,
    pub harness: String,
    pub harness_comments: Vec<String>,
    pub workloads: Vec<Workload>,
    pub steps: Vec<Step>,
    pub groups: Vec<Group>,
    pub compares: Vec<Compare>,
    pub conclusion: Option<Conclusion>,
    pub report: Option<Report>,
    pub blocks: usize,
    pub failures: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Group {
    pub title: String,
    pub line: usize,
    pub steps: Vec<usize>,
    pub notes: Vec<String>,
    /// The section's sentences as printed ("Result: …", "Summary: …").
    pub printed: Vec<String>,
    /// Each configuration's label as printed (its heading, `#### vLLM`) and
    /// the step that runs it: what a "Summary:" sentence names.
    pub labels: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    pub name: String,
    pub engine: String,
    pub model: Option<String>,
    pub gpus: u32,
    pub replicas: u32,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub vary: Option<(String, Vec<String>)>,
    pub workloads: Vec<String>,
    pub expects: Vec<Expect>,
    pub comments: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expect {
    pub workload: String,
    pub at: Option<String>,
    pub comments: Vec<String>,
    pub kind: ExpectKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExpectKind {
    /// (metric, number as printed), in the block's order of names.
    Metrics(Vec<(String, String)>),
    Failure(String),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Compare {
    pub title: String,
    pub comments: Vec<String>,
    pub baseline: String,
    pub workload: String,
    pub candidates: Vec<String>,
    /// The section's printed "Result:" line and "Summary:" sentence.
    pub result: Option<String>,
    pub summary: Option<String>,
    /// The steps the sentence names, in its order.
    pub summary_steps: Option<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conclusion {
    pub comments: Vec<String>,
    pub baseline: String,
    pub optimized: String,
    /// The recommended command, one word a string, as printed.
    pub command: Vec<String>,
    /// The table's header and each case, as printed.
    pub table: Vec<String>,
    pub cases: Vec<Case>,
}

/// A row of the conclusion table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Case {
    /// The workload it measures; empty where none of the page's is.
    pub workload: String,
    /// Where no workload is: the row's label as printed and why.
    pub unbound: Option<(String, String)>,
    pub baseline: Vec<String>,
    pub optimized: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    pub comments: Vec<String>,
    pub delta_decimals: usize,
    /// The summary table's header and rules, as printed.
    pub table: Vec<String>,
    pub min_success: bool,
    pub skip_lower_than_previous: bool,
    pub summary: Vec<SummaryRow>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SummaryRow {
    pub title: String,
    /// For a row the page prints "-" although its comparison gains a
    /// little: the gain, rounded up to a tenth (within run-to-run noise).
    pub threshold: Option<String>,
    /// Credits the conclusion's gain (the row prints the conclusion's delta).
    pub credits_conclusion: bool,
    /// Its gain is per GPU (its configurations run on different GPU counts).
    pub per_gpu: bool,
    /// The step its Optimized column shows, where that is the baseline
    /// itself (the latency page's engine row: the engine chosen).
    pub optimized: Option<String>,
    /// Each column but the title's: its lines as printed.
    pub cells: Vec<Vec<String>>,
}

/// `--flag value` pairs (a flag without a value has none).
type Flags = Vec<(String, Option<String>)>;

/// A step's identity: what makes two of the page's configurations the same run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Identity {
    engine: String,
    model: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    vary: Option<String>,
}

/// A sweep point's block: the sweep's name, the value and the numbers.
struct SweepPointBlock {
    sweep: String,
    at: String,
    metrics: Vec<(String, String)>,
}

struct Builder<'p> {
    page: &'p Page,
    draft: Draft,
    ids: BTreeMap<Identity, usize>,
    baseline_step: Option<usize>,
    optimized_step: Option<usize>,
    /// Whether the outcome being added is of an "Other Benchmark Cases" side.
    role_outcome: bool,
    guidellm: bool,
    ascend: bool,
}

/// The page's "Summary of Optimization Options" as printed.
struct SummaryTable<'p> {
    /// The column holding a row's title: "Group" where the page has one.
    title_column: usize,
    /// Each row's title and line.
    titles: Vec<(usize, String)>,
    /// Each row's cells.
    rows: Vec<&'p Vec<String>>,
}

impl<'p> SummaryTable<'p> {
    fn of(page: &'p Page) -> Self {
        // The column holding a row's title: "Group" where the page has one.
        let title_column = page
            .summary
            .as_ref()
            .and_then(|t| t.value.first())
            .and_then(|h| h.value.iter().position(|c| strip_bold(c) == "Group"))
            .unwrap_or(0);
        let titles: Vec<(usize, String)> = page
            .summary
            .as_ref()
            .map(|t| {
                t.value
                    .iter()
                    .skip(1)
                    .filter_map(|r| r.value.get(title_column).map(|c| (r.line, strip_bold(c))))
                    .collect()
            })
            .unwrap_or_default();
        let rows: Vec<&Vec<String>> = page
            .summary
            .as_ref()
            .map(|t| t.value.iter().skip(1).map(|r| &r.value).collect())
            .unwrap_or_default();
        Self {
            title_column,
            titles,
            rows,
        }
    }
}

pub fn draft(page: &Page) -> Draft {
    let mut b = Builder {
        page,
        draft: Draft::default(),
        ids: BTreeMap::new(),
        baseline_step: None,
        optimized_step: None,
        role_outcome: false,
        guidellm: !page.profiles.is_empty(),
        ascend: false,
    };
    b.setup();
    b.configurations();
    b.conclusion();
    b.compares_and_report();
    b.hardware_count();
    let mut draft = b.draft;
    draft
        .groups
        .retain(|g| !g.steps.is_empty() || !g.notes.is_empty());
    for g in &mut draft.groups {
        g.steps.sort_unstable();
        g.steps.dedup();
    }
    draft
}

impl<'p> Builder<'p> {
    fn setup(&mut self) {
        let page = self.page;
        let d = &mut self.draft;
        d.title = page.title.value.clone();
        let hw_text = page
            .hardware
            .as_ref()
            .map(|h| h.value.clone())
            .unwrap_or_default();
        let hw_source = format!("{} {}", hw_text, page.title.value);
        d.gpu_type = hardware::gpu_type(&hw_source)
            .unwrap_or("nvidia-h100-sxm5-80gb")
            .to_owned();
        self.ascend = d.gpu_type.starts_with("huawei-ascend");
        if let Some(h) = &page.hardware {
            d.hardware_comments
                .push(format!("Hardware (line {}): \"{}\"", h.line, h.value));
        }
        if hardware::gpu_type(&hw_source).is_none() {
            d.hardware_comments.push(format!(
                "TODO: the page names no accelerator perfpipe knows (\"{hw_text}\"); an H100 is assumed"
            ));
        }
        let latency = page
            .objective
            .as_ref()
            .is_some_and(|o| o.value.to_lowercase().contains("latency"))
            || page.title.value.contains(" Latency");
        d.latency = latency;
        let study =
            hardware::study_model(&page.title.value).unwrap_or_else(|| slug(&page.title.value));
        let hw = hardware::short(&hw_source).unwrap_or("gpu");
        d.name = format!("{study}-{hw}{}", if latency { "-latency" } else { "" });
        for e in &page.engines {
            let (name, version) = &e.value;
            let Some(mut kind) = engine_named(name) else {
                d.engine_comments.push(format!(
                    "TODO: \"{name}: {version}\" (line {}) is no engine perfpipe knows",
                    e.line
                ));
                continue;
            };
            if kind == "vllm" && self.ascend {
                kind = "vllm-ascend";
            }
            if !d.engines.iter().any(|(k, _)| k == kind) {
                d.engines.push((kind.to_owned(), version.clone()));
            }
        }
        if self.guidellm {
            d.harness = r#"guidellm version="0.5.3""#.into();
            d.harness_comments.push(
                "GPUStack's benchmark-runner over guidellm 0.5.3 (its `constant` profile), as the page's \"Benchmark Method\" describes"
                    .into(),
            );
        } else {
            let chat = page.bench_commands.iter().any(|c| {
                c.value
                    .windows(2)
                    .any(|w| w[0] == "--backend" && w[1] == "openai-chat")
            });
            d.harness = if chat {
                r#"builtin backend="openai-chat""#.into()
            } else {
                "builtin".into()
            };
            d.harness_comments.push(
                "The page benchmarks with `vllm bench serve`; the built-in harness sends the same requests under the same definitions"
                    .into(),
            );
        }
        let cases = cases(page);
        d.workloads = workloads::from_page(page, &cases);
        if d.workloads.is_empty() {
            d.workloads.push(Workload {
                name: "sharegpt".into(),
                title: "ShareGPT".into(),
                sharegpt: true,
                comments: vec![
                    "TODO: the page states no benchmark command or profile; ShareGPT is assumed"
                        .into(),
                ],
                ..Workload::default()
            });
        }
    }

    /// The experiment's model: the first configuration's.
    fn base_model(&self) -> String {
        let first = self
            .page
            .sections
            .iter()
            .flat_map(|s| &s.configs)
            .find_map(|c| c.command.as_ref().and_then(|cmd| serving(&cmd.value)));
        match first {
            Some(s) => s.model,
            None => page_model(self.page),
        }
    }

    fn configurations(&mut self) {
        let page = self.page;
        let base = self.base_model();
        self.draft.model = base.clone();
        if let Some(m) = &page.model {
            let printed = m.value.trim_start_matches("- ").trim();
            let name = |id: &str| id.rsplit('/').next().unwrap_or(id).to_lowercase();
            if name(printed) != name(&base) {
                self.draft.model_comments.push(format!(
                    "TODO: the page's \"Model\" (line {}) says \"{printed}\"; its serving scripts serve `{base}`, which is used",
                    m.line
                ));
            }
        }
        let recommended = page.recommended.as_ref().and_then(|r| serving(&r.value));
        let mut previous_engine: Option<String> = None;
        for section in &page.sections {
            self.draft.groups.push(super::draft::Group {
                title: section.title.value.clone(),
                line: section.title.line,
                notes: section
                    .notes
                    .iter()
                    .map(|n| format!("\"{}\" (line {})", n.value, n.line))
                    .chain(section.unplaced.iter().map(|n| {
                        format!(
                            "TODO: line {}: \"{}\" in a benchmark result is neither a block nor a caption above one; left out",
                            n.line, n.value
                        )
                    }))
                    .collect(),
                printed: section.notes.iter().map(|n| n.value.clone()).collect(),
                ..Default::default()
            });
            for config in &section.configs {
                let Some(serve) = self.serving_of(
                    config,
                    &section.title.value,
                    &base,
                    recommended.as_ref(),
                    previous_engine.as_deref(),
                ) else {
                    let what = config
                        .command
                        .as_ref()
                        .map(|c| c.value.clone())
                        .unwrap_or_default();
                    let g = self.draft.groups.last_mut().expect("pushed above");
                    g.notes.push(format!(
                        "TODO: line {}: `{what}` is no serving command perfpipe can read; its results are left out",
                        config.line
                    ));
                    continue;
                };
                previous_engine = Some(serve.engine.to_owned());
                let bare = config
                    .command
                    .as_ref()
                    .and_then(|c| serving(&c.value))
                    .filter(|s| !s.model.contains('/'));
                let step_count = self.draft.steps.len();
                self.config(config, serve.clone(), section.other_cases);
                if let Some(b) = bare {
                    for s in self.draft.steps.iter_mut().skip(step_count) {
                        s.comments.push(format!(
                            "TODO: the script serves `{}`, no Hugging Face id; read as `{}`",
                            b.model, serve.model
                        ));
                    }
                }
            }
            for warning in &section.warnings {
                self.warned_failures(warning);
            }
        }
    }

    /// A section's warning that sizes above some bound fail (`inputs above
    /// 32K run out of memory`): each configuration it names (all of the
    /// section's where it names none) fails on each such workload it has no
    /// result of, with the warning's words as the error. A sweep's failure
    /// would need its point, which the warning does not give.
    fn warned_failures(&mut self, warning: &At<String>) {
        let Some(failing) = workloads::FailingInputs::of(&warning.value) else {
            return;
        };
        let group = self.draft.groups.last().expect("the section's group");
        let lower = warning.value.to_lowercase();
        let named: Vec<String> = group
            .labels
            .iter()
            .filter(|(label, _)| names_label(&lower, label))
            .map(|(_, step)| step.clone())
            .collect();
        let steps: Vec<usize> = group
            .steps
            .iter()
            .copied()
            .filter(|&s| {
                let step = &self.draft.steps[s];
                step.vary.is_none() && (named.is_empty() || named.contains(&step.name))
            })
            .collect();
        let failing: Vec<usize> = (0..self.draft.workloads.len())
            .filter(|&w| failing.include(&self.draft.workloads[w]))
            .collect();
        let failure = Outcome::Failure {
            line: warning.line,
            label: None,
            error: warning.value.clone(),
        };
        for step in steps {
            for &w in &failing {
                let name = &self.draft.workloads[w].name;
                if !self.draft.steps[step].workloads.contains(name) {
                    self.expect(step, w, None, &failure);
                }
            }
        }
    }

    /// The engine, model and arguments of a configuration.
    fn serving_of(
        &self,
        config: &Config,
        section: &str,
        base: &str,
        recommended: Option<&Serving>,
        previous: Option<&str>,
    ) -> Option<Serving> {
        if let Some(cmd) = &config.command {
            let mut s = serving(&cmd.value)?;
            if s.engine == "vllm" && self.ascend {
                s.engine = "vllm-ascend";
            }
            if !s.model.contains('/') {
                // A bare name ("GLM-4.5-Air"): the page's model of that name.
                let org = base.split_once('/').map_or("", |(o, _)| o);
                s.model = format!("{org}/{}", s.model);
            }
            return Some(s);
        }
        let params = config.params.as_ref()?;
        // A configuration without an engine's name is of the engine the page
        // tunes: the recommended command's.
        let engine = config
            .label
            .as_deref()
            .and_then(engine_named)
            .or_else(|| match config.role {
                Some(Role::Baseline) => Some("vllm"),
                _ => recommended.map(|r| r.engine),
            })
            .or_else(|| {
                previous.and_then(|p| {
                    ["vllm", "sglang", "trtllm", "mindie"]
                        .into_iter()
                        .find(|e| *e == p)
                })
            })
            .unwrap_or("vllm");
        // The newer pages state backend parameters, not the model: the
        // optimized configuration and the quantization sections serve the
        // recommended command's checkpoint.
        let quantized =
            section.to_lowercase().contains("quantization") || config.role == Some(Role::Optimized);
        let model = match recommended {
            Some(r) if quantized && r.engine == engine => r.model.clone(),
            _ => base.to_owned(),
        };
        Some(Serving {
            engine,
            model,
            args: params.value.clone(),
            env: Vec::new(),
        })
    }

    fn config(&mut self, config: &Config, serve: Serving, other_cases: bool) {
        let default_workload = config
            .profile
            .as_deref()
            .and_then(|p| workloads::for_profile(&self.draft.workloads, p))
            .unwrap_or(0);
        // Outcomes per variant label (a label that names no workload).
        let mut plain: Vec<(usize, &Outcome)> = Vec::new();
        let mut variants: Vec<(String, usize, &Outcome)> = Vec::new();
        for outcome in &config.results {
            let completed = match outcome {
                Outcome::Block { block, .. } => completed(block),
                Outcome::Failure { .. } => None,
            };
            match outcome.label() {
                Some(label) => {
                    match workloads::for_label(&mut self.draft.workloads, label, completed) {
                        Some(w) => plain.push((w, outcome)),
                        None => variants.push((label.to_owned(), default_workload, outcome)),
                    }
                }
                None => plain.push((default_workload, outcome)),
            }
        }
        let label_words = config.label.clone().unwrap_or_default();
        let command = config
            .command
            .as_ref()
            .map(|c| format!("{} (line {})", c.value, c.line))
            .or_else(|| {
                config
                    .params
                    .as_ref()
                    .map(|p| format!("{} (line {})", p.value.join(" "), p.line))
            })
            .unwrap_or_default();
        let role = match config.role {
            Some(Role::Baseline) => "baseline of \"Other Benchmark Cases\"",
            Some(Role::Optimized) => "optimized configuration of \"Other Benchmark Cases\"",
            None => "",
        };
        let group = self.draft.groups.len() - 1;
        if !plain.is_empty() || variants.is_empty() {
            let step = match self.printed_by(&serve, config.role) {
                Some((earlier, workload)) => {
                    let e = &mut self.draft.steps[earlier];
                    let note = format!(
                        "TODO: the conclusion prints this configuration's {workload} numbers from the block of `{}` (args: {}), a script that differs from its own ({}); read as one configuration",
                        e.name,
                        e.args.join(" "),
                        serve.args.join(" ")
                    );
                    e.comments.push(note);
                    self.draft.groups[group].steps.push(earlier);
                    earlier
                }
                None => self.step_for(&serve, None, &label_words, group, other_cases, config.role),
            };
            self.note(step, &command, role);
            if !label_words.is_empty() {
                let name = self.draft.steps[step].name.clone();
                self.draft.groups[group]
                    .labels
                    .push((label_words.clone(), name));
            }
            if plain.is_empty() {
                let w = self.draft.workloads[default_workload].name.clone();
                add_workload(&mut self.draft.steps[step], &w);
                self.draft.steps[step]
                    .comments
                    .push("TODO: the page prints no result for this configuration".into());
            }
            self.role_outcome = config.role.is_some();
            for (w, outcome) in plain {
                self.expect(step, w, None, outcome);
            }
            self.role_outcome = false;
            if let Some(r) = config.role {
                self.mark_role(step, r);
            }
        }
        if variants.is_empty() {
            return;
        }
        // Labels that set flags: one sweep when they vary one flag, else a step each.
        let sets: Vec<(String, Flags)> = variants
            .iter()
            .map(|(label, _, _)| (label.clone(), variant_flags(label, &serve.args, &variants)))
            .collect();
        let one_flag = sets.iter().all(|(_, f)| f.len() == 1 && f[0].1.is_some())
            && sets.windows(2).all(|w| w[0].1[0].0 == w[1].1[0].0);
        if one_flag {
            let flag = sets[0].1[0].0.clone();
            let values: Vec<String> = sets
                .iter()
                .map(|(_, f)| f[0].1.clone().unwrap_or_default())
                .fold(Vec::new(), |mut acc, v| {
                    if !acc.contains(&v) {
                        acc.push(v);
                    }
                    acc
                });
            let mut base = serve.clone();
            base.args = without_flags(&serve.args, std::slice::from_ref(&flag));
            let step = self.step_for(
                &base,
                Some((flag.clone(), values)),
                &label_words,
                group,
                other_cases,
                None,
            );
            self.note(step, &command, role);
            for ((label, w, outcome), (_, f)) in variants.iter().zip(&sets) {
                let at = f[0].1.clone();
                self.expect(step, *w, at, outcome);
                let _ = label;
            }
        } else {
            for ((label, w, outcome), (_, f)) in variants.iter().zip(&sets) {
                let mut s = serve.clone();
                let names: Vec<String> = f.iter().map(|(n, _)| n.clone()).collect();
                s.args = without_flags(&serve.args, &names);
                let literal = f.is_empty();
                for (n, v) in f {
                    s.args.push(n.clone());
                    if let Some(v) = v {
                        s.args.push(v.clone());
                    }
                }
                let step = self.step_for(&s, None, label, group, other_cases, None);
                self.note(step, &format!("{command}, block \"# {label}\""), role);
                let name = self.draft.steps[step].name.clone();
                self.draft.groups[group].labels.push((label.clone(), name));
                if literal {
                    self.draft.steps[step].comments.push(format!(
                        "TODO: the page labels a block \"# {label}\" under this script without saying which flags it sets; the script's flags are used"
                    ));
                }
                self.expect(step, *w, None, outcome);
            }
        }
    }

    /// For a side of "Other Benchmark Cases" measured by a script of its
    /// own: the earlier step of the same engine and model whose block shows
    /// the numbers the conclusion prints for that side on a workload the
    /// side has no block of (the page printed that block's numbers).
    fn printed_by(&self, serve: &Serving, role: Option<Role>) -> Option<(usize, String)> {
        let side = match role? {
            Role::Baseline => 1,
            Role::Optimized => 2,
        };
        let id = Identity {
            engine: serve.engine.to_owned(),
            model: serve.model.clone(),
            args: serve.args.clone(),
            env: serve.env.clone(),
            vary: None,
        };
        if self.ids.contains_key(&id) {
            return None;
        }
        let table = self.page.conclusion.as_ref()?;
        let metric = if self.guidellm {
            "tokens_per_second_mean"
        } else {
            "total_token_throughput"
        };
        for row in table.value.iter().skip(1) {
            let case = strip_bold(row.value.first()?);
            let Some(w) = self.draft.workloads.iter().find(|w| w.title == case) else {
                continue;
            };
            let Some((tps, _)) = row
                .value
                .get(side)
                .and_then(|c| cell_number(c, "Total TPS:"))
            else {
                continue;
            };
            let found = self.draft.steps.iter().position(|s| {
                s.engine == serve.engine
                    && s.model.as_deref().unwrap_or(&self.draft.model) == serve.model
                    && s.vary.is_none()
                    && s.expects.iter().any(|e| {
                        e.workload == w.name
                            && e.at.is_none()
                            && matches!(&e.kind, ExpectKind::Metrics(m) if m.iter().any(|(n, v)| n == metric && *v == tps))
                    })
            });
            if let Some(i) = found {
                return Some((i, w.name.clone()));
            }
        }
        None
    }

    fn note(&mut self, step: usize, command: &str, role: &str) {
        let s = &mut self.draft.steps[step];
        let line = if role.is_empty() {
            command.to_owned()
        } else {
            format!("{command}: the {role}")
        };
        if !s.comments.contains(&line) {
            s.comments.push(line);
        }
    }

    fn mark_role(&mut self, step: usize, role: Role) {
        match role {
            Role::Baseline => self.baseline_step = Some(step),
            Role::Optimized => self.optimized_step = Some(step),
        }
    }

    /// The step of a configuration: an earlier one with the same engine,
    /// model and arguments, or a new one named after what sets it apart.
    fn step_for(
        &mut self,
        serve: &Serving,
        vary: Option<(String, Vec<String>)>,
        label: &str,
        group: usize,
        other_cases: bool,
        role: Option<Role>,
    ) -> usize {
        let id = Identity {
            engine: serve.engine.to_owned(),
            model: serve.model.clone(),
            args: serve.args.clone(),
            env: serve.env.clone(),
            vary: vary.as_ref().map(|(f, _)| f.clone()),
        };
        if let Some(&i) = self.ids.get(&id) {
            if let (Some((_, values)), Some(step)) = (&vary, self.draft.steps.get_mut(i))
                && let Some((_, have)) = &mut step.vary
            {
                for v in values {
                    if !have.contains(v) {
                        have.push(v.clone());
                    }
                }
            }
            self.draft.groups[group].steps.push(i);
            return i;
        }
        let mut parts = vec![serve.engine.to_owned()];
        if serve.model != self.draft.model {
            parts.push(model_suffix(&self.draft.model, &serve.model));
        }
        if !serve.args.is_empty() || vary.is_some() {
            let words = if engine_named(label).is_some() {
                // "vLLM", "SGLang": the engine's own name says it.
                String::new()
            } else if !label.is_empty() {
                slug(label)
            } else if other_cases {
                match role {
                    Some(Role::Optimized) => "optimized".into(),
                    _ => "baseline".into(),
                }
            } else if let Some((flag, _)) = &vary {
                slug(flag)
            } else {
                slug(&strip_engine_words(&self.draft.groups[group].title))
            };
            if !words.is_empty() {
                parts.push(words);
            }
        }
        let mut name = slug(&parts.join("-"));
        // Long names are cut at a word, within 48 characters.
        if name.len() > 48 {
            let cut = name[..=48].rfind('-').unwrap_or(48);
            name.truncate(cut);
        }
        let taken = |n: &str, steps: &[Step]| {
            steps.iter().any(|s| {
                s.name == n
                    || s.vary.as_ref().is_some_and(|(_, vs)| {
                        vs.iter().any(|v| format!("{}-{}", s.name, slug(v)) == n)
                    })
            })
        };
        if taken(&name, &self.draft.steps) {
            let mut k = 2;
            while taken(&format!("{name}-{k}"), &self.draft.steps) {
                k += 1;
            }
            name = format!("{name}-{k}");
        }
        let gpus = gpus_of(&serve.args).max(1);
        self.draft.steps.push(Step {
            name,
            engine: serve.engine.to_owned(),
            model: (serve.model != self.draft.model).then(|| serve.model.clone()),
            gpus,
            replicas: 1,
            args: serve.args.clone(),
            env: serve.env.clone(),
            vary,
            ..Step::default()
        });
        let i = self.draft.steps.len() - 1;
        self.ids.insert(id, i);
        self.draft.groups[group].steps.push(i);
        i
    }

    /// One outcome as an expectation of a step on a workload.
    fn expect(&mut self, step: usize, workload: usize, at: Option<String>, outcome: &Outcome) {
        let w = self.draft.workloads[workload].name.clone();
        let (kind, label, line) = match outcome {
            Outcome::Block { block, label, line } => {
                if let Some(n) = completed(block) {
                    let wl = &mut self.draft.workloads[workload];
                    if wl.prompts.is_none() || wl.prompts_from_blocks && wl.prompts < Some(n) {
                        wl.prompts = Some(n);
                        wl.prompts_from_blocks = true;
                    }
                }
                let metrics = block
                    .texts
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Vec<_>>();
                (ExpectKind::Metrics(order(block, metrics)), label, line)
            }
            Outcome::Failure { error, label, line } => {
                (ExpectKind::Failure(error.clone()), label, line)
            }
        };
        let s = &mut self.draft.steps[step];
        add_workload(s, &w);
        let mut comments = vec![match label {
            Some(l) => format!("page line {line}: \"# {l}\""),
            None => format!("page line {line}"),
        }];
        if let Some(have) = s.expects.iter_mut().find(|e| e.workload == w && e.at == at) {
            if have.kind != kind && self.role_outcome {
                // "Other Benchmark Cases" is what the conclusion prints.
                let first = have.comments.first().cloned().unwrap_or_default();
                have.comments = comments;
                have.comments.push(format!(
                    "TODO: the page prints a different result for this run ({first}); the one of \"Other Benchmark Cases\", which the conclusion prints, is kept"
                ));
                have.kind = kind;
            } else if have.kind != kind {
                have.comments.push(format!(
                    "TODO: the page prints a different result for this run at line {line}; the first is kept"
                ));
            } else {
                have.comments
                    .push(format!("repeated at line {line}, number for number"));
            }
            return;
        }
        match kind {
            ExpectKind::Metrics(_) => self.draft.blocks += 1,
            ExpectKind::Failure(_) => self.draft.failures += 1,
        }
        let s = &mut self.draft.steps[step];
        s.expects.push(Expect {
            workload: w,
            at,
            comments: std::mem::take(&mut comments),
            kind,
        });
    }

    fn conclusion(&mut self) {
        let page = self.page;
        let Some(table) = &page.conclusion else {
            // No table: the recommended command alone, as the configuration it runs.
            let recommended = page.recommended.as_ref().and_then(|r| serving(&r.value));
            let optimized = recommended.as_ref().and_then(|r| {
                self.draft.steps.iter().position(|s| {
                    s.engine == r.engine
                        && s.args == r.args
                        && s.model.as_deref().unwrap_or(&self.draft.model) == r.model
                        && s.vary.is_none()
                })
            });
            if let (Some(r), Some(optimized), Some(first)) =
                (&page.recommended, optimized, self.draft.steps.first())
            {
                self.draft.conclusion = Some(Conclusion {
                    comments: vec![
                        format!("The recommended \"Serving Command\" (line {}): `{}`", r.line, r.value),
                        "The page has no before/after table: the conclusion records the command and the configuration it runs".into(),
                    ],
                    baseline: first.name.clone(),
                    optimized: self.draft.steps[optimized].name.clone(),
                    command: r.value.split_whitespace().map(str::to_owned).collect(),
                    table: Vec::new(),
                    cases: Vec::new(),
                });
                return;
            }
            if let Some(r) = &page.recommended {
                self.draft.groups.push(Group {
                    title: "Conclusion".into(),
                    line: r.line,
                    notes: vec![
                        format!(
                            "The recommended \"Serving Command\" (line {}): `{}`",
                            r.line, r.value
                        ),
                        "TODO: the page has no before/after table, so no `conclusion` is declared"
                            .into(),
                    ],
                    ..Group::default()
                });
            }
            return;
        };
        let mut comments = Vec::new();
        if let Some(r) = &page.recommended {
            comments.push(format!(
                "The recommended \"Serving Command\" (line {}): `{}`",
                r.line, r.value
            ));
        }
        let recommended = page.recommended.as_ref().and_then(|r| serving(&r.value));
        let baseline = self.baseline_step.unwrap_or(0);
        let optimized = self.optimized_step.or_else(|| {
            let r = recommended.as_ref()?;
            self.draft.steps.iter().position(|s| {
                s.engine == r.engine
                    && s.args == r.args
                    && s.model.as_deref().unwrap_or(&self.draft.model) == r.model
            })
        });
        let Some(optimized) = optimized else {
            comments.push(format!(
                "TODO: no measured configuration is the conclusion's optimized one (table at line {})",
                table.line
            ));
            self.draft.conclusion = None;
            self.draft.groups.push(Group {
                title: "Conclusion".into(),
                line: table.line,
                notes: comments,
                ..Group::default()
            });
            return;
        };
        if let Some(r) = &recommended {
            let s = &self.draft.steps[optimized];
            let same = s.engine == r.engine
                && s.model.as_deref().unwrap_or(&self.draft.model) == r.model
                && s.args == r.args;
            if !same {
                comments.push(format!(
                    "TODO: the recommended command is not the optimized configuration as measured (`{}`)",
                    s.args.join(" ")
                ));
            }
        }
        // Replicas ("7081.34x2") and numbers only the table shows.
        let guidellm = self.guidellm;
        for row in table.value.iter().skip(1) {
            let cells = &row.value;
            if cells.len() < 3 {
                continue;
            }
            let case = strip_bold(&cells[0]);
            let Some(w) = self
                .draft
                .workloads
                .iter()
                .position(|w| w.title == case || workloads::case_matches(&case, w))
            else {
                comments.push(format!(
                    "TODO: the conclusion's case \"{case}\" (line {}) is no workload of the page's benchmark commands",
                    row.line
                ));
                continue;
            };
            // The workload is titled as the row prints it.
            self.draft.workloads[w].title = case.clone();
            for (side, cell) in [(baseline, &cells[1]), (optimized, &cells[2])] {
                let tps = cell_number(cell, "Total TPS:");
                if let Some((_, Some(replicas))) = &tps
                    && *replicas > 1
                {
                    self.draft.steps[side].replicas = *replicas;
                }
                self.conclusion_numbers(side, w, cell, row.line, guidellm);
            }
        }
        let header = table
            .value
            .first()
            .map(|r| r.value.iter().map(|c| cell_lines(c).join(" ")).collect())
            .unwrap_or_default();
        let mut printed_cases = Vec::new();
        for row in table.value.iter().skip(1) {
            let case = row.value.first().map(|c| strip_bold(c)).unwrap_or_default();
            if row.value.len() < 3 {
                continue;
            }
            // A row no workload is, reprinted as printed and marked: nothing
            // of the page is dropped.
            let (workload, unbound) = match self.draft.workloads.iter().find(|w| w.title == case) {
                Some(w) => (w.name.clone(), None),
                None => (
                    String::new(),
                    Some((
                        case.clone(),
                        format!(
                            "the row (line {}) is no workload of the page's benchmark commands or profiles",
                            row.line
                        ),
                    )),
                ),
            };
            printed_cases.push(Case {
                workload,
                unbound,
                baseline: cell_lines(&row.value[1]),
                optimized: cell_lines(&row.value[2]),
            });
        }
        self.draft.conclusion = Some(Conclusion {
            comments,
            baseline: self.draft.steps[baseline].name.clone(),
            optimized: self.draft.steps[optimized].name.clone(),
            command: page
                .recommended
                .as_ref()
                .map(|r| r.value.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            table: header,
            cases: printed_cases,
        });
    }

    /// The block of a sweep point that runs exactly `step`'s configuration
    /// on `workload`.
    fn sweep_point_block(&self, step: usize, workload: &str) -> Option<SweepPointBlock> {
        let target = &self.draft.steps[step];
        self.draft.steps.iter().find_map(|s| {
            let (flag, _) = s.vary.as_ref()?;
            if s.engine != target.engine || s.model != target.model || s.gpus != target.gpus {
                return None;
            }
            s.expects.iter().find_map(|e| {
                let at = e.at.as_ref()?;
                let ExpectKind::Metrics(metrics) = &e.kind else {
                    return None;
                };
                let mut args = s.args.clone();
                args.extend([flag.clone(), at.clone()]);
                (e.workload == workload && args == target.args).then(|| SweepPointBlock {
                    sweep: s.name.clone(),
                    at: at.clone(),
                    metrics: metrics.clone(),
                })
            })
        })
    }

    /// The conclusion cell's numbers for a step on a workload: an
    /// expectation where no block shows them, a TODO where a block differs.
    fn conclusion_numbers(
        &mut self,
        step: usize,
        w: usize,
        cell: &str,
        line: usize,
        guidellm: bool,
    ) {
        let (tps_name, tpot_name) = if guidellm {
            ("tokens_per_second_mean", "time_per_output_token_ms_mean")
        } else {
            ("total_token_throughput", "mean_tpot_ms")
        };
        let mut shown = Vec::new();
        if let Some((tps, _)) = cell_number(cell, "Total TPS:") {
            shown.push((tps_name.to_owned(), tps));
        }
        if let Some((tpot, _)) = cell_number(cell, "Mean TPOT(ms):") {
            shown.push((tpot_name.to_owned(), tpot));
        }
        if shown.is_empty() {
            return;
        }
        let workload = self.draft.workloads[w].name.clone();
        // The same configuration measured as a point of a sweep (the
        // recommended command is often one value of a swept flag): that
        // block is this run's.
        let own = self.draft.steps[step]
            .expects
            .iter()
            .any(|e| e.workload == workload && e.at.is_none());
        if !own
            && let Some(SweepPointBlock { sweep, at, metrics }) =
                self.sweep_point_block(step, &workload)
        {
            let s = &mut self.draft.steps[step];
            add_workload(s, &workload);
            s.expects.push(Expect {
                workload: workload.clone(),
                at: None,
                comments: vec![format!(
                    "The block of sweep `{sweep}` at {at}: the same configuration"
                )],
                kind: ExpectKind::Metrics(metrics),
            });
        }
        let s = &mut self.draft.steps[step];
        match s
            .expects
            .iter_mut()
            .find(|e| e.workload == workload && e.at.is_none())
        {
            Some(e) => {
                if let ExpectKind::Metrics(m) = &e.kind {
                    for (name, text) in &shown {
                        let block = m.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone());
                        if let Some(b) = block
                            && b.parse::<f64>().ok() != text.parse::<f64>().ok()
                        {
                            e.comments.push(format!(
                                "TODO: the conclusion table (line {line}) prints {name} {text}; this block shows {b}"
                            ));
                        }
                    }
                }
            }
            // No block shows the run: its numbers are only the conclusion's
            // printed cells (`conclusion { case … }`), which the report
            // flags; an `expect` would pass them off as a block's.
            None => {
                add_workload(s, &workload);
                s.comments.push(format!(
                    "TODO: no result block shows this configuration on `{workload}`; the conclusion table (line {line}) prints {}",
                    shown
                        .iter()
                        .map(|(n, v)| format!("{n} {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }

    /// One `compare` per section that compares configurations, then the
    /// report: the page's summary rows, each bound to its section's.
    fn compares_and_report(&mut self) {
        let table = SummaryTable::of(self.page);
        let used_rows = self.compares(&table);
        self.report(&table, &used_rows);
    }

    /// A `compare` per section, titled by the summary row it matches; the
    /// rows matched.
    fn compares(&mut self, table: &SummaryTable<'p>) -> Vec<String> {
        let page = self.page;
        let (summary_rows, table_rows, title_column) =
            (&table.titles, &table.rows, table.title_column);
        let mut used_rows = Vec::new();
        // The page's baseline: the one "Other Benchmark Cases" runs as its
        // baseline where it has one (wherever the sections print it), else
        // the first configuration.
        let mut first = self
            .baseline_step
            .or((!self.draft.steps.is_empty()).then_some(0))
            .map(|s| self.draft.steps[s].name.clone())
            .unwrap_or_default();
        let mut earlier: Vec<(String, String)> = Vec::new();
        for (gi, group) in self.draft.groups.clone().iter().enumerate() {
            let other = page
                .sections
                .iter()
                .find(|s| s.title.value == group.title && s.title.line == group.line)
                .is_some_and(|s| s.other_cases);
            if other || group.steps.is_empty() {
                continue;
            }
            let steps: Vec<&Step> = group.steps.iter().map(|&i| &self.draft.steps[i]).collect();
            let workload = steps
                .iter()
                .find_map(|s| s.expects.first().map(|e| e.workload.clone()))
                .unwrap_or_else(|| self.draft.workloads[0].name.clone());
            let members: Vec<String> = steps
                .iter()
                .filter(|s| s.workloads.contains(&workload))
                .flat_map(|s| instances(s))
                .collect();
            if members.is_empty() {
                continue;
            }
            // A section that sweeps a flag tunes the configuration without it.
            let swept = steps.iter().find(|s| s.vary.is_some()).and_then(|sw| {
                self.draft
                    .steps
                    .iter()
                    .find(|s| {
                        s.vary.is_none()
                            && s.engine == sw.engine
                            && s.model == sw.model
                            && s.args == sw.args
                            && s.env == sw.env
                    })
                    .map(|s| s.name.clone())
            });
            let row = best_row(&group.title, summary_rows, &used_rows);
            // The delta the summary prints for this section, if it prints one.
            let printed = row.as_ref().and_then(|(_, r)| {
                let i = summary_rows.iter().position(|(_, t)| t == r)?;
                let cells = table_rows.get(i)?;
                cells
                    .iter()
                    .enumerate()
                    .filter(|(c, _)| *c != title_column)
                    .find_map(|(_, c)| printed_delta(&cell_lines(c).join(" ")))
            });
            // The baseline whose comparison gives the printed delta: the
            // page's (the first configuration, or the best so far), else one
            // of the configurations measured before.
            // In the first section, the page's baseline, else whichever of
            // its configurations gives the printed delta (a page may print
            // the baseline second); it is the page's baseline from then on.
            let by_printed = printed
                .as_ref()
                .filter(|_| !self.draft.latency)
                .and_then(|delta| {
                    let mut options = vec![first.clone()];
                    if gi == 0 {
                        options.extend(members.iter().filter(|m| **m != first).cloned());
                    } else {
                        options.extend(self.best(&earlier, &workload));
                        options.extend(
                            earlier
                                .iter()
                                .filter(|(_, w)| *w == workload)
                                .map(|(m, _)| m.clone()),
                        );
                    }
                    options.into_iter().find(|b| {
                        let others: Vec<String> =
                            members.iter().filter(|m| *m != b).cloned().collect();
                        self.gives(b, &others, &workload, delta)
                    })
                });
            let from_best = by_printed.is_none() && swept.is_none() && gi > 0 && !self.guidellm;
            let baseline = if let Some(b) = by_printed.clone() {
                b
            } else if let Some(tuned) = swept.clone() {
                tuned
            } else if gi == 0 || self.guidellm {
                if gi == 0 {
                    if members.contains(&first) {
                        first.clone()
                    } else {
                        members[0].clone()
                    }
                } else {
                    first.clone()
                }
            } else {
                self.best(&earlier, &workload)
                    .unwrap_or_else(|| first.clone())
            };
            // The first section's baseline, where it is the page's, needs no word.
            let by_printed = by_printed.filter(|b| gi > 0 || *b != first);
            if gi == 0 && self.baseline_step.is_none() {
                first = baseline.clone();
            }
            let candidates: Vec<String> = members
                .iter()
                .filter(|m| **m != baseline)
                .cloned()
                .collect();
            for m in &members {
                earlier.push((m.clone(), workload.clone()));
            }
            if candidates.is_empty() {
                continue;
            }
            let mut comments = vec![format!("\"{}\" (line {})", group.title, group.line)];
            let title = match row {
                Some((line, r)) => {
                    used_rows.push(r.clone());
                    comments.push(format!("the summary's row \"{r}\" (line {line})"));
                    r
                }
                None => group.title.clone(),
            };
            if by_printed.is_some() {
                comments.push(format!(
                    "baseline: the configuration against which the best candidate gains what the summary prints ({})",
                    printed.clone().unwrap_or_default()
                ));
            } else if swept.is_some() {
                comments.push("baseline: the configuration the section's sweep tunes".to_owned());
            }
            if from_best {
                comments.push(
                    "baseline: the best configuration of the sections before (\"we select the inference engine that performs best … as the starting point\")".to_owned()
                );
            }
            if self.draft.compares.iter().any(|c| c.title == title) {
                continue;
            }
            let printed = |prefix: &str| {
                group
                    .printed
                    .iter()
                    .find_map(|n| n.strip_prefix(prefix).map(|t| t.trim().to_owned()))
            };
            let summary = printed("Summary:");
            let summary_steps = summary
                .as_deref()
                .and_then(|s| sentence_steps(s, &group.labels));
            self.draft.compares.push(Compare {
                title,
                comments,
                baseline,
                workload,
                candidates,
                result: printed("Result:"),
                summary,
                summary_steps,
            });
        }
        used_rows
    }

    /// The report: the page's summary rows as printed, each bound to the
    /// comparison of its section (or reprinted where none is).
    fn report(&mut self, table: &SummaryTable<'p>, used_rows: &[String]) {
        let page = self.page;
        let (summary_rows, table_rows, title_column) =
            (&table.titles, &table.rows, table.title_column);
        let mut comments = Vec::new();
        for (line, r) in summary_rows.iter() {
            if !used_rows.contains(r) {
                comments.push(format!(
                    "TODO: the summary's row \"{r}\" (line {line}) matches no section that compares configurations; it is reprinted as printed"
                ));
            }
        }
        let decimals = page
            .conclusion
            .as_ref()
            .and_then(|t| {
                t.value
                    .iter()
                    .skip(1)
                    .find_map(|r| r.value.get(2).and_then(|c| delta_decimals(c)))
            })
            .or_else(|| {
                page.summary.as_ref().and_then(|t| {
                    t.value
                        .iter()
                        .skip(1)
                        .find_map(|r| r.value.iter().find_map(|c| delta_decimals(c)))
                })
            })
            .unwrap_or(1);
        let conclusion_deltas: Vec<(String, String)> = page
            .conclusion
            .as_ref()
            .map(|t| {
                t.value
                    .iter()
                    .skip(1)
                    .filter_map(|r| {
                        Some((
                            strip_bold(r.value.first()?),
                            printed_delta(&cell_lines(r.value.get(2)?).join(" "))?,
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut summary = Vec::new();
        for ((_, title), cells) in summary_rows.iter().zip(table_rows.iter()) {
            // A row no section compares is the page's too: reprinted as
            // printed (its numbers marked as not reproduced), never dropped.
            let cells: Vec<Vec<String>> = cells
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != title_column)
                .map(|(_, c)| cell_lines(c))
                .collect();
            // A row that prints the conclusion's delta on its comparison's
            // workload credits the conclusion (the 14B page's Engine Selection).
            let compare = self.draft.compares.iter().find(|c| c.title == *title);
            let case = compare.and_then(|c| {
                self.draft
                    .workloads
                    .iter()
                    .find(|w| w.name == c.workload)
                    .map(|w| w.title.clone())
            });
            let row_delta = cells.iter().flatten().find_map(|l| printed_delta(l));
            let credits_conclusion = match (case, row_delta.clone()) {
                (Some(case), Some(delta)) => {
                    conclusion_deltas
                        .iter()
                        .any(|(c, d)| *c == case && *d == delta)
                        && compare.is_some_and(|c| {
                            self.draft.conclusion.as_ref().is_some_and(|k| {
                                !c.candidates.contains(&k.optimized) && c.baseline == k.baseline
                            })
                        })
                }
                _ => false,
            };
            let per_gpu = compare.is_some_and(|c| {
                let marked = cells.iter().flatten().any(|l| says_per_device(l))
                    || [&c.result, &c.summary]
                        .into_iter()
                        .flatten()
                        .any(|t| says_per_device(t));
                marked || self.read_per_gpu(c, row_delta.as_deref())
            });
            let dash = cells.iter().flatten().all(|l| l == "-");
            let threshold = compare
                .filter(|_| dash && !self.draft.latency)
                .and_then(|c| self.gain_as(&c.baseline, &c.candidates, &c.workload, per_gpu))
                .filter(|g| *g > 0.0 && *g < 1.0)
                .map(|g| format!("{:.1}", (g * 10.0).ceil() / 10.0));
            let header: Vec<String> = page
                .summary
                .as_ref()
                .and_then(|t| t.value.first())
                .map(|h| h.value.iter().map(|c| strip_bold(c)).collect())
                .unwrap_or_default();
            let column = |name: &str| header.iter().position(|h| h == name);
            let raw = table_rows
                .get(
                    summary_rows
                        .iter()
                        .position(|(_, t)| t == title)
                        .unwrap_or(usize::MAX),
                )
                .copied();
            // The baseline can stay the best: the Optimized column then shows
            // its numbers (with a `+0.00%` or "1.00x faster" beside them).
            let optimized = match (column("Optimized"), raw, compare) {
                (Some(o), Some(cells), Some(c)) => {
                    let printed: Vec<PrintedLine> = cells
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i == o || column("Comparison") == Some(*i))
                        .flat_map(|(_, cell)| cell_lines(cell))
                        .map(|l| PrintedLine::parse(&l))
                        .collect();
                    self.shown_in_row(c, &printed)
                }
                _ => None,
            };
            // A gain the best candidate does not give but another does is
            // that one's (the page credits the candidate its "Result:" names).
            let optimized = optimized.or_else(|| {
                let (c, delta) = compare.zip(row_delta.as_ref())?;
                let gives = |m: &[String]| self.gives(&c.baseline, m, &c.workload, delta);
                // `+0.00%` that no candidate gains: the baseline stayed the best
                // (a latency study's gain is a speed-up, which `gives` does not weigh).
                let zero = delta.trim_start_matches(['+', '-']).trim_end_matches('%');
                let zero = zero.parse::<f64>().is_ok_and(|z| z == 0.0);
                if credits_conclusion {
                    return None;
                }
                if self.draft.latency {
                    return zero.then(|| c.baseline.clone());
                }
                if gives(&c.candidates) {
                    return None;
                }
                if zero {
                    return Some(c.baseline.clone());
                }
                let mut giving = c.candidates.iter().filter(|m| gives(&[(*m).clone()]));
                match (giving.next(), giving.next()) {
                    (Some(m), None) => Some(m.clone()),
                    _ => None,
                }
            });
            summary.push(SummaryRow {
                title: title.clone(),
                optimized,
                threshold,
                per_gpu,
                credits_conclusion,
                cells,
            });
        }
        let all_cells: Vec<String> = table_rows.iter().flat_map(|r| r.iter().cloned()).collect();
        self.draft.report = Some(Report {
            comments,
            delta_decimals: decimals,
            table: page
                .summary
                .as_ref()
                .and_then(|t| t.value.first())
                .map(|h| h.value.iter().map(|c| strip_bold(c)).collect())
                .unwrap_or_default(),
            min_success: all_cells.iter().any(|c| c.contains("Success rate:")),
            skip_lower_than_previous: all_cells.iter().any(|c| c.contains("lower than previous")),
            summary,
        });
    }

    /// The best candidate's throughput gain over `baseline` on `workload`, in %
    /// (replicas counted, as the pages count them).
    /// GPUs an instance of a step takes, all replicas.
    fn gpus_of_instance(&self, instance: &str) -> Option<u32> {
        self.draft
            .steps
            .iter()
            .find(|s| instances(s).iter().any(|i| i == instance))
            .map(|s| s.gpus * s.replicas)
    }

    /// Whether configurations run on different GPU counts (where a gain
    /// may be weighed per GPU, TP2's "+26.8%").
    fn counts_differ(&self, baseline: &str, candidates: &[String]) -> bool {
        let base = self.gpus_of_instance(baseline);
        !self.draft.latency
            && candidates.iter().any(|m| {
                let gpus = self.gpus_of_instance(m);
                base.is_some() && gpus.is_some() && gpus != base
            })
    }

    /// Whether the best of `candidates` gains the printed `delta` over
    /// `baseline`: in total throughput, or per GPU where their GPU counts
    /// differ.
    fn gives(&self, baseline: &str, candidates: &[String], workload: &str, delta: &str) -> bool {
        let per_gpu = self.counts_differ(baseline, candidates);
        [false, per_gpu].into_iter().any(|p| {
            self.gain_as(baseline, candidates, workload, p)
                .is_some_and(|g| format_delta(g, delta) == delta)
        })
    }

    /// Whether a summary row that does not say it is per GPU is read per
    /// GPU: only where its configurations run on different GPU counts and its
    /// printed value (`delta`, or "-": no gain) holds per GPU but not for
    /// the total throughput, which is what a delta is unless the page says.
    fn read_per_gpu(&self, c: &Compare, delta: Option<&str>) -> bool {
        if !self.counts_differ(&c.baseline, &c.candidates) {
            return false;
        }
        let holds = |per_gpu| {
            let gain = self.gain_as(&c.baseline, &c.candidates, &c.workload, per_gpu);
            match (gain, delta) {
                (Some(g), Some(d)) => format_delta(g, d) == d,
                // "-": no gain beyond run-to-run noise.
                (Some(g), None) => g < 1.0,
                (None, _) => false,
            }
        };
        !holds(false) && holds(true)
    }

    /// The best candidate's gain over `baseline` in %: of all replicas'
    /// throughput, per GPU where `per_gpu`.
    fn gain_as(
        &self,
        baseline: &str,
        candidates: &[String],
        workload: &str,
        per_gpu: bool,
    ) -> Option<f64> {
        let total = |m: &str| {
            let step = self
                .draft
                .steps
                .iter()
                .find(|s| instances(s).iter().any(|i| i == m));
            let replicas = step.map_or(1, |s| s.replicas);
            let gpus = match step {
                Some(s) if per_gpu => s.gpus * s.replicas,
                _ => 1,
            };
            self.score(m, workload)
                .map(|v| v * f64::from(replicas) / f64::from(gpus.max(1)))
        };
        let b = total(baseline)?;
        let best = candidates
            .iter()
            .filter_map(|c| total(c))
            .fold(None, |acc: Option<f64>, v| {
                Some(acc.map_or(v, |a| a.max(v)))
            })?;
        Some((best / b - 1.0) * 100.0)
    }

    /// The best of `members` on `workload`: highest throughput, or lowest latency.
    /// Per GPU where they run on different GPU counts, as the lab weighs them.
    fn best(&self, members: &[(String, String)], workload: &str) -> Option<String> {
        let on: Vec<&String> = members
            .iter()
            .filter(|(_, w)| w == workload)
            .map(|(m, _)| m)
            .collect();
        let per_gpu = on.split_first().is_some_and(|(first, rest)| {
            self.counts_differ(
                first,
                &rest.iter().map(|m| (*m).clone()).collect::<Vec<_>>(),
            )
        });
        let mut best: Option<(String, f64)> = None;
        for m in on {
            let gpus = match self.gpus_of_instance(m) {
                Some(g) if per_gpu => g,
                _ => 1,
            };
            let replicas = self
                .draft
                .steps
                .iter()
                .find(|s| instances(s).iter().any(|i| i == m))
                .map_or(1, |s| s.replicas);
            let Some(value) = self.score(m, workload) else {
                continue;
            };
            let value = if per_gpu {
                value * f64::from(replicas) / f64::from(gpus.max(1))
            } else {
                value
            };
            let better = match &best {
                None => true,
                Some((_, b)) if self.draft.latency => value < *b,
                Some((_, b)) => value > *b,
            };
            if better {
                best = Some((m.clone(), value));
            }
        }
        best.map(|(m, _)| m)
    }

    /// The numbers of `instance`'s block on `workload`, as printed there.
    fn block_of(&self, instance: &str, workload: &str) -> Option<&[(String, String)]> {
        for s in &self.draft.steps {
            for e in &s.expects {
                let name = match &e.at {
                    Some(v) => format!("{}-{}", s.name, slug(v)),
                    None => s.name.clone(),
                };
                if name != instance || e.workload != workload {
                    continue;
                }
                let ExpectKind::Metrics(m) = &e.kind else {
                    return None;
                };
                return Some(m);
            }
        }
        None
    }

    /// What a study weighs configurations by: mean latency in seconds on a
    /// latency study, else total throughput.
    fn score(&self, instance: &str, workload: &str) -> Option<f64> {
        let metric = if self.draft.latency {
            CellMetric::MeanLatency
        } else {
            CellMetric::TotalTps
        };
        self.block_number(instance, workload, metric)
    }

    /// `instance`'s number for `metric` on `workload`, from its block
    /// (mean latency in seconds).
    fn block_number(&self, instance: &str, workload: &str, metric: CellMetric) -> Option<f64> {
        let m = self.block_of(instance, workload)?;
        let get = |k: &str| {
            m.iter()
                .find(|(n, _)| n == k)
                .and_then(|(_, v)| v.parse::<f64>().ok())
        };
        match metric {
            CellMetric::MeanLatency => get("request_latency_mean")
                .or_else(|| get("mean_e2el_ms").map(|v| v / 1000.0))
                .or_else(|| {
                    let ttft = get("mean_ttft_ms")?;
                    let tpot = get("mean_tpot_ms")?;
                    let out = get("total_output_tokens")?;
                    let n = get("completed")?;
                    Some((ttft + tpot * (out / n - 1.0)) / 1000.0)
                }),
            CellMetric::TotalTps => {
                get("total_token_throughput").or_else(|| get("tokens_per_second_mean"))
            }
            CellMetric::MeanTpot => {
                get("mean_tpot_ms").or_else(|| get("time_per_output_token_ms_mean"))
            }
        }
    }

    /// How many of a summary row's printed numbers `member`'s block gives at
    /// their rounding: the numbers its Optimized column shows, and each
    /// change against `baseline`.
    fn numbers_given(
        &self,
        member: &str,
        baseline: &str,
        workload: &str,
        row: &[PrintedLine],
    ) -> usize {
        let latency = self.draft.latency;
        let value = |m: &str, metric| self.block_number(m, workload, metric);
        row.iter()
            .filter(|line| {
                let metric = match (&line.label, line.number()) {
                    (Some(label), _) => CellMetric::from_label(label),
                    (None, Some((_, _, "s" | "s/req"))) => Some(CellMetric::MeanLatency),
                    _ if latency => Some(CellMetric::MeanLatency),
                    _ => Some(CellMetric::TotalTps),
                };
                let Some(metric) = metric else {
                    return false;
                };
                let number_given = line.number().is_some_and(|(n, _, _)| {
                    value(member, metric).is_some_and(|v| n.format(v) == n.format(n.value))
                });
                let change_given = match (
                    line.change(),
                    value(member, metric),
                    value(baseline, metric),
                ) {
                    (Some(Quantity::Delta { pct, .. }), Some(m), Some(b)) => {
                        let gain = if metric == CellMetric::TotalTps {
                            m / b
                        } else {
                            b / m
                        };
                        pct.format((gain - 1.0) * 100.0) == pct.format(pct.value)
                    }
                    (Some(Quantity::Ratio { ratio, slower }), Some(m), Some(b)) => {
                        let faster = if metric == CellMetric::TotalTps {
                            m / b
                        } else {
                            b / m
                        };
                        let r = if *slower { 1.0 / faster } else { faster };
                        ratio.format(r) == ratio.format(ratio.value)
                    }
                    _ => false,
                };
                number_given || change_given
            })
            .count()
    }

    /// The configuration a summary row's Optimized column shows, where it
    /// is not the best candidate: of the baseline and the candidates, the
    /// one whose block gives more of the row's printed numbers than any
    /// other's (the baseline when it stayed the best: "2.62s | 2.62s |
    /// 1.00x faster"). Bound by what most numbers say, so one misprinted
    /// number is flagged where it is printed and moves nothing.
    fn shown_in_row(&self, c: &Compare, row: &[PrintedLine]) -> Option<String> {
        let members: Vec<&String> = std::iter::once(&c.baseline).chain(&c.candidates).collect();
        let given: Vec<usize> = members
            .iter()
            .map(|m| self.numbers_given(m, &c.baseline, &c.workload, row))
            .collect();
        let most = *given.iter().max()?;
        let mut ahead = members.iter().zip(&given).filter(|(_, g)| **g == most);
        let (winner, _) = ahead.next()?;
        if most == 0 || ahead.next().is_some() {
            return None;
        }
        let on: Vec<(String, String)> = c
            .candidates
            .iter()
            .map(|m| (m.clone(), c.workload.clone()))
            .collect();
        (self.best(&on, &c.workload).as_ref() != Some(*winner)).then(|| (*winner).clone())
    }

    /// The box: the GPUs the page states, else the most any step uses.
    fn hardware_count(&mut self) {
        let need = self
            .draft
            .steps
            .iter()
            .map(|s| s.gpus * s.replicas)
            .max()
            .unwrap_or(1);
        let stated = self
            .page
            .hardware
            .as_ref()
            .and_then(|h| hardware::count(&h.value));
        self.draft.gpus = match stated {
            Some(n) if n >= need => n,
            Some(n) => {
                self.draft.hardware_comments.push(format!(
                    "TODO: the page states {n} GPUs, but a configuration needs {need}; {need} are declared"
                ));
                need
            }
            None => {
                self.draft.hardware_comments.push(format!(
                    "TODO: the page does not say how many; {need} (what its largest configuration uses) is assumed"
                ));
                need
            }
        };
    }
}

/// The conclusion's case names ("ShareGPT", "Short Prompt"), in order.
fn cases(page: &Page) -> Vec<String> {
    page.conclusion
        .as_ref()
        .map(|t| {
            t.value
                .iter()
                .skip(1)
                .filter_map(|r| r.value.first().map(|c| strip_bold(c)))
                .collect()
        })
        .unwrap_or_default()
}

/// The two configurations a "Summary:" sentence names (its first two
/// distinct backquoted labels), as the steps of `labels` (label, step) whose
/// label they are, case and backquotes aside; `None` where one is no label.
/// Whether a warning (lowercase) names a configuration by its label as
/// printed, as a whole word (`SGLang`, not the `vLLM` of `vLLM-Ascend`).
fn names_label(warning: &str, label: &str) -> bool {
    let label = label.trim().trim_matches('`').to_lowercase();
    !label.is_empty()
        && warning.match_indices(&label).any(|(i, _)| {
            let word = |c: char| c.is_alphanumeric() || c == '-';
            let before = warning[..i].chars().next_back().is_none_or(|c| !word(c));
            let after = warning[i + label.len()..]
                .chars()
                .next()
                .is_none_or(|c| !word(c));
            before && after
        })
}

fn sentence_steps(sentence: &str, labels: &[(String, String)]) -> Option<(String, String)> {
    let key = |s: &str| s.trim().trim_matches('`').trim().to_lowercase();
    let mut named: Vec<String> = Vec::new();
    for quoted in sentence.split('`').skip(1).step_by(2) {
        let k = key(quoted);
        if !named.contains(&k) {
            named.push(k);
        }
    }
    let step = |k: &String| {
        labels
            .iter()
            .find(|(label, _)| key(label) == *k)
            .map(|(_, step)| step.clone())
    };
    Some((step(named.first()?)?, step(named.get(1)?)?))
}

fn page_model(page: &Page) -> String {
    page.model
        .as_ref()
        .map(|m| m.value.trim_start_matches("- ").trim().to_owned())
        .unwrap_or_else(|| "unknown/model".into())
}

fn completed(block: &ParsedBlock) -> Option<u64> {
    let key = match block.set {
        MetricSet::Vllm => "completed",
        MetricSet::Guidellm => "request_totals_successful",
    };
    let n = block.metrics.get(key)?;
    let failed = block.metrics.get("failed").copied().unwrap_or(0.0);
    Some((n + failed) as u64)
}

/// The block's numbers in the order of its rows (its labels' order is lost
/// in the map; the printed order is the `texts` order of the page's rows).
fn order(block: &ParsedBlock, mut metrics: Vec<(String, String)>) -> Vec<(String, String)> {
    const FIRST: &[&str] = &[
        "completed",
        "request_totals_successful",
        "failed",
        "max_concurrency",
        "request_concurrency_max_rounded",
        "request_rate",
        "duration",
        "total_input_tokens",
        "prompt_token_count_total_sum",
        "total_output_tokens",
        "output_token_count_total_sum",
        "request_throughput",
        "requests_per_second_mean",
        "request_goodput",
        "output_throughput",
        "output_tokens_per_second_mean",
        "max_output_tokens_per_s",
        "output_tokens_per_second_max",
        "max_concurrent_requests",
        "request_concurrency_max",
        "total_token_throughput",
        "tokens_per_second_mean",
    ];
    let _ = block;
    let rank = |name: &str| {
        FIRST.iter().position(|f| *f == name).unwrap_or_else(|| {
            // Latencies: by metric, then mean, median, percentiles.
            let metric = [
                "ttft",
                "time_to_first",
                "tpot",
                "time_per_output",
                "itl",
                "inter_token",
                "e2el",
                "request_latency",
            ]
            .iter()
            .position(|m| name.contains(m))
            .unwrap_or(9);
            let stat = if name.contains("mean") {
                0
            } else if name.contains("median") {
                1
            } else {
                2
            };
            100 + metric / 2 * 10 + stat
        })
    };
    metrics.sort_by(|a, b| rank(&a.0).cmp(&rank(&b.0)).then_with(|| a.0.cmp(&b.0)));
    metrics
}

/// The flags a variant's label sets: `--flag value` pairs as written, or a
/// bare value (`fa3`) for the flag whose value another label or the script
/// sets to a word of the same kind.
fn variant_flags(label: &str, script: &[String], variants: &[(String, usize, &Outcome)]) -> Flags {
    let words: Vec<String> = label.split_whitespace().map(str::to_owned).collect();
    if words.first().is_some_and(|w| w.starts_with('-')) {
        return flags(&words);
    }
    if words.len() == 1 {
        let value = &words[0];
        // The flag another label sets (`--attention-backend=triton` beside `fa3`).
        let from_labels = variants.iter().find_map(|(l, _, _)| {
            let f = flags(&l.split_whitespace().map(str::to_owned).collect::<Vec<_>>());
            (f.len() == 1 && f[0].0.starts_with("--")).then(|| f[0].0.clone())
        });
        // Or the script's flag whose value is one of the labels (`--attention-backend triton`).
        let labels: Vec<&str> = variants.iter().map(|(l, _, _)| l.as_str()).collect();
        let from_script = flags(script)
            .into_iter()
            .find(|(_, v)| v.as_deref().is_some_and(|v| labels.contains(&v)))
            .map(|(f, _)| f);
        if let Some(flag) = from_labels.or(from_script) {
            return vec![(flag, Some(value.clone()))];
        }
    }
    Vec::new()
}

/// `args` without the named flags (and their values).
fn without_flags(args: &[String], names: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let (flag, inline) = match a.split_once('=') {
            Some((f, _)) if a.starts_with("--") => (f, true),
            _ => (a.as_str(), false),
        };
        if names.iter().any(|n| n == flag) {
            let takes_value = !inline && args.get(i + 1).is_some_and(|n| !n.starts_with('-'));
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        out.push(a.clone());
        i += 1;
    }
    out
}

fn add_workload(step: &mut Step, w: &str) {
    if !step.workloads.iter().any(|x| x == w) {
        step.workloads.push(w.to_owned());
    }
}

/// The step's instances: its name, or a sweep's `<name>-<value>`s.
fn instances(step: &Step) -> Vec<String> {
    match &step.vary {
        Some((_, values)) => values
            .iter()
            .map(|v| format!("{}-{}", step.name, slug(v)))
            .collect(),
        None => vec![step.name.clone()],
    }
}

/// GPUs a configuration takes: tensor × pipeline (× vLLM's data) parallel.
fn gpus_of(args: &[String]) -> u32 {
    let mut tp = 1;
    let mut pp = 1;
    let mut dp = 1;
    for (flag, value) in flags(args) {
        let Some(n) = value.and_then(|v| v.parse::<u32>().ok()) else {
            continue;
        };
        match flag.as_str() {
            "-tp" | "--tensor-parallel-size" | "--tp-size" | "--tp" | "--tp_size" => tp = n,
            "-pp" | "--pipeline-parallel-size" | "--pp-size" | "--pp" | "--pp_size" => pp = n,
            "-dp" | "--data-parallel-size" => dp = n,
            _ => {}
        }
    }
    tp * pp * dp
}

/// "Qwen/Qwen3-14B" and "Qwen/Qwen3-14B-FP8" → "fp8"; another model → its name.
fn model_suffix(base: &str, model: &str) -> String {
    let name = |id: &str| id.rsplit('/').next().unwrap_or(id).to_lowercase();
    let (b, m) = (name(base), name(model));
    match m.strip_prefix(&b) {
        Some(rest) if !rest.is_empty() => slug(rest),
        _ => slug(&m),
    }
}

/// "Parallelism in SGLang" → "Parallelism".
fn strip_engine_words(title: &str) -> String {
    match title.rsplit_once(" in ") {
        Some((head, tail)) if engine_named(tail).is_some() => head.to_owned(),
        _ => title.to_owned(),
    }
}

/// The summary row a section is about: the most words in common.
fn best_row(title: &str, rows: &[(usize, String)], used: &[String]) -> Option<(usize, String)> {
    const SKIP: &[&str] = &[
        "in", "the", "of", "for", "and", "&&", "a", "numbers", "number",
    ];
    let words = |t: &str| -> Vec<String> {
        t.to_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty() && !SKIP.contains(w) && engine_named(w).is_none())
            .map(|w| w.trim_end_matches('s').to_owned())
            .collect()
    };
    let mine = words(title);
    let mut best: Option<(usize, usize, String)> = None;
    for (line, row) in rows {
        if used.contains(row) {
            continue;
        }
        if row == title {
            return Some((*line, row.clone()));
        }
        let theirs = words(row);
        let common = theirs.iter().filter(|w| mine.contains(w)).count();
        if common > 0 && best.as_ref().is_none_or(|(c, _, _)| common > *c) {
            best = Some((common, *line, row.clone()));
        }
    }
    best.map(|(_, line, row)| (line, row))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_come_off_and_gpus_add_up() {
        let args: Vec<String> = ["-tp", "4", "--max-num-batched-tokens", "4096", "--x=1"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            without_flags(&args, &["--max-num-batched-tokens".into(), "--x".into()]),
            ["-tp", "4"]
        );
        assert_eq!(gpus_of(&args), 4);
        assert_eq!(model_suffix("Qwen/Qwen3-14B", "Qwen/Qwen3-14B-FP8"), "fp8");
        assert_eq!(strip_engine_words("Parallelism in SGLang"), "Parallelism");
    }

    #[test]
    fn block_labels_name_the_flags_they_set() {
        let script: Vec<String> = ["--attention-backend", "triton"].map(String::from).to_vec();
        let outcome = Outcome::Failure {
            line: 1,
            label: None,
            error: String::new(),
        };
        let variants = vec![
            ("triton".to_owned(), 0, &outcome),
            ("flashinfer".to_owned(), 0, &outcome),
        ];
        // A bare label is a value of the script's flag that another label holds.
        assert_eq!(
            variant_flags("flashinfer", &script, &variants),
            vec![(
                "--attention-backend".to_owned(),
                Some("flashinfer".to_owned())
            )]
        );
        assert_eq!(
            variant_flags("--max-num-batched-tokens 4096", &[], &variants),
            vec![(
                "--max-num-batched-tokens".to_owned(),
                Some("4096".to_owned())
            )]
        );
        assert_eq!(
            variant_flags("fa3", &[], &[("fa3".to_owned(), 0, &outcome)]),
            vec![]
        );
        assert_eq!(format_delta(47.06, "+47.1%"), "+47.1%");
        assert_eq!(format_delta(-0.4, "-0.4%"), "-0.4%");
    }

    #[test]
    fn sections_find_their_summary_rows() {
        let rows = vec![
            (1, "Engine Selection".to_owned()),
            (2, "Quantization".to_owned()),
            (3, "Max Batched Token Numbers".to_owned()),
        ];
        assert_eq!(
            best_row("Choosing the Inference Engine", &rows, &[]).map(|r| r.1),
            Some("Engine Selection".into())
        );
        assert_eq!(
            best_row("Max Batched Token Numbers in TensorRT-LLM", &rows, &[]).map(|r| r.1),
            Some("Max Batched Token Numbers".into())
        );
    }
}
