//! Interval arithmetic over printed numbers: what a page's printed inputs can
//! give once their rounding is taken into account. A printed value stands for
//! any value within half a unit of its last digit; a printed delta contradicts
//! its inputs only when no value it may stand for is one they can give. (pure)

use crate::spec::PrintedNumber;

/// The closed interval `[lo, hi]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    /// The values a printed number may stand for: ± half a unit of its last digit.
    pub fn of(n: &PrintedNumber) -> Self {
        let h = n.half_unit();
        Self {
            lo: n.value - h,
            hi: n.value + h,
        }
    }

    /// Every value times `k` (> 0): replicas, or 1 / GPUs for a per-GPU number.
    pub fn scale(self, k: f64) -> Self {
        Self {
            lo: self.lo * k,
            hi: self.hi * k,
        }
    }

    /// `self / other`, both positive.
    pub fn over(self, other: Self) -> Self {
        Self {
            lo: self.lo / other.hi,
            hi: self.hi / other.lo,
        }
    }

    /// Whether the two share a value. The bounds are computed in floating
    /// point, so a few ulps of slack keep a value exactly on a rounding
    /// boundary (a delta computed from the inputs and rounded) inside.
    pub fn meets(self, other: Self) -> bool {
        let slack = 1e-9 * (self.lo.abs() + self.hi.abs() + other.lo.abs() + other.hi.abs());
        self.lo <= other.hi + slack && other.lo <= self.hi + slack
    }

    pub fn mid(self) -> f64 {
        (self.lo + self.hi) / 2.0
    }
}

/// The gain in % of `new` over `base` (`(new / base − 1) × 100`), over
/// every value the two may stand for.
pub fn delta_pct(base: Interval, new: Interval) -> Interval {
    let r = new.over(base);
    Interval {
        lo: (r.lo - 1.0) * 100.0,
        hi: (r.hi - 1.0) * 100.0,
    }
}

/// What a printed delta or ratio says, checked against its printed inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Consistency {
    /// What the printed inputs give (their interval).
    pub given: Interval,
    /// Whether the printed value, within its own rounding, is one of them.
    pub consistent: bool,
}

/// A printed delta % against what its inputs give.
pub fn check_delta(base: Interval, new: Interval, printed: &PrintedNumber) -> Consistency {
    let given = delta_pct(base, new);
    Consistency {
        given,
        consistent: given.meets(Interval::of(printed)),
    }
}

