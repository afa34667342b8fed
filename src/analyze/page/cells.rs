//! One printed line of a table cell, reproduced: its number from the page's
//! result block, its delta or ratio checked against the numbers it compares.
//! (pure)

use super::PageFinding;
use super::interval::{Consistency, Interval, check_delta, check_ratio};
use crate::analyze::{RunRecord, mean_latency_ms};
use crate::spec::{CellMetric, PrintedLine, PrintedNumber, Quantity, Spec};

/// A step on a workload, whose numbers are its result block's.
pub(super) struct Side<'a> {
    pub spec: &'a Spec,
    pub records: &'a [RunRecord],
    pub step: String,
    pub workload: String,
}

impl Side<'_> {
    fn record(&self) -> Option<&RunRecord> {
        self.records
            .iter()
            .find(|r| r.step == self.step && r.workload == self.workload)
    }

    /// The block's number for `metric` (latency in seconds).
    pub fn value(&self, metric: CellMetric) -> Option<f64> {
        let set = self.spec.harness.kind.metric_set();
        let metrics = &self.record()?.metrics;
        match metric {
            CellMetric::TotalTps => metrics.get(set.tps()).copied(),
            CellMetric::MeanTpot => metrics.get(set.tpot()).copied(),
            CellMetric::MeanLatency => mean_latency_ms(metrics, set).map(|ms| ms / 1000.0),
        }
    }

    /// GPUs the whole configuration uses.
    pub fn gpus(&self) -> u32 {
        self.spec
            .step(&self.step)
            .map_or(1, |s| s.gpus * s.replicas)
            .max(1)
    }
}

/// A printed line and the step it is about.
#[derive(Clone, Copy)]
pub(super) struct Cell<'a> {
    pub line: &'a PrintedLine,
    pub side: &'a Side<'a>,
}

/// What a line's number is of: its label's metric, else its unit's
/// (`2.62s` is a mean latency), else total throughput.
pub(super) fn metric_of(line: &PrintedLine) -> Option<CellMetric> {
    match (&line.label, line.number()) {
        (Some(label), _) => CellMetric::from_label(label),
        (None, Some((_, _, "s" | "s/req"))) => Some(CellMetric::MeanLatency),
        (None, Some(_)) => Some(CellMetric::TotalTps),
        (None, None) => None,
    }
}

/// `Label: number[xN][unit]`, the number from the block of `side`, printed
/// as the page printed it; a number no block shows, or another than the
/// block's, is kept with a mark and a finding. `None` when the line prints
/// no number.
pub(super) fn line_number(
    side: &Side,
    line: &PrintedLine,
    place: &str,
    findings: &mut Vec<PageFinding>,
) -> Option<String> {
    let (printed, replicas, unit) = line.number()?;
    let metric = metric_of(line)?;
    let label = line
        .label
        .as_ref()
        .map_or(String::new(), |l| format!("{l}: "));
    let times = replicas.map_or(String::new(), |n| format!("x{n}"));
    let text = |number: String| format!("{label}{number}{times}{unit}");
    let as_printed = printed.format(printed.value);
    let what = format!(
        "{} of `{}` on {}",
        metric.label(),
        side.step,
        side.spec.workload_title(&side.workload)
    );
    match side.value(metric) {
        Some(v) if printed.format(v) == as_printed => Some(text(as_printed)),
        Some(v) => {
            let computed = printed.format(v);
            let how = match metric {
                CellMetric::MeanLatency => {
                    " (mean TTFT + mean TPOT × (generated tokens / requests − 1))"
                }
                _ => "",
            };
            findings.push(PageFinding {
                place: place.to_owned(),
                printed: text(as_printed.clone()),
                computed: text(computed.clone()),
                note: format!(
                    "the page's result block gives {what} as {computed}{how}, where this cell prints {as_printed}"
                ),
            });
            Some(format!(
                "{} ⚠ page: {as_printed}{times}{unit}",
                text(computed)
            ))
        }
        None => {
            findings.push(PageFinding {
                place: place.to_owned(),
                printed: text(as_printed.clone()),
                computed: "-".to_owned(),
                note: format!("no result block of the page shows {what}"),
            });
            Some(format!("{} ⚠ no block", text(as_printed)))
        }
    }
}

/// What a line's printed number stands for: times its replicas, and per GPU
/// when asked.
fn input(cell: Cell, per_gpu: bool) -> Option<Interval> {
    let (number, replicas, _) = cell.line.number()?;
    let all = Interval::of(number).scale(f64::from(replicas.unwrap_or(1)));
    Some(if per_gpu {
        all.scale(1.0 / f64::from(cell.side.gpus()))
    } else {
        all
    })
}

/// What a line's block gives, at the line's rounding: where the line's
/// number is another than its block's, the change is checked against this.
fn of_block(cell: Cell, per_gpu: bool) -> Option<Interval> {
    let (number, replicas, _) = cell.line.number()?;
    if replicas.is_some() {
        return None;
    }
    let value = cell.side.value(metric_of(cell.line)?)?;
    let at_rounding = PrintedNumber { value, ..*number };
    input_of(&at_rounding, per_gpu, cell)
}

fn input_of(number: &PrintedNumber, per_gpu: bool, cell: Cell) -> Option<Interval> {
    let all = Interval::of(number);
    Some(if per_gpu {
        all.scale(1.0 / f64::from(cell.side.gpus()))
    } else {
        all
    })
}

