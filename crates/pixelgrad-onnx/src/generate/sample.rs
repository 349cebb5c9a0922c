//! Picking the next token from one position's logits: greedy (temperature 0), or sampling
//! with a temperature among the `top_k` most likely tokens and the smallest set of them whose
//! probabilities add up to `top_p` (nucleus sampling), drawn from a seeded generator so that a
//! seed gives the same tokens every time on every backend whose logits agree.

use crate::{OnnxError, Result};

/// The sampling settings, checked.
#[derive(Clone, Debug)]
pub struct Sampler {
    temperature: f64,
    top_k: usize,
    top_p: f64,
    state: u64,
}

fn bad(msg: String) -> OnnxError {
    OnnxError::Input { name: "generate options".into(), msg }
}

impl Sampler {
    /// `temperature` 0 is greedy; `top_k` 0 keeps every token; `top_p` in (0, 1].
    pub fn new(temperature: f32, top_k: usize, top_p: f32, seed: u64) -> Result<Sampler> {
        if !(temperature.is_finite() && temperature >= 0.0) {
            return Err(bad(format!("temperature must be a finite number ≥ 0 (0: greedy), got {temperature}")));
        }
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(bad(format!("top_p must be in (0, 1], got {top_p}")));
        }
        Ok(Sampler { temperature: temperature as f64, top_k, top_p: top_p as f64, state: seed })
    }

    /// Whether every pick is the most likely token.
    pub fn greedy(&self) -> bool {
        self.temperature == 0.0 || self.top_k == 1
    }

    /// SplitMix64: the next uniform number in [0, 1).
    fn uniform(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next token of `logits` (one position's, over the vocabulary). NaN logits count as
    /// impossible; all of them NaN or -inf is an error.
    pub fn pick(&mut self, logits: &[f32]) -> Result<u32> {
        let finite = |x: f32| if x.is_nan() { f32::NEG_INFINITY } else { x };
        // the most likely token, the first of equals
        let mut best: Option<(usize, f32)> = None;
        for (i, &x) in logits.iter().enumerate() {
            let x = finite(x);
            if x > f32::NEG_INFINITY && best.is_none_or(|(_, b)| x > b) {
                best = Some((i, x));
            }
        }
        let Some((arg, max)) = best else {
            return Err(OnnxError::Output {
                name: "logits".into(),
                msg: format!("none of the {} logits of the last position is a number above -inf", logits.len()),
            });
        };
        if self.greedy() {
            return Ok(arg as u32);
        }
        let mut order: Vec<usize> = (0..logits.len()).filter(|&i| finite(logits[i]) > f32::NEG_INFINITY).collect();
        // most likely first; equals by index, so the order is the same everywhere
        order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
        if self.top_k > 0 {
            order.truncate(self.top_k);
        }
        let mut p: Vec<f64> = order.iter().map(|&i| ((logits[i] as f64 - max as f64) / self.temperature).exp()).collect();
        let sum: f64 = p.iter().sum();
        p.iter_mut().for_each(|x| *x /= sum);
        if self.top_p < 1.0 {
            let mut acc = 0.0;
            let keep = p
                .iter()
                .position(|&x| {
                    acc += x;
                    acc >= self.top_p
                })
                .map_or(p.len(), |i| i + 1);
            p.truncate(keep);
            order.truncate(keep);
        }
        let total: f64 = p.iter().sum();
        let mut u = self.uniform() * total;
        for (k, &x) in p.iter().enumerate() {
            if u < x {
                return Ok(order[k] as u32);
            }
            u -= x;
        }
        Ok(order[p.len() - 1] as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_first_largest_and_skips_nan() {
        let mut s = Sampler::new(0.0, 0, 1.0, 1).unwrap();
        assert_eq!(s.pick(&[0.5, f32::NAN, 2.0, 2.0, -1.0]).unwrap(), 2);
        assert!(s.pick(&[f32::NAN, f32::NEG_INFINITY]).is_err());
    }

    #[test]
    fn top_k_one_is_greedy_and_top_p_keeps_the_nucleus() {
        let logits = [0.1, 3.0, 2.9, -2.0];
        let mut s = Sampler::new(1.5, 1, 1.0, 9).unwrap();
        assert!((0..50).all(|_| s.pick(&logits).unwrap() == 1));
        // token 1 alone holds less than 0.6 of the mass, tokens 1 and 2 more: only they come out
        let mut s = Sampler::new(1.0, 0, 0.6, 9).unwrap();
        let picks: Vec<u32> = (0..200).map(|_| s.pick(&logits).unwrap()).collect();
        assert!(picks.iter().all(|&t| t == 1 || t == 2), "{picks:?}");
        assert!(picks.contains(&1) && picks.contains(&2));
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(Sampler::new(-1.0, 0, 1.0, 0).is_err());
        assert!(Sampler::new(f32::NAN, 0, 1.0, 0).is_err());
        assert!(Sampler::new(1.0, 0, 0.0, 0).is_err());
        assert!(Sampler::new(1.0, 0, 1.5, 0).is_err());
    }
}