/// A printed speed ratio (`1.23x faster`: base / new; `1.03x slower`:
/// new / base, for latencies) against what its inputs give.
pub fn check_ratio(
    base: Interval,
    new: Interval,
    printed: &PrintedNumber,
    slower: bool,
) -> Consistency {
    let given = if slower {
        new.over(base)
    } else {
        base.over(new)
    };
    Consistency {
        given,
        consistent: given.meets(Interval::of(printed)),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn n(text: &str) -> PrintedNumber {
        PrintedNumber::parse(text).unwrap()
    }

    fn delta(base: &str, new: &str, printed: &str) -> Consistency {
        check_delta(Interval::of(&n(base)), Interval::of(&n(new)), &n(printed))
    }

    #[test]
    fn the_corpus_deltas_that_its_numbers_do_not_give_are_found() {
        // qwen3-32b-a100, Very Long Prompt: prints -13.8%, its numbers give -12.1%.
        let c = delta("1798.45", "1580.36", "-13.8");
        assert!(!c.consistent);
        assert_eq!(format!("{:.2}", c.given.mid()), "-12.13");
        // gpt-oss-20b-a100, Short Prompt: +4.0% where they give +3.92%.
        let c = delta("24223.22", "25172.82", "+4.0");
        assert!(!c.consistent);
        assert_eq!(format!("{:.2}", c.given.mid()), "3.92");
        // qwen3-8b-910b, Long and Very Long: +45.4% and +171.1% where the
        // inputs give 45.3485..45.3488 and 171.0469..171.0482: outside the
        // printed ±0.05 by a hair (the page rounded twice: 45.349 → 45.35 → 45.4).
        let c = delta("7677.41", "11159.01", "+45.4");
        assert!(!c.consistent);
        assert!(c.given.hi < 45.35 && c.given.hi > 45.348);
        assert!(!delta("2890.64", "7835.01", "+171.1").consistent);
    }

    #[test]
    fn deltas_within_the_rounding_of_their_inputs_are_not_flagged() {
        // qwen3-14b-a100's conclusion, and gpt-oss-20b-h100's signed zero.
        assert!(delta("3922.41", "5770.24", "+47.1").consistent);
        assert!(delta("4430.14", "4413.82", "-0.4").consistent);
        assert!(delta("29730.30", "29718.21", "-0.0").consistent);
        // qwen3-235b-a22b-a100: 3019.19x2 against 3792.50.
        let base = Interval::of(&n("3792.50"));
        assert!(check_delta(base, Interval::of(&n("3019.19")).scale(2.0), &n("+59.2")).consistent);
        // gpt-oss-120b-h100: +31.6%/GPU, TP2 against one GPU.
        let base = Interval::of(&n("6095.37"));
        assert!(check_delta(base, Interval::of(&n("16042.19")).scale(0.5), &n("+31.6")).consistent);
        // qwen3.5-9b-h100-latency, Rate 4: 2.33 s → 1.90 s, 1.23x faster.
        let (b, o) = (Interval::of(&n("2.33")), Interval::of(&n("1.90")));
        assert!(check_ratio(b, o, &n("1.23"), false).consistent);
        assert!(!check_ratio(b, o, &n("1.30"), false).consistent);
        // Prefix Cache: 2.62 s → 2.69 s, 1.03x slower.
        let (b, o) = (Interval::of(&n("2.62")), Interval::of(&n("2.69")));
        assert!(check_ratio(b, o, &n("1.03"), true).consistent);
    }

    /// The slack is 1e-9 of the four bounds' magnitudes (here 2 + 3 + 1 +
    /// 2 = 8, so 8e-9): a gap of 7.5e-9 is bridged, one of 8.5e-9 is not,
    /// from either side. Each bound weighs differently, so a slack that
    /// sums them otherwise (or subtracts, divides, or is negative) is told apart.
    #[test]
    fn the_rounding_slack_bridges_a_gap_of_a_few_ulps_and_no_more() {
        let upper = Interval { lo: 2.0, hi: 3.0 };
        let lower = |gap: f64| Interval {
            lo: 1.0,
            hi: 2.0 - gap,
        };
        for (gap, meets) in [(7.5e-9, true), (8.5e-9, false)] {
            assert_eq!(upper.meets(lower(gap)), meets, "gap {gap}");
            assert_eq!(lower(gap).meets(upper), meets, "gap {gap}, other side");
        }
        // Touching and overlapping meet, apart do not.
        assert!(upper.meets(lower(0.0)));
        assert!(upper.meets(Interval { lo: 2.5, hi: 4.0 }));
        assert!(!upper.meets(Interval { lo: 3.1, hi: 4.0 }));
        assert!(!Interval { lo: 3.1, hi: 4.0 }.meets(upper));
    }

    proptest! {
        /// A delta computed from the printed inputs and rounded to any
        /// precision is never flagged.
        #[test]
        fn a_delta_rounded_from_the_printed_inputs_is_never_flagged(
            base in 1u32..10_000_000, new in 1u32..10_000_000,
            input_decimals in 0usize..3, decimals in 0usize..3,
        ) {
            let scale = 10f64.powi(input_decimals as i32);
            let text = |v: u32| format!("{:.*}", input_decimals, f64::from(v) / scale);
            let (b, o) = (n(&text(base)), n(&text(new)));
            let pct = (o.value / b.value - 1.0) * 100.0;
            let printed = n(&format!("{pct:+.decimals$}"));
            prop_assert!(check_delta(Interval::of(&b), Interval::of(&o), &printed).consistent);
        }

        /// So is a speed ratio.
        #[test]
        fn a_ratio_rounded_from_the_printed_inputs_is_never_flagged(
            base in 1u32..100_000, new in 1u32..100_000, decimals in 1usize..3,
        ) {
            let (b, o) = (n(&format!("{:.2}", f64::from(base) / 100.0)), n(&format!("{:.2}", f64::from(new) / 100.0)));
            let slower = o.value > b.value;
            let ratio = if slower { o.value / b.value } else { b.value / o.value };
            let printed = n(&format!("{ratio:.decimals$}"));
            prop_assert!(check_ratio(Interval::of(&b), Interval::of(&o), &printed, slower).consistent);
        }
    }
}
