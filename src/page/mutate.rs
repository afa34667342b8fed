//! The page mutator: changes a publisher could make to each of the 19
//! published pages, pure and seeded. One that keeps what the page means
//! must give the same experiment (up to names and order) and no ⚠ the page
//! did not have; one that changes a printed number beyond its rounding must
//! give exactly one new ⚠, at that number.
//!
//! A short run is part of `cargo test` (one mutant per page and kind); a
//! long one is `PERFPIPE_PAGE_MUTANTS=20 cargo test --lib page::mutate`
//! (mutants per page and kind, each from its own seed).

use std::path::Path;

use crate::rng::Rng;
use crate::spec::ExpectedOutcome;

/// Mutants per page and kind when `PERFPIPE_PAGE_MUTANTS` does not say.
const DEFAULT_MUTANTS: u64 = 1;

fn mutants() -> u64 {
    std::env::var("PERFPIPE_PAGE_MUTANTS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(DEFAULT_MUTANTS)
}

/// The 19 published pages: name and text.
fn corpus() -> Vec<(String, String)> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/published/gpustack-perf-lab");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

/// What a page gives, up to names and order: every expectation's numbers
/// (sorted), and each ⚠ as (what the page printed, what its numbers give).
#[derive(Debug, PartialEq)]
struct Reading {
    expectations: Vec<Vec<(String, String)>>,
    failures: usize,
    flags: Vec<(String, String)>,
}

fn reading(page: &str) -> Result<Reading, String> {
    let generated = super::init(page).map_err(|e| e.to_string())?;
    let spec = crate::spec::parse(&crate::spec::SourceFile {
        name: "e.kdl".into(),
        text: generated.kdl.clone(),
    })
    .map_err(|e| format!("{:?}", miette::Report::new(e)))?;
    let mut expectations = Vec::new();
    let mut failures = 0;
    for e in spec.steps.iter().flat_map(|s| &s.expectations) {
        match &e.outcome {
            ExpectedOutcome::Metrics(m) => {
                let mut numbers: Vec<(String, String)> =
                    m.iter().map(|m| (m.name.clone(), m.text.clone())).collect();
                numbers.sort();
                expectations.push(numbers);
            }
            ExpectedOutcome::Failure(_) => failures += 1,
        }
    }
    expectations.sort();
    let analysis = crate::analyze::analyze(&spec, crate::analyze::from_expectations(&spec));
    let mut flags: Vec<(String, String)> = analysis
        .page
        .map(|p| p.findings)
        .unwrap_or_default()
        .into_iter()
        .map(|f| (f.printed, f.computed))
        .collect();
    flags.sort();
    Ok(Reading {
        expectations,
        failures,
        flags,
    })
}

/// A mutation: the page changed, or `None` where it has nothing to change.
type Mutation = fn(&str, &mut Rng) -> Option<String>;

/// One of `items`, chosen by `rng`.
fn pick<'a, T>(items: &'a [T], rng: &mut Rng) -> Option<&'a T> {
    if items.is_empty() {
        return None;
    }
    let i = rng.range(0, items.len() as u64 - 1);
    items.get(usize::try_from(i).ok()?)
}

/// Lines of `page` for which `f` gives a replacement; one of them replaced.
fn replace_a_line(page: &str, rng: &mut Rng, f: impl Fn(&str) -> Option<String>) -> Option<String> {
    let lines: Vec<&str> = page.split('\n').collect();
    let candidates: Vec<usize> = (0..lines.len())
        .filter(|&i| f(lines[i]).is_some())
        .collect();
    let &i = pick(&candidates, rng)?;
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    out[i] = f(lines[i])?;
    Some(out.join("\n"))
}

/// `# random 4K input` written `4k` or in tokens (`4000`).
fn size_spelling(page: &str, rng: &mut Rng) -> Option<String> {
    let thousands = rng.range(0, 1) == 0;
    replace_a_line(page, rng, |l| {
        let (indent, rest) = l.split_at(l.len() - l.trim_start().len());
        let size = rest.strip_prefix("# random ")?.strip_suffix(" input")?;
        let n = size.strip_suffix('K')?;
        n.parse::<u64>().ok()?;
        let written = if thousands {
            format!("{n}000")
        } else {
            format!("{n}k")
        };
        Some(format!("{indent}# random {written} input"))
    })
}