/// A printed delta or ratio of `new` against `base`, checked against their
/// printed numbers: printed again when they give it within their rounding,
/// else what they give, marked, with a finding. A delta compares per GPU where
/// it prints `/GPU` or where its row declares it (`per_gpu`).
pub(super) fn reproduce_change(
    base: Cell,
    new: Cell,
    change: &Quantity,
    per_gpu: bool,
    place: &str,
    findings: &mut Vec<PageFinding>,
) -> String {
    let as_printed = change_text(change, None);
    let (per_gpu, check): (bool, &dyn Fn(Interval, Interval) -> Consistency) = match change {
        Quantity::Delta { pct, per_gpu: p } => (*p || per_gpu, &|b, n| check_delta(b, n, pct)),
        Quantity::Ratio { ratio, slower } => (false, &|b, n| check_ratio(b, n, ratio, *slower)),
        Quantity::Number { .. } => return as_printed,
    };
    let (Some(b), Some(n)) = (input(base, per_gpu), input(new, per_gpu)) else {
        return as_printed;
    };
    let consistency = check(b, n);
    if consistency.consistent {
        return as_printed;
    }
    // A printed number that is not its block's is flagged where it is
    // printed; a change its blocks give is then no second misprint.
    if let (Some(b), Some(n)) = (of_block(base, per_gpu), of_block(new, per_gpu))
        && check(b, n).consistent
    {
        return as_printed;
    }
    let mid = consistency.given.mid();
    let computed = change_text(change, Some(mid));
    let number = |c: Cell| {
        c.line.number().map_or(String::new(), |(n, r, u)| {
            let times = r.map_or(String::new(), |r| format!("x{r}"));
            format!("{}{times}{u}", n.format(n.value))
        })
    };
    let printed_number = match change {
        Quantity::Delta { pct, .. } | Quantity::Ratio { ratio: pct, .. } => pct,
        Quantity::Number { number, .. } => number,
    };
    let finer = printed_number.decimals + 2;
    let unit = if matches!(change, Quantity::Delta { .. }) {
        "%"
    } else {
        "x"
    };
    let twice = rounded_twice(mid, printed_number).then(|| {
        let once = printed_number.decimals + 1;
        let d = printed_number.decimals;
        format!(
            "; rounded first to {once} decimals ({mid:.once$}), then to {d}, it gives {as_printed}: the page seems to have rounded twice"
        )
    });
    let per = if per_gpu { " per GPU" } else { "" };
    findings.push(PageFinding {
        place: place.to_owned(),
        printed: as_printed.clone(),
        computed: computed.clone(),
        note: format!(
            "the page prints {as_printed}; its numbers {} and {}{per} give {mid:.finer$}{unit} ({:.finer$} to {:.finer$} within their rounding){}",
            number(base),
            number(new),
            consistency.given.lo,
            consistency.given.hi,
            twice.unwrap_or_default(),
        ),
    });
    format!("{computed} ⚠ page: {as_printed}")
}

/// `+47.1%`, `+31.6%/GPU`, `1.23x faster`: the printed change, or `value`
/// in its format.
pub(super) fn change_text(change: &Quantity, value: Option<f64>) -> String {
    match change {
        Quantity::Delta { pct, per_gpu } => {
            let gpu = if *per_gpu { "/GPU" } else { "" };
            let signed = PrintedNumber {
                plus: true,
                ..pct.clone()
            };
            format!("{}%{gpu}", signed.format(value.unwrap_or(pct.value)))
        }
        Quantity::Ratio { ratio, slower } => {
            let word = if *slower { "slower" } else { "faster" };
            format!("{}x {word}", ratio.format(value.unwrap_or(ratio.value)))
        }
        Quantity::Number { number, .. } => number.format(value.unwrap_or(number.value)),
    }
}

fn round_to(v: f64, decimals: usize) -> f64 {
    format!("{v:.decimals$}").parse().unwrap_or(v)
}

/// Whether `v`, rounded one digit finer first, then to the printed digits,
/// gives the printed value (a page that rounded a rounded number).
fn rounded_twice(v: f64, printed: &PrintedNumber) -> bool {
    let once = round_to(v, printed.decimals + 1);
    printed.format(once) == printed.format(printed.value)
        && printed.format(v) != printed.format(printed.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(text: &str) -> Quantity {
        Quantity::parse(text).unwrap()
    }

    #[test]
    fn a_computed_change_prints_in_the_format_of_the_printed_one() {
        // gpt-oss-20b-h100, Very Long Prompt: 29730.30 → 29718.21 is −0.04%.
        let pct = (29718.21 / 29730.30 - 1.0) * 100.0;
        assert_eq!(change_text(&change("-0.0%"), Some(pct)), "-0.0%");
        assert_eq!(change_text(&change("+47.1%"), Some(47.08)), "+47.1%");
        assert_eq!(change_text(&change("+9.75%"), Some(9.7549)), "+9.75%");
        assert_eq!(
            change_text(&change("+31.6%/GPU"), Some(31.59)),
            "+31.6%/GPU"
        );
        assert_eq!(
            change_text(&change("1.23x faster"), Some(2.33 / 1.90)),
            "1.23x faster"
        );
        assert_eq!(change_text(&change("1.03x slower"), None), "1.03x slower");
    }

    #[test]
    fn a_value_rounded_twice_is_recognized() {
        // qwen3-8b-910b, Long Prompt: 45.3486% → 45.35% → 45.4%.
        assert!(rounded_twice(
            45.3486,
            &PrintedNumber::parse("+45.4").unwrap()
        ));
        assert!(!rounded_twice(
            45.3486,
            &PrintedNumber::parse("+45.3").unwrap()
        ));
        assert!(!rounded_twice(
            -12.127,
            &PrintedNumber::parse("-13.8").unwrap()
        ));
    }
}
