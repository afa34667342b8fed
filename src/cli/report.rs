//! `perfpipe report`: the report from the store or the published numbers.

use std::path::Path;

use super::args::{ReportArgs, ReportFormat};
use super::plan::build_plan;
use super::{CliError, Loaded, LockMode, load, write_file, write_text};
use crate::analyze::{self, Analysis, RunRecord};
use crate::exit_code;
use crate::plan::Plan;
use crate::report::chart::{self, ChartData, ChartGroup};
use crate::spec::Objective;

pub fn report(args: &ReportArgs) -> Result<u8, CliError> {
    let common = args.common();
    let loaded = load(&common, LockMode::Read)?;
    let records = if args.published {
        analyze::from_expectations(&loaded.spec)
    } else {
        let plan = build_plan(&loaded, &common)?;
        stored_records(&loaded, &plan)?
    };
    let analysis = analyze(&loaded, records)?;
    let text = match args.format {
        // A written report gets its chart beside it; printed alone, there is none to link.
        ReportFormat::Md => match &args.out {
            Some(out) => write_markdown(&loaded, &analysis, out)?,
            None => crate::report::markdown(&loaded.spec, &analysis, None),
        },
        ReportFormat::Json => crate::report::json(&loaded.spec, &analysis),
        ReportFormat::Csv => crate::report::csv(&analysis),
    };
    out!("{text}");
    if let (Some(out), ReportFormat::Json | ReportFormat::Csv) = (&args.out, args.format) {
        write_text(out, &text)?;
    }
    Ok(exit_code::OK)
}

pub(super) fn stored_records(loaded: &Loaded, plan: &Plan) -> Result<Vec<RunRecord>, CliError> {
    let index = loaded
        .store
        .index(plan.runs.iter().map(|r| &r.key))
        .map_err(CliError::Store)?;
    Ok(analyze::from_store(plan, &index))
}

pub(super) fn analyze(loaded: &Loaded, records: Vec<RunRecord>) -> Result<Analysis, CliError> {
    analyze::analyze(&loaded.spec, records).map_err(CliError::Analysis)
}

/// Writes the markdown report at `path` with its chart beside it.
pub(super) fn write_markdown(
    loaded: &Loaded,
    analysis: &Analysis,
    path: &Path,
) -> Result<String, CliError> {
    let chart = write_chart(loaded, analysis, path)?;
    let text = crate::report::markdown(&loaded.spec, analysis, chart.as_deref());
    write_text(path, &text)?;
    Ok(text)
}

/// Draws the conclusion's chart as `<report stem>.png` and `.svg` beside the
/// report; returns the PNG's file name to link, or `None` without a conclusion.
fn write_chart(
    loaded: &Loaded,
    analysis: &Analysis,
    report: &Path,
) -> Result<Option<String>, CliError> {
    let Some(table) = &analysis.conclusion else {
        return Ok(None);
    };
    let spec = &loaded.spec;
    let seconds = |ms: Option<f64>| ms.map_or(f64::NAN, |ms| ms / 1000.0);
    let (what, y_title) = match spec.objective {
        Objective::Throughput => ("Total TPS", "Total TPS (tok/s)"),
        Objective::Latency => ("Mean latency", "Mean latency (s/req)"),
    };
    let data = ChartData {
        // The report's own title heads the page; a long one would not fit here.
        title: format!("{}: {what} per benchmark case", spec.name),
        y_title: y_title.to_owned(),
        baseline: format!("baseline ({})", table.baseline),
        optimized: format!("optimized ({})", table.optimized),
        groups: table
            .rows
            .iter()
            .map(|r| match spec.objective {
                Objective::Throughput => ChartGroup {
                    label: spec.workload_title(&r.workload).to_owned(),
                    baseline: r.base_tps * f64::from(table.baseline_replicas),
                    optimized: r.opt_tps * f64::from(table.optimized_replicas),
                },
                Objective::Latency => ChartGroup {
                    label: spec.workload_title(&r.workload).to_owned(),
                    baseline: seconds(r.base_latency_ms),
                    optimized: seconds(r.opt_latency_ms),
                },
            })
            .collect(),
    };
    write_file(&report.with_extension("svg"), chart::svg(&data).as_bytes())?;
    let png = report.with_extension("png");
    write_file(&png, &chart::png(&data))?;
    Ok(png.file_name().map(|n| n.to_string_lossy().into_owned()))
}
