//! The fast path of [`pixelgrad_core::Op::MatMulI8`] when every activation fits in i16 (the
//! usual case: 8-bit activations minus their zero point lie in `[-255, 255]`): an integer GEMM
//! on i16 pairs with i32 accumulation (`crate::simd_int`: wasm `i32x4_dot_i16x8`, x86_64
//! `pmaddwd`), exact for every K (products and sums in wrapping `i32`, as the op defines).
//!
//! - `b` `[K, N]` is converted (`as i32`, as the direct loops do) and packed once per call into
//!   panels of [`NR`] columns: step `p` of panel `s` holds, for each of its columns `j`, the
//!   pair `b(2p, j), b(2p+1, j)` (16 i16 values, two vectors). A value outside i16 stops the
//!   packing: the caller then takes the other paths (`crate::int8`).
//! - `a` `[M, K]` (8-bit) is packed into tiles of [`MR`] rows: step `p` of tile `t` holds each
//!   row's pair `a(r, 2p), a(r, 2p+1)` as one i32 word, which the micro-kernel broadcasts.
//! - Rows and columns past M and N, and an odd K's last step, are zeros in the packs, so the
//!   micro-kernel has no edge cases; only the copy into the output skips them.
//! - K runs in blocks of [`KC`] steps (a 4 KiB panel of `b` stays in L1 while every row tile of
//!   a chunk reads it); runs of [`CHUNK_ROWS`] output rows are independent ([`for_chunks`]:
//!   rayon threads natively, one thread in the browser).

use crate::byte::Byte;
use crate::element::Element;
use crate::par::for_chunks;
use crate::simd_int::{pair_word, Acc, Pairs};

/// Rows of a micro-tile.
const MR: usize = 4;
/// Columns of a micro-tile: two vectors of four i32 sums.
const NR: usize = 8;
/// Pair steps (two K indices each) per block.
const KC: usize = 128;
/// Output rows per independent chunk (a multiple of [`MR`]).
const CHUNK_ROWS: usize = 32;

/// `b` `[K, N]` (one batch entry) packed into [`NR`]-column panels of i16 pairs (module docs).
pub(crate) struct PackedB {
    data: Vec<i16>,
    k2: usize,
    panels: usize,
}

/// Packs `b` (`k * n` values, row-major); `None` as soon as a value, converted as `as i32`
/// converts it, lies outside i16.
pub(crate) fn pack_b<T: Element>(b: &[T], k: usize, n: usize) -> Option<PackedB> {
    let k2 = k.div_ceil(2);
    let panels = n.div_ceil(NR);
    let mut data = vec![0i16; panels * k2 * NR * 2];
    for kk in 0..k {
        let (p, h) = (kk / 2, kk % 2);
        let row = &b[kk * n..][..n];
        for (j, &v) in row.iter().enumerate() {
            // `as` truncates toward zero and saturates (NaN gives 0): whole numbers convert exactly.
            let v = v.to_f64() as i32;
            let v = i16::try_from(v).ok()?;
            let (s, jj) = (j / NR, j % NR);
            data[((s * k2 + p) * NR + jj) * 2 + h] = v;
        }
    }
    Some(PackedB { data, k2, panels })
}

/// Packs `a` (`m * k` 8-bit values, row-major) into [`MR`]-row tiles of pair words.
pub(crate) fn pack_a<A: Byte>(a: &[A], m: usize, k: usize) -> Vec<i32> {
    let k2 = k.div_ceil(2);
    let tiles = m.div_ceil(MR);
    let mut data = vec![0i32; tiles * k2 * MR];
    for i in 0..m {
        let (t, r) = (i / MR, i % MR);
        let row = &a[i * k..][..k];
        for p in 0..k2 {
            let lo = row[2 * p].widen() as i16;
            let hi = if 2 * p + 1 < k { row[2 * p + 1].widen() as i16 } else { 0 };
            data[(t * k2 + p) * MR + r] = pair_word(lo, hi);
        }
    }
    data
}

/// One `MR x NR` tile: `acc += Σ_p a_p ⊗ b_p` over the steps of `a` (`MR` words each) and `b`
/// (16 values each); `acc` holds the tile's `MR` rows `ldc` apart.
#[inline(always)]
fn tile(a: &[i32], b: &[i16], acc: &mut [i32], ldc: usize) {
    let mut c = [[Acc::load(&[0; 4]); 2]; MR];
    for (r, cr) in c.iter_mut().enumerate() {
        let row = &acc[r * ldc..][..NR];
        cr[0] = Acc::load(row[..4].try_into().expect("4 sums"));
        cr[1] = Acc::load(row[4..].try_into().expect("4 sums"));
    }
    for (aw, bq) in a.chunks_exact(MR).zip(b.chunks_exact(2 * NR)) {
        let b0 = Pairs::load(bq[..8].try_into().expect("8 values"));
        let b1 = Pairs::load(bq[8..16].try_into().expect("8 values"));
        for (cr, &w) in c.iter_mut().zip(aw) {
            let av = Pairs::splat(w);
            cr[0] = cr[0].dot_add(av, b0);
            cr[1] = cr[1].dot_add(av, b1);
        }
    }
    for (r, cr) in c.iter().enumerate() {
        let row = &mut acc[r * ldc..][..NR];
        cr[0].store((&mut row[..4]).try_into().expect("4 sums"));
        cr[1].store((&mut row[4..]).try_into().expect("4 sums"));
    }
}

