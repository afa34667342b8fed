use super::*;
use crate::analyze::{analyze, from_expectations};
use crate::report::ChartFile;
use crate::spec::{SourceFile, parse};

fn spec() -> Spec {
    let text = r#"experiment "page" {
        title "A <b>study</b> & more"
        hardware "nvidia-h100-sxm5-80gb" gpus=2
        model "o/m"
        engine vllm version="0.11.0"
        engine sglang version="0.5.9"
        workload chat { title "Chat"; dataset random input=128 output=64 seed=1; prompts 100; }
        step vllm engine=vllm gpus=1 {
            expect chat { total_token_throughput 500; mean_tpot_ms 8; }
        }
        step sglang engine=sglang gpus=1 {
            expect chat { total_token_throughput 1100; mean_tpot_ms 5; }
        }
        compare "Engine Selection" baseline=vllm workload=chat { candidate sglang; }
        conclusion baseline=vllm optimized=sglang
    }"#;
    parse(&SourceFile {
        name: "page.kdl".into(),
        text: text.into(),
    })
    .unwrap()
}

fn chart(id: &str, png: &str) -> ChartFile {
    ChartFile {
        id: id.into(),
        title: format!("{id} chart"),
        png: png.into(),
        svg: format!(
            "<!-- perfpipe-chart 00 -->\n<svg width=\"10\" height=\"10\" viewBox=\"0 0 10 10\" xmlns=\"http://www.w3.org/2000/svg\"><text>{id}</text></svg>\n"
        ),
        series: Vec::new(),
    }
}

/// What a reader finds on the page: its headings with their ids, each
/// table's header row, each chart's id, in order.
fn structure(html: &str) -> String {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        let tag_end = rest.find('>').unwrap_or(rest.len() - 1);
        let tag = &rest[..=tag_end];
        if let Some(level) = ["<h1", "<h2", "<h3"].iter().find(|h| tag.starts_with(**h)) {
            let close = format!("</{}>", &level[1..]);
            let text = &rest[tag_end + 1..rest.find(&close).unwrap()];
            out.push(format!("{} {text}", tag.trim_end_matches('>')));
        } else if tag == "<thead>" {
            let head = &rest[..rest.find("</thead>").unwrap()];
            let cells: Vec<&str> = head
                .split("<th")
                .skip(1)
                .filter(|c| c.starts_with('>') || c.starts_with(' '))
                .map(|c| {
                    let c = &c[c.find('>').unwrap() + 1..];
                    &c[..c.find("</th>").unwrap()]
                })
                .collect();
            out.push(format!("  table | {} |", cells.join(" | ")));
        } else if tag.starts_with("<figure") {
            out.push(format!("  {tag}"));
        }
        rest = &rest[1..];
    }
    out.join("\n")
}

fn page() -> String {
    let spec = spec();
    let analysis = analyze(&spec, from_expectations(&spec));
    let charts = Charts {
        conclusion: Some(chart("conclusion", "page.png")),
        figures: vec![chart("frontier-chat", "page.frontier-chat.png")],
    };
    html(&spec, &analysis, &charts)
}

#[test]
fn the_page_has_the_markdowns_sections_its_tables_and_its_charts_inline() {
    let html = page();
    insta::assert_snapshot!(structure(&html));
    assert!(html.starts_with("<!DOCTYPE html>"));
    // The drawing itself, not a link to its file.
    assert!(html.contains("<figure id=\"chart-frontier-chat\" class=\"chart\"><svg"));
    assert!(!html.contains(".png"), "a file is linked");
    assert!(
        !html.contains("perfpipe-chart"),
        "the digest comment stays in the file"
    );
    // The report's own coloured deltas stay markup.
    assert!(html.contains("<span style=\"background-color:"), "{html}");
}

