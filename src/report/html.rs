//! The HTML report: the markdown report's sections as one self-contained
//! page (pulldown-cmark), every chart inline as SVG, tables sortable and
//! charts' points readable and series hideable by a small inline script,
//! and no reference to anything outside the file. All
//! text is escaped by pulldown-cmark; the only markup taken from the
//! markdown is the report's own tags ([`inline::is_own_tag`]), and a
//! Content-Security-Policy lets the page load nothing and run no script but
//! its own. (pure)

use std::borrow::Cow;
use std::collections::VecDeque;

use base64::Engine;
use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use sha2::{Digest, Sha256};

use super::Charts;
use super::inline;
use crate::analyze::Analysis;
use crate::spec::Spec;

const STYLE: &str = include_str!("html/style.css");
const SCRIPT: &str = concat!(include_str!("html/sort.js"), include_str!("html/charts.js"));

/// The report as one HTML file, the same sections as [`super::markdown`].
pub fn html(spec: &Spec, analysis: &Analysis, charts: &Charts) -> String {
    html_page(spec, &super::markdown(spec, analysis, charts), charts)
}

/// [`html`] of the report's `markdown` already rendered with `charts`,
/// held whole (a written report's page goes to its file through
/// [`write_html_page`] instead).
fn html_page(spec: &Spec, markdown: &str, charts: &Charts) -> String {
    let mut page = Vec::new();
    write_html_page(&mut page, spec, markdown, charts).expect("a Vec takes every byte");
    String::from_utf8(page).expect("the page is made of strings")
}

/// Writes the HTML page (`html_page`) to `out` as it is made, for a page
/// too large to be held (a report of many runs is megabytes of HTML).
pub fn write_html_page(
    out: &mut dyn std::io::Write,
    spec: &Spec,
    markdown: &str,
    charts: &Charts,
) -> std::io::Result<()> {
    let title = spec.title.as_deref().unwrap_or(&spec.name);
    let script = format!("\n{SCRIPT}");
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n",
        content_security_policy(&script),
        escape(title)
    )?;
    pulldown_cmark::html::write_html_io(&mut *out, page_events(markdown, charts))?;
    write!(
        out,
        "</main>\n<script>{script}</script>\n</body>\n</html>\n"
    )
}

/// What the page may load and run: nothing from anywhere (not even the
/// file's own directory), its inline styles, and the one `script` it
/// carries, by its digest, so a script or an event handler that got into
/// the page would not run.
fn content_security_policy(script: &str) -> String {
    let digest = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script));
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; \
         base-uri 'none'; form-action 'none'"
    )
}

/// The markdown's events, with each heading given an id, each table
/// wrapped to scroll on a narrow screen, each chart's image replaced by its
/// drawing, any other image or link shown as its text, and raw HTML other
/// than the report's own tags shown as text. The markdown is parsed a
/// [`Piece`] at a time, never whole: a parser holds the tree of all it
/// parses, and the tree of a report's table of 10,000 runs is tens of
/// megabytes.
fn page_events<'a>(markdown: &'a str, charts: &'a Charts) -> PageEvents<'a, Pieces<'a>> {
    changed(
        Pieces {
            rest: markdown,
            long: None,
        },
        charts,
    )
}

/// The page's events of the markdown's `pieces`.
fn changed<'a, P>(pieces: P, charts: &'a Charts) -> PageEvents<'a, P> {
    PageEvents {
        pieces,
        ready: VecDeque::new(),
        withheld: None,
        ids: Vec::new(),
        charts,
    }
}

/// Most lines of a long table (after its header) or list parsed at once.
const LINES_AT_ONCE: usize = 256;

/// Some of the markdown parsed alone: a block (what lies between blank lines
/// outside a code block), or some lines of a long table, with its header
/// again, or of a long list.
#[derive(Debug, PartialEq)]
struct Piece<'a> {
    text: Cow<'a, str>,
    /// Whether it goes on with the table or list of the piece before.
    continues: bool,
    /// Whether the piece after goes on with its table or list.
    continued: bool,
}

/// The pieces of a markdown text, in order. Parsing each alone makes the
/// events of parsing the whole (a test holds them to it) for markdown as
/// the report writes it: a blank line ends every block the report writes
/// (it writes no loose list, no indented code and no link reference; text
/// from outside breaks no line but inside a fenced code block, see
/// [`inline::text`], so it begins no block), and the rows of a table or items of a list, parsed some at a
/// time, make the same rows and items.
struct Pieces<'a> {
    rest: &'a str,
    /// The long table or list being given a piece at a time.
    long: Option<Long<'a>>,
}

