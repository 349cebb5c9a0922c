//! [`pixelgrad_core::Op::Attention`]: `softmax(scale · Q Kᵀ + mask) V` per head without the
//! `S × T` score matrix. Query rows are taken in blocks of up to [`ROWS`] of one head (the
//! work is split across threads by those blocks, as every CPU kernel splits its output, with
//! `par::for_chunks`); each block
//! walks the keys in tiles of [`TILE`]: the tile's scores (a `ROWS × TILE` product, the
//! element type's GEMM), then an online softmax per row (running maximum `m`, running sum
//! `l`, the output accumulator rescaled by `exp(m_old - m_new)` when the maximum grows), then
//! the accumulator gains the tile's weights times its values (a `ROWS × Hv` product). The
//! largest buffer is one block's `ROWS × TILE` scores.
//!
//! The options ([`AttentionOpts`]) act inside the online softmax: the softcap and the causal
//! exclusion on each score as the options define them, the smooth softmax as a running
//! maximum that starts at 0 and a running sum that starts at 1 (the extra zero logit). With the
//! causal option a block walks only the keys some of its rows see (the tiles wholly above the
//! diagonal, or before a sliding window, are skipped: their weights are exactly 0), except
//! where an excluded key does not weigh 0 (a softcap after the masks) or a row sees no key (it
//! then averages all of them, as the composition does).

use std::sync::Mutex;

use pixelgrad_core::{AttentionOpts, Error, Result};

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

/// The keys `lo..hi` that a block of `rows` query rows from row `r0` walks under `opts` (all
/// `t` of them unless the causal option lets it skip some; see the module docs).
fn key_range(opts: &AttentionOpts, r0: usize, rows: usize, t: usize) -> (usize, usize) {
    let Some(off) = opts.causal else { return (0, t) };
    if opts.softcap.is_some() && opts.softcap_after_masks {
        return (0, t);
    }
    let (first, last) = (r0.saturating_add(off), (r0 + rows - 1).saturating_add(off));
    let lo = opts.window.map_or(0, |w| first.saturating_sub(w));
    // the last row has the latest window: if it sees no key, no skipping
    if opts.window.is_some_and(|w| last.saturating_sub(w) >= t) {
        return (0, t);
    }
    (lo, last.min(t - 1) + 1)
}

/// Runs the op; `mask` is the additive mask and its shape, when there is one.
pub(crate) fn attention<T: Element>(
    opts: &AttentionOpts,
    d: Dims,
    q: &[T],
    k: &[T],
    v: &[T],
    mask: Option<(&[T], &[usize])>,
) -> Result<Vec<T>> {
    let mut out = vec![T::ZERO; d.b * d.n * d.s * d.hv];
    if out.is_empty() {
        return Ok(out);
    }
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
        let m = ms.map(|(mv, st)| (mv, st, bi, ni));
        if let Err(e) = block(opts, d, r0, &q[q0..q0 + rows * d.h], kh, vh, m, o) {
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

/// The mask of one block: its values, its strides over `[B, N, S, T]`, the block's batch
/// and head.
type BlockMask<'a, T> = (&'a [T], [usize; 4], usize, usize);

/// One block of query rows `q [rows, H]` (rows `r0..` of one head) against that head's keys
/// `k [T, H]` and values `v [T, Hv]`, into `o [rows, Hv]`. `mask`: values, strides, batch,
/// head.
#[allow(clippy::too_many_arguments)]
fn block<T: Element>(
    opts: &AttentionOpts,
    d: Dims,
    r0: usize,
    q: &[T],
    k: &[T],
    v: &[T],
    mask: Option<BlockMask<'_, T>>,
    o: &mut [T],
) -> Result<()> {
    let rows = o.len() / d.hv;
    let neg_inf = -(T::ONE / T::ZERO);
    let scale = T::from_f64(f64::from(opts.scale));
    let cap = opts.softcap.map(|c| (T::from_f64(f64::from(c)), T::from_f64(1.0 / f64::from(c))));
    let (cap_before, cap_after) = match cap {
        Some(c) if opts.softcap_after_masks => (None, Some(c)),
        c => (c, None),
    };
    let excluded = T::from_f64(f64::from(AttentionOpts::EXCLUDED));
    // the smooth softmax's zero logit: weight exp(0 - m) in the sum from the start
    let (m0, l0) = if opts.smooth { (T::ZERO, T::ONE) } else { (neg_inf, T::ZERO) };
    let mut m = vec![m0; rows];
    let mut l = vec![l0; rows];
    let (lo, hi) = key_range(opts, r0, rows, d.t);
    let mut p = vec![T::ZERO; rows * TILE.min(hi - lo)];
    let mut pv = vec![T::ZERO; rows * d.hv];
    for x in o.iter_mut() {
        *x = T::ZERO;
    }
    let mut j0 = lo;
    while j0 < hi {
        let tl = TILE.min(hi - j0);
        let p = &mut p[..rows * tl];
        // scores of the tile: q [rows, H] times k[j0..j0 + tl]ᵀ (k's rows read as columns)
        T::gemm(rows, d.h, tl, q, d.h, 1, &k[j0 * d.h..(j0 + tl) * d.h], 1, d.h, p)?;
        for r in 0..rows {
            let s = &mut p[r * tl..(r + 1) * tl];
            let mut top = neg_inf;
            for (jj, x) in s.iter_mut().enumerate() {
                *x = *x * scale;
                if let Some((c, inv)) = cap_before {
                    *x = c * Float::tanh(*x * inv);
                }
                if let Some((mv, st, bi, ni)) = mask {
                    *x += mv[bi * st[0] + ni * st[1] + (r0 + r) * st[2] + (j0 + jj) * st[3]];
                }
                if opts.excludes(r0 + r, j0 + jj) {
                    *x += excluded;
                }
                if let Some((c, inv)) = cap_after {
                    *x = c * Float::tanh(*x * inv);
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
