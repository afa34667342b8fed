//! Line and scatter charts (the curves of [`crate::analyze::curves`]):
//! panels side by side under one title, note and legend, one colour per
//! configuration, as SVG text or PNG bytes. (pure: no file I/O)
//!
//! The legend is a row above the panels, never inside one: whatever the
//! curves do, it covers no point. The SVG is drawn in layers: the frame
//! (titles, axes, legend), then each legend entry's series in a group of its
//! own (`<g class="series" data-series="N">`) with a hit area per point whose
//! `<title>` says its values, so a viewer can hide a series and read a point.

use std::fmt::Write;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::chart::{self, Drawing, FAMILY};

/// Width of one panel, in pixels.
const PANEL_WIDTH: u32 = 480;
/// Height of the chart, in pixels.
const HEIGHT: u32 = 520;
/// Title and note above the panels.
const HEADER: u32 = 64;
/// One row of the legend, under the header.
const LEGEND_ROW: u32 = 20;
/// The legend's swatch, and the space after it and after each entry.
const SWATCH: u32 = 14;
const SWATCH_GAP: u32 = 6;
const ENTRY_GAP: u32 = 22;
/// The title's and a panel's caption's font size, when they fit.
const TITLE_SIZE: f64 = 22.0;
const CAPTION_SIZE: f64 = 17.0;
/// The space a title leaves either side, and a panel's margin.
const TITLE_MARGIN: f64 = 16.0;
const PANEL_MARGIN: u32 = 12;
/// The radius of the area a point answers the pointer in, in the SVG.
const HIT_RADIUS: u32 = 7;
/// A point's label: its font size, and where it starts from the point.
const LABEL_SIZE: u32 = 11;
const LABEL_OFFSET: (i32, i32) = (5, -4);

/// Matplotlib's tab10: distinct, and readable by most colour-blind readers.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// A chart of one or more panels.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    pub title: String,
    /// What the numbers are (simulated, capped, imported, whose definitions),
    /// under the title; `None` for measured numbers under vLLM's definitions.
    pub note: Option<String>,
    pub panels: Vec<Panel>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub title: String,
    pub x_title: String,
    pub y_title: String,
    /// Whether the axes start at 0 (amounts read against none); else they
    /// span the data (a scatter whose points would crowd one corner).
    pub from_zero: bool,
    /// How the x axis places its values.
    pub x_scale: Scale,
    pub series: Vec<Series>,
}

/// How an axis places its values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
    /// By their base-2 logarithm, ticked at powers of 2: loads that span
    /// 1..=256, where a search's bisection crowds the few lowest.
    Log2,
}

impl Scale {
    /// Where `v` lies along the axis; NaN (not drawn) where the scale has no
    /// place for it (0 or less on a log scale).
    fn place(self, v: f64) -> f64 {
        match self {
            Self::Linear => v,
            Self::Log2 if v > 0.0 => v.log2(),
            Self::Log2 => f64::NAN,
        }
    }

    /// The value at place `at` along the axis: what its tick reads.
    fn value(self, at: f64) -> f64 {
        match self {
            Self::Linear => at,
            Self::Log2 => at.exp2(),
        }
    }
}

/// One line or set of markers. Points that are not finite are not drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend's text; `None` leaves it out of the legend.
    pub name: Option<String>,
    pub style: SeriesStyle,
    pub points: Vec<(f64, f64)>,
    /// A label beside each point (empty: none).
    pub labels: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SeriesStyle {
    /// The `n`th configuration's colour, a line through markers.
    Line(usize),
    /// The `n`th configuration's colour, markers alone.
    Markers(usize),
    /// The `n`th configuration's colour, a line alone (a distribution).
    Curve(usize),
    /// A thick dark line behind the others through a ring round each point
    /// (the frontier).
    Emphasis,
    /// A dark ring round each point alone (a search's largest passing load).
    Rings,
    /// A cross on each point alone (a search's smallest failing load).
    Crosses,
    /// A limit the points are held to (an SLO), a line across the panel.
    Threshold,
}