/// A block of more lines than [`LINES_AT_ONCE`] which may be parsed a few
/// lines at a time: a table (its header and delimiter row are its head) or
/// a list of one line per item (no head).
struct Long<'a> {
    block: &'a str,
    /// The length of its head: 0 for a list.
    head: usize,
    /// Where its lines not yet given begin.
    at: usize,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        if let Some(long) = &mut self.long {
            let (now, later) = split_lines(&long.block[long.at..], LINES_AT_ONCE);
            let begun = long.at > long.head;
            let end = long.at + now.len();
            let text = match (begun, long.head) {
                // A later piece of a table: its head again, then its lines.
                (true, head) if head > 0 => Cow::Owned(format!("{}{now}", &long.block[..head])),
                (true, _) => Cow::Borrowed(now),
                (false, _) => Cow::Borrowed(&long.block[..end]),
            };
            long.at = end;
            let piece = Piece {
                text,
                continues: begun,
                continued: !later.is_empty(),
            };
            if later.is_empty() {
                self.long = None;
            }
            return Some(piece);
        }
        if self.rest.is_empty() {
            return None;
        }
        let (block, rest) = split_block(self.rest);
        self.rest = rest;
        match long(block) {
            Some(long) => {
                self.long = Some(long);
                self.next()
            }
            None => Some(Piece {
                text: Cow::Borrowed(block),
                continues: false,
                continued: false,
            }),
        }
    }
}

/// `text`'s first block, with the blank lines after it, and the rest. A
/// blank line inside a fenced code block does not end it.
fn split_block(text: &str) -> (&str, &str) {
    let mut fence: Option<(u8, usize)> = None;
    let mut end = 0;
    let mut blank_seen = false;
    for line in text.split_inclusive('\n') {
        let blank = line.trim().is_empty();
        if fence.is_none() && blank_seen && !blank {
            break;
        }
        end += line.len();
        match fence {
            Some(open) if closes(line, open) => fence = None,
            Some(_) => {}
            None if blank => blank_seen = true,
            None => fence = opens(line),
        }
    }
    text.split_at(end)
}

/// The fence (its character and length) that `line` opens, if it opens a
/// fenced code block: at most three spaces, then three or more backticks
/// not followed by another backtick, or three or more tildes.
fn opens(line: &str) -> Option<(u8, usize)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let c = *trimmed.as_bytes().first()?;
    if c != b'`' && c != b'~' {
        return None;
    }
    let n = trimmed.bytes().take_while(|b| *b == c).count();
    let info = &trimmed[n..];
    (n >= 3 && !(c == b'`' && info.contains('`'))).then_some((c, n))
}

/// Whether `line` closes a code block that `fence` opened: at most three
/// spaces, at least as many of its character, then only spaces.
fn closes(line: &str, (c, n): (u8, usize)) -> bool {
    let trimmed = line.trim_start_matches(' ');
    let run = trimmed.bytes().take_while(|b| *b == c).count();
    line.len() - trimmed.len() <= 3 && run >= n && trimmed[run..].trim().is_empty()
}

/// `text`'s first `n` lines and the rest.
fn split_lines(text: &str, n: usize) -> (&str, &str) {
    let end = text
        .split_inclusive('\n')
        .take(n)
        .map(str::len)
        .sum::<usize>();
    text.split_at(end)
}

/// `block` as a [`Long`], if it is a table or a list of more lines than
/// [`LINES_AT_ONCE`], each line of it (bar blank ones at its end) a row or
/// an item.
fn long(block: &str) -> Option<Long<'_>> {
    let lines: Vec<&str> = block
        .split_inclusive('\n')
        .filter(|l| !l.trim().is_empty())
        .collect();
    if lines.len() <= LINES_AT_ONCE {
        return None;
    }
    if lines.iter().all(|l| l.starts_with("- ")) {
        return Some(Long {
            block,
            head: 0,
            at: 0,
        });
    }
    let head = lines[0].len() + lines[1].len();
    let is_table = matches!(
        Parser::new_ext(&block[..head], Options::ENABLE_TABLES).next(),
        Some(Event::Start(Tag::Table(_)))
    );
    (is_table && lines.iter().all(|l| l.starts_with('|'))).then_some(Long {
        block,
        head,
        at: head,
    })
}

/// The iterator of [`page_events`].
struct PageEvents<'a, P> {
    pieces: P,
    /// Events of the page, changed, not yet given.
    ready: VecDeque<Event<'a>>,
    /// The end of a table or list that the next piece goes on with.
    withheld: Option<Event<'a>>,
    /// The headings' ids so far.
    ids: Vec<String>,
    charts: &'a Charts,
}

impl<'a, P: Iterator<Item = Piece<'a>>> Iterator for PageEvents<'a, P> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            let Some(piece) = self.pieces.next() else {
                return self.withheld.take();
            };
            let events: Vec<Event<'a>> = match piece.text {
                Cow::Borrowed(text) => Parser::new_ext(text, Options::ENABLE_TABLES).collect(),
                Cow::Owned(text) => Parser::new_ext(&text, Options::ENABLE_TABLES)
                    .map(|e| -> Event<'a> { e.into_static() })
                    .collect(),
            };
            let events = self.joined(events, piece.continues, piece.continued);
            self.change(events);
        }
    }
}

