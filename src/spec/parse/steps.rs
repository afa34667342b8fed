//! Steps, sweeps (expanded into steps), expectations, comparisons, the conclusion.

use std::collections::BTreeMap;

use kdl::KdlNode;
use miette::SourceSpan;

use super::values::*;
use super::*;
use crate::facts::EngineKind;
use crate::metrics::{GUIDELLM_METRIC_NAMES, METRIC_NAMES, MetricSet};
use crate::spec::diag::{SpecDiagnostic, did_you_mean, one_of};
use crate::spec::model::*;

impl Decoder {
    pub(super) fn step_header(&mut self, node: &KdlNode, what: &str) -> Option<Step> {
        let kind = RefKind::Step;
        self.props(node, STEP_PROPS);
        let name = self.required_name(node, what, kind);
        let engine = match prop(node, "engine") {
            Some(e) => self
                .reference(e, RefKind::Engine)
                .and_then(|n| EngineKind::from_name(&n)),
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
            id: prop(node, "model")
                .and_then(|e| {
                    let id = self.string(e, "model")?;
                    self.in_grammar(e.span(), id, names::model_id, nodes::MODEL_HELP)
                })
                .unwrap_or_default(),
            revision: self
                .optional_string_prop(node, "revision")
                .unwrap_or_default(),
        };
        let gpus = if self.cpu_only {
            if let Some(e) = prop(node, "gpus") {
                self.error(
                    SpecDiagnostic::new(
                        e.span(),
                        "the hardware is `\"cpu\"`: steps use no GPUs",
                        "here",
                    )
                    .with_help("remove `gpus=`, or declare a GPU type in `hardware`"),
                );
                return None;
            }
            Some(0)
        } else {
            self.required_count_prop(node, "gpus", "step vllm-tp8 engine=vllm gpus=8")
        };
        let replicas = match prop(node, "replicas") {
            Some(e) => self.count(e, "replicas")?,
            None => 1,
        };
        let measure_all = match prop(node, "measure") {
            None => false,
            Some(e) => match self.string(e, "measure").as_deref() {
                Some("one") => false,
                Some("all") => true,
                Some(other) => {
                    self.error(
                        SpecDiagnostic::new(e.span(), format!("unknown measure `{other}`"), "here")
                            .with_help("`measure=one` measures one replica and reports it ×N (the published convention); `measure=all` drives them all"),
                    );
                    return None;
                }
                None => return None,
            },
        };
        Some(Step {
            name: name?,
            engine: engine?,
            model,
            gpus: gpus?,
            replicas,
            measure_all,
            args: Vec::new(),
            env: BTreeMap::new(),
            workloads: Vec::new(),
            expectations: Vec::new(),
            sweep: None,
        })
    }

