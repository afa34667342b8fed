//! The curves' charts of a report: computed from the records and the
//! per-request journals the store holds, and drawn beside a written report.

use std::path::Path;

use crate::analyze::curves::{self, Curves};
use crate::analyze::{Analysis, Stored};
use crate::ops::user_files::write_file;
use crate::ops::{Error, Loaded};
use crate::report::ChartFile;
use crate::report::figures::{Figure, GpuSeries, figures, gpu_charted, gpu_figures};
use crate::report::{chart, plot};

/// The figures of `analysis`'s curves, reading the journals they show into
/// `stored` (those not read yet).
pub fn of(loaded: &Loaded, analysis: &Analysis, stored: &mut Stored) -> Result<Vec<Figure>, Error> {
    super::stored::read_charted_journals(stored, &analysis.runs)?;
    let journals = curves::journals(&analysis.runs, stored);
    let curves = curves::curves(&loaded.spec, &analysis.runs, &journals, &analysis.searches);
    let mut out = figures(&loaded.spec, analysis, &curves);
    let series = gpu_series(analysis, stored, &curves)?;
    out.extend(gpu_figures(&loaded.spec, analysis, &curves, &series));
    Ok(out)
}

/// The GPU series of the runs the GPU charts show, each read from its
/// latest measured sample that sampled GPUs, a line at a time.
fn gpu_series(analysis: &Analysis, stored: &Stored, curves: &Curves) -> Result<GpuSeries, Error> {
    let mut series = GpuSeries::new();
    for (step, workload) in gpu_charted(curves) {
        let Some(key) = analysis
            .runs
            .iter()
            .find(|r| r.step == step && r.workload == workload)
            .and_then(curves::charted)
        else {
            continue;
        };
        for s in crate::analyze::samples_of(stored, &key).iter().rev() {
            let sampled_gpus =
                (s.sample.result.telemetry.as_ref()).is_some_and(|t| t.gpu_samples > 0);
            // `sim` and CPU runs have telemetry files without GPU lines: not read.
            if s.sample.metrics().is_none() || !sampled_gpus {
                continue;
            }
            let timeline = s.sample.gpu_timeline().map_err(Error::Store)?;
            if !timeline.is_empty() {
                series.insert((step, workload), timeline);
                break;
            }
        }
    }
    Ok(series)
}

/// Each figure as a chart; with `report`, drawn as `<stem>.<id>.png` and
/// `.svg` beside it (left untouched when they already show the same).
pub fn files(figures: &[Figure], report: Option<&Path>) -> Result<Vec<ChartFile>, Error> {
    figures
        .iter()
        .map(|f| {
            let svg = plot::svg(&f.plot);
            let png = match report {
                Some(report) => {
                    let stem = report.file_stem().unwrap_or_default().to_string_lossy();
                    let png = report.with_file_name(format!("{stem}.{}.png", f.id));
                    let svg_path = png.with_extension("svg");
                    if !drawn_of(&plot::digest(&f.plot), &svg_path, &png) {
                        // The SVG last: a chart killed between the two is drawn again.
                        write_file(&png, &plot::png(&f.plot))?;
                        write_file(&svg_path, svg.as_bytes())?;
                    }
                    png.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                }
                None => String::new(),
            };
            Ok(ChartFile {
                id: f.id.clone(),
                title: f.plot.title.clone(),
                png,
                svg,
                series: f.plot.series_names(),
            })
        })
        .collect()
}

/// Whether the chart files at `svg` and `png` both carry `digest`.
pub fn drawn_of(digest: &str, svg: &Path, png: &Path) -> bool {
    let svg_holds = crate::regular_file::read_to_string(svg)
        .is_ok_and(|text| chart::svg_digest(&text) == Some(digest));
    svg_holds
        && crate::regular_file::read(png).is_ok_and(|bytes| {
            chart::png_digest(std::io::Cursor::new(bytes)).as_deref() == Some(digest)
        })
}