/// A block's `# label` written as a caption line, without the `#`.
fn caption_in_fence(page: &str, rng: &mut Rng) -> Option<String> {
    replace_a_line(page, rng, |l| {
        let (indent, rest) = l.split_at(l.len() - l.trim_start().len());
        let label = rest.strip_prefix("# random ")?;
        Some(format!("{indent}random {label}"))
    })
}

/// The GPU count written after the model (`NVIDIA H200 SXM x8`) or in words.
fn gpu_count_spelling(page: &str, rng: &mut Rng) -> Option<String> {
    const WORDS: [&str; 8] = [
        "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight",
    ];
    let words = rng.range(0, 1) == 0;
    replace_a_line(page, rng, |l| {
        let (n, rest) = l.split_once(" × ")?;
        let n: usize = n.parse().ok()?;
        let (model, after) = rest.split_once(" GPUs")?;
        Some(if words {
            format!("{} {model} GPUs{after}", WORDS.get(n.checked_sub(1)?)?)
        } else {
            format!("{model} x{n}{after}")
        })
    })
}

/// A conclusion row's label with a parenthesised description.
fn case_description(page: &str, rng: &mut Rng) -> Option<String> {
    replace_a_line(page, rng, |l| {
        let rest = l.strip_prefix("| **")?;
        let (case, after) = rest.split_once("**")?;
        Some(format!("| **{case} (as measured)**{after}"))
    })
}

/// Meaning-breaking: one Mean TPOT a conclusion cell prints, 10% off (far
/// beyond its rounding); the changed text.
fn break_a_conclusion_number(page: &str, rng: &mut Rng) -> Option<(String, String)> {
    let label = "Mean TPOT(ms): ";
    let lines: Vec<&str> = page.split('\n').collect();
    let mut places = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !l.starts_with("| **") {
            continue;
        }
        for (at, _) in l.match_indices(label) {
            places.push((i, at + label.len()));
        }
    }
    let &(i, at) = pick(&places, rng)?;
    let line = lines[i];
    let end = line[at..]
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(line.len(), |e| at + e);
    let old = &line[at..end];
    let decimals = old.split_once('.').map_or(0, |(_, f)| f.len());
    let value: f64 = old.parse().ok()?;
    let new = format!("{:.decimals$}", value * 1.1);
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    out[i] = format!("{}{new}{}", &line[..at], &line[end..]);
    Some((out.join("\n"), new))
}

/// A configuration's heading that a "Summary:" sentence names, renamed in
/// both (the engine's name kept: on the newer pages it says the engine).
fn rename_a_configuration(page: &str, rng: &mut Rng) -> Option<String> {
    let named: Vec<&str> = page
        .lines()
        .filter_map(|l| l.strip_prefix("- Summary: "))
        .flat_map(|s| s.split('`').skip(1).step_by(2))
        .filter(|label| page.contains(&format!("\n#### {label}\n")))
        .collect();
    let label = *pick(&named, rng)?;
    let renamed = format!("{label} setup");
    Some(
        page.replace(&format!("\n#### {label}\n"), &format!("\n#### {renamed}\n"))
            .replace(&format!("`{label}`"), &format!("`{renamed}`")),
    )
}

/// Meaning-breaking: one number of a "Summary:" sentence 10% off; the
/// changed text.
fn break_a_sentence_number(page: &str, rng: &mut Rng) -> Option<(String, String)> {
    let lines: Vec<&str> = page.split('\n').collect();
    let mut places = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(sentence) = l.strip_prefix("- Summary: ") else {
            continue;
        };
        let at = l.len() - sentence.len();
        let mut quoted = false;
        let bytes = sentence.as_bytes();
        let mut j = 0;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                quoted = !quoted;
            }
            let starts = bytes[j].is_ascii_digit()
                && (j == 0 || !(bytes[j - 1].is_ascii_alphanumeric() || bytes[j - 1] == b','));
            if !quoted && starts {
                let end = (j..bytes.len())
                    .find(|&e| !(bytes[e].is_ascii_digit() || bytes[e] == b'.'))
                    .unwrap_or(bytes.len());
                let end = if bytes[end - 1] == b'.' { end - 1 } else { end };
                // Numbers with a thousands comma are left alone.
                if bytes.get(end) != Some(&b',')
                    || !bytes.get(end + 1).is_some_and(u8::is_ascii_digit)
                {
                    places.push((i, at + j, at + end));
                }
                j = end;
                continue;
            }
            j += 1;
        }
    }
    let &(i, start, end) = pick(&places, rng)?;
    let line = lines[i];
    let old = &line[start..end];
    let decimals = old.split_once('.').map_or(0, |(_, f)| f.len());
    let value: f64 = old.parse().ok()?;
    let new = format!("{:.decimals$}", value * 1.1 + 1.0);
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    out[i] = format!("{}{new}{}", &line[..start], &line[end..]);
    Some((out.join("\n"), new))
}

