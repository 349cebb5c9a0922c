//! What Flower's server (`SecAggPlusWorkflow.collect_masked_vectors_stage` and `unmask_stage`)
//! computes from the nodes' replies: the masked vectors summed mod `mod_range`; every active
//! node's private mask rebuilt from its seed shares and removed; every dropped node's pairwise
//! masks rebuilt from its mask-key shares and removed; the result decoded into the weighted
//! mean. The nodes never run this; tests and the benchmark use it to check and time a round
//! without a SuperLink.

use std::collections::HashMap;

use super::keys;
use super::prg;
use super::protocol::Setup;
use super::quantize;
use super::shamir;
use crate::npy;
use crate::{FlowerError, Result};

/// The masked vectors of the nodes that sent one (`masked_params` bytes), summed mod
/// `mod_range`, per array.
pub fn sum_masked(vectors: &[Vec<Vec<u8>>], mod_range: u64) -> Result<Vec<Vec<i64>>> {
    let mut sum: Option<Vec<Vec<i64>>> = None;
    for v in vectors {
        let arrays: Vec<Vec<i64>> = v
            .iter()
            .map(|b| npy::decode_i64(b).map(|(_, a)| a))
            .collect::<Result<_>>()?;
        sum = Some(match sum {
            None => arrays,
            Some(mut s) => {
                if s.len() != arrays.len() || s.iter().zip(&arrays).any(|(a, b)| a.len() != b.len())
                {
                    return Err(FlowerError::Protocol(
                        "masked vectors of different shapes".into(),
                    ));
                }
                for (a, b) in s.iter_mut().zip(&arrays) {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x = x.wrapping_add(*y);
                    }
                }
                s
            }
        });
    }
    let m = mod_range as i64;
    let mut s = sum.ok_or_else(|| FlowerError::Protocol("no masked vector to sum".into()))?;
    s.iter_mut().flatten().for_each(|x| *x = x.rem_euclid(m));
    Ok(s)
}

/// The unmasking of the summed vector and its decoding (see the module docs).
/// `shares[owner]` are the shares the nodes returned for `owner`; `neighbours[n]` is node n's
/// neighbour set (itself included) and `pk1[n]` its first public key (PEM).
pub fn unmask(
    mut sum: Vec<Vec<i64>>,
    setup: &Setup,
    active: &[u64],
    dead: &[u64],
    shares: &HashMap<u64, Vec<Vec<u8>>>,
    neighbours: &HashMap<u64, Vec<u64>>,
    pk1: &HashMap<u64, Vec<u8>>,
) -> Result<Vec<Vec<f64>>> {
    let sizes: Vec<usize> = sum.iter().map(Vec::len).collect();
    for (&owner, list) in shares {
        if (list.len() as u64) < setup.threshold {
            return Err(FlowerError::Protocol(format!(
                "not enough shares to recover node {owner}'s secret"
            )));
        }
        let secret = shamir::combine_shares(list)?;
        if active.contains(&owner) {
            prg::visit_masks(&secret, setup.mod_range, &sizes, |i, j, m| {
                sum[i][j] = sum[i][j].wrapping_sub(m as i64)
            })?;
        } else if dead.contains(&owner) {
            let sk = keys::secret_from_pem(&secret)?;
            for &nb in neighbours.get(&owner).map(Vec::as_slice).unwrap_or(&[]) {
                if nb == owner {
                    continue;
                }
                let pk = keys::public_from_pem(pk1.get(&nb).ok_or_else(|| {
                    FlowerError::Protocol(format!("no public key of node {nb}"))
                })?)?;
                let seed = keys::shared_key(&sk, &pk);
                let add = owner > nb;
                prg::visit_masks(&seed, setup.mod_range, &sizes, |i, j, m| {
                    sum[i][j] = if add {
                        sum[i][j].wrapping_add(m as i64)
                    } else {
                        sum[i][j].wrapping_sub(m as i64)
                    }
                })?;
            }
        }
    }
    let m = setup.mod_range as i64;
    sum.iter_mut().flatten().for_each(|x| *x = x.rem_euclid(m));
    let q_total = sum
        .first()
        .and_then(|f| f.first().copied())
        .ok_or_else(|| FlowerError::Protocol("the vector has no weight entry".into()))?;
    if q_total <= 0 {
        return Err(FlowerError::Protocol("the weights sum to zero".into()));
    }
    Ok(sum[1..]
        .iter()
        .map(|a| {
            quantize::decode_sum(
                a,
                active.len(),
                q_total,
                setup.clipping_range,
                setup.target_range,
            )
        })
        .collect())
}
