//! `perfpipe init --from-page` over the whole published corpus: every page
//! becomes an experiment (snapshotted) that perfpipe itself parses and plans.

use std::path::{Path, PathBuf};

use perfpipe::facts::Runtime;
use perfpipe::spec::SourceFile;

use crate::common::{FIXTURES, TestEnv, stderr, stdout};

fn pages() -> Vec<PathBuf> {
    let dir = Path::new(FIXTURES).join("published/gpustack-perf-lab");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages
}

/// Every page: the generated experiment (snapshot), parsed and planned by
/// perfpipe on `sim` through the library (the binary adds nothing here; the
/// end-to-end run is `init_writes_the_file_and_never_overwrites_it`).
#[test]
fn every_page_of_the_lab_becomes_an_experiment_that_plans() {
    let pages = pages();
    assert_eq!(pages.len(), 19, "the corpus has 19 pages");
    let env = TestEnv::new();
    // A small stand-in for the ShareGPT sample: the plan, not the sampling, is tested.
    env.copy_fixture(
        "datasets/sharegpt-tiny.json",
        "datasets/sharegpt-sample.json",
    );
    for page in pages {
        let stem = page.file_stem().unwrap().to_str().unwrap().to_owned();
        let text = std::fs::read_to_string(&page).unwrap();
        let generated = perfpipe::page::init(&text).unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert_eq!(
            perfpipe::page::init(&text).unwrap().kdl,
            generated.kdl,
            "{stem}: the same page gives the same bytes"
        );
        insta::assert_snapshot!(format!("page_{stem}"), generated.kdl);
        let source = SourceFile {
            name: format!("{stem}.kdl"),
            text: generated.kdl.clone(),
        };
        let spec = perfpipe::spec::parse(&source)
            .unwrap_or_else(|e| panic!("{stem}: {:?}", miette::Report::new(e)));
        let inputs = perfpipe::inputs::resolve(
            &spec,
            env.dir.path(),
            &mut perfpipe::inputs::HashCache::in_memory(),
        )
        .unwrap_or_else(|e| panic!("{stem}: {e}"));
        let runs = perfpipe::key::keyed_runs(&spec, Runtime::Sim, &inputs);
        let expectations: usize = spec.steps.iter().map(|s| s.expectations.len()).sum();
        assert!(
            expectations >= generated.blocks + generated.failures,
            "{stem}: {expectations} expectations for {} blocks and {} failures",
            generated.blocks,
            generated.failures
        );
        assert!(
            runs.len() >= expectations,
            "{stem}: every expectation is a run"
        );
    }
}

