//! What a published page printed, read from its text: numbers with their
//! precision (`4,636.35`, `3019.19x2`, `1.90s/req`), deltas (`+47.1%`,
//! `-0.0%`, `+31.6%/GPU`), ratios (`1.23x faster`) and the notes beside them
//! (`Success rate: 51.6%, optimization skipped`). Kept as printed, so a
//! report can print them again and a check knows each one's rounding. (pure)

/// A number as printed: its value, how many decimals, whether the page
/// grouped its thousands (`4,636.35`), and whether a `+` was written.
#[derive(Debug, Clone, PartialEq)]
pub struct PrintedNumber {
    pub value: f64,
    pub decimals: usize,
    pub thousands: bool,
    pub plus: bool,
}

impl PrintedNumber {
    /// Half a unit of the last printed digit: how far the true value may lie.
    pub fn half_unit(&self) -> f64 {
        0.5 * 10f64.powi(-(self.decimals as i32))
    }

    /// `value` printed as this number is: its decimals, its grouping, and a
    /// sign where this one has `+` (a negative value always has its `-`,
    /// even when it rounds to zero: `-0.0`, as the pages print it).
    pub fn format(&self, value: f64) -> String {
        let text = if self.plus {
            format!("{value:+.*}", self.decimals)
        } else {
            format!("{value:.*}", self.decimals)
        };
        if !self.thousands {
            return text;
        }
        let (sign, rest) = text.split_at(text.find(|c: char| c.is_ascii_digit()).unwrap_or(0));
        let (int, frac) = rest.split_at(rest.find('.').unwrap_or(rest.len()));
        let mut grouped = String::new();
        for (i, c) in int.chars().enumerate() {
            if i > 0 && (int.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        format!("{sign}{grouped}{frac}")
    }

    /// Reads `1234.5`, `4,636.35`, `+9.75`, `-0.0`.
    pub fn parse(text: &str) -> Option<Self> {
        let (sign, digits) = match text.as_bytes().first()? {
            b'+' => ("+", &text[1..]),
            b'-' => ("-", &text[1..]),
            _ => ("", text),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let thousands = int.contains(',');
        let groups_ok = !thousands || {
            let mut groups = int.split(',');
            let first = groups.next().unwrap_or("");
            (1..=3).contains(&first.len()) && groups.all(|g| g.len() == 3)
        };
        let plain: String = int.chars().filter(|c| *c != ',').collect();
        let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !groups_ok || !all_digits(&plain) || (digits.contains('.') && !all_digits(frac)) {
            return None;
        }
        let value: f64 = format!("{sign}{plain}.{frac}0").parse().ok()?;
        Some(Self {
            value,
            decimals: frac.len(),
            thousands,
            plus: sign == "+",
        })
    }
}

/// A printed quantity.
#[derive(Debug, Clone, PartialEq)]
pub enum Quantity {
    /// `5770.24`, `3019.19x2` (one instance's number, times the replicas),
    /// `1.90s/req`, `2.62s`, `4,636.35 tok/s`.
    Number {
        number: PrintedNumber,
        replicas: Option<u32>,
        unit: String,
    },
    /// `+47.1%`, `-0.0%`, `+31.6%/GPU` (the gain in throughput per GPU).
    Delta { pct: PrintedNumber, per_gpu: bool },
    /// `1.23x faster`, `1.03x slower`.
    Ratio { ratio: PrintedNumber, slower: bool },
}

impl Quantity {
    /// Reads one printed quantity; `None` when the text is not one.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if let Some((num, rest)) = split_number(text) {
            let number = PrintedNumber::parse(num)?;
            if let Some(rest) = rest.strip_prefix('%') {
                return match rest {
                    "" => Some(Self::Delta {
                        pct: number,
                        per_gpu: false,
                    }),
                    "/GPU" => Some(Self::Delta {
                        pct: number,
                        per_gpu: true,
                    }),
                    _ => None,
                };
            }
            match rest.trim() {
                "x faster" if !number.plus => {
                    return Some(Self::Ratio {
                        ratio: number,
                        slower: false,
                    });
                }
                "x slower" if !number.plus => {
                    return Some(Self::Ratio {
                        ratio: number,
                        slower: true,
                    });
                }
                _ => {}
            }
            let (replicas, unit) = match rest.strip_prefix('x') {
                Some(r) => {
                    let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
                    let n: u32 = r[..end].parse().ok().filter(|n| *n > 1)?;
                    (Some(n), &r[end..])
                }
                None => (None, rest),
            };
            let unit_ok = unit
                .trim_start()
                .chars()
                .all(|c| c.is_ascii_alphabetic() || c == '/');
            return unit_ok.then(|| Self::Number {
                number,
                replicas,
                unit: unit.trim_start().to_owned(),
            });
        }
        None
    }
}

/// `("5770.24", "x2")` of `5770.24x2`: the leading number and what follows.
fn split_number(text: &str) -> Option<(&str, &str)> {
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit() || c == '.' || c == ',' || (i == 0 && (c == '+' || c == '-')))
        })
        .map_or(text.len(), |(i, _)| i);
    (end > 0).then(|| text.split_at(end))
}