/// The lines of the sections under "Experiment Results" whose
/// configurations can trade places: (first line, end) of each section,
/// "Other Benchmark Cases" (whose `####` headings name workloads) aside.
fn result_sections(lines: &[&str]) -> Vec<(usize, usize)> {
    let Some(start) = lines.iter().position(|l| *l == "## Experiment Results") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut open: Option<usize> = None;
    for (i, l) in lines.iter().enumerate().skip(start + 1) {
        let heading = l.starts_with("### ") || l.starts_with("## ");
        if !heading {
            continue;
        }
        if let Some(s) = open.take() {
            out.push((s, i));
        }
        let lower = l.to_lowercase();
        if l.starts_with("## ") || lower.contains("summary of optimization") {
            break;
        }
        if !lower.contains("other benchmark cases") {
            open = Some(i + 1);
        }
    }
    out
}

/// A section's configurations as line spans (start, end): each runs from
/// the end of the one before (blank lines skipped) to the end of its
/// "Benchmark result" admonition.
fn configuration_spans(lines: &[&str], (start, end): (usize, usize)) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut from = start;
    let mut i = start;
    while i < end {
        let l = lines[i].trim_start();
        if l.starts_with("??? ") && l.to_lowercase().contains("benchmark result") {
            let mut j = i + 1;
            while j < end && (lines[j].trim().is_empty() || lines[j].starts_with("    ")) {
                j += 1;
            }
            // Trailing blank lines belong to what follows.
            let mut last = j;
            while last > i + 1 && lines[last - 1].trim().is_empty() {
                last -= 1;
            }
            while from < i && lines[from].trim().is_empty() {
                from += 1;
            }
            spans.push((from, last));
            from = last;
            i = j;
            continue;
        }
        i += 1;
    }
    spans
}

/// Two neighbouring configurations of a section trade places (their
/// headings, scripts and results with them; the section's sentences stay).
fn reorder_configurations(page: &str, rng: &mut Rng) -> Option<String> {
    let lines: Vec<&str> = page.split('\n').collect();
    let pairs: Vec<((usize, usize), (usize, usize))> = result_sections(&lines)
        .into_iter()
        .flat_map(|s| {
            let spans = configuration_spans(&lines, s);
            spans.windows(2).map(|w| (w[0], w[1])).collect::<Vec<_>>()
        })
        .collect();
    let &((a0, a1), (b0, b1)) = pick(&pairs, rng)?;
    let mut out: Vec<&str> = lines[..a0].to_vec();
    out.extend(&lines[b0..b1]);
    out.extend(&lines[a1..b0]);
    out.extend(&lines[a0..a1]);
    out.extend(&lines[b1..]);
    Some(out.join("\n"))
}

/// The profile the sections run on (`- Profile: \`ShareGPT\``) renamed
/// everywhere the page names it as a profile; its dataset stays ShareGPT.
fn rename_the_profile(page: &str, rng: &mut Rng) -> Option<String> {
    let mut names: Vec<&str> = page
        .lines()
        .filter_map(|l| l.strip_prefix("- Profile: `")?.strip_suffix('`'))
        .collect();
    names.sort_unstable();
    names.dedup();
    let name = *pick(&names, rng)?;
    let renamed = format!(
        "Conversation{}",
        name.strip_prefix("ShareGPT").unwrap_or(" A")
    );
    let lines: Vec<String> = page
        .split('\n')
        .map(|l| {
            // The dataset a profile reads is no profile's name.
            if l.contains("dataset_name:") || l.contains("_V3_") {
                return l.to_owned();
            }
            let mut out = String::new();
            let mut rest = l;
            while let Some(i) = rest.find(name) {
                let after = &rest[i + name.len()..];
                let before = rest[..i].chars().next_back();
                let whole = before.is_none_or(|c| !c.is_alphanumeric())
                    && after
                        .chars()
                        .next()
                        .is_none_or(|c| !c.is_alphanumeric() && c != '_');
                out.push_str(&rest[..i]);
                out.push_str(if whole { &renamed } else { name });
                rest = after;
            }
            out.push_str(rest);
            out
        })
        .collect();
    Some(lines.join("\n"))
}

