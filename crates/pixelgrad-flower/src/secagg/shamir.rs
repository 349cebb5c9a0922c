//! Shamir secret sharing as Flower's SecAgg+ does it (`flwr.common.secure_aggregation.crypto.
//! shamir`, on PyCryptodome's `Shamir` with `ssss=False`):
//!
//! - the secret is PKCS#7-padded to whole 16-byte blocks; each block is shared on its own;
//! - a block is an element of GF(2^128) in polynomial basis, modulus `x^128 + x^7 + x^2 + x +
//!   1`, read from its 16 bytes as a big-endian integer (bit i = coefficient of x^i);
//! - the polynomial of a block has `threshold - 1` random coefficients, drawn first, highest
//!   degree first (16 random bytes each), and the block as the constant term; participant `i`
//!   (1-based) gets its value at `x = i`;
//! - share `i` is `i` as 4 little-endian bytes, then its 16-byte value for every block in order;
//! - combining is Lagrange interpolation at 0 over the shares given, then unpadding.

use crate::{FlowerError, Result};

/// GF(2^128) element, bit i = coefficient of x^i.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Gf(u128);

impl Gf {
    fn mul(self, other: Gf) -> Gf {
        let (mut a, mut b, mut z) = (self.0, other.0, 0u128);
        while b != 0 {
            if b & 1 == 1 {
                z ^= a;
            }
            let carry = a >> 127;
            a <<= 1;
            if carry == 1 {
                // x^128 = x^7 + x^2 + x + 1
                a ^= 0x87;
            }
            b >>= 1;
        }
        Gf(z)
    }

    /// `self^(2^128 - 2)`, the inverse of a non-zero element.
    fn inverse(self) -> Result<Gf> {
        if self.0 == 0 {
            return Err(FlowerError::Protocol("Shamir: inversion of zero".into()));
        }
        // 2^128 - 2 = 0b111...110: square-and-multiply over 127 ones then one zero
        let mut result = Gf(1);
        for i in (0..128).rev() {
            result = result.mul(result);
            if i != 0 {
                result = result.mul(self);
            }
        }
        Ok(result)
    }
}

const BLOCK: usize = 16;

fn pad(secret: &[u8]) -> Vec<u8> {
    let n = BLOCK - secret.len() % BLOCK;
    let mut out = secret.to_vec();
    out.extend(std::iter::repeat_n(n as u8, n));
    out
}

fn unpad(padded: &[u8]) -> Result<Vec<u8>> {
    let bad = || FlowerError::Protocol("Shamir: failed to combine shares (bad padding)".into());
    let &n = padded.last().ok_or_else(bad)?;
    let n = n as usize;
    if n == 0 || n > BLOCK || n > padded.len() || !padded.len().is_multiple_of(BLOCK) {
        return Err(bad());
    }
    if padded[padded.len() - n..].iter().any(|&b| b as usize != n) {
        return Err(bad());
    }
    Ok(padded[..padded.len() - n].to_vec())
}

/// Splits `secret` into `num` shares of which any `threshold` recover it. `coefficient` fills
/// 16 random bytes per coefficient (`threshold - 1` per 16-byte block, block after block).
pub fn create_shares(
    secret: &[u8],
    threshold: usize,
    num: usize,
    coefficient: &mut dyn FnMut(&mut [u8; 16]) -> Result<()>,
) -> Result<Vec<Vec<u8>>> {
    if threshold == 0 || threshold > num || num > u32::MAX as usize {
        return Err(FlowerError::Protocol(format!(
            "Shamir: cannot make {num} shares with threshold {threshold}"
        )));
    }
    let padded = pad(secret);
    let mut shares: Vec<Vec<u8>> = (1..=num)
        .map(|i| {
            let mut s = Vec::with_capacity(4 + padded.len());
            s.extend_from_slice(&(i as u32).to_le_bytes());
            s
        })
        .collect();
    for block in padded.chunks_exact(BLOCK) {
        let mut coeffs = Vec::with_capacity(threshold);
        for _ in 1..threshold {
            let mut c = [0u8; 16];
            coefficient(&mut c)?;
            coeffs.push(Gf(u128::from_be_bytes(c)));
        }
        let mut b = [0u8; 16];
        b.copy_from_slice(block);
        coeffs.push(Gf(u128::from_be_bytes(b)));
        for (i, share) in shares.iter_mut().enumerate() {
            let x = Gf(i as u128 + 1);
            let y = coeffs.iter().fold(Gf(0), |acc, &c| Gf(acc.mul(x).0 ^ c.0));
            share.extend_from_slice(&y.0.to_be_bytes());
        }
    }
    Ok(shares)
}

