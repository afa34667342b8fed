//! The markdown report, modelled on the published studies: conclusion first,
//! then one section per comparison, the summary of optimization options, the
//! other benchmark cases, published vs measured, the context, and every run's
//! numbers. Sections and their order are the experiment's. (pure)

use std::fmt::Write;

use super::Charts;
use super::inline::{LINE_BREAK, Mark, cell_code, code, code_block, text};
use super::runs::{run_columns, runs};
use crate::analyze::page::{PageConclusion, PageSummary};
use crate::analyze::{
    Analysis, Check, ComparisonResult, ConclusionTable, Ranked, RunRecord, Source, SummaryNote,
    Verdict,
};
use crate::facts::command::display_command;
use crate::spec::{Objective, Section, Spec};

/// What differs when the built-in harness runs the workloads of guidellm-era
/// pages (constant arrivals, a cap, benchmark-runner's ShareGPT), which
/// guidellm measured.
fn lab_profiles_on_builtin(spec: &Spec) -> Option<String> {
    use crate::spec::{Arrival, Dataset, HarnessKind, RequestRate, SharegptConversion};
    if spec.harness.kind != HarnessKind::Builtin {
        return None;
    }
    let names: Vec<String> = spec
        .workloads
        .iter()
        .filter(|w| {
            let constant =
                matches!(w.rate, RequestRate::PerSecond(_)) && w.arrival == Arrival::Constant;
            let runner = matches!(
                w.dataset,
                Dataset::ShareGpt {
                    conversion: SharegptConversion::BenchmarkRunner,
                    ..
                }
            );
            constant || runner
        })
        .map(|w| code(&w.name.value))
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "{} are sent as guidellm sends them (constant arrivals at k / rate; ShareGPT as benchmark-runner \
             converts it, each request asking for exactly its reply's length), but measured by the built-in \
             harness under vLLM's definitions: TPOT excludes the first token and throughputs are totals / \
             duration, where guidellm's TPOT includes the TTFT and its throughputs are means of rate \
             distributions. A `concurrency` cap holds for the whole benchmark here; guidellm splits it over \
             its worker processes (512 over 10 workers: 51 or 52 each).",
            names.join(", ")
        )
    })
}

/// The whole report, linking `charts` (drawn beside it when it is written).
pub fn markdown(spec: &Spec, analysis: &Analysis, charts: &Charts) -> String {
    let chart = charts.conclusion.as_ref().map(|c| c.png.as_str());
    let mut out = String::new();
    let title = spec.title.as_deref().unwrap_or(&spec.name);
    let _ = writeln!(out, "# {}\n", text(title));
    let runtime = analysis
        .scope
        .as_ref()
        .map(|s| format!(" · runtime {}", code(&s.runtime.to_string())))
        .unwrap_or_default();
    let hardware = match &spec.hardware.cpu {
        Some(cpu) => format!("{} ({} × {})", code("cpu"), cpu.cores, code(&cpu.model)),
        None => format!("{} × {}", spec.hardware.gpus, code(&spec.hardware.gpu)),
    };
    let _ = writeln!(
        out,
        "Experiment {} · hardware {hardware}{runtime} · numbers: {}\n",
        code(&spec.name),
        sources(&analysis.runs)
    );
    if let Some(cap) = analysis.scope.as_ref().and_then(|s| s.max_prompts) {
        let _ = writeln!(
            out,
            "> **Capped.** Every workload sends at most {} (`--max-prompts {cap}`): a smoke \
             test, not the study's numbers.\n",
            crate::plural::count(cap as usize, "prompt", "prompts")
        );
    }
    let sources = source_kinds(&analysis.runs);
    if sources.contains(&Source::Simulated) {
        out.push_str(
            "> **Simulated.** These numbers come from perfpipe's simulated engine: they show that the \
             pipeline runs end to end and move with flags and workloads, but they do not predict any GPU.\n\n",
        );
    }
    if sources.len() > 1 {
        out.push_str(
            "> **Mixed sources.** This report holds numbers of different kinds; the runs table names \
             the source of each (a run with no measured sample shows its imported, published numbers).\n\n",
        );
    }
    let set = spec.harness.kind.metric_set();
    if let Some(caveat) = set.caveat() {
        let _ = writeln!(out, "> **Definitions.** {caveat}\n");
    }
    if let Some(note) = lab_profiles_on_builtin(spec) {
        let _ = writeln!(out, "> **Rate workloads.** {note}\n");
    }
    super::search::section(&mut out, &analysis.searches);
    let ctx = Ctx { spec, analysis };
    for section in &spec.report.sections {
        match section {
            Section::Conclusion => {
                if let Some(page) = analysis.page.as_ref().and_then(|p| p.conclusion.as_ref()) {
                    ctx.page_conclusion(&mut out, page, chart);
                } else if let Some(table) = &analysis.conclusion {
                    ctx.conclusion(&mut out, table, chart);
                }
            }
            Section::Comparisons => {
                for c in &analysis.comparisons {
                    ctx.comparison(&mut out, c);
                }
            }
            Section::Summary => match analysis.page.as_ref().and_then(|p| p.summary.as_ref()) {
                Some(page) => ctx.page_summary(&mut out, page),
                None => ctx.summary(&mut out),
            },
            Section::OtherCases => ctx.other_cases(&mut out),
            Section::Published => ctx.published(&mut out),
            Section::Context => ctx.context(&mut out),
            Section::Runs => {
                // The charts before the long table of every run.
                super::charts::section(&mut out, charts);
                runs(&mut out, run_columns(set), &analysis.runs)
            }
        }
    }
    if !spec.report.sections.contains(&Section::Runs) {
        super::charts::section(&mut out, charts);
    }
    out
}

