//! A section's "Summary:" sentence, as the newer pages print it, with every
//! number computed again from the page's blocks and printed with the digits
//! the page gave it (the page mixes one and two decimals in one sentence):
//!
//! - throughput: "`vLLM` Total TPS = 9632.01, `SGLang` Total TPS = 4995.66.
//!   `vLLM` is faster by 4,636.35 tok/s (92.8%); Mean TPOT = 25.89 ms vs
//!   180.73 ms, reduced by 154.84 ms (85.67%)."
//! - latency: "`16k` Mean Latency = 2.64s, `32k` Mean Latency = 2.64s. `16k`
//!   is faster by 0.00s (1.00x faster). TTFT = 42.05 ms vs 41.88 ms,
//!   increased by 0.17 ms (1.00x slower); TPOT = ..."
//!
//! The sentence compares the two configurations it names (`first=` and
//! `second=`, which `init` binds to the labels it prints), never the two a
//! ranking would pick. (pure)

use super::PageFinding;
use super::cells::{Cell, Side, change_text, reproduce_change};
use super::interval::{Interval, delta_pct};
use crate::analyze::{ComparisonResult, RunRecord, mean_latency_ms};
use crate::spec::{Comparison, Objective, PrintedLine, PrintedNumber, Spec};

/// The section's own printed delta (`+26.8%/GPU`): its best candidate's
/// throughput against its baseline's, from their blocks, checked against
/// their printed numbers.
pub(super) fn section_delta(
    spec: &Spec,
    records: &[RunRecord],
    decl: &Comparison,
    result: &ComparisonResult,
    findings: &mut Vec<PageFinding>,
) -> Option<String> {
    let change = decl.printed.delta.as_ref()?;
    let best = result.ranking.iter().find(|r| !r.is_baseline)?;
    let line = |step: &str| {
        let s = spec.step(step)?;
        let text = super::summary::block_text(spec, step, &result.workload)?;
        let times = match s.report_factor() {
            1 => String::new(),
            n => format!("x{n}"),
        };
        Some(PrintedLine::parse(&format!("{text}{times}")))
    };
    let side = |step: &str| Side {
        spec,
        records,
        step: step.to_owned(),
        workload: result.workload.clone(),
    };
    let (Some(base), Some(new)) = (line(&decl.baseline), line(&best.step)) else {
        return Some(change_text(change, None));
    };
    let (base_side, new_side) = (side(&decl.baseline), side(&best.step));
    Some(reproduce_change(
        Cell {
            line: &base,
            side: &base_side,
        },
        Cell {
            line: &new,
            side: &new_side,
        },
        change,
        false,
        &format!("{}, delta", decl.title),
        findings,
    ))
}

/// The sentence reproduced: the page's words, the numbers computed.
pub(super) fn reproduce(
    spec: &Spec,
    records: &[RunRecord],
    decl: &Comparison,
    result: &ComparisonResult,
    findings: &mut Vec<PageFinding>,
) -> Option<String> {
    let printed = decl.printed.summary.as_ref()?;
    let place = format!("{}, Summary", decl.title);
    let slots = number_slots(printed);
    let values = values(spec, records, decl, result);
    let Some(values) = values.filter(|v| v.len() == slots.len()) else {
        findings.push(PageFinding {
            place,
            printed: printed.clone(),
            computed: "-".to_owned(),
            note: "the sentence is not one perfpipe can compute again (its numbers or its two configurations' blocks do not match the form \"`A` Total TPS = …, `B` Total TPS = …\" or \"`A` Mean Latency = …s, …\")".to_owned(),
        });
        return Some(printed.clone());
    };
    let mut out = String::new();
    let mut at = 0;
    for (i, (range, number)) in slots.iter().enumerate() {
        out.push_str(&printed[at..range.start]);
        at = range.end;
        let text = &printed[range.clone()];
        let computed = number.format(values[i].value);
        if computed == text || values[i].consistent_with(number, &slots, &values) {
            out.push_str(text);
            continue;
        }
        findings.push(PageFinding {
            place: place.clone(),
            printed: text.to_owned(),
            computed: computed.clone(),
            note: format!(
                "the sentence prints {text} where the page's numbers give {computed} ({})",
                values[i].what
            ),
        });
        out.push_str(&format!("{computed} ⚠ page: {text}"));
    }
    out.push_str(&printed[at..]);
    Some(out)
}

