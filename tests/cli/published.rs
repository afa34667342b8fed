//! Reports built from the published expectations alone reproduce the
//! published tables to the printed digit.

use std::path::Path;
use std::process::Command;

use crate::common::FIXTURES;

fn published_report(experiment: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_perfpipe"))
        .args(["report", experiment, "--published"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `(Total TPS cells, delta)` of each conclusion row, e.g. `("3922.41", "5770.24", "+47.1%")`.
fn conclusion_rows(markdown: &str) -> Vec<(String, String, String)> {
    markdown
        .lines()
        .filter(|l| l.starts_with("| **"))
        .map(|l| {
            let values: Vec<&str> = l
                .split("Total TPS: ")
                .skip(1)
                .map(|v| v.split([' ', '<']).next().unwrap())
                .collect();
            let delta = l
                .split('(')
                .filter_map(|part| part.split_once(')').map(|(inside, _)| inside))
                .find(|inside| inside.ends_with('%'))
                .unwrap()
                .to_owned();
            (values[0].to_owned(), values[1].to_owned(), delta)
        })
        .collect()
}

fn check(experiment: &str, page: &str, deltas: &[&str]) {
    let report = published_report(experiment);
    let page = std::fs::read_to_string(Path::new(FIXTURES).join("published").join(page)).unwrap();
    let ours = conclusion_rows(&report);
    assert_eq!(ours, conclusion_rows(&page));
    assert_eq!(
        ours.iter().map(|r| r.2.as_str()).collect::<Vec<_>>(),
        deltas
    );
}

#[test]
fn qwen3_14b_conclusion_matches_the_page() {
    check(
        "experiments/qwen3-14b-a100.kdl",
        "qwen3-14b-a100.md",
        &["+47.1%", "+78.2%", "+25.3%", "+24.6%", "-0.4%"],
    );
}

#[test]
fn qwen3_235b_conclusion_matches_the_page_with_two_replicas() {
    check(
        "experiments/qwen3-235b-a100.kdl",
        "qwen3-235b-a100.md",
        &["+59.2%", "+33.2%", "+14.2%", "+13.4%", "+24.1%"],
    );
}

#[test]
fn qwen3_14b_report() {
    insta::assert_snapshot!(published_report("experiments/qwen3-14b-a100.kdl"));
}

#[test]
fn qwen3_235b_report() {
    insta::assert_snapshot!(published_report("experiments/qwen3-235b-a100.kdl"));
}

#[test]
fn published_ranking_lines_are_reproduced() {
    let report = published_report("experiments/qwen3-14b-a100.kdl");
    assert!(report.contains(
        "Result: TensorRT-LLM (5760.97 tok/s) > SGLang (5281.81 tok/s) > vLLM (3922.41 tok/s)"
    ));
    let report = published_report("experiments/qwen3-235b-a100.kdl");
    assert!(report.contains("Result: SGLang (4635.31 tok/s) > vLLM (3792.50 tok/s)"));
}
