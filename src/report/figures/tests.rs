use std::fmt::Write;

use super::*;
use crate::analyze::curves::{Journals, RequestTimes, curves};
use crate::analyze::{Scope, analyze, from_expectations};
use crate::metrics::RequestRecord;
use crate::spec::{SourceFile, parse};

/// The study under `harness`, its numbers under the names `[tps, ttft, tpot]`.
fn spec(harness: &str, [tps, ttft, tpot]: [&str; 3]) -> Spec {
    let text = format!(
        r#"experiment "figs" {{
        hardware "nvidia-h100-sxm5-80gb" gpus=2
        model "o/m"
        engine vllm version="0.11.0"
        engine sglang version="0.5.9"
        {harness}
        workload c1 {{ title "Chat at 1"; dataset random input=128 output=64 seed=1; prompts 100; concurrency 1; }}
        workload c4 {{ title "Chat at 4"; dataset random input=128 output=64 seed=1; prompts 100; concurrency 4; }}
        workload "long prompt" {{ dataset random input=4000 output=64 seed=1; prompts 100; }}
        step vllm engine=vllm gpus=1 {{
            expect c1 {{ {tps} 500; {ttft} 20; {tpot} 8; }}
            expect c4 {{ {tps} 1600; {ttft} 40; {tpot} 10; }}
            expect "long prompt" {{ {tps} 9000; {tpot} 30; }}
        }}
        step sglang engine=sglang gpus=2 {{
            expect c1 {{ {tps} 1100; {ttft} 15; {tpot} 5; }}
            expect c4 {{ {tps} 3000; {ttft} 30; {tpot} 9; }}
        }}
    }}"#
    );
    parse(&SourceFile {
        name: "figs.kdl".into(),
        text,
    })
    .unwrap()
}

const VLLM: [&str; 3] = ["total_token_throughput", "mean_ttft_ms", "mean_tpot_ms"];

/// Each figure's id, title, note, and per panel its axes and series.
fn outline(figures: &[Figure]) -> String {
    let mut out = String::new();
    for f in figures {
        let _ = writeln!(out, "{}: {}", f.id, f.plot.title);
        let _ = writeln!(out, "  note: {}", f.plot.note.as_deref().unwrap_or("-"));
        for p in &f.plot.panels {
            let _ = writeln!(
                out,
                "  panel {:?}: x {:?}, y {:?}",
                p.title, p.x_title, p.y_title
            );
            for s in &p.series {
                let points: Vec<String> = s
                    .points
                    .iter()
                    .take(3)
                    .map(|(x, y)| format!("({x:.1}, {y:.2})"))
                    .collect();
                let _ = writeln!(
                    out,
                    "    {} {:?}: {}{} {:?}",
                    s.name.as_deref().unwrap_or("-"),
                    s.style,
                    points.join(" "),
                    if s.points.len() > 3 { " …" } else { "" },
                    s.labels
                );
            }
        }
    }
    out
}

#[test]
fn a_study_without_a_conclusion_gets_latency_frontier_and_distribution_charts() {
    let spec = spec("", VLLM);
    let analysis = analyze(&spec, from_expectations(&spec));
    assert!(analysis.conclusion.is_none());
    let mut journals = Journals::new();
    let record = RequestRecord {
        success: true,
        ttft: 0.05,
        itl: crate::metrics::Gaps::from_secs(&[0.01]),
        ..RequestRecord::default()
    };
    journals.insert(("vllm".into(), "c4".into()), RequestTimes::of(&[record]));
    let curves = curves(&spec, &analysis.runs, &journals);
    let figures = figures(&spec, &analysis, &curves);
    let ids: Vec<&str> = figures.iter().map(|f| f.id.as_str()).collect();
    // "long prompt" has one point: no line, no frontier.
    assert_eq!(ids, ["latency-c1", "frontier-c1", "cdf-c4"]);
    insta::assert_snapshot!(outline(&figures));
}

#[test]
fn every_chart_says_when_its_numbers_are_capped_imported_or_guidellms() {
    let spec = spec(
        r#"harness guidellm version="0.5.3""#,
        [
            "tokens_per_second_mean",
            "time_to_first_token_ms_mean",
            "time_per_output_token_ms_mean",
        ],
    );
    let mut analysis = analyze(&spec, from_expectations(&spec));
    for r in &mut analysis.runs {
        r.key = Some("k".into());
    }
    analysis.scope = Some(Scope {
        runtime: "docker".into(),
        max_prompts: Some(10),
    });
    let curves = curves(&spec, &analysis.runs, &Journals::new());
    let figures = figures(&spec, &analysis, &curves);
    assert!(!figures.is_empty());
    for f in &figures {
        assert_eq!(
            f.plot.note.as_deref(),
            Some(
                "imported numbers · capped at 10 prompts per workload (a smoke test) · guidellm's definitions: TPOT includes the TTFT"
            ),
            "{}",
            f.id
        );
    }
}

#[test]
fn ids_are_safe_in_file_names_and_html() {
    assert_eq!(file_safe("long prompt/../x"), "long_prompt____x");
}