/// A number of the sentence, computed, and how it derives from the others.
struct Value {
    value: f64,
    what: &'static str,
    /// A difference, a share or a ratio of the slots `(a, b)` before it.
    derived: Option<(Derived, usize, usize)>,
}

#[derive(Clone, Copy)]
enum Derived {
    /// |a − b|.
    Difference,
    /// |a − b| / b × 100.
    Share,
    /// max(a, b) / min(a, b).
    Ratio,
}

impl Value {
    /// Whether the printed number, within its rounding, is one the
    /// sentence's inputs give as the page rounds them: the inputs as the
    /// blocks give them, printed in the sentence's digits (so a wrong input
    /// is flagged once, never again in what derives from it).
    fn consistent_with(
        &self,
        printed: &PrintedNumber,
        slots: &[(std::ops::Range<usize>, PrintedNumber)],
        values: &[Value],
    ) -> bool {
        let Some((how, a, b)) = self.derived else {
            return false;
        };
        let rounded = |i: usize| {
            let number = &slots[i].1;
            PrintedNumber::parse(&number.format(values[i].value))
                .map_or_else(|| Interval::of(number), |n| Interval::of(&n))
        };
        let (a, b) = (rounded(a), rounded(b));
        let given = match how {
            // |x − y| over x in a, y in b.
            Derived::Difference => Interval {
                lo: (a.lo - b.hi).max(b.lo - a.hi).max(0.0),
                hi: (a.hi - b.lo).max(b.hi - a.lo),
            },
            Derived::Share => {
                let d = delta_pct(b, a);
                Interval {
                    lo: d.lo.abs().min(d.hi.abs()),
                    hi: d.lo.abs().max(d.hi.abs()),
                }
            }
            Derived::Ratio => {
                let (big, small) = if a.mid() >= b.mid() { (a, b) } else { (b, a) };
                Interval {
                    lo: big.lo / small.hi,
                    hi: big.hi / small.lo,
                }
            }
        };
        given.meets(Interval::of(printed))
    }
}

/// Where each number of the sentence is, outside its backquoted names.
fn number_slots(text: &str) -> Vec<(std::ops::Range<usize>, PrintedNumber)> {
    let mut slots = Vec::new();
    let mut quoted = false;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'`' {
            quoted = !quoted;
            i += 1;
            continue;
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
        if let Some(n) = PrintedNumber::parse(&text[i..end]) {
            slots.push((i..end, n));
        }
        i = end;
    }
    slots
}

/// The two configurations the sentence compares, in its order: those it
/// names (`first=`, `second=`); an experiment that does not say (written by
/// hand) means the section's two best, its candidates or with one
/// candidate, the baseline and it.
fn compared<'a>(decl: &'a Comparison, result: &'a ComparisonResult) -> Option<(&'a str, &'a str)> {
    if let Some((a, b)) = &decl.printed.summary_steps {
        return Some((a, b));
    }
    let steps: Vec<&str> = if decl.candidates.len() >= 2 {
        result
            .ranking
            .iter()
            .filter(|r| !r.is_baseline)
            .map(|r| r.step.as_str())
            .collect()
    } else {
        result.ranking.iter().map(|r| r.step.as_str()).collect()
    };
    Some((steps.first()?, steps.get(1)?))
}

