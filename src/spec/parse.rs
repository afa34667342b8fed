//! KDL v2 text → [`Spec`], collecting every problem with its place in the file.
//!
//! The decoder is hand-written over `KdlDocument` rather than serde-derived:
//! it is the only way to point at the exact node or property that is wrong,
//! suggest the name that was meant, and keep going after the first error.

use std::collections::{BTreeMap, HashSet};

use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};
use miette::{NamedSource, SourceSpan};

use super::diag::{SpecDiagnostic, SpecErrors, closest, did_you_mean, one_of};
use super::model::*;
use crate::gpu;
use crate::metrics::METRIC_NAMES;

/// An experiment file's name (as shown in diagnostics) and text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
}

/// Parses and validates one experiment; all errors are returned together.
pub fn parse(source: &SourceFile) -> Result<Spec, SpecErrors> {
    let mut d = Decoder::default();
    let spec = match KdlDocument::parse_v2(&source.text) {
        Ok(doc) => d.document(&doc),
        Err(err) => {
            d.errors.extend(err.diagnostics.iter().map(|k| {
                let text = snippet(&source.text, k.span);
                let mut diag = SpecDiagnostic::new(
                    k.span,
                    k.message.clone().unwrap_or_else(|| "invalid KDL".into()),
                    k.label.clone().unwrap_or_else(|| "here".into()),
                );
                diag.help = k.help.clone();
                if matches!(text, "true" | "false" | "null") {
                    diag = diag.with_help(format!(
                        "KDL v2 writes `{text}` as `#{text}` (see docs/experiment-language.md)"
                    ));
                }
                diag
            }));
            None
        }
    };
    match spec {
        Some(spec) if d.errors.is_empty() => Ok(spec),
        _ => Err(SpecErrors {
            src: NamedSource::new(&source.name, source.text.clone()),
            errors: d.errors,
        }),
    }
}

fn snippet(text: &str, span: SourceSpan) -> &str {
    text.get(span.offset()..span.offset() + span.len())
        .unwrap_or("")
}

const TOP_NODES: &[&str] = &[
    "title",
    "hardware",
    "model",
    "runtime",
    "engine",
    "harness",
    "workload",
    "step",
    "sweep",
    "compare",
    "conclusion",
];
const WORKLOAD_NODES: &[&str] = &["dataset", "prompts", "rate", "concurrency"];
const STEP_PROPS: &[&str] = &["engine", "model", "revision", "gpus", "replicas"];
const STEP_NODES: &[&str] = &["args", "env", "workloads", "expect", "expect-failure"];
const SWEEP_NODES: &[&str] = &[
    "args",
    "env",
    "workloads",
    "expect",
    "expect-failure",
    "vary",
];

/// A name used before we know whether it is declared.
struct Reference {
    kind: RefKind,
    name: String,
    span: SourceSpan,
}

#[derive(Clone, Copy, PartialEq)]
enum RefKind {
    Engine,
    Workload,
    Step,
}

impl RefKind {
    fn noun(self) -> &'static str {
        match self {
            Self::Engine => "engine",
            Self::Workload => "workload",
            Self::Step => "step",
        }
    }
}

/// An expectation's workload, which must be one the step is measured on.
struct ExpectRef {
    step: String,
    workload: String,
    span: SourceSpan,
}

#[derive(Default)]
struct Decoder {
    errors: Vec<SpecDiagnostic>,
    refs: Vec<Reference>,
    expect_refs: Vec<ExpectRef>,
    /// Every name declared, even where its node had errors, so a broken step
    /// does not also make each reference to it an error.
    declared: Vec<(RefKind, String)>,
    /// Node names offered as "did you mean", so a typo is not also reported missing.
    suggested: Vec<String>,
}

impl Decoder {
    fn error(&mut self, diag: SpecDiagnostic) {
        self.errors.push(diag);
    }

    fn document(&mut self, doc: &KdlDocument) -> Option<Spec> {
        let mut experiment = None;
        for node in doc.nodes() {
            let name = node.name().value();
            if name == "experiment" {
                if experiment.is_some() {
                    self.error(
                        SpecDiagnostic::new(
                            node.name().span(),
                            "a file declares one experiment",
                            "second `experiment`",
                        )
                        .with_help("put each experiment in its own file under `experiments/`"),
                    );
                } else {
                    experiment = Some(node);
                }
            } else {
                self.unknown_node(node, &["experiment"], "at the top of the file");
            }
        }
        let Some(node) = experiment else {
            self.error(
                SpecDiagnostic::new(
                    doc.span(),
                    "no `experiment` node",
                    "the file declares no experiment",
                )
                .with_help("start with `experiment \"<name>\" { ... }`"),
            );
            return None;
        };
        self.experiment(node)
    }