#[test]
fn nothing_on_the_page_refers_outside_it() {
    let html = page();
    for reference in ["src=", "href=", "url(", "@import", "//fonts", "https:"] {
        assert!(!html.contains(reference), "{reference} in the page");
    }
    // The one URL is the SVG namespace, which names and fetches nothing.
    assert_eq!(
        html.matches("http://").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    assert_eq!(html.matches("<script>").count(), 1);
    assert_eq!(html.matches("<style>").count(), 1);
}

#[test]
fn markup_from_the_experiment_is_text() {
    let html = page();
    assert!(html.contains("<title>A &lt;b&gt;study&lt;/b&gt; &amp; more</title>"));
    assert!(!html.contains("<b>study</b>"), "{html}");
}

#[test]
fn the_page_loads_nothing_and_runs_only_its_own_script() {
    let html = page();
    let csp = html
        .split("http-equiv=\"Content-Security-Policy\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a Content-Security-Policy");
    assert!(csp.starts_with("default-src 'none'; "), "{csp}");
    assert!(!csp.contains("script-src 'unsafe-inline'"), "{csp}");
    // The digest is the script's, as the browser computes it.
    let script = html
        .split("<script>")
        .nth(1)
        .and_then(|rest| rest.split("</script>").next())
        .unwrap();
    assert!(csp.contains(&content_security_policy(script)[..]), "{csp}");
}

/// An experiment whose `field` holds `hostile`, as perfpipe's own KDL writer
/// quotes it.
fn experiment(field: Field, hostile: &str) -> String {
    let q = crate::kdl_string::quote;
    let text = |f: Field, plain: &str| {
        if f == field { q(hostile) } else { q(plain) }
    };
    let step = text(Field::Step, "vllm");
    format!(
        r#"experiment "page" {{
        title {title}
        hardware "nvidia-h100-sxm5-80gb" gpus=2
        model {model}
        engine vllm version="0.11.0"
        engine sglang version="0.5.9"
        workload chat {{ title {workload}; dataset random input=128 output=64 seed=1; prompts 100; }}
        step {step} engine=vllm gpus=1 {{
            expect chat {{ total_token_throughput 500; mean_tpot_ms 8; }}
        }}
        step sglang engine=sglang gpus=1 {{
            args "--flag" {arg}
            expect chat {{ total_token_throughput 1100; mean_tpot_ms 5; }}
        }}
        compare {compare} baseline={step} workload=chat {{ candidate sglang; summary {sentence}; }}
        conclusion baseline={step} optimized=sglang {{
            command "vllm" "serve" {command}
            table "Benchmark Case" {header} "Optimized"
            case chat {{ baseline "Total TPS: 500.00" "Mean TPOT(ms): 8.00"; optimized "Total TPS: 1100.00 (+120.0%)"; }}
        }}
    }}"#,
        title = text(Field::Title, "Study"),
        // A model's absolute path may hold any text but `..` and NUL.
        model = if field == Field::Model {
            q(&format!("/{hostile}"))
        } else {
            q("o/m")
        },
        workload = text(Field::Workload, "Chat"),
        arg = text(Field::Arg, "1"),
        compare = text(Field::Compare, "Engines"),
        sentence = text(Field::Page, "sglang serves more."),
        command = text(Field::Page, "o/m"),
        header = text(Field::Page, "Baseline"),
    )
}

/// Where [`experiment`] puts outside text.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Field {
    Title,
    Step,
    Model,
    Workload,
    Arg,
    Compare,
    /// What a page printed: a sentence, its command, a column title (a
    /// printed cell holds only a known label and a number).
    Page,
}

const FIELDS: [Field; 7] = [
    Field::Title,
    Field::Step,
    Field::Model,
    Field::Workload,
    Field::Arg,
    Field::Compare,
    Field::Page,
];

/// The page of `experiment(field, hostile)`, with a bar chart and a figure
/// (a point's hover, a series' button) labelled `hostile` throughout;
/// `None` when perfpipe refuses the experiment.
fn hostile_page(field: Field, hostile: &str) -> Option<String> {
    let (spec, analysis, charts) = hostile_report(field, hostile)?;
    Some(html(&spec, &analysis, &charts))
}

