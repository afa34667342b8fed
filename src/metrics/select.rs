//! Exact order statistics of values that are read again rather than copied:
//! the pooled gaps of a benchmark are millions, and sorting a copy of them
//! took more memory than the whole load. A radix select reads the values
//! once per 16-bit digit (at most four times) and keeps one histogram per
//! rank asked.

const DIGIT_BITS: u32 = 16;
const BINS: usize = 1 << DIGIT_BITS;

/// The `ranks[i]`-th smallest (0-based) of the values `values()` yields, for
/// each `i`; every rank must be below the number of values.
pub fn order_statistics<I: Iterator<Item = u64>>(
    values: impl Fn() -> I,
    ranks: &[usize],
) -> Vec<u64> {
    let max = values().max().unwrap_or(0);
    let top_digit = (u64::BITS - max.leading_zeros())
        .div_ceil(DIGIT_BITS)
        .max(1);
    // Per rank: the digits fixed so far, and the rank among the values that share them.
    let mut prefix = vec![0_u64; ranks.len()];
    let mut rank: Vec<u64> = ranks.iter().map(|&r| r as u64).collect();
    let mut histograms = vec![vec![0_u64; BINS]; ranks.len()];
    for digit in (0..top_digit).rev() {
        let shift = digit * DIGIT_BITS;
        // The bits above this digit, fixed for every rank.
        let fixed = match shift + DIGIT_BITS {
            64 => 0,
            bits => u64::MAX << bits,
        };
        for histogram in &mut histograms {
            histogram.fill(0);
        }
        for v in values() {
            let bin = ((v >> shift) as usize) & (BINS - 1);
            for (histogram, prefix) in histograms.iter_mut().zip(&prefix) {
                if v & fixed == *prefix {
                    histogram[bin] += 1;
                }
            }
        }
        for ((histogram, prefix), rank) in histograms.iter().zip(&mut prefix).zip(&mut rank) {
            let mut below = 0;
            let bin = histogram
                .iter()
                .position(|&count| {
                    below += count;
                    below > *rank
                })
                .expect("every rank is below the number of values");
            *rank -= below - histogram[bin];
            *prefix |= (bin as u64) << shift;
        }
    }
    prefix
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_is_the_sorted_value_at_that_place() {
        let mut rng = crate::rng::Rng::new(7);
        // Wide and narrow spreads, duplicates, and values past 2^48.
        let sets: Vec<Vec<u64>> = vec![
            (0..5000).map(|_| rng.range(0, 1_000_000_000)).collect(),
            (0..5000).map(|_| 20_000_000 + rng.range(0, 300)).collect(),
            (0..300).map(|i| i % 3).collect(),
            vec![0; 10],
            vec![u64::MAX, 1 << 50, 3, 1 << 50],
            vec![42],
        ];
        for values in sets {
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let ranks: Vec<usize> = [0, 1, sorted.len() / 2, sorted.len() * 99 / 100]
                .into_iter()
                .chain([sorted.len() - 1])
                .filter(|&r| r < sorted.len())
                .collect();
            let got = order_statistics(|| values.iter().copied(), &ranks);
            let want: Vec<u64> = ranks.iter().map(|&r| sorted[r]).collect();
            assert_eq!(got, want);
        }
    }
}