    fn experiment(&mut self, node: &KdlNode) -> Option<Spec> {
        let name = self.required_string_arg(node, 0, "the experiment's name");
        self.no_props(node);
        let children = self.children(node, TOP_NODES);

        let mut title = None;
        let mut hardware = None;
        let mut model = None;
        let mut runtime = None;
        let mut engines: Vec<EngineDecl> = Vec::new();
        let mut harness = None;
        let mut workloads: Vec<Workload> = Vec::new();
        let mut steps: Vec<Step> = Vec::new();
        let mut comparisons = Vec::new();
        let mut conclusion = None;
        let mut seen_singletons: BTreeMap<&str, SourceSpan> = BTreeMap::new();

        for child in children {
            let kind = child.name().value();
            if matches!(
                kind,
                "title" | "hardware" | "model" | "runtime" | "harness" | "conclusion"
            ) {
                if let Some(first) = seen_singletons.get(kind) {
                    let first = *first;
                    self.error(
                        SpecDiagnostic::new(
                            child.name().span(),
                            format!("`{kind}` is declared twice"),
                            "declared again here",
                        )
                        .with_help(format!(
                            "the first `{kind}` is at offset {}; keep one",
                            first.offset()
                        )),
                    );
                    continue;
                }
                seen_singletons.insert(kind, child.name().span());
            }
            match kind {
                "title" => {
                    self.no_props(child);
                    self.no_children(child);
                    title = self.required_string_arg(child, 0, "the title");
                }
                "hardware" => hardware = self.hardware(child),
                "model" => model = self.model(child),
                "runtime" => runtime = self.runtime(child),
                "engine" => {
                    if let Some(engine) = self.engine(child) {
                        if engines.iter().any(|e| e.kind == engine.kind) {
                            self.error(
                                SpecDiagnostic::new(
                                    child.span(),
                                    format!("engine `{}` is declared twice", engine.kind.name()),
                                    "second declaration",
                                )
                                .with_help("declare each engine once, with its exact version"),
                            );
                        } else {
                            engines.push(engine);
                        }
                    }
                }
                "harness" => harness = self.harness(child),
                "workload" => {
                    if let Some(w) = self.workload(child) {
                        workloads.push(w);
                    }
                }
                "step" => {
                    if let Some(step) = self.step(child) {
                        steps.push(step);
                    }
                }
                "sweep" => steps.extend(self.sweep(child)),
                "compare" => {
                    if let Some(c) = self.compare(child) {
                        comparisons.push(c);
                    }
                }
                "conclusion" => conclusion = self.conclusion(child),
                _ => {}
            }
        }

        if !seen_singletons.contains_key("hardware") {
            self.missing_node(
                node,
                "hardware",
                "hardware \"nvidia-a100-sxm4-80gb\" gpus=8",
            );
        }
        if !seen_singletons.contains_key("model") {
            self.missing_node(node, "model", "model \"Qwen/Qwen3-14B\"");
        }
        if !node_has_child(node, "workload") {
            self.missing_node(
                node,
                "workload",
                "workload sharegpt { dataset random input=128 output=4; prompts 100 }",
            );
        }
        if !node_has_child(node, "step") && !node_has_child(node, "sweep") {
            self.missing_node(node, "step", "step vllm engine=vllm gpus=1");
        }

        self.check_duplicates(workloads.iter().map(|w| &w.name), "workload");
        self.check_duplicates(steps.iter().map(|s| &s.name), "step");

        let (hardware, model) = (hardware?, model?);
        let mut spec = Spec {
            name: name?,
            title,
            hardware,
            model,
            runtime,
            engines,
            harness: harness.unwrap_or_default(),
            workloads,
            steps,
            comparisons,
            conclusion,
        };
        self.resolve_defaults(&mut spec);
        self.check_references(&spec);
        self.check_gpus(&spec);
        Some(spec)
    }

    /// Steps inherit the experiment's model and, without `workloads`, every workload.
    fn resolve_defaults(&mut self, spec: &mut Spec) {
        let all: Vec<String> = spec
            .workloads
            .iter()
            .map(|w| w.name.value.clone())
            .collect();
        for step in &mut spec.steps {
            if step.model.id.is_empty() {
                step.model.id = spec.model.id.clone();
                if step.model.revision.is_empty() {
                    step.model.revision = spec.model.revision.clone();
                }
            }
            if step.model.revision.is_empty() {
                step.model.revision = "main".into();
            }
            if step.workloads.is_empty() {
                step.workloads = all.clone();
            }
        }
        for comparison in &mut spec.comparisons {
            if comparison.workload.is_empty() {
                comparison.workload = all.first().cloned().unwrap_or_default();
            }
        }
    }

