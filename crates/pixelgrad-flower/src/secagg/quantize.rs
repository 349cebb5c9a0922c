//! SecAgg+'s fixed-point encoding, as `secaggplus_mod` and `SecAggPlusWorkflow` do it:
//!
//! - the weight: `ratio = num_examples / max_weight`, `q_ratio = round(ratio * target_range)`
//!   (Python's round, half to even), `dq_ratio = q_ratio / target_range`; every parameter is
//!   multiplied by `dq_ratio` and `q_ratio` travels as one more (first) array;
//! - quantisation (`quantize`): in float32 as numpy computes it, `pre = (clip(x, -c, c) + c) *
//!   (target_range / 2c)`, then stochastic rounding: `ceil(pre)`, minus one when a uniform draw
//!   in `[0, 1)` is below `ceil(pre) - pre` (so the expectation is `pre`);
//! - the server's decoding (`dequantize` plus the workflow's offset): the sum `S` of `n` nodes'
//!   values becomes `(S * 2c / target_range - n c) * target_range / sum(q_ratio)`.
//!
//! Flower draws the rounding from numpy's global (unseeded) generator; pixelgrad draws it from
//! a cryptographically seeded one ([`super::randomness`]); tests feed numpy's stream to match
//! Flower's output bit for bit.

use crate::{FlowerError, Result};

/// `(q_ratio, dq_ratio)` of a node with `num_examples` (Flower's `_collect_masked_vectors`).
pub fn weight(num_examples: f64, max_weight: f64, target_range: u64) -> (i64, f64) {
    let ratio = num_examples / max_weight;
    let q = (ratio * target_range as f64).round_ties_even();
    (q as i64, q / target_range as f64)
}

/// Quantises `values` (already multiplied by the weight) into `out`, drawing one uniform per
/// value. A value that is not finite is an error (numpy would make it `INT_MIN`).
pub fn quantize_into(
    values: &[f32],
    clipping_range: f64,
    target_range: u64,
    uniform: &mut dyn FnMut() -> f64,
    out: &mut Vec<i64>,
) -> Result<()> {
    let c = clipping_range as f32;
    let quantizer = (target_range as f64 / (2.0 * clipping_range)) as f32;
    out.reserve(values.len());
    for &x in values {
        if !x.is_finite() {
            return Err(FlowerError::Invalid(
                "SecAgg+: a parameter of the update is not finite (training diverged?)".into(),
            ));
        }
        let pre = (x.clamp(-c, c) + c) * quantizer;
        let mut q = pre.ceil() as i32;
        if uniform() < q as f64 - pre as f64 {
            q -= 1;
        }
        out.push(q as i64);
    }
    Ok(())
}

/// The float32 products `x * dq_ratio` (numpy's `parameters_multiply` on a float32 array).
pub fn scale(values: &[f32], dq_ratio: f64) -> Vec<f32> {
    let k = dq_ratio as f32;
    values.iter().map(|&x| x * k).collect()
}

/// The server's decoding of a summed, unmasked vector of `nodes` nodes whose weights sum to
/// `q_total` (`SecAggPlusWorkflow.unmask_stage`): the weighted mean of their parameters.
pub fn decode_sum(
    sum: &[i64],
    nodes: usize,
    q_total: i64,
    clipping_range: f64,
    target_range: u64,
) -> Vec<f64> {
    let quantizer = 2.0 * clipping_range / target_range as f64;
    let offset = -(nodes as f64 - 1.0) * clipping_range;
    let inv = target_range as f64 / q_total as f64;
    sum.iter()
        .map(|&s| ((s as f64 * quantizer - clipping_range) + offset) * inv)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_rounds_half_to_even() {
        assert_eq!(weight(1.0, 2.0, 3), (2, 2.0 / 3.0)); // 1.5 -> 2
        assert_eq!(weight(5.0, 2.0, 1), (2, 2.0)); // 2.5 -> 2
        assert_eq!(weight(100.0, 1000.0, 1 << 22).0, 419_430);
    }

    #[test]
    fn rounding_is_unbiased_and_bounded() {
        let mut s = 0u64;
        let mut uni = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut out = Vec::new();
        let xs = vec![0.3f32; 20_000];
        quantize_into(&xs, 1.0, 10, &mut uni, &mut out).unwrap();
        // pre = (0.3 + 1) * 5 = 6.5: half 6, half 7
        assert!(out.iter().all(|&q| q == 6 || q == 7));
        let mean = out.iter().sum::<i64>() as f64 / out.len() as f64;
        assert!((mean - 6.5).abs() < 0.02, "{mean}");
        let mut o = Vec::new();
        quantize_into(&[100.0, -100.0], 1.0, 10, &mut uni, &mut o).unwrap();
        assert_eq!(o, vec![10, 0]);
        assert!(quantize_into(&[f32::NAN], 1.0, 10, &mut uni, &mut o).is_err());
    }
}
