//! The draft as KDL text: four-space indents, comments above what they are
//! about, one metric a line with the names aligned.

use std::fmt::Write;

use crate::page::bind::workloads::Workload;
use crate::page::bind::{Draft, ExpectKind, Step};

pub use crate::kdl_string::quote;

/// Strings on one line, each quoted.
fn strings(items: &[String]) -> String {
    items.iter().map(|i| quote(i)).collect::<Vec<_>>().join(" ")
}

/// A sweep value: a bare number where it is one, else a string.
fn value(v: &str) -> String {
    if v.parse::<i64>().is_ok() {
        v.to_owned()
    } else {
        quote(v)
    }
}

struct Out {
    text: String,
}

impl Out {
    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.text.push_str("    ");
        }
        self.text.push_str(text);
        self.text.push('\n');
    }

    /// `// …` lines, wrapped near 90 columns.
    fn comment(&mut self, indent: usize, text: &str) {
        let width = 90usize.saturating_sub(indent * 4 + 3).max(40);
        let mut line = String::new();
        // Its line breaks are whitespace here; a page's other code points a
        // comment cannot hold are shown as their escapes.
        for word in text.split_whitespace() {
            let word = &crate::kdl_string::comment_text(word);
            if !line.is_empty() && line.len() + 1 + word.len() > width {
                self.line(indent, &format!("// {line}"));
                line.clear();
                // A continued TODO stays visibly one.
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        if !line.is_empty() {
            self.line(indent, &format!("// {line}"));
        }
    }

    fn blank(&mut self) {
        self.text.push('\n');
    }
}

pub fn render(d: &Draft) -> String {
    let mut o = Out {
        text: String::new(),
    };
    o.comment(
        0,
        &format!(
            "Every configuration measured by the published study \"{}\", with every number of every result block as an expectation ({} blocks, {} failures).",
            d.title, d.blocks, d.failures
        ),
    );
    o.comment(
        0,
        "Written by `perfpipe init --from-page`. A `TODO:` marks where the page is ambiguous or contradicts itself: the reading taken is the most faithful one, and the comment quotes the page (docs/reproduce-a-published-study.md).",
    );
    o.blank();
    o.line(0, &format!("experiment {} {{", quote(&d.name)));
    o.line(1, &format!("title {}", quote(&d.title)));
    o.blank();
    for c in &d.hardware_comments {
        o.comment(1, c);
    }
    o.line(
        1,
        &format!("hardware {} gpus={}", quote(&d.gpu_type), d.gpus),
    );
    for c in &d.model_comments {
        o.comment(1, c);
    }
    o.line(1, &format!("model {}", quote(&d.model)));
    o.line(1, "runtime docker");
    if d.latency {
        o.line(1, "objective latency");
    }
    o.blank();
    for c in &d.engine_comments {
        o.comment(1, c);
    }
    for (kind, version) in &d.engines {
        o.line(1, &format!("engine {kind} version={}", quote(version)));
    }
    o.blank();
    for c in &d.harness_comments {
        o.comment(1, c);
    }
    o.line(1, &format!("harness {}", d.harness));
    o.blank();
    for w in &d.workloads {
        for c in &w.comments {
            o.comment(1, c);
        }
        if w.prompts_from_blocks {
            o.comment(
                1,
                "TODO: the page states no --num-prompts for this workload; the prompts are the requests of its result blocks",
            );
        }
        o.line(1, &format!("workload {} {{", w.name));
        for l in workload_body(w) {
            o.line(2, &l);
        }
        o.line(1, "}");
    }
    for g in &d.groups {
        o.blank();
        let rule = 72usize.saturating_sub(g.title.len() + 9).max(4);
        o.line(1, &format!("// ---- {} {}", g.title, "-".repeat(rule)));
        for n in &g.notes {
            o.comment(1, n);
        }
        for &i in &g.steps {
            if let Some(first) = d.groups.iter().find(|x| x.steps.contains(&i))
                && !std::ptr::eq(first, g)
            {
                o.comment(
                    1,
                    &format!("`{}` (declared under \"{}\")", d.steps[i].name, first.title),
                );
                continue;
            }
            o.blank();
            step(&mut o, &d.steps[i]);
        }
    }
    if !d.compares.is_empty() {
        o.blank();
        o.line(
            1,
            "// ---- Comparisons -----------------------------------------------------",
        );
    }
    for c in &d.compares {
        for line in &c.comments {
            o.comment(1, line);
        }
        o.line(
            1,
            &format!(
                "compare {} baseline={} workload={} {{",
                quote(&c.title),
                c.baseline,
                c.workload
            ),
        );
        for cand in &c.candidates {
            o.line(2, &format!("candidate {cand}"));
        }
        if let Some(r) = &c.result {
            o.line(2, &format!("result {}", quote(r)));
        }
        if let Some(s) = &c.summary {
            let named = c
                .summary_steps
                .as_ref()
                .map(|(a, b)| format!(" first={a} second={b}"))
                .unwrap_or_default();
            o.line(2, &format!("summary {}{named}", quote(s)));
        }
        o.line(1, "}");
    }
    if let Some(c) = &d.conclusion {
        o.blank();
        o.line(
            1,
            "// ---- Conclusion ------------------------------------------------------",
        );
        for line in &c.comments {
            o.comment(1, line);
        }
        let head = format!(
            "conclusion baseline={} optimized={}",
            c.baseline, c.optimized
        );
        if c.command.is_empty() && c.cases.is_empty() {
            o.line(1, &head);
        } else {
            o.line(1, &format!("{head} {{"));
            if !c.command.is_empty() {
                o.line(2, &format!("command {}", strings(&c.command)));
            }
            if !c.table.is_empty() {
                o.line(2, &format!("table {}", strings(&c.table)));
            }
            for case in &c.cases {
                let what = match &case.unbound {
                    Some((label, reason)) => {
                        format!("unbound={} reason={}", quote(label), quote(reason))
                    }
                    None => case.workload.clone(),
                };
                o.line(2, &format!("case {what} {{"));
                o.line(3, &format!("baseline {}", strings(&case.baseline)));
                o.line(3, &format!("optimized {}", strings(&case.optimized)));
                o.line(2, "}");
            }
            o.line(1, "}");
        }
    }
    if let Some(r) = &d.report {
        o.blank();
        o.line(
            1,
            "// ---- Report ----------------------------------------------------------",
        );
        for line in &r.comments {
            o.comment(1, line);
        }
        if r.summary.is_empty() && r.table.is_empty() {
            o.line(1, &format!("report delta-decimals={}", r.delta_decimals));
        } else {
            o.line(1, &format!("report delta-decimals={} {{", r.delta_decimals));
            if !r.table.is_empty() {
                let mut line = format!("summary-table {}", strings(&r.table));
                if r.min_success {
                    line.push_str(" min-success=100");
                }
                if r.skip_lower_than_previous {
                    line.push_str(" skip-lower-than-previous=#true");
                }
                o.line(2, &line);
            }
            for row in &r.summary {
                let credits = if row.credits_conclusion {
                    " credits=conclusion"
                } else {
                    ""
                };
                let threshold = row
                    .threshold
                    .as_ref()
                    .map(|t| format!(" threshold={t}"))
                    .unwrap_or_default();
                let optimized = row
                    .optimized
                    .as_ref()
                    .map(|t| format!(" optimized={t}"))
                    .unwrap_or_default();
                let per_gpu = if row.per_gpu { " per-gpu=#true" } else { "" };
                o.line(
                    2,
                    &format!(
                        "summary {}{credits}{threshold}{optimized}{per_gpu} {{",
                        quote(&row.title)
                    ),
                );
                for cell in &row.cells {
                    o.line(3, &format!("cell {}", strings(cell)));
                }
                o.line(2, "}");
            }
            o.line(1, "}");
        }
    }
    o.line(0, "}");
    o.text
}

fn step(o: &mut Out, s: &Step) {
    for c in &s.comments {
        o.comment(1, c);
    }
    let kind = if s.vary.is_some() { "sweep" } else { "step" };
    let mut head = format!("{kind} {} engine={}", s.name, s.engine);
    if let Some(m) = &s.model {
        let _ = write!(head, " model={}", quote(m));
    }
    let _ = write!(head, " gpus={}", s.gpus);
    if s.replicas > 1 {
        let _ = write!(head, " replicas={}", s.replicas);
    }
    o.line(1, &format!("{head} {{"));
    if !s.args.is_empty() {
        let args: Vec<String> = s.args.iter().map(|a| quote(a)).collect();
        o.line(2, &format!("args {}", args.join(" ")));
    }
    if !s.env.is_empty() {
        let env: Vec<String> = s
            .env
            .iter()
            .map(|(n, v)| format!("{n}={}", quote(v)))
            .collect();
        o.line(2, &format!("env {}", env.join(" ")));
    }
    if let Some((flag, values)) = &s.vary {
        let values: Vec<String> = values.iter().map(|v| value(v)).collect();
        o.line(2, &format!("vary {} {}", quote(flag), values.join(" ")));
    }
    o.line(2, &format!("workloads {}", s.workloads.join(" ")));
    for e in &s.expects {
        for c in &e.comments {
            o.comment(2, c);
        }
        let at =
            e.at.as_ref()
                .map(|v| format!(" at={}", value(v)))
                .unwrap_or_default();
        match &e.kind {
            ExpectKind::Failure(error) => {
                o.line(
                    2,
                    &format!("expect-failure {}{at} {}", e.workload, quote(error)),
                );
            }
            ExpectKind::Metrics(metrics) => {
                o.line(2, &format!("expect {}{at} {{", e.workload));
                let width = metrics.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
                for (name, text) in metrics {
                    o.line(3, &format!("{name:width$} {text}"));
                }
                o.line(2, "}");
            }
        }
    }
    o.line(1, "}");
}

const SHAREGPT: &str = r#"dataset sharegpt path="datasets/ShareGPT_V3_unfiltered_cleaned_split.json" sample="datasets/sharegpt-sample.json""#;

/// A workload's children, one a line.
fn workload_body(w: &Workload) -> Vec<String> {
    let mut out = vec![format!("title {}", quote(&w.title))];
    if w.sharegpt {
        let conversion = if w.guidellm {
            r#" conversion="benchmark-runner""#
        } else {
            ""
        };
        out.push(format!("{SHAREGPT}{conversion}"));
    } else {
        let seed = w.seed.map(|s| format!(" seed={s}")).unwrap_or_default();
        out.push(format!(
            "dataset random input={} output={}{seed}",
            w.input.unwrap_or(0),
            w.output.unwrap_or(0)
        ));
    }
    out.push(format!("prompts {}", w.prompts.unwrap_or(1000)));
    if let Some(rate) = &w.rate {
        out.push(format!("rate {rate}"));
    }
    if w.guidellm {
        out.push("arrival constant".into());
    }
    if let Some(c) = w.concurrency {
        out.push(format!("concurrency {c}"));
    }
    out
}