impl SeriesStyle {
    fn color(self) -> RGBColor {
        match self {
            Self::Line(n) | Self::Markers(n) | Self::Curve(n) => PALETTE[n % PALETTE.len()],
            Self::Emphasis => RGBColor(0x22, 0x22, 0x22),
            Self::Rings => RGBColor(0x11, 0x11, 0x11),
            Self::Crosses => RGBColor(0x44, 0x44, 0x44),
            Self::Threshold => RGBColor(0xb0, 0x00, 0x20),
        }
    }
}

/// What one drawing pass draws: everything (the PNG), the frame alone, or
/// the series of one legend entry alone (the SVG's layers).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Layer {
    All,
    Frame,
    Series(usize),
}

impl Layer {
    fn frame(self) -> bool {
        matches!(self, Self::All | Self::Frame)
    }

    /// Whether a series of legend entry `key` (none: not in the legend, so
    /// drawn with the frame) is drawn in this pass.
    fn shows(self, key: Option<usize>) -> bool {
        match (self, key) {
            (Self::All, _) => true,
            (Self::Frame, key) => key.is_none(),
            (Self::Series(n), Some(key)) => n == key,
            (Self::Series(_), None) => false,
        }
    }
}

/// A point of the SVG that answers the pointer: where it is drawn and what
/// its values are.
struct Hit {
    at: (i32, i32),
    text: String,
}

/// The plot as SVG text, its digest in a comment on the first line: the
/// frame, then one group per legend entry with its series and its points'
/// hit areas.
pub fn svg(plot: &Plot) -> String {
    let (frame, _) = layer_svg(plot, Layer::Frame);
    let frame = frame.trim_end().strip_suffix("</svg>").unwrap_or(&frame);
    let mut out = chart::svg_digest_line(plot);
    out.push_str(frame);
    for key in 0..plot.legend().len() {
        let (drawn, hits) = layer_svg(plot, Layer::Series(key));
        // The pass's own `<svg …>` line and its end: the group holds its elements.
        let elements = drawn
            .split_once('\n')
            .map_or("", |(_, rest)| rest)
            .trim_end()
            .strip_suffix("</svg>")
            .unwrap_or_default();
        let _ = write!(
            out,
            "<g class=\"series\" data-series=\"{key}\">\n{elements}"
        );
        for hit in hits {
            let _ = writeln!(
                out,
                "<circle class=\"hit\" cx=\"{}\" cy=\"{}\" r=\"{HIT_RADIUS}\" fill=\"#000\" \
                 fill-opacity=\"0\"><title>{}</title></circle>",
                hit.at.0,
                hit.at.1,
                chart::escape_xml(&hit.text)
            );
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}

/// One pass of `plot` as an SVG document, and the hit areas of its points.
fn layer_svg(plot: &Plot, layer: Layer) -> (String, Vec<Hit>) {
    let mut hits = Vec::new();
    let drawn = chart::svg_body(plot.size(), |root| plot.draw_layer(root, layer, &mut hits));
    (drawn, hits)
}

/// The plot as PNG bytes (8-bit RGB), its digest in a text chunk.
pub fn png(plot: &Plot) -> Vec<u8> {
    chart::png_of(plot)
}

/// The digest both files of `plot` carry.
pub fn digest(plot: &Plot) -> String {
    chart::digest_of(plot)
}

impl Drawing for Plot {
    fn size(&self) -> (u32, u32) {
        let panels = u32::try_from(self.panels.len().max(1)).unwrap_or(u32::MAX);
        ((PANEL_WIDTH * panels).max(960), HEIGHT)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        self.draw_layer(root, Layer::All, &mut Vec::new())
    }
}

impl Plot {
    /// The legend's entries: each colour once, named as the first panel
    /// that shows it names it (a distribution's `n` is its first panel's).
    pub fn legend(&self) -> Vec<(&str, RGBColor)> {
        let mut entries: Vec<(&str, RGBColor)> = Vec::new();
        for series in self.panels.iter().flat_map(|p| &p.series) {
            let color = series.style.color();
            if let Some(name) = &series.name
                && !entries.iter().any(|(_, c)| *c == color)
            {
                entries.push((name.as_str(), color));
            }
        }
        entries
    }

    /// The legend's names, in the order of the SVG's series groups.
    pub fn series_names(&self) -> Vec<String> {
        self.legend().iter().map(|(n, _)| (*n).to_owned()).collect()
    }

    /// Which legend entry `series` belongs to (by its colour).
    fn key(&self, series: &Series) -> Option<usize> {
        let color = series.style.color();
        self.legend().iter().position(|(_, c)| *c == color)
    }

    fn draw_layer<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        layer: Layer,
        hits: &mut Vec<Hit>,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let (width, _) = self.size();
        let legend = self.legend();
        let rows = legend_rows(root, &legend, width)?;
        if layer.frame() {
            root.fill(&WHITE)?;
            let middle = i32::try_from(width / 2).unwrap_or(0);
            let room = f64::from(width) - 2.0 * TITLE_MARGIN;
            let centre = |size| {
                TextStyle::from((FAMILY, size).into_font()).pos(Pos::new(HPos::Center, VPos::Top))
            };
            let (title, size) = chart::fit_text(&self.title, TITLE_SIZE, 12.0, room);
            root.draw(&Text::new(title, (middle, 10), centre(size)))?;
            if let Some(note) = &self.note {
                let (note, size) = chart::fit_text(note, 14.0, 10.0, room);
                root.draw(&Text::new(
                    note,
                    (middle, 40),
                    centre(size).color(&RGBColor(0x80, 0x30, 0x30)),
                ))?;
            }
            draw_legend(root, &rows, width)?;
        }
        let rows = u32::try_from(rows.len()).unwrap_or(u32::MAX);
        let (_, body) = root.split_vertically(HEADER + rows * LEGEND_ROW);
        let areas = body.split_evenly((1, self.panels.len().max(1)));
        for (panel, area) in self.panels.iter().zip(&areas) {
            let keys: Vec<Option<usize>> = panel.series.iter().map(|s| self.key(s)).collect();
            draw_panel(area, panel, &keys, layer, hits)?;
        }
        root.present()?;
        Ok(())
    }
}

/// One legend entry as laid out: its name, colour and width.
type LegendEntry<'a> = (&'a str, RGBColor, u32);

