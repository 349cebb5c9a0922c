//! numpy's legacy `RandomState` (MT19937) as far as Flower's SecAgg+ uses it, bit for bit:
//!
//! - `RandomState(seed)` with a 32-bit integer seed is Matsumoto and Nishimura's
//!   `init_genrand(seed)` (the reference MT19937 of the `rand_mt` crate);
//! - `randint(0, high, dtype=int64)` with `high - 1 <= 2^32 - 1` draws 32-bit words and keeps
//!   `word & mask` (the smallest all-ones mask covering `high - 1`), rejecting values above
//!   `high - 1` (numpy's "masked" bounded integers, which the legacy generator always uses);
//!   a range of exactly `2^32` takes the word as it is;
//! - `rand()` / `random_sample()` make a double from two words: `((a >> 5) * 2^26 + (b >> 6))
//!   / 2^53`.
//!
//! Checked against numpy (`tests/secagg_golden.rs`, vectors from the pinned flwr venv).

use rand_mt::Mt;

use crate::{FlowerError, Result};

/// numpy's `RandomState` seeded with a 32-bit integer.
pub struct NumpyRandomState {
    mt: Mt,
}

impl NumpyRandomState {
    /// `np.random.RandomState(seed)`.
    pub fn new(seed: u32) -> Self {
        NumpyRandomState { mt: Mt::new(seed) }
    }

    /// The next 32-bit word of the stream.
    pub fn next_u32(&mut self) -> u32 {
        self.mt.next_u32()
    }

    /// `random_sample()`: a double in `[0, 1)` with 53 random bits.
    pub fn random_sample(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = (self.next_u32() >> 6) as f64;
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }

    /// A sampler of `randint(0, high)` (values in `0..high`), as numpy's legacy generator
    /// draws them; `high` must be in `1..=2^32`.
    pub fn bounded(high: u64) -> Result<Bounded> {
        if high == 0 || high > 1 << 32 {
            return Err(FlowerError::Protocol(format!(
                "a mask range of {high} values is outside 1..=2^32"
            )));
        }
        let max = (high - 1) as u32;
        // smallest 2^k - 1 >= max
        let mask = if max == 0 {
            0
        } else {
            u32::MAX >> max.leading_zeros()
        };
        Ok(Bounded { max, mask })
    }

    /// One value of `b` (numpy's `buffered_bounded_masked_uint32`: reject `word & mask > max`).
    pub fn draw(&mut self, b: &Bounded) -> u32 {
        if b.max == 0 {
            return 0;
        }
        if b.max == u32::MAX {
            return self.next_u32();
        }
        loop {
            let v = self.next_u32() & b.mask;
            if v <= b.max {
                return v;
            }
        }
    }
}

/// A bounded-integer range prepared by [`NumpyRandomState::bounded`].
#[derive(Clone, Copy, Debug)]
pub struct Bounded {
    max: u32,
    mask: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_mt19937_words() {
        // init_genrand(5489) — the reference implementation's first outputs
        let mut r = NumpyRandomState::new(5489);
        assert_eq!(r.next_u32(), 3_499_211_612);
        assert_eq!(r.next_u32(), 581_869_302);
    }

    #[test]
    fn bounded_ranges() {
        assert!(NumpyRandomState::bounded(0).is_err());
        assert!(NumpyRandomState::bounded((1 << 32) + 1).is_err());
        let mut r = NumpyRandomState::new(1);
        let one = NumpyRandomState::bounded(1).unwrap();
        assert_eq!(r.draw(&one), 0);
        let b = NumpyRandomState::bounded(3).unwrap();
        for _ in 0..1000 {
            assert!(r.draw(&b) < 3);
        }
        let u = r.random_sample();
        assert!((0.0..1.0).contains(&u));
    }
}