/// The note a page printed in parentheses after a number: a delta or ratio,
/// possibly followed by why the option was skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct PrintedNote {
    /// The note as printed, without its parentheses.
    pub text: String,
    /// The delta or ratio it starts with (`+7.60%`, `1.23x faster`).
    pub quantity: Option<Quantity>,
    /// `Success rate: 51.6%`: the share of requests that succeeded.
    pub success_pct: Option<PrintedNumber>,
    /// `lower than previous +9.75%`: the better earlier gain it fell short of.
    pub lower_than: Option<PrintedNumber>,
    /// It says the option was skipped (`optimization skipped`).
    pub skipped: bool,
}

impl PrintedNote {
    pub fn parse(text: &str) -> Self {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        // A thousands separator is not a clause separator: take the longest
        // leading run of parts that reads as one quantity.
        let mut quantity = None;
        let mut used = 0;
        for n in (1..=parts.len()).rev() {
            if let Some(q) = Quantity::parse(&parts[..n].join(",")) {
                quantity = Some(q);
                used = n;
                break;
            }
        }
        let rest = &parts[used..];
        let success_pct = rest.iter().find_map(|p| {
            let pct = p.strip_prefix("Success rate:")?.trim().strip_suffix('%')?;
            PrintedNumber::parse(pct)
        });
        let lower_than = rest.iter().find_map(|p| {
            let pct = p.strip_prefix("lower than previous")?.trim();
            PrintedNumber::parse(pct.strip_suffix('%')?)
        });
        Self {
            text: text.to_owned(),
            quantity,
            success_pct,
            lower_than,
            skipped: rest.iter().any(|p| p.contains("skipped")),
        }
    }
}

/// One line of a printed table cell (cells break lines with `<br>`):
/// `Total TPS: 5770.24 (+47.1%)`, `Mean latency: 1.90s/req (1.23x faster)`,
/// `+47.1%`, `-`, `2.62s`, `(1.03x slower)`, or text (`ShareGPT 8RPS (r=8)`).
#[derive(Debug, Clone, PartialEq)]
pub struct PrintedLine {
    /// The line as written.
    pub text: String,
    /// `Total TPS`, `Mean TPOT(ms)`, `Mean latency`.
    pub label: Option<String>,
    pub quantity: Option<Quantity>,
    pub note: Option<PrintedNote>,
}

impl PrintedLine {
    /// Reads a line; one that is no quantity keeps only its text.
    pub fn parse(text: &str) -> Self {
        let text = text.trim();
        let text_only = || Self {
            text: text.to_owned(),
            label: None,
            quantity: None,
            note: None,
        };
        let (label, body) = match text.split_once(": ") {
            Some((l, b)) if !l.contains('(') || l.ends_with(')') => (Some(l.trim()), b.trim()),
            _ => (None, text),
        };
        let (value, note) = match body.find('(') {
            Some(i) if body.ends_with(')') => (
                body[..i].trim(),
                Some(PrintedNote::parse(&body[i + 1..body.len() - 1])),
            ),
            _ => (body, None),
        };
        let quantity = if value.is_empty() {
            None
        } else {
            match Quantity::parse(value) {
                Some(q) => Some(q),
                None => return text_only(),
            }
        };
        if quantity.is_none() && note.as_ref().is_none_or(|n| n.quantity.is_none()) {
            return text_only();
        }
        Self {
            text: text.to_owned(),
            label: label.map(str::to_owned),
            quantity,
            note,
        }
    }

    /// A line that is only `-`: nothing to show (below a threshold).
    pub fn is_dash(&self) -> bool {
        self.text == "-"
    }

    /// The line's delta or ratio: its own quantity, else its note's.
    pub fn change(&self) -> Option<&Quantity> {
        match &self.quantity {
            Some(q @ (Quantity::Delta { .. } | Quantity::Ratio { .. })) => Some(q),
            _ => self.note.as_ref()?.quantity.as_ref(),
        }
    }

    /// The line's number (not a delta or ratio).
    pub fn number(&self) -> Option<(&PrintedNumber, Option<u32>, &str)> {
        match &self.quantity {
            Some(Quantity::Number {
                number,
                replicas,
                unit,
            }) => Some((number, *replicas, unit)),
            _ => None,
        }
    }
}

