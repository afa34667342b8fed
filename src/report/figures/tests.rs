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
    let curves = curves(&spec, &analysis.runs, &journals, &[]);
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
    let curves = curves(&spec, &analysis.runs, &Journals::new(), &[]);
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

/// A distribution of `n` values: most near 5 ms, the slowest 0.5 % at `tail` ms.
fn gaps(n: usize, tail: f64) -> Cdf {
    let slow = n / 200;
    let values: Vec<f64> = (0..n)
        .map(|i| {
            if i < n - slow {
                4.0 + (i % 10) as f64 * 0.2
            } else {
                tail
            }
        })
        .collect();
    Cdf::of(&values)
}

#[test]
fn a_distributions_axis_ends_where_its_tail_begins_and_says_so() {
    // ITLs: 99.5 % under 6 ms, the rest at 350 ms. Drawn to the largest
    // gap, every curve would be a vertical line at 0.
    let long_tail = gaps(10_000, 350.0);
    let axis = CdfAxis::of(&[&long_tail, &gaps(4_000, 20.0)]);
    assert!(!axis.to_p99_9, "{axis:?}");
    assert!(axis.end < 6.0, "{axis:?}");
    assert_eq!(axis.note(), " (to p99; largest 350 ms)");
    let points = axis.points(&long_tail);
    assert_eq!(points.len(), 100);
    assert!(points.iter().all(|(x, _)| *x <= axis.end), "{points:?}");

    // A tail near the rest: to p99.9, and to the largest when it is close.
    let even = Cdf::of(&(1..=1000).map(f64::from).collect::<Vec<_>>());
    let axis = CdfAxis::of(&[&even]);
    assert!(axis.to_p99_9);
    assert_eq!(axis.end, 1000.0);
    assert_eq!(axis.note(), "");
    assert_eq!(axis.points(&even).last(), Some(&(1000.0, 1.0)));
    let spread = gaps(10_000, 15.0);
    let axis = CdfAxis::of(&[&spread]);
    assert!(axis.to_p99_9 && axis.end == 15.0, "{axis:?}");
}

/// The study with a search of `chat` over concurrency 1..=16 by two
/// configurations: `vllm` passes up to 4, `sglang` up to 16.
fn searched() -> (Spec, Analysis) {
    let text = r#"experiment "searched" {
        hardware "nvidia-h100-sxm5-80gb" gpus=2
        model "o/m"
        engine vllm version="0.11.0"
        engine sglang version="0.5.9"
        workload chat { dataset random input=128 output=64 seed=1; prompts 100; slo ttft_ms=300; search concurrency from=1 to=16; }
        step vllm engine=vllm gpus=1
        step sglang engine=sglang gpus=1
    }"#;
    let mut spec = parse(&SourceFile {
        name: "s.kdl".into(),
        text: text.into(),
    })
    .unwrap();
    let decl = spec.workloads[0].search.clone().unwrap();
    let other = self::spec("", VLLM);
    let template = from_expectations(&other).remove(0);
    let (mut runs, mut searches) = (Vec::new(), Vec::new());
    for (step, largest, probes) in [
        ("vllm", 4.0, &[1.0, 16.0, 8.0, 4.0, 6.0, 5.0][..]),
        ("sglang", 16.0, &[1.0, 16.0][..]),
    ] {
        let mut result = crate::analyze::search::SearchResult::new(
            step,
            "chat",
            &decl,
            "ttft_ms<=300".into(),
            crate::plan::search::Search::new(1.0, 16.0, crate::plan::search::Domain::Integer)
                .progress(|c| Some(c <= largest)),
        );
        assert_eq!(
            result.bracket.as_ref().unwrap().largest_passing,
            Some(largest)
        );
        result.probes.retain(|p| probes.contains(&p.load));
        for probe in &result.probes {
            let point = spec.workloads[0].probe(probe.load).unwrap();
            if !spec
                .workloads
                .iter()
                .any(|w| w.name.value == point.name.value)
            {
                spec.workloads.push(point);
            }
            runs.push(crate::analyze::RunRecord {
                step: step.into(),
                source: Some(crate::analyze::Source::Measured),
                workload: probe.workload.clone(),
                slo: Some(crate::analyze::SloResult {
                    objectives: "ttft_ms<=300".into(),
                    attainment: crate::metrics::slo::Attainment {
                        met: 0,
                        sent: 100,
                        pct: if probe.passed {
                            99.5
                        } else {
                            90.0 - probe.load
                        },
                        goodput: probe.load,
                    },
                }),
                ..template.clone()
            });
        }
        searches.push(result);
    }
    let mut analysis = analyze(&spec, Vec::new());
    analysis.runs = runs;
    analysis.searches = searches;
    (spec, analysis)
}