/// The legend's entries in centred rows under the header, as many as
/// `width` needs.
fn legend_rows<'a, DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    entries: &[(&'a str, RGBColor)],
    width: u32,
) -> Result<Vec<Vec<LegendEntry<'a>>>, DrawingAreaErrorKind<DB::ErrorType>> {
    let style = legend_style();
    let mut sized = Vec::new();
    for (name, color) in entries {
        let (w, _) = root.estimate_text_size(name, &style)?;
        sized.push((*name, *color, SWATCH + SWATCH_GAP + w));
    }
    // Rows filled left to right within the chart's width less a margin.
    let room = width.saturating_sub(2 * ENTRY_GAP);
    let mut rows: Vec<Vec<LegendEntry<'a>>> = Vec::new();
    for entry in sized {
        match rows.last_mut() {
            Some(row) if row.iter().map(|e| e.2 + ENTRY_GAP).sum::<u32>() + entry.2 <= room => {
                row.push(entry)
            }
            _ => rows.push(vec![entry]),
        }
    }
    Ok(rows)
}

fn legend_style() -> TextStyle<'static> {
    TextStyle::from((FAMILY, 12).into_font()).pos(Pos::new(HPos::Left, VPos::Center))
}

/// Draws the legend's `rows` under the header.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    rows: &[Vec<LegendEntry<'_>>],
    width: u32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let px = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
    for (r, row) in (0u32..).zip(rows) {
        let gaps = u32::try_from(row.len().saturating_sub(1)).unwrap_or(u32::MAX);
        let used = row.iter().map(|e| e.2).sum::<u32>() + ENTRY_GAP * gaps;
        let mut x = px(width.saturating_sub(used) / 2);
        let y = px(HEADER + r * LEGEND_ROW + LEGEND_ROW / 2 - 4);
        for (name, color, w) in row {
            root.draw(&Rectangle::new(
                [(x, y - 5), (x + px(SWATCH), y + 5)],
                color.filled(),
            ))?;
            root.draw(&Text::new(
                *name,
                (x + px(SWATCH + SWATCH_GAP), y),
                legend_style(),
            ))?;
            x += px(*w + ENTRY_GAP);
        }
    }
    Ok(())
}

