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

/// `(case, Total TPS cells, delta)` of each conclusion row, e.g.
/// `("ShareGPT", "3922.41", "5770.24", "+47.1%")`.
fn conclusion_rows(markdown: &str) -> Vec<(String, String, String, String)> {
    markdown
        .lines()
        .filter(|l| l.starts_with("| **"))
        .map(|l| {
            let case = l["| **".len()..].split("**").next().unwrap().to_owned();
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
            (case, values[0].to_owned(), values[1].to_owned(), delta)
        })
        .collect()
}

/// `(option, improvement)` of each row of the "Summary of Optimization Options".
fn summary_rows(markdown: &str) -> Vec<(String, String)> {
    let table = markdown
        .split("Summary of Optimization Options")
        .nth(1)
        .unwrap();
    table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let value = cells[2]
                .trim_end_matches("</span>")
                .rsplit('>')
                .next()
                .unwrap()
                .to_owned();
            (cells[1].to_owned(), value)
        })
        .collect()
}

fn check(experiment: &str, page: &str, deltas: &[&str]) {
    let report = published_report(experiment);
    let page = std::fs::read_to_string(Path::new(FIXTURES).join("published").join(page)).unwrap();
    let ours = conclusion_rows(&report);
    assert_eq!(ours, conclusion_rows(&page));
    assert_eq!(
        ours.iter().map(|r| r.3.as_str()).collect::<Vec<_>>(),
        deltas
    );
    assert_eq!(summary_rows(&report), summary_rows(&page));
}

#[test]
fn qwen3_14b_conclusion_matches_the_page() {
    check(
        "experiments/qwen3-14b-a100.kdl",
        "qwen3-14b-a100.md",
        &["+47.1%", "+78.2%", "+25.3%", "+24.6%", "-0.4%"],
    );
    let page =
        std::fs::read_to_string(Path::new(FIXTURES).join("published/qwen3-14b-a100.md")).unwrap();
    assert_eq!(
        summary_rows(&page),
        [
            ("Engine Selection".to_owned(), "+47.1%".to_owned()),
            ("Quantization".to_owned(), "-".to_owned()),
            ("Max Batched Token Numbers".to_owned(), "-".to_owned()),
        ],
        "the page's summary, as the test reads it"
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

/// The result blocks of a published page, as printed (4-space indent removed).
fn blocks(page: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(FIXTURES).join("published").join(page)).unwrap();
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.contains("Serving Benchmark Result") {
            current = Some(String::new());
        }
        if let Some(block) = current.as_mut() {
            block.push_str(line);
            block.push('\n');
            if line.len() == 50 && line.chars().all(|c| c == '=') {
                out.push(current.take().unwrap());
            }
        }
    }
    out
}

/// Every published block parses, and its numbers are exactly the experiment's
/// expectations (which a separate script extracted from the same page).
#[test]
fn every_published_block_imports_to_the_printed_numbers() {
    use perfpipe::metrics::parse_block;
    use perfpipe::spec::{ExpectedOutcome, SourceFile, parse};

    for (page, experiment) in [
        ("qwen3-14b-a100.md", "qwen3-14b-a100.kdl"),
        ("qwen3-235b-a100.md", "qwen3-235b-a100.kdl"),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("experiments")
            .join(experiment);
        let spec = parse(&SourceFile {
            name: experiment.into(),
            text: std::fs::read_to_string(path).unwrap(),
        })
        .unwrap();
        let mut expected: Vec<String> = spec
            .steps
            .iter()
            .flat_map(|s| &s.expectations)
            .filter_map(|x| match &x.outcome {
                ExpectedOutcome::Metrics(m) if m.len() > 2 => Some(
                    m.iter()
                        .map(|m| format!("{}={}", m.name, m.value))
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            })
            .collect();
        let mut parsed: Vec<String> = blocks(page)
            .iter()
            .map(|b| {
                let block = parse_block(b).unwrap_or_else(|e| panic!("{page}: {e}\n{b}"));
                let mut pairs: Vec<(String, f64)> = block.metrics.into_iter().collect();
                let order: Vec<&str> = perfpipe::metrics::METRIC_NAMES.to_vec();
                pairs.sort_by_key(|(k, _)| order.iter().position(|o| o == k));
                pairs
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        expected.sort();
        parsed.sort();
        assert_eq!(
            parsed.len(),
            15,
            "{page}: 7 engine/flag blocks and 8 other-case blocks"
        );
        assert_eq!(parsed, expected, "{page}");
    }
}

#[test]
fn an_imported_block_is_reported_as_published_and_never_counts_as_measured() {
    let env = crate::common::TestEnv::tiny();
    let block = blocks("qwen3-14b-a100.md").remove(0);
    env.write("block.txt", &format!("    # vLLM, ShareGPT\n{block}"));
    let out = env.run(&[
        "import",
        "tiny.kdl",
        "--runtime",
        "sim",
        "--step",
        "vllm",
        "--workload",
        "chat",
        "--from",
        "block.txt",
        "--source",
        "gpustack performance lab",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("imported 18 published numbers"));
    let report = env.run(&["report", "tiny.kdl", "--runtime", "sim"]);
    let report = String::from_utf8_lossy(&report.stdout);
    assert!(report.contains("| `vllm` | `chat` |"), "{report}");
    assert!(
        report.contains("published | 1000 | 106.82 | 3922.41"),
        "{report}"
    );
    let plan = env.run(&["plan", "tiny.kdl", "--runtime", "sim"]);
    assert!(
        String::from_utf8_lossy(&plan.stdout).contains("0 cached"),
        "an import is not a measurement"
    );
    assert!(
        report.contains("have only imported results, the page's own numbers, which are not scored"),
        "{report}"
    );
    let verify = env.run(&[
        "verify",
        "tiny.kdl",
        "--runtime",
        "sim",
        "--metrics",
        "total_token_throughput",
    ]);
    assert_eq!(verify.status.code(), Some(4), "nothing measured");
    assert!(
        String::from_utf8_lossy(&verify.stdout)
            .contains("| vllm | chat | total_token_throughput | 1000.00 | 3922.41 | +292.24% | published | not scored |"),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    assert!(
        crate::common::words(&verify).contains("1 checks within ±5%: 0 within, 0 outside, 0 missing, 1 not scored (simulated or imported) perfpipe: nothing measured to verify"),
        "{}",
        crate::common::words(&verify)
    );
    // Simulated results are not scored either, as in the report.
    let sim = env.run(&["run", "tiny.kdl", "--runtime", "sim", "--max-prompts", "4"]);
    assert_eq!(
        sim.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&sim.stderr)
    );
    let verify = env.run(&[
        "verify",
        "tiny.kdl",
        "--runtime",
        "sim",
        "--max-prompts",
        "4",
    ]);
    assert_eq!(verify.status.code(), Some(4));
    assert!(
        !String::from_utf8_lossy(&verify.stdout).contains("| within |")
            && crate::common::words(&verify).contains("nothing measured to verify"),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );

    let bad = env.run(&[
        "import",
        "tiny.kdl",
        "--runtime",
        "sim",
        "--step",
        "vllm",
        "--workload",
        "chat",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    env.write("broken.txt", "============ Serving Benchmark Result ============\nSuccessful requests: 10\nMystery row: 3\n");
    let broken = env.run(&[
        "import",
        "tiny.kdl",
        "--runtime",
        "sim",
        "--step",
        "vllm",
        "--workload",
        "chat",
        "--from",
        "broken.txt",
    ]);
    assert_eq!(broken.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&broken.stderr).contains("line 3: `Mystery row: 3` is not a row")
    );
}