/// The table of "Summary of Optimization Options": its body rows' line numbers.
fn summary_rows(lines: &[&str]) -> Vec<usize> {
    let Some(h) = lines
        .iter()
        .position(|l| l.starts_with("### Summary of Optimization Options"))
    else {
        return Vec::new();
    };
    let table: Vec<usize> = (h + 1..lines.len())
        .skip_while(|&i| lines[i].trim().is_empty())
        .take_while(|&i| lines[i].starts_with('|'))
        .collect();
    table.into_iter().skip(2).collect()
}

/// Meaning-breaking: one number of the summary table's first numeric cell
/// of a row (its delta, or the optimized side's Total TPS) 10% off; the
/// changed text.
fn break_a_summary_number(page: &str, rng: &mut Rng) -> Option<(String, String)> {
    let lines: Vec<&str> = page.split('\n').collect();
    let mut places = Vec::new();
    for i in summary_rows(&lines) {
        let l = lines[i];
        // The option's name is the first cell; its first number after is the row's own.
        let Some(cells) = l.get(1..).and_then(|c| c.split_once('|')) else {
            continue;
        };
        let at = 1 + cells.0.len() + 1;
        let Some(j) = l[at..].find(|c: char| c.is_ascii_digit()) else {
            continue;
        };
        let start = at + j;
        let end = l[start..]
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map_or(l.len(), |e| start + e);
        let end = if l[..end].ends_with('.') {
            end - 1
        } else {
            end
        };
        places.push((i, start, end));
    }
    let &(i, start, end) = pick(&places, rng)?;
    let line = lines[i];
    let old = &line[start..end];
    let decimals = old.split_once('.').map_or(0, |(_, f)| f.len());
    let value: f64 = old.parse().ok()?;
    let new = format!("{:.decimals$}", value * 1.1 + 1.0);
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    out[i] = format!("{}{new}{}", &line[..start], &line[end..]);
    Some((out.join("\n"), new))
}

/// The titles of the summary rows whose section's best candidate does not
/// beat its baseline (by the page's own blocks): where the page could as
/// well have printed the baseline against itself.
fn rows_the_baseline_wins(page: &str) -> Vec<String> {
    let Ok(generated) = super::init(page) else {
        return Vec::new();
    };
    let Ok(spec) = crate::spec::parse(&crate::spec::SourceFile {
        name: "e.kdl".into(),
        text: generated.kdl,
    }) else {
        return Vec::new();
    };
    crate::analyze::analyze(&spec, crate::analyze::from_expectations(&spec))
        .summary
        .into_iter()
        .filter(|r| r.data.as_ref().is_some_and(|g| g.pct <= 0.0))
        .map(|r| r.title)
        .collect()
}

/// The cells of a table row, without the outer bars.
fn row_cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_owned()).collect()
}

fn green(text: &str) -> String {
    format!("<span style=\"background-color:lightgreen;\">{text}</span>")
}

/// The decimals of the first delta a table prints (`+47.1%`: 1), else 2.
fn delta_decimals(lines: &[&str], rows: &[usize]) -> usize {
    rows.iter()
        .flat_map(|&i| lines[i].split(['+', '-']).skip(1))
        .find_map(|rest| {
            let number = rest.split('%').next()?;
            number.parse::<f64>().ok()?;
            Some(number.split_once('.').map_or(0, |(_, f)| f.len()))
        })
        .unwrap_or(2)
}

