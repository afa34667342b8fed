//! Line and scatter charts (the curves of [`crate::analyze::curves`]):
//! panels side by side under one title, note and legend, one colour per
//! configuration, as SVG text or PNG bytes. (pure: no file I/O)
//!
//! The legend is a row above the panels, never inside one: whatever the
//! curves do, it covers no point.

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
    pub series: Vec<Series>,
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
    /// A thick dark line behind the others (the frontier).
    Emphasis,
}

impl SeriesStyle {
    fn color(self) -> RGBColor {
        match self {
            Self::Line(n) | Self::Markers(n) | Self::Curve(n) => PALETTE[n % PALETTE.len()],
            Self::Emphasis => RGBColor(0x22, 0x22, 0x22),
        }
    }
}

/// The plot as SVG text, its digest in a comment on the first line.
pub fn svg(plot: &Plot) -> String {
    chart::svg_of(plot)
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
        root.fill(&WHITE)?;
        let (width, _) = self.size();
        let centre = |size| {
            TextStyle::from((FAMILY, size).into_font()).pos(Pos::new(HPos::Center, VPos::Top))
        };
        let middle = i32::try_from(width / 2).unwrap_or(0);
        root.draw(&Text::new(self.title.as_str(), (middle, 10), centre(22.0)))?;
        if let Some(note) = &self.note {
            root.draw(&Text::new(
                note.as_str(),
                (middle, 40),
                centre(14.0).color(&RGBColor(0x80, 0x30, 0x30)),
            ))?;
        }
        let rows = draw_legend(root, &self.legend(), width)?;
        let (_, body) = root.split_vertically(HEADER + rows * LEGEND_ROW);
        let areas = body.split_evenly((1, self.panels.len().max(1)));
        for (panel, area) in self.panels.iter().zip(&areas) {
            draw_panel(area, panel)?;
        }
        root.present()?;
        Ok(())
    }
}

impl Plot {
    /// The legend's entries: each colour once, named as the first panel
    /// that shows it names it (a distribution's `n` is its first panel's).
    fn legend(&self) -> Vec<(&str, RGBColor)> {
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
}

/// Draws `entries` in centred rows under the header, as many as `width`
/// needs; returns how many rows it took.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    entries: &[(&str, RGBColor)],
    width: u32,
) -> Result<u32, DrawingAreaErrorKind<DB::ErrorType>> {
    let style = TextStyle::from((FAMILY, 12).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let mut sized = Vec::new();
    for (name, color) in entries {
        let (w, _) = root.estimate_text_size(name, &style)?;
        sized.push((*name, *color, SWATCH + SWATCH_GAP + w));
    }
    // Rows filled left to right within the chart's width less a margin.
    let room = width.saturating_sub(2 * ENTRY_GAP);
    let mut rows: Vec<Vec<(&str, RGBColor, u32)>> = Vec::new();
    for entry in sized {
        match rows.last_mut() {
            Some(row) if row.iter().map(|e| e.2 + ENTRY_GAP).sum::<u32>() + entry.2 <= room => {
                row.push(entry)
            }
            _ => rows.push(vec![entry]),
        }
    }
    let px = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
    for (r, row) in (0u32..).zip(&rows) {
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
                style.clone(),
            ))?;
            x += px(*w + ENTRY_GAP);
        }
    }
    Ok(u32::try_from(rows.len()).unwrap_or(u32::MAX))
}

/// The range an axis shows: from 0 to the largest finite value plus a margin.
fn axis_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let hi = values.filter(|v| v.is_finite()).fold(0.0_f64, f64::max);
    0.0..if hi > 0.0 { hi * 1.1 } else { 1.0 }
}

fn finite((x, y): &(f64, f64)) -> bool {
    x.is_finite() && y.is_finite()
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let points = || {
        panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().filter(|p| finite(p)))
    };
    let x = axis_range(points().map(|p| p.0));
    let y = axis_range(points().map(|p| p.1));
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FAMILY, 17))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(panel.x_title.as_str())
        .y_desc(panel.y_title.as_str())
        .axis_desc_style((FAMILY, 14))
        .label_style((FAMILY, 12))
        .x_label_formatter(&|v| chart::axis_number(v))
        .y_label_formatter(&|v| chart::axis_number(v))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.1))
        .draw()?;
    let label_style = TextStyle::from((FAMILY, 11).into_font())
        .color(&RGBColor(0x33, 0x33, 0x33))
        .pos(Pos::new(HPos::Left, VPos::Bottom));
    // The emphasis first, so the configurations' markers stay on top of it.
    let mut order: Vec<&Series> = panel.series.iter().collect();
    order.sort_by_key(|s| s.style != SeriesStyle::Emphasis);
    for series in order {
        let color = series.style.color();
        let shown: Vec<(f64, f64)> = series.points.iter().copied().filter(finite).collect();
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
        }
        let labelled = series.points.iter().zip(&series.labels);
        chart.draw_series(
            labelled
                .filter(|(p, l)| finite(p) && !l.is_empty())
                .map(|(p, l)| {
                    EmptyElement::at(*p) + Text::new(l.clone(), (5, -4), label_style.clone())
                }),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Plot {
        let panel = |title: &str| Panel {
            title: title.to_owned(),
            x_title: "Total TPS (tok/s)".to_owned(),
            y_title: "ms".to_owned(),
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
}
