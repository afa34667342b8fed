//! What the markdown report writes inside its lines. Text from outside
//! perfpipe (a title, a step name, a model id, a page's cells, an error) is
//! escaped so that it stays text: markdown renders inline HTML, links and
//! images, and the HTML report is made from the markdown. The only markup
//! the report writes in a line is its own, made here from a [`Mark`] and
//! [`LINE_BREAK`], never taken from the text it shows.

/// The background the published pages give a change in a table cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// More throughput, or faster.
    Gain,
    /// Less throughput.
    Loss,
    /// Slower, or requests that failed.
    Slower,
    /// A row the page skipped: lower than the one before.
    Skipped,
}

impl Mark {
    pub const ALL: [Mark; 4] = [Mark::Gain, Mark::Loss, Mark::Slower, Mark::Skipped];

    fn colour(self) -> &'static str {
        match self {
            Mark::Gain => "lightgreen",
            Mark::Loss => "#fbcaca",
            Mark::Slower => "#ffd6d6",
            Mark::Skipped => "yellow",
        }
    }

    /// The opening tag, as the published pages write it.
    pub fn open(self) -> String {
        format!("<span style=\"background-color:{};\">", self.colour())
    }

    /// `markdown` (already escaped) with this background.
    pub fn wrap(self, markdown: &str) -> String {
        format!("{}{markdown}{CLOSE}", self.open())
    }
}

/// The end of a [`Mark`].
pub const CLOSE: &str = "</span>";

/// A line break inside a table cell.
pub const LINE_BREAK: &str = "<br>";

/// Whether `html` is a tag the report writes itself: a [`Mark`]'s opening
/// tag, its end, or a line break, exactly.
pub fn is_own_tag(html: &str) -> bool {
    html == CLOSE || html == LINE_BREAK || Mark::ALL.iter().any(|m| html == m.open())
}

/// Outside `text` as markdown text, in a table cell or not: the characters
/// that would start markup are backslash-escaped: `<` (inline HTML, an
/// autolink), `[` and `]` (a link, an image), `&` before what could be an
/// entity, `|` (a cell's end) and `\` itself; a line break, which would end
/// the line, is a space. Emphasis and code spans stay as a page wrote them:
/// they only format, and inside a code span nothing is markup. A backtick
/// that would open a span the text does not close is escaped too, so that it
/// cannot pair with one of the report's own code spans later in the line.
pub fn text(text: &str) -> String {
    let escape_backticks = !code_spans_close(text);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' if escape_backticks => out.push_str("\\`"),
            '\\' | '<' | '[' | ']' | '|' => {
                out.push('\\');
                out.push(c);
            }
            '&' if chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '#') =>
            {
                out.push_str("\\&");
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Whether every run of backticks in `text` opens a code span that a later
/// run of the same length closes, or is one that closes, as markdown pairs
/// them.
fn code_spans_close(text: &str) -> bool {
    let runs: Vec<usize> = text
        .split(|c| c != '`')
        .map(str::len)
        .filter(|n| *n > 0)
        .collect();
    let mut i = 0;
    while i < runs.len() {
        match runs[i + 1..].iter().position(|n| *n == runs[i]) {
            Some(j) => i += j + 2,
            None => return false,
        }
    }
    true
}

/// Outside `text` as a code span outside a table: fenced by more backticks
/// than it holds in a row, so no backtick in it ends the span.
pub fn code(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    let text = text.replace(['\n', '\r'], " ");
    let fence = "`".repeat(longest_run(&text, '`') + 1);
    // A space keeps a backtick at either end from joining the fence; one
    // space each side is taken off again by markdown.
    let spaced = text.starts_with(' ') && text.ends_with(' ') && !text.trim().is_empty();
    let pad = if text.starts_with('`') || text.ends_with('`') || spaced {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// As [`code`], in a table cell, where a `|` would end the cell even inside
/// a code span unless escaped.
pub fn cell_code(text: &str) -> String {
    code(&text.replace('|', "\\|"))
}

/// Outside `text` as a fenced code block of `language`: fenced by more
/// backticks than any line of it starts with, so no line of it ends the block.
pub fn code_block(language: &str, text: &str) -> String {
    let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
    format!("{fence}{language}\n{text}\n{fence}")
}

/// The most `c`s in a row in `text`.
fn longest_run(text: &str, c: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for x in text.chars() {
        run = if x == c { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

#[cfg(test)]
mod tests {
    use pulldown_cmark::{Event, Options, Parser, Tag};

    use super::*;

    /// What markdown makes of `line`: its events other than paragraphs'.
    fn events(line: &str) -> Vec<Event<'_>> {
        Parser::new_ext(line, Options::ENABLE_TABLES)
            .filter(|e| !matches!(e, Event::Start(Tag::Paragraph) | Event::End(_)))
            .collect()
    }

    /// The text markdown shows for `line`, or what else it made.
    fn shown(line: &str) -> String {
        let mut out = String::new();
        for event in events(line) {
            match event {
                Event::Text(t) | Event::Code(t) => out.push_str(&t),
                other => panic!("{line:?} made {other:?}"),
            }
        }
        out
    }

    #[test]
    fn outside_text_stays_text() {
        let hostile = "Tiny <span style=\"background-color:red\" onfocus=\"alert(1)\"> \
                       [x](javascript:alert(1)) ![i](http://127.0.0.1:9/t) <http://a> &lt; &#60; && \\ # |";
        assert_eq!(shown(&text(hostile)), hostile);
        // A backtick opens a code span, in which nothing is markup either.
        let coded = "`<img src=x>` `[x](y) \\` <b>";
        assert!(
            events(&text(coded))
                .iter()
                .all(|e| matches!(e, Event::Text(_) | Event::Code(_))),
            "{:?}",
            events(&text(coded))
        );
        assert_eq!(shown(&code(hostile)), hostile);
        assert_eq!(shown(&code("`a``")), "`a``");
        assert_eq!(shown(&code(" a ")), " a ");
        assert_eq!(shown(&text("a\nb")), "a b");
        // An unclosed backtick would pair with the report's next code span.
        let line = format!("{} {}", text("a ` b"), code("<img src=x>"));
        assert_eq!(shown(&line), "a ` b <img src=x>");
        assert_eq!(text("a ` b"), "a \\` b");
        assert_eq!(text("`vLLM` and ``x``"), "`vLLM` and ``x``");
    }

    #[test]
    fn a_code_block_holds_any_lines() {
        let command = "vllm serve 'm\n```\n<img src=x onerror=alert(1)>\n````'";
        let block = code_block("bash", command);
        let made: Vec<Event<'_>> = events(&block);
        assert!(
            matches!(made[0], Event::Start(Tag::CodeBlock(_))),
            "{made:?}"
        );
        assert!(
            made[1..].iter().all(|e| matches!(e, Event::Text(_))),
            "{made:?}"
        );
    }

    #[test]
    fn only_the_reports_own_tags_are_its_own() {
        for mark in Mark::ALL {
            assert!(is_own_tag(&mark.open()));
        }
        assert!(is_own_tag("</span>") && is_own_tag("<br>"));
        assert!(!is_own_tag("<span style=\"background-color:red\"><script>"));
        assert!(!is_own_tag(
            "<span style=\"background-color:lightgreen;\" onclick=\"x\">"
        ));
        assert!(!is_own_tag("<img src=x>"));
    }
}
