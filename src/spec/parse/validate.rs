//! Checks across the whole experiment: defaults, references, duplicates, GPUs.

use std::collections::HashSet;

use super::*;
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
        if matches!(spec.harness.kind, HarnessKind::Guidellm { .. }) {
            for w in &spec.workloads {
                if let Some((problem, help)) = guidellm_cannot_run(w) {
                    self.error(
                        SpecDiagnostic::new(
                            w.name.span,
                            format!(
                                "guidellm cannot run workload `{}` as declared: {problem}",
                                w.name.value
                            ),
                            "under `harness guidellm`",
                        )
                        .with_help(help),
                    );
                }
            }
        }
    }

    pub(super) fn check_gpus(&mut self, spec: &Spec) {
        for step in &spec.steps {
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

/// Why guidellm's synthetic data and profiles cannot express `w`, if they cannot.
fn guidellm_cannot_run(w: &Workload) -> Option<(&'static str, &'static str)> {
    match (&w.dataset, w.rate, w.concurrency) {
        (Dataset::ShareGpt { .. }, _, _) => Some((
            "it reads ShareGPT conversations only after a conversion of their own",
            "use `harness vllm-bench` or `harness builtin` for ShareGPT workloads",
        )),
        (Dataset::Random { range_ratio, .. }, _, _) if *range_ratio != 0.0 => Some((
            "its synthetic lengths are not vLLM's uniform `range-ratio` ranges",
            "remove `range-ratio`, or use `harness vllm-bench`",
        )),
        (_, RequestRate::PerSecond(_), Some(_)) => Some((
            "its Poisson profile has no concurrency limit",
            "declare either `rate` or `concurrency`",
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
}