/// The baseline made the best of a section: a summary row whose section's
/// candidates do not beat the baseline printed as the baseline against
/// itself (`+0.00%`; in the Optimized/Baseline layout the baseline's
/// numbers with `(+0.00%)` or "1.00x faster"), as a page does when the
/// option was tried and the baseline stayed.
fn baseline_made_best(page: &str, rng: &mut Rng) -> Option<String> {
    let lines: Vec<&str> = page.split('\n').collect();
    let rows = summary_rows(&lines);
    let header = row_cells(lines[rows.first()?.checked_sub(2)?]);
    let column = |name: &str| header.iter().position(|h| h.to_lowercase().contains(name));
    let title = column("group").unwrap_or(0);
    let decimals = delta_decimals(&lines, &rows);
    let zero = format!("+{:.decimals$}%", 0.0);
    let winners = rows_the_baseline_wins(page);
    let rewritten: Vec<(usize, String)> = rows
        .iter()
        .filter_map(|&i| {
            let mut cells = row_cells(lines[i]);
            if !winners.contains(cells.get(title)?) {
                return None;
            }
            if let Some(c) = column("improvement") {
                *cells.get_mut(c)? = green(&zero);
            } else {
                let (o, b) = (column("optimized")?, column("baseline")?);
                let mut shown = cells.get(b)?.clone();
                match column("comparison") {
                    Some(c) => *cells.get_mut(c)? = green("(1.00x faster)"),
                    None => {
                        let first = shown.find("<br>").unwrap_or(shown.len());
                        shown.insert_str(first, &format!(" {}", green(&format!("({zero})"))));
                    }
                }
                *cells.get_mut(o)? = shown;
            }
            let line = format!("| {} |", cells.join(" | "));
            (line != lines[i]).then_some((i, line))
        })
        .collect();
    let (i, line) = pick(&rewritten, rng)?;
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    out[*i] = line.clone();
    Some(out.join("\n"))
}

/// The numbers of a text outside its backquoted names: (start, end) of each.
fn numbers_outside_names(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut quoted = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'`' {
            quoted = !quoted;
        }
        let starts = c.is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric());
        if quoted || !starts {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < bytes.len()
            && (bytes[end].is_ascii_digit()
                || ((bytes[end] == b'.' || bytes[end] == b',')
                    && bytes.get(end + 1).is_some_and(u8::is_ascii_digit)))
        {
            end += 1;
        }
        out.push((i, end));
        i = end;
    }
    out
}

/// A "Summary:" sentence rewritten to compare the section's other pair
/// (its two configurations the other way round: "`SGLang` Total TPS =
/// 4995.66, `vLLM` Total TPS = 9632.01. `SGLang` is slower by 4,636.35
/// tok/s (48.1%); …"), each share of the second recomputed from the
/// numbers (the blocks' own, as printed) and rounded as the page rounded it.
fn sentence_for_another_pair(page: &str, rng: &mut Rng) -> Option<String> {
    replace_a_line(page, rng, |l| {
        let sentence = l.strip_prefix("- Summary: ")?;
        let names: Vec<&str> = sentence.split('`').skip(1).step_by(2).collect();
        let (a, b) = (*names.first()?, *names.get(1)?);
        if names.iter().any(|n| *n != a && *n != b) || a == b {
            return None;
        }
        let slots = numbers_outside_names(sentence);
        // Each compared metric prints four numbers: the two, their
        // difference, and its share of the second (%) or their ratio.
        if slots.is_empty() || !slots.len().is_multiple_of(4) {
            return None;
        }
        let text = |(s, e): (usize, usize)| &sentence[s..e];
        let value = |slot| text(slot).replace(',', "").parse::<f64>().ok();
        let mut replacement: Vec<String> = slots.iter().map(|&s| text(s).to_owned()).collect();
        for group in (0..slots.len()).step_by(4) {
            let (x, y) = (value(slots[group])?, value(slots[group + 1])?);
            replacement.swap(group, group + 1);
            let share = slots[group + 3];
            if sentence[share.1..].starts_with('%') {
                let decimals = text(share).split_once('.').map_or(0, |(_, f)| f.len());
                replacement[group + 3] = format!("{:.decimals$}", (x - y).abs() / x * 100.0);
            }
        }
        let mut numbers_done = String::new();
        let mut at = 0;
        for (slot, new) in slots.iter().zip(&replacement) {
            numbers_done.push_str(&sentence[at..slot.0]);
            numbers_done.push_str(new);
            at = slot.1;
        }
        numbers_done.push_str(&sentence[at..]);
        // The names and the words of direction swap with the order.
        let swapped: String = numbers_done
            .split('`')
            .enumerate()
            .map(|(i, part)| match (i % 2, part) {
                (1, n) if n == a => b.to_owned(),
                (1, n) if n == b => a.to_owned(),
                (1, n) => n.to_owned(),
                (_, words) => words
                    .replace("faster", "\u{0}")
                    .replace("slower", "faster")
                    .replace('\u{0}', "slower")
                    .replace("reduced", "\u{0}")
                    .replace("increased", "reduced")
                    .replace('\u{0}', "increased"),
            })
            .collect::<Vec<_>>()
            .join("`");
        (swapped != sentence).then(|| format!("- Summary: {swapped}"))
    })
}

