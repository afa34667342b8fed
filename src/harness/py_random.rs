//! Python's `random` module as vLLM's datasets use it: MT19937 seeded by
//! `random.seed(int)`, `shuffle` and `choices`, so that a dataset's prompts
//! are picked in the order vLLM picks them.                            (pure)

const N: usize = 624;
const M: usize = 397;

pub struct PyRandom {
    state: [u32; N],
    index: usize,
}

impl PyRandom {
    /// `random.seed(seed)` for a non-negative int: `init_by_array` over its
    /// 32-bit words, least significant first (one word 0 for 0).
    pub fn new(seed: u64) -> Self {
        let mut key = vec![seed as u32];
        if seed >> 32 != 0 {
            key.push((seed >> 32) as u32);
        }
        let mut r = Self {
            state: [0; N],
            index: N,
        };
        r.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = r.state[i - 1] ^ (r.state[i - 1] >> 30);
            r.state[i] = (r.state[i] ^ prev.wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                r.state[0] = r.state[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = r.state[i - 1] ^ (r.state[i - 1] >> 30);
            r.state[i] = (r.state[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                r.state[0] = r.state[N - 1];
                i = 1;
            }
        }
        r.state[0] = 0x8000_0000;
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.state[0] = s;
        for i in 1..N {
            let prev = self.state[i - 1] ^ (self.state[i - 1] >> 30);
            self.state[i] = 1_812_433_253u32.wrapping_mul(prev).wrapping_add(i as u32);
        }
        self.index = N;
    }

    fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            for k in 0..N {
                let y = (self.state[k] & 0x8000_0000) | (self.state[(k + 1) % N] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                self.state[k] = self.state[(k + M) % N] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random.random()`: 53 random bits.
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }

    /// `_randbelow(n)` for `0 < n < 2^32`: `getrandbits(n.bit_length())` until below n.
    fn below(&mut self, n: usize) -> usize {
        let bits = usize::BITS - n.leading_zeros();
        loop {
            let r = (self.next_u32() >> (32 - bits)) as usize;
            if r < n {
                return r;
            }
        }
    }

    /// `random.shuffle(items)`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }

    /// The indices `random.choices(population, k=k)` picks from `n` items.
    pub fn choices(&mut self, n: usize, k: usize) -> Vec<usize> {
        (0..k)
            .map(|_| (self.random() * n as f64).floor() as usize)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Printed by CPython 3: `random.seed(0); random.shuffle(l)`, and
    // `random.seed(0); random.choices(range(5), k=6)`.
    #[test]
    fn draws_as_cpython_draws() {
        let mut eight: Vec<usize> = (0..8).collect();
        PyRandom::new(0).shuffle(&mut eight);
        assert_eq!(eight, [4, 1, 5, 2, 0, 3, 7, 6]);
        let mut twenty: Vec<usize> = (0..20).collect();
        PyRandom::new(0).shuffle(&mut twenty);
        assert_eq!(
            twenty,
            [
                10, 18, 16, 14, 0, 17, 11, 2, 3, 9, 5, 7, 4, 19, 6, 15, 8, 1, 13, 12
            ]
        );
        assert_eq!(PyRandom::new(0).choices(5, 6), [4, 3, 2, 1, 2, 2]);
    }
}
