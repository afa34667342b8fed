//! The HTML report: the markdown report's sections as one self-contained
//! page (pulldown-cmark), every chart inline as SVG, tables sortable and
//! charts' points readable and series hideable by a small inline script,
//! and no reference to anything outside the file. All
//! text is escaped by pulldown-cmark; the only markup taken from the
//! markdown is the report's own tags ([`inline::is_own_tag`]), and a
//! Content-Security-Policy lets the page load nothing and run no script but
//! its own. (pure)

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

/// [`html`] of the report's `markdown` already rendered with `charts`
/// (a written report has it at hand: it is not rendered twice).
pub fn html_page(spec: &Spec, markdown: &str, charts: &Charts) -> String {
    let title = spec.title.as_deref().unwrap_or(&spec.name);
    let script = format!("\n{SCRIPT}");
    // The page is written into one string as it is made: a report of many
    // runs is megabytes of HTML, never held twice.
    let mut page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n",
        content_security_policy(&script),
        escape(title)
    );
    pulldown_cmark::html::push_html(&mut page, page_events(markdown, charts));
    page.push_str(&format!(
        "</main>\n<script>{script}</script>\n</body>\n</html>\n"
    ));
    page
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
/// than the report's own tags shown as text. Given one at a time as the
/// markdown is parsed (only a heading is read ahead, for its id), so a
/// report of many runs is never held as events, only as its text.
fn page_events<'a>(markdown: &'a str, charts: &'a Charts) -> PageEvents<'a> {
    PageEvents {
        source: Parser::new_ext(markdown, Options::ENABLE_TABLES),
        ahead: VecDeque::new(),
        ready: VecDeque::new(),
        ids: Vec::new(),
        charts,
    }
}

/// The iterator of [`page_events`].
struct PageEvents<'a> {
    source: Parser<'a>,
    /// Events of the markdown read ahead (a heading's), not yet changed.
    ahead: VecDeque<Event<'a>>,
    /// Events of the page, changed, not yet given.
    ready: VecDeque<Event<'a>>,
    /// The headings' ids so far.
    ids: Vec<String>,
    charts: &'a Charts,
}

impl<'a> Iterator for PageEvents<'a> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            let event = self.markdown()?;
            self.change(event);
        }
    }
}

impl<'a> PageEvents<'a> {
    /// The markdown's next event.
    fn markdown(&mut self) -> Option<Event<'a>> {
        self.ahead.pop_front().or_else(|| self.source.next())
    }

    /// Makes the page's events of the markdown's `event`.
    fn change(&mut self, event: Event<'a>) {
        match event {
            Event::Start(Tag::Heading {
                level,
                id: None,
                classes,
                attrs,
            }) => {
                let end = |e: &Event| matches!(e, Event::End(TagEnd::Heading(l)) if *l == level);
                while !self.ahead.iter().any(end) {
                    match self.source.next() {
                        Some(e) => self.ahead.push_back(e),
                        None => break,
                    }
                }
                let text = heading_text(self.ahead.iter().cloned(), level);
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
                while let Some(inner) = self.markdown() {
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
                        return;
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

/// The text of the heading that `parser` is inside.
fn heading_text<'a>(parser: impl Iterator<Item = Event<'a>>, level: HeadingLevel) -> String {
    let mut text = String::new();
    for event in parser {
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
