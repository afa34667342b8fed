//! The text a diagnostic is shown against: the file with every long line
//! clipped to windows around the places diagnostics point at.
//!
//! miette pads each underline with a `{:width$}` format, and a width above
//! 65,535 panics, so a place far into a long line cannot be rendered as it
//! is; nor would a reader want a 70,000-column line printed. The clipped text
//! keeps every line break (so line numbers hold), and [`Excerpt`] reports the
//! column each place has in the file, not in the clipped text.

use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};

/// Lines longer than this (in bytes) are clipped.
const LONG_LINE: usize = 400;
/// Bytes kept on each side of a place on a clipped line.
const WINDOW: usize = 60;
/// Stands for the bytes left out of a clipped line.
const ELIDED: &str = "…";

/// The file as diagnostics show it.
#[derive(Debug)]
pub struct Excerpt {
    name: String,
    text: String,
    view: String,
    /// The kept runs of `text`, in order: where each starts in the view and
    /// in the text, and its length; between two runs the view has [`ELIDED`].
    runs: Vec<Run>,
}

#[derive(Debug, Clone, Copy)]
struct Run {
    view: usize,
    text: usize,
    len: usize,
}

impl Excerpt {
    /// `text`, with long lines clipped around the starts and ends of `spans`.
    pub fn new(name: &str, text: String, spans: &[SourceSpan]) -> Self {
        let mut places: Vec<usize> = spans
            .iter()
            .flat_map(|s| [s.offset(), s.offset() + s.len()])
            .map(|p| p.min(text.len()))
            .collect();
        places.sort_unstable();
        let kept = kept_ranges(&text, &places);
        let mut view = String::with_capacity(text.len().min(1 << 16));
        let mut runs = Vec::with_capacity(kept.len());
        let mut end = 0;
        for (start, stop) in kept {
            if start > end {
                view.push_str(ELIDED);
            }
            runs.push(Run {
                view: view.len(),
                text: start,
                len: stop - start,
            });
            view.push_str(&text[start..stop]);
            end = stop;
        }
        if end < text.len() {
            view.push_str(ELIDED);
        }
        Self {
            name: name.to_owned(),
            text,
            view,
            runs,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `span` of the file as a span of the view.
    pub fn to_view(&self, span: SourceSpan) -> SourceSpan {
        let start = self.view_offset(span.offset());
        let end = self.view_offset(span.offset() + span.len()).max(start);
        SourceSpan::from(start..end)
    }

    fn view_offset(&self, at: usize) -> usize {
        let i = self.runs.partition_point(|r| r.text <= at);
        match i.checked_sub(1).map(|i| self.runs[i]) {
            Some(run) if at <= run.text + run.len => run.view + (at - run.text),
            // Only places kept in a window are mapped; anything else is
            // shown at the mark after the run before it.
            Some(run) => run.view + run.len,
            None => 0,
        }
    }

    fn text_offset(&self, at: usize) -> usize {
        let i = self.runs.partition_point(|r| r.view <= at);
        match i.checked_sub(1).map(|i| self.runs[i]) {
            Some(run) => run.text + (at - run.view).min(run.len),
            None => 0,
        }
    }

    /// The 0-based byte column of `at` in the file, as miette counts it.
    fn text_column(&self, at: usize) -> usize {
        let line_start = self.text.as_bytes()[..at]
            .iter()
            .rposition(|b| matches!(b, b'\n' | b'\r'))
            .map_or(0, |i| i + 1);
        at - line_start
    }
}

/// The byte ranges of `text` kept in the view: every line up to
/// [`LONG_LINE`] whole, and of a longer one the windows around `places`
/// (sorted) on it. Line breaks are always kept.
fn kept_ranges(text: &str, places: &[usize]) -> Vec<(usize, usize)> {
    let mut kept: Vec<(usize, usize)> = Vec::new();
    let mut push = |start: usize, stop: usize| match kept.last_mut() {
        Some(last) if last.1 >= start => last.1 = last.1.max(stop),
        _ if start < stop => kept.push((start, stop)),
        _ => {}
    };
    let bytes = text.as_bytes();
    let mut line_start = 0;
    loop {
        let line_end = bytes[line_start..]
            .iter()
            .position(|b| matches!(b, b'\n' | b'\r'))
            .map_or(text.len(), |i| line_start + i);
        if line_end - line_start <= LONG_LINE {
            push(line_start, line_end);
        } else {
            let first = places.partition_point(|&p| p < line_start);
            for &p in places[first..].iter().take_while(|&&p| p <= line_end) {
                let from = text.floor_char_boundary(p.saturating_sub(WINDOW).max(line_start));
                let to = text.ceil_char_boundary((p + WINDOW).min(line_end));
                push(from, to);
            }
        }
        if line_end == text.len() {
            break;
        }
        push(line_end, line_end + 1);
        line_start = line_end + 1;
    }
    kept
}

impl SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let contents = self
            .view
            .read_span(span, context_lines_before, context_lines_after)?;
        let column = match contents.column() {
            0 => 0,
            _ => self.text_column(self.text_offset(contents.span().offset())),
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            contents.data(),
            *contents.span(),
            contents.line(),
            column,
            contents.line_count(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use miette::{GraphicalReportHandler, GraphicalTheme};

    use super::*;
    use crate::spec::SpecDiagnostic;
    use crate::spec::SpecErrors;

    fn render(text: &str, span: SourceSpan) -> String {
        let errors = SpecErrors::new(
            "f.kdl",
            text.to_owned(),
            vec![SpecDiagnostic::new(span, "bad", "here")],
        );
        let mut out = String::new();
        GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
            .render_report(&mut out, &errors)
            .unwrap();
        out
    }

    #[test]
    fn short_lines_are_shown_whole() {
        let text = "a\nbb cc\nd";
        let e = Excerpt::new("f", text.into(), &[SourceSpan::from(5..7)]);
        assert_eq!(e.view, text);
        assert_eq!(e.to_view(SourceSpan::from(5..7)), SourceSpan::from(5..7));
    }

    #[test]
    fn a_place_past_column_65535_renders_with_its_true_column() {
        let text = format!("x {{\n{}bogus 1\n}}\n", " ".repeat(70_000));
        let at = text.find("bogus").unwrap();
        let out = render(&text, SourceSpan::from(at..at + 5));
        assert!(out.contains("[f.kdl:2:70001]"), "{out}");
        assert!(out.contains("…"), "{out}");
        assert!(out.len() < 2_000, "{}", out.len());
    }

    #[test]
    fn tabs_and_wide_characters_on_a_long_line_render() {
        let text = format!("{}日本{}\t\n", "\t".repeat(70_000), "🦀".repeat(30_000));
        for at in [0, 70_000, 70_003, text.len() - 2, text.len()] {
            let at = text.floor_char_boundary(at);
            render(&text, SourceSpan::from(at..at));
        }
        render(&text, SourceSpan::from(3..text.len() - 1));
    }

    #[test]
    fn line_breaks_and_line_numbers_are_kept() {
        let text = format!("{}\r\n{}\rz", "a".repeat(1000), "b".repeat(1000));
        let at = text.find('z').unwrap();
        let e = Excerpt::new("f", text.clone(), &[SourceSpan::from(at..at + 1)]);
        assert_eq!(e.view, "…\r\n…\rz");
        let out = render(&text, SourceSpan::from(at..at + 1));
        assert!(out.contains("[f.kdl:3:1]"), "{out}");
    }
}
