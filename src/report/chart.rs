//! The bar chart at the top of a published study: total TPS (or, for a
//! latency study, mean latency) per workload, baseline vs optimized, as SVG text or PNG bytes. (pure: no file I/O)
//!
//! One drawing routine, generic over the plotters backend, draws both. Text is
//! laid out with the vendored DejaVu Sans (`assets/fonts`), registered with
//! plotters once per process: plotters sizes the caption, axes and legend with
//! it for either backend (unregistered, drawing fails with `FontUnavailable`,
//! SVG too); the SVG writes `font-family="sans-serif"` text for the viewer's
//! font to draw, and the PNG's text is rasterized from it by `GlyphFix`.

use std::ops::Range;
use std::sync::{Once, OnceLock};

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// Width of the chart, in pixels.
const WIDTH: u32 = 960;
/// Height of the chart, in pixels.
const HEIGHT: u32 = 540;

const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
pub(super) const FAMILY: &str = "sans-serif";

const BASELINE_COLOR: RGBColor = RGBColor(0x4c, 0x72, 0xb0);
const OPTIMIZED_COLOR: RGBColor = RGBColor(0xdd, 0x84, 0x52);

/// Where, within one group's unit-wide slot, the two bars stand.
const BASELINE_BAR: (f64, f64) = (0.12, 0.49);
const OPTIMIZED_BAR: (f64, f64) = (0.51, 0.88);

/// One group of bars.
#[derive(Debug)]
pub struct ChartGroup {
    pub label: String,
    pub baseline: f64,
    pub optimized: f64,
}

/// What the chart shows.
#[derive(Debug)]
pub struct ChartData {
    pub title: String,
    /// What the bars measure, with its unit: "Total TPS (tok/s)".
    pub y_title: String,
    pub baseline: String,
    pub optimized: String,
    pub groups: Vec<ChartGroup>,
}

/// What a drawn chart is of: the data and the perfpipe that drew it. Both
/// files carry it (see [`svg_digest`], [`png_digest`]), so a chart of
/// unchanged results is not drawn again.
pub fn digest(data: &ChartData) -> String {
    digest_of(data)
}

/// The digest of any drawing's data (see [`digest`]).
pub(super) fn digest_of(data: &impl std::fmt::Debug) -> String {
    // `{:?}` writes every f64 exactly (shortest round-trip form).
    let text = format!("perfpipe {} {data:?}", env!("CARGO_PKG_VERSION"));
    crate::digest::sha256_hex(text.as_bytes())
}

/// Something drawn with plotters into either backend: the bar chart here,
/// the curves of `plot`.
pub(super) trait Drawing: std::fmt::Debug {
    fn size(&self) -> (u32, u32);

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>;
}

impl Drawing for ChartData {
    fn size(&self) -> (u32, u32) {
        (WIDTH, HEIGHT)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        draw(root, self)
    }
}

/// The PNG's text keyword, and the SVG comment's prefix, holding the digest.
const DIGEST_KEYWORD: &str = "perfpipe-chart";

/// The digest an SVG this module drew carries (its first line).
pub fn svg_digest(svg: &str) -> Option<&str> {
    svg.lines()
        .next()?
        .strip_prefix("<!-- ")?
        .strip_suffix(" -->")?
        .strip_prefix(DIGEST_KEYWORD)?
        .strip_prefix(' ')
}

/// The digest a PNG this module drew carries (a `tEXt` chunk before its
/// pixels, so only the file's head is read).
pub fn png_digest(png: impl std::io::BufRead + std::io::Seek) -> Option<String> {
    let reader = ::png::Decoder::new(png).read_info().ok()?;
    reader
        .info()
        .uncompressed_latin1_text
        .iter()
        .find(|t| t.keyword == DIGEST_KEYWORD)
        .map(|t| t.text.clone())
}

/// The chart as SVG text, its digest in a comment on the first line.
///
/// A value that is not finite (NaN, ±∞) draws no bar and no label.
pub fn svg(data: &ChartData) -> String {
    svg_of(data)
}

