//! Published vs measured: each published number beside what the store holds
//! for the same run, and whether it lies within the tolerance. Only measured
//! results are scored, in `verify` and the report alike: a simulated one
//! predicts no GPU, and an imported one is the page's own number. (pure)

use super::{RunRecord, Source};
use crate::spec::{ExpectedOutcome, Spec};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Check {
    pub step: String,
    pub workload: String,
    /// A metric name, or `failure` for a published error.
    pub metric: String,
    /// As printed on the page.
    pub published: String,
    /// The stored number (the mean of the samples), or the stored error.
    pub measured: Option<String>,
    /// (measured − published) / published × 100.
    pub diff_pct: Option<f64>,
    pub verdict: Verdict,
    pub source: Option<Source>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Within,
    Outside,
    /// Nothing stored yet for the run, or the run failed.
    Missing,
    /// Stored, but simulated or imported: shown, never scored.
    NotScored,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Self::Within => "within",
            Self::Outside => "OUTSIDE",
            Self::Missing => "MISSING",
            Self::NotScored => "not scored",
        }
    }
}

/// Every expectation of `spec` (restricted to `metrics` when given) against `runs`.
pub fn checks(
    spec: &Spec,
    runs: &[RunRecord],
    tolerance_pct: f64,
    metrics: Option<&[String]>,
) -> Vec<Check> {
    let counts = |name: &str| metrics.is_none_or(|m| m.iter().any(|x| x == name));
    let mut out = Vec::new();
    for step in &spec.steps {
        for x in &step.expectations {
            let run = runs
                .iter()
                .find(|r| r.step == step.name.value && r.workload == x.workload);
            let source = run.and_then(|r| r.source);
            let check = |metric: &str, published: String| Check {
                step: step.name.value.clone(),
                workload: x.workload.clone(),
                metric: metric.to_owned(),
                published,
                measured: None,
                diff_pct: None,
                verdict: Verdict::Missing,
                source,
            };
            match &x.outcome {
                ExpectedOutcome::Failure(error) if counts("failure") => {
                    let mut c = check("failure", error.clone());
                    match run {
                        Some(r) if r.failure.is_some() => {
                            let got = r.failure.clone().unwrap_or_default();
                            c.verdict = if got.contains(error.as_str()) {
                                Verdict::Within
                            } else {
                                Verdict::Outside
                            };
                            c.measured = Some(got);
                        }
                        Some(r) if !r.metrics.is_empty() => {
                            c.measured = Some("ran".into());
                            c.verdict = Verdict::Outside;
                        }
                        _ => {}
                    }
                    out.push(c);
                }
                ExpectedOutcome::Failure(_) => {}
                ExpectedOutcome::Metrics(expected) => {
                    for m in expected.iter().filter(|m| counts(&m.name)) {
                        let mut c = check(&m.name, m.text.clone());
                        if let Some(v) = run.and_then(|r| r.metrics.get(&m.name)) {
                            let diff = (v - m.value) / m.value * 100.0;
                            c.measured = Some(format!("{v:.2}"));
                            c.diff_pct = Some(diff);
                            c.verdict = if diff.abs() <= tolerance_pct || (*v == m.value) {
                                Verdict::Within
                            } else {
                                Verdict::Outside
                            };
                        }
                        out.push(c);
                    }
                }
            }
        }
    }
    for c in &mut out {
        if c.source.is_some_and(|s| s != Source::Measured) && c.measured.is_some() {
            c.verdict = Verdict::NotScored;
        }
    }
    out
}
