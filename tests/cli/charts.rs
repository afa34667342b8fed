//! The charts of a study's curves, drawn beside its written report.

use std::path::PathBuf;

use crate::common::{TestEnv, files_under, stderr, stdout};

/// The curves fixture: one workload at concurrency 1, 4 and 16 over three
/// configurations on the simulated engine, and no conclusion.
fn curves_project() -> TestEnv {
    let env = TestEnv::new();
    env.copy_fixture("experiments/curves.kdl", "curves.kdl");
    env
}

const FIGURES: [&str; 5] = ["latency-c1", "frontier-c1", "cdf-c1", "cdf-c4", "cdf-c16"];

/// The markdown between `## Charts` and the next section.
fn charts_section(md: &str) -> &str {
    let start = md.find("## Charts").expect("a Charts section");
    let end = md[start..]
        .find("\n## ")
        .map_or(md.len(), |e| start + e + 1);
    &md[start..end]
}

#[test]
fn a_study_without_a_conclusion_gets_its_curves_drawn_and_linked() {
    use std::os::unix::fs::MetadataExt;
    let env = curves_project();
    let out = env.run_within(120, &["run", "curves.kdl"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = env.read("reports/curves.md");
    insta::assert_snapshot!(charts_section(&md), @r"
    ## Charts

    ![curves: latency vs throughput along concurrency, c1 · c4 · c16](curves.latency-c1.png)

    ![curves: throughput per GPU vs per user, c1 · c4 · c16](curves.frontier-c1.png)

    ![curves: TTFT and ITL distributions, Chat, 1 in flight](curves.cdf-c1.png)

    ![curves: TTFT and ITL distributions, Chat, 4 in flight](curves.cdf-c4.png)

    ![curves: TTFT and ITL distributions, Chat, 16 in flight](curves.cdf-c16.png)
    ");
    for id in FIGURES {
        let png = std::fs::read(env.path(&format!("reports/curves.{id}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{id}");
        let svg = env.read(&format!("reports/curves.{id}.svg"));
        assert!(svg.contains("simulated engine: predicts no GPU"), "{id}");
        assert!(svg.contains("vllm-tuned (vLLM 0.11.0)"), "{id}");
    }
    // The distributions are of every request the journals hold.
    assert!(env.read("reports/curves.cdf-c4.svg").contains("(n=8)"));
    // No conclusion: no bar chart.
    assert!(!env.path("reports/curves.png").exists());

    // Nothing changed: nothing is drawn again.
    let identity = |id: &str| {
        let m = std::fs::metadata(env.path(&format!("reports/curves.{id}.png"))).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    let drawn: Vec<_> = FIGURES.iter().map(|id| identity(id)).collect();
    let again = env.run_within(60, &["run", "curves.kdl"]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(
        FIGURES.iter().map(|id| identity(id)).collect::<Vec<_>>(),
        drawn
    );
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test rewrites journals in place, as no perfpipe would"
)]
fn a_no_op_run_reads_its_report_back_and_renders_again_what_changed() {
    let env = curves_project();
    let first = env.run_within(120, &["run", "curves.kdl"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let md = env.read("reports/curves.md");
    let svg = env.read("reports/curves.cdf-c4.svg");
    let journals: Vec<PathBuf> = files_under(&env.path("store"))
        .into_iter()
        .filter(|p| p.ends_with("logs/requests.jsonl"))
        .collect();
    assert_eq!(journals.len(), 9);

    // Every journal blanked in place, keeping its size and time: the record
    // beside the report says nothing changed, so no journal is read again
    // (read, none would hold a request, and no distribution would be drawn).
    for journal in &journals {
        let len = std::fs::metadata(journal).unwrap().len() as usize;
        let mtime = std::fs::metadata(journal).unwrap().modified().unwrap();
        std::fs::write(journal, " ".repeat(len)).unwrap();
        let file = std::fs::File::options().write(true).open(journal).unwrap();
        file.set_modified(mtime).unwrap();
    }
    let again = env.run_within(60, &["run", "curves.kdl"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(stdout(&again), md);
    assert_eq!(env.read("reports/curves.cdf-c4.svg"), svg);

    // A chart removed is drawn again.
    std::fs::remove_file(env.path("reports/curves.frontier-c1.png")).unwrap();
    let redrawn = env.run_within(60, &["run", "curves.kdl"]);
    assert_eq!(redrawn.status.code(), Some(0), "{}", stderr(&redrawn));
    assert!(env.path("reports/curves.frontier-c1.png").exists());

    // Journals that changed (as stamped) are read: their distributions are
    // what they now hold, none.
    for journal in &journals {
        let file = std::fs::File::options().write(true).open(journal).unwrap();
        file.set_modified(std::time::SystemTime::UNIX_EPOCH)
            .unwrap();
    }
    let changed = env.run_within(60, &["run", "curves.kdl"]);
    assert_eq!(changed.status.code(), Some(0), "{}", stderr(&changed));
    assert!(md.contains("curves.cdf-c4.png"));
    assert!(!env.read("reports/curves.md").contains("curves.cdf-c4.png"));
}

#[test]
fn a_search_gets_one_chart_of_its_result_and_one_of_its_distributions_not_one_per_probe() {
    let env = TestEnv::new();
    env.copy_fixture("experiments/search.kdl", "search.kdl");
    let out = env.run_within(120, &["run", "search.kdl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = env.read("reports/search.md");
    insta::assert_snapshot!(charts_section(&md), @r"
    ## Charts

    ![search: largest load within the SLO, chat](search.search-chat.png)

    ![search: TTFT and ITL distributions, chat, each configuration at its largest passing load](search.cdf-chat.png)
    ");
    let mut pngs: Vec<String> = files_under(&env.path("reports"))
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .filter(|n| n.ends_with(".png"))
        .collect();
    pngs.sort();
    assert_eq!(pngs, ["search.cdf-chat.png", "search.search-chat.png"]);
    let svg = env.read("reports/search.search-chat.svg");
    // The threshold line and the ring at the largest passing load, named in the legend.
    assert!(
        svg.contains("SLO: 99% of requests within ttft_ms&lt;=450"),
        "{svg}"
    );
    assert!(svg.contains("largest passing load"), "{svg}");
    // Every load up to 8 passed: no smallest failing load to mark.
    assert!(!svg.contains("smallest failing load"), "{svg}");
}