/// The sentence's numbers, in order, from the blocks of its two configurations.
fn values(
    spec: &Spec,
    records: &[RunRecord],
    decl: &Comparison,
    result: &ComparisonResult,
) -> Option<Vec<Value>> {
    let (a, b) = compared(decl, result)?;
    let set = spec.harness.kind.metric_set();
    let metrics = |step: &str| {
        records
            .iter()
            .find(|r| r.step == step && r.workload == result.workload)
            .map(|r| &r.metrics)
    };
    let (ma, mb) = (metrics(a)?, metrics(b)?);
    let pair = |what: &'static str, x: f64, y: f64, share: Derived, base: usize| {
        vec![
            Value {
                value: x,
                what,
                derived: None,
            },
            Value {
                value: y,
                what,
                derived: None,
            },
            Value {
                value: (x - y).abs(),
                what: "the difference",
                derived: Some((Derived::Difference, base, base + 1)),
            },
            Value {
                value: match share {
                    Derived::Share => (x - y).abs() / y * 100.0,
                    _ => x.max(y) / x.min(y),
                },
                what: match share {
                    Derived::Share => "the difference in % of the second",
                    _ => "the ratio",
                },
                derived: Some((share, base, base + 1)),
            },
        ]
    };
    Some(match spec.objective {
        Objective::Throughput => {
            let mut v = pair(
                "Total TPS",
                *ma.get(set.tps())?,
                *mb.get(set.tps())?,
                Derived::Share,
                0,
            );
            v.extend(pair(
                "Mean TPOT",
                *ma.get(set.tpot())?,
                *mb.get(set.tpot())?,
                Derived::Share,
                4,
            ));
            v
        }
        Objective::Latency => {
            let latency = |m| mean_latency_ms(m, set).map(|ms| ms / 1000.0);
            let mut v = pair(
                "Mean Latency",
                latency(ma)?,
                latency(mb)?,
                Derived::Ratio,
                0,
            );
            v.extend(pair(
                "TTFT",
                *ma.get(set.ttft())?,
                *mb.get(set.ttft())?,
                Derived::Ratio,
                4,
            ));
            v.extend(pair(
                "TPOT",
                *ma.get(set.tpot())?,
                *mb.get(set.tpot())?,
                Derived::Ratio,
                8,
            ));
            v
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{SourceFile, parse};

    /// qwen3.5-35b-a3b-h200's engine section, its sentence as `sentence`.
    fn findings(sentence: &str) -> (Vec<PageFinding>, String) {
        let text = format!(
            r#"experiment "e" {{
            hardware "nvidia-h200-sxm-141gb" gpus=1
            model "o/m"
            engine vllm version="0.11.0"
            engine sglang version="0.5.9"
            workload w {{ dataset random input=8 output=8; prompts 1 }}
            step vllm engine=vllm gpus=1 {{ expect w {{ total_token_throughput 9632.01; mean_tpot_ms 25.89; }} }}
            step sglang engine=sglang gpus=1 {{ expect w {{ total_token_throughput 4995.66; mean_tpot_ms 180.73; }} }}
            compare "Engine" baseline=vllm {{
                candidate sglang
                summary "{sentence}"
            }}
        }}"#
        );
        let spec = parse(&SourceFile {
            name: "e.kdl".into(),
            text,
        })
        .unwrap();
        let analysis = crate::analyze::analyze(&spec, crate::analyze::from_expectations(&spec));
        let page = analysis.page.unwrap();
        (page.findings, page.sentences[0].1.clone())
    }

    #[test]
    fn a_sentence_is_computed_again_and_its_wrong_numbers_flagged() {
        let page = "`vLLM` Total TPS = 9632.01, `SGLang` Total TPS = 4995.66. `vLLM` is faster by 4,636.35 tok/s (92.8%); Mean TPOT = 25.89 ms vs 180.73 ms, reduced by 154.84 ms (85.67%).";
        let (found, shown) = findings(page);
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(shown, page);
        let wrong = page
            .replace("(92.8%)", "(93.8%)")
            .replace("154.84", "145.84");
        let (found, shown) = findings(&wrong);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(shown.contains("(92.8 ⚠ page: 93.8%)"), "{shown}");
        assert!(
            shown.contains("reduced by 154.84 ⚠ page: 145.84 ms"),
            "{shown}"
        );
    }

    #[test]
    fn the_numbers_of_a_sentence_are_found_outside_its_names() {
        let s = "`Seqs 256` Mean Latency = 2.64s, `Seqs 128` Mean Latency = 2.66s. `Seqs 256` is faster by 0.02s (1.01x faster). TTFT = 42.97 ms vs 44.11 ms";
        let found: Vec<&str> = number_slots(s).iter().map(|(r, _)| &s[r.clone()]).collect();
        assert_eq!(found, ["2.64", "2.66", "0.02", "1.01", "42.97", "44.11"]);
        let s = "is faster by 4,636.35 tok/s (92.8%); Mean TPOT = 25.89 ms.";
        let found: Vec<&str> = number_slots(s).iter().map(|(r, _)| &s[r.clone()]).collect();
        assert_eq!(found, ["4,636.35", "92.8", "25.89"]);
    }
}
