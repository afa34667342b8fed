//! The study's curves as charts: latency against throughput per load family,
//! the throughput-per-GPU vs per-user frontier, and the TTFT and ITL
//! distributions. Each says what its numbers are. (pure)

use super::plot::{Panel, Plot, Scale, Series, SeriesStyle};
use crate::analyze::curves::{
    Cdf, CurvePoint, Curves, Distribution, DistributionLine, LoadAxis, LoadCurve, LoadFamily,
    probe_load, step_label,
};
use crate::analyze::search::SearchResult;
use crate::analyze::{Analysis, Source};
use crate::metrics::MetricSet;
use crate::plan::search::Bracket;
use crate::spec::Spec;

mod gpu;
pub use gpu::{GpuSeries, gpu_charted, gpu_figures};

/// A chart of the report, and the name its files and HTML element take.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// `latency-<family>`, `frontier-<family>` or `cdf-<workload>`: safe in a
    /// file name and an HTML id.
    pub id: String,
    pub plot: Plot,
}

/// Every chart of the curves, in the order the report shows them: each load
/// family's latency and frontier, each search's result, each workload's
/// distributions.
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
    let mut searched: Vec<&str> = Vec::new();
    for s in &analysis.searches {
        if !searched.contains(&s.workload.as_str()) {
            searched.push(&s.workload);
        }
    }
    for workload in searched {
        out.extend(search_figure(spec, analysis, workload));
    }
    for d in &curves.distributions {
        out.push(distribution(spec, analysis, d));
    }
    out
}

/// A workload's TTFT and ITL distributions, one line per configuration,
/// each axis ending where its distributions' tails begin.
fn distribution(spec: &Spec, analysis: &Analysis, d: &Distribution) -> Figure {
    let panel = |title: &str, x_title: &str, cdf: fn(&DistributionLine) -> &Cdf| {
        let cdfs: Vec<&Cdf> = d.lines.iter().map(cdf).collect();
        let axis = CdfAxis::of(&cdfs);
        Panel {
            title: format!("{title}{}", axis.note()),
            x_title: x_title.to_owned(),
            y_title: "fraction ≤ x".to_owned(),
            from_zero: true,
            x_scale: Scale::Linear,
            series: d
                .lines
                .iter()
                .enumerate()
                .map(|(i, line)| Series {
                    name: Some(format!("{} (n={})", line.label, cdf(line).n)),
                    style: SeriesStyle::Curve(colour(spec, &line.step, i)),
                    points: axis.points(cdf(line)),
                    labels: Vec::new(),
                })
                .collect(),
        }
    };
    let searched = spec
        .workload(&d.workload)
        .is_some_and(|w| w.search.is_some());
    let at = if searched {
        ", each configuration at its largest passing load"
    } else {
        ""
    };
    let workloads = if searched {
        analysis
            .searches
            .iter()
            .filter(|s| s.workload == d.workload)
            .flat_map(|s| s.probes.iter().map(|p| p.workload.clone()))
            .collect()
    } else {
        vec![d.workload.clone()]
    };
    Figure {
        id: format!("cdf-{}", file_safe(&d.workload)),
        plot: Plot {
            title: format!(
                "{}: TTFT and ITL distributions, {}{at}",
                spec.name,
                spec.workload_title(&d.workload)
            ),
            note: note(spec, analysis, &workloads),
            panels: vec![
                panel("TTFT per request", "TTFT (ms)", |l| &l.ttft),
                panel("ITL per gap between chunks", "ITL (ms)", |l| &l.itl),
            ],
        },
    }
}

/// Where a distribution panel's x axis ends. At the largest p99.9 of its
/// lines; but when the last 0.9 % of values stretch far beyond the rest
/// (a few long gaps between chunks: the largest ITL is often 30× the p99),
/// at the largest p99, so the body of each curve is not squeezed against 0.
/// The panel's title says what lies beyond.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CdfAxis {
    /// The largest value shown.
    pub end: f64,
    /// Whether the lines run to p99.9 (else to p99).
    pub to_p99_9: bool,
    /// The largest value of any line.
    pub max: f64,
}

/// How far past the p99 the p99.9 may lie for the axis to reach it.
const TAIL_STRETCH: f64 = 3.0;
/// How far past the axis's end the largest value may lie to be shown too.
const WHOLE_TAIL: f64 = 1.1;