    /// Children shared by steps and sweeps; `at` values are kept for sweeps.
    pub(super) fn step_body(
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
                            Some(k) if crate::secrets::is_secret_name(k.value()) => self.error(
                                SpecDiagnostic::new(
                                    e.span(),
                                    format!("`{}` looks like a secret; an experiment's environment is written to the store and the lockfile", k.value()),
                                    "a secret",
                                )
                                .with_help(format!(
                                    "set `{}` in perfpipe's own environment instead: local engines inherit it, and containers get HF_TOKEN by name (`-e HF_TOKEN`), never its value",
                                    k.value()
                                )),
                            ),
                            Some(k) => {
                                let name = self.in_grammar(
                                    k.span(),
                                    k.value().to_owned(),
                                    names::env_name,
                                    "e.g. `env VLLM_USE_V1=\"1\"`; a name with other characters would reach the engine as another variable",
                                );
                                if let (Some(name), Some(v)) =
                                    (name, self.scalar_text(e, "an environment value"))
                                {
                                    step.env.insert(name, v);
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
                        if let Some(w) = self.reference(e, RefKind::Workload) {
                            if let Some(r) = self.refs.last_mut() {
                                r.whole_axis = true;
                            }
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

    pub(super) fn expectation(
        &mut self,
        node: &KdlNode,
    ) -> Option<(Option<String>, Expectation, SourceSpan)> {
        self.props(node, &["at"]);
        let Some(workload_entry) = arg(node, 0) else {
            self.missing_arg(node, "the workload");
            return None;
        };
        let span = workload_entry.span();
        let workload = self.reference(workload_entry, RefKind::Workload)?;
        let at = prop(node, "at").and_then(|e| self.scalar_text(e, "the sweep point"));
        let outcome = if node.name().value() == "expect-failure" {
            self.no_children(node);
            ExpectedOutcome::Failure(self.required_string_arg(node, 1, "the published error")?)
        } else {
            let mut metrics = Vec::new();
            let names: Vec<&str> = match self.metric_set {
                MetricSet::Vllm => METRIC_NAMES.to_vec(),
                MetricSet::Guidellm => GUIDELLM_METRIC_NAMES.iter().map(String::as_str).collect(),
            };
            for m in self.children(node, &names) {
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

    pub(super) fn step(&mut self, node: &KdlNode) -> Option<Step> {
        let header = self.step_header(node, "the step's name");
        let decoded = header.is_some();
        // The body is checked even when the header is broken, so all errors show at once.
        let mut step = header.unwrap_or_else(placeholder_step);
        let expectations = self.step_body(node, &mut step, STEP_NODES);
        if !decoded {
            return None;
        }
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
        Some(step)
    }

    pub(super) fn compare(&mut self, node: &KdlNode) -> Option<Comparison> {
        self.props(node, &["baseline", "workload"]);
        let title = self.required_string_arg(node, 0, "the comparison's title");
        let baseline = self.step_ref_prop(
            node,
            "baseline",
            "compare \"Engine Selection\" baseline=vllm { candidate sglang }",
        );
        let workload = match prop(node, "workload") {
            Some(e) => self.reference(e, RefKind::Workload)?,
            None => String::new(),
        };
        let mut candidates = Vec::new();
        let mut printed = PrintedSection::default();
        for child in self.children(node, &["candidate", "result", "summary", "delta"]) {
            let named = if child.name().value() == "summary" {
                &["first", "second"][..]
            } else {
                &[]
            };
            self.props(child, named);
            self.no_children(child);
            match child.name().value() {
                "candidate" => {
                    for e in args(child) {
                        if let Some(s) = self.reference(e, RefKind::Step) {
                            candidates.push(s);
                        }
                    }
                }
                "result" => {
                    printed.result = self.required_string_arg(child, 0, "the page's Result line")
                }
                "summary" => {
                    printed.summary =
                        self.required_string_arg(child, 0, "the page's Summary sentence");
                    // The configurations the sentence names, first and second.
                    let named = |p: &mut Self, name| {
                        prop(child, name).and_then(|e| p.reference(e, RefKind::Step))
                    };
                    let first = named(self, "first");
                    let second = named(self, "second");
                    printed.summary_steps = first.zip(second);
                }
                _ => printed.delta = self.printed_change(child),
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
            printed,
        })
    }

    pub(super) fn conclusion(&mut self, node: &KdlNode) -> Option<Conclusion> {
        self.props(node, &["baseline", "optimized"]);
        let example = "conclusion baseline=vllm-tp8 optimized=vllm-fp8-tp4";
        let baseline = self.step_ref_prop(node, "baseline", example);
        let optimized = self.step_ref_prop(node, "optimized", example);
        let mut printed = PrintedConclusion::default();
        for child in self.children(node, &["command", "table", "case"]) {
            match child.name().value() {
                "command" => {
                    self.no_props(child);
                    self.no_children(child);
                    printed.command = self.string_args(child, "a word of the command");
                    if printed.command.is_empty() {
                        self.missing_arg(child, "the command's words");
                    }
                }
                "table" => {
                    self.no_props(child);
                    self.no_children(child);
                    printed.header = self.string_args(child, "a column title");
                }
                _ => printed.cases.extend(self.printed_case(child)),
            }
        }
        Some(Conclusion {
            baseline: baseline?,
            optimized: optimized?,
            printed,
        })
    }

    /// `case <workload> { baseline "<line>"...; optimized "<line>"... }`.
    fn printed_case(&mut self, node: &KdlNode) -> Option<PrintedCase> {
        self.props(node, &["unbound", "reason"]);
        let text = |p: &mut Self, name: &str| {
            prop(node, name).and_then(|e| p.string(e, "the page's text"))
        };
        let unbound = text(self, "unbound").map(|label| {
            let reason = text(self, "reason")
                .unwrap_or_else(|| "no workload of the experiment is this row's".to_owned());
            (label, reason)
        });
        let workload = match arg(node, 0) {
            Some(e) => self.reference(e, RefKind::Workload),
            None if unbound.is_some() => Some(String::new()),
            None => {
                self.missing_arg(node, "the case's workload");
                None
            }
        };
        let (mut baseline, mut optimized) = (Vec::new(), Vec::new());
        for child in self.children(node, &["baseline", "optimized"]) {
            let cell = self.printed_cell(child);
            for (line, entry) in cell.iter().zip(args(child)) {
                if let Some(label) = &line.label
                    && line.number().is_some()
                    && CellMetric::from_label(label).is_none()
                {
                    let help = did_you_mean(label, CellMetric::LABELS.iter().copied())
                        .unwrap_or_else(|| one_of(CellMetric::LABELS.iter().copied()));
                    self.error(
                        SpecDiagnostic::new(
                            entry.span(),
                            format!("no conclusion cell prints `{label}`"),
                            "here",
                        )
                        .with_help(help),
                    );
                } else if line.label.is_none() || line.number().is_none() {
                    self.error(
                        SpecDiagnostic::new(entry.span(), format!("`{}` is not a printed number", line.text), "here")
                            .with_help("a conclusion cell prints `<label>: <number>[x<replicas>][unit] [(<delta>)]` a line, e.g. `Total TPS: 5770.24 (+47.1%)`, `Mean TPOT(ms): 260.46`, `Mean latency: 1.90s/req (1.23x faster)`"),
                    );
                }
            }
            if child.name().value() == "baseline" {
                baseline = cell;
            } else {
                optimized = cell;
            }
        }
        Some(PrintedCase {
            workload: workload?,
            unbound,
            baseline,
            optimized,
        })
    }

    /// A printed cell: one string per line the page broke with `<br>`.
    pub(super) fn printed_cell(&mut self, node: &KdlNode) -> PrintedCell {
        self.no_props(node);
        self.no_children(node);
        self.string_args(node, "a printed line")
            .iter()
            .map(|l| PrintedLine::parse(l))
            .collect()
    }

    /// A printed delta or ratio (`+26.8%/GPU`, `1.23x faster`).
    fn printed_change(&mut self, node: &KdlNode) -> Option<Quantity> {
        let entry = match arg(node, 0) {
            Some(e) => e,
            None => {
                self.missing_arg(node, "the printed delta");
                return None;
            }
        };
        let text = self.string(entry, "the printed delta")?;
        match Quantity::parse(&text) {
            Some(q @ (Quantity::Delta { .. } | Quantity::Ratio { .. })) => Some(q),
            _ => {
                self.error(
                    SpecDiagnostic::new(entry.span(), format!("`{text}` is not a printed delta or ratio"), "here")
                        .with_help("write it as the page prints it: `+47.1%`, `-0.0%`, `+31.6%/GPU`, `1.23x faster`"),
                );
                None
            }
        }
    }

    pub(super) fn string_args(&mut self, node: &KdlNode, what: &str) -> Vec<String> {
        args(node).filter_map(|e| self.string(e, what)).collect()
    }

    pub(super) fn step_ref_prop(
        &mut self,
        node: &KdlNode,
        name: &str,
        example: &str,
    ) -> Option<String> {
        match prop(node, name) {
            Some(e) => self.reference(e, RefKind::Step),
            None => {
                self.missing_prop(node, name, example);
                None
            }
        }
    }

    // ---- generic helpers ----
}

pub(super) fn placeholder_step() -> Step {
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
        measure_all: false,
        args: Vec::new(),
        env: BTreeMap::new(),
        workloads: Vec::new(),
        expectations: Vec::new(),
        sweep: None,
    }
}

#[cfg(test)]
mod tests {
    use crate::metrics::{GUIDELLM_METRIC_NAMES, METRIC_NAMES};
    use crate::spec::{ExpectedOutcome, SourceFile, parse};

    /// An experiment expecting every `name` under `harness`; the names it kept.
    fn expected(harness: &str, names: &[&str]) -> Vec<String> {
        let metrics: String = names.iter().map(|n| format!("{n} 1.5\n")).collect();
        let text = format!(
            r#"experiment "e" {{
            hardware "nvidia-a100-sxm4-80gb" gpus=1
            model "o/m"
            engine vllm version="0.11.0"
            {harness}
            workload w {{ dataset random input=8 output=8; prompts 1 }}
            step s engine=vllm gpus=1 {{
                expect w {{
                    {metrics}
                }}
            }}
        }}"#
        );
        let spec = parse(&SourceFile {
            name: "e.kdl".into(),
            text,
        })
        .unwrap_or_else(|e| panic!("{:?}", e.errors));
        match &spec.steps[0].expectations[0].outcome {
            ExpectedOutcome::Metrics(m) => m.iter().map(|m| m.name.clone()).collect(),
            ExpectedOutcome::Failure(_) => panic!("metrics expected"),
        }
    }

    #[test]
    fn expect_accepts_every_name_a_block_of_either_era_prints() {
        for name in [
            "p95_ttft_ms",
            "p95_tpot_ms",
            "p95_itl_ms",
            "p95_e2el_ms",
            "mean_e2el_ms",
            "max_concurrency",
            "request_rate",
        ] {
            assert!(METRIC_NAMES.contains(&name), "{name}");
        }
        assert_eq!(expected("harness builtin", METRIC_NAMES), METRIC_NAMES);
        let guidellm: Vec<&str> = GUIDELLM_METRIC_NAMES.iter().map(String::as_str).collect();
        for name in [
            "request_concurrency_max_rounded",
            "request_latency_p95",
            "duration",
        ] {
            assert!(guidellm.contains(&name), "{name}");
        }
        assert_eq!(
            expected(r#"harness guidellm version="0.7.2""#, &guidellm),
            guidellm
        );
    }
}

#[cfg(test)]
mod printed_tests {
    use crate::spec::{Quantity, SourceFile, Spec, parse};

    fn experiment(body: &str) -> Result<Spec, Vec<String>> {
        let text = format!(
            r#"experiment "e" {{
            hardware "nvidia-a100-sxm4-80gb" gpus=2
            model "o/m"
            engine vllm version="0.11.0"
            workload w {{ dataset random input=8 output=8; prompts 1 }}
            step a engine=vllm gpus=1
            step b engine=vllm gpus=1 replicas=2
            {body}
        }}"#
        );
        parse(&SourceFile {
            name: "e.kdl".into(),
            text,
        })
        .map_err(|e| e.errors.iter().map(|d| d.message.clone()).collect())
    }

    #[test]
    fn what_a_page_printed_is_read_beside_the_comparison_and_conclusion() {
        let spec = experiment(
            r#"compare "Parallelism" baseline=a {
                candidate b
                result "b (3019.19 tok/s) > a (3792.50 tok/s)"
                summary "`b` is faster by 4,636.35 tok/s (92.8%)."
                delta "+31.6%/GPU"
            }
            conclusion baseline=a optimized=b {
                command "vllm" "serve" "o/m" "--speculative-config={\"method\":\"mtp\"}"
                table "Benchmark Case" "baseline (vLLM without any optimizations)" "Optimized"
                case w {
                    baseline "Total TPS: 3792.50" "Mean TPOT(ms): 123.36"
                    optimized "Total TPS: 3019.19x2 (+59.2%)" "Mean TPOT(ms): 98.10"
                }
            }
            report {
                summary-table "Optimization Option" "Throughput Improvement" min-success=100 skip-lower-than-previous=#true
                summary "Parallelism" { cell "+59.2%"; }
            }"#,
        )
        .unwrap();
        let c = &spec.comparisons[0].printed;
        assert!(c.result.is_some() && c.summary.is_some());
        assert!(matches!(
            c.delta,
            Some(Quantity::Delta { per_gpu: true, .. })
        ));
        let printed = &spec.conclusion.as_ref().unwrap().printed;
        assert_eq!(
            printed.command[3],
            r#"--speculative-config={"method":"mtp"}"#
        );
        assert_eq!(printed.header.len(), 3);
        let case = &printed.cases[0];
        assert_eq!(case.workload, "w");
        assert_eq!(case.optimized[0].number().unwrap().1, Some(2));
        let table = spec.report.summary_table.as_ref().unwrap();
        assert_eq!(table.min_success_pct, Some(100.0));
        assert!(table.skip_lower_than_previous);
        assert_eq!(
            spec.report.summary.as_ref().unwrap()[0].printed[0][0].text,
            "+59.2%"
        );
    }

    #[test]
    fn a_printed_cell_that_is_no_number_or_an_unknown_delta_is_an_error_at_its_place() {
        let errors = experiment(
            r#"compare "P" baseline=a { candidate b; delta "faster"; }
            conclusion baseline=a optimized=b {
                case w { baseline "Total TPS 3792.50"; optimized "Mean TTFT(ms): 1.0"; }
                case nowhere { baseline "Total TPS: 1.00"; }
            }"#,
        )
        .unwrap_err();
        assert!(
            errors
                .iter()
                .any(|e| e.contains("`faster` is not a printed delta")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("`Total TPS 3792.50` is not a printed number")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("no conclusion cell prints `Mean TTFT(ms)`")),
            "{errors:?}"
        );
        assert!(errors.iter().any(|e| e.contains("nowhere")), "{errors:?}");

        let errors = experiment(
            r#"compare "P" baseline=a { candidate b; }
            report {
                summary-table "Benchmark Cases" "Optimized" "Baseline"
                summary "P" { cell "Total TPS: 1.00 (+1.0%)"; }
            }"#,
        )
        .unwrap_err();
        assert!(
            errors
                .iter()
                .any(|e| e.contains("the row prints 1 cells where the summary table has 3 columns")),
            "{errors:?}"
        );
    }
}