#[test]
fn a_search_is_drawn_as_its_metric_against_load_with_the_threshold_and_the_largest_passing_load() {
    let (spec, analysis) = searched();
    let mut journals = Journals::new();
    let record = RequestRecord {
        success: true,
        ttft: 0.05,
        itl: crate::metrics::Gaps::from_secs(&[0.01]),
        ..RequestRecord::default()
    };
    for probe in ["chat@c=1", "chat@c=4", "chat@c=5", "chat@c=16"] {
        for step in ["vllm", "sglang"] {
            journals.insert(
                (step.into(), probe.into()),
                RequestTimes::of(std::slice::from_ref(&record)),
            );
        }
    }
    let curves = curves(&spec, &analysis.runs, &journals, &analysis.searches);
    let figures = figures(&spec, &analysis, &curves);
    let ids: Vec<&str> = figures.iter().map(|f| f.id.as_str()).collect();
    // One chart of the search and one of its distributions; no probe is a
    // point of a load axis or a distribution of its own.
    assert_eq!(ids, ["search-chat", "cdf-chat"]);
    // 1..=16: bisection's probes at 4, 5 and 6 drawn apart on a log axis.
    assert!(
        figures[0]
            .plot
            .panels
            .iter()
            .all(|p| p.x_scale == Scale::Log2)
    );
    assert!(
        figures[1]
            .plot
            .panels
            .iter()
            .all(|p| p.x_scale == Scale::Linear)
    );
    insta::assert_snapshot!(outline(&figures));
}

#[test]
fn a_search_over_more_than_eightfold_loads_is_drawn_on_a_log_axis() {
    assert_eq!(search_scale(1.0, 256.0), Scale::Log2);
    assert_eq!(search_scale(0.5, 16.0), Scale::Log2);
    assert_eq!(search_scale(1.0, 8.0), Scale::Linear);
    assert_eq!(search_scale(4.0, 16.0), Scale::Linear);
    assert_eq!(search_scale(0.0, 16.0), Scale::Linear);
}

#[test]
fn each_family_gets_a_gpu_chart_of_its_configurations_at_their_highest_load() {
    use crate::metrics::telemetry::{GpuReading, GpuTimeline};
    let spec = spec("", VLLM);
    let mut analysis = analyze(&spec, from_expectations(&spec));
    analysis.scope = Some(Scope {
        runtime: "local".into(),
        max_prompts: Some(10),
    });
    let curves = curves(&spec, &analysis.runs, &Journals::new(), &[]);
    let charted = gpu_charted(&curves);
    let pair = |s: &str, w: &str| (s.to_owned(), w.to_owned());
    assert_eq!(
        charted,
        [
            pair("vllm", "c4"),
            pair("sglang", "c4"),
            pair("vllm", "long prompt")
        ],
        "one run per configuration and family"
    );
    let timeline = |seconds: u32, power: f64| {
        let mut t = GpuTimeline::default();
        for s in 1..=seconds {
            for index in 0..2 {
                t.add(&GpuReading {
                    t_s: f64::from(s),
                    index,
                    power_w: Some(power + f64::from(index) * 10.0),
                    utilization_pct: Some(90.0),
                });
            }
        }
        t
    };
    let mut series = GpuSeries::new();
    series.insert(pair("vllm", "c4"), timeline(4, 300.0));
    // Longer than a chart's points: a point per 2 s.
    series.insert(pair("vllm", "long prompt"), timeline(400, 500.0));
    // sglang's has no series (stored before lines were timed): left out.
    series.insert(pair("sglang", "c4"), GpuTimeline::default());
    let figures = gpu_figures(&spec, &analysis, &curves, &series);
    let ids: Vec<&str> = figures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["gpu-c1", "gpu-long_prompt"]);
    assert!(
        gpu_figures(&spec, &analysis, &curves, &GpuSeries::new()).is_empty(),
        "no series, no chart"
    );
    insta::assert_snapshot!(outline(&figures));
}