/// What [`hostile_page`] is made of.
fn hostile_report(field: Field, hostile: &str) -> Option<(Spec, Analysis, Charts)> {
    let spec = parse(&SourceFile {
        name: "page.kdl".into(),
        text: experiment(field, hostile),
    })
    .ok()?;
    let analysis = analyze(&spec, from_expectations(&spec));
    let data = crate::report::chart::ChartData {
        title: hostile.into(),
        y_title: hostile.into(),
        baseline: hostile.into(),
        optimized: hostile.into(),
        groups: vec![crate::report::chart::ChartGroup {
            label: hostile.into(),
            baseline: 1.0,
            optimized: 2.0,
        }],
    };
    let charts = Charts {
        conclusion: Some(ChartFile {
            id: "conclusion".into(),
            title: hostile.into(),
            png: "page.png".into(),
            svg: crate::report::chart::svg(&data),
            series: Vec::new(),
        }),
        figures: vec![hostile_figure(hostile)],
    };
    Some((spec, analysis, charts))
}

/// A figure whose title, note, axes, series and point labels are `hostile`,
/// as the report draws it: its SVG and its series' buttons.
fn hostile_figure(hostile: &str) -> ChartFile {
    use crate::report::plot::{self, Panel, Plot, Scale, Series, SeriesStyle};
    let plot = Plot {
        title: hostile.into(),
        note: Some(hostile.into()),
        panels: vec![Panel {
            title: hostile.into(),
            x_title: hostile.into(),
            y_title: hostile.into(),
            from_zero: true,
            x_scale: Scale::Linear,
            series: vec![Series {
                name: Some(hostile.into()),
                style: SeriesStyle::Line(0),
                points: vec![(1.0, 2.0), (3.0, 4.0)],
                labels: vec![hostile.into(), format!("{hostile} 2")],
            }],
        }],
    };
    ChartFile {
        id: "figure".into(),
        title: hostile.into(),
        png: "page.figure.png".into(),
        svg: plot::svg(&plot),
        series: plot.series_names(),
    }
}

/// The elements the page may hold, each with the attributes it may carry.
const ELEMENTS: &[(&str, &[&str])] = &[
    ("html", &["lang"]),
    ("head", &[]),
    ("meta", &["charset", "http-equiv", "name", "content"]),
    ("title", &[]),
    ("style", &[]),
    ("script", &[]),
    ("body", &[]),
    ("main", &[]),
    ("h1", &["id"]),
    ("h2", &["id"]),
    ("h3", &["id"]),
    ("p", &[]),
    ("ul", &[]),
    ("ol", &[]),
    ("li", &[]),
    ("blockquote", &[]),
    ("strong", &[]),
    ("em", &[]),
    ("code", &["class"]),
    ("pre", &[]),
    ("br", &[]),
    ("div", &["class"]),
    ("span", &["style"]),
    ("table", &[]),
    ("thead", &[]),
    ("tbody", &[]),
    ("tr", &[]),
    ("th", &["style"]),
    ("td", &["style"]),
    ("figure", &["id", "class"]),
    ("figcaption", &[]),
    ("button", &["type", "data-series", "aria-pressed", "title"]),
    // The charts' drawing.
    ("svg", SVG),
    ("rect", SVG),
    ("line", SVG),
    ("polyline", SVG),
    ("polygon", SVG),
    ("path", SVG),
    ("circle", SVG),
    ("text", SVG),
    // A series' group, which the script hides; a point's hover text.
    ("g", &["class", "data-series"]),
];

/// Attributes of a chart's drawing: geometry and paint, nothing that names
/// or runs anything.
const SVG: &[&str] = &[
    "class",
    "xmlns",
    "width",
    "height",
    "viewbox",
    "x",
    "y",
    "x1",
    "y1",
    "x2",
    "y2",
    "cx",
    "cy",
    "r",
    "points",
    "d",
    "fill",
    "fill-opacity",
    "stroke",
    "stroke-opacity",
    "stroke-width",
    "opacity",
    "font-family",
    "font-size",
    "font-weight",
    "font-style",
    "text-anchor",
    "dominant-baseline",
    "transform",
    "dx",
    "dy",
];