/// The range an axis shows: from 0 (or from the smallest value, when not
/// `from_zero`) to the largest finite value, plus a margin.
fn axis_range(values: impl Iterator<Item = f64>, from_zero: bool) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    if from_zero {
        let hi = hi.max(0.0);
        return 0.0..if hi > 0.0 { hi * 1.1 } else { 1.0 };
    }
    let margin = if hi > lo {
        (hi - lo) * 0.08
    } else {
        (hi.abs() * 0.1).max(1.0)
    };
    // Amounts that cannot go below 0 get no axis below it.
    let bottom = if lo >= 0.0 {
        (lo - margin).max(0.0)
    } else {
        lo - margin
    };
    bottom..(hi + margin)
}

fn finite((x, y): &(f64, f64)) -> bool {
    x.is_finite() && y.is_finite()
}

/// A value as a point's hover text shows it: four significant digits.
fn value_text(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{v:.digits$}")
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    keys: &[Option<usize>],
    layer: Layer,
    hits: &mut Vec<Hit>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let scale = panel.x_scale;
    // A point where the axes place it.
    let place = |&(x, y): &(f64, f64)| (scale.place(x), y);
    let points = || {
        panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(place).filter(finite))
    };
    // A log axis spans its values: its 0 is a load of 1, not of none.
    let x = axis_range(
        points().map(|p| p.0),
        panel.from_zero && scale == Scale::Linear,
    );
    let y = axis_range(points().map(|p| p.1), panel.from_zero);
    let x_ticks = match scale {
        // Ticks far enough apart for numbers of six digits.
        Scale::Linear => 6,
        // A tick at each power of 2 the axis spans (plotters' ticks step by 1, 2 or 5).
        Scale::Log2 => ((x.end - x.start).floor() as usize + 1).clamp(2, 10),
    };
    let room = f64::from(area.dim_in_pixel().0) - 2.0 * f64::from(PANEL_MARGIN);
    let (caption, size) = chart::fit_text(&panel.title, CAPTION_SIZE, 11.0, room);
    // Every pass lays the panel out alike; only the frame's shows its caption.
    let caption_color = if layer.frame() {
        BLACK.mix(1.0)
    } else {
        BLACK.mix(0.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(
            caption,
            TextStyle::from((FAMILY, size).into_font()).color(&caption_color),
        )
        .margin(PANEL_MARGIN)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)?;
    if layer.frame() {
        chart
            .configure_mesh()
            .x_desc(panel.x_title.as_str())
            .y_desc(panel.y_title.as_str())
            .axis_desc_style((FAMILY, 14))
            .label_style((FAMILY, 12))
            .x_labels(x_ticks)
            .x_label_formatter(&|v| chart::axis_number(&scale.value(*v)))
            .y_label_formatter(&|v| chart::axis_number(v))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.1))
            .draw()?;
    }
    let label_style = TextStyle::from((FAMILY, LABEL_SIZE).into_font())
        .color(&RGBColor(0x33, 0x33, 0x33))
        .pos(Pos::new(HPos::Left, VPos::Bottom));
    let labelled = placed_labels(panel, |p| {
        let placed = place(p);
        finite(&placed).then(|| chart.backend_coord(&placed))
    });
    // The emphasis and thresholds first, so the configurations' markers stay on top.
    let mut order: Vec<(&Series, Option<usize>, &Vec<bool>)> = panel
        .series
        .iter()
        .zip(keys.iter().copied())
        .zip(&labelled)
        .map(|((s, key), labelled)| (s, key, labelled))
        .filter(|(_, key, _)| layer.shows(*key))
        .collect();
    order.sort_by_key(|(s, _, _)| {
        !matches!(
            s.style,
            SeriesStyle::Emphasis
                | SeriesStyle::Rings
                | SeriesStyle::Crosses
                | SeriesStyle::Threshold
        )
    });
    for (series, key, labelled) in order {
        let color = series.style.color();
        let shown: Vec<(f64, f64)> = series.points.iter().map(place).filter(finite).collect();
        match series.style {
            SeriesStyle::Line(_) => {
                chart.draw_series(shown.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
                chart.draw_series(std::iter::once(PathElement::new(
                    shown.clone(),
                    color.stroke_width(2),
                )))?;
            }
            SeriesStyle::Curve(_) => {
                chart.draw_series(std::iter::once(PathElement::new(
                    shown.clone(),
                    color.stroke_width(2),
                )))?;
            }
            SeriesStyle::Markers(_) => {
                chart.draw_series(shown.iter().map(|p| Circle::new(*p, 5, color.filled())))?;
            }
            SeriesStyle::Emphasis => {
                // A ring round each point: a frontier of one point is no line.
                chart.draw_series(
                    shown
                        .iter()
                        .map(|p| Circle::new(*p, 9, color.stroke_width(2))),
                )?;
                chart.draw_series(std::iter::once(PathElement::new(
                    shown.clone(),
                    color.mix(0.35).stroke_width(6),
                )))?;
            }
            SeriesStyle::Crosses => {
                chart.draw_series(
                    shown
                        .iter()
                        .map(|p| Cross::new(*p, 7, color.stroke_width(2))),
                )?;
            }
            SeriesStyle::Rings => {
                chart.draw_series(
                    shown
                        .iter()
                        .map(|p| Circle::new(*p, 9, color.stroke_width(2))),
                )?;
            }
            SeriesStyle::Threshold => {
                chart.draw_series(std::iter::once(PathElement::new(
                    shown.clone(),
                    color.stroke_width(2),
                )))?;
            }
        }
        chart.draw_series(
            series
                .points
                .iter()
                .zip(&series.labels)
                .zip(labelled)
                .filter(|(_, shown)| **shown)
                .map(|((p, l), _)| {
                    EmptyElement::at(place(p))
                        + Text::new(l.clone(), LABEL_OFFSET, label_style.clone())
                }),
        )?;
        // A distribution's hundred points answer as its line; a threshold as its label.
        if key.is_some() && !matches!(series.style, SeriesStyle::Curve(_)) {
            for (i, p) in series
                .points
                .iter()
                .enumerate()
                .filter(|(_, p)| finite(&place(p)))
            {
                hits.push(Hit {
                    at: chart.backend_coord(&place(p)),
                    text: hit_text(series, panel, i, *p),
                });
            }
        }
    }
    Ok(())
}