impl<'a, P> PageEvents<'a, P> {
    /// A piece's `events` as the parse of the whole would make them: the
    /// head of a table it `continues` left out, and the end of the table or
    /// list held back where the piece after goes on with it.
    fn joined(
        &mut self,
        mut events: Vec<Event<'a>>,
        continues: bool,
        continued: bool,
    ) -> Vec<Event<'a>> {
        if continues {
            match self.withheld.take() {
                Some(Event::End(TagEnd::Table)) => {
                    let head_end = events
                        .iter()
                        .position(|e| matches!(e, Event::End(TagEnd::TableHead)));
                    events.drain(..head_end.map_or(0, |i| i + 1));
                }
                Some(end) => {
                    // A list goes on only where the piece starts one alike.
                    match (&end, events.first()) {
                        (Event::End(TagEnd::List(false)), Some(Event::Start(Tag::List(None)))) => {
                            events.remove(0);
                        }
                        _ => self.ready.push_back(end),
                    }
                }
                None => {}
            }
        }
        if continued
            && matches!(
                events.last(),
                Some(Event::End(TagEnd::Table | TagEnd::List(false)))
            )
        {
            self.withheld = events.pop();
        }
        events
    }

    /// Makes the page's events of a piece's `events`.
    fn change(&mut self, events: Vec<Event<'a>>) {
        let mut events = events.into_iter();
        while let Some(event) = events.next() {
            match event {
                Event::Start(Tag::Heading {
                    level,
                    id: None,
                    classes,
                    attrs,
                }) => {
                    let text = heading_text(events.as_slice().iter().cloned(), level);
                    let id = unique(&mut self.ids, slug(&text));
                    self.ready.push_back(Event::Start(Tag::Heading {
                        level,
                        id: Some(CowStr::from(id)),
                        classes,
                        attrs,
                    }));
                }
                Event::Start(Tag::Table(alignment)) => {
                    self.ready
                        .push_back(Event::Html(CowStr::from("<div class=\"table\">")));
                    self.ready.push_back(Event::Start(Tag::Table(alignment)));
                }
                Event::End(TagEnd::Table) => {
                    self.ready.push_back(Event::End(TagEnd::Table));
                    self.ready.push_back(Event::Html(CowStr::from("</div>")));
                }
                Event::Start(Tag::Image { dest_url, .. }) => {
                    // The image's alt text follows up to its end: the chart's title.
                    for inner in events.by_ref() {
                        if matches!(inner, Event::End(TagEnd::Image)) {
                            break;
                        }
                    }
                    let figure = match self.charts.by_png(&dest_url) {
                        Some(chart) => format!(
                            "<figure id=\"chart-{}\" class=\"chart\">{}{}</figure>",
                            chart.id,
                            inline_svg(&chart.svg),
                            series_toggles(&chart.series)
                        ),
                        None => {
                            let text = format!("[image {dest_url} not inlined]");
                            self.ready.push_back(Event::Text(CowStr::from(text)));
                            continue;
                        }
                    };
                    self.ready
                        .push_back(Event::InlineHtml(CowStr::from(figure)));
                }
                // The report links nothing: a link's text stays, its target goes.
                Event::Start(Tag::Link { .. }) | Event::End(TagEnd::Link) => {}
                Event::Html(html) | Event::InlineHtml(html) if !inline::is_own_tag(html.trim()) => {
                    self.ready.push_back(Event::Text(html));
                }
                other => self.ready.push_back(other),
            }
        }
    }
}

/// The text of the heading whose events `events` go on with.
fn heading_text<'a>(events: impl Iterator<Item = Event<'a>>, level: HeadingLevel) -> String {
    let mut text = String::new();
    for event in events {
        match event {
            Event::End(TagEnd::Heading(l)) if l == level => break,
            Event::Text(t) | Event::Code(t) => text.push_str(&t),
            _ => {}
        }
    }
    text
}

/// `Engine Selection` → `engine-selection`: lower-case letters and digits,
/// other runs as one `-`.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "section".to_owned()
    } else {
        out.to_owned()
    }
}

/// `id`, or `id-2`, `id-3`, … when taken.
fn unique(taken: &mut Vec<String>, id: String) -> String {
    let mut candidate = id.clone();
    let mut n = 1;
    while taken.contains(&candidate) {
        n += 1;
        candidate = format!("{id}-{n}");
    }
    taken.push(candidate.clone());
    candidate
}

/// A button per series of a chart, which hides or shows it (the names
/// escaped: a step's engine and version come from the experiment).
fn series_toggles(names: &[String]) -> String {
    if names.is_empty() {
        return String::new();
    }
    let mut out = String::from("<figcaption>");
    for (key, name) in names.iter().enumerate() {
        out.push_str(&format!(
            "<button type=\"button\" data-series=\"{key}\" aria-pressed=\"true\" \
             title=\"hide or show this series\">{}</button>",
            escape(name)
        ));
    }
    out.push_str("</figcaption>");
    out
}

/// A drawing's `<svg>` element, without the digest comment before it.
fn inline_svg(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests;