struct Ctx<'a> {
    spec: &'a Spec,
    analysis: &'a Analysis,
}

impl Ctx<'_> {
    fn delta(&self, pct: f64) -> String {
        format!("{pct:+.*}%", self.spec.report.delta_decimals)
    }

    /// A delta as the published pages colour it: `(+47.1%)` in a conclusion
    /// cell (`parens`), bare in the summary.
    fn coloured_delta(&self, pct: f64, parens: bool) -> String {
        let mark = if pct >= 0.0 { Mark::Gain } else { Mark::Loss };
        let delta = self.delta(pct);
        mark.wrap(&if parens { format!("({delta})") } else { delta })
    }

    /// A speedup as the latency pages colour it: `(1.23x faster)`, `(1.03x slower)`.
    fn coloured_ratio(&self, base_ms: f64, new_ms: f64, decimals: usize) -> String {
        let mark = if new_ms <= base_ms {
            Mark::Gain
        } else {
            Mark::Slower
        };
        mark.wrap(&format!("({})", speed_ratio(base_ms, new_ms, decimals)))
    }

    fn command(&self, step: &str) -> String {
        self.spec
            .step(step)
            .map(|s| display_command(s.engine, &s.model.id, &s.args))
            .unwrap_or_default()
    }

    fn conclusion(&self, out: &mut String, table: &ConclusionTable, chart: Option<&str>) {
        out.push_str("## Conclusion\n\n");
        if let Some(chart) = chart {
            let what = match self.spec.objective {
                Objective::Throughput => "Total TPS",
                Objective::Latency => "Mean latency",
            };
            let _ = writeln!(out, "![{what} per benchmark case]({chart})\n");
        }
        if let Some(step) = self.spec.step(&table.optimized) {
            let replicas = replicas_note(step);
            let _ = writeln!(
                out,
                "Recommended configuration ({}{replicas}):\n\n{}\n",
                code(&table.optimized),
                code_block("bash", &self.command(&table.optimized))
            );
        }
        for outranked in crate::analyze::outranked(self.spec, self.analysis) {
            let _ = writeln!(out, "{}\n", self.outranked(&outranked));
        }
        let times = |n: u32| {
            if n > 1 {
                format!(", ×{n}")
            } else {
                String::new()
            }
        };
        let _ = writeln!(
            out,
            "| Benchmark Case | Baseline ({}{}) | Optimized ({}{}) |\n|---|---|---|",
            cell_code(&table.baseline),
            times(table.baseline_replicas),
            cell_code(&table.optimized),
            times(table.optimized_replicas)
        );
        let x = |n: u32| {
            if n > 1 {
                format!("x{n}")
            } else {
                String::new()
            }
        };
        for row in &table.rows {
            if self.spec.objective == Objective::Latency {
                self.latency_row(out, row);
                continue;
            }
            let noise = match row.within_noise {
                Some(true) => " (within noise)",
                _ => "",
            };
            let n = |n: u32| {
                if n > 1 {
                    format!(" (n={n})")
                } else {
                    String::new()
                }
            };
            let _ = writeln!(
                out,
                "| **{}** | Total TPS: {:.2}{}{}{LINE_BREAK}Mean TPOT(ms): {:.2} | Total TPS: {:.2}{}{} {}{noise}{LINE_BREAK}Mean TPOT(ms): {:.2} |",
                text(self.spec.workload_title(&row.workload)),
                row.base_tps,
                x(table.baseline_replicas),
                n(row.base_n),
                row.base_tpot_ms,
                row.opt_tps,
                x(table.optimized_replicas),
                n(row.opt_n),
                self.coloured_delta(row.delta_pct, true),
                row.opt_tpot_ms
            );
        }
        out.push('\n');
    }

    /// That the numbers put another configuration first than the one
    /// recommended, by how much, and whether that is more than the noise.
    fn outranked(&self, o: &crate::analyze::Outranked) -> String {
        use crate::analyze::Noise;
        let (numbers, direction) = match self.spec.objective {
            Objective::Throughput => (
                format!(
                    "{:.2} vs {:.2} total tokens/s",
                    o.leader.aggregate(),
                    o.recommended.aggregate()
                ),
                "more",
            ),
            Objective::Latency => (
                format!(
                    "mean latency {:.2} vs {:.2} ms",
                    o.leader.latency_ms.unwrap_or(f64::NAN),
                    o.recommended.latency_ms.unwrap_or(f64::NAN)
                ),
                "less",
            ),
        };
        let noise = match o.noise {
            Noise::Measured { pct } => format!(
                "the run-to-run noise (±{pct:.1}% at 95%, over {} and {} samples)",
                o.leader.n, o.recommended.n
            ),
            Noise::Floor { pct } => {
                format!("the {pct:.0}% noise floor of a single sample, whose spread is unknown")
            }
        };
        let ratio = o.gap_pct / o.noise.pct();
        let verdict = if o.beyond_noise() {
            format!("beyond {noise}: the gap is {ratio:.1}× the noise")
        } else {
            format!("within {noise} ({ratio:.1}× it): the measurements do not tell them apart")
        };
        format!(
            "Measured, {} ranks first on {}, not the recommended {}: {numbers}, {:.1}% {direction}, {verdict}.",
            code(&o.leader.step),
            text(self.spec.workload_title(&o.workload)),
            code(&o.recommended.step),
            o.gap_pct
        )
    }

    /// The conclusion as the page printed it, every number from its blocks,
    /// and where the page's own numbers disagree with what it printed.
    fn page_conclusion(&self, out: &mut String, page: &PageConclusion, chart: Option<&str>) {
        out.push_str("## Conclusion\n\n");
        if let Some(chart) = chart {
            let _ = writeln!(out, "![Conclusion per benchmark case]({chart})\n");
        }
        if let Some(command) = &page.command {
            let optimized = self
                .spec
                .conclusion
                .as_ref()
                .map_or("", |c| c.optimized.as_str());
            let replicas = self
                .spec
                .step(optimized)
                .map_or(String::new(), replicas_note);
            let _ = writeln!(
                out,
                "Recommended configuration ({}{replicas}), the page's serving command quoted for the shell:\n\n{}\n",
                code(optimized),
                code_block("bash", command)
            );
        }
        // Two pages print a recommended command but no table.
        if page.rows.is_empty() {
            return;
        }
        table(
            out,
            &page.header,
            page.rows.iter().map(|r| {
                vec![
                    format!("**{}**", text(&r.case)),
                    cell(&r.baseline),
                    cell(&r.optimized),
                ]
            }),
        );
        self.page_findings(out, "Conclusion");
    }

    /// The summary of optimization options in the page's own layout.
    fn page_summary(&self, out: &mut String, page: &PageSummary) {
        out.push_str("## Summary of Optimization Options\n\n");
        table(
            out,
            &page.header,
            page.rows
                .iter()
                .map(|r| r.iter().map(|c| cell(c)).collect()),
        );
        self.page_findings(out, "Summary");
        self.summary_notes(out);
    }

    /// The page's printed values that its own numbers do not give, at `place`.
    fn page_findings(&self, out: &mut String, place: &str) {
        let Some(page) = &self.analysis.page else {
            return;
        };
        let found: Vec<_> = page
            .findings
            .iter()
            .filter(|f| f.place.starts_with(place))
            .collect();
        if found.is_empty() {
            return;
        }
        if !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str("The page's own numbers do not give what it printed (⚠):\n\n");
        for f in found {
            let _ = writeln!(out, "- {}: {}", text(&f.place), text(&f.note));
        }
        out.push('\n');
    }

    /// A conclusion row of a latency study: "Mean latency: 2.33s/req" on each
    /// side, and how many times faster the optimized configuration serves.
    fn latency_row(&self, out: &mut String, row: &crate::analyze::ConclusionRow) {
        let cell = |ms: Option<f64>, n: u32| {
            let n = if n > 1 {
                format!(" (n={n})")
            } else {
                String::new()
            };
            ms.map_or("Mean latency: -".to_owned(), |ms| {
                format!("Mean latency: {}s/req{n}", seconds(ms))
            })
        };
        let ratio = match (row.base_latency_ms, row.opt_latency_ms) {
            (Some(base), Some(opt)) => {
                let noise = match row.within_noise {
                    Some(true) => " (within noise)",
                    _ => "",
                };
                let decimals = self.spec.report.delta_decimals;
                format!(" {}{noise}", self.coloured_ratio(base, opt, decimals))
            }
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "| **{}** | {} | {}{ratio} |",
            text(self.spec.workload_title(&row.workload)),
            cell(row.base_latency_ms, row.base_n),
            cell(row.opt_latency_ms, row.opt_n),
        );
    }

    fn comparison(&self, out: &mut String, c: &ComparisonResult) {
        if self.spec.objective == Objective::Latency {
            return self.latency_comparison(out, c);
        }
        let _ = writeln!(
            out,
            "## {}\n\nRanked by total token throughput on {}.\n",
            text(&c.title),
            text(self.spec.workload_title(&c.workload))
        );
        out.push_str("| Step | Serving command | Total TPS | TPS/GPU | Mean TPOT (ms) |\n|---|---|---|---|---|\n");
        for r in &c.ranking {
            let baseline = if r.is_baseline { " (baseline)" } else { "" };
            let _ = writeln!(
                out,
                "| {}{baseline} | {} | {} | {:.2} | {:.2} |",
                cell_code(&r.step),
                cell_code(&self.command(&r.step)),
                tps_cell(r),
                r.per_gpu(),
                r.tpot_ms
            );
        }
        for (step, error) in &c.failed {
            let _ = writeln!(
                out,
                "| {} | {} | failed: {} | - | - |",
                cell_code(step),
                cell_code(&self.command(step)),
                cell_code(error)
            );
        }
        for step in &c.missing {
            let _ = writeln!(
                out,
                "| {} | {} | not run yet | - | - |",
                cell_code(step),
                cell_code(&self.command(step))
            );
        }
        if !c.ranking.is_empty() {
            let line: Vec<String> = c
                .ranking
                .iter()
                .map(|r| {
                    let label = if r.replicas > 1 {
                        format!("{} ×{}", text(&r.label), r.replicas)
                    } else {
                        text(&r.label)
                    };
                    format!("{label} ({:.2} tok/s)", r.aggregate())
                })
                .collect();
            let _ = writeln!(out, "\nResult: {}", line.join(" > "));
        }
        self.page_sentence(out, &c.title);
        out.push('\n');
    }

    /// The section's "Summary:" sentence as the page wrote it, its numbers
    /// computed, and where the page's own numbers disagree.
    fn page_sentence(&self, out: &mut String, title: &str) {
        let Some(page) = &self.analysis.page else {
            return;
        };
        if let Some((_, sentence)) = page.sentences.iter().find(|(t, _)| t == title) {
            let _ = writeln!(out, "\nSummary: {}", text(sentence));
            self.page_findings(out, &format!("{title}, Summary"));
        }
        if let Some((_, delta)) = page.deltas.iter().find(|(t, _)| t == title) {
            let _ = writeln!(out, "\nThe page's delta for this section: {}", text(delta));
            self.page_findings(out, &format!("{title}, delta"));
        }
    }

    /// A comparison of a latency study: ranked by mean latency, lowest first,
    /// each step's speed against the baseline.
    fn latency_comparison(&self, out: &mut String, c: &ComparisonResult) {
        let _ = writeln!(
            out,
            "## {}\n\nRanked by mean end-to-end latency per request on {} (lower is better).\n",
            text(&c.title),
            text(self.spec.workload_title(&c.workload))
        );
        out.push_str("| Step | Serving command | Mean latency (s/req) | vs baseline | Mean TTFT (ms) | Mean TPOT (ms) |\n|---|---|---|---|---|---|\n");
        let base = c
            .ranking
            .iter()
            .find(|r| r.is_baseline)
            .and_then(|r| r.latency_ms);
        for r in &c.ranking {
            let baseline = if r.is_baseline { " (baseline)" } else { "" };
            let latency = r.latency_ms.map_or("-".to_owned(), |ms| {
                let mut cell = seconds(ms);
                if let Some(sd) = r.latency_sd {
                    let _ = write!(cell, " ± {} (n={})", seconds(sd), r.n);
                }
                cell
            });
            let versus = match (base, r.latency_ms) {
                (Some(base), Some(ms)) if !r.is_baseline => {
                    speed_ratio(base, ms, FINE_RATIO_DECIMALS)
                }
                _ => "-".to_owned(),
            };
            let ttft = self
                .record(&r.step, &c.workload)
                .and_then(|rec| rec.metrics.get(self.spec.harness.kind.metric_set().ttft()))
                .map_or("-".to_owned(), |v| format!("{v:.2}"));
            let _ = writeln!(
                out,
                "| {}{baseline} | {} | {latency} | {versus} | {ttft} | {:.2} |",
                cell_code(&r.step),
                cell_code(&self.command(&r.step)),
                r.tpot_ms
            );
        }
        for (step, error) in &c.failed {
            let _ = writeln!(
                out,
                "| {} | {} | failed: {} | - | - | - |",
                cell_code(step),
                cell_code(&self.command(step)),
                cell_code(error)
            );
        }
        for step in &c.missing {
            let _ = writeln!(
                out,
                "| {} | {} | not run yet | - | - | - |",
                cell_code(step),
                cell_code(&self.command(step))
            );
        }
        let known: Vec<String> = c
            .ranking
            .iter()
            .filter_map(|r| Some(format!("{} ({} s)", text(&r.label), seconds(r.latency_ms?))))
            .collect();
        if !known.is_empty() {
            let _ = writeln!(out, "\nMean latency per request: {}", known.join(" < "));
        }
        self.page_sentence(out, &c.title);
        out.push('\n');
    }

    fn summary(&self, out: &mut String) {
        let rows = &self.analysis.summary;
        if rows.is_empty() {
            return;
        }
        let latency = self.spec.objective == Objective::Latency;
        let _ = writeln!(
            out,
            "## Summary of Optimization Options\n\n| Optimization Option | {} Improvement |\n|---|---|",
            if latency { "Latency" } else { "Throughput" }
        );
        for r in rows {
            let shown = r.shown.map_or("-".to_owned(), |pct| {
                if latency {
                    // The gain of a speedup r is (r − 1) × 100: show r again.
                    self.coloured_ratio(100.0 + pct, 100.0, FINE_RATIO_DECIMALS)
                } else {
                    self.coloured_delta(pct, false)
                }
            });
            let _ = writeln!(out, "| {} | {shown} |", text(&r.title));
        }
        out.push('\n');
        self.summary_notes(out);
    }

    /// Every summary row that does not show its comparison's own result, and why.
    fn summary_notes(&self, out: &mut String) {
        let rows = &self.analysis.summary;
        let notes: Vec<String> = rows
            .iter()
            .filter_map(|r| {
                // One more decimal than the table, so a gain just under a threshold shows as such.
                let decimals = self.spec.report.delta_decimals + 1;
                let data = r.data.as_ref().map_or("no data".to_owned(), |g| {
                    format!("{} gives {:+.decimals$}%", code(&g.step), g.pct)
                });
                let why = match r.note.as_ref()? {
                    SummaryNote::CreditsConclusion { pct, workload } => format!(
                        "credits the optimized configuration's {} on {}, as declared; the comparison alone: {data}",
                        self.delta(*pct),
                        text(self.spec.workload_title(workload))
                    ),
                    SummaryNote::BelowThreshold { threshold_pct } => format!(
                        "\"-\": at or below the declared {threshold_pct}% threshold; the comparison: {data}"
                    ),
                    SummaryNote::WithinNoise => {
                        format!("\"-\": within run-to-run noise; the comparison: {data}")
                    }
                    SummaryNote::NoData => "\"-\": no declared comparison measures it".to_owned(),
                };
                Some(format!("- {}: {why}", text(&r.title)))
            })
            .collect();
        if notes.is_empty() {
            return;
        }
        if !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str("Rows that do not show their comparison's own result:\n\n");
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
        out.push('\n');
    }

    /// Every workload for the baseline and the optimized configuration.
    fn other_cases(&self, out: &mut String) {
        let Some(c) = &self.spec.conclusion else {
            return;
        };
        let set = self.spec.harness.kind.metric_set();
        let columns: &[(&str, &str)] = match set {
            crate::metrics::MetricSet::Vllm => &[
                ("total_token_throughput", "Total TPS"),
                ("output_throughput", "Output TPS"),
                ("mean_ttft_ms", "Mean TTFT (ms)"),
                ("mean_tpot_ms", "Mean TPOT (ms)"),
                ("mean_itl_ms", "Mean ITL (ms)"),
            ],
            crate::metrics::MetricSet::Guidellm => &[
                ("tokens_per_second_mean", "tokens_per_second mean"),
                ("time_to_first_token_ms_mean", "time_to_first_token_ms mean"),
                (
                    "time_per_output_token_ms_mean",
                    "time_per_output_token_ms mean",
                ),
                ("inter_token_latency_ms_mean", "inter_token_latency_ms mean"),
            ],
        };
        out.push_str("## Other Benchmark Cases\n\n");
        for (label, step) in [("Baseline", &c.baseline), ("Optimized", &c.optimized)] {
            let per_instance = match self.spec.step(step).map(|s| s.report_factor()) {
                Some(n) if n > 1 => format!(" (numbers of one instance; ×{n} replicas)"),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "{label} ({}{per_instance}): {}\n",
                code(step),
                code(&self.command(step))
            );
            out.push_str("| Benchmark Case |");
            for (_, h) in columns {
                let _ = write!(out, " {h} |");
            }
            out.push_str("\n|---|");
            out.push_str(&"---:|".repeat(columns.len()));
            out.push('\n');
            for r in self.analysis.runs.iter().filter(|r| &r.step == step) {
                let _ = write!(out, "| {} |", text(self.spec.workload_title(&r.workload)));
                for (name, _) in columns {
                    match (r.metrics.get(*name), &r.failure) {
                        (Some(v), _) => {
                            let _ = write!(out, " {v:.2} |");
                        }
                        (None, Some(_)) => out.push_str(" failed |"),
                        (None, None) => out.push_str(" - |"),
                    }
                }
                out.push('\n');
            }
            out.push('\n');
        }
    }

    fn published(&self, out: &mut String) {
        // A simulated number says nothing about a GPU, and a run not yet stored
        // has nothing to compare: both are counted, not listed (`verify` lists all).
        let all = &self.analysis.checks;
        let unscored = |source| {
            all.iter()
                .filter(|c| c.verdict == Verdict::NotScored && c.source == Some(source))
                .count()
        };
        let (simulated, imported) = (unscored(Source::Simulated), unscored(Source::Published));
        let unstored = all.iter().filter(|c| c.source.is_none()).count();
        let checks: Vec<&Check> = all
            .iter()
            .filter(|c| c.source.is_some() && c.verdict != Verdict::NotScored)
            .collect();
        if all.is_empty() {
            return;
        }
        out.push_str("## Published vs Measured\n\n");
        if simulated > 0 {
            let _ = writeln!(
                out,
                "{simulated} published numbers are not compared with simulated ones, which predict no GPU; \
                 `perfpipe report --published` shows the published report.\n"
            );
        }
        if imported > 0 {
            let _ = writeln!(
                out,
                "{imported} published numbers have only imported results, the page's own numbers, which are not scored.\n"
            );
        }
        if unstored > 0 {
            let _ = writeln!(
                out,
                "{unstored} published numbers have no stored result yet (`perfpipe plan` lists the missing runs).\n"
            );
        }
        if checks.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "Tolerance: ±{}%.\n\n| Step | Workload | Metric | Published | Stored | Difference | Source | Verdict |\n|---|---|---|---:|---:|---:|---|---|",
            self.spec.report.tolerance_pct
        );
        for c in checks {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                cell_code(&c.step),
                text(self.spec.workload_title(&c.workload)),
                cell_code(&c.metric),
                text(&c.published),
                text(c.measured.as_deref().unwrap_or("-")),
                c.diff_pct.map_or("-".to_owned(), |d| self.delta(d)),
                c.source.map_or("-", Source::label),
                c.verdict.label()
            );
        }
        out.push('\n');
    }

    /// Where the numbers came from, and a warning when compared results do not
    /// share a machine and software.
    fn context(&self, out: &mut String) {
        let mut environments: Vec<(&str, usize)> = Vec::new();
        for r in &self.analysis.runs {
            if let Some(e) = r.environment.as_deref() {
                match environments.iter_mut().find(|(x, _)| *x == e) {
                    Some((_, n)) => *n += 1,
                    None => environments.push((e, 1)),
                }
            }
        }
        if environments.is_empty() {
            return;
        }
        out.push_str("## Context\n\n| Host and software | Runs |\n|---|---:|\n");
        for (e, n) in &environments {
            let _ = writeln!(out, "| {} | {n} |", text(e));
        }
        out.push('\n');
        for (title, steps) in self.compared_sets() {
            let mut seen: Vec<&str> = steps
                .iter()
                .filter_map(|(s, w)| self.record(s, w)?.environment.as_deref())
                .collect();
            seen.sort();
            seen.dedup();
            if seen.len() > 1 {
                let _ = writeln!(
                    out,
                    "> **Warning.** {title} compares results from different hosts or software: {}.\n",
                    text(&seen.join("; "))
                );
            }
        }
    }

    /// Each table that compares results, with the (step, workload) pairs it compares.
    fn compared_sets(&self) -> Vec<(String, Vec<(String, String)>)> {
        let mut sets: Vec<(String, Vec<(String, String)>)> = self
            .analysis
            .comparisons
            .iter()
            .map(|c| {
                let steps = c
                    .ranking
                    .iter()
                    .map(|r| (r.step.clone(), c.workload.clone()))
                    .collect();
                (format!("\"{}\"", text(&c.title)), steps)
            })
            .collect();
        if let Some(t) = &self.analysis.conclusion {
            let steps = t
                .rows
                .iter()
                .flat_map(|r| {
                    [
                        (t.baseline.clone(), r.workload.clone()),
                        (t.optimized.clone(), r.workload.clone()),
                    ]
                })
                .collect();
            sets.push(("The conclusion".to_owned(), steps));
        }
        sets
    }

    fn record(&self, step: &str, workload: &str) -> Option<&RunRecord> {
        self.analysis
            .runs
            .iter()
            .find(|r| r.step == step && r.workload == workload)
    }
}

