//! Where a SecAgg+ client's randomness comes from. [`OsEntropy`] is what nodes use: key
//! pairs, the private-mask seed, Shamir coefficients and Fernet IVs straight from the OS
//! (`getrandom`; `crypto.getRandomValues` in a browser), and the stochastic rounding from
//! ChaCha20 seeded with 256 bits of it. Tests replay Flower's own draws through the same trait.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::{FlowerError, Result};

/// The random choices of one SecAgg+ client, in the order Flower's client makes them.
pub trait Entropy {
    /// A fresh P-384 secret key (setup: the mask key pair, then the encryption key pair).
    fn secret_key(&mut self) -> Result<p384::SecretKey>;
    /// Random bytes: the private-mask seed (32), then Shamir coefficients (16 each), then one
    /// Fernet IV (16) per neighbour.
    fn fill(&mut self, buf: &mut [u8]) -> Result<()>;
    /// A uniform double in `[0, 1)` (stochastic rounding, one per parameter).
    fn uniform(&mut self) -> f64;
}

/// Randomness from the operating system (see the module docs).
pub struct OsEntropy {
    rounding: ChaCha20Rng,
}

impl OsEntropy {
    pub fn new() -> Result<Self> {
        let mut seed = [0u8; 32];
        os_fill(&mut seed)?;
        Ok(OsEntropy {
            rounding: ChaCha20Rng::from_seed(seed),
        })
    }
}

fn os_fill(buf: &mut [u8]) -> Result<()> {
    getrandom::getrandom(buf)
        .map_err(|e| FlowerError::Invalid(format!("no random numbers for SecAgg+: {e}")))
}

impl Entropy for OsEntropy {
    fn secret_key(&mut self) -> Result<p384::SecretKey> {
        super::keys::random_secret()
    }
    fn fill(&mut self, buf: &mut [u8]) -> Result<()> {
        os_fill(buf)
    }
    fn uniform(&mut self) -> f64 {
        // 53 random bits, as numpy's doubles
        (self.rounding.next_u64() >> 11) as f64 / 9_007_199_254_740_992.0
    }
}
