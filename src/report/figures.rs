//! The study's curves as charts: latency against throughput per load family,
//! the throughput-per-GPU vs per-user frontier, and the TTFT and ITL
//! distributions. Each says what its numbers are. (pure)

use super::plot::{Panel, Plot, Series, SeriesStyle};
use crate::analyze::curves::{Cdf, CurvePoint, Curves, LoadAxis, LoadFamily};
use crate::analyze::{Analysis, Source};
use crate::metrics::MetricSet;
use crate::spec::Spec;

/// A chart of the report, and the name its files and HTML element take.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// `latency-<family>`, `frontier-<family>` or `cdf-<workload>`: safe in a
    /// file name and an HTML id.
    pub id: String,
    pub plot: Plot,
}

/// Every chart of the curves, in the order the report shows them.
pub fn figures(spec: &Spec, analysis: &Analysis, curves: &Curves) -> Vec<Figure> {
    let set = spec.harness.kind.metric_set();
    let mut out = Vec::new();
    for family in &curves.families {
        let note = note(spec, analysis, &family.workloads);
        if family.has_load_axis() {
            out.push(latency(spec, family, set, note.clone()));
        }
        if family.curves.iter().map(|c| c.points.len()).sum::<usize>() > 1 {
            out.push(frontier(spec, family, note));
        }
    }
    for d in &curves.distributions {
        let panel = |title: &str, x_title: &str, cdf: fn(&_) -> &Cdf| Panel {
            title: title.to_owned(),
            x_title: x_title.to_owned(),
            y_title: "fraction ≤ x".to_owned(),
            series: d
                .lines
                .iter()
                .enumerate()
                .map(|(i, line)| Series {
                    name: Some(format!("{} (n={})", line.label, cdf(line).n)),
                    style: SeriesStyle::Curve(colour(spec, &line.step, i)),
                    points: cdf(line)
                        .percentiles
                        .iter()
                        .enumerate()
                        .map(|(p, v)| (*v, p as f64 / 100.0))
                        .collect(),
                    labels: Vec::new(),
                })
                .collect(),
        };
        out.push(Figure {
            id: format!("cdf-{}", file_safe(&d.workload)),
            plot: Plot {
                title: format!(
                    "{}: TTFT and ITL distributions, {}",
                    spec.name,
                    spec.workload_title(&d.workload)
                ),
                note: note(spec, analysis, std::slice::from_ref(&d.workload)),
                panels: vec![
                    panel("TTFT per request", "TTFT (ms)", |l| &l.ttft),
                    panel("ITL per gap between chunks", "ITL (ms)", |l| &l.itl),
                ],
            },
        });
    }
    out
}

fn latency(spec: &Spec, family: &LoadFamily, set: MetricSet, note: Option<String>) -> Figure {
    let panel = |title: &str, y: fn(&CurvePoint) -> f64| Panel {
        title: title.to_owned(),
        x_title: "Total TPS, all replicas (tok/s)".to_owned(),
        y_title: format!("{title} (ms)"),
        series: family
            .curves
            .iter()
            .enumerate()
            .map(|(i, c)| Series {
                name: Some(c.label.clone()),
                style: SeriesStyle::Line(colour(spec, &c.step, i)),
                points: c.points.iter().map(|p| (p.tps, y(p))).collect(),
                labels: c
                    .points
                    .iter()
                    .map(|p| load_label(family.axis, p))
                    .collect(),
            })
            .collect(),
    };
    let tpot = match set {
        MetricSet::Vllm => "Mean TPOT",
        MetricSet::Guidellm => "Mean TPOT (guidellm: with TTFT)",
    };
    let panels = vec![
        panel("Mean TTFT", |p| p.ttft_ms),
        panel(tpot, |p| p.tpot_ms),
        panel("Mean E2E latency", |p| p.e2el_ms),
    ];
    Figure {
        id: format!("latency-{}", file_safe(family.id())),
        plot: Plot {
            title: format!(
                "{}: latency vs throughput along {}, {}",
                spec.name,
                family.axis.title(),
                family_title(spec, family)
            ),
            note,
            // A panel with nothing to draw (no end-to-end latency published) is left out.
            panels: panels
                .into_iter()
                .filter(|p| {
                    p.series
                        .iter()
                        .any(|s| s.points.iter().any(|(x, y)| x.is_finite() && y.is_finite()))
                })
                .collect(),
        },
    }
}