/// How a configuration of several replicas is measured, for its heading.
fn replicas_note(step: &crate::spec::Step) -> String {
    match (step.replicas, step.measure_all) {
        (1, _) => String::new(),
        (n, false) => format!(
            ", {n} replicas of {} GPUs; one measured, its throughput reported ×{n}",
            step.gpus
        ),
        (n, true) => format!(", {n} replicas of {} GPUs, all measured", step.gpus),
    }
}

/// A printed cell: its lines, each coloured, broken as the pages break them.
fn cell(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| coloured(l))
        .collect::<Vec<_>>()
        .join(LINE_BREAK)
}

/// A printed line with its delta, ratio or note coloured as the pages colour
/// them: `Total TPS: 5770.24 <span ...>(+47.1%)</span>`, a bare `+47.1%`.
fn coloured(line: &str) -> String {
    let bare_delta =
        line.len() > 1 && (line.starts_with('+') || line.starts_with('-')) && line.contains('%');
    let (before, change) = match line.rfind(" (") {
        Some(i) if line.ends_with(')') => line.split_at(i + 1),
        _ if (line.starts_with('(') && line.ends_with(')')) || bare_delta => ("", line),
        _ => return text(line),
    };
    // A delta, a ratio or a skip note; not a name's parentheses (`(r=8)`).
    let inside = change.trim_start_matches('(');
    if !(inside.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '-')
        || inside.starts_with("Success rate"))
    {
        return text(line);
    }
    let mark = if change.contains("Success rate") || change.contains("slower") {
        Mark::Slower
    } else if change.contains("lower than previous") {
        Mark::Skipped
    } else if change.trim_start_matches('(').starts_with('-') {
        Mark::Loss
    } else {
        Mark::Gain
    };
    format!("{}{}", text(before), mark.wrap(&text(change)))
}