/// Which points' labels are drawn, per series: each but one that would
/// overlap a label drawn before it (points at one place, a saturated load's,
/// would print their labels over each other; the hover still tells them).
/// Each series' last label goes first (a frontier names its configuration
/// there), then the others from the last back. Decided from every series,
/// so each pass of the SVG's layers draws the same labels.
fn placed_labels(panel: &Panel, at: impl Fn(&(f64, f64)) -> Option<(i32, i32)>) -> Vec<Vec<bool>> {
    let mut candidates: Vec<(bool, usize, usize)> = Vec::new();
    for (s, series) in panel.series.iter().enumerate() {
        let last = series.points.len().min(series.labels.len());
        for i in (0..last).rev() {
            candidates.push((i + 1 != last, s, i));
        }
    }
    // Stable: the last labels first, each series in its order.
    candidates.sort_by_key(|(later, _, _)| *later);
    let mut placed: Vec<Vec<bool>> = panel
        .series
        .iter()
        .map(|s| vec![false; s.labels.len()])
        .collect();
    let mut taken: Vec<[f64; 4]> = Vec::new();
    for (_, s, i) in candidates {
        let (point, label) = (&panel.series[s].points[i], &panel.series[s].labels[i]);
        let Some((x, y)) = at(point).filter(|_| !label.is_empty()) else {
            continue;
        };
        let left = f64::from(x + LABEL_OFFSET.0);
        let bottom = f64::from(y + LABEL_OFFSET.1);
        let box_ = [
            left,
            bottom - f64::from(LABEL_SIZE),
            left + chart::text_width(label, f64::from(LABEL_SIZE)),
            bottom,
        ];
        let overlaps =
            |t: &[f64; 4]| t[0] < box_[2] && box_[0] < t[2] && t[1] < box_[3] && box_[1] < t[3];
        if !taken.iter().any(overlaps) {
            taken.push(box_);
            placed[s][i] = true;
        }
    }
    placed
}