/// `out [m, n] = a · b` from the packs of one batch entry (`a` from [`pack_a`] of `m` rows,
/// `b` from [`pack_b`] of `n` columns, the same K), each wrapping `i32` sum rounded to the
/// nearest f32 as the other paths store it.
pub(crate) fn matmul_packed<T: Element>(a: &[i32], b: &PackedB, m: usize, n: usize, out: &mut [T]) {
    let PackedB { ref data, k2, panels } = *b;
    let npad = panels * NR;
    let out = &mut out[..m * n];
    if n == 0 {
        return;
    }
    for_chunks(out, CHUNK_ROWS * n, |chunk, dst| {
        let rows = dst.len() / n;
        let tiles = rows.div_ceil(MR);
        let first_tile = chunk * CHUNK_ROWS / MR;
        let mut acc = vec![0i32; tiles * MR * npad];
        for kb in (0..k2).step_by(KC) {
            let kc = KC.min(k2 - kb);
            for s in 0..panels {
                let bs = &data[(s * k2 + kb) * NR * 2..][..kc * NR * 2];
                for t in 0..tiles {
                    let at = &a[((first_tile + t) * k2 + kb) * MR..][..kc * MR];
                    tile(at, bs, &mut acc[t * MR * npad + s * NR..], npad);
                }
            }
        }
        for (d, s) in dst.chunks_exact_mut(n).zip(acc.chunks_exact(npad)) {
            for (d, &v) in d.iter_mut().zip(s) {
                // Rounded to the nearest f32 first, as every other path stores it.
                *d = T::from_f64(v as f32 as f64);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wrapping `i32` product computed one term at a time (the op's definition).
    fn reference(a: &[i32], b: &[i32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut out = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0i32;
                for p in 0..k {
                    s = s.wrapping_add(a[i * k + p].wrapping_mul(b[p * n + j]));
                }
                out[i * n + j] = s as f32;
            }
        }
        out
    }

    /// A small deterministic generator (xorshift).
    fn values(seed: u64, len: usize, lo: i64, hi: i64) -> Vec<i64> {
        let mut s = seed | 1;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                lo + (s % (hi - lo + 1) as u64) as i64
            })
            .collect()
    }

    fn run<A: Byte>(a: &[A], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let pb = pack_b(b, k, n).expect("b fits i16");
        let pa = pack_a(a, m, k);
        let mut out = vec![f32::NAN; m * n];
        matmul_packed(&pa, &pb, m, n, &mut out);
        out
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Odd M, N and K (tails of every tile, panel, pair and block), signed and unsigned
    /// weights with negative and > 127 values, activations with negative values and the i16
    /// extremes, agree bit for bit with the scalar definition.
    #[test]
    fn packed_gemm_matches_the_scalar_definition() {
        let shapes = [(1, 1, 1), (3, 5, 7), (4, 8, 8), (5, 9, 9), (17, 33, 13), (33, 257, 70), (64, 300, 3), (7, 600, 1)];
        for (case, &(m, k, n)) in shapes.iter().enumerate() {
            let seed = case as u64 * 7919 + 1;
            let bv = values(seed, k * n, -255, 255);
            let b: Vec<f32> = bv.iter().map(|&v| v as f32).collect();
            let bi: Vec<i32> = bv.iter().map(|&v| v as i32).collect();
            let ai8: Vec<i8> = values(seed + 1, m * k, -128, 127).iter().map(|&v| v as i8).collect();
            let want = reference(&ai8.iter().map(|&v| v as i32).collect::<Vec<_>>(), &bi, m, k, n);
            assert_eq!(bits(&run(&ai8, &b, m, k, n)), bits(&want), "i8 {m}x{k}x{n}");
            let au8: Vec<u8> = values(seed + 2, m * k, 0, 255).iter().map(|&v| v as u8).collect();
            let want = reference(&au8.iter().map(|&v| v as i32).collect::<Vec<_>>(), &bi, m, k, n);
            assert_eq!(bits(&run(&au8, &b, m, k, n)), bits(&want), "u8 {m}x{k}x{n}");
        }
    }

    /// Sums past i32 wrap as the op defines (255 · -32768 · 600 is far below i32::MIN), and
    /// sums past 2^24 round once from i32.
    #[test]
    fn extremes_wrap_and_round_like_the_definition() {
        let (m, k, n) = (5, 600, 9);
        let a: Vec<u8> = vec![255; m * k];
        let bi: Vec<i32> = (0..k * n).map(|i| if i % 5 == 0 { 32767 } else { -32768 }).collect();
        let b: Vec<f32> = bi.iter().map(|&v| v as f32).collect();
        let want = reference(&a.iter().map(|&v| v as i32).collect::<Vec<_>>(), &bi, m, k, n);
        assert_eq!(bits(&run(&a, &b, m, k, n)), bits(&want));
        let a: Vec<i8> = vec![-128; m * k];
        let want = reference(&a.iter().map(|&v| v as i32).collect::<Vec<_>>(), &bi, m, k, n);
        assert_eq!(bits(&run(&a, &b, m, k, n)), bits(&want));
    }

    /// Activations outside i16 (or fractional values past it) are refused by the packing, so
    /// the caller falls back to the other paths.
    #[test]
    fn activations_outside_i16_are_refused() {
        assert!(pack_b(&[1.0f32, 32767.0, -32768.0, 0.0], 2, 2).is_some());
        assert!(pack_b(&[1.0f32, 32768.0, 0.0, 0.0], 2, 2).is_none());
        assert!(pack_b(&[1.0f32, -32769.0, 0.0, 0.0], 2, 2).is_none());
        assert!(pack_b(&[f32::INFINITY], 1, 1).is_none());
    }
}