/// A markdown table: its header and rows of cells.
fn table(out: &mut String, header: &[String], rows: impl Iterator<Item = Vec<String>>) {
    let header: Vec<String> = header.iter().map(|h| text(h)).collect();
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out.push('\n');
}

/// Total TPS as the published pages print it ("3019.19x2"), with n and spread
/// when several samples stand behind it.
fn tps_cell(r: &Ranked) -> String {
    let mut cell = format!("{:.2}", r.tps);
    if r.replicas > 1 {
        let _ = write!(cell, "x{}", r.replicas);
    }
    if let Some(sd) = r.tps_sd {
        let _ = write!(cell, " ± {sd:.2} (n={})", r.n);
    }
    cell
}

/// Decimals of the ratios the pages' conclusion tables do not print (a
/// comparison's, the summary's): enough to tell 1.04x from 1.00x, as the
/// newer pages print them.
const FINE_RATIO_DECIMALS: usize = 2;

/// How many times faster `new_ms` serves a request than `base_ms`, as the
/// latency pages print it: `1.23x faster`, `1.03x slower` (`decimals` digits).
pub fn speed_ratio(base_ms: f64, new_ms: f64, decimals: usize) -> String {
    let speedup = crate::analyze::speedup(base_ms, new_ms);
    if speedup >= 1.0 {
        format!("{speedup:.decimals$}x faster")
    } else {
        format!("{:.decimals$}x slower", 1.0 / speedup)
    }
}