    fn check_references(&mut self, spec: &Spec) {
        let engines: Vec<&str> = spec.engines.iter().map(|e| e.kind.name()).collect();
        let workloads: Vec<&str> = spec
            .workloads
            .iter()
            .map(|w| w.name.value.as_str())
            .collect();
        let steps: Vec<&str> = spec.steps.iter().map(|s| s.name.value.as_str()).collect();
        for r in std::mem::take(&mut self.refs) {
            let known = match r.kind {
                RefKind::Engine => &engines,
                RefKind::Workload => &workloads,
                RefKind::Step => &steps,
            };
            if known.contains(&r.name.as_str()) || self.declared.contains(&(r.kind, r.name.clone()))
            {
                continue;
            }
            let noun = r.kind.noun();
            let help =
                did_you_mean(&r.name, known.iter().copied()).unwrap_or_else(|| match r.kind {
                    RefKind::Engine if EngineKind::from_name(&r.name).is_some() => format!(
                        "declare it in the experiment: `engine {} version=\"<exact version>\"`",
                        r.name
                    ),
                    _ => format!("declared {noun}s: {}", one_of(known.iter().copied())),
                });
            self.error(
                SpecDiagnostic::new(
                    r.span,
                    format!("{noun} `{}` is not declared", r.name),
                    format!("unknown {noun}"),
                )
                .with_help(help),
            );
        }
        for e in std::mem::take(&mut self.expect_refs) {
            let Some(step) = spec.step(&e.step) else {
                continue;
            };
            if !workloads.contains(&e.workload.as_str()) || step.workloads.contains(&e.workload) {
                continue;
            }
            self.error(
                SpecDiagnostic::new(
                    e.span,
                    format!(
                        "step `{}` is not measured on workload `{}`",
                        e.step, e.workload
                    ),
                    "expectation for a workload the step does not run",
                )
                .with_help(format!(
                    "add `{}` to the step's `workloads`, or remove this expectation",
                    e.workload
                )),
            );
        }
        for c in &spec.comparisons {
            for step in std::iter::once(&c.baseline).chain(&c.candidates) {
                if let Some(s) = spec.step(step)
                    && !s.workloads.contains(&c.workload)
                    && workloads.contains(&c.workload.as_str())
                {
                    self.error(
                        SpecDiagnostic::new(
                            s.name.span,
                            format!(
                                "comparison \"{}\" ranks on workload `{}`, which step `{step}` does not run",
                                c.title, c.workload
                            ),
                            "this step",
                        )
                        .with_help(format!("add `{}` to the step's `workloads`", c.workload)),
                    );
                }
            }
        }
    }

    fn check_gpus(&mut self, spec: &Spec) {
        for step in &spec.steps {
            let needed = step.gpus * step.replicas;
            if needed > spec.hardware.gpus {
                let what = if step.replicas > 1 {
                    format!(
                        "{} GPUs ({} × {} replicas)",
                        needed, step.gpus, step.replicas
                    )
                } else {
                    format!("{needed} GPUs")
                };
                self.error(
                    SpecDiagnostic::new(
                        step.name.span,
                        format!(
                            "step `{}` needs {what}, but the hardware has {}",
                            step.name.value, spec.hardware.gpus
                        ),
                        "too many GPUs",
                    )
                    .with_help("lower `gpus` or `replicas`, or declare more GPUs in `hardware`"),
                );
            }
        }
    }