/// What the value of attribute `name` may be, where not anything.
fn value_allowed(name: &str, value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    if lower.contains("url(") || lower.contains("javascript:") || lower.contains("//") {
        return name == "xmlns" && value == "http://www.w3.org/2000/svg"
            || name == "content" && lower.starts_with("default-src 'none'");
    }
    match name {
        "style" => {
            crate::report::inline::Mark::ALL
                .iter()
                .any(|m| m.open() == format!("<span style=\"{value}\">"))
                || [
                    "text-align: left",
                    "text-align: center",
                    "text-align: right",
                ]
                .contains(&value)
        }
        "class" => ["table", "chart", "language-bash", "series", "hit"].contains(&value),
        "data-series" => !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()),
        "type" => value == "button",
        "aria-pressed" => value == "true",
        "title" => value == "hide or show this series",
        _ => true,
    }
}

/// Every element and attribute of `html` that the allow-list does not
/// hold, as a browser's tokenizer reads them; and the script unless it is
/// the page's own.
fn outside_the_allow_list(html: &str) -> Vec<String> {
    use html5gum::{Token, Tokenizer};
    let mut emitter = html5gum::DefaultEmitter::default();
    emitter.naively_switch_states(true);
    let mut found = Vec::new();
    let mut in_script = false;
    for token in Tokenizer::new_with_emitter(html, emitter).flatten() {
        match token {
            Token::StartTag(tag) => {
                let name = String::from_utf8_lossy(&tag.name).into_owned();
                in_script = name == "script";
                let Some((_, allowed)) = ELEMENTS.iter().find(|(e, _)| *e == name) else {
                    found.push(format!("<{name}>"));
                    continue;
                };
                for (attr, value) in &tag.attributes {
                    let attr = String::from_utf8_lossy(attr).into_owned();
                    let value = String::from_utf8_lossy(value).into_owned();
                    if !allowed.contains(&attr.as_str()) || !value_allowed(&attr, &value) {
                        found.push(format!("<{name} {attr}={value:?}>"));
                    }
                }
            }
            Token::String(text)
                if in_script && String::from_utf8_lossy(&text) != format!("\n{SCRIPT}") =>
            {
                found.push("a script not the page's own".into());
            }
            Token::EndTag(_) => in_script = false,
            Token::Comment(c) => found.push(format!("<!--{}-->", String::from_utf8_lossy(&c))),
            _ => {}
        }
    }
    found
}

const HOSTILE: &str = "Tiny <span style=\"background-color:red;background-image:url(http://127.0.0.1:9/track)\" \
     tabindex=\"0\" autofocus onfocus=\"alert(document.domain)\"> <script>alert(1)</script> \
     <img src=x onerror=alert(1)> [link](javascript:alert(1)) ![i](http://127.0.0.1:9/i.png) \
     <http://127.0.0.1:9/> ` | `<b>x</b>` ``` \n```\n<svg onload=alert(1)> \
     <span style=\"background-color:lightgreen;\"></title></text></svg><script>alert(2)</script>";

