//! Reading a page faithfully: one small page per class of misreading (none
//! copied from a published page), through `init` and the page's own
//! reproduction, as `report --published` shows it.

use crate::analyze::page::{PageFinding, PageReproduction};
use crate::spec::{SourceFile, Spec, parse};

/// A result block of the older pages (`vllm bench serve`), its other
/// numbers derived from the two the tests compare.
pub(super) fn block(tps: f64, tpot: f64) -> String {
    format!(
        "============ Serving Benchmark Result ============
Successful requests:                     1000
Benchmark duration (s):                  100.00
Total input tokens:                      200000
Total generated tokens:                  200000
Request throughput (req/s):              10.00
Output token throughput (tok/s):         {out:.2}
Peak output token throughput (tok/s):    4000.00
Peak concurrent requests:                1000.00
Total Token throughput (tok/s):          {tps:.2}
---------------Time to First Token----------------
Mean TTFT (ms):                          1000.00
Median TTFT (ms):                        900.00
P99 TTFT (ms):                           3000.00
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          {tpot:.2}
Median TPOT (ms):                        {tpot:.2}
P99 TPOT (ms):                           {p99:.2}
---------------Inter-token Latency----------------
Mean ITL (ms):                           {tpot:.2}
Median ITL (ms):                         {tpot:.2}
P99 ITL (ms):                            {p99:.2}
==================================================",
        out = tps / 2.0,
        p99 = tpot * 2.0,
    )
}

/// An admonition holding `body` (a code block), indented as the lab's pages do.
pub(super) fn admonition(title: &str, lang: &str, body: &str) -> String {
    let mut out = format!("??? info \"{title}\"\n    ```{lang}\n");
    for l in body.lines() {
        out.push_str(&format!("    {l}\n"));
    }
    out.push_str("    ```\n");
    out
}

/// A configuration: its label line, serving script and result code block.
pub(super) fn config(label: &str, command: &str, results: &str) -> String {
    format!(
        "{label}\n{}\n{}\n",
        admonition("Serving script", "bash", command),
        admonition("Benchmark result", "", results)
    )
}

/// An older-era page of `Qwen/Qwen3-8B` on `hardware`, ShareGPT and a 4K
/// random workload, with `sections` under "Experiment Results" and
/// `conclusion` rows and `summary` rows as printed.
pub(super) fn page(
    hardware: &str,
    recommended: &str,
    sections: &str,
    conclusion: &str,
    summary: &str,
) -> String {
    format!(
        "# Optimizing Qwen3-8B Throughput on NVIDIA A100 GPUs

## Conclusion

Recommended configuration for optimizing throughput of Qwen3-8B on A100 GPUs:

???+ tip \"Serving Command\"
    ```bash
    {recommended}
    ```

Comparison of benchmark results before and after optimization:

| Benchmark Case | baseline (vLLM without any optimizations) | Optimized |
|----------|-------------------------------------------|-----------|
{conclusion}

## Optimization Objective

Achieve high throughput under high-concurrency request scenarios.

## Experimental Setup

### Model

Qwen3-8B

### Hardware

{hardware}

### Engine Version

- vLLM: v0.11.0
- SGLang: v0.5.5

### Benchmark Dataset

1. ShareGPT
2. Random dataset with varying sequence lengths:
    - Long prompt: 4000 input tokens, 200 output tokens

### Benchmark Script

```bash
vllm bench serve --model Qwen/Qwen3-8B --backend openai-chat --endpoint /v1/chat/completions --dataset-name sharegpt --dataset-path ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts 1000
vllm bench serve --model Qwen/Qwen3-8B --backend openai-chat --endpoint /v1/chat/completions --dataset-name random --random-input-len 4000 --random-output-len 200 --num-prompts 1000 --seed 42
```

## Experiment Results

{sections}
### Summary of Optimization Options
{summary}
"
    )
}

