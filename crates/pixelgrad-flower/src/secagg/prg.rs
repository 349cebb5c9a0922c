//! Flower's mask generator (`pseudo_rand_gen`): a seed of `4k` bytes is folded to 32 bits by
//! XOR of its little-endian words, seeds numpy's `RandomState`, and each array of the given
//! shapes gets `randint(0, mod_range - 1)` per element, in C order, one array after another.
//! (So a mask value is in `0..mod_range - 1`: numpy's upper bound is exclusive.)
//!
//! Note: the seed of every mask is thereby only 32 bits and MT19937 is not a cryptographic
//! generator. pixelgrad has to match it bit for bit to take part in Flower's protocol; what
//! this means for the server's view is in the crate README ("What the server learns").

use super::numpy_rng::NumpyRandomState;
use crate::{FlowerError, Result};

/// XOR of the seed's little-endian 32-bit words (Flower asserts the length is a multiple of 4).
pub fn fold_seed(seed: &[u8]) -> Result<u32> {
    if !seed.len().is_multiple_of(4) {
        return Err(FlowerError::Protocol(format!(
            "a mask seed of {} bytes is not a whole number of 32-bit words",
            seed.len()
        )));
    }
    Ok(seed
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .fold(0, |a, w| a ^ w))
}

/// The masks for arrays of `sizes` elements (a 0-d array has 1): `pseudo_rand_gen(seed,
/// mod_range, shapes)`, flattened per array.
pub fn masks(seed: &[u8], mod_range: u64, sizes: &[usize]) -> Result<Vec<Vec<i64>>> {
    let mut out: Vec<Vec<i64>> = sizes.iter().map(|&n| Vec::with_capacity(n)).collect();
    visit_masks(seed, mod_range, sizes, |i, _, v| out[i].push(v as i64))?;
    Ok(out)
}

/// Calls `f(array, element, value)` for every mask value in order, without allocating.
pub fn visit_masks(
    seed: &[u8],
    mod_range: u64,
    sizes: &[usize],
    mut f: impl FnMut(usize, usize, u32),
) -> Result<()> {
    if mod_range < 2 {
        return Err(FlowerError::Protocol(format!(
            "the mask modulus {mod_range} leaves numpy no range to draw from (low >= high)"
        )));
    }
    let mut rng = NumpyRandomState::new(fold_seed(seed)?);
    let b = NumpyRandomState::bounded(mod_range - 1)?;
    for (i, &n) in sizes.iter().enumerate() {
        for j in 0..n {
            f(i, j, rng.draw(&b));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding() {
        assert_eq!(fold_seed(&[1, 0, 0, 0, 2, 0, 0, 0]).unwrap(), 3);
        assert!(fold_seed(&[1, 2, 3]).is_err());
        assert!(masks(&[0; 4], 1, &[1]).is_err());
        let m = masks(&[7; 32], 1 << 32, &[3, 1, 0]).unwrap();
        assert_eq!(m.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 1, 0]);
        assert!(m
            .iter()
            .flatten()
            .all(|&v| (0..(1i64 << 32) - 1).contains(&v)));
    }
}