type Breaking = fn(&str, &mut Rng) -> Option<(String, String)>;

const BREAKING: [(&str, Breaking); 3] = [
    ("conclusion number", break_a_conclusion_number),
    ("sentence number", break_a_sentence_number),
    ("summary number", break_a_summary_number),
];

const PRESERVING: [(&str, Mutation); 9] = [
    ("size spelling", size_spelling),
    ("caption in a fence", caption_in_fence),
    ("GPU count spelling", gpu_count_spelling),
    ("case description", case_description),
    ("configuration renamed", rename_a_configuration),
    ("configurations reordered", reorder_configurations),
    ("profile renamed", rename_the_profile),
    ("baseline made best", baseline_made_best),
    ("sentence for another pair", sentence_for_another_pair),
];

/// Flags of `after` that `before` lacks (multiset difference).
fn new_flags(before: &Reading, after: &Reading) -> Vec<(String, String)> {
    let mut left = before.flags.clone();
    let mut new = Vec::new();
    for f in &after.flags {
        match left.iter().position(|l| l == f) {
            Some(i) => {
                left.remove(i);
            }
            None => new.push(f.clone()),
        }
    }
    new
}

#[test]
fn a_meaning_preserving_mutant_reads_as_its_page() {
    let mut failures = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    for (name, page) in corpus() {
        let original = reading(&page).unwrap();
        for (kind, mutate) in PRESERVING {
            for seed in 0..mutants() {
                let mut rng = Rng::new(seed);
                let Some(mutant) = mutate(&page, &mut rng) else {
                    continue;
                };
                *counts.entry(kind).or_insert(0) += 1;
                match reading(&mutant) {
                    Err(e) => failures.push(format!("{name}, {kind}, seed {seed}: {e}")),
                    Ok(r) => {
                        if r.expectations != original.expectations
                            || r.failures != original.failures
                        {
                            failures
                                .push(format!("{name}, {kind}, seed {seed}: another experiment"));
                        }
                        let new = new_flags(&original, &r);
                        if !new.is_empty() {
                            failures.push(format!("{name}, {kind}, seed {seed}: new ⚠ {new:?}"));
                        }
                    }
                }
            }
        }
    }
    eoutln!("page mutants, meaning-preserving: {counts:?}");
    assert!(counts.len() == PRESERVING.len(), "{counts:?}");
    assert!(failures.is_empty(), "{counts:?}: {failures:#?}");
}

#[test]
fn a_meaning_breaking_mutant_gives_one_new_flag_at_the_changed_number() {
    let mut failures = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    for (name, page) in corpus() {
        let original = reading(&page).unwrap();
        for ((kind, mutate), seed) in BREAKING
            .iter()
            .flat_map(|k| (0..mutants()).map(move |s| (k, s)))
        {
            let mut rng = Rng::new(seed);
            let Some((mutant, changed)) = mutate(&page, &mut rng) else {
                continue;
            };
            *counts.entry(*kind).or_insert(0) += 1;
            let r = match reading(&mutant) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{name}, {kind}, seed {seed}: {e}"));
                    continue;
                }
            };
            let new = new_flags(&original, &r);
            let gone = new_flags(&r, &original);
            // A number already flagged (no block shows it) stays flagged once.
            let ok = match (new.as_slice(), gone.as_slice()) {
                ([(printed, _)], []) => printed.contains(&changed),
                ([(printed, _)], [_]) => printed.contains(&changed),
                _ => false,
            };
            if !ok {
                failures.push(format!(
                    "{name}, {kind}, seed {seed}: changed to {changed}: new {new:?}, gone {gone:?}"
                ));
            }
        }
    }
    eoutln!("page mutants, meaning-breaking: {counts:?}");
    assert!(counts.len() == BREAKING.len(), "{counts:?}");
    assert!(failures.is_empty(), "{counts:?}: {failures:#?}");
}
