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
    let env = crate::common::TestEnv::tiny_importing();
    let block = blocks("qwen3-14b-a100.md").remove(0);
    env.write("block.txt", &format!("    # vLLM, ShareGPT\n{block}"));
    let out = env.run(&[
        "import",
        "tiny.kdl",
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
    // The page's numbers are filed under the experiment's own runtime.
    let report = env.run(&["report", "tiny.kdl"]);
    let report = String::from_utf8_lossy(&report.stdout);
    assert!(report.contains("| `vllm` | `chat` |"), "{report}");
    assert!(
        report.contains("published | 1000 | 106.82 | 3922.41"),
        "{report}"
    );
    let plan = env.run(&["plan", "tiny.kdl"]);
    assert!(
        String::from_utf8_lossy(&plan.stdout).contains("0 cached"),
        "an import is not a measurement"
    );
    assert!(
        report.contains("have only imported results, the page's own numbers, which are not scored"),
        "{report}"
    );
    let verify = env.run(&["verify", "tiny.kdl", "--metrics", "total_token_throughput"]);
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

    let bad = env.run(&["import", "tiny.kdl", "--step", "vllm", "--workload", "chat"]);
    assert_eq!(bad.status.code(), Some(2));
    env.write("broken.txt", "============ Serving Benchmark Result ============\nSuccessful requests: 10\nMystery row: 3\n");
    let broken = env.run(&[
        "import",
        "tiny.kdl",
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

/// Every page of the performance-lab corpus, with its number of result blocks
/// and how many of them are guidellm-era (GPUStack's rendering of guidellm).
const CORPUS: &[(&str, usize, usize)] = &[
    ("deepseek-r1-h200.md", 15, 0),
    ("glm-4.5-air-a100.md", 14, 0),
    ("glm-4.5-air-h100.md", 15, 0),
    ("glm-4.x-a100.md", 5, 0),
    ("glm-4.x-h100.md", 3, 0),
    ("glm-4.x-h200.md", 15, 0),
    ("gpt-oss-120b-a100.md", 16, 0),
    ("gpt-oss-120b-h100.md", 18, 0),
    ("gpt-oss-20b-a100.md", 13, 0),
    ("gpt-oss-20b-h100.md", 13, 0),
    ("qwen3-14b-a100.md", 15, 0),
    ("qwen3-14b-h100.md", 15, 0),
    ("qwen3-235b-a22b-a100.md", 15, 0),
    ("qwen3-235b-a22b-h100.md", 14, 0),
    ("qwen3-32b-a100.md", 15, 0),
    ("qwen3-8b-910b.md", 15, 0),
    ("qwen3-8b-h100-latency.md", 25, 0),
    ("qwen3.5-35b-a3b-h200.md", 15, 15),
    ("qwen3.5-9b-h100-latency.md", 18, 18),
];

/// Each block of the corpus with its page: `(page, block)`.
fn corpus_blocks() -> Vec<(&'static str, String)> {
    CORPUS
        .iter()
        .flat_map(|(page, _, _)| {
            blocks(&format!("gpustack-perf-lab/{page}"))
                .into_iter()
                .map(move |b| (*page, b))
        })
        .collect()
}

/// `(label, value text)` of each row of a block, as printed.
fn printed_rows(block: &str) -> Vec<(&str, &str)> {
    block
        .lines()
        .filter(|l| !l.starts_with('=') && !l.starts_with('-'))
        .filter_map(|l| l.rsplit_once(':'))
        .map(|(label, value)| (label.trim(), value.trim()))
        .collect()
}

/// Every block of every page parses, in both eras, and holds exactly the
/// page's numbers: each printed value, to its printed digits, under a name
/// whose kept label is the row's; `N/A` rows absent; nothing more.
#[test]
fn every_block_of_the_corpus_parses_to_the_page_numbers() {
    use perfpipe::metrics::{GUIDELLM_METRIC_NAMES, METRIC_NAMES, MetricSet, parse_block};

    let all = corpus_blocks();
    assert_eq!(all.len(), 274, "the corpus has 274 result blocks");
    for (page, count, guidellm) in CORPUS {
        let page_blocks: Vec<&String> = all
            .iter()
            .filter(|(p, _)| p == page)
            .map(|(_, b)| b)
            .collect();
        assert_eq!(page_blocks.len(), *count, "{page}");
        let mut eras = 0;
        for block in page_blocks {
            let parsed = parse_block(block).unwrap_or_else(|e| panic!("{page}: {e}\n{block}"));
            let numbers = parsed.numbers();
            let names: Vec<&str> = match parsed.set {
                MetricSet::Vllm => METRIC_NAMES.to_vec(),
                MetricSet::Guidellm => {
                    eras += 1;
                    GUIDELLM_METRIC_NAMES.iter().map(String::as_str).collect()
                }
            };
            let rows = printed_rows(block);
            let mut stated = 0;
            for (label, text) in &rows {
                let named: Vec<&String> = parsed
                    .labels
                    .iter()
                    .filter(|(_, l)| l == label)
                    .map(|(n, _)| n)
                    .collect();
                if *text == "N/A" {
                    assert!(named.is_empty(), "{page}: `{label}` is N/A\n{block}");
                    continue;
                }
                stated += 1;
                let [name] = named.as_slice() else {
                    panic!("{page}: `{label}` has names {named:?}\n{block}");
                };
                assert!(
                    names.contains(&name.as_str()),
                    "{page}: `{name}` is not a name `expect` accepts"
                );
                let value = numbers[name.as_str()];
                let digits = text.split_once('.').map_or(0, |(_, d)| d.len());
                assert_eq!(
                    format!("{value:.digits$}"),
                    *text,
                    "{page}: `{label}`\n{block}"
                );
                assert_eq!(value, text.parse::<f64>().unwrap(), "{page}: `{label}`");
            }
            assert_eq!(
                numbers.len(),
                stated,
                "{page}: nothing but the page's numbers"
            );
        }
        assert_eq!(eras, *guidellm, "{page}: guidellm-era blocks");
    }
}

/// What the guidellm-era rows carry, checked block against block: "Mean TPOT"
/// is guidellm's time per output token, which includes the first token
/// (= (TTFT + ITL × (n − 1)) / n with n the mean output length, where vLLM's
/// TPOT would be the ITL), and the throughputs are means of rate
/// distributions, not tokens / duration as in every vLLM-era block.
#[test]
fn guidellm_era_rows_carry_guidellm_definitions() {
    use perfpipe::metrics::{MetricSet, parse_block};

    let (mut tpot_includes_ttft, mut guidellm, mut vllm) = (0, 0, 0);
    for (page, block) in corpus_blocks() {
        let m = parse_block(&block).unwrap().metrics;
        match parse_block(&block).unwrap().set {
            MetricSet::Guidellm => {
                guidellm += 1;
                let n = m["output_token_count_total_sum"] / m["request_totals_successful"];
                let with_ttft = (m["time_to_first_token_ms_mean"]
                    + m["inter_token_latency_ms_mean"] * (n - 1.0))
                    / n;
                if (with_ttft - m["time_per_output_token_ms_mean"]).abs() <= 0.015 {
                    tpot_includes_ttft += 1;
                }
                assert!(m["time_per_output_token_ms_mean"] >= m["inter_token_latency_ms_mean"]);
                let tokens = m["prompt_token_count_total_sum"] + m["output_token_count_total_sum"];
                let over_duration = tokens / m["duration"];
                assert!(
                    (m["tokens_per_second_mean"] - over_duration).abs() > 0.5,
                    "{page}: {} vs {over_duration}",
                    m["tokens_per_second_mean"]
                );
            }
            MetricSet::Vllm => {
                vllm += 1;
                let tokens = m["total_input_tokens"] + m.get("total_output_tokens").unwrap_or(&0.0);
                let duration = m["duration"];
                // The duration is printed to 0.005 s, the throughput to 0.005 tok/s.
                let slack = tokens * 0.005 / (duration * (duration - 0.005)) + 0.005;
                assert!(
                    (m["total_token_throughput"] - tokens / duration).abs() <= slack,
                    "{page}: {} vs {}",
                    m["total_token_throughput"],
                    tokens / duration
                );
            }
        }
    }
    assert_eq!((guidellm, vllm), (33, 241));
    // The one exception has 516 of 1000 requests successful.
    assert_eq!(tpot_includes_ttft, 32);
}

/// A guidellm-era block imports under guidellm's names, says whose numbers
/// they are, and the same block imported again adds nothing and says so.
#[test]
fn a_guidellm_era_block_imports_once_under_guidellm_names() {
    let env = crate::common::TestEnv::tiny_importing();
    let block = blocks("gpustack-perf-lab/qwen3.5-9b-h100-latency.md").remove(0);
    let import = || env.import_block("chat", &block);
    crate::perfpipe_snapshot!(import(), @r"
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    perfpipe: imported 26 published numbers (guidellm's, as GPUStack prints them under vLLM's labels) for `vllm` × `chat` ([SHORT-KEY])
    perfpipe: note: the block's numbers are guidellm's and the experiment's harness measures under vLLM's definitions; reports show each under its own names, never one as the other
    ");
    assert_eq!(env.samples().len(), 1);
    let stored = env.read(&format!(
        "store/entries/{}/{}/samples/0001/result.json",
        &env.samples()[0][..2],
        env.samples()[0].split_once('/').unwrap().0
    ));
    assert!(
        stored.contains(r#""time_per_output_token_ms_mean": 1.34"#),
        "{stored}"
    );
    assert!(
        stored.contains(r#""time_per_output_token_ms_mean": "Mean TPOT (ms)""#),
        "{stored}"
    );
    assert!(!stored.contains("mean_tpot_ms"), "never under vLLM's names");
    crate::perfpipe_snapshot!(import(), @r"
    exit_code: 0
    ----- stdout -----

    ----- stderr -----
    perfpipe: `vllm` × `chat` ([SHORT-KEY]) already has these 26 published numbers (sample 0001); nothing imported
    perfpipe: note: the block's numbers are guidellm's and the experiment's harness measures under vLLM's definitions; reports show each under its own names, never one as the other
    ");
    assert_eq!(env.samples().len(), 1, "the second import adds nothing");
}

/// Options that shape a run mean nothing for `import`, which does not offer them.
#[test]
fn import_offers_no_run_options() {
    let env = crate::common::TestEnv::tiny();
    for option in [
        &["--runtime", "sim"][..],
        &["--samples", "2"],
        &["--max-prompts", "4"],
        &["--retry-failed"],
        &["--fresh-engine"],
    ] {
        let mut args = vec!["import", "tiny.kdl", "--step", "vllm", "--workload", "chat"];
        args.extend_from_slice(option);
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(2), "{option:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains(&format!("unexpected argument '{}'", option[0])),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Through the binary, a block of each era is stored with exactly the numbers
/// and labels the page prints: the configured limit of a `vllm bench serve`
/// block as `max_concurrency`, a guidellm-era block under guidellm's names.
#[test]
fn a_block_of_each_era_is_stored_with_every_number_of_the_page() {
    use perfpipe::metrics::parse_block;

    let env = crate::common::TestEnv::tiny_importing();
    let vllm = blocks("gpustack-perf-lab/gpt-oss-120b-h100.md")
        .into_iter()
        .find(|b| b.contains("Maximum request concurrency"))
        .unwrap();
    let guidellm = blocks("gpustack-perf-lab/qwen3.5-35b-a3b-h200.md").remove(0);
    for (workload, block, name) in [
        ("chat", &vllm, "max_concurrency"),
        ("short", &guidellm, "request_concurrency_max_rounded"),
    ] {
        let out = env.import_block(workload, block);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let parsed = parse_block(block).unwrap();
        let sample = env
            .samples()
            .into_iter()
            .find(|s| {
                let (key, id) = s.split_once('/').unwrap();
                env.read(&format!(
                    "store/entries/{}/{key}/samples/{id}/result.json",
                    &key[..2]
                ))
                .contains(name)
            })
            .unwrap_or_else(|| panic!("a sample with `{name}`"));
        let (key, id) = sample.split_once('/').unwrap();
        let stored: serde_json::Value = serde_json::from_str(&env.read(&format!(
            "store/entries/{}/{key}/samples/{id}/result.json",
            &key[..2]
        )))
        .unwrap();
        let metrics: std::collections::BTreeMap<String, f64> =
            serde_json::from_value(stored["outcome"]["metrics"].clone()).unwrap();
        assert_eq!(metrics, parsed.numbers(), "{workload}");
        let labels: std::collections::BTreeMap<String, String> =
            serde_json::from_value(stored["outcome"]["labels"].clone()).unwrap();
        assert_eq!(labels, parsed.labels, "{workload}");
        assert_eq!(labels[name], "Maximum request concurrency");
    }
}

/// The guidellm-era H200 study, written by hand: every block of its page
/// imports to exactly the experiment's expectations (the page repeats two of
/// them under "Other Benchmark Cases"), and its published report reproduces
/// the page's conclusion and summary, but for the one summary note the
/// language has no place for.
#[test]
fn qwen3_5_35b_h200_holds_every_number_of_its_page() {
    use perfpipe::metrics::parse_block;
    use perfpipe::spec::{ExpectedOutcome, SourceFile, parse};

    let page = "gpustack-perf-lab/qwen3.5-35b-a3b-h200.md";
    let experiment = "experiments/qwen3.5-35b-a3b-h200.kdl";
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = parse(&SourceFile {
        name: experiment.into(),
        text: std::fs::read_to_string(root.join(experiment)).unwrap(),
    })
    .unwrap();
    let mut expected: Vec<String> = spec
        .steps
        .iter()
        .flat_map(|s| &s.expectations)
        .map(|x| {
            let ExpectedOutcome::Metrics(m) = &x.outcome else {
                panic!("the page records no failure")
            };
            let mut pairs: Vec<String> = m
                .iter()
                .map(|m| format!("{}={}", m.name, m.value))
                .collect();
            pairs.sort();
            pairs.join(" ")
        })
        .collect();
    let mut parsed: Vec<String> = blocks(page)
        .iter()
        .map(|b| {
            let block = parse_block(b).unwrap_or_else(|e| panic!("{page}: {e}\n{b}"));
            let pairs: Vec<String> = block
                .metrics
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            pairs.join(" ")
        })
        .collect();
    assert_eq!(
        parsed.len(),
        15,
        "7 engine/flag blocks and 8 other-case blocks"
    );
    parsed.sort();
    parsed.dedup();
    expected.sort();
    assert_eq!(parsed, expected);

    let report = published_report(experiment);
    let text = std::fs::read_to_string(Path::new(FIXTURES).join("published").join(page)).unwrap();
    let ours = conclusion_rows(&report);
    assert_eq!(ours, conclusion_rows(&text));
    let deltas: Vec<&str> = ours.iter().map(|r| r.3.as_str()).collect();
    assert_eq!(deltas, ["+9.75%", "+33.03%", "+25.41%", "+17.25%"]);

    // The page's summary prints, instead of the speculative decoding gain
    // (+61.07%), its success rate, as its rule skips it: so does the report
    // (cell for cell: `the_guidellm_era_pages_are_reproduced_cell_for_cell`).
    assert!(report.contains("Total TPS: 15514.15 <span style=\"background-color:#ffd6d6;\">(Success rate: 51.6%, optimization skipped)</span>"));
}

#[test]
fn a_block_whose_request_count_contradicts_the_workload_is_refused_at_its_line() {
    let env = crate::common::TestEnv::tiny();
    // 1000 successful requests; tiny's `chat` sends 30.
    let block = blocks("qwen3-14b-a100.md").remove(0);
    let out = env.import_block("chat", &block);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        crate::common::render(&out)
    );
    let line = block
        .lines()
        .position(|l| l.starts_with("Successful requests"))
        .unwrap()
        + 1;
    let err = crate::common::words(&out);
    assert!(
        err.contains(&format!(
            "block.txt: line {line}: 1000 successful requests are more than the workload's 30 prompts"
        )) && err.contains("`chat` sends 30 requests (`prompts`)"),
        "{err}"
    );
    assert!(env.samples().is_empty());
}

/// `perfpipe <args>` in the repository: exit code, stdout, stderr.
fn perfpipe(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_perfpipe"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .env(
            "PERFPIPE_STORE",
            std::env::temp_dir().join("perfpipe-pages-no-store"),
        )
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_delta_that_rounds_to_zero_keeps_its_sign_as_the_page_prints_it() {
    let report = published_report("tests/fixtures/pages/gpt-oss-20b-h100.kdl");
    assert!(report.contains(
        "Total TPS: 29718.21 <span style=\"background-color:#fbcaca;\">(-0.0%)</span><br>Mean TPOT(ms): 239.49"
    ));
    assert!(!report.contains('⚠'), "{report}");
    insta::assert_snapshot!(report);
}

#[test]
fn a_delta_per_gpu_is_checked_per_gpu() {
    let report = published_report("tests/fixtures/pages/gpt-oss-120b-h100.kdl");
    assert!(report.contains(
        "Total TPS: 16042.19 <span style=\"background-color:lightgreen;\">(+31.6%/GPU)</span>"
    ));
    assert!(report.contains(
        "Total TPS: 31517.47 <span style=\"background-color:#fbcaca;\">(-7.6%/GPU)</span>"
    ));
    assert!(report.contains("The page's delta for this section: +26.8%/GPU"));
    assert!(!report.contains('⚠'), "{report}");
    insta::assert_snapshot!(report);
}

#[test]
fn a_delta_its_numbers_do_not_give_is_shown_with_both_values_and_listed_by_verify() {
    let experiment = "tests/fixtures/pages/qwen3-32b-a100.kdl";
    let report = published_report(experiment);
    assert!(report.contains(
        "Total TPS: 1580.36 <span style=\"background-color:#fbcaca;\">(-12.1% ⚠ page: -13.8%)</span>"
    ));
    assert!(report.contains(
        "Total TPS: 2037.67 <span style=\"background-color:lightgreen;\">(+10.9%)</span><br>"
    ));
    insta::assert_snapshot!(report);
    let (code, out, err) = perfpipe(&["verify", experiment, "--runtime", "sim"]);
    assert!(
        out.contains("| Conclusion, Very Long Prompt, optimized | -13.8% | -12.1% |"),
        "{out}"
    );
    assert!(
        err.contains("1 printed values of the page contradict its own numbers"),
        "{err}"
    );
    // Not a measurement failure: the exit code is the measurements' (none here: 4).
    assert_eq!(code, 4, "{err}");
}

#[test]
fn a_conclusion_number_no_block_shows_is_flagged() {
    let report = published_report("experiments/qwen3-14b-a100.kdl");
    assert!(report.contains(
        "Total TPS: 5770.24 ⚠ no block <span style=\"background-color:lightgreen;\">(+47.1%)</span>"
    ));
    assert!(report.contains(
        "- Conclusion, ShareGPT, optimized: no result block of the page shows Total TPS of `trtllm-optimized` on ShareGPT"
    ));
    // The page's other cells are reproduced without a mark.
    let marks: usize = report
        .lines()
        .filter(|l| l.starts_with("| **"))
        .map(|l| l.matches('⚠').count())
        .sum();
    assert_eq!(marks, 2, "{report}");
}

/// The rows of the markdown table whose header starts with `header`, each
/// cell with its runs of spaces collapsed, as a page and a report print them.
fn table_rows(markdown: &str, header: &str) -> Vec<Vec<String>> {
    markdown
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect()
        })
        .collect()
}

fn lab_page(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(FIXTURES)
            .join("published/gpustack-perf-lab")
            .join(name),
    )
    .unwrap()
}

#[test]
fn the_guidellm_era_pages_are_reproduced_cell_for_cell() {
    let cases = [
        (
            "experiments/qwen3.5-35b-a3b-h200.kdl",
            "qwen3.5-35b-a3b-h200.md",
            "| Benchmark Cases",
        ),
        (
            "experiments/qwen3.5-9b-h100-latency.kdl",
            "qwen3.5-9b-h100-latency.md",
            "| Benchmark Case | Group",
        ),
    ];
    for (experiment, page, summary_header) in cases {
        let report = published_report(experiment);
        let page = lab_page(page);
        let conclusion = "| Benchmark Case | ";
        assert_eq!(
            table_rows(&report, conclusion),
            table_rows(&page, conclusion),
            "{experiment}"
        );
        assert_eq!(
            table_rows(&report, summary_header),
            table_rows(&page, summary_header),
            "{experiment}"
        );
        assert!(!report.contains('⚠'), "{report}");
        // Each section's "Summary:" sentence, its numbers computed again.
        for sentence in page.lines().filter_map(|l| l.strip_prefix("- Summary: ")) {
            assert!(
                report.contains(&format!("\nSummary: {sentence}\n")),
                "{sentence}"
            );
        }
    }
    // The page's command, which bash would brace-expand, is quoted.
    let report = published_report("experiments/qwen3.5-9b-h100-latency.kdl");
    assert!(report.contains(
        r#"--max-model-len=32768 '--speculative-config={"method":"mtp","num_speculative_tokens":1}' --language-model-only"#
    ));
}

#[test]
fn qwen3_5_35b_report() {
    insta::assert_snapshot!(published_report("experiments/qwen3.5-35b-a3b-h200.kdl"));
}

#[test]
fn qwen3_5_9b_latency_report() {
    insta::assert_snapshot!(published_report("experiments/qwen3.5-9b-h100-latency.kdl"));
}

#[test]
fn conclusion_numbers_other_than_the_blocks_and_deltas_rounded_twice_are_flagged() {
    let experiment = "tests/fixtures/pages/qwen3-8b-910b.kdl";
    let report = published_report(experiment);
    assert!(
        report.contains("Total TPS: 13362.49 ⚠ page: 11159.01"),
        "{report}"
    );
    assert!(report.contains(
        "- Conclusion, Long Prompt, optimized: the page prints +45.4%; its numbers 7677.41 and 11159.01 give 45.349% (45.348 to 45.349 within their rounding); rounded first to 2 decimals (45.35), then to 1, it gives +45.4%: the page seems to have rounded twice"
    ), "{report}");
    assert!(
        report.contains("the page prints +171.1%; its numbers 2890.64 and 7835.01 give 171.048%")
    );
    let (_, out, _) = perfpipe(&["verify", experiment, "--runtime", "sim"]);
    let listed = out
        .lines()
        .filter(|l| l.starts_with("| Conclusion, "))
        .count();
    assert_eq!(listed, 6, "two deltas and four cells no block shows: {out}");
    insta::assert_snapshot!(report);
}