/// What a point's hover says: its series and label, then its two values
/// under their axes' titles.
fn hit_text(series: &Series, panel: &Panel, i: usize, (x, y): (f64, f64)) -> String {
    let mut head = series.name.clone().unwrap_or_default();
    if let Some(label) = series.labels.get(i).filter(|l| !l.is_empty()) {
        head = format!("{head} · {label}");
    }
    format!(
        "{head}\n{}: {}\n{}: {}",
        panel.x_title,
        value_text(x),
        panel.y_title,
        value_text(y)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Plot {
        let panel = |title: &str| Panel {
            title: title.to_owned(),
            x_title: "Total TPS (tok/s)".to_owned(),
            y_title: "ms".to_owned(),
            from_zero: true,
            x_scale: Scale::Linear,
            series: vec![
                Series {
                    name: Some("tuned (vLLM 0.11.0)".to_owned()),
                    style: SeriesStyle::Line(0),
                    points: vec![(500.0, 20.0), (1600.0, 40.0), (f64::NAN, 1.0)],
                    labels: vec!["c=1".into(), "c=4".into(), "c=16".into()],
                },
                Series {
                    name: None,
                    style: SeriesStyle::Emphasis,
                    points: vec![(100.0, 10.0), (200.0, 5.0)],
                    labels: Vec::new(),
                },
            ],
        };
        Plot {
            title: "curves: latency vs throughput".to_owned(),
            note: Some("simulated: predicts no GPU".to_owned()),
            panels: vec![panel("TTFT"), panel("TPOT"), panel("E2E latency")],
        }
    }

    /// The contents of the SVG's `<text>` elements, in order.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("</text>")
            .filter_map(|chunk| chunk.rsplit_once("<text").map(|(_, t)| t))
            .filter_map(|t| t.split_once('>').map(|(_, body)| body.trim()))
            .collect()
    }

    #[test]
    fn svg_shows_title_note_panels_legend_and_point_labels() {
        let svg = svg(&sample());
        assert_eq!(chart::svg_digest(&svg), Some(digest(&sample()).as_str()));
        let texts = texts(&svg);
        for text in [
            "curves: latency vs throughput",
            "simulated: predicts no GPU",
            "TTFT",
            "TPOT",
            "E2E latency",
            "c=4",
            "tuned (vLLM 0.11.0)",
        ] {
            assert!(texts.contains(&text), "no {text} in {texts:?}");
        }
        // The NaN point is neither drawn nor labelled; the legend is the first panel's only.
        assert!(!texts.contains(&"c=16") && !svg.contains("NaN"));
        assert_eq!(
            texts
                .iter()
                .filter(|t| **t == "tuned (vLLM 0.11.0)")
                .count(),
            1
        );
    }

    #[test]
    fn png_is_wide_enough_for_its_panels_and_carries_the_digest() {
        let bytes = png(&sample());
        let decoder = ::png::Decoder::new(std::io::Cursor::new(&bytes));
        let reader = decoder.read_info().unwrap();
        assert_eq!(
            (reader.info().width, reader.info().height),
            (3 * PANEL_WIDTH, HEIGHT)
        );
        assert_eq!(
            chart::png_digest(std::io::Cursor::new(bytes)),
            Some(digest(&sample()))
        );
        let mut one = sample();
        one.panels.truncate(1);
        assert_eq!(one.size(), (960, HEIGHT));
    }

    #[test]
    fn a_panel_without_finite_points_still_draws() {
        let mut plot = sample();
        for s in &mut plot.panels[0].series {
            s.points = vec![(f64::NAN, f64::INFINITY)];
        }
        assert!(texts(&svg(&plot)).contains(&"TTFT"));
    }

    #[test]
    fn titles_shrink_or_are_cut_to_fit_the_chart() {
        let mut plot = sample();
        let loads: Vec<String> = (1..=40).map(|c| format!("chat@c={c}")).collect();
        plot.title = format!(
            "curves: latency vs throughput along concurrency, {}",
            loads.join(" · ")
        );
        plot.panels[0].title = format!("Mean TTFT of {}", loads.join(" "));
        let svg = svg(&plot);
        let (width, _) = plot.size();
        // Each title's text at its font size fits inside the chart (or its panel).
        for (start, room) in [
            ("curves: latency", f64::from(width) - 2.0 * TITLE_MARGIN),
            ("Mean TTFT of", f64::from(PANEL_WIDTH - 2 * PANEL_MARGIN)),
        ] {
            let element = svg
                .split("<text")
                .find(|t| {
                    t.split_once('>')
                        .is_some_and(|(_, b)| b.trim().starts_with(start))
                })
                .unwrap_or_else(|| panic!("no {start} in {svg}"));
            let size: f64 = element
                .split("font-size=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .and_then(|n| n.parse().ok())
                .unwrap();
            let text = element
                .split_once('>')
                .unwrap()
                .1
                .split('<')
                .next()
                .unwrap()
                .trim();
            // The SVG writes plotters' size / 1.24.
            let drawn = chart::text_width(&text.replace("&amp;", "&"), size * 1.24);
            assert!(
                drawn <= room + 1.0,
                "{text:?} at {size} is {drawn} px wide, room {room}"
            );
            assert!(text.ends_with('…'), "{text}");
        }
        // A title that fits keeps its size.
        assert_eq!(
            chart::fit_text("TTFT", 17.0, 11.0, 400.0),
            ("TTFT".to_owned(), 17.0)
        );
    }

    #[test]
    fn a_scatter_not_from_zero_spans_its_points() {
        let r = axis_range([120.0, 300.0, f64::NAN].into_iter(), false);
        assert!(
            r.start > 100.0 && r.start < 120.0 && r.end > 300.0 && r.end < 320.0,
            "{r:?}"
        );
        assert_eq!(axis_range([120.0, 300.0].into_iter(), true).start, 0.0);
        // Amounts near 0 get no negative axis; one value gets a span round it.
        assert_eq!(axis_range([1.0, 500.0].into_iter(), false).start, 0.0);
        let one = axis_range([50.0].into_iter(), false);
        assert!(one.start < 50.0 && one.end > 50.0);
        assert_eq!(axis_range(std::iter::empty(), false), 0.0..1.0);
    }

    /// A panel of one series through `points`, each labelled `c=<x>`.
    fn labelled_panel(points: &[(f64, f64)], x_scale: Scale) -> Plot {
        let mut plot = sample();
        plot.panels.truncate(1);
        plot.panels[0].x_scale = x_scale;
        plot.panels[0].series = vec![Series {
            name: Some("vllm".to_owned()),
            style: SeriesStyle::Line(0),
            points: points.to_vec(),
            labels: points.iter().map(|(x, _)| format!("c={x}")).collect(),
        }];
        plot
    }

    #[test]
    fn labels_that_would_overlap_are_drawn_once_the_last_first() {
        // A saturated load: c=64, 128 and 256 at one place, c=1 far off.
        let points = [
            (100.0, 10.0),
            (9000.0, 50.0),
            (9001.0, 50.2),
            (9002.0, 50.1),
        ];
        let plot = labelled_panel(&points, Scale::Linear);
        let texts: Vec<String> = texts(&svg(&plot)).iter().map(|t| (*t).to_owned()).collect();
        for (label, drawn) in [
            ("c=100", true),
            ("c=9000", false),
            ("c=9001", false),
            ("c=9002", true),
        ] {
            assert_eq!(
                texts.contains(&label.to_owned()),
                drawn,
                "{label} in {texts:?}"
            );
        }
        // Every point still answers the pointer with its own values.
        assert_eq!(svg(&plot).matches("<circle class=\"hit\"").count(), 4);
        let placed = placed_labels(&plot.panels[0], |(x, y)| {
            Some(((x / 10.0) as i32, (-y * 10.0) as i32))
        });
        assert_eq!(placed, [vec![true, false, false, true]]);
    }

    #[test]
    fn a_log2_axis_is_ticked_at_powers_of_two_and_hovers_with_the_load() {
        let points = [
            (1.0, 100.0),
            (256.0, 12.0),
            (8.0, 100.0),
            (12.0, 56.0),
            (0.0, 1.0),
        ];
        let plot = labelled_panel(&points, Scale::Log2);
        let svg = svg(&plot);
        let texts = texts(&svg);
        for tick in ["1", "2", "4", "8", "16", "32", "64", "128", "256"] {
            assert!(texts.contains(&tick), "no tick {tick} in {texts:?}");
        }
        // Half a power of 2 is no tick; a load of 0 has no place on a log axis.
        assert!(!texts.iter().any(|t| t.starts_with("1.41")), "{texts:?}");
        assert!(!texts.contains(&"c=0"));
        assert_eq!(svg.matches("<circle class=\"hit\"").count(), 4);
        assert!(
            svg.contains("vllm · c=12\nTotal TPS (tok/s): 12.00\nms: 56.00"),
            "{svg}"
        );
        // Placed by the logarithm: 8 lies as far right of 1 as 256 of 8.
        let cx = |load: &str| -> f64 {
            let hit = svg
                .split("<circle class=\"hit\"")
                .find(|h| h.contains(&format!("· c={load}\n")))
                .unwrap();
            hit.split("cx=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        let (one, eight, top) = (cx("1"), cx("8"), cx("256"));
        assert!(
            ((eight - one) * 5.0 / 3.0 - (top - eight)).abs() <= 2.0,
            "{one} {eight} {top}"
        );
    }

    #[test]
    fn svg_groups_each_series_with_its_points_values_escaped() {
        let mut plot = sample();
        plot.panels[0].series[0].name = Some("<script>x</script> & \"q\"".to_owned());
        let svg = svg(&plot);
        assert!(svg.starts_with("<!-- perfpipe-chart "));
        assert_eq!(chart::svg_digest(&svg), Some(digest(&plot).as_str()));
        // One group per legend entry, after the frame, and the document closed once.
        assert_eq!(plot.series_names().len(), 1);
        assert_eq!(
            svg.matches("<g class=\"series\" data-series=\"0\">")
                .count(),
            1
        );
        assert_eq!(svg.matches("<svg").count(), 1);
        assert!(
            svg.trim_end().ends_with("</g>\n</svg>"),
            "{}",
            &svg[svg.len() - 200..]
        );
        // Two finite points in each of three panels answer the pointer.
        let hits: Vec<&str> = svg.split("<circle class=\"hit\"").skip(1).collect();
        assert_eq!(hits.len(), 6, "{svg}");
        assert!(hits[1].contains(
            "<title>&lt;script&gt;x&lt;/script&gt; &amp; &quot;q&quot; · c=4\nTotal TPS (tok/s): 1600\nms: 40.00</title>"
        ), "{}", hits[1]);
        assert!(!svg.contains("<script"));
        // The PNG is the same picture as before: series drawn once, no hit areas.
        assert_eq!(texts(&svg).iter().filter(|t| **t == "c=4").count(), 3);
    }
}