    fn check_duplicates<'a>(
        &mut self,
        names: impl Iterator<Item = &'a Spanned<String>>,
        noun: &str,
    ) {
        let mut seen = HashSet::new();
        for name in names {
            if !seen.insert(name.value.as_str()) {
                self.error(
                    SpecDiagnostic::new(
                        name.span,
                        format!("{noun} `{}` is declared twice", name.value),
                        "duplicate name",
                    )
                    .with_help(format!("give each {noun} a unique name")),
                );
            }
        }
    }

    fn hardware(&mut self, node: &KdlNode) -> Option<Hardware> {
        self.props(node, &["gpus"]);
        self.no_children(node);
        let gpu = self.required_string_arg(node, 0, "the GPU type")?;
        let span = arg(node, 0).map(|e| e.span()).unwrap_or(node.span());
        if gpu::lookup(&gpu).is_none() {
            let help = did_you_mean(&gpu, gpu::NAMES.iter().copied())
                .unwrap_or_else(|| one_of(gpu::NAMES.iter().copied()));
            self.error(
                SpecDiagnostic::new(span, format!("unknown GPU type `{gpu}`"), "unknown GPU")
                    .with_help(help),
            );
            return None;
        }
        let gpus = self.required_count_prop(node, "gpus", "hardware \"...\" gpus=8")?;
        Some(Hardware { gpu, gpus })
    }

    fn model(&mut self, node: &KdlNode) -> Option<ModelRef> {
        self.props(node, &["revision"]);
        self.no_children(node);
        let id = self.required_string_arg(node, 0, "the model id")?;
        let revision = self
            .optional_string_prop(node, "revision")
            .unwrap_or_else(|| "main".into());
        Some(ModelRef { id, revision })
    }

    fn runtime(&mut self, node: &KdlNode) -> Option<Runtime> {
        self.no_props(node);
        self.no_children(node);
        let name = self.required_string_arg(node, 0, "the runtime")?;
        let runtime = Runtime::from_name(&name);
        if runtime.is_none() {
            let span = arg(node, 0).map(|e| e.span()).unwrap_or(node.span());
            self.error(
                SpecDiagnostic::new(span, format!("unknown runtime `{name}`"), "unknown runtime")
                    .with_help(one_of(Runtime::NAMES.iter().copied())),
            );
        }
        runtime
    }

    fn engine(&mut self, node: &KdlNode) -> Option<EngineDecl> {
        self.props(node, &["version"]);
        self.no_children(node);
        let name = self.required_string_arg(node, 0, "the engine")?;
        let kind = EngineKind::from_name(&name);
        if kind.is_none() {
            let span = arg(node, 0).map(|e| e.span()).unwrap_or(node.span());
            let help = did_you_mean(&name, EngineKind::NAMES.iter().copied())
                .unwrap_or_else(|| one_of(EngineKind::NAMES.iter().copied()));
            self.error(
                SpecDiagnostic::new(span, format!("unknown engine `{name}`"), "unknown engine")
                    .with_help(help),
            );
        }
        let version = match prop(node, "version") {
            Some(e) => self.string(e, "the engine version"),
            None => {
                self.error(
                    SpecDiagnostic::new(
                        node.span(),
                        format!("engine `{name}` has no version"),
                        "missing `version`",
                    )
                    .with_help(format!(
                        "pin the exact version: `engine {name} version=\"0.11.0\"`"
                    )),
                );
                None
            }
        };
        Some(EngineDecl {
            kind: kind?,
            version: version?,
        })
    }

    fn harness(&mut self, node: &KdlNode) -> Option<HarnessDecl> {
        self.props(node, &["backend", "endpoint", "temperature", "ignore-eos"]);
        self.no_children(node);
        let name = self.required_string_arg(node, 0, "the harness")?;
        if name != "builtin" {
            let span = arg(node, 0).map(|e| e.span()).unwrap_or(node.span());
            self.error(
                SpecDiagnostic::new(span, format!("unknown harness `{name}`"), "unknown harness")
                    .with_help("expected `builtin` (external harnesses are not available yet)"),
            );
            return None;
        }
        let mut harness = HarnessDecl::default();
        if let Some(e) = prop(node, "backend") {
            match self.string(e, "the backend").as_deref() {
                Some("openai") => harness.backend = Backend::Openai,
                Some("openai-chat") => harness.backend = Backend::OpenaiChat,
                Some(other) => self.error(
                    SpecDiagnostic::new(e.span(), format!("unknown backend `{other}`"), "here")
                        .with_help("expected `openai` or `openai-chat`"),
                ),
                None => {}
            }
        }
        harness.endpoint = match prop(node, "endpoint") {
            Some(e) => self.string(e, "the endpoint")?,
            None => harness.backend.default_endpoint().into(),
        };
        if let Some(e) = prop(node, "temperature") {
            harness.temperature = self.number(e, "the temperature")?;
        }
        if let Some(e) = prop(node, "ignore-eos") {
            harness.ignore_eos = self.boolean(e, "ignore-eos")?;
        }
        Some(harness)
    }

    fn workload(&mut self, node: &KdlNode) -> Option<Workload> {
        self.no_props(node);
        let name = self.required_name(node, "the workload's name", RefKind::Workload);
        let mut dataset = None;
        let mut prompts = None;
        let mut rate = RequestRate::Infinite;
        let mut concurrency = None;
        for child in self.children(node, WORKLOAD_NODES) {
            match child.name().value() {
                "dataset" => dataset = self.dataset(child),
                "prompts" => prompts = self.single_count(child, "the number of prompts"),
                "rate" => {
                    self.no_props(child);
                    match arg(child, 0).map(|e| (e, e.value())) {
                        Some((_, KdlValue::String(s))) if s == "inf" => {}
                        Some((_, KdlValue::Float(f))) if f.is_infinite() => {}
                        Some((e, _)) => {
                            if let Some(r) = self.number(e, "the request rate") {
                                if r > 0.0 {
                                    rate = RequestRate::PerSecond(r);
                                } else {
                                    self.error(SpecDiagnostic::new(
                                        e.span(),
                                        "the request rate must be positive",
                                        "here",
                                    ));
                                }
                            }
                        }
                        None => self.missing_arg(child, "the request rate (`inf` or req/s)"),
                    }
                }
                "concurrency" => concurrency = self.single_count(child, "the max concurrency"),
                _ => {}
            }
        }
        if dataset.is_none() && !node_has_child(node, "dataset") {
            self.missing_node(node, "dataset", "dataset random input=128 output=4 seed=42");
        }
        if prompts.is_none() && !node_has_child(node, "prompts") {
            self.missing_node(node, "prompts", "prompts 1000");
        }
        Some(Workload {
            name: name?,
            dataset: dataset?,
            prompts: prompts?,
            rate,
            concurrency,
        })
    }

    fn dataset(&mut self, node: &KdlNode) -> Option<Dataset> {
        self.no_children(node);
        let kind = self.required_string_arg(node, 0, "the dataset kind")?;
        let seed = match prop(node, "seed") {
            Some(e) => {
                let i = self.integer(e, "the seed")?;
                match u64::try_from(i) {
                    Ok(seed) => seed,
                    Err(_) => {
                        self.error(SpecDiagnostic::new(
                            e.span(),
                            format!("the seed must be between 0 and {}, found {i}", u64::MAX),
                            "out of range",
                        ));
                        return None;
                    }
                }
            }
            None => 0,
        };
        match kind.as_str() {
            "sharegpt" => {
                self.props(node, &["path", "sample", "output-len", "seed"]);
                let path = match prop(node, "path") {
                    Some(e) => self.string(e, "the dataset path"),
                    None => {
                        self.error(
                            SpecDiagnostic::new(
                                node.span(),
                                "a `sharegpt` dataset needs a `path`",
                                "missing `path`",
                            )
                            .with_help("e.g. `dataset sharegpt path=\"datasets/ShareGPT_V3_unfiltered_cleaned_split.json\"`"),
                        );
                        None
                    }
                };
                let sample = self.optional_string_prop(node, "sample");
                let output_len = prop(node, "output-len").and_then(|e| self.count(e, "output-len"));
                Some(Dataset::ShareGpt {
                    path: path?,
                    sample,
                    output_len,
                    seed,
                })
            }
            "random" => {
                self.props(node, &["input", "output", "seed", "range-ratio"]);
                let input_len =
                    self.required_count_prop(node, "input", "dataset random input=4000 output=200");
                let output_len = self.required_count_prop(
                    node,
                    "output",
                    "dataset random input=4000 output=200",
                );
                let range_ratio = match prop(node, "range-ratio") {
                    Some(e) => {
                        let r = self.number(e, "the range ratio")?;
                        if !(0.0..1.0).contains(&r) {
                            self.error(SpecDiagnostic::new(
                                e.span(),
                                "the range ratio must be in [0, 1)",
                                "out of range",
                            ));
                        }
                        r
                    }
                    None => 0.0,
                };
                Some(Dataset::Random {
                    input_len: input_len?,
                    output_len: output_len?,
                    range_ratio,
                    seed,
                })
            }
            other => {
                let span = arg(node, 0).map(|e| e.span()).unwrap_or(node.span());
                let help = did_you_mean(other, ["sharegpt", "random"])
                    .unwrap_or_else(|| one_of(["sharegpt", "random"]));
                self.error(
                    SpecDiagnostic::new(
                        span,
                        format!("unknown dataset `{other}`"),
                        "unknown dataset",
                    )
                    .with_help(help),
                );
                None
            }
        }
    }

    fn step_header(&mut self, node: &KdlNode, what: &str) -> Option<Step> {
        let kind = RefKind::Step;
        self.props(node, STEP_PROPS);
        let name = self.required_name(node, what, kind);
        let engine = match prop(node, "engine") {
            Some(e) => self.string(e, "the engine").and_then(|n| {
                self.refs.push(Reference {
                    kind: RefKind::Engine,
                    name: n.clone(),
                    span: e.span(),
                });
                EngineKind::from_name(&n)
            }),
            None => {
                self.error(
                    SpecDiagnostic::new(
                        node.name().span(),
                        format!("{} has no engine", node.name().value()),
                        "missing `engine=`",
                    )
                    .with_help("e.g. `step vllm-tp8 engine=vllm gpus=8`"),
                );
                None
            }
        };
        let model = ModelRef {
            id: self.optional_string_prop(node, "model").unwrap_or_default(),
            revision: self
                .optional_string_prop(node, "revision")
                .unwrap_or_default(),
        };
        let gpus = self.required_count_prop(node, "gpus", "step vllm-tp8 engine=vllm gpus=8");
        let replicas = match prop(node, "replicas") {
            Some(e) => self.count(e, "replicas")?,
            None => 1,
        };
        Some(Step {
            name: name?,
            engine: engine?,
            model,
            gpus: gpus?,
            replicas,
            args: Vec::new(),
            env: BTreeMap::new(),
            workloads: Vec::new(),
            expectations: Vec::new(),
            sweep: None,
        })
    }

    /// Children shared by steps and sweeps; `at` values are kept for sweeps.
    fn step_body(
        &mut self,
        node: &KdlNode,
        step: &mut Step,
        allowed: &[&str],
    ) -> Vec<(Option<String>, Expectation, SourceSpan)> {
        let mut expectations = Vec::new();
        for child in self.children(node, allowed) {
            match child.name().value() {
                "args" => {
                    self.no_props(child);
                    self.no_children(child);
                    for e in args(child) {
                        if let Some(a) = self.scalar_text(e, "an argument") {
                            step.args.push(a);
                        }
                    }
                }
                "env" => {
                    self.no_children(child);
                    for e in child.entries() {
                        match e.name() {
                            Some(k) => {
                                if let Some(v) = self.scalar_text(e, "an environment value") {
                                    step.env.insert(k.value().to_owned(), v);
                                }
                            }
                            None => self.error(
                                SpecDiagnostic::new(
                                    e.span(),
                                    "environment variables are written `NAME=\"value\"`",
                                    "not a property",
                                )
                                .with_help("e.g. `env VLLM_USE_V1=\"1\"`"),
                            ),
                        }
                    }
                }
                "workloads" => {
                    self.no_props(child);
                    self.no_children(child);
                    for e in args(child) {
                        if let Some(w) = self.string(e, "a workload name") {
                            self.refs.push(Reference {
                                kind: RefKind::Workload,
                                name: w.clone(),
                                span: e.span(),
                            });
                            step.workloads.push(w);
                        }
                    }
                }
                "expect" | "expect-failure" => {
                    if let Some(x) = self.expectation(child) {
                        expectations.push(x);
                    }
                }
                _ => {}
            }
        }
        expectations
    }

    fn expectation(&mut self, node: &KdlNode) -> Option<(Option<String>, Expectation, SourceSpan)> {
        self.props(node, &["at"]);
        let workload_entry = arg(node, 0);
        let workload = self.required_string_arg(node, 0, "the workload")?;
        let span = workload_entry.map(|e| e.span()).unwrap_or(node.span());
        self.refs.push(Reference {
            kind: RefKind::Workload,
            name: workload.clone(),
            span,
        });
        let at = prop(node, "at").and_then(|e| self.scalar_text(e, "the sweep value"));
        let outcome = if node.name().value() == "expect-failure" {
            self.no_children(node);
            ExpectedOutcome::Failure(self.required_string_arg(node, 1, "the published error")?)
        } else {
            if arg(node, 1).is_some() {
                self.error(
                    SpecDiagnostic::new(
                        arg(node, 1).unwrap().span(),
                        "`expect` takes one workload; metrics go in its block",
                        "unexpected argument",
                    )
                    .with_help("e.g. `expect sharegpt { total_token_throughput 3792.50 }`"),
                );
            }
            let mut metrics = Vec::new();
            for m in self.children(node, METRIC_NAMES) {
                self.no_props(m);
                self.no_children(m);
                let Some(entry) = arg(m, 0) else {
                    self.missing_arg(m, "the published value");
                    continue;
                };
                if let Some(value) = self.number(entry, "a metric value") {
                    let text = entry
                        .format()
                        .map(|f| f.value_repr.trim().to_owned())
                        .filter(|t| !t.is_empty())
                        .unwrap_or_else(|| value.to_string());
                    metrics.push(ExpectedMetric {
                        name: m.name().value().to_owned(),
                        value,
                        text,
                    });
                }
            }
            ExpectedOutcome::Metrics(metrics)
        };
        Some((at, Expectation { workload, outcome }, span))
    }

    fn step(&mut self, node: &KdlNode) -> Option<Step> {
        let mut step = self.step_header(node, "the step's name");
        let mut scratch = step.clone().unwrap_or_else(placeholder_step);
        let expectations = self.step_body(node, &mut scratch, STEP_NODES);
        let step = step.as_mut()?;
        step.args = scratch.args;
        step.env = scratch.env;
        step.workloads = scratch.workloads;
        for (at, x, span) in expectations {
            if at.is_some() {
                self.error(
                    SpecDiagnostic::new(
                        span,
                        "`at=` is for expectations inside a `sweep`",
                        "not a sweep",
                    )
                    .with_help("remove `at=`"),
                );
            }
            self.expect_refs.push(ExpectRef {
                step: step.name.value.clone(),
                workload: x.workload.clone(),
                span,
            });
            step.expectations.push(x);
        }
        Some(step.clone())
    }

    fn sweep(&mut self, node: &KdlNode) -> Vec<Step> {
        let header = self.step_header(node, "the sweep's name");
        let mut base = header.clone().unwrap_or_else(placeholder_step);
        let expectations = self.step_body(node, &mut base, SWEEP_NODES);
        let vary: Vec<&KdlNode> = node
            .children()
            .map(|c| {
                c.nodes()
                    .iter()
                    .filter(|n| n.name().value() == "vary")
                    .collect()
            })
            .unwrap_or_default();
        let (flag, values) = match vary.as_slice() {
            [v] => {
                self.no_props(v);
                self.no_children(v);
                let flag = self.required_string_arg(v, 0, "the flag to vary");
                let values: Vec<String> = args(v)
                    .skip(1)
                    .filter_map(|e| self.scalar_text(e, "a value"))
                    .collect();
                if values.is_empty() {
                    self.missing_arg(v, "the values to sweep over");
                }
                (flag, values)
            }
            [] => {
                self.missing_node(node, "vary", "vary \"--max-num-seqs\" 256 512");
                return Vec::new();
            }
            [_, second, ..] => {
                self.error(
                    SpecDiagnostic::new(second.span(), "a sweep varies one flag", "second `vary`")
                        .with_help("declare another `sweep` for the other flag"),
                );
                return Vec::new();
            }
        };
        let (Some(base_header), Some(flag)) = (header, flag) else {
            return Vec::new();
        };
        for (at, _, span) in &expectations {
            match at {
                Some(v) if values.contains(v) => {}
                Some(v) => self.error(
                    SpecDiagnostic::new(
                        *span,
                        format!("the sweep has no value `{v}`"),
                        "unknown sweep value",
                    )
                    .with_help(one_of(values.iter().map(String::as_str))),
                ),
                None => self.error(
                    SpecDiagnostic::new(
                        *span,
                        "an expectation in a sweep needs `at=<value>`",
                        "which value?",
                    )
                    .with_help(one_of(values.iter().map(String::as_str))),
                ),
            }
        }
        values
            .iter()
            .map(|value| {
                let mut step = base_header.clone();
                step.name.value = format!(
                    "{}-{}",
                    base_header.name.value,
                    value.trim_start_matches('-')
                );
                step.args = base.args.clone();
                step.args.push(flag.clone());
                step.args.push(value.clone());
                step.env = base.env.clone();
                step.workloads = base.workloads.clone();
                step.sweep = Some(SweepOrigin {
                    sweep: base_header.name.value.clone(),
                    flag: flag.clone(),
                    value: value.clone(),
                });
                for (at, x, span) in &expectations {
                    if at.as_ref() == Some(value) {
                        self.expect_refs.push(ExpectRef {
                            step: step.name.value.clone(),
                            workload: x.workload.clone(),
                            span: *span,
                        });
                        step.expectations.push(x.clone());
                    }
                }
                step
            })
            .collect()
    }

    fn compare(&mut self, node: &KdlNode) -> Option<Comparison> {
        self.props(node, &["baseline", "workload"]);
        let title = self.required_string_arg(node, 0, "the comparison's title");
        let baseline = self.step_ref_prop(
            node,
            "baseline",
            "compare \"Engine Selection\" baseline=vllm { candidate sglang }",
        );
        let workload = match prop(node, "workload") {
            Some(e) => {
                let w = self.string(e, "a workload")?;
                self.refs.push(Reference {
                    kind: RefKind::Workload,
                    name: w.clone(),
                    span: e.span(),
                });
                w
            }
            None => String::new(),
        };
        let mut candidates = Vec::new();
        for child in self.children(node, &["candidate"]) {
            self.no_props(child);
            self.no_children(child);
            for e in args(child) {
                if let Some(s) = self.string(e, "a step name") {
                    self.refs.push(Reference {
                        kind: RefKind::Step,
                        name: s.clone(),
                        span: e.span(),
                    });
                    candidates.push(s);
                }
            }
        }
        if candidates.is_empty() {
            self.missing_node(node, "candidate", "candidate sglang-tp8");
        }
        Some(Comparison {
            title: title?,
            baseline: baseline?,
            candidates,
            workload,
        })
    }

    fn conclusion(&mut self, node: &KdlNode) -> Option<Conclusion> {
        self.props(node, &["baseline", "optimized"]);
        self.no_children(node);
        let example = "conclusion baseline=vllm-tp8 optimized=vllm-fp8-tp4";
        let baseline = self.step_ref_prop(node, "baseline", example);
        let optimized = self.step_ref_prop(node, "optimized", example);
        Some(Conclusion {
            baseline: baseline?,
            optimized: optimized?,
        })
    }

    fn step_ref_prop(&mut self, node: &KdlNode, name: &str, example: &str) -> Option<String> {
        match prop(node, name) {
            Some(e) => {
                let s = self.string(e, "a step name")?;
                self.refs.push(Reference {
                    kind: RefKind::Step,
                    name: s.clone(),
                    span: e.span(),
                });
                Some(s)
            }
            None => {
                self.missing_prop(node, name, example);
                None
            }
        }
    }

    // ---- generic helpers ----

    fn children<'a>(&mut self, node: &'a KdlNode, allowed: &[&str]) -> Vec<&'a KdlNode> {
        let Some(doc) = node.children() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for child in doc.nodes() {
            if allowed.contains(&child.name().value()) {
                out.push(child);
            } else {
                let context = format!("in `{}`", node.name().value());
                self.unknown_node(child, allowed, &context);
            }
        }
        out
    }

    fn unknown_node(&mut self, node: &KdlNode, allowed: &[&str], context: &str) {
        let name = node.name().value();
        let suggestion = closest(name, allowed.iter().copied());
        self.suggested.extend(suggestion.map(str::to_owned));
        let help = suggestion
            .map(|k| format!("did you mean `{k}`?"))
            .unwrap_or_else(|| one_of(allowed.iter().copied()));
        self.error(
            SpecDiagnostic::new(
                node.name().span(),
                format!("unknown node `{name}` {context}"),
                "unknown node",
            )
            .with_help(help),
        );
    }

    fn props(&mut self, node: &KdlNode, allowed: &[&str]) {
        for e in node.entries() {
            let Some(name) = e.name() else { continue };
            if !allowed.contains(&name.value()) {
                let help =
                    did_you_mean(name.value(), allowed.iter().copied()).unwrap_or_else(|| {
                        if allowed.is_empty() {
                            format!("`{}` takes no properties", node.name().value())
                        } else {
                            one_of(allowed.iter().copied())
                        }
                    });
                self.error(
                    SpecDiagnostic::new(
                        e.span(),
                        format!(
                            "unknown property `{}` on `{}`",
                            name.value(),
                            node.name().value()
                        ),
                        "unknown property",
                    )
                    .with_help(help),
                );
            }
        }
    }

    fn no_props(&mut self, node: &KdlNode) {
        self.props(node, &[]);
    }

    fn no_children(&mut self, node: &KdlNode) {
        if let Some(doc) = node.children()
            && !doc.nodes().is_empty()
        {
            self.error(
                SpecDiagnostic::new(
                    doc.span(),
                    format!("`{}` takes no block", node.name().value()),
                    "unexpected block",
                )
                .with_help("remove the `{ ... }`"),
            );
        }
    }

    fn missing_node(&mut self, parent: &KdlNode, name: &str, example: &str) {
        if self.suggested.iter().any(|s| s == name) {
            return;
        }
        self.error(
            SpecDiagnostic::new(
                parent.name().span(),
                format!("`{}` has no `{name}`", parent.name().value()),
                format!("missing `{name}`"),
            )
            .with_help(format!("add e.g. `{example}`")),
        );
    }

    fn missing_prop(&mut self, node: &KdlNode, name: &str, example: &str) {
        self.error(
            SpecDiagnostic::new(
                node.name().span(),
                format!("`{}` needs `{name}=`", node.name().value()),
                format!("missing `{name}`"),
            )
            .with_help(format!("e.g. `{example}`")),
        );
    }

    fn missing_arg(&mut self, node: &KdlNode, what: &str) {
        self.error(SpecDiagnostic::new(
            node.span(),
            format!("`{}` needs {what}", node.name().value()),
            "missing value",
        ));
    }

    fn required_string_arg(&mut self, node: &KdlNode, index: usize, what: &str) -> Option<String> {
        match arg(node, index) {
            Some(e) => self.string(e, what),
            None => {
                self.missing_arg(node, what);
                None
            }
        }
    }

    fn required_name(
        &mut self,
        node: &KdlNode,
        what: &str,
        kind: RefKind,
    ) -> Option<Spanned<String>> {
        let entry = arg(node, 0);
        let value = self.required_string_arg(node, 0, what)?;
        self.declared.push((kind, value.clone()));
        Some(Spanned {
            value,
            span: entry.map(|e| e.span()).unwrap_or(node.span()),
        })
    }

    fn optional_string_prop(&mut self, node: &KdlNode, name: &str) -> Option<String> {
        prop(node, name).and_then(|e| self.string(e, name))
    }

    fn required_count_prop(&mut self, node: &KdlNode, name: &str, example: &str) -> Option<u32> {
        match prop(node, name) {
            Some(e) => self.count(e, name),
            None => {
                self.missing_prop(node, name, example);
                None
            }
        }
    }

    fn single_count(&mut self, node: &KdlNode, what: &str) -> Option<u32> {
        self.no_props(node);
        self.no_children(node);
        match arg(node, 0) {
            Some(e) => self.count(e, what),
            None => {
                self.missing_arg(node, what);
                None
            }
        }
    }

    fn wrong_type(&mut self, entry: &KdlEntry, expected: &str, what: &str) {
        self.error(
            SpecDiagnostic::new(
                entry.span(),
                format!(
                    "{what} must be {expected}, found {}",
                    describe(entry.value())
                ),
                format!("expected {expected}"),
            )
            .with_help(match entry.value() {
                KdlValue::String(s) if s.parse::<f64>().is_ok() => {
                    format!("write the number without quotes: `{s}`")
                }
                _ => format!("write {expected} here"),
            }),
        );
    }

    fn string(&mut self, entry: &KdlEntry, what: &str) -> Option<String> {
        match entry.value() {
            KdlValue::String(s) => Some(s.clone()),
            _ => {
                self.wrong_type(entry, "a string", what);
                None
            }
        }
    }

    /// A string or number as text, the way an engine's argv would carry it.
    fn scalar_text(&mut self, entry: &KdlEntry, what: &str) -> Option<String> {
        match entry.value() {
            KdlValue::String(s) => Some(s.clone()),
            KdlValue::Integer(i) => Some(i.to_string()),
            KdlValue::Float(_) => Some(
                entry
                    .format()
                    .map(|f| f.value_repr.trim().to_owned())
                    .unwrap_or_else(|| entry.value().to_string()),
            ),
            _ => {
                self.wrong_type(entry, "a string or a number", what);
                None
            }
        }
    }

    fn integer(&mut self, entry: &KdlEntry, what: &str) -> Option<i128> {
        match entry.value() {
            KdlValue::Integer(i) => Some(*i),
            _ => {
                self.wrong_type(entry, "an integer", what);
                None
            }
        }
    }

    /// A positive integer that fits a `u32`.
    fn count(&mut self, entry: &KdlEntry, what: &str) -> Option<u32> {
        let i = self.integer(entry, what)?;
        match u32::try_from(i) {
            Ok(n) if n > 0 => Some(n),
            _ => {
                self.error(SpecDiagnostic::new(
                    entry.span(),
                    format!("{what} must be between 1 and {}, found {i}", u32::MAX),
                    "out of range",
                ));
                None
            }
        }
    }

    fn number(&mut self, entry: &KdlEntry, what: &str) -> Option<f64> {
        match entry.value() {
            KdlValue::Integer(i) => Some(*i as f64),
            KdlValue::Float(f) if f.is_finite() => Some(*f),
            _ => {
                self.wrong_type(entry, "a number", what);
                None
            }
        }
    }

    fn boolean(&mut self, entry: &KdlEntry, what: &str) -> Option<bool> {
        match entry.value() {
            KdlValue::Bool(b) => Some(*b),
            _ => {
                self.wrong_type(entry, "`#true` or `#false`", what);
                None
            }
        }
    }
}

