//! Counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
//! as 1, 2, 3", SC 2011). Element `i` of a random tensor with seed `s` uses counter
//! `(i_lo, i_hi, 0, 0)` and key `(s_lo, s_hi)`; it depends on nothing else, so every backend (and
//! every GPU thread) computes it independently and all draw the same numbers.
//!
//! GPU kernels reproduce [`philox4x32`] with 16-bit multiplies for the high word, since neither
//! WGSL nor GLSL ES 3.00 has a 32x32→64 multiply.

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Ten rounds of Philox4x32 on `ctr` with `key`.
pub fn philox4x32(mut ctr: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    for round in 0..10 {
        if round > 0 {
            key[0] = key[0].wrapping_add(W0);
            key[1] = key[1].wrapping_add(W1);
        }
        let p0 = (M0 as u64) * (ctr[0] as u64);
        let p1 = (M1 as u64) * (ctr[2] as u64);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        ctr = [hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0];
    }
    ctr
}

/// The four raw words for element `i` of a tensor drawn with `seed`.
pub fn words(seed: u64, i: u64) -> [u32; 4] {
    philox4x32([i as u32, (i >> 32) as u32, 0, 0], [seed as u32, (seed >> 32) as u32])
}

/// `r >> 8` scaled to `[0, 1)`: 24 bits, exactly representable in f32.
pub fn unit(r: u32) -> f32 {
    (r >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// Uniform sample in `[0, 1)` for element `i`.
pub fn uniform(seed: u64, i: u64) -> f32 {
    unit(words(seed, i)[0])
}

/// Standard normal sample for element `i` (Box-Muller on the first two words; `u1` is shifted
/// into `(0, 1]` so the log is finite).
pub fn normal(seed: u64, i: u64) -> f32 {
    let w = words(seed, i);
    let u1 = unit(w[0]) + 1.0 / 16_777_216.0;
    let u2 = unit(w[1]);
    ((-2.0 * (u1 as f64).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2 as f64).cos()) as f32
}

/// Sample for element `i` of `dist`.
pub fn sample(dist: crate::op::Distribution, seed: u64, i: u64) -> f32 {
    match dist {
        crate::op::Distribution::Uniform { low, high } => low + (high - low) * uniform(seed, i),
        crate::op::Distribution::Normal { mean, std } => mean + std * normal(seed, i),
    }
}

/// Mixes a user seed and a stream number into a fresh seed (SplitMix64), so that successive
/// draws from one generator do not overlap.
pub fn mix(seed: u64, stream: u64) -> u64 {
    let mut z = seed.wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answer() {
        // Known-answer vectors from the Random123 distribution (kat_vectors, philox4x32 R=10).
        assert_eq!(philox4x32([0, 0, 0, 0], [0, 0]), [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
        assert_eq!(philox4x32([0xffffffff; 4], [0xffffffff; 2]), [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]);
    }

    #[test]
    fn moments() {
        let n = 20000;
        let m: f64 = (0..n).map(|i| uniform(7, i) as f64).sum::<f64>() / n as f64;
        assert!((m - 0.5).abs() < 0.01, "{m}");
        let v: f64 = (0..n).map(|i| (normal(7, i) as f64).powi(2)).sum::<f64>() / n as f64;
        assert!((v - 1.0).abs() < 0.05, "{v}");
    }
}
