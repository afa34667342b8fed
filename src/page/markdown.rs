//! A published page's markdown as a flat list of elements, each with its
//! source line: headings, text, code blocks and tables (pulldown-cmark).
//!
//! The lab's pages are MkDocs Material: an admonition (`??? info "Serving
//! script"`, `!!! note`) holds its body indented by four spaces, which
//! CommonMark reads as a paragraph's continuation. The body is dedented first
//! (line for line, so every line keeps its number).

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// One element of the page, in page order.
#[derive(Debug, Clone, PartialEq)]
pub enum Element {
    Heading {
        level: u8,
        text: String,
    },
    /// A paragraph's or a list item's text, its lines kept (soft breaks are `\n`).
    Text(String),
    /// A fenced code block: its info string and its text.
    Code {
        info: String,
        text: String,
    },
    /// A table: each row's cells as written (with `<br>` and `<span>`), and each row's line.
    Table {
        rows: Vec<(usize, Vec<String>)>,
    },
}

/// An element and the line (from 1) it starts on; a code block's line is
/// that of its first line of content.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    pub line: usize,
    pub element: Element,
}

/// The page's elements, in order.
pub fn elements(page: &str) -> Vec<Located> {
    let text = dedent_admonitions(page);
    let line_of = LineIndex::new(&text);
    let mut out = Vec::new();
    let mut buf = String::new();
    let mut buf_line = 0;
    let mut heading: Option<(u8, usize)> = None;
    let mut code: Option<(String, usize)> = None;
    let mut table: Option<Vec<(usize, Vec<String>)>> = None;
    let flush = |buf: &mut String, line: usize, out: &mut Vec<Located>| {
        let t = buf.trim();
        if !t.is_empty() {
            out.push(Located {
                line,
                element: Element::Text(t.to_owned()),
            });
        }
        buf.clear();
    };
    for (event, range) in Parser::new_ext(&text, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                flush(&mut buf, buf_line, &mut out);
                heading = Some((heading_level(level), line_of.line(range.start)));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, line)) = heading.take() {
                    out.push(Located {
                        line,
                        element: Element::Heading {
                            level,
                            text: buf.trim().to_owned(),
                        },
                    });
                }
                buf.clear();
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                flush(&mut buf, buf_line, &mut out);
                let info = match kind {
                    pulldown_cmark::CodeBlockKind::Fenced(info) => info.to_string(),
                    pulldown_cmark::CodeBlockKind::Indented => String::new(),
                };
                // The fence's line; the content starts on the next.
                code = Some((info, line_of.line(range.start) + 1));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((info, line)) = code.take() {
                    out.push(Located {
                        line,
                        element: Element::Code {
                            info,
                            text: std::mem::take(&mut buf),
                        },
                    });
                }
                buf.clear();
            }
            Event::Start(Tag::Table(_)) => {
                flush(&mut buf, buf_line, &mut out);
                table = Some(Vec::new());
                buf_line = line_of.line(range.start);
            }
            Event::Start(Tag::TableHead | Tag::TableRow) => {
                if let Some(rows) = &mut table {
                    rows.push((line_of.line(range.start), Vec::new()));
                }
            }
            Event::Start(Tag::TableCell) => {
                if let Some((_, cells)) = table.as_mut().and_then(|rows| rows.last_mut()) {
                    cells.push(text[range].trim().to_owned());
                }
            }
            Event::End(TagEnd::Table) => {
                if let Some(rows) = table.take() {
                    out.push(Located {
                        line: buf_line,
                        element: Element::Table { rows },
                    });
                }
                buf.clear();
            }
            Event::Start(Tag::Paragraph | Tag::Item) => {
                flush(&mut buf, buf_line, &mut out);
                buf_line = line_of.line(range.start);
            }
            Event::End(TagEnd::Paragraph | TagEnd::Item) => flush(&mut buf, buf_line, &mut out),
            Event::Text(t) if table.is_none() => {
                if buf.trim().is_empty() && heading.is_none() && code.is_none() {
                    buf_line = line_of.line(range.start);
                }
                buf.push_str(&t);
            }
            // A code span stays in backticks ("Profile: `ShareGPT`").
            Event::Code(t) if table.is_none() => {
                if buf.trim().is_empty() && heading.is_none() {
                    buf_line = line_of.line(range.start);
                }
                buf.push('`');
                buf.push_str(&t);
                buf.push('`');
            }
            Event::SoftBreak | Event::HardBreak if table.is_none() => buf.push('\n'),
            _ => {}
        }
    }
    flush(&mut buf, buf_line, &mut out);
    out
}

fn heading_level(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// Dedents the body of every MkDocs admonition (`???`, `???+`, `!!!`) by four
/// spaces, so its fenced code is a code block; the title line stays.
fn dedent_admonitions(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    // The indentation of the admonition whose body is being read.
    let mut body: Option<usize> = None;
    for line in page.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let trimmed = line.trim();
        if let Some(base) = body {
            if trimmed.is_empty() {
                out.push_str(line);
                continue;
            }
            if indent >= base + 4 {
                out.push_str(&line[4..]);
                continue;
            }
            body = None;
        }
        if ["??? ", "???+ ", "!!! "]
            .iter()
            .any(|p| trimmed.starts_with(p))
        {
            body = Some(indent);
        }
        out.push_str(line);
    }
    out
}

/// Byte offset → line number (from 1).
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self { starts }
    }

    fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admonition_bodies_become_code_blocks_on_their_own_lines() {
        let page = "# Title\n\nvLLM\n??? info \"Serving script\"\n    ```bash\n    vllm serve Qwen/Qwen3-14B\n    ```\n";
        let els = elements(page);
        assert_eq!(
            els,
            vec![
                Located {
                    line: 1,
                    element: Element::Heading {
                        level: 1,
                        text: "Title".into()
                    }
                },
                Located {
                    line: 3,
                    element: Element::Text("vLLM\n??? info \"Serving script\"".into())
                },
                Located {
                    line: 6,
                    element: Element::Code {
                        info: "bash".into(),
                        text: "vllm serve Qwen/Qwen3-14B\n".into()
                    }
                },
            ]
        );
    }

    #[test]
    fn table_cells_keep_their_markup_and_rows_their_lines() {
        let page = "intro\n\n| Case | Optimized |\n|---|---|\n| **ShareGPT** | Total TPS: 1<br>Mean TPOT(ms): 2 <span style=\"x\">(+1.0%)</span> |\n";
        let els = elements(page);
        let Element::Table { rows } = &els[1].element else {
            panic!("{els:?}")
        };
        assert_eq!(rows[0], (3, vec!["Case".into(), "Optimized".into()]));
        assert_eq!(rows[1].0, 5);
        assert_eq!(
            rows[1].1[1],
            "Total TPS: 1<br>Mean TPOT(ms): 2 <span style=\"x\">(+1.0%)</span>"
        );
    }

    #[test]
    fn list_items_keep_code_spans() {
        let els =
            elements("- Profile: `ShareGPT`\n- Backend Parameters:\n  ```bash\n  --a=1\n  ```\n");
        assert_eq!(els[0].element, Element::Text("Profile: `ShareGPT`".into()));
        assert_eq!(els[1].element, Element::Text("Backend Parameters:".into()));
        assert_eq!(els[2].line, 4);
    }
}