#[test]
fn a_hostile_title_step_model_or_page_text_stays_text() {
    assert!(outside_the_allow_list(&page()).is_empty());
    for field in FIELDS {
        let html = hostile_page(field, HOSTILE)
            .or_else(|| hostile_page(field, "Tiny <img src=x onerror=alert(1)>"))
            .or_else(|| hostile_page(field, "a-b`<img"));
        let Some(html) = html else {
            // A step name is an identifier: perfpipe refuses the rest.
            assert_eq!(field, Field::Step, "{field:?} refused");
            continue;
        };
        assert_eq!(
            outside_the_allow_list(&html),
            Vec::<String>::new(),
            "{field:?}"
        );
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn any_outside_text_yields_only_allowed_elements_and_attributes(
        field in proptest::sample::select(FIELDS.to_vec()),
        hostile in "(.|<[a-z]{1,6}( [a-z]{1,8}=\"[^\"]{0,12}\")?>|[`|\\\\\\[\\]()!*_&<>\"'\n])*",
    ) {
        if let Some(html) = hostile_page(field, &hostile) {
            let found = outside_the_allow_list(&html);
            proptest::prop_assert!(found.is_empty(), "{:?}: {:?}", field, found);
        }
        // Parsed a piece at a time, the markdown makes what it makes whole.
        if let Some((spec, analysis, charts)) = hostile_report(field, &hostile) {
            let markdown = crate::report::markdown(&spec, &analysis, &charts);
            proptest::prop_assert_eq!(
                parsed_in_pieces(&markdown, &charts),
                parsed_whole(&markdown, &charts)
            );
        }
        // Outside text in a long table and lists too.
        let spec = spec();
        let markdown = crate::report::markdown(&spec, &many_runs(&spec, 300, &hostile), &Charts::default());
        proptest::prop_assert_eq!(
            parsed_in_pieces(&markdown, &Charts::default()),
            parsed_whole(&markdown, &Charts::default())
        );
    }
}

#[test]
fn headings_get_unique_readable_ids() {
    let mut taken = Vec::new();
    assert_eq!(
        unique(&mut taken, slug("Engine Selection")),
        "engine-selection"
    );
    assert_eq!(
        unique(&mut taken, slug("engine  selection!")),
        "engine-selection-2"
    );
    assert_eq!(
        slug("Published vs measured (±5%)"),
        "published-vs-measured-5"
    );
    assert_eq!(slug("—"), "section");
}

/// The page's body made of `markdown` parsed whole, as it was made before
/// it was parsed a piece at a time.
fn parsed_whole(markdown: &str, charts: &Charts) -> String {
    let whole = Piece {
        text: Cow::Borrowed(markdown),
        continues: false,
        continued: false,
    };
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, changed(std::iter::once(whole), charts));
    html
}

/// The page's body made of `markdown` parsed a piece at a time.
fn parsed_in_pieces(markdown: &str, charts: &Charts) -> String {
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, page_events(markdown, charts));
    html
}

/// The most lines of `markdown` that one parser is given.
fn most_lines_parsed_at_once(markdown: &str) -> usize {
    let pieces = Pieces {
        rest: markdown,
        long: None,
    };
    pieces.map(|p| p.text.lines().count()).max().unwrap_or(0)
}

#[test]
fn a_long_page_is_parsed_a_piece_at_a_time_into_what_the_whole_makes() {
    // A report of many runs: headings, a table of 5,000 rows and a list of
    // 1,000 items, a code block with a blank line, a short table, a quote.
    let mut markdown = String::from(
        "# Runs of *a* study\n\n````bash\nvllm serve\n\n```\n````\n\n## Runs\n\n| step | value |\n|---|---:|\n",
    );
    for row in 0..5_000 {
        markdown.push_str(&format!("| `s{row}` | {row} |\n"));
    }
    markdown.push_str("\nFailed runs:\n\n");
    for item in 0..1_000 {
        markdown.push_str(&format!("- `s{item}`: \\<b\\> {item}\n"));
    }
    markdown.push_str(
        "\n## After `the` table\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> **Note.** text\n",
    );
    let charts = Charts::default();
    assert_eq!(most_lines_parsed_at_once(&markdown), LINES_AT_ONCE + 2);
    let mut events = page_events(&markdown, &charts);
    let (mut given, mut most_held) = (Vec::new(), 0);
    while let Some(event) = events.next() {
        given.push(event);
        most_held = most_held.max(events.ready.len());
    }
    // A row is 12 events: never more than a piece's rows are held.
    assert!(
        most_held <= (LINES_AT_ONCE + 2) * 12,
        "{most_held} events held at once"
    );
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, given.into_iter());
    assert_eq!(html, parsed_whole(&markdown, &charts));
    // One table, one body: its rows sort together, in the markdown's order.
    assert_eq!(html.matches("<tbody>").count(), 2);
    assert_eq!(html.matches("<ul>").count(), 1);
    let rows: Vec<&str> = html
        .split("<tr><td><code>")
        .skip(1)
        .map(|r| &r[..r.find('<').unwrap()])
        .collect();
    let expected: Vec<String> = (0..5_000).map(|n| format!("s{n}")).collect();
    assert_eq!(rows, expected);
    assert_eq!(html.matches("&lt;b&gt;").count(), 1_000);
    let ids: Vec<&str> = html
        .split(" id=\"")
        .skip(1)
        .map(|r| &r[..r.find('"').unwrap()])
        .collect();
    assert_eq!(ids, ["runs-of-a-study", "runs", "after-the-table"]);
}