/// The older pages' two-column summary with `rows`.
pub(super) fn options(rows: &str) -> String {
    format!(
        "| Optimization Option               | Throughput Improvement               |\n|-----------------------------|-------------------------------------|\n{rows}"
    )
}

/// A conclusion row as the pages print it.
pub(super) fn conclusion_row(case: &str, base: (f64, f64), opt: (f64, f64), delta: &str) -> String {
    let color = if delta.starts_with('-') {
        "#fbcaca"
    } else {
        "lightgreen"
    };
    format!(
        "| **{case}** | Total TPS: {:.2}<br>Mean TPOT(ms): {:.2} | Total TPS: {:.2} <span style=\"background-color:{color};\">({delta})</span><br>Mean TPOT(ms): {:.2} |",
        base.0, base.1, opt.0, opt.1
    )
}

/// The experiment `init` writes for `page`, parsed.
pub(super) fn experiment(page: &str) -> (String, Spec) {
    let kdl = super::init(page).unwrap_or_else(|e| panic!("{e}")).kdl;
    let spec = parse(&SourceFile {
        name: "e.kdl".into(),
        text: kdl.clone(),
    })
    .unwrap_or_else(|e| panic!("{:?}\n{kdl}", miette::Report::new(e)));
    (kdl, spec)
}

/// The page reproduced from its own numbers, as `report --published` shows it.
pub(super) fn reproduce(page: &str) -> (String, PageReproduction) {
    let (kdl, spec) = experiment(page);
    let analysis = crate::analyze::analyze(&spec, crate::analyze::from_expectations(&spec));
    (kdl, analysis.page.expect("a page's experiment"))
}

fn places(findings: &[PageFinding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| format!("{}: {}", f.place, f.note))
        .collect()
}

/// Class 1: a "Summary:" sentence names the two configurations it
/// compares; its numbers are theirs, whatever their rank (here the second is
/// the first-tried and worst, not the runner-up).
#[test]
fn a_summary_sentence_compares_the_configurations_it_names() {
    let sentence = "`Chunked` Total TPS = 2000.00, `Plain` Total TPS = 1000.00. `Chunked` is faster by 1,000.00 tok/s (100.0%); Mean TPOT = 50.00 ms vs 100.00 ms, reduced by 50.00 ms (50.00%).";
    let sections = format!(
        "### 1. Scheduling\n\n{}{}{}\n- Summary: {sentence}\n\n",
        config("Plain", "vllm serve Qwen/Qwen3-8B", &block(1000.0, 100.0)),
        config(
            "Eager",
            "vllm serve Qwen/Qwen3-8B --enforce-eager",
            &block(1500.0, 80.0)
        ),
        config(
            "Chunked",
            "vllm serve Qwen/Qwen3-8B --enable-chunked-prefill",
            &block(2000.0, 50.0)
        ),
    );
    let page = page(
        "A single NVIDIA A100 SXM GPU.",
        "vllm serve Qwen/Qwen3-8B --enable-chunked-prefill",
        &sections,
        &conclusion_row("ShareGPT", (1000.0, 100.0), (2000.0, 50.0), "+100.0%"),
        &options("| Scheduling | <span style=\"background-color:lightgreen;\">+100.0%</span> |"),
    );
    let (kdl, page) = reproduce(&page);
    assert!(kdl.contains("first=vllm-chunked second=vllm"), "{kdl}");
    assert!(page.findings.is_empty(), "{:?}", places(&page.findings));
    assert_eq!(page.sentences[0].1, sentence);
}

