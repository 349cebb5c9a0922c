//! [`pixelgrad_core::Op::Attention`]: `softmax(scale · Q Kᵀ + mask) V` per head without the
//! `S × T` score matrix. Query rows are taken in blocks of up to [`ROWS`] of one head (the
//! work is split across threads by those blocks, as every CPU kernel splits its output, with
//! `par::for_chunks`); each block
//! walks the keys in tiles of [`TILE`]: the tile's scores (a `ROWS × TILE` product, the
//! element type's GEMM), then an online softmax per row (running maximum `m`, running sum
//! `l`, the output accumulator rescaled by `exp(m_old - m_new)` when the maximum grows), then
//! the accumulator gains the tile's weights times its values (a `ROWS × Hv` product). The
//! largest buffer is one block's `ROWS × TILE` scores.

use std::sync::Mutex;

use pixelgrad_core::{Error, Result};

use crate::element::{Element, Float};
use crate::par::for_chunks;

/// Query rows per block (one unit of threaded work). 64 rows and 256-key tiles measured
/// 1.1-1.3x faster than the composition where 32 and 128 measured 0.7-1.0x
/// (`bench/notes/2026-12-07-fused-attention.md`).
const ROWS: usize = 64;
/// Keys per tile.
const TILE: usize = 256;

/// The shapes of one attention call: `q [B, N, S, H]`, `k [B, Nkv, T, H]`, `v [B, Nkv, T, Hv]`.
#[derive(Clone, Copy)]
pub(crate) struct Dims {
    pub b: usize,
    pub n: usize,
    pub s: usize,
    pub h: usize,
    pub nkv: usize,
    pub t: usize,
    pub hv: usize,
}

impl Dims {
    /// From the input shapes (which passed `Op::infer_shape`).
    pub(crate) fn of(q: &[usize], k: &[usize], v: &[usize]) -> Dims {
        Dims { b: q[0], n: q[1], s: q[2], h: q[3], nkv: k[1], t: k[2], hv: v[3] }
    }
}

/// Query rows per block for `s` rows per head: [`ROWS`], or the largest divisor of `s`
/// below it, so that every block lies inside one head.
fn rows_per_block(s: usize) -> usize {
    (1..=ROWS.min(s.max(1))).rev().find(|r| s.is_multiple_of(*r)).unwrap_or(1)
}

/// Runs the op; `mask` is the additive mask and its shape, when there is one.
pub(crate) fn attention<T: Element>(scale: f64, d: Dims, q: &[T], k: &[T], v: &[T], mask: Option<(&[T], &[usize])>) -> Result<Vec<T>> {
    let mut out = vec![T::ZERO; d.b * d.n * d.s * d.hv];
    if out.is_empty() {
        return Ok(out);
    }
    let scale = T::from_f64(scale);
    let ms = mask.map(|(mv, md)| (mv, pixelgrad_core::shape::broadcast_strides4(md)));
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let rows = rows_per_block(d.s);
    let blocks = d.s / rows;
    let group = d.n / d.nkv;
    // Block `u` is rows `(u % blocks) * rows ..` of head `u / blocks` (head = b·N + n).
    for_chunks(&mut out, rows * d.hv, |u, o| {
        let (head, r0) = (u / blocks, (u % blocks) * rows);
        let (bi, ni) = (head / d.n, head % d.n);
        let kv = bi * d.nkv + ni / group;
        let q0 = (head * d.s + r0) * d.h;
        let kh = &k[kv * d.t * d.h..(kv + 1) * d.t * d.h];
        let vh = &v[kv * d.t * d.hv..(kv + 1) * d.t * d.hv];
        let m = ms.map(|(mv, st)| (mv, st, bi, ni, r0));
        if let Err(e) = block(scale, d, &q[q0..q0 + rows * d.h], kh, vh, m, o) {
            if let Ok(mut f) = failed.lock() {
                f.get_or_insert(e);
            }
        }
    });
    if let Some(e) = failed.into_inner().ok().flatten() {
        return Err(e);
    }
    Ok(out)
}

/// The mask of one block: its values, its strides over `[B, N, S, T]`, the block's batch,
/// head and first query row.
type BlockMask<'a, T> = (&'a [T], [usize; 4], usize, usize, usize);

/// One block of query rows `q [rows, H]` of one head against that head's keys `k [T, H]` and
/// values `v [T, Hv]`, into `o [rows, Hv]`. `mask`: values, strides, batch, head, first row.
fn block<T: Element>(scale: T, d: Dims, q: &[T], k: &[T], v: &[T], mask: Option<BlockMask<'_, T>>, o: &mut [T]) -> Result<()> {
    let rows = o.len() / d.hv;
    let neg_inf = -(T::ONE / T::ZERO);
    let mut m = vec![neg_inf; rows];
    let mut l = vec![T::ZERO; rows];
    let mut p = vec![T::ZERO; rows * TILE.min(d.t)];
    let mut pv = vec![T::ZERO; rows * d.hv];
    for x in o.iter_mut() {
        *x = T::ZERO;
    }
    let mut j0 = 0;
    while j0 < d.t {
        let tl = TILE.min(d.t - j0);
        let p = &mut p[..rows * tl];
        // scores of the tile: q [rows, H] times k[j0..j0 + tl]ᵀ (k's rows read as columns)
        T::gemm(rows, d.h, tl, q, d.h, 1, &k[j0 * d.h..(j0 + tl) * d.h], 1, d.h, p)?;
        for r in 0..rows {
            let s = &mut p[r * tl..(r + 1) * tl];
            let mut top = neg_inf;
            for (jj, x) in s.iter_mut().enumerate() {
                *x = *x * scale;
                if let Some((mv, st, bi, ni, r0)) = mask {
                    *x += mv[bi * st[0] + ni * st[1] + (r0 + r) * st[2] + (j0 + jj) * st[3]];
                }
                if *x > top {
                    top = *x;
                }
            }
            let new = if top > m[r] { top } else { m[r] };
            let acc = &mut o[r * d.hv..(r + 1) * d.hv];
            if new == neg_inf {
                // every score so far is -inf: no weight yet (a row that stays so ends as
                // 0 / 0, NaN, as the softmax composite gives)
                for x in s.iter_mut() {
                    *x = if Float::is_nan(*x) { *x } else { T::ZERO };
                }
                continue;
            }
            let alpha = Float::exp(m[r] - new);
            let mut sum = T::ZERO;
            for x in s.iter_mut() {
                *x = Float::exp(*x - new);
                sum += *x;
            }
            l[r] = l[r] * alpha + sum;
            m[r] = new;
            if alpha != T::ONE {
                for a in acc.iter_mut() {
                    *a = *a * alpha;
                }
            }
        }
        // the tile's weights times its values
        T::gemm(rows, tl, d.hv, p, tl, 1, &v[j0 * d.hv..(j0 + tl) * d.hv], d.hv, 1, &mut pv)?;
        for (a, &x) in o.iter_mut().zip(pv.iter()) {
            *a += x;
        }
        j0 += tl;
    }
    for r in 0..rows {
        let inv = T::ONE / l[r];
        for a in &mut o[r * d.hv..(r + 1) * d.hv] {
            *a = *a * inv;
        }
    }
    Ok(())
}