/// Milliseconds as the latency pages print seconds: `1.66`.
fn seconds(ms: f64) -> String {
    format!("{:.2}", ms / 1000.0)
}

/// Which kinds of numbers the report holds, e.g. "published" or "simulated, published".
fn sources(runs: &[RunRecord]) -> String {
    let kinds: Vec<&str> = source_kinds(runs).into_iter().map(Source::label).collect();
    if kinds.is_empty() {
        "none yet".into()
    } else {
        kinds.join(", ")
    }
}

fn source_kinds(runs: &[RunRecord]) -> Vec<Source> {
    let mut kinds: Vec<Source> = Vec::new();
    for s in runs.iter().filter_map(|r| r.source) {
        if !kinds.contains(&s) {
            kinds.push(s);
        }
    }
    kinds.sort_by_key(|s| s.label());
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_with_a_command_and_no_conclusion_table_shows_the_command_alone() {
        let text = r#"experiment "e" {
            hardware "nvidia-a100-sxm4-80gb" gpus=8
            model "o/m"
            engine vllm version="0.11.0"
            workload w { dataset random input=8 output=8; prompts 1 }
            step a engine=vllm gpus=8 { expect w { total_token_throughput 1.00; } }
            conclusion baseline=a optimized=a { command "vllm" "serve" "o/m" "-tp" "8"; }
        }"#;
        let spec = crate::spec::parse(&crate::spec::SourceFile {
            name: "e.kdl".into(),
            text: text.into(),
        })
        .unwrap();
        let analysis = crate::analyze::analyze(&spec, crate::analyze::from_expectations(&spec));
        let report = markdown(&spec, &analysis, &Charts::default());
        assert!(
            report.contains("```bash\nvllm serve o/m -tp 8\n```"),
            "{report}"
        );
        let conclusion = report.split("## Other").next().unwrap();
        assert!(!conclusion.contains("| Benchmark Case |"), "{report}");
    }

    /// The declared recommendation is `b`; the numbers put `c` first on
    /// `w` (beyond the noise floor) and `a` first on `v` (within it).
    #[test]
    fn a_measured_leader_other_than_the_recommended_one_is_named_against_the_noise() {
        let text = r#"experiment "e" {
            hardware "nvidia-a100-sxm4-80gb" gpus=8
            model "o/m"
            engine vllm version="0.11.0"
            workload w { dataset random input=8 output=8; prompts 1 }
            workload v { dataset random input=8 output=8; prompts 1 }
            step a engine=vllm gpus=8 {
                expect w { total_token_throughput 900.00; mean_tpot_ms 10.00; }
                expect v { total_token_throughput 1020.00; mean_tpot_ms 10.00; }
            }
            step b engine=vllm gpus=8 {
                expect w { total_token_throughput 1000.00; mean_tpot_ms 10.00; }
                expect v { total_token_throughput 1000.00; mean_tpot_ms 10.00; }
            }
            step c engine=vllm gpus=8 {
                expect w { total_token_throughput 1100.00; mean_tpot_ms 10.00; }
            }
            compare "On w" baseline=a workload=w { candidate b; candidate c; }
            compare "On v" baseline=a workload=v { candidate b; }
            conclusion baseline=a optimized=b
        }"#;
        let spec = crate::spec::parse(&crate::spec::SourceFile {
            name: "e.kdl".into(),
            text: text.into(),
        })
        .unwrap();
        let mut analysis = crate::analyze::analyze(&spec, crate::analyze::from_expectations(&spec));
        // As after a run: the report of stored results, not of a page.
        analysis.page = None;
        let report = markdown(&spec, &analysis, &Charts::default());
        let notes: Vec<&str> = report
            .lines()
            .filter(|l| l.starts_with("Measured, "))
            .collect();
        insta::assert_snapshot!(notes.join("\n"), @r"
        Measured, `c` ranks first on w, not the recommended `b`: 1100.00 vs 1000.00 total tokens/s, 10.0% more, beyond the 5% noise floor of a single sample, whose spread is unknown: the gap is 2.0× the noise.
        Measured, `a` ranks first on v, not the recommended `b`: 1020.00 vs 1000.00 total tokens/s, 2.0% more, within the 5% noise floor of a single sample, whose spread is unknown (0.4× it): the measurements do not tell them apart.
        ");
    }

    #[test]
    fn a_speed_ratio_reads_as_the_latency_pages_print_it() {
        // qwen3.5-9b-h100-latency, Rate 4: 2.33 s → 1.90 s.
        assert_eq!(speed_ratio(2330.0, 1900.0, 2), "1.23x faster");
        // qwen3-8b-h100-latency, BS=1: 1.66 s → 0.62 s, one decimal.
        assert_eq!(speed_ratio(1660.0, 620.0, 1), "2.7x faster");
        // Prefix Cache: 2.62 s → 2.69 s.
        assert_eq!(speed_ratio(2620.0, 2690.0, 2), "1.03x slower");
        assert_eq!(speed_ratio(2640.0, 2640.0, 2), "1.00x faster");
    }
}