/// Class 3: a delta is per GPU only where the page says so; a total
/// throughput delta between configurations on different GPU counts is
/// checked as the total it is.
#[test]
fn a_delta_is_per_gpu_only_where_the_page_says_so() {
    let sections = format!(
        "### 1. Parallelism\n\n{}{}\nResult: TP2 improves throughput from 1000.00 tok/s to 1500.00 tok/s.\n\n",
        config("TP1", "vllm serve Qwen/Qwen3-8B", &block(1000.0, 100.0)),
        config(
            "TP2",
            "vllm serve Qwen/Qwen3-8B -tp 2",
            &block(1500.0, 80.0)
        ),
    );
    let row = |delta: &str| {
        page(
            "2 × NVIDIA A100 SXM GPUs on a single node.",
            "vllm serve Qwen/Qwen3-8B -tp 2",
            &sections,
            &conclusion_row("ShareGPT", (1000.0, 100.0), (1500.0, 80.0), delta),
            &options(&format!(
                "| Parallelism | <span style=\"background-color:lightgreen;\">{delta}</span> |"
            )),
        )
    };
    let text = row("+50.0%");
    assert!(
        crate::page::read(&text).unwrap().summary.is_some(),
        "{text}"
    );
    let (kdl, page) = reproduce(&row("+50.0%"));
    assert!(!kdl.contains("per-gpu"), "{kdl}");
    assert!(page.findings.is_empty(), "{:?}", places(&page.findings));
    // Where the page says per GPU, per GPU it is: 750.00 against 1000.00.
    let (kdl, page) = reproduce(&row("-25.0%/GPU"));
    assert!(kdl.contains("per-gpu=#true"), "{kdl}");
    assert!(page.findings.is_empty(), "{:?}", places(&page.findings));
}

/// Class 2: the baseline can be the winner: a summary row that prints the
/// baseline against itself (`+0.00%`) is the baseline's, in both layouts.
#[test]
fn the_baseline_can_be_the_winner_of_a_summary_row() {
    let sections = format!(
        "### 1. Choosing the Inference Engine\n\n{}{}\n### 2. Chunked Prefill\n\n{}\n",
        config("vLLM", "vllm serve Qwen/Qwen3-8B", &block(1000.0, 100.0)),
        config(
            "SGLang",
            "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B",
            &block(800.0, 120.0)
        ),
        config(
            "Chunked",
            "vllm serve Qwen/Qwen3-8B --enable-chunked-prefill",
            &block(900.0, 110.0)
        ),
    );
    let green = |t: &str| format!("<span style=\"background-color:lightgreen;\">{t}</span>");
    let tables = [
        options(&format!(
            "| Engine Selection | - |\n| Chunked Prefill | {} |",
            green("+0.00%")
        )),
        format!(
            "| Benchmark Cases | Optimized | Baseline |\n|---|---|---|\n| Chunked Prefill | Total TPS: 1000.00 {}<br>Mean TPOT(ms): 100.00 | Total TPS: 1000.00<br>Mean TPOT(ms): 100.00 |",
            green("(+0.00%)")
        ),
    ];
    for table in tables {
        let page = page(
            "A single NVIDIA A100 SXM GPU.",
            "vllm serve Qwen/Qwen3-8B",
            &sections,
            "",
            &table,
        );
        let (kdl, page) = reproduce(&page);
        assert!(
            kdl.contains("summary \"Chunked Prefill\" optimized=vllm"),
            "{kdl}"
        );
        assert!(page.findings.is_empty(), "{:?}", places(&page.findings));
    }
}