#[test]
fn init_writes_the_file_and_never_overwrites_it() {
    let env = TestEnv::new();
    env.copy_fixture("published/gpustack-perf-lab/qwen3-14b-a100.md", "page.md");
    let out = env.run(&["init", "--from-page", "page.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("wrote experiments/qwen3-14b-a100.kdl"),
        "{}",
        stdout(&out)
    );
    let written = env.read("experiments/qwen3-14b-a100.kdl");
    let page = env.read("page.md");
    assert_eq!(written, perfpipe::page::init(&page).unwrap().kdl);

    // An existing file stays unless --force.
    env.write("experiments/qwen3-14b-a100.kdl", "// mine\n");
    let out = env.run(&["init", "--from-page", "page.md"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`experiments/qwen3-14b-a100.kdl` exists"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(env.read("experiments/qwen3-14b-a100.kdl"), "// mine\n");
    let out = env.run(&["init", "--from-page", "page.md", "-o", "mine.kdl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env.run(&["init", "--from-page", "page.md", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.read("experiments/qwen3-14b-a100.kdl"), written);

    // The binary plans what it wrote.
    env.copy_fixture(
        "datasets/sharegpt-tiny.json",
        "datasets/sharegpt-sample.json",
    );
    let out = env.run(&["plan", "experiments/qwen3-14b-a100.kdl", "--runtime", "sim"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_page_it_cannot_read_is_an_error_naming_the_line() {
    let env = TestEnv::new();
    let page = std::fs::read_to_string(
        Path::new(FIXTURES).join("published/gpustack-perf-lab/qwen3-14b-a100.md"),
    )
    .unwrap();
    let broken = page.replacen(
        "    Benchmark duration (s):                  106.82",
        "    Benchmark duration (s):                  soon",
        1,
    );
    env.write("page.md", &broken);
    let out = env.run(&["init", "--from-page", "page.md"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("line 92: `soon` is not a number"), "{err}");
    assert!(err.contains("page.md:92"), "{err}");
    assert!(!env.path("experiments").exists());
}

/// A title with a NUL, a right-to-left override and an isolate: the
/// experiment perfpipe writes shows each as an escape, and perfpipe reads
/// it back as the page's very title.
#[test]
fn a_title_with_a_nul_and_an_override_is_written_as_escapes_and_read_back() {
    let env = TestEnv::new();
    let page = std::fs::read_to_string(
        Path::new(FIXTURES).join("published/gpustack-perf-lab/qwen3-14b-a100.md"),
    )
    .unwrap();
    let hostile = page.replacen(" GPUs\n", " GPUs \u{0}x\u{202e}gpj.exe\u{2066}\u{85}\n", 1);
    assert_ne!(hostile, page);
    env.write("page.md", &hostile);
    let out = env.run(&["init", "--from-page", "page.md", "-o", "e.kdl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let written = env.read("e.kdl");
    assert!(
        !written.contains(['\u{0}', '\u{202e}', '\u{2066}', '\u{85}']),
        "{written}"
    );
    assert!(written.contains(r"\u{202e}gpj.exe\u{2066}"), "{written}");
    let spec = perfpipe::spec::parse(&SourceFile {
        name: "e.kdl".into(),
        text: written,
    })
    .unwrap_or_else(|e| panic!("{:?}", miette::Report::new(e)));
    let title = perfpipe::page::read(&hostile).unwrap().title.value;
    assert!(title.contains("x\u{202e}gpj.exe\u{2066}"), "{title:?}");
    assert_eq!(spec.title.as_deref(), Some(title.as_str()));
}

/// A page past the limit is refused before it is read whole, naming the
/// file and the limit.
#[test]
fn an_oversized_page_is_refused_naming_the_file_and_the_limit() {
    let env = TestEnv::new();
    let limit = usize::try_from(perfpipe::page::MAX_PAGE_BYTES).unwrap();
    let mut page = String::from("# A page\n\n");
    while page.len() <= limit {
        page.push_str("A line of a page that goes on and on and on.\n");
    }
    env.write("big.md", &page);
    let out = env.run(&["init", "--from-page", "big.md"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("`big.md` is larger than 2 MiB, the most a page may be"),
        "{err}"
    );
    assert!(!env.path("experiments").exists());
}

/// Every number and failure the page publishes, as (metric, number as
/// printed) and error texts, from an experiment's expectations.
fn published(kdl: &str, name: &str) -> (Vec<(String, String)>, Vec<String>) {
    let spec = perfpipe::spec::parse(&SourceFile {
        name: name.into(),
        text: kdl.into(),
    })
    .unwrap_or_else(|e| panic!("{name}: {:?}", miette::Report::new(e)));
    let mut numbers = Vec::new();
    let mut failures = Vec::new();
    for step in &spec.steps {
        for e in &step.expectations {
            match &e.outcome {
                perfpipe::spec::ExpectedOutcome::Metrics(metrics) => {
                    numbers.extend(metrics.iter().map(|m| (m.name.clone(), m.text.clone())));
                }
                perfpipe::spec::ExpectedOutcome::Failure(error) => failures.push(error.clone()),
            }
        }
    }
    numbers.sort();
    failures.sort();
    (numbers, failures)
}

/// The hand-written studies hold every number of their page, as `init`
/// reads it (what the retired `scripts/published-to-expectations.py --check`
/// checked).
#[test]
fn the_hand_written_studies_hold_every_number_of_their_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (page, experiment) in [
        ("qwen3-14b-a100.md", "experiments/qwen3-14b-a100.kdl"),
        ("qwen3-235b-a22b-a100.md", "experiments/qwen3-235b-a100.kdl"),
    ] {
        let text = std::fs::read_to_string(
            Path::new(FIXTURES)
                .join("published/gpustack-perf-lab")
                .join(page),
        )
        .unwrap();
        let generated = perfpipe::page::init(&text).unwrap();
        let (from_page, page_failures) = published(&generated.kdl, page);
        let hand = std::fs::read_to_string(root.join(experiment)).unwrap();
        let (by_hand, hand_failures) = published(&hand, experiment);
        let mut missing = Vec::new();
        let mut have = by_hand.clone();
        for n in &from_page {
            match have.iter().position(|h| h == n) {
                Some(i) => {
                    have.remove(i);
                }
                None => missing.push(n.clone()),
            }
        }
        assert!(missing.is_empty(), "{experiment} lacks {missing:?}");
        // The hand-written ones also declare failures the page only implies.
        for f in &page_failures {
            assert!(
                hand_failures.contains(f),
                "{experiment} lacks the failure {f:?}"
            );
        }
    }
}

/// The lines of a published report's lists of the page's own
/// contradictions (one under the conclusion, one under the summary).
fn contradictions(report: &str) -> Vec<String> {
    report
        .lines()
        .filter(|l| l.starts_with("- Conclusion, ") || l.starts_with("- Summary, "))
        .map(str::to_owned)
        .collect()
}

/// Every page, through `init` and `report --published` (the binary): the
/// report (snapshot) reproduces the page's tables, and flags exactly the
/// page's own contradictions (the list is a snapshot too).
#[test]
fn every_page_reports_its_tables_and_its_own_contradictions() {
    let env = TestEnv::new();
    env.copy_fixture(
        "datasets/sharegpt-tiny.json",
        "datasets/sharegpt-sample.json",
    );
    let mut all = String::new();
    let mut found = std::collections::BTreeMap::new();
    for page in pages() {
        let stem = page.file_stem().unwrap().to_str().unwrap().to_owned();
        let text = std::fs::read_to_string(&page).unwrap();
        let generated = perfpipe::page::init(&text).unwrap();
        let file = format!("{stem}.kdl");
        env.write(&file, &generated.kdl);
        let out = env
            .cmd(&["report", &file, "--published"])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{stem}: {}", stderr(&out));
        let report = stdout(&out);
        insta::assert_snapshot!(format!("published_{stem}"), report);
        let list = contradictions(&report);
        all.push_str(&format!("{stem}: {}\n", list.len()));
        for l in &list {
            all.push_str(&format!("  {l}\n"));
        }
        found.insert(stem, list);
    }
    insta::assert_snapshot!("contradictions", all);

    let has = |page: &str, text: &str| found[page].iter().any(|l| l.contains(text));
    // The cases the issue names.
    assert_eq!(
        found["qwen3-32b-a100"].len(),
        1,
        "{:?}",
        found["qwen3-32b-a100"]
    );
    assert!(has(
        "qwen3-32b-a100",
        "Very Long Prompt, optimized: the page prints -13.8%"
    ));
    assert!(has(
        "gpt-oss-20b-a100",
        "Short Prompt, optimized: the page prints +4.0%"
    ));
    assert!(has(
        "qwen3-14b-a100",
        "no result block of the page shows Total TPS of `trtllm-optimized` on ShareGPT"
    ));
    for row in ["Short", "Medium", "Long", "Very Long"] {
        assert!(has(
            "glm-4.5-air-h100",
            &format!("Conclusion, {row} Prompt, optimized")
        ));
    }
    assert!(!has("glm-4.5-air-h100", "Conclusion, ShareGPT"));
    assert!(has(
        "qwen3-8b-910b",
        "Long Prompt, optimized: the page prints +45.4%"
    ));
    assert!(has(
        "qwen3-8b-910b",
        "Very Long Prompt, optimized: the page prints +171.1%"
    ));
    for row in ["Short", "Medium", "Long", "Very Long"] {
        assert!(has(
            "qwen3-8b-910b",
            &format!(
                "Conclusion, {row} Prompt, optimized: the page's result block gives Total TPS"
            )
        ));
    }
    // Not the page's: summary rows over different GPU counts are per GPU,
    // a gain is the candidate's the page credits, a latency study's gain is
    // its speed-up.
    for page in [
        "gpt-oss-120b-a100",
        "gpt-oss-120b-h100",
        "qwen3-235b-a22b-h100",
        "qwen3-8b-h100-latency",
    ] {
        assert!(
            !found[page].iter().any(|l| l.starts_with("- Summary, ")),
            "{page}: {:?}",
            found[page]
        );
    }
    // The page's own: its summary computes from a Result line that misquotes
    // SGLang's block (8424.86 for 8403.97); the flags say so.
    assert_eq!(found["qwen3-14b-h100"].len(), 2);
    assert!(
        found["qwen3-14b-h100"]
            .iter()
            .all(|l| l.contains("Result line quotes 8424.86 where the block shows 8403.97")),
        "{:?}",
        found["qwen3-14b-h100"]
    );
    // Pages whose tables add up.
    for page in [
        "deepseek-r1-h200",
        "glm-4.5-air-a100",
        "glm-4.x-a100",
        "glm-4.x-h100",
        "glm-4.x-h200",
        "qwen3-235b-a22b-a100",
        "qwen3.5-35b-a3b-h200",
    ] {
        assert!(found[page].is_empty(), "{page}: {:?}", found[page]);
    }
}
