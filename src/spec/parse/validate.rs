//! Checks across the whole experiment: defaults, references, duplicates, GPUs.

use std::collections::HashSet;

use super::*;
use crate::facts::EngineKind;
use crate::spec::diag::{SpecDiagnostic, did_you_mean, one_of};
use crate::spec::model::*;

impl Decoder {
    /// Steps inherit the experiment's model and, without `workloads`, every workload.
    pub(super) fn resolve_defaults(&mut self, spec: &mut Spec) {
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
            // A load axis named in a step's `workloads` is each of its points.
            step.workloads = std::mem::take(&mut step.workloads)
                .into_iter()
                .flat_map(|w| match self.axes.iter().find(|(axis, _)| *axis == w) {
                    Some((_, points)) => points.clone(),
                    None => vec![w],
                })
                .collect();
            self.follow_load(step, &spec.workloads);
        }
        for comparison in &mut spec.comparisons {
            if comparison.workload.is_empty() {
                comparison.workload = all.first().cloned().unwrap_or_default();
            }
        }
    }

    pub(super) fn check_references(&mut self, spec: &Spec) {
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
            if r.kind == RefKind::Workload
                && !r.whole_axis
                && let Some((_, points)) = self.axes.iter().find(|(axis, _)| *axis == r.name)
            {
                let points = points.clone();
                self.error(
                    SpecDiagnostic::new(
                        r.span,
                        format!(
                            "workload `{}` is a load axis of {} runs; name one of them here",
                            r.name,
                            points.len()
                        ),
                        "a load axis",
                    )
                    .with_help(format!(
                        "{} (quoted: KDL reads `=` as a property)",
                        one_of(points.iter().map(String::as_str))
                    )),
                );
                continue;
            }
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

    /// External clients drive one server, and guidellm expresses only some
    /// workloads exactly as declared.
    pub(super) fn check_harness(&mut self, spec: &Spec) {
        let client = match &spec.harness.kind {
            HarnessKind::Builtin => return,
            HarnessKind::VllmBench { .. } => "`vllm bench serve`",
            HarnessKind::Guidellm { .. } => "guidellm",
        };
        for step in spec
            .steps
            .iter()
            .filter(|s| s.measure_all && s.replicas > 1)
        {
            self.error(
                SpecDiagnostic::new(
                    step.name.span,
                    format!("step `{}` measures all replicas, which {client} cannot drive", step.name.value),
                    "measure=all",
                )
                .with_help("use `measure=one` (the published convention), or `harness builtin`, which drives every replica"),
            );
        }
        let cannot_run: fn(&Workload) -> Option<(&'static str, &'static str)> =
            match spec.harness.kind {
                HarnessKind::Guidellm { .. } => guidellm_cannot_run,
                _ => vllm_bench_cannot_run,
            };
        for w in &spec.workloads {
            if let Some((problem, help)) = cannot_run(w) {
                self.error(
                    SpecDiagnostic::new(
                        w.name.span,
                        format!(
                            "{client} cannot run workload `{}` as declared: {problem}",
                            w.name.value
                        ),
                        format!("under `harness {}`", spec.harness.kind.name()),
                    )
                    .with_help(help),
                );
            }
        }
    }

    pub(super) fn check_gpus(&mut self, spec: &Spec) {
        let vendor = crate::gpu::lookup(&spec.hardware.gpu).map(|g| g.vendor);
        for step in &spec.steps {
            if let Some(vendor) = vendor
                && !crate::facts::startable::runs_on(step.engine, vendor)
            {
                let accelerators = match vendor {
                    crate::gpu::Vendor::Nvidia => "NVIDIA GPUs",
                    crate::gpu::Vendor::Huawei => "Ascend NPUs",
                };
                self.error(
                    SpecDiagnostic::new(
                        step.name.span,
                        format!(
                            "step `{}` uses {}, which does not run on {accelerators} (`{}`)",
                            step.name.value,
                            step.engine.display_name(),
                            spec.hardware.gpu
                        ),
                        "wrong engine for the hardware",
                    )
                    .with_help(
                        "on Ascend NPUs use `vllm-ascend`, `mindie` or `sglang`; on NVIDIA GPUs `vllm`, `sglang` or `trtllm`",
                    ),
                );
            }
            // In u64: `gpus=65536 replicas=65536` overflows a u32.
            let needed = u64::from(step.gpus) * u64::from(step.replicas);
            if needed > u64::from(spec.hardware.gpus) {
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

    pub(super) fn check_duplicates<'a>(
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
}

/// Why guidellm's data and profiles cannot express `w`, if they cannot.
fn guidellm_cannot_run(w: &Workload) -> Option<(&'static str, &'static str)> {
    match &w.dataset {
        Dataset::ShareGpt {
            conversion: SharegptConversion::Vllm,
            ..
        } => Some((
            "it reads ShareGPT conversations only after a conversion of their own",
            "declare `conversion=\"benchmark-runner\"` (GPUStack's conversion for guidellm), or use `harness vllm-bench` or `harness builtin` for vLLM's sampling",
        )),
        Dataset::Random { range_ratio, .. } if *range_ratio != 0.0 => Some((
            "its synthetic lengths are not vLLM's uniform `range-ratio` ranges",
            "remove `range-ratio`, or use `harness vllm-bench`",
        )),
        _ => None,
    }
}

/// Why `vllm bench serve` cannot express `w`, if it cannot.
fn vllm_bench_cannot_run(w: &Workload) -> Option<(&'static str, &'static str)> {
    match (&w.dataset, w.rate, w.arrival) {
        (
            Dataset::ShareGpt {
                conversion: SharegptConversion::BenchmarkRunner,
                ..
            },
            _,
            _,
        ) => Some((
            "it samples ShareGPT its own way, not as benchmark-runner converts it",
            "use `harness guidellm` or `harness builtin` for `conversion=\"benchmark-runner\"`",
        )),
        (_, RequestRate::PerSecond(_), Arrival::Constant) => Some((
            "its arrivals are gamma-distributed, never evenly spaced",
            "use `arrival poisson`, or `harness guidellm` or `harness builtin` for constant arrivals",
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::{SourceFile, parse};

    #[test]
    fn gpus_times_replicas_beyond_u32_is_an_error_not_an_overflow() {
        let text = r#"experiment "e" {
            hardware "nvidia-a100-sxm4-80gb" gpus=8
            model "o/m"
            engine vllm version="0.11.0"
            workload w { dataset random input=8 output=8; prompts 1 }
            step s engine=vllm gpus=65536 replicas=65536
        }"#;
        let errors = parse(&SourceFile {
            name: "e.kdl".into(),
            text: text.into(),
        })
        .unwrap_err();
        assert_eq!(
            errors.errors[0].message,
            "step `s` needs 4294967296 GPUs (65536 × 65536 replicas), but the hardware has 8"
        );
    }

    fn errors(harness: &str, workload: &str) -> Vec<String> {
        let text = format!(
            r#"experiment "e" {{
            hardware "nvidia-a100-sxm4-80gb" gpus=8
            model "o/m"
            engine vllm version="0.11.0"
            {harness}
            workload w {{ {workload} }}
            step s engine=vllm gpus=1
        }}"#
        );
        match parse(&SourceFile {
            name: "e.kdl".into(),
            text,
        }) {
            Ok(_) => Vec::new(),
            Err(e) => e.errors.iter().map(|e| e.message.clone()).collect(),
        }
    }

    #[test]
    fn each_harness_runs_the_rate_workloads_it_can_express_and_refuses_the_rest() {
        let runner = r#"dataset sharegpt path="s.json" conversion="benchmark-runner"; prompts 10"#;
        let random = "dataset random input=8 output=8; prompts 10";
        let guidellm = r#"harness guidellm version="0.5.3""#;
        let vllm_bench = r#"harness vllm-bench version="0.11.0""#;
        for harness in ["harness builtin", guidellm] {
            assert_eq!(
                errors(
                    harness,
                    &format!("{runner}; rate 8; arrival constant; concurrency 512")
                ),
                Vec::<String>::new(),
                "{harness}"
            );
        }
        assert_eq!(
            errors("", &format!("{random}; arrival constant")),
            ["`arrival constant` needs a finite `rate`"]
        );
        assert_eq!(
            errors("", &format!("{random}; rate 8; arrival steady")),
            ["unknown arrival process `steady`"]
        );
        assert_eq!(
            errors(guidellm, &format!("{random}; rate 8")),
            Vec::<String>::new(),
            "uncapped: guidellm is given the request count as its cap"
        );
        assert_eq!(
            errors(guidellm, r#"dataset sharegpt path="s.json"; prompts 10"#),
            [
                "guidellm cannot run workload `w` as declared: it reads ShareGPT conversations only after a conversion of their own"
            ]
        );
        assert_eq!(
            errors(vllm_bench, &format!("{random}; rate 8; arrival constant")),
            [
                "`vllm bench serve` cannot run workload `w` as declared: its arrivals are gamma-distributed, never evenly spaced"
            ]
        );
        assert_eq!(
            errors(vllm_bench, runner),
            [
                "`vllm bench serve` cannot run workload `w` as declared: it samples ShareGPT its own way, not as benchmark-runner converts it"
            ]
        );
        assert_eq!(
            errors(
                vllm_bench,
                &format!("{random}; rate 8; arrival poisson; concurrency 4")
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn an_engine_must_run_on_the_declared_accelerators() {
        let text = |gpu: &str, engine: &str| {
            format!(
                r#"experiment "e" {{
                    hardware "{gpu}" gpus=1
                    model "o/m"
                    engine {engine} version="1"
                    workload w {{ dataset random input=8 output=8; prompts 1 }}
                    step s engine={engine} gpus=1
                }}"#
            )
        };
        let parsed = |gpu: &str, engine: &str| {
            parse(&SourceFile {
                name: "e.kdl".into(),
                text: text(gpu, engine),
            })
        };
        let errors = parsed("nvidia-h100-sxm5-80gb", "mindie").unwrap_err();
        assert_eq!(
            errors.errors[0].message,
            "step `s` uses MindIE, which does not run on NVIDIA GPUs (`nvidia-h100-sxm5-80gb`)"
        );
        assert!(parsed("huawei-ascend-910b-64gb", "vllm").is_err());
        assert!(parsed("huawei-ascend-910b-64gb", "vllm-ascend").is_ok());
        assert!(parsed("huawei-ascend-910b-64gb", "mindie").is_ok());
        assert!(parsed("nvidia-h200-sxm-141gb", "vllm").is_ok());
    }
}