/// A summary row is bound to the configuration most of its printed numbers
/// are, not by comparing its cells' text: a row that prints the baseline
/// against itself (`+0.00%`) with one misprinted number is still the
/// baseline's, and only that number is flagged.
#[test]
fn a_summary_row_is_the_configuration_most_of_its_numbers_are() {
    let sections = format!(
        "### 1. Choosing the Inference Engine\n\n{}\n### 2. Chunked Prefill\n\n{}\n",
        config("vLLM", "vllm serve Qwen/Qwen3-8B", &block(1000.0, 100.0)),
        config(
            "Chunked",
            "vllm serve Qwen/Qwen3-8B --enable-chunked-prefill",
            &block(900.0, 110.0)
        ),
    );
    let green = |t: &str| format!("<span style=\"background-color:lightgreen;\">{t}</span>");
    let table = |optimized: &str| {
        format!(
            "| Benchmark Cases | Optimized | Baseline |\n|---|---|---|\n| Chunked Prefill | Total TPS: {optimized} {}<br>Mean TPOT(ms): 100.00 | Total TPS: 1000.00<br>Mean TPOT(ms): 100.00 |",
            green("(+0.00%)")
        )
    };
    let page = |optimized| {
        page(
            "A single NVIDIA A100 SXM GPU.",
            "vllm serve Qwen/Qwen3-8B",
            &sections,
            "",
            &table(optimized),
        )
    };
    let (kdl, _) = reproduce(&page("1000.00"));
    assert!(
        kdl.contains("summary \"Chunked Prefill\" optimized=vllm"),
        "{kdl}"
    );
    let (kdl, reproduced) = reproduce(&page("1100.00"));
    assert!(
        kdl.contains("summary \"Chunked Prefill\" optimized=vllm"),
        "{kdl}"
    );
    let flagged: Vec<&str> = reproduced
        .findings
        .iter()
        .map(|f| f.printed.as_str())
        .collect();
    assert_eq!(
        flagged,
        ["Total TPS: 1100.00"],
        "{:?}",
        places(&reproduced.findings)
    );
}

/// Class 6: a caption line inside a result's fence (no `#`) is the block's
/// caption; a line that cannot be placed becomes a TODO quoting it, and
/// `init` goes on.
#[test]
fn a_caption_inside_a_fence_is_read_and_an_unplaceable_line_is_a_todo() {
    let results = format!(
        "4k random input + 200 generation\n{}\n\nnumbers from our second try\n",
        block(1000.0, 100.0)
    );
    let sections = format!(
        "### 1. Choosing the Inference Engine\n\n{}\n",
        config("vLLM", "vllm serve Qwen/Qwen3-8B", &results),
    );
    let page = page(
        "A single NVIDIA A100 SXM GPU.",
        "vllm serve Qwen/Qwen3-8B",
        &sections,
        "",
        &options("| Engine Selection | - |"),
    );
    let (kdl, spec) = experiment(&page);
    assert!(
        kdl.contains("TODO: line 87: \"numbers from our second try\" in a benchmark result"),
        "{kdl}"
    );
    let step = &spec.steps[0];
    assert_eq!(step.expectations.len(), 1, "{kdl}");
    assert_eq!(step.expectations[0].workload, "long", "{kdl}");
}

/// Class 7: nothing is dropped silently: a conclusion row no workload is
/// is reprinted as printed, each number marked ⚠ with the reason, and each
/// listed (what `verify` counts).
#[test]
fn a_conclusion_row_that_binds_to_nothing_is_reprinted_and_flagged() {
    let sections = format!(
        "### 1. Choosing the Inference Engine\n\n{}\n",
        config("vLLM", "vllm serve Qwen/Qwen3-8B", &block(1000.0, 100.0)),
    );
    let rows = [
        conclusion_row("ShareGPT", (1000.0, 100.0), (1000.0, 100.0), "+0.0%"),
        conclusion_row("Tiny Prompt", (50.0, 10.0), (60.0, 9.0), "+20.0%"),
    ];
    let page = page(
        "A single NVIDIA A100 SXM GPU.",
        "vllm serve Qwen/Qwen3-8B",
        &sections,
        &rows.join("\n"),
        &options("| Engine Selection | - |"),
    );
    let (kdl, page) = reproduce(&page);
    assert!(
        kdl.contains("case unbound=\"Tiny Prompt\" reason="),
        "{kdl}"
    );
    let conclusion = page.conclusion.expect("the page's conclusion");
    let cases: Vec<&str> = conclusion.rows.iter().map(|r| r.case.as_str()).collect();
    assert_eq!(cases, ["ShareGPT", "Tiny Prompt"]);
    assert_eq!(
        conclusion.rows[1].baseline,
        [
            "Total TPS: 50.00 ⚠ not reproduced",
            "Mean TPOT(ms): 10.00 ⚠ not reproduced"
        ]
    );
    let flagged: Vec<&str> = page
        .findings
        .iter()
        .filter(|f| f.place.starts_with("Conclusion, Tiny Prompt"))
        .map(|f| f.printed.as_str())
        .collect();
    assert_eq!(
        flagged,
        ["50.00", "10.00", "60.00", "9.00"],
        "{:?}",
        places(&page.findings)
    );
}

