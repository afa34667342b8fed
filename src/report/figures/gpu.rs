//! What the GPUs did while the heaviest runs measured: power and utilization
//! against the time since each run's start. One chart per load family, one
//! line per configuration at its highest load, so a study of 10,000 runs
//! reads one telemetry file per configuration and family, not one per run.
//! (pure)

use std::collections::BTreeMap;

use super::{Figure, colour, family_title, file_safe, load_label};
use crate::analyze::Analysis;
use crate::analyze::curves::{Curves, LoadFamily};
use crate::metrics::telemetry::GpuTimeline;
use crate::report::plot::{Panel, Plot, Scale, Series, SeriesStyle};
use crate::spec::Spec;

/// The GPU series of runs, by (step, workload).
pub type GpuSeries = BTreeMap<(String, String), GpuTimeline>;

/// The runs the GPU charts show, as (step, workload): each configuration
/// of each load family at its highest load.
pub fn gpu_charted(curves: &Curves) -> Vec<(String, String)> {
    curves
        .families
        .iter()
        .flat_map(|f| &f.curves)
        .filter_map(|c| Some((c.step.clone(), c.points.last()?.workload.clone())))
        .collect()
}

/// Per load family whose charted runs have a GPU series: their power and
/// utilization over time, means over the run's GPUs.
pub fn gpu_figures(
    spec: &Spec,
    analysis: &Analysis,
    curves: &Curves,
    series: &GpuSeries,
) -> Vec<Figure> {
    curves
        .families
        .iter()
        .filter_map(|f| family_figure(spec, analysis, f, series))
        .collect()
}

fn family_figure(
    spec: &Spec,
    analysis: &Analysis,
    family: &LoadFamily,
    series: &GpuSeries,
) -> Option<Figure> {
    // (colour, legend, timeline) of each configuration with a series.
    let lines: Vec<(usize, String, &GpuTimeline)> = family
        .curves
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let top = c.points.last()?;
            let timeline = series
                .get(&(c.step.clone(), top.workload.clone()))
                .filter(|t| !t.is_empty())?;
            let name = if family.has_load_axis() {
                format!("{} at {}", c.label, load_label(family.axis, top))
            } else {
                c.label.clone()
            };
            Some((colour(spec, &c.step, i), name, timeline))
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    let longest_span = lines.iter().map(|l| l.2.span_s()).fold(1.0, f64::max);
    let per = if longest_span > 1.0 {
        format!(
            ", each point a mean over up to {} s",
            super::super::chart::axis_number(&longest_span)
        )
    } else {
        String::new()
    };
    let panel = |title: &str, y_title: &str, points: fn(&GpuTimeline) -> Vec<(f64, f64)>| Panel {
        title: format!("{title}, mean per GPU{per}"),
        x_title: "time since the run's start (s)".to_owned(),
        y_title: y_title.to_owned(),
        from_zero: true,
        x_scale: Scale::Linear,
        series: lines
            .iter()
            .map(|(colour, name, timeline)| Series {
                name: Some(name.clone()),
                style: SeriesStyle::Curve(*colour),
                points: points(timeline),
                labels: Vec::new(),
            })
            .collect(),
    };
    let at = if family.has_load_axis() {
        ", each configuration at its highest load"
    } else {
        ""
    };
    // The series are measured by definition: a cap is all there is to say.
    let note = super::cap_note(analysis);
    Some(Figure {
        id: format!("gpu-{}", file_safe(family.id())),
        plot: Plot {
            title: format!(
                "{}: GPU power and utilization over time, {}{at}",
                spec.name,
                family_title(spec, family)
            ),
            note,
            panels: vec![
                panel("Power", "power.draw (W)", GpuTimeline::power_w),
                panel(
                    "Utilization",
                    "utilization.gpu (%)",
                    GpuTimeline::utilization_pct,
                ),
            ],
        },
    })
}
