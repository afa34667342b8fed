//! KDL v2 text → [`Spec`], collecting every problem with its place in the file.
//!
//! The decoder is hand-written over `KdlDocument` rather than serde-derived:
//! it is the only way to point at the exact node or property that is wrong,
//! suggest the name that was meant, and keep going after the first error.

mod arity;
mod codepoints;

mod limits;
pub mod names;
mod nodes;
mod report;
mod scan;
mod search;
mod steps;
mod sweep;
mod validate;
mod values;

use std::collections::BTreeMap;

use kdl::{KdlDocument, KdlNode};
use miette::SourceSpan;

use super::diag::{SpecDiagnostic, SpecErrors};
use super::model::*;
use crate::gpu;
use crate::metrics::MetricSet;
use values::{arg, node_has_child};

/// An experiment file's name (as shown in diagnostics) and text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
}

/// Parses and validates one experiment; all errors are returned together.
pub fn parse(source: &SourceFile) -> Result<Spec, SpecErrors> {
    let result = match limits::check(&source.text) {
        Some(diag) => Err(vec![diag]),
        None => decode_on_own_stack(&source.text),
    };
    result.map_err(|errors| SpecErrors::new(&source.name, source.text.clone(), errors))
}

/// [`decode`] on a thread whose stack is sized for `text` (see [`limits`]):
/// kdl's parse, the decoder and the drop of kdl's tree all recurse.
fn decode_on_own_stack(text: &str) -> Result<Spec, Vec<SpecDiagnostic>> {
    on_own_stack(text, || decode(text)).unwrap_or_else(|e| {
        Err(vec![SpecDiagnostic::new(
            SourceSpan::from(0..0),
            format!("cannot start a thread to read the file: {e}"),
            "here",
        )])
    })
}