/// A drawing as SVG text, its digest in a comment on the first line.
pub(super) fn svg_of(data: &impl Drawing) -> String {
    let mut out = svg_digest_line(data);
    out.push_str(&svg_body(data.size(), |root| data.draw(root)));
    out
}

/// The first line of a drawing's SVG: the comment holding its digest.
pub(super) fn svg_digest_line(data: &impl std::fmt::Debug) -> String {
    format!("<!-- {DIGEST_KEYWORD} {} -->\n", digest_of(data))
}

/// What `draw` draws on an SVG canvas of `size`, as an SVG document.
pub(super) fn svg_body<F>(size: (u32, u32), draw: F) -> String
where
    F: FnOnce(
        &DrawingArea<SVGBackend<'_>, Shift>,
    ) -> Result<(), DrawingAreaErrorKind<std::io::Error>>,
{
    register_font();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        draw(&root).expect("drawing a chart into a string cannot fail");
    }
    out
}

/// `text` as SVG or HTML text or an attribute's value: every character that
/// could start or end markup as an entity.
pub(super) fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The chart as PNG bytes (8-bit RGB).
///
/// A value that is not finite (NaN, ±∞) draws no bar and no label.
pub fn png(data: &ChartData) -> Vec<u8> {
    png_of(data)
}

/// A drawing as PNG bytes (8-bit RGB), its digest in a text chunk.
pub(super) fn png_of(data: &impl Drawing) -> Vec<u8> {
    register_font();
    let (width, height) = data.size();
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    {
        let backend = BitMapBackend::with_buffer(&mut pixels, (width, height));
        let root = GlyphFix(backend).into_drawing_area();
        data.draw(&root)
            .expect("drawing a chart into a buffer cannot fail");
    }
    let mut out = Vec::new();
    let mut encoder = ::png::Encoder::new(&mut out, width, height);
    encoder.set_color(::png::ColorType::Rgb);
    encoder.set_depth(::png::BitDepth::Eight);
    encoder
        .add_text_chunk(DIGEST_KEYWORD.into(), digest_of(data))
        .expect("a text chunk of ASCII hex is valid");
    let mut writer = encoder
        .write_header()
        .expect("writing a PNG header into memory cannot fail");
    writer
        .write_image_data(&pixels)
        .expect("the buffer holds exactly width x height RGB pixels");
    writer
        .finish()
        .expect("finishing a PNG in memory cannot fail");
    out
}

/// Makes the vendored font the one plotters finds for `sans-serif`; without
/// it, any text fails with `FontUnavailable`.
fn register_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        if plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_err() {
            panic!("the vendored DejaVu Sans is a valid TrueType font");
        }
    });
}

/// The vendored font, for `GlyphFix`.
fn font() -> &'static ab_glyph::FontRef<'static> {
    static PARSED: OnceLock<ab_glyph::FontRef<'static>> = OnceLock::new();
    PARSED.get_or_init(|| {
        ab_glyph::FontRef::try_from_slice(FONT).expect("the vendored DejaVu Sans is a valid font")
    })
}

/// A bitmap backend whose text rasterizes glyphs where the layout puts them.
///
/// plotters 0.3.7 draws ab_glyph text with each glyph's ink at the left edge
/// of its advance, dropping the glyph's left side bearing (it renders
/// "vLLM  defaults" and "tunedbatching"), and its baseline half the font size
/// below the top of the text box. This draws each glyph at its pen position with its bearing,
/// from the same font and scale as plotters' layout (so anchoring and sizes
/// are unchanged), with descenders reaching the bottom of the text box.
/// Everything else goes to the bitmap backend as it is.
struct GlyphFix<'a>(BitMapBackend<'a>);

type BackendResult<'a> =
    Result<(), DrawingErrorKind<<BitMapBackend<'a> as DrawingBackend>::ErrorType>>;

