//! Seeded, deterministic shuffling: SplitMix64 feeding a Fisher-Yates shuffle.
//!
//! The same seed gives the same order on every platform (native, wasm32) and every run:
//! the generator uses only 64-bit integer arithmetic and draws bounded integers without
//! floating point, so no platform-dependent rounding can change the order.

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny 64-bit generator, good enough for shuffling
/// and splitting data and fully reproducible.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// The SplitMix64 output function: a bijective 64-bit mixer.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl SplitMix64 {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix64(self.state)
    }

    /// A uniform integer in `0..n` (`n > 0`; returns 0 for `n == 0`). Lemire's
    /// multiply-and-reject method: unbiased, and no division in the common case.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }
}

/// Shuffles `items` in place (Fisher-Yates, from the back).
pub fn shuffle<T>(items: &mut [T], rng: &mut SplitMix64) {
    for i in (1..items.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

/// A permutation of `0..n` fixed by `seed`.
pub fn shuffled_indices(n: usize, seed: u64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    shuffle(&mut idx, &mut SplitMix64::new(seed));
    idx
}

/// Gives a different, reproducible permutation of `0..n` for every epoch.
///
/// Epoch `e`'s order depends only on `(seed, e)`, so a run resumed at epoch 7 sees the same
/// orders as a run that never stopped.
#[derive(Debug, Clone)]
pub struct Shuffler {
    n: usize,
    seed: u64,
    next: u64,
}

impl Shuffler {
    /// A shuffler over `0..n` keyed by `seed`; [`Shuffler::next_epoch`] starts at epoch 0.
    pub fn new(n: usize, seed: u64) -> Self {
        Self { n, seed, next: 0 }
    }

    /// Number of indices per permutation.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when `n == 0`.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The permutation for `epoch`.
    pub fn epoch(&self, epoch: u64) -> Vec<usize> {
        // Mix the epoch in before keying SplitMix so epochs e and e+1 are unrelated streams
        // rather than the same stream shifted by one step.
        shuffled_indices(self.n, self.seed ^ mix64(epoch.wrapping_add(GOLDEN_GAMMA)))
    }

    /// The permutation for the next epoch (0, 1, 2, ...).
    pub fn next_epoch(&mut self) -> Vec<usize> {
        let e = self.next;
        self.next = self.next.wrapping_add(1);
        self.epoch(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // First outputs for seed 0 of the reference SplitMix64 (Vigna's splitmix64.c).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn permutation_is_deterministic_and_complete() {
        let a = shuffled_indices(1000, 42);
        assert_eq!(a, shuffled_indices(1000, 42));
        assert_ne!(a, shuffled_indices(1000, 43));
        assert_ne!(a, (0..1000).collect::<Vec<_>>());
        let mut s = a.clone();
        s.sort_unstable();
        assert_eq!(s, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut r = SplitMix64::new(7);
        let mut counts = [0usize; 6];
        for _ in 0..60_000 {
            counts[r.below(6) as usize] += 1;
        }
        // Expected 10000 each; 5 sigma is about 450.
        assert!(
            counts.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn shuffler_epochs_differ_and_repeat() {
        let mut s = Shuffler::new(50, 1);
        let e0 = s.next_epoch();
        let e1 = s.next_epoch();
        assert_ne!(e0, e1);
        assert_eq!(Shuffler::new(50, 1).epoch(1), e1);
    }
}
