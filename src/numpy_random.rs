//! numpy's `np.random.default_rng(seed)` as vLLM's random dataset draws from
//! it: a `SeedSequence` of the seed, the PCG64 bit generator it seeds, and
//! `Generator.integers(low, high, size=n)` (int64, `high` excluded), so that
//! perfpipe draws the numbers vLLM draws, in its order. Written from numpy
//! 2.x's `bit_generator.pyx` (SeedSequence), `pcg64.h` (PCG64, XSL-RR) and
//! `distributions.c` (`random_bounded_uint64_fill`, Lemire's method); pinned
//! by values numpy 2.3.5 gives (the tests).                            (pure)

/// `np.random.default_rng(seed)`: PCG64 seeded through a `SeedSequence`.
#[derive(Debug, Clone)]
pub struct Generator {
    state: u128,
    increment: u128,
    /// PCG64 gives 32-bit draws in halves of a 64-bit one, low half first;
    /// the high half waits here, across calls (numpy's `has_uint32`).
    buffered: Option<u32>,
}

/// PCG's 128-bit LCG multiplier (`PCG_DEFAULT_MULTIPLIER_128`).
const MULTIPLIER: u128 = (2_549_297_995_355_413_924 << 64) + 4_865_540_595_714_422_341;

impl Generator {
    /// `np.random.default_rng(seed)` for a non-negative int seed.
    pub fn default_rng(seed: u64) -> Self {
        let words = seed_sequence_state(seed);
        let initial = (u128::from(words[0]) << 64) | u128::from(words[1]);
        let sequence = (u128::from(words[2]) << 64) | u128::from(words[3]);
        // pcg_setseq_128_srandom_r
        let mut generator = Self {
            state: 0,
            increment: (sequence << 1) | 1,
            buffered: None,
        };
        generator.step();
        generator.state = generator.state.wrapping_add(initial);
        generator.step();
        generator
    }

    fn step(&mut self) {
        self.state = self
            .state
            .wrapping_mul(MULTIPLIER)
            .wrapping_add(self.increment);
    }

    /// The next raw 64-bit draw (`bit_generator.random_raw()`): XSL-RR.
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let folded = ((self.state >> 64) as u64) ^ (self.state as u64);
        folded.rotate_right((self.state >> 122) as u32)
    }

    fn next_u32(&mut self) -> u32 {
        if let Some(high) = self.buffered.take() {
            return high;
        }
        let draw = self.next_u64();
        self.buffered = Some((draw >> 32) as u32);
        draw as u32
    }

    /// `integers(low, high, size=count)`: `count` integers in `low..high`,
    /// drawn as numpy draws them for int64 (`random_bounded_uint64_fill`
    /// without masking): a range of 32 bits or fewer takes 32-bit draws
    /// (two per 64-bit draw), a wider one 64-bit draws, each bounded by
    /// Lemire's multiply-and-reject. `low < high`, as numpy requires.
    pub fn integers(&mut self, low: u64, high: u64, count: usize) -> Vec<u64> {
        assert!(low < high, "numpy refuses integers({low}, {high})");
        let span = high - 1 - low;
        (0..count)
            .map(|_| {
                low + match span {
                    0 => 0,
                    1..0xFFFF_FFFF => u64::from(self.bounded_u32(span as u32)),
                    0xFFFF_FFFF => u64::from(self.next_u32()),
                    u64::MAX => self.next_u64(),
                    _ => self.bounded_u64(span),
                }
            })
            .collect()
    }

    /// `buffered_bounded_lemire_uint32`: uniform in `0..=span`.
    fn bounded_u32(&mut self, span: u32) -> u32 {
        let excluded = span + 1;
        let mut product = u64::from(self.next_u32()) * u64::from(excluded);
        if (product as u32) < excluded {
            let threshold = (u32::MAX - span) % excluded;
            while (product as u32) < threshold {
                product = u64::from(self.next_u32()) * u64::from(excluded);
            }
        }
        (product >> 32) as u32
    }

    /// `bounded_lemire_uint64`: uniform in `0..=span`.
    fn bounded_u64(&mut self, span: u64) -> u64 {
        let excluded = span + 1;
        let mut product = u128::from(self.next_u64()) * u128::from(excluded);
        if (product as u64) < excluded {
            let threshold = (u64::MAX - span) % excluded;
            while (product as u64) < threshold {
                product = u128::from(self.next_u64()) * u128::from(excluded);
            }
        }
        (product >> 64) as u64
    }
}