/// Class 8: the summary table is the page's: a row no section compares is
/// reprinted as printed, its number marked ⚠ as not reproduced, never
/// replaced or dropped.
#[test]
fn a_summary_row_no_section_compares_is_reprinted_and_flagged() {
    let sections = format!(
        "### 1. Choosing the Inference Engine\n\n{}{}\n",
        config("vLLM", "vllm serve Qwen/Qwen3-8B", &block(1000.0, 100.0)),
        config(
            "SGLang",
            "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B",
            &block(800.0, 120.0)
        ),
    );
    let page = page(
        "A single NVIDIA A100 SXM GPU.",
        "vllm serve Qwen/Qwen3-8B",
        &sections,
        "",
        &options(
            "| Engine Selection | - |\n| Speculative Decoding | <span style=\"background-color:lightgreen;\">+12.0%</span> |",
        ),
    );
    let (kdl, page) = reproduce(&page);
    assert!(kdl.contains("summary \"Speculative Decoding\""), "{kdl}");
    let summary = page.summary.expect("the page's summary");
    let rows: Vec<Vec<String>> = summary.rows.iter().map(|r| r.concat()).collect();
    assert_eq!(
        rows,
        [
            vec!["Engine Selection".to_owned(), "-".to_owned()],
            vec![
                "Speculative Decoding".to_owned(),
                "+12.0% ⚠ not reproduced".to_owned()
            ],
        ]
    );
    assert_eq!(
        places(&page.findings),
        [
            "Summary, Speculative Decoding: not reproduced: no section of the page compares the configurations this row names"
        ]
    );
}

/// Also seen: a warning admonition that names failing configurations
/// (sizes above a bound run out of memory) is `expect-failure` for the
/// runs it names and the page prints no result of; the others keep theirs.
#[test]
fn a_warning_that_sizes_above_a_bound_fail_is_an_expected_failure() {
    let both = format!(
        "{}\n\n# random 4000 input, 200 output\n{}",
        block(1000.0, 100.0),
        block(500.0, 120.0)
    );
    let warning = "SGLang runs out of memory (OOM) on inputs above 2K tokens.";
    let sections = format!(
        "### 1. Choosing the Inference Engine\n\n{}{}\n!!! warning \"Out of memory\"\n    {warning}\n\n",
        config("vLLM", "vllm serve Qwen/Qwen3-8B", &both),
        config(
            "SGLang",
            "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B",
            &block(800.0, 120.0)
        ),
    );
    let page = page(
        "A single NVIDIA A100 SXM GPU.",
        "vllm serve Qwen/Qwen3-8B",
        &sections,
        "",
        &options("| Engine Selection | - |"),
    );
    let (kdl, spec) = experiment(&page);
    assert!(
        kdl.contains(&format!("expect-failure long \"{warning}\"")),
        "{kdl}"
    );
    let failures: Vec<(&str, &str)> = spec
        .steps
        .iter()
        .flat_map(|s| {
            s.expectations
                .iter()
                .filter(|e| matches!(e.outcome, crate::spec::ExpectedOutcome::Failure(_)))
                .map(|e| (s.name.value.as_str(), e.workload.as_str()))
        })
        .collect();
    assert_eq!(failures, [("sglang", "long")], "{kdl}");
}