impl<'a> DrawingBackend for GlyphFix<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }

    fn ensure_prepared(&mut self) -> BackendResult<'a> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> BackendResult<'a> {
        self.0.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> BackendResult<'a> {
        self.0.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> BackendResult<'a> {
        self.0.draw_line(from, to, style)
    }

    /// A wide line as one quad per segment and a disc at each joint (a round
    /// join). plotters' own outline of a wide path mitres every joint without
    /// a limit on the inner side, so a path that turns back on itself (a
    /// curve whose throughput falls as its load grows) drew a spike to the
    /// edge of the picture that the SVG, stroked by the viewer, lacks.
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> BackendResult<'a> {
        let width = style.stroke_width();
        if width <= 1 {
            return self.0.draw_path(path, style);
        }
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        let color = style.color();
        let points: Vec<BackendCoord> = path.into_iter().collect();
        let half = f64::from(width) / 2.0;
        for pair in points.windows(2) {
            if let Some(quad) = segment_quad(pair[0], pair[1], half) {
                self.0.fill_polygon(quad, &color)?;
            }
        }
        if points.len() > 2 {
            for joint in &points[1..points.len() - 1] {
                self.0.draw_circle(*joint, width / 2, &color, true)?;
            }
        }
        Ok(())
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> BackendResult<'a> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> BackendResult<'a> {
        self.0.blit_bitmap(pos, size, src)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> BackendResult<'a> {
        use ab_glyph::{Font, ScaleFont};

        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        // Anchoring as plotters' default `draw_text` does, from the same layout box.
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let anchor = style.anchor();
        let dx = match anchor.h_pos {
            HPos::Left => 0,
            HPos::Center => -width / 2,
            HPos::Right => -width,
        } - min_x;
        let dy = match anchor.v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        } - min_y;
        let transform = style.transform();
        let (w, h) = self.get_size();

        let font = font().as_scaled(style.size() as f32);
        let baseline = height as f32 + font.descent();
        let mut pen = 0.0_f32;
        let mut previous = None;
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(previous) = previous {
                pen += font.kern(previous, id);
            }
            previous = Some(id);
            let glyph = id.with_scale_and_position(font.scale(), ab_glyph::point(pen, baseline));
            pen += font.h_advance(id);
            let Some(outline) = font.outline_glyph(glyph) else {
                continue; // a space
            };
            let ink = outline.px_bounds();
            let mut result = Ok(());
            outline.draw(|x, y, coverage| {
                if result.is_err() || coverage <= 0.0 {
                    return;
                }
                let (x, y) = transform.transform(
                    ink.min.x as i32 + x as i32 + dx,
                    ink.min.y as i32 + y as i32 + dy,
                );
                let (x, y) = (pos.0 + x, pos.1 + y);
                if x >= 0 && y >= 0 && (x as u32) < w && (y as u32) < h {
                    let alpha = color.alpha * f64::from(coverage.min(1.0));
                    result = self.0.draw_pixel((x, y), BackendColor { alpha, ..color });
                }
            });
            result?;
        }
        Ok(())
    }
}

/// The four corners of the band `half` pixels either side of the segment
/// `from`–`to`; none for a segment of no length.
fn segment_quad(from: BackendCoord, to: BackendCoord, half: f64) -> Option<[BackendCoord; 4]> {
    let (dx, dy) = (f64::from(to.0 - from.0), f64::from(to.1 - from.1));
    let length = dx.hypot(dy);
    if length == 0.0 {
        return None;
    }
    let (nx, ny) = (-dy / length * half, dx / length * half);
    let at = |(x, y): BackendCoord, sign: f64| {
        (
            (f64::from(x) + sign * nx).round() as i32,
            (f64::from(y) + sign * ny).round() as i32,
        )
    };
    Some([at(from, 1.0), at(to, 1.0), at(to, -1.0), at(from, -1.0)])
}