/// `SeedSequence(seed).generate_state(4, np.uint64)`: the seed's 32-bit
/// words (least significant first; `[0]` for 0) hashed into a pool of four,
/// then drawn out as eight 32-bit words read in pairs, low word first.
fn seed_sequence_state(seed: u64) -> [u64; 4] {
    const POOL: usize = 4;
    const INIT_A: u32 = 0x43b0_d7e5;
    const MULT_A: u32 = 0x931e_8875;
    const INIT_B: u32 = 0x8b51_f9dd;
    const MULT_B: u32 = 0x58f3_8ded;
    const MIX_MULT_L: u32 = 0xca01_f9dd;
    const MIX_MULT_R: u32 = 0x4973_f715;
    const XSHIFT: u32 = 16;

    let mut entropy = vec![seed as u32];
    if seed >> 32 != 0 {
        entropy.push((seed >> 32) as u32);
    }
    let mut hash_const = INIT_A;
    let mut hashmix = |value: u32| {
        let mut value = value ^ hash_const;
        hash_const = hash_const.wrapping_mul(MULT_A);
        value = value.wrapping_mul(hash_const);
        value ^ (value >> XSHIFT)
    };
    let mix = |x: u32, y: u32| {
        let result = MIX_MULT_L
            .wrapping_mul(x)
            .wrapping_sub(MIX_MULT_R.wrapping_mul(y));
        result ^ (result >> XSHIFT)
    };
    let mut pool = [0u32; POOL];
    for (i, word) in pool.iter_mut().enumerate() {
        *word = hashmix(entropy.get(i).copied().unwrap_or(0));
    }
    for source in 0..POOL {
        for target in 0..POOL {
            if source != target {
                pool[target] = mix(pool[target], hashmix(pool[source]));
            }
        }
    }
    // numpy then mixes in the words past the pool's four; a u64 has two.
    let mut hash_const = INIT_B;
    let words: Vec<u32> = pool
        .iter()
        .cycle()
        .take(2 * 4)
        .map(|&word| {
            let mut value = word ^ hash_const;
            hash_const = hash_const.wrapping_mul(MULT_B);
            value = value.wrapping_mul(hash_const);
            value ^ (value >> XSHIFT)
        })
        .collect();
    std::array::from_fn(|i| u64::from(words[2 * i]) | (u64::from(words[2 * i + 1]) << 32))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `np.random.SeedSequence(0).generate_state(4, np.uint64)`
    #[test]
    fn a_seed_sequence_of_zero_is_numpy_s() {
        assert_eq!(
            seed_sequence_state(0),
            [
                15_793_235_383_387_715_774,
                12_390_638_538_380_655_177,
                2_361_836_109_651_742_017,
                3_188_717_715_514_472_916
            ]
        );
    }

    /// `[hex(x) for x in np.random.default_rng(S).bit_generator.random_raw(3)]`
    /// for S = 0, and for S = 2**40 + 5 (a seed of two 32-bit words).
    #[test]
    fn raw_draws_are_numpy_s_pcg64() {
        let mut zero = Generator::default_rng(0);
        assert_eq!(
            [zero.next_u64(), zero.next_u64(), zero.next_u64()],
            [0xa30febcfd9c2825f, 0x4510bdf882d9d721, 0x0a7d3da94ecde8b8]
        );
        let mut wide = Generator::default_rng((1 << 40) + 5);
        assert_eq!(
            [wide.next_u64(), wide.next_u64()],
            [0x01369aef039fedeb, 0x5f61b40473314316]
        );
    }

    /// ```python
    /// g = np.random.default_rng(0)
    /// g.integers(0, 1024, size=5), g.integers(64, 129, size=3),
    /// g.integers(0, 2**40, size=3), g.integers(5, 6, size=2),
    /// g.integers(0, 2**32, size=2), g.integers(0, 7, size=1)
    /// g = np.random.default_rng(42)
    /// g.integers(0, 3, size=8), g.integers(0, 2**63 - 1, size=2)
    /// g = np.random.default_rng(1)
    /// g.integers(0, 3 * 2**30, size=8), g.integers(0, 3 * 2**61, size=8)
    /// ```
    /// Every width numpy tells apart, one after the other: a 32-bit draw's
    /// unused half carries over to the next call, a 64-bit draw leaves it.
    #[test]
    fn integers_are_numpy_s_in_every_width_and_in_sequence() {
        let mut g = Generator::default_rng(0);
        assert_eq!(g.integers(0, 1024, 5), [871, 652, 523, 276, 315]);
        assert_eq!(g.integers(64, 129, 3), [66, 68, 65]);
        assert_eq!(
            g.integers(0, 1 << 40, 3),
            [894_200_084_524, 1_003_585_370_534, 667_003_089_280]
        );
        assert_eq!(g.integers(5, 6, 2), [5, 5]);
        assert_eq!(g.integers(0, 1 << 32, 2), [4_169_308_741, 3_133_163_871]);
        assert_eq!(g.integers(0, 7, 1), [4]);
        let mut g = Generator::default_rng(42);
        assert_eq!(g.integers(0, 3, 8), [0, 2, 1, 1, 1, 2, 0, 2]);
        assert_eq!(
            g.integers(0, (1 << 63) - 1, 2),
            [868_632_717_012_091_125, 8_998_527_916_616_952_261]
        );
        // Ranges where a quarter of the draws are rejected (16 draws: all
        // accepted once in a hundred seeds).
        let mut g = Generator::default_rng(1);
        assert_eq!(
            g.integers(0, 3 << 30, 8),
            [
                1_524_247_487,
                1_648_692_854,
                2_432_564_812,
                3_061_657_868,
                112_267_929,
                464_370_616,
                2_650_887_133,
                3_055_813_762
            ]
        );
        assert_eq!(
            g.integers(0, 3 << 61, 8),
            [
                2_157_103_121_014_000_383,
                5_725_656_719_006_722_285,
                2_830_646_903_919_334_923,
                3_801_830_287_886_695_887,
                190_640_965_834_973_412,
                5_212_448_801_966_043_859,
                3_722_621_990_225_304_253,
                5_453_978_442_191_409_123
            ]
        );
    }
}
