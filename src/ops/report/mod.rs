//! `perfpipe report`: the report from the store or the published numbers,
//! and the markdown report with its chart that `run` writes too.

pub mod figures;
pub mod rendered;
pub mod stored;

use std::path::{Path, PathBuf};

use super::plan::plan_and_index;
use super::user_files::{write_file, write_unless_held};
use super::workspace::stored_runtimes::choose_stored;
use super::{Error, Loaded, LockMode, Selection, Shell, load};
use crate::analyze::{self, Analysis, RunRecord, Scope, Stored};
use crate::report::chart::{self, ChartData, ChartGroup};
use crate::spec::Objective;

/// How a report is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Markdown for people.
    Md,
    /// One self-contained HTML page, charts inline, for a browser.
    Html,
    /// JSON for other tools.
    Json,
    /// CSV, one number per line.
    Csv,
}

/// A rendered report, and the file it is still to be written to (HTML, JSON
/// and CSV are written after they are printed; markdown, with its charts, before).
#[derive(Debug)]
pub struct Rendered {
    pub text: String,
    pub to_write: Option<PathBuf>,
    /// What it was made from, for the caller to drop.
    pub made_from: MadeFrom,
}

/// What a report was made from: the experiment with its runs and lockfile,
/// the plan, the samples and the analysis, some 10,000 of each for a large
/// study. Returned rather than dropped, so that a command about to exit can
/// leave them to the exit (freeing them one by one took a tenth of a
/// `report` of 10,000 runs).
#[derive(Debug)]
pub struct MadeFrom {
    pub loaded: Loaded,
    pub plan: Option<crate::plan::Plan>,
    pub stored: Stored,
    pub analysis: Analysis,
}

/// The report of `selection`'s runs from the store, or of the published
/// numbers the experiment expects; a markdown report to `out` is written
/// with its chart beside it.
pub fn report(
    selection: &Selection,
    published: bool,
    format: Format,
    out: Option<&Path>,
    shell: &dyn Shell,
) -> Result<Rendered, Error> {
    let mut common = selection.clone();
    let mut loaded = load(&common, LockMode::Read)?;
    let mut stored = Stored::new();
    let mut planned = None;
    let records = if published {
        analyze::from_expectations(&loaded.spec)
    } else {
        if let Some(chosen) = choose_stored(&loaded, &common, "report", shell)? {
            if (Some(loaded.runtime), common.max_prompts) != (chosen.runtime, chosen.max_prompts) {
                loaded = load(&chosen, LockMode::Read)?;
            }
            common = chosen;
        }
        let common = &common;
        let (plan, index) = plan_and_index(&loaded, common)?;
        stored = stored::load(&plan, index)?;
        let records = analyze::from_store(&plan, &stored);
        planned = Some(plan);
        records
    };
    let mut analysis = analyze(&loaded, records);
    if !published {
        analysis.scope = Some(scope(&loaded, &common));
    }
    let text = match format {
        // A written report gets its chart beside it; printed alone, there is none to link.
        Format::Md => match out {
            Some(out) => write_markdown(&loaded, &analysis, &mut stored, out, false)?,
            None => crate::report::markdown(&loaded.spec, &analysis, &Default::default()),
        },
        // Its charts are inline: none is drawn beside it.
        Format::Html => {
            let charts = charts(&loaded, &analysis, &mut stored, None)?;
            crate::report::html(&loaded.spec, &analysis, &charts)
        }
        Format::Json => crate::report::json(&loaded.spec, &analysis),
        Format::Csv => crate::report::csv(&analysis),
    };
    let to_write = out.filter(|_| format != Format::Md).map(Path::to_owned);
    Ok(Rendered {
        text,
        to_write,
        made_from: MadeFrom {
            loaded,
            plan: planned,
            stored,
            analysis,
        },
    })
}

/// Whose results a report from the store shows: for its title block.
pub fn scope(loaded: &Loaded, common: &Selection) -> Scope {
    Scope {
        runtime: loaded.runtime.name().to_owned(),
        max_prompts: common.max_prompts,
    }
}

pub fn analyze(loaded: &Loaded, records: Vec<RunRecord>) -> Analysis {
    let mut analysis = analyze::analyze(&loaded.spec, records);
    analysis.searches = analyze::search::ranked(&loaded.searches);
    analysis
}

/// Writes the markdown report at `path` with its charts beside it, and the
/// HTML report as `<path stem>.html` with `html`; returns the markdown.
/// The journals the charts show are read into `stored`.
pub fn write_markdown(
    loaded: &Loaded,
    analysis: &Analysis,
    stored: &mut Stored,
    path: &Path,
    html: bool,
) -> Result<String, Error> {
    let journals = stored::charted_journal_paths(stored, &analysis.runs);
    let digest = rendered::digest(
        format_args!(
            "{:?}\n{analysis:?}\n{}\nhtml: {html}",
            loaded.spec,
            path.display()
        ),
        &journals,
    );
    if let Some(text) = rendered::unchanged(path, &digest) {
        return Ok(text);
    }
    let charts = charts(loaded, analysis, stored, Some(path))?;
    let text = crate::report::markdown(&loaded.spec, analysis, &charts);
    write_unless_held(path, |out| out.write_all(text.as_bytes()))?;
    let mut written: Vec<PathBuf> = charts
        .conclusion
        .iter()
        .chain(&charts.figures)
        .filter(|c| !c.png.is_empty())
        .map(|c| path.with_file_name(&c.png))
        .flat_map(|png| [png.with_extension("svg"), png])
        .collect();
    if html {
        // Written to its file as it is made: the page of a report of many
        // runs is megabytes.
        write_unless_held(&path.with_extension("html"), |out| {
            crate::report::write_html_page(out, &loaded.spec, &text, &charts)
        })?;
        written.push(path.with_extension("html"));
    }
    rendered::record(path, &written, &digest)?;
    Ok(text)
}

/// Every chart of the report; with `report`, drawn beside it.
fn charts(
    loaded: &Loaded,
    analysis: &Analysis,
    stored: &mut Stored,
    report: Option<&Path>,
) -> Result<crate::report::Charts, Error> {
    let figures = figures::of(loaded, analysis, stored)?;
    Ok(crate::report::Charts {
        conclusion: write_chart(loaded, analysis, report)?,
        figures: figures::files(&figures, report)?,
    })
}

/// Draws the conclusion's chart, as `<report stem>.png` and `.svg` beside
/// `report` when there is one; `None` without a conclusion.
fn write_chart(
    loaded: &Loaded,
    analysis: &Analysis,
    report: Option<&Path>,
) -> Result<Option<crate::report::ChartFile>, Error> {
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
    let svg_text = chart::svg(&data);
    let mut png_name = String::new();
    if let Some(report) = report {
        let svg = report.with_extension("svg");
        let png = report.with_extension("png");
        if !figures::drawn_of(&chart::digest(&data), &svg, &png) {
            // The SVG last: a chart killed between the two is drawn again.
            write_file(&png, &chart::png(&data))?;
            write_file(&svg, svg_text.as_bytes())?;
        }
        png_name = png
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
    }
    Ok(Some(crate::report::ChartFile {
        id: "conclusion".to_owned(),
        title: data.title,
        png: png_name,
        svg: svg_text,
        series: Vec::new(),
    }))
}
