//! Creation kernels: constant fill and counter-based random numbers. Element `i` of a random
//! tensor is `pixelgrad_core::rng::sample(dist, seed, i)` (drawn in f32, like every backend),
//! so the reference and the fast path see the very same numbers.

use pixelgrad_core::{rng, Distribution};

use crate::element::Element;
use crate::par::{for_chunks, FLAT_CHUNK};

pub fn fill<T: Element>(value: f32, n: usize) -> Vec<T> {
    vec![T::from_f32(value); n]
}

pub fn random<T: Element>(seed: u64, dist: Distribution, n: usize) -> Vec<T> {
    let mut out = vec![T::ZERO; n];
    for_chunks(&mut out, FLAT_CHUNK, |c, dst| {
        let base = c * FLAT_CHUNK;
        for (i, d) in dst.iter_mut().enumerate() {
            *d = T::from_f32(rng::sample(dist, seed, (base + i) as u64));
        }
    });
    out
}
