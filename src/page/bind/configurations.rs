//! The page's configurations → steps (one per measured configuration, a
//! sweep where blocks vary one flag), and each block or failure as an
//! expectation of its step on its workload.

use super::workloads::{self, slug};
use super::{Builder, Expect, ExpectKind, Flags, Group, Identity, Step};
use crate::metrics::{MetricSet, ParsedBlock};
use crate::page::cells::{cell_number, strip_bold};
use crate::page::command::{Serving, engine_named, flags, serving};
use crate::page::model::{At, Config, Outcome, Page, Role};

/// Where the page prints an outcome: in a section, or as a side of "Other
/// Benchmark Cases".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PrintedIn {
    Section,
    OtherCases,
}

impl Builder<'_> {
    /// The experiment's model: the first configuration's.
    pub(super) fn base_model(&self) -> String {
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

    pub(super) fn configurations(&mut self) {
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
            self.draft.groups.push(Group {
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
    pub(super) fn warned_failures(&mut self, warning: &At<String>) {
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
                    self.expect(step, w, None, &failure, PrintedIn::Section);
                }
            }
        }
    }

    /// The engine, model and arguments of a configuration.
    pub(super) fn serving_of(
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

    pub(super) fn config(&mut self, config: &Config, serve: Serving, other_cases: bool) {
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
            let printed_in = if config.role.is_some() {
                PrintedIn::OtherCases
            } else {
                PrintedIn::Section
            };
            for (w, outcome) in plain {
                self.expect(step, w, None, outcome, printed_in);
            }
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
                self.expect(step, *w, at, outcome, PrintedIn::Section);
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
                self.expect(step, *w, None, outcome, PrintedIn::Section);
            }
        }
    }

    /// For a side of "Other Benchmark Cases" measured by a script of its
    /// own: the earlier step of the same engine and model whose block shows
    /// the numbers the conclusion prints for that side on a workload the
    /// side has no block of (the page printed that block's numbers).
    pub(super) fn printed_by(
        &self,
        serve: &Serving,
        role: Option<Role>,
    ) -> Option<(usize, String)> {
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
        let metric = self.metric_set().tps();
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

    pub(super) fn note(&mut self, step: usize, command: &str, role: &str) {
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

    pub(super) fn mark_role(&mut self, step: usize, role: Role) {
        match role {
            Role::Baseline => self.baseline_step = Some(step),
            Role::Optimized => self.optimized_step = Some(step),
        }
    }

    /// The step of a configuration: an earlier one with the same engine,
    /// model and arguments, or a new one named after what sets it apart.
    pub(super) fn step_for(
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

    /// One outcome as an expectation of a step on a workload; where the
    /// run already has another result, the one `printed_in` "Other
    /// Benchmark Cases" (what the conclusion prints) is kept, else the first.
    pub(super) fn expect(
        &mut self,
        step: usize,
        workload: usize,
        at: Option<String>,
        outcome: &Outcome,
        printed_in: PrintedIn,
    ) {
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
            if have.kind != kind && printed_in == PrintedIn::OtherCases {
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
}

/// Whether a warning (lowercase) names a configuration by its label as
/// printed, as a whole word (`SGLang`, not the `vLLM` of `vLLM-Ascend`).
pub(super) fn names_label(warning: &str, label: &str) -> bool {
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

pub(super) fn page_model(page: &Page) -> String {
    page.model
        .as_ref()
        .map(|m| m.value.trim_start_matches("- ").trim().to_owned())
        .unwrap_or_else(|| "unknown/model".into())
}

pub(super) fn completed(block: &ParsedBlock) -> Option<u64> {
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
pub(super) fn order(
    block: &ParsedBlock,
    mut metrics: Vec<(String, String)>,
) -> Vec<(String, String)> {
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
pub(super) fn variant_flags(
    label: &str,
    script: &[String],
    variants: &[(String, usize, &Outcome)],
) -> Flags {
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
pub(super) fn without_flags(args: &[String], names: &[String]) -> Vec<String> {
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

pub(super) fn add_workload(step: &mut Step, w: &str) {
    if !step.workloads.iter().any(|x| x == w) {
        step.workloads.push(w.to_owned());
    }
}

/// GPUs a configuration takes: tensor × pipeline (× vLLM's data) parallel.
pub(super) fn gpus_of(args: &[String]) -> u32 {
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
pub(super) fn model_suffix(base: &str, model: &str) -> String {
    let name = |id: &str| id.rsplit('/').next().unwrap_or(id).to_lowercase();
    let (b, m) = (name(base), name(model));
    match m.strip_prefix(&b) {
        Some(rest) if !rest.is_empty() => slug(rest),
        _ => slug(&m),
    }
}

/// "Parallelism in SGLang" → "Parallelism".
pub(super) fn strip_engine_words(title: &str) -> String {
    match title.rsplit_once(" in ") {
        Some((head, tail)) if engine_named(tail).is_some() => head.to_owned(),
        _ => title.to_owned(),
    }
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
    }
}