/// The baseline is the page's, not the first configuration printed: an
/// engine selection that prints the default engine second is compared
/// against the configuration that gives the summary's printed gain.
#[test]
fn the_engine_selection_baseline_is_not_the_first_printed() {
    let sections = format!(
        "### 1. Choosing the Inference Engine\n\n{}{}\n",
        config(
            "SGLang",
            "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B",
            &block(1250.0, 90.0)
        ),
        config("vLLM", "vllm serve Qwen/Qwen3-8B", &block(1000.0, 100.0)),
    );
    let page = page(
        "A single NVIDIA A100 SXM GPU.",
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B",
        &sections,
        "",
        &options(
            "| Engine Selection | <span style=\"background-color:lightgreen;\">+25.0%</span> |",
        ),
    );
    let (kdl, page) = reproduce(&page);
    assert!(
        kdl.contains("compare \"Engine Selection\" baseline=vllm "),
        "{kdl}"
    );
    assert!(page.findings.is_empty(), "{:?}", places(&page.findings));
}

/// A result block of the newer pages (GPUStack's guidellm runner), its
/// other numbers derived from the two the tests compare.
fn profile_block(tps: f64, tpot: f64) -> String {
    format!(
        "============ Serving Benchmark Result ============
Successful requests:                     1000
Maximum request concurrency:             512
Benchmark duration (s):                  100.00
Total input tokens:                      200000
Total generated tokens:                  200000
Request throughput (req/s):              10.00
Output token throughput (tok/s):         {out:.2}
Peak output token throughput (tok/s):    4000.00
Peak concurrent requests:                512.00
Total Token throughput (tok/s):          {tps:.2}
----------------------Latency---------------------
Mean Latency(s):                          30.00
Median Latency(s):                        27.00
P95 Latency(s):                           60.00
P99 Latency(s):                           65.00
---------------Time to First Token----------------
Mean TTFT (ms):                          1000.00
Median TTFT (ms):                        900.00
P95 TTFT (ms):                           2500.00
P99 TTFT (ms):                           3000.00
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          {tpot:.2}
Median TPOT (ms):                        {tpot:.2}
P95 TPOT (ms):                           {p99:.2}
P99 TPOT (ms):                           {p99:.2}
---------------Inter-token Latency----------------
Mean ITL (ms):                           {tpot:.2}
Median ITL (ms):                         {tpot:.2}
P95 ITL (ms):                            {p99:.2}
P99 ITL (ms):                            {p99:.2}
==================================================",
        out = tps / 2.0,
        p99 = tpot * 2.0,
    )
}