impl CdfAxis {
    pub fn of(cdfs: &[&Cdf]) -> Self {
        let largest = |v: &dyn Fn(&Cdf) -> Option<f64>| {
            cdfs.iter()
                .filter_map(|c| v(c))
                .filter(|v| v.is_finite())
                .fold(f64::NAN, f64::max)
        };
        let p99 = largest(&|c| c.at(99));
        let p99_9 = largest(&|c| Some(c.p99_9));
        let max = largest(&|c| c.at(100));
        let to_p99_9 = !(p99_9 > p99 * TAIL_STRETCH && p99 > 0.0);
        let end = if to_p99_9 { p99_9 } else { p99 };
        Self {
            // A tail that adds little to the axis is shown whole.
            end: if max <= end * WHOLE_TAIL { max } else { end },
            to_p99_9,
            max,
        }
    }

    /// A line's points up to the axis's end: (value, fraction ≤ it).
    pub fn points(&self, cdf: &Cdf) -> Vec<(f64, f64)> {
        let mut points: Vec<(f64, f64)> = cdf
            .percentiles
            .iter()
            .take(100)
            .enumerate()
            .map(|(p, v)| (*v, p as f64 / 100.0))
            .collect();
        if self.to_p99_9 && cdf.p99_9.is_finite() {
            points.push((cdf.p99_9, 0.999));
        }
        if self.max <= self.end {
            points.extend(cdf.at(100).map(|v| (v, 1.0)));
        }
        points
    }

    /// What the panel's title says of the tail it leaves out.
    pub fn note(&self) -> String {
        if self.max.is_nan() || self.max <= self.end {
            return String::new();
        }
        let to = if self.to_p99_9 { "p99.9" } else { "p99" };
        let largest = (self.max * 10.0).round() / 10.0;
        format!(
            " (to {to}; largest {} ms)",
            super::chart::axis_number(&largest)
        )
    }
}

fn latency(spec: &Spec, family: &LoadFamily, set: MetricSet, note: Option<String>) -> Figure {
    let panel = |title: &str, y: fn(&CurvePoint) -> f64| Panel {
        title: title.to_owned(),
        x_title: "Total TPS, all replicas (tok/s)".to_owned(),
        y_title: format!("{title} (ms)"),
        from_zero: true,
        x_scale: Scale::Linear,
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
            labels: frontier_labels(c, family.axis, labelled),
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
                // Ranged from the points, which would crowd one corner of axes from 0.
                from_zero: false,
                x_scale: Scale::Linear,
                series,
            }],
        },
    }
}

/// A frontier's points told apart by more than colour: each by its load
/// (along a load axis), the curve's last also by its configuration's name.
fn frontier_labels(curve: &LoadCurve, axis: LoadAxis, by_load: bool) -> Vec<String> {
    let last = curve.points.len().saturating_sub(1);
    curve
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| match (by_load, i == last) {
            (true, true) => format!("{} {}", curve.step, load_label(axis, p)),
            (true, false) => load_label(axis, p),
            (false, _) => curve.step.clone(),
        })
        .collect()
}

/// A probe as a search's chart draws it: (load, SLO attainment in %,
/// goodput in requests per second).
type Probed = (f64, f64, f64);