fn placeholder_step() -> Step {
    Step {
        name: Spanned {
            value: String::new(),
            span: SourceSpan::from(0..0),
        },
        engine: EngineKind::Vllm,
        model: ModelRef {
            id: String::new(),
            revision: String::new(),
        },
        gpus: 1,
        replicas: 1,
        args: Vec::new(),
        env: BTreeMap::new(),
        workloads: Vec::new(),
        expectations: Vec::new(),
        sweep: None,
    }
}

fn describe(value: &KdlValue) -> String {
    match value {
        KdlValue::String(s) => format!("the string \"{s}\""),
        KdlValue::Integer(i) => format!("the integer {i}"),
        KdlValue::Float(f) => format!("the number {f}"),
        KdlValue::Bool(b) => format!("#{b}"),
        KdlValue::Null => "#null".into(),
    }
}

fn args(node: &KdlNode) -> impl Iterator<Item = &KdlEntry> {
    node.entries().iter().filter(|e| e.name().is_none())
}

fn arg(node: &KdlNode, index: usize) -> Option<&KdlEntry> {
    args(node).nth(index)
}

fn prop<'a>(node: &'a KdlNode, name: &str) -> Option<&'a KdlEntry> {
    node.entries()
        .iter()
        .rev()
        .find(|e| e.name().is_some_and(|n| n.value() == name))
}

fn node_has_child(node: &KdlNode, name: &str) -> bool {
    node.children()
        .is_some_and(|d| d.nodes().iter().any(|n| n.name().value() == name))
}