/// A newer-era page (benchmark profiles, "Profile:" lines) of
/// `Qwen/Qwen3-8B`: its sections run on the profile `Mixed` (ShareGPT
/// data, but not named so) and its conclusion labels carry descriptions.
fn profiles_page() -> String {
    let green = |t: &str| format!("<span style=\"background-color:lightgreen;\">{t}</span>");
    let configuration = |label: &str, flags: &str, tps: f64, tpot: f64| {
        let params = admonition_less_params(flags);
        format!(
            "{label}\n- Profile: `Mixed`\n{params}\n{}\n",
            admonition("Benchmark result", "", &profile_block(tps, tpot))
        )
    };
    let other = |case: &str, base: (f64, f64), opt: (f64, f64)| {
        format!(
            "#### {case}\n\n- Baseline Backend Parameters:\n{}\n{}\n- Optimized Backend Parameters:\n{}\n{}\n",
            admonition_less_params("--max-model-len=32768"),
            admonition(
                "Baseline benchmark result",
                "",
                &profile_block(base.0, base.1)
            ),
            admonition_less_params("--max-model-len=32768\n--enable-prefix-caching"),
            admonition(
                "Optimized benchmark result",
                "",
                &profile_block(opt.0, opt.1)
            ),
        )
    };
    format!(
        "# Optimizing Qwen3-8B Throughput

## Conclusion

Recommended configuration for optimizing throughput of Qwen3-8B on NVIDIA H100:

???+ tip \"Serving Command\"
    ```bash
    vllm serve Qwen/Qwen3-8B \\
        --max-model-len=32768 \\
        --enable-prefix-caching
    ```

Comparison of benchmark results before and after optimization:

| Benchmark Case | baseline (vLLM without any optimizations) | Optimized |
|----------|-------------------------------------------|-----------|
| **Mixed: chat and code (the target)** | Total TPS: 1000.00<br>Mean TPOT(ms): 100.00 | Total TPS: 1200.00 {}<br>Mean TPOT(ms): 90.00 |
| **Small Context (2K in / 256 out)** | Total TPS: 3000.00<br>Mean TPOT(ms): 20.00 | Total TPS: 3300.00 {}<br>Mean TPOT(ms): 18.00 |

## Experimental Setup

### Model

- Qwen/Qwen3-8B

### Hardware

NVIDIA H100

### Engine Version

- vLLM v0.17.1

### Benchmark Method

GPUStack's benchmark implementation is built on top of guidellm.

#### Benchmark Profiles

##### Mixed

```yaml
dataset_name: ShareGPT
request_rate: 1000
total_requests: 1000
```

##### Small Context

```yaml
dataset_name: Random
dataset_input_tokens: 2000
dataset_output_tokens: 256
dataset_seed: 42
request_rate: 1000
total_requests: 1000
```

## Experiment Results

### Baseline of the Inference Engine

{}
### Prefix Cache

{}
### Summary of Optimization Options

| Benchmark Cases | Optimized | Baseline |
| --- | --- | --- |
| Prefix Cache | Total TPS: 1200.00 {}<br>Mean TPOT(ms): 90.00 | Total TPS: 1000.00<br>Mean TPOT(ms): 100.00 |

### Other Benchmark Cases

{}
{}",
        green("(+20.00%)"),
        green("(+10.00%)"),
        configuration("#### vLLM\n", "--max-model-len=32768", 1000.0, 100.0),
        configuration("", "--max-model-len=32768\n--enable-prefix-caching", 1200.0, 90.0),
        green("(+20.00%)"),
        other("Mixed", (1000.0, 100.0), (1200.0, 90.0)),
        other("Small Context", (3000.0, 20.0), (3300.0, 18.0)),
    )
}

/// "- Backend Parameters:" and its flags in a bash fence, as the newer pages print them.
fn admonition_less_params(flags: &str) -> String {
    let mut out = "- Backend Parameters:\n  ```bash\n".to_owned();
    for f in flags.lines() {
        out.push_str(&format!("  {f}\n"));
    }
    out.push_str("  ```\n");
    out
}

/// Class 4: the studied workload is whatever the sections ran: sections on
/// the named profile `Mixed` bind the conclusion's `Mixed: … (the target)`
/// row to their blocks, and a label with a description (`Small Context (2K
/// in / 256 out)`) is its profile's row; no row is dropped, each title is
/// kept as printed, and nothing is flagged.
#[test]
fn sections_on_a_named_profile_and_described_labels_bind_their_rows() {
    let text = profiles_page();
    let (kdl, spec) = experiment(&text);
    assert!(!kdl.contains("unbound"), "{kdl}");
    let conclusion = spec.conclusion.as_ref().expect("a conclusion");
    let cases: Vec<&str> = conclusion
        .printed
        .cases
        .iter()
        .map(|c| c.workload.as_str())
        .collect();
    let sections = spec.comparisons[0].workload.clone();
    assert_eq!(cases.len(), 2, "{kdl}");
    assert_eq!(cases[0], sections, "{kdl}");
    assert_ne!(cases[1], sections, "{kdl}");
    let (_, page) = reproduce(&text);
    let rows: Vec<&str> = page
        .conclusion
        .as_ref()
        .expect("the page's conclusion")
        .rows
        .iter()
        .map(|r| r.case.as_str())
        .collect();
    assert_eq!(
        rows,
        [
            "Mixed: chat and code (the target)",
            "Small Context (2K in / 256 out)"
        ]
    );
    assert!(page.findings.is_empty(), "{:?}", places(&page.findings));
}