/// What a labelled line of a conclusion or summary cell is a number of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellMetric {
    /// `Total TPS`: total token throughput (of all replicas, `x<n>`).
    TotalTps,
    /// `Mean TPOT(ms)`.
    MeanTpot,
    /// `Mean latency` (`s/req`): mean end-to-end latency per request.
    MeanLatency,
}

impl CellMetric {
    pub const LABELS: &[&str] = &["Total TPS", "Mean TPOT(ms)", "Mean latency"];

    pub fn from_label(label: &str) -> Option<Self> {
        match label {
            "Total TPS" => Some(Self::TotalTps),
            "Mean TPOT(ms)" => Some(Self::MeanTpot),
            "Mean latency" => Some(Self::MeanLatency),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        Self::LABELS[self as usize]
    }
}

/// A cell: its lines, as the page broke them with `<br>`.
pub type PrintedCell = Vec<PrintedLine>;

#[cfg(test)]
mod tests {
    use super::*;

    fn n(text: &str) -> PrintedNumber {
        PrintedNumber::parse(text).unwrap()
    }

    #[test]
    fn a_number_keeps_its_precision_and_grouping() {
        assert_eq!(n("4,636.35").value, 4636.35);
        assert!(n("4,636.35").thousands);
        assert_eq!(n("7474.00").decimals, 2);
        assert_eq!(n("-0.0").value, 0.0);
        assert!(n("-0.0").value.is_sign_negative());
        assert!(n("+9.75").plus);
        assert_eq!(n("1000").decimals, 0);
        assert_eq!(n("0.005").half_unit(), 0.0005);
        for bad in ["", "+", "1.", "4,63.35", "12,3456", "1e5", ".5", "1..2"] {
            assert_eq!(PrintedNumber::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_value_prints_as_the_page_printed_its_number() {
        assert_eq!(n("4,636.35").format(4636.349), "4,636.35");
        assert_eq!(n("4,636.35").format(1234567.0), "1,234,567.00");
        assert_eq!(n("999.00").format(999.0), "999.00");
        assert_eq!(n("+47.1").format(-0.04), "-0.0");
        assert_eq!(n("+47.1").format(0.0), "+0.0");
        assert_eq!(n("+9.75").format(9.7549), "+9.75");
        assert_eq!(n("-1,000.5").format(-1234.56), "-1,234.6");
        assert_eq!(n("12").format(11.6), "12");
    }

    #[test]
    fn quantities_read_as_the_pages_print_them() {
        assert!(matches!(
            Quantity::parse("3019.19x2"),
            Some(Quantity::Number { replicas: Some(2), ref unit, .. }) if unit.is_empty()
        ));
        assert!(matches!(
            Quantity::parse("1.90s/req"),
            Some(Quantity::Number { replicas: None, ref unit, .. }) if unit == "s/req"
        ));
        assert!(matches!(
            Quantity::parse("+31.6%/GPU"),
            Some(Quantity::Delta { per_gpu: true, .. })
        ));
        assert!(matches!(
            Quantity::parse("-0.0%"),
            Some(Quantity::Delta { per_gpu: false, ref pct }) if pct.value.is_sign_negative()
        ));
        assert!(matches!(
            Quantity::parse("1.03x slower"),
            Some(Quantity::Ratio { slower: true, .. })
        ));
        assert_eq!(Quantity::parse("ShareGPT"), None);
        assert_eq!(Quantity::parse("3019.19x1"), None);
    }

    #[test]
    fn a_cell_line_splits_into_label_number_and_note() {
        let line = PrintedLine::parse("Total TPS: 3019.19x2 (+59.2%)");
        assert_eq!(line.label.as_deref(), Some("Total TPS"));
        assert_eq!(
            line.number().map(|(n, r, _)| (n.value, r)),
            Some((3019.19, Some(2)))
        );
        assert!(matches!(line.change(), Some(Quantity::Delta { .. })));

        let line = PrintedLine::parse("Mean TPOT(ms): 24.85");
        assert_eq!(line.label.as_deref(), Some("Mean TPOT(ms)"));

        let line = PrintedLine::parse(
            "Total TPS: 10363.77 (+7.60%,lower than previous +9.75%, optimization skipped in final command)",
        );
        let note = line.note.unwrap();
        assert_eq!(note.lower_than.map(|n| n.value), Some(9.75));
        assert!(note.skipped);

        let line =
            PrintedLine::parse("Total TPS: 15514.15 (Success rate: 51.6%, optimization skipped)");
        let note = line.note.unwrap();
        assert_eq!(note.quantity, None);
        assert_eq!(note.success_pct.map(|n| n.value), Some(51.6));

        assert!(PrintedLine::parse("(1.00x faster)").change().is_some());
        assert!(PrintedLine::parse("-").is_dash());
        let text = PrintedLine::parse("ShareGPT 8RPS (r=8)");
        assert_eq!((text.quantity, text.note), (None, None));
    }
}