/// How wide `text` is at font `size`, in pixels, as the vendored font lays
/// it out (the PNG draws that font; a viewer's sans-serif is near it).
pub(super) fn text_width(text: &str, size: f64) -> f64 {
    use ab_glyph::{Font, ScaleFont};

    let font = font().as_scaled(1.0);
    let em: f64 = text
        .chars()
        .map(|c| f64::from(font.h_advance(font.glyph_id(c))))
        .sum();
    em * size
}

/// `text` and the font size it is drawn at to fit `room` pixels: `size`
/// when it fits, else smaller down to `smallest`, else cut with an ellipsis.
pub(super) fn fit_text(text: &str, size: f64, smallest: f64, room: f64) -> (String, f64) {
    let wide = text_width(text, size);
    if wide <= room {
        return (text.to_owned(), size);
    }
    let shrunk = (size * room / wide).max(smallest);
    if text_width(text, shrunk) <= room {
        return (text.to_owned(), shrunk);
    }
    let mut cut: String = text.to_owned();
    while !cut.is_empty() && text_width(&format!("{cut}…"), shrunk) > room {
        cut.pop();
    }
    (format!("{}…", cut.trim_end()), shrunk)
}

/// The value's bar is drawn (and labelled) only when it is finite.
fn drawn(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
}

