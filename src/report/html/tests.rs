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
    let analysis = analyze(&spec, from_expectations(&spec)).unwrap();
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
    assert!(is_own_markup(
        "<span style=\"background-color:lightgreen;\">"
    ));
    assert!(!is_own_markup(
        "<span style=\"background-color:red\"><script>"
    ));
    assert!(!is_own_markup("<img src=x>"));
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
