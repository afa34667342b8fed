//! The charts a written report links: the conclusion's bar chart and the
//! figures of its curves, each as the PNG the markdown links and the SVG the
//! HTML inlines. (pure)

use std::fmt::Write;

/// One chart drawn beside a report.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartFile {
    /// A name safe in an HTML id (`conclusion`, `latency-chat`, …).
    pub id: String,
    pub title: String,
    /// The PNG's file name, beside the report.
    pub png: String,
    /// The drawing itself.
    pub svg: String,
    /// The legend's entries, in the order of the SVG's series groups
    /// (`data-series="N"`), which the HTML lets a reader hide; none for a
    /// chart without them.
    pub series: Vec<String>,
}

/// Every chart of a written report; none for a printed one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Charts {
    pub conclusion: Option<ChartFile>,
    pub figures: Vec<ChartFile>,
}

impl Charts {
    /// Whether `png` is one of these charts' files: the one an image of the
    /// markdown links.
    pub fn by_png(&self, png: &str) -> Option<&ChartFile> {
        self.conclusion
            .iter()
            .chain(&self.figures)
            .find(|c| c.png == png)
    }
}

/// The "Charts" section: each figure linked. What its numbers are
/// (simulated, capped, …) the chart says under its own title, once.
pub(super) fn section(out: &mut String, charts: &Charts) {
    if charts.figures.is_empty() {
        return;
    }
    out.push_str("## Charts\n\n");
    for f in &charts.figures {
        let _ = writeln!(out, "![{}]({})\n", super::inline::text(&f.title), f.png);
    }
}
