//! The random numbers of the sweep report's bootstrap: MT19937 seeded and
//! drawn exactly as Python's `random.Random(1).choices` does, so the
//! intervals in reports written before the report moved here (by
//! `sweep-report.py`) come out the same from their raw TSV.

const N: usize = 624;
const M: usize = 397;

pub struct Mt {
    state: [u32; N],
    index: usize,
}

impl Mt {
    /// `random.Random(seed)` for a seed below 2^32 (CPython's
    /// `init_by_array` with the one-word key `[seed]`).
    pub fn new(seed: u32) -> Mt {
        let mut mt = Mt::init_genrand(19_650_218);
        let key = [seed];
        let (mut i, mut j) = (1usize, 0usize);
        let s = &mut mt.state;
        for _ in 0..N.max(key.len()) {
            s[i] = (s[i] ^ (s[i - 1] ^ (s[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                s[0] = s[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            s[i] = (s[i] ^ (s[i - 1] ^ (s[i - 1] >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                s[0] = s[N - 1];
                i = 1;
            }
        }
        s[0] = 0x8000_0000;
        mt
    }

    fn init_genrand(seed: u32) -> Mt {
        let mut state = [0u32; N];
        state[0] = seed;
        for i in 1..N {
            state[i] = 1_812_433_253u32
                .wrapping_mul(state[i - 1] ^ (state[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        Mt { state, index: N }
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

    /// `random()`: a double in [0, 1) with 53 random bits.
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }

    /// `choices(v, k=len(v))`: a resample with replacement.
    pub fn resample(&mut self, v: &[f64]) -> Vec<f64> {
        let n = v.len() as f64;
        (0..v.len())
            .map(|_| v[(self.random() * n).floor() as usize])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Mt;

    #[test]
    fn same_numbers_as_python() {
        // python3 -c 'import random; r = random.Random(1); print([r.random() for _ in range(3)])'
        let mut r = Mt::new(1);
        assert_eq!(r.random(), 0.13436424411240122);
        assert_eq!(r.random(), 0.8474337369372327);
        assert_eq!(r.random(), 0.763774618976614);
        // random.Random(1).choices([1, 2, 3, 4, 5], k=5)
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(Mt::new(1).resample(&v), [1.0, 5.0, 4.0, 2.0, 3.0]);
    }
}