/// `work` on `text`'s KDL tree, on a thread whose stack is sized for it.
fn on_own_stack<T: Send>(text: &str, work: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("parse".into())
            .stack_size(limits::stack_size(text))
            .spawn_scoped(scope, work)?;
        Ok(thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

/// Where the experiment `text` (one that parses) names the file `path` as
/// the dataset (`path=` or `sample=`) of workload `workload`: for a message
/// about that file to point at it.
pub fn dataset_file_span(text: &str, workload: &str, path: &str) -> Option<SourceSpan> {
    fn find(nodes: &[KdlNode], workload: &str, path: &str) -> Option<SourceSpan> {
        nodes.iter().find_map(|node| {
            let named = node.name().value() == "workload"
                && node
                    .entries()
                    .first()
                    .is_some_and(|e| e.name().is_none() && e.value().as_string() == Some(workload));
            let children = node.children().map(|d| d.nodes()).unwrap_or_default();
            if !named {
                return find(children, workload, path);
            }
            children
                .iter()
                .filter(|n| n.name().value() == "dataset")
                .flat_map(|n| n.entries())
                .find(|e| {
                    e.name()
                        .is_some_and(|n| matches!(n.value(), "path" | "sample"))
                        && e.value().as_string() == Some(path)
                })
                .map(|e| e.span())
        })
    }
    on_own_stack(text, || {
        let doc = KdlDocument::parse_v2(text).ok()?;
        find(doc.nodes(), workload, path)
    })
    .ok()
    .flatten()
}

fn decode(text: &str) -> Result<Spec, Vec<SpecDiagnostic>> {
    let mut d = Decoder::default();
    let spec = match KdlDocument::parse_v2(text) {
        Ok(doc) => d.document(&doc),
        Err(err) => {
            // kdl's errors at a disallowed code point say neither what nor where.
            let disallowed = codepoints::check(text);
            let at_disallowed = |k: &SourceSpan| {
                let (start, end) = (k.offset(), k.offset() + k.len());
                disallowed.iter().any(|d| {
                    let at = d.span.offset();
                    (start <= at && at < end.max(start + 1)) || at == start
                })
            };
            d.errors.extend(disallowed.iter().cloned());
            d.errors.extend(
                err.diagnostics
                    .iter()
                    .filter(|k| !at_disallowed(&k.span))
                    .map(|k| {
                        let text = snippet(text, k.span);
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
                    }),
            );
            None
        }
    };
    match spec {
        Some(spec) if d.errors.is_empty() => Ok(spec),
        _ => Err(d.errors),
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
    "objective",
    "report",
    "slo",
];
const WORKLOAD_NODES: &[&str] = &[
    "title",
    "dataset",
    "prompts",
    "rate",
    "arrival",
    "concurrency",
    "slo",
    "search",
];
const STEP_PROPS: &[&str] = &["engine", "model", "revision", "gpus", "replicas", "measure"];
const STEP_NODES: &[&str] = &["args", "env", "workloads", "expect", "expect-failure"];
const SWEEP_NODES: &[&str] = &[
    "args",
    "env",
    "workloads",
    "expect",
    "expect-failure",
    "vary",
    "link",
];

/// A name used before we know whether it is declared.
struct Reference {
    kind: RefKind,
    name: String,
    span: SourceSpan,
    /// A step's `workloads` list, where a load axis stands for all its points.
    whole_axis: bool,
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
    /// The metrics an `expect` may name: those of the declared harness's client.
    metric_set: MetricSet,
    /// Each workload that lists several loads, with the names of its points.
    axes: Vec<(String, Vec<String>)>,
    /// The hardware is `"cpu"`: steps use no GPUs.
    cpu_only: bool,
}

impl Decoder {
    fn error(&mut self, diag: SpecDiagnostic) {
        self.errors.push(diag);
    }

    /// `value` at `span` if it is inside its grammar (see [`names`]), else
    /// an error there with `help`.
    fn in_grammar(
        &mut self,
        span: SourceSpan,
        value: String,
        check: fn(&str) -> Result<(), String>,
        help: &str,
    ) -> Option<String> {
        match check(&value) {
            Ok(()) => Some(value),
            Err(message) => {
                self.error(SpecDiagnostic::new(span, message, "here").with_help(help));
                None
            }
        }
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
                    self.check_arity("", node);
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
        // Expectations name metrics as the harness's client does, wherever
        // the harness is declared in the file.
        if children.iter().any(|c| {
            c.name().value() == "harness"
                && arg(c, 0).and_then(|e| e.value().as_string()) == Some("guidellm")
        }) {
            self.metric_set = MetricSet::Guidellm;
        }
        // Steps on a machine without GPUs take no `gpus=`, wherever the
        // hardware is declared in the file.
        self.cpu_only = children.iter().any(|c| {
            c.name().value() == "hardware"
                && arg(c, 0).and_then(|e| e.value().as_string()) == Some(CPU_HARDWARE)
        });

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
        let mut report = None;
        let mut objective = None;
        let mut slo = None;
        let mut seen_singletons: BTreeMap<&str, SourceSpan> = BTreeMap::new();

        for child in children {
            let kind = child.name().value();
            if matches!(
                kind,
                "title"
                    | "hardware"
                    | "model"
                    | "runtime"
                    | "harness"
                    | "conclusion"
                    | "objective"
                    | "report"
                    | "slo"
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
                    if let Some(points) = self.workload(child) {
                        workloads.extend(points);
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
                "objective" => objective = self.objective(child),
                "report" => report = self.report(child),
                "slo" => slo = self.slo(child),
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

        // The experiment's SLO holds for every workload without its own.
        for w in workloads.iter_mut().filter(|w| w.slo.is_none()) {
            w.slo = slo.clone();
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
            objective: objective.unwrap_or_default(),
            report: report.unwrap_or_default(),
        };
        self.resolve_defaults(&mut spec);
        self.check_references(&spec);
        self.check_searches(&spec);
        self.check_gpus(&spec);
        self.check_harness(&spec);
        self.check_report(&spec, node);
        Some(spec)
    }
}