/// The y axis: from 0 (or below, for a negative value) to the largest value
/// plus headroom for the value labels and the legend.
fn y_range(groups: &[ChartGroup]) -> (f64, f64) {
    let values = groups
        .iter()
        .flat_map(|g| [g.baseline, g.optimized])
        .filter_map(drawn);
    let (lo, hi) = values.fold((0.0_f64, 0.0_f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let top = if hi > 0.0 { hi * 1.3 } else { 1.0 };
    let bottom = if lo < 0.0 { lo * 1.15 } else { 0.0 };
    (bottom, top)
}

/// A value label's font size: the largest, up to 15, at which every label is
/// narrower than the distance between two bars' middles (so neighbours'
/// labels do not touch), but not below 7 (many groups of long numbers may).
fn value_label_size(groups: &[ChartGroup], slot_px: f64) -> f64 {
    use ab_glyph::{Font, ScaleFont};

    let font = font().as_scaled(1.0);
    let widest = groups
        .iter()
        .flat_map(|g| [g.baseline, g.optimized])
        .filter_map(drawn)
        .map(|v| {
            format!("{v:.2}")
                .chars()
                .map(|c| f64::from(font.h_advance(font.glyph_id(c))))
                .sum::<f64>()
        })
        .fold(0.0_f64, f64::max);
    if widest <= 0.0 {
        return 15.0;
    }
    let center = |(left, right): (f64, f64)| (left + right) / 2.0;
    let between_bars = (center(OPTIMIZED_BAR) - center(BASELINE_BAR)) * slot_px;
    ((between_bars - 6.0) / widest).clamp(7.0, 15.0)
}

/// A y-axis tick: whole numbers without decimals, others with at most three.
pub(super) fn axis_number(v: &f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The x axis: one unit-wide slot per group, `i..i + 1` for group `i`, with a
/// tick (and so a label) at the middle of each slot.
struct Slots(usize);

impl Ranged for Slots {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.range()).map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (0..self.0).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> Range<f64> {
        0.0..self.0.max(1) as f64
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &ChartData,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let n = data.groups.len();
    let (y_lo, y_hi) = y_range(&data.groups);
    let x = Slots(n);

    let mut chart = ChartBuilder::on(root)
        .caption(&data.title, (FAMILY, 24))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x, y_lo..y_hi)?;

    let label_of = |v: &f64| {
        let i = v.floor();
        if i >= 0.0 && (i as usize) < n && (v - i - 0.5).abs() < 1e-9 {
            data.groups[i as usize].label.clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n.max(1))
        .x_label_formatter(&label_of)
        .x_label_style((FAMILY, 15))
        .y_desc(data.y_title.as_str())
        .axis_desc_style((FAMILY, 16))
        .y_label_style((FAMILY, 13))
        .y_label_formatter(&axis_number)
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .draw()?;

    let slot_px = f64::from(chart.plotting_area().dim_in_pixel().0) / n.max(1) as f64;
    let value_style =
        TextStyle::from((FAMILY, value_label_size(&data.groups, slot_px)).into_font())
            .color(&BLACK);
    let series = [
        (
            &data.baseline,
            BASELINE_COLOR,
            BASELINE_BAR,
            (|g: &ChartGroup| g.baseline) as fn(&ChartGroup) -> f64,
        ),
        (
            &data.optimized,
            OPTIMIZED_COLOR,
            OPTIMIZED_BAR,
            |g: &ChartGroup| g.optimized,
        ),
    ];
    for (name, color, (left, right), value) in series {
        let bars: Vec<(f64, f64)> = data
            .groups
            .iter()
            .enumerate()
            .filter_map(|(i, g)| drawn(value(g)).map(|v| (i as f64, v)))
            .collect();
        chart
            .draw_series(
                bars.iter().map(|&(i, v)| {
                    Rectangle::new([(i + left, 0.0), (i + right, v)], color.filled())
                }),
            )?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
        // The label sits above a bar (below one that goes negative).
        chart.draw_series(bars.iter().map(|&(i, v)| {
            let (dy, vpos) = if v < 0.0 {
                (4, VPos::Top)
            } else {
                (-4, VPos::Bottom)
            };
            EmptyElement::at((i + (left + right) / 2.0, v))
                + Text::new(
                    format!("{v:.2}"),
                    (0, dy),
                    value_style.pos(Pos::new(HPos::Center, vpos)),
                )
        }))?;
    }

    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FAMILY, 15))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .draw()?;

    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ChartData {
        ChartData {
            title: "Total TPS per workload, baseline vs optimized".to_string(),
            y_title: "Total TPS (tok/s)".to_string(),
            baseline: "vLLM defaults".to_string(),
            optimized: "tuned batching".to_string(),
            groups: vec![
                ChartGroup {
                    label: "chat".to_string(),
                    baseline: 1234.5,
                    optimized: 1987.654,
                },
                ChartGroup {
                    label: "summarize".to_string(),
                    baseline: 812.0,
                    optimized: 1003.126,
                },
                ChartGroup {
                    label: "code".to_string(),
                    baseline: 99.999,
                    optimized: f64::NAN,
                },
            ],
        }
    }

    /// The contents of the SVG's `<text>` elements, in order.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("</text>")
            .filter_map(|chunk| chunk.rsplit_once("<text").map(|(_, t)| t))
            .filter_map(|t| t.split_once('>').map(|(_, body)| body.trim()))
            .collect()
    }

    /// Labels that look like a value with two decimals.
    fn value_labels(svg: &str) -> Vec<&str> {
        texts(svg)
            .into_iter()
            .filter(|t| {
                t.split_once('.').is_some_and(|(int, frac)| {
                    !int.is_empty()
                        && int
                            .trim_start_matches('-')
                            .bytes()
                            .all(|b| b.is_ascii_digit())
                        && frac.len() == 2
                        && frac.bytes().all(|b| b.is_ascii_digit())
                })
            })
            .collect()
    }

    #[test]
    fn both_files_carry_the_digest_of_what_they_show() {
        let png_of = |data: &ChartData| png_digest(std::io::Cursor::new(png(data)));
        assert_eq!(png_of(&sample()), Some(digest(&sample())));
        let mut other = sample();
        other.groups[0].baseline += 0.001;
        assert_ne!(digest(&other), digest(&sample()));
        assert_eq!(png_of(&other), Some(digest(&other)));
        assert_eq!(svg_digest(&svg(&other)), Some(digest(&other).as_str()));
        assert_eq!(
            png_digest(std::io::Cursor::new(b"not a png".to_vec())),
            None
        );
        assert_eq!(svg_digest("<svg>"), None);
    }

    #[test]
    fn svg_shows_title_legend_axis_workloads_and_values() {
        let svg = svg(&sample());
        assert_eq!(svg_digest(&svg), Some(digest(&sample()).as_str()));
        let drawing = svg.split_once('\n').unwrap().1;
        assert!(
            drawing.starts_with("<svg"),
            "{}",
            &svg[..svg.len().min(200)]
        );
        let texts = texts(&svg);
        for text in [
            "Total TPS per workload, baseline vs optimized",
            "vLLM defaults",
            "tuned batching",
            "Total TPS (tok/s)",
            "chat",
            "summarize",
            "code",
        ] {
            assert!(texts.contains(&text), "no text {text:?} in {texts:?}");
        }
        assert_eq!(
            value_labels(&svg),
            ["1234.50", "812.00", "100.00", "1987.65", "1003.13"],
            "{texts:?}"
        );
    }

    #[test]
    fn nan_value_draws_no_bar_and_no_label() {
        let svg = svg(&sample());
        assert!(!svg.contains("NaN"));
        let fill = |c: RGBColor| format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        // One rectangle per drawn bar plus one legend swatch: the NaN draws none.
        assert_eq!(svg.matches(&fill(BASELINE_COLOR)).count(), 3 + 1, "{svg}");
        assert_eq!(svg.matches(&fill(OPTIMIZED_COLOR)).count(), 2 + 1, "{svg}");
    }

    #[test]
    fn svg_escapes_markup_in_names() {
        let mut data = sample();
        data.title = "A & B <fast>".to_string();
        let svg = svg(&data);
        assert!(svg.contains("A &amp; B &lt;fast&gt;"));
        assert!(!svg.contains("<fast>"));
    }

    /// The PNG's pixels: width, height and RGB bytes.
    fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let decoder = ::png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().expect("a valid PNG");
        let mut buf = vec![0; reader.output_buffer_size().expect("a sane size")];
        let info = reader.next_frame(&mut buf).expect("one frame");
        assert_eq!(info.color_type, ::png::ColorType::Rgb);
        assert_eq!(info.bit_depth, ::png::BitDepth::Eight);
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    #[test]
    fn png_is_a_960x540_picture_with_both_series_colours() {
        let bytes = png(&sample());
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
        let (w, h, pixels) = decode(&bytes);
        assert_eq!((w, h), (960, 540));
        let rgb: Vec<(u8, u8, u8)> = pixels.chunks_exact(3).map(|p| (p[0], p[1], p[2])).collect();
        let count = |c: RGBColor| rgb.iter().filter(|&&p| p == (c.0, c.1, c.2)).count();
        // Bars are solid blocks: many thousands of pixels of each series' colour.
        assert!(count(BASELINE_COLOR) > 5_000, "{}", count(BASELINE_COLOR));
        assert!(count(OPTIMIZED_COLOR) > 5_000, "{}", count(OPTIMIZED_COLOR));
        // Text was rasterized: dark pixels exist (title, labels, axes).
        let dark = rgb
            .iter()
            .filter(|&&(r, g, b)| u32::from(r) + u32::from(g) + u32::from(b) < 150)
            .count();
        assert!(dark > 1_000, "{dark}");
        // The top-left corner is the white background.
        assert_eq!(rgb[0], (255, 255, 255));
    }

    #[test]
    fn nan_bar_leaves_its_slot_empty_in_png() {
        let mut data = sample();
        let with = png(&data);
        data.groups[2].baseline = f64::NAN;
        let without = png(&data);
        let (_, _, a) = decode(&with);
        let (_, _, b) = decode(&without);
        let blue = |px: &[u8]| {
            px.chunks_exact(3)
                .filter(|p| {
                    (p[0], p[1], p[2]) == (BASELINE_COLOR.0, BASELINE_COLOR.1, BASELINE_COLOR.2)
                })
                .count()
        };
        assert!(blue(&b) < blue(&a));
    }

    #[test]
    fn empty_and_degenerate_data_still_draw() {
        let mut data = sample();
        data.groups.clear();
        assert!(svg(&data).contains("Total TPS per workload"));
        assert!(png(&data).starts_with(b"\x89PNG"));
        data.groups.push(ChartGroup {
            label: "only".to_string(),
            baseline: f64::NAN,
            optimized: f64::INFINITY,
        });
        let svg = svg(&data);
        assert!(svg.contains("only"));
        assert!(!svg.contains("inf"));
    }

    #[test]
    fn png_text_keeps_each_glyphs_side_bearing() {
        register_font();
        // A lone full stop, centred on x = 50: its ink sits in the middle of
        // its advance, so it is centred too. plotters' own ab_glyph drawing
        // puts the ink at the left of the advance, ~4 px left of here.
        let (w, h) = (100u32, 60u32);
        let mut pixels = vec![255u8; (w * h * 3) as usize];
        {
            let root =
                GlyphFix(BitMapBackend::with_buffer(&mut pixels, (w, h))).into_drawing_area();
            let style =
                TextStyle::from((FAMILY, 48).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
            root.draw(&Text::new(".", (50, 30), style)).unwrap();
        }
        let inked: Vec<u32> = pixels
            .chunks_exact(3)
            .enumerate()
            .filter(|(_, p)| p[0] < 128)
            .map(|(i, _)| i as u32 % w)
            .collect();
        assert!(!inked.is_empty());
        let (min, max) = (inked.iter().min().unwrap(), inked.iter().max().unwrap());
        let middle = f64::from(min + max) / 2.0;
        assert!((middle - 50.0).abs() <= 1.5, "ink spans x {min}..={max}");
    }

    #[test]
    fn a_wide_line_turning_back_draws_no_spike_in_png() {
        register_font();
        // A curve whose throughput falls back as its load grows: each
        // segment nearly reverses the one before. plotters' mitred outline
        // reached the picture's left edge from here.
        let (w, h) = (200u32, 200u32);
        let mut pixels = vec![255u8; (w * h * 3) as usize];
        {
            let root =
                GlyphFix(BitMapBackend::with_buffer(&mut pixels, (w, h))).into_drawing_area();
            let path = vec![(100, 150), (140, 150), (60, 151), (140, 150), (140, 150)];
            root.draw(&PathElement::new(
                path,
                ShapeStyle::from(&RED).stroke_width(6),
            ))
            .unwrap();
        }
        let red: Vec<(u32, u32)> = pixels
            .chunks_exact(3)
            .enumerate()
            .filter(|(_, p)| p[0] > 200 && p[1] < 80)
            .map(|(i, _)| (i as u32 % w, i as u32 / w))
            .collect();
        let xs = red.iter().map(|p| p.0);
        let ys = red.iter().map(|p| p.1);
        // The band stays within a stroke's width of the path's points.
        assert!(
            xs.clone().min() >= Some(56) && xs.max() <= Some(144),
            "{red:?}"
        );
        assert!(
            ys.clone().min() >= Some(146) && ys.max() <= Some(155),
            "{red:?}"
        );
        assert!(red.len() > 400, "{}", red.len());
    }

    #[test]
    fn value_labels_shrink_to_fit_between_bars() {
        let group = |v: f64| ChartGroup {
            label: String::new(),
            baseline: v,
            optimized: v,
        };
        assert_eq!(value_label_size(&[group(12.5)], 800.0), 15.0);
        // "21111.10" is about 4.1 em-heights wide; neighbouring bars' middles
        // are 0.39 of a slot apart.
        let long = [group(21111.1)];
        let size = value_label_size(&long, 150.0);
        assert!(size > 11.0 && size < 14.0, "{size}");
        assert_eq!(value_label_size(&long, 84.0), 7.0);
        assert_eq!(value_label_size(&[group(f64::NAN)], 10.0), 15.0);
    }
}
