//! Gaussian noise for differential privacy from a cryptographically seeded generator:
//! ChaCha20 keyed with 256 bits from the OS (`getrandom`; `crypto.getRandomValues` in a
//! browser), normal deviates by `rand_distr`'s ziggurat. Added on the host to the values the
//! node reads back anyway to send (the parameters or the update), so the device's own
//! counter-based generator (Philox, 64-bit seed) is not used for privacy.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rand_distr::{Distribution, StandardNormal};

use crate::{FlowerError, Result};

/// A stream of Gaussian noise.
pub struct Noise {
    rng: ChaCha20Rng,
}

impl Noise {
    /// A generator keyed from the OS (a fresh key per call).
    pub fn from_os() -> Result<Self> {
        let mut key = [0u8; 32];
        getrandom::getrandom(&mut key)
            .map_err(|e| FlowerError::Invalid(format!("no random numbers for DP noise: {e}")))?;
        Ok(Noise {
            rng: ChaCha20Rng::from_seed(key),
        })
    }

    /// A generator with a fixed key (tests only: fixed keys give no privacy).
    pub fn from_key(key: [u8; 32]) -> Self {
        Noise {
            rng: ChaCha20Rng::from_seed(key),
        }
    }

    /// One N(0, 1) deviate.
    pub fn standard(&mut self) -> f64 {
        StandardNormal.sample(&mut self.rng)
    }

    /// Adds N(0, std²) to every value.
    pub fn add(&mut self, values: &mut [f32], std: f64) {
        for v in values {
            *v = (*v as f64 + std * self.standard()) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_of_the_noise() {
        let mut n = Noise::from_key([3; 32]);
        let mut v = vec![0f32; 400_000];
        n.add(&mut v, 2.5);
        let len = v.len() as f64;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / len;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (len - 1.0);
        let kurt = v
            .iter()
            .map(|&x| ((x as f64 - mean) / var.sqrt()).powi(4))
            .sum::<f64>()
            / len;
        // standard errors: mean 2.5/sqrt(n) = 0.004, variance 6.25*sqrt(2/n) = 0.014
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((var - 6.25).abs() < 0.07, "variance {var}");
        assert!((kurt - 3.0).abs() < 0.05, "kurtosis {kurt}");
        // two generators from the OS differ
        let (mut a, mut b) = (Noise::from_os().unwrap(), Noise::from_os().unwrap());
        assert_ne!(a.standard(), b.standard());
    }
}