fn frontier(spec: &Spec, family: &LoadFamily, note: Option<String>) -> Figure {
    let labelled = family.has_load_axis();
    let mut series: Vec<Series> = family
        .curves
        .iter()
        .enumerate()
        .map(|(i, c)| Series {
            name: Some(c.label.clone()),
            style: SeriesStyle::Markers(colour(spec, &c.step, i)),
            points: c.points.iter().map(|p| (p.per_user, p.per_gpu)).collect(),
            labels: c
                .points
                .iter()
                .map(|p| {
                    if labelled {
                        load_label(family.axis, p)
                    } else {
                        String::new()
                    }
                })
                .collect(),
        })
        .collect();
    series.push(Series {
        name: Some("Pareto frontier".to_owned()),
        style: SeriesStyle::Emphasis,
        points: family
            .frontier()
            .into_iter()
            .map(|(_, p)| (p.per_user, p.per_gpu))
            .collect(),
        labels: Vec::new(),
    });
    Figure {
        id: format!("frontier-{}", file_safe(family.id())),
        plot: Plot {
            title: format!(
                "{}: throughput per GPU vs per user, {}",
                spec.name,
                family_title(spec, family)
            ),
            note,
            panels: vec![Panel {
                title: "every configuration and engine version; the frontier joins those none beats on both"
                    .to_owned(),
                x_title: "tok/s per user (1000 / mean TPOT ms)".to_owned(),
                y_title: "Total TPS per GPU (tok/s)".to_owned(),
                series,
            }],
        },
    }
}

/// What a point's load is, beside it: "c=4", "8/s", "∞".
fn load_label(axis: LoadAxis, p: &CurvePoint) -> String {
    let n = if p.load.is_infinite() {
        "∞".to_owned()
    } else {
        super::chart::axis_number(&p.load)
    };
    match axis {
        LoadAxis::Concurrency => format!("c={n}"),
        LoadAxis::Rate => format!("{n}/s"),
        LoadAxis::Declared => p.workload.clone(),
    }
}

/// A configuration's colour: its place among the study's steps, so it keeps
/// one colour across charts.
fn colour(spec: &Spec, step: &str, fallback: usize) -> usize {
    spec.steps
        .iter()
        .position(|s| s.name.value == step)
        .unwrap_or(fallback)
}

/// A family by its workload's title, or its workloads' names.
fn family_title(spec: &Spec, family: &LoadFamily) -> String {
    match family.workloads.as_slice() {
        [one] => spec.workload_title(one).to_owned(),
        // Titles of loads of one workload say the same but their load.
        several => several.join(" · "),
    }
}

/// What a chart's numbers are, when they are not measured under vLLM's
/// definitions over the whole workload: said under its title.
fn note(spec: &Spec, analysis: &Analysis, workloads: &[String]) -> Option<String> {
    let runs = || {
        analysis
            .runs
            .iter()
            .filter(|r| workloads.contains(&r.workload) && r.failure.is_none())
    };
    let mut notes = Vec::new();
    if runs().any(|r| r.source == Some(Source::Simulated)) {
        notes.push("simulated engine: predicts no GPU".to_owned());
    }
    if runs().any(|r| r.source == Some(Source::Published) && r.key.is_some()) {
        notes.push("imported numbers".to_owned());
    }
    if runs().any(|r| r.source == Some(Source::Published) && r.key.is_none()) {
        notes.push("published numbers".to_owned());
    }
    if let Some(cap) = analysis.scope.as_ref().and_then(|s| s.max_prompts) {
        notes.push(format!(
            "capped at {cap} prompts per workload (a smoke test)"
        ));
    }
    if spec.harness.kind.metric_set() == MetricSet::Guidellm {
        notes.push("guidellm's definitions: TPOT includes the TTFT".to_owned());
    }
    (!notes.is_empty()).then(|| notes.join(" · "))
}

/// A name with every character but ASCII letters, digits, `-` and `_` as `_`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