#[test]
fn blocks_end_at_blank_lines_outside_code_blocks() {
    let text = "# a\n\n```\nx\n\n``\n```\n\n\npara\nline\n\n~~~~\n\n~~~\n~~~~\n";
    let mut blocks = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (block, after) = split_block(rest);
        blocks.push(block);
        rest = after;
    }
    assert_eq!(
        blocks,
        [
            "# a\n\n",
            "```\nx\n\n``\n```\n\n\n",
            "para\nline\n\n",
            "~~~~\n\n~~~\n~~~~\n"
        ]
    );
    // A run of backticks followed by another is a code span, not a fence.
    assert_eq!(opens("```a` b\n"), None);
    assert_eq!(opens("    ```\n"), None);
    assert_eq!(opens("```bash\n"), Some((b'`', 3)));
}

/// An analysis of `spec` with `n` runs, one in seven failed, every one of
/// them substituted from a cache and warned about, their messages and
/// signers' names `hostile`.
fn many_runs(spec: &Spec, n: usize, hostile: &str) -> Analysis {
    let mut analysis = analyze(spec, from_expectations(spec));
    let template = analysis.runs[0].clone();
    analysis.runs = (0..n)
        .map(|i| {
            let mut run = template.clone();
            run.step = format!("step-{i}");
            run.key = Some(format!("{i:0>64}"));
            if i % 7 == 3 {
                run.metrics.clear();
                run.failure = Some(format!("{hostile} {i}"));
            }
            run.warnings = vec![format!("{hostile} warned {i}")];
            run.signers = [(format!("{hostile} signer"), 1)].into();
            run
        })
        .collect();
    analysis
}

#[test]
fn a_report_of_many_runs_keeps_its_rows_order_and_escaping() {
    let spec = spec();
    let analysis = many_runs(&spec, 1_000, HOSTILE);
    let charts = Charts::default();
    let markdown = crate::report::markdown(&spec, &analysis, &charts);
    assert!(markdown.lines().count() > 3_000);
    assert_eq!(most_lines_parsed_at_once(&markdown), LINES_AT_ONCE + 2);
    let body = parsed_in_pieces(&markdown, &charts);
    assert_eq!(body, parsed_whole(&markdown, &charts));
    let page = html_page(&spec, &markdown, &charts);
    assert_eq!(outside_the_allow_list(&page), Vec::<String>::new());
    assert!(!page.contains("<img"), "outside text became markup");
    // The runs table: one body, every run's row in the analysis's order.
    let runs = &page[page.find("id=\"runs\"").unwrap()..];
    let table = &runs[..runs.find("</table>").unwrap()];
    assert_eq!(table.matches("<tbody>").count(), 1);
    let steps: Vec<&str> = table
        .split("<tr><td><code>")
        .skip(1)
        .map(|r| &r[..r.find('<').unwrap()])
        .collect();
    let expected: Vec<String> = (0..1_000).map(|i| format!("step-{i}")).collect();
    assert_eq!(steps, expected);
    // Each failure's message, escaped, in one list after the table.
    let failed = &runs[runs.find("Failed runs:").unwrap()..];
    let failed = &failed[..failed.find("</ul>").unwrap()];
    assert_eq!(failed.matches("<li>").count(), 1_000 / 7 + 1);
    assert_eq!(
        failed.matches("&lt;img src=x onerror=alert(1)&gt;").count(),
        1_000 / 7 + 1
    );
}