/// The result of the searches of `workload`: each configuration's SLO
/// attainment and goodput against the load it probed (in load order, so no
/// line turns back), the attainment the SLO asks for as a line across, and
/// its bracket: a ring at each configuration's largest passing load, a cross
/// at its smallest failing one. None when no probe
/// has a result yet.
fn search_figure(spec: &Spec, analysis: &Analysis, workload: &str) -> Option<Figure> {
    let searches: Vec<&SearchResult> = analysis
        .searches
        .iter()
        .filter(|s| s.workload == workload)
        .collect();
    let first = searches.first()?;
    // Each probe with a result, by load.
    let probed = |s: &SearchResult| -> Vec<Probed> {
        let mut points: Vec<Probed> = s
            .probes
            .iter()
            .filter_map(|p| {
                let run = analysis
                    .runs
                    .iter()
                    .find(|r| r.step == s.step && r.workload == p.workload)?;
                let slo = run.slo.as_ref()?;
                Some((p.load, slo.attainment.pct, slo.attainment.goodput))
            })
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        points
    };
    let lines: Vec<(&SearchResult, Vec<Probed>)> =
        searches.iter().map(|s| (*s, probed(s))).collect();
    if lines.iter().all(|(_, p)| p.is_empty()) {
        return None;
    }
    let x_scale = search_scale(first.from, first.to);
    let panel = |title: &str, y_title: &str, value: fn(&Probed) -> f64| {
        let mut series: Vec<Series> = lines
            .iter()
            .enumerate()
            .map(|(i, (s, points))| Series {
                name: Some(step_label(spec, &s.step)),
                style: SeriesStyle::Line(colour(spec, &s.step, i)),
                points: points.iter().map(|p| (p.0, value(p))).collect(),
                labels: points.iter().map(|p| probe_load(s, p.0)).collect(),
            })
            .collect();
        // The bracket each search ends with, marked on its line.
        let bracket = |end: fn(&Bracket) -> Option<f64>| -> Vec<(f64, f64)> {
            lines
                .iter()
                .filter_map(|(s, points)| {
                    let load = end(s.bracket.as_ref()?)?;
                    let p = points.iter().find(|p| p.0 == load)?;
                    Some((p.0, value(p)))
                })
                .collect()
        };
        for (name, style, end) in [
            (
                "largest passing load",
                SeriesStyle::Rings,
                (|b| b.largest_passing) as fn(&Bracket) -> Option<f64>,
            ),
            ("smallest failing load", SeriesStyle::Crosses, |b| {
                b.smallest_failing
            }),
        ] {
            let points = bracket(end);
            // No ring where nothing passed, no cross where all did.
            if points.is_empty() {
                continue;
            }
            series.push(Series {
                name: Some(name.to_owned()),
                style,
                labels: vec![String::new(); points.len()],
                points,
            });
        }
        Panel {
            title: title.to_owned(),
            x_title: format!(
                "{} (searched {}..={}{})",
                first.axis.name(),
                first.from,
                first.to,
                if x_scale == Scale::Log2 {
                    ", log scale"
                } else {
                    ""
                }
            ),
            y_title: y_title.to_owned(),
            from_zero: true,
            x_scale,
            series,
        }
    };
    let mut attainment = panel("SLO attainment", "requests within the SLO (%)", |p| p.1);
    attainment.series.push(Series {
        name: Some(format!(
            "SLO: {}% of requests within {}",
            first.attainment_pct, first.slo
        )),
        style: SeriesStyle::Threshold,
        points: vec![
            (first.from, first.attainment_pct),
            (first.to, first.attainment_pct),
        ],
        labels: Vec::new(),
    });
    let goodput = panel("Goodput", "requests within the SLO per second", |p| p.2);
    let probes: Vec<String> = searches
        .iter()
        .flat_map(|s| s.probes.iter().map(|p| p.workload.clone()))
        .collect();
    Some(Figure {
        id: format!("search-{}", file_safe(workload)),
        plot: Plot {
            title: format!(
                "{}: largest load within the SLO, {}",
                spec.name,
                spec.workload_title(workload)
            ),
            note: note(spec, analysis, &probes),
            panels: vec![attainment, goodput],
        },
    })
}

/// How far apart a search's bounds may lie for its loads to be drawn on a
/// linear axis.
const LINEAR_SPAN: f64 = 8.0;

/// A search's load axis: a log scale over a range of more than
/// `LINEAR_SPAN`× (1..=256), where bisection probes ever closer loads near
/// where passing ends and a linear axis would draw them in one corner.
pub fn search_scale(from: f64, to: f64) -> Scale {
    if from > 0.0 && to > from * LINEAR_SPAN {
        Scale::Log2
    } else {
        Scale::Linear
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

/// The most workloads a family's title names one by one.
const MAX_NAMED: usize = 4;

/// A family by its workload's title, or its workloads' names.
fn family_title(spec: &Spec, family: &LoadFamily) -> String {
    match family.workloads.as_slice() {
        [one] => spec.workload_title(one).to_owned(),
        // Titles of loads of one workload say the same but their load; many
        // names would run past the chart's edges.
        [first, .., last] if family.workloads.len() > MAX_NAMED => {
            format!("{first} … {last} ({} loads)", family.workloads.len())
        }
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
    notes.extend(cap_note(analysis));
    if spec.harness.kind.metric_set() == MetricSet::Guidellm {
        notes.push("guidellm's definitions: TPOT includes the TTFT".to_owned());
    }
    (!notes.is_empty()).then(|| notes.join(" · "))
}

/// That the runs were capped (`--max-prompts`), when they were.
fn cap_note(analysis: &Analysis) -> Option<String> {
    let cap = analysis.scope.as_ref()?.max_prompts?;
    Some(format!(
        "capped at {cap} prompts per workload (a smoke test)"
    ))
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
