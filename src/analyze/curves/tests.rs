use std::fmt::Write;

use super::*;
use crate::analyze::from_expectations;
use crate::spec::{SourceFile, parse};

/// A study of three loads of one workload, one at a rate, and another
/// dataset, over two engines (one on two GPUs).
fn spec() -> Spec {
    let text = r#"experiment "curves" {
        hardware "nvidia-h100-sxm5-80gb" gpus=2
        model "o/m"
        engine vllm version="0.11.0"
        engine sglang version="0.5.9"
        workload c1 { dataset random input=128 output=64 seed=1; prompts 100; concurrency 1; }
        workload c16 { dataset random input=128 output=64 seed=1; prompts 100; concurrency 16; }
        workload c4 { dataset random input=128 output=64 seed=1; prompts 100; concurrency 4; }
        workload long { dataset random input=4000 output=64 seed=1; prompts 100; }
        step vllm engine=vllm gpus=1 {
            expect c1 { total_token_throughput 500; mean_ttft_ms 20; mean_tpot_ms 8; mean_e2el_ms 524; }
            expect c4 { total_token_throughput 1600; mean_ttft_ms 40; mean_tpot_ms 10; mean_e2el_ms 670; }
            expect c16 { total_token_throughput 4000; mean_ttft_ms 90; mean_tpot_ms 20; mean_e2el_ms 1350; }
            expect long { total_token_throughput 9000; mean_tpot_ms 30; }
        }
        step sglang engine=sglang gpus=2 {
            expect c1 { total_token_throughput 1100; mean_ttft_ms 15; mean_tpot_ms 5; mean_e2el_ms 330; }
            expect c4 { total_token_throughput 3000; mean_ttft_ms 30; mean_tpot_ms 9; mean_e2el_ms 597; }
            expect-failure c16 "CUDA out of memory"
        }
    }"#;
    parse(&SourceFile {
        name: "curves.kdl".into(),
        text: text.into(),
    })
    .unwrap()
}

/// The numbers behind every curve, one line per point.
fn table(curves: &Curves) -> String {
    let mut out = String::new();
    for family in &curves.families {
        let _ = writeln!(
            out,
            "family {} (axis {:?}): {}",
            family.id(),
            family.axis,
            family.workloads.join(" ")
        );
        for curve in &family.curves {
            let _ = writeln!(out, "  {}", curve.label);
            for p in &curve.points {
                let _ = writeln!(
                    out,
                    "    {:<5} load {:>4} tps {:>7.1} ttft {:>5.1} tpot {:>5.1} e2el {:>7.1} per-gpu {:>7.1} per-user {:>6.1}{}",
                    p.workload,
                    p.load,
                    p.tps,
                    p.ttft_ms,
                    p.tpot_ms,
                    p.e2el_ms,
                    p.per_gpu,
                    p.per_user,
                    if p.on_frontier { "  frontier" } else { "" }
                );
            }
        }
    }
    for d in &curves.distributions {
        let _ = writeln!(out, "distribution {}", d.workload);
        for line in &d.lines {
            for (what, cdf) in [("ttft", &line.ttft), ("itl", &line.itl)] {
                let at = |p| cdf.at(p).map_or("-".into(), |v| format!("{v:.1}"));
                let _ = writeln!(
                    out,
                    "  {} {what} n={} p0 {} p25 {} p50 {} p90 {} p99 {} p100 {}",
                    line.label,
                    cdf.n,
                    at(0),
                    at(25),
                    at(50),
                    at(90),
                    at(99),
                    at(100)
                );
            }
        }
    }
    out
}

#[test]
fn loads_of_one_workload_form_a_curve_per_configuration_in_load_order() {
    let spec = spec();
    let curves = curves(&spec, &from_expectations(&spec), &Journals::new(), &[]);
    assert_eq!(curves.families.len(), 2);
    let family = &curves.families[0];
    assert_eq!(family.workloads, ["c1", "c4", "c16"]);
    assert_eq!(family.axis, LoadAxis::Concurrency);
    assert!(family.has_load_axis());
    assert!(!curves.families[1].has_load_axis());
    // The failed run is no point.
    assert_eq!(family.curves[1].points.len(), 2);
    insta::assert_snapshot!(table(&curves));
}