/// Recovers the secret from shares made by [`create_shares`] (at least the threshold of them,
/// with distinct indices and equal lengths).
pub fn combine_shares(shares: &[Vec<u8>]) -> Result<Vec<u8>> {
    let first = shares
        .first()
        .ok_or_else(|| FlowerError::Protocol("Shamir: no shares to combine".into()))?;
    if first.len() < 4 + BLOCK || (first.len() - 4) % BLOCK != 0 {
        return Err(FlowerError::Protocol(format!(
            "Shamir: a share of {} bytes is not an index and whole blocks",
            first.len()
        )));
    }
    let mut xs = Vec::with_capacity(shares.len());
    for s in shares {
        if s.len() != first.len() {
            return Err(FlowerError::Protocol(
                "Shamir: shares of different lengths".into(),
            ));
        }
        let x = Gf(u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as u128);
        if xs.contains(&x) {
            return Err(FlowerError::Protocol("Shamir: duplicate share".into()));
        }
        xs.push(x);
    }
    // Lagrange weights at 0: w_j = prod_{m != j} x_m / (x_j + x_m)
    let mut weights = Vec::with_capacity(xs.len());
    for (j, &xj) in xs.iter().enumerate() {
        let (mut num, mut den) = (Gf(1), Gf(1));
        for (m, &xm) in xs.iter().enumerate() {
            if m != j {
                num = num.mul(xm);
                den = den.mul(Gf(xj.0 ^ xm.0));
            }
        }
        weights.push(num.mul(den.inverse()?));
    }
    let blocks = (first.len() - 4) / BLOCK;
    let mut padded = Vec::with_capacity(blocks * BLOCK);
    for b in 0..blocks {
        let at = 4 + b * BLOCK;
        let mut acc = Gf(0);
        for (s, w) in shares.iter().zip(&weights) {
            let mut y = [0u8; 16];
            y.copy_from_slice(&s[at..at + BLOCK]);
            acc = Gf(acc.0 ^ Gf(u128::from_be_bytes(y)).mul(*w).0);
        }
        padded.extend_from_slice(&acc.0.to_be_bytes());
    }
    unpad(&padded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_inverse() {
        for v in [1u128, 2, 3, 0x87, u128::MAX, 0x1234_5678_9abc_def0] {
            assert_eq!(Gf(v).mul(Gf(v).inverse().unwrap()), Gf(1), "{v:x}");
        }
        assert!(Gf(0).inverse().is_err());
    }

    #[test]
    fn any_threshold_subset_recovers() {
        let mut k = 0u8;
        let mut coef = |c: &mut [u8; 16]| {
            k = k.wrapping_add(1);
            c.fill(k);
            Ok(())
        };
        let secret = b"a secret of some forty bytes, not whole".to_vec();
        let shares = create_shares(&secret, 3, 5, &mut coef).unwrap();
        assert_eq!(shares.len(), 5);
        assert_eq!(shares[0].len(), 4 + 48);
        assert_eq!(combine_shares(&shares[2..5]).unwrap(), secret);
        assert_eq!(combine_shares(&shares).unwrap(), secret);
        let two = vec![shares[0].clone(), shares[4].clone()];
        assert_ne!(combine_shares(&two).ok(), Some(secret.clone()));
        let dup = vec![shares[0].clone(), shares[0].clone(), shares[1].clone()];
        assert!(combine_shares(&dup).is_err());
        assert!(create_shares(&secret, 6, 5, &mut coef).is_err());
    }
}