#[test]
fn the_frontier_keeps_only_points_no_other_beats_on_both_axes() {
    let spec = spec();
    let curves = curves(&spec, &from_expectations(&spec), &Journals::new(), &[]);
    let frontier: Vec<(&str, &str)> = curves.families[0]
        .frontier()
        .into_iter()
        .map(|(c, p)| (c.step.as_str(), p.workload.as_str()))
        .collect();
    // sglang c1 (200 tok/s/user, 550 tok/s/GPU) beats vllm c1 (125, 500) on
    // both; vllm c16 has the most per GPU, sglang c1 the most per user.
    assert_eq!(
        frontier,
        [
            ("vllm", "c16"),
            ("vllm", "c4"),
            ("sglang", "c4"),
            ("sglang", "c1")
        ]
    );
}

#[test]
fn rates_are_an_axis_and_other_datasets_another_family() {
    let text = r#"experiment "rates" {
        hardware "nvidia-h100-sxm5-80gb" gpus=1
        model "o/m"
        engine vllm version="0.11.0"
        workload r8 { dataset random input=8 output=8; prompts 10; rate 8; }
        workload r2 { dataset random input=8 output=8; prompts 10; rate 2; }
        workload all { dataset random input=8 output=8; prompts 10; }
        workload other { dataset random input=9 output=8; prompts 10; rate 2; }
        step vllm engine=vllm gpus=1
    }"#;
    let spec = parse(&SourceFile {
        name: "rates.kdl".into(),
        text: text.into(),
    })
    .unwrap();
    let families: Vec<(Vec<String>, LoadAxis)> = load_families(&spec);
    assert_eq!(
        families,
        [
            (
                vec!["r8".to_owned(), "r2".to_owned(), "all".to_owned()],
                LoadAxis::Rate
            ),
            (vec!["other".to_owned()], LoadAxis::Concurrency),
        ]
    );
    assert_eq!(
        load_of(spec.workload("all").unwrap(), LoadAxis::Rate, 2),
        f64::INFINITY
    );
}

fn request(ttft: f64, itl: &[f64], success: bool) -> RequestRecord {
    RequestRecord {
        success,
        ttft,
        itl: crate::metrics::Gaps::from_secs(itl),
        ..RequestRecord::default()
    }
}

#[test]
fn distributions_come_from_the_journals_successful_requests() {
    let spec = spec();
    let mut journals = Journals::new();
    let records: Vec<RequestRecord> = (1..=10)
        .map(|i| {
            request(
                f64::from(i) / 100.0,
                &[0.005, 0.010, 0.015 * f64::from(i)],
                true,
            )
        })
        .chain([request(9.0, &[9.0], false)])
        .collect();
    journals.insert(("vllm".into(), "c4".into()), RequestTimes::of(&records));
    journals.insert(
        ("sglang".into(), "c4".into()),
        RequestTimes::of(&[request(0.02, &[0.004], true)]),
    );
    let curves = curves(&spec, &from_expectations(&spec), &journals, &[]);
    assert_eq!(curves.distributions.len(), 1);
    let d = &curves.distributions[0];
    assert_eq!(d.workload, "c4");
    let ttft = &d.lines[0].ttft;
    assert_eq!(
        (ttft.n, ttft.at(0), ttft.at(100)),
        (10, Some(10.0), Some(100.0))
    );
    assert_eq!(d.lines[0].itl.n, 30);
    assert_eq!(d.lines[1].ttft.percentiles, vec![20.0; 101]);
    insta::assert_snapshot!(table(&Curves {
        families: Vec::new(),
        distributions: curves.distributions.clone()
    }));
}
