//! com.microsoft `QLinearAdd` and `QLinearMul` as onnxruntime computes them, bit for bit.
//!
//! These operators have no exact definition beyond onnxruntime's kernels, and the kernels'
//! `f32` arithmetic decides every result that lands near a rounding tie (common: quantisers
//! pick scales whose ratios are powers of two, so `x.5` comes up on many elements). What
//! onnxruntime 1.20's x86-64 kernels compute, measured with single-node models over every
//! pair of 8-bit inputs (scales and zero points from real models and random ones):
//!
//! - `QLinearAdd` (AVX2 kernel; FMA3 machines): `rA = sa / sc`, `rB = sb / sc` in `f32`,
//!   `fixed = zc - fma(rA, za, rB · zb)`, `y = fma(A, rA, fma(B, rB, fixed))` on the raw
//!   integers `A`, `B`, each `fma` rounded once. Where `A` is one value per run of the
//!   innermost output axis (a scalar `A`, or `A` broadcast along that axis) onnxruntime swaps
//!   the operands: `fixed = zc - fma(rB, zb, rA · za)`, `y = fma(B, rB, fma(A, rA, fixed))`.
//! - `QLinearMul`: `m = sa · sb / sc` in `f32` (in that order),
//!   `y = m · ((A - za)(B - zb)) + zc`, two roundings (the product of the centred integers is
//!   exact).
//!
//! then `round_half_even(y)`, saturated to the 8-bit type (a `y` outside `i32`, or NaN, gives
//! the type's minimum: the `cvtps2dq` the kernels convert with returns `i32::MIN` there).
//!
//! No device computes this from the formula reliably: WebGPU's `fma` may or may not be fused,
//! GLSL ES 3.00 has none, and shader compilers may contract `a · b + c` where onnxruntime does
//! not. But the output depends only on the pair of 8-bit inputs, so the host evaluates the
//! formula for all 256 × 256 pairs once per set of scales and zero points, and the device
//! looks the result up ([`Tensor::gather`] with index `256 · (A - min) + (B - min)`, exact in
//! `f32`). Every backend then gives onnxruntime's results. The tables hold the output's 8-bit
//! type: 64 KiB each on backends with 8-bit storage (CPU, WebGPU, WebGL2, WebGL1's byte
//! textures), 256 KiB elsewhere, cached per session by the values they depend on (nodes with
//! the same scales and zero points share one). That is the price of exactness on the GPUs:
//! the PP-OCR classifier's 71 QLinearAdd / QLinearMul nodes hold 4.5 MiB of tables next to
//! 160 KiB of weights.
//!
//! The CPU backend evaluates every `f32` operation of the fused elementwise chain exactly as
//! IEEE 754 rounds it (no contraction, no reordering), so there a formula in plain `f32`
//! operations gives predictable bits: [`direct`], the products and sums above without the
//! fused multiply-adds (`QLinearMul`'s formula has none: it is onnxruntime's, operation for
//! operation). When the scales make the unfused formula agree with onnxruntime's on every
//! one of the 65,536 input pairs ([`direct_is_exact`], checked on the host when the node is
//! traced), the CPU computes it in the elementwise chain, with the rounding and saturation of
//! the 8-bit store ([`Tensor::narrow8`]), instead of gathering from a table: a quarter of the
//! int8 PP-OCR classifier's time went to those gathers. Scales whose unfused sums land on the
//! other side of a rounding tie than onnxruntime's (the hard-swish pattern below) keep the
//! table.

use std::ops::Range;

use pixelgrad_core::{BackendKind, Tensor};

use super::context::{Cx, V};
use crate::host::{DType, HostTensor};
use crate::Result;

/// Cache-key prefix of the lookup tables: the session reports their bytes apart from the
/// weights ([`crate::Session::device_table_bytes`]).
pub const TABLE_PREFIX: &str = "#qlinear-table:";

/// The arithmetic of one operator, from its scales and zero points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub sa: f32,
    pub za: i32,
    pub sb: f32,
    pub zb: i32,
    pub sc: f32,
    pub zc: i32,
}

/// Which formula: `QLinearAdd` (with the operands swapped where onnxruntime swaps them) or
/// `QLinearMul`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Add { swapped: bool },
    Mul,
}

/// The result for one pair of 8-bit inputs `a`, `b` (as integers), saturated to `[lo, hi]`.
pub fn eval(kind: Kind, p: &Params, a: i32, b: i32, lo: i32, hi: i32) -> i32 {
    let y = match kind {
        Kind::Add { swapped } => {
            let (ra, rb) = (p.sa / p.sc, p.sb / p.sc);
            let (a, b, fixed) = (a as f32, b as f32, add_fixed(p, swapped));
            if swapped {
                b.mul_add(rb, a.mul_add(ra, fixed))
            } else {
                a.mul_add(ra, b.mul_add(rb, fixed))
            }
        }
        Kind::Mul => {
            let m = p.sa * p.sb / p.sc;
            m * (((a - p.za) * (b - p.zb)) as f32) + p.zc as f32
        }
    };
    // i32::MIN where cvtps2dq overflows (|y| >= 2^31) or y is NaN, then saturated.
    let q = if y.abs() < 2_147_483_648.0 { y.round_ties_even() as i32 } else { i32::MIN };
    q.clamp(lo, hi)
}

/// The formula the CPU evaluates instead of the table: `QLinearMul`'s as [`eval`] has it
/// (`m · ((a - za)(b - zb)) + zc`, each operation rounded once), `QLinearAdd`'s with the two
/// `fma`s unfused (`a · rA + (b · rB + fixed)`, swapped: `b · rB + (a · rA + fixed)`; `fixed`
/// as [`eval`] computes it, a constant). Before rounding to a whole number.
pub fn direct(kind: Kind, p: &Params, a: f32, b: f32) -> f32 {
    match kind {
        Kind::Add { swapped } => {
            let (ra, rb) = (p.sa / p.sc, p.sb / p.sc);
            let fixed = add_fixed(p, swapped);
            if swapped {
                b * rb + (a * ra + fixed)
            } else {
                a * ra + (b * rb + fixed)
            }
        }
        Kind::Mul => ((a - p.za as f32) * (b - p.zb as f32)) * (p.sa * p.sb / p.sc) + p.zc as f32,
    }
}

/// `QLinearAdd`'s constant term, `zc - fma(rA, za, rB · zb)` (operands swapped: `zc -
/// fma(rB, zb, rA · za)`).
fn add_fixed(p: &Params, swapped: bool) -> f32 {
    let (ra, rb) = (p.sa / p.sc, p.sb / p.sc);
    let (za, zb) = (p.za as f32, p.zb as f32);
    if swapped {
        p.zc as f32 - rb.mul_add(zb, ra * za)
    } else {
        p.zc as f32 - ra.mul_add(za, rb * zb)
    }
}

/// Whether [`direct`], rounded half to even and saturated to `[lo, hi]` as the 8-bit store
/// does (and never NaN), gives [`eval`]'s result for every pair of inputs `a` in `a_vals`, `b` in
/// `b_vals`.
pub fn direct_is_exact(kind: Kind, p: &Params, a_vals: Range<i32>, b_vals: Range<i32>, lo: i32, hi: i32) -> bool {
    a_vals
        .into_iter()
        .all(|a| b_vals.clone().all(|b| store(direct(kind, p, a as f32, b as f32), lo, hi) == Some(eval(kind, p, a, b, lo, hi))))
}

/// At most this many corrections ([`corrections`]) replace a table; each costs the CPU three
/// elementwise operations per value in the fused chain.
const MAX_STEPS: usize = 4;

/// The rounding and saturation of the 8-bit store ([`Tensor::narrow8`]) or of rounding and
/// clamping in f32 (the same whole numbers); `None` for NaN, where those two differ (the
/// direct formula is not taken then).
fn store(y: f32, lo: i32, hi: i32) -> Option<i32> {
    (!y.is_nan()).then(|| y.round_ties_even().clamp(lo as f32, hi as f32) as i32)
}

/// Steps `(t, d)` that make the CPU's formula exact where one operand is a constant `c`:
/// `direct + Σ d · [x > t]` (`x` the other operand, each term added in turn), rounded and
/// saturated as the 8-bit store does, gives [`eval`]'s result for each of the 256 values of
/// `x`. Empty when [`direct`] alone does; `None` when more than [`MAX_STEPS`] steps would be
/// needed or the corrected sums do not check out (the check simulates the CPU's `f32`
/// operations exactly). Where the direct sum misses, it misses by one at a rounding tie
/// (onnxruntime's fused sum lands on the other side of it), typically at one value of `x`
/// (hard-swish's `x + 3` at `x = x_zero_point`, where the exact sum is a half-integer), so
/// two steps set it right without a table.
pub fn corrections(kind: Kind, p: &Params, c: i32, const_is_a: bool, lo: i32, hi: i32) -> Option<Vec<(f32, f32)>> {
    let at = |x: i32| if const_is_a { (c, x) } else { (x, c) };
    let y = |x: i32| {
        let (a, b) = at(x);
        direct(kind, p, a as f32, b as f32)
    };
    let want = |x: i32| {
        let (a, b) = at(x);
        eval(kind, p, a, b, lo, hi)
    };
    // Where the direct sum misses, move it onto the wanted whole number (`want - y`: near a
    // tie, so about ±0.5, and exact); elsewhere leave it. The steps switch those moves on and
    // off between consecutive values of `x`.
    let mut steps = Vec::new();
    let mut prev = 0.0f32;
    for x in lo..lo + 256 {
        let w = want(x);
        let fix = if store(y(x), lo, hi) == Some(w) { 0.0 } else { w as f32 - y(x) };
        if fix != prev {
            steps.push((x as f32 - 0.5, fix - prev));
            prev = fix;
        }
    }
    if steps.len() > MAX_STEPS {
        return None;
    }
    let exact = (lo..lo + 256).all(|x| {
        let corrected = steps.iter().fold(y(x), |acc, &(t, d)| acc + if x as f32 > t { d } else { 0.0 });
        store(corrected, lo, hi) == Some(want(x))
    });
    exact.then_some(steps)
}

/// All 65536 results, indexed by `256 · (a - lo) + (b - lo)`.
pub fn table(kind: Kind, p: &Params, lo: i32, hi: i32) -> Vec<i64> {
    let mut t = Vec::with_capacity(256 * 256);
    for a in lo..lo + 256 {
        for b in lo..lo + 256 {
            t.push(eval(kind, p, a, b, lo, hi) as i64);
        }
    }
    t
}

/// onnxruntime swaps `QLinearAdd`'s operands when `A` is one value per run of the innermost
/// output axis of more than one element (or the output has one element): its broadcasting
/// loop calls the kernel with a scalar `A` there.
pub fn add_swaps(a: &[usize], b: &[usize]) -> bool {
    let rank = a.len().max(b.len());
    let dim = |s: &[usize], k: usize| if k + s.len() >= rank { s[k + s.len() - rank] } else { 1 };
    match (0..rank).rev().find(|&k| dim(a, k).max(dim(b, k)) > 1) {
        None => true,
        Some(k) => dim(a, k) == 1,
    }
}

/// `QLinearAdd` / `QLinearMul` (inputs `A, A_scale, A_zero_point, B, B_scale, B_zero_point,
/// C_scale, C_zero_point`) as whole numbers in the output type's range, by table lookup.
/// `None` where the scales or zero points are not constant scalars (computed on the device,
/// say): the caller computes those in float.
pub fn run(cx: &Cx, ins: &[Option<V>], mul: bool, dt: DType) -> Result<Option<Tensor>> {
    let lo = match dt {
        DType::U8 => 0,
        DType::I8 => -128,
        _ => return Ok(None),
    };
    for i in [0, 3] {
        if cx.v(ins, i)?.dtype() != dt {
            return Err(cx.err(format!("input {i} is {}, the output {dt}: QLinearAdd/Mul take one 8-bit type", cx.v(ins, i)?.dtype())));
        }
    }
    let scalar = |i: usize, default: Option<f64>| -> Option<f64> {
        match cx.opt(ins, i) {
            None => default,
            Some(v) => v.as_host().filter(|h: &&HostTensor| h.numel() == 1).map(|h| h.to_f64()[0]),
        }
    };
    let (Some(sa), Some(za), Some(sb), Some(zb), Some(sc), Some(zc)) =
        (scalar(1, None), scalar(2, Some(0.0)), scalar(4, None), scalar(5, Some(0.0)), scalar(6, None), scalar(7, Some(0.0)))
    else {
        return Ok(None);
    };
    let p = Params { sa: sa as f32, za: za as i32, sb: sb as f32, zb: zb as i32, sc: sc as f32, zc: zc as i32 };
    let (a, b) = (cx.t(ins, 0)?, cx.t(ins, 3)?);
    let kind = if mul { Kind::Mul } else { Kind::Add { swapped: add_swaps(a.dims(), b.dims()) } };
    // A constant operand of one value (hard-swish's `+ 3`): the result depends on the other
    // input alone, and only that input's 256 values need checking or tabulating.
    let one_value = |i: usize| cx.opt(ins, i).and_then(|v| v.as_host()).filter(|h| h.numel() == 1).map(|h| h.to_f64()[0] as i32);
    // (The other operand's shape is then the result's: a constant of higher rank would add axes.)
    let (const_a, const_b) = (one_value(0).filter(|_| a.rank() <= b.rank()), one_value(3).filter(|_| b.rank() <= a.rank()));
    let all = lo..lo + 256;
    // The CPU's exact f32 arithmetic, stored through narrow8 (which rounds and saturates).
    let steps = match (const_a, const_b) {
        _ if cx.dev().kind() != BackendKind::Cpu => None,
        (_, Some(c)) => corrections(kind, &p, c, false, lo, lo + 255),
        (Some(c), None) => corrections(kind, &p, c, true, lo, lo + 255),
        (None, None) => direct_is_exact(kind, &p, all.clone(), all.clone(), lo, lo + 255).then(Vec::new),
    };
    if let Some(steps) = steps {
        let mut y = match kind {
            Kind::Mul => a.add_scalar(-(p.za as f32))?.mul(&b.add_scalar(-(p.zb as f32))?)?.affine(p.sa * p.sb / p.sc, p.zc as f32)?,
            Kind::Add { swapped } => {
                let (ra, rb) = (p.sa / p.sc, p.sb / p.sc);
                let fixed = add_fixed(&p, swapped);
                if swapped {
                    b.mul_scalar(rb)?.add(&a.affine(ra, fixed)?)?
                } else {
                    a.mul_scalar(ra)?.add(&b.affine(rb, fixed)?)?
                }
            }
        };
        let x = if const_b.is_some() { &a } else { &b };
        for (t, d) in steps {
            y = y.add(&x.gt_scalar(t)?.mul_scalar(d)?)?;
        }
        // Results kept in f32 are clamped, not rounded, by the caller (8-bit ones round as
        // they are stored): the same whole number either way.
        if !cx.consts.int8_activations() {
            y = y.round_even()?;
        }
        return Ok(Some(y));
    }
    let key = format!(
        "{TABLE_PREFIX}{kind:?}:{dt}:{:08x}:{}:{:08x}:{}:{:08x}:{}",
        p.sa.to_bits(),
        p.za,
        p.sb.to_bits(),
        p.zb,
        p.sc.to_bits(),
        p.zc
    );
    // In the output's 8-bit type: 64 KiB (256 bytes with a constant operand) on the device
    // where the backend stores 8 bits.
    let (key, values, idx) = match (const_a, const_b) {
        (_, Some(vb)) => {
            let t: Vec<i64> = all.map(|x| eval(kind, &p, x, vb, lo, lo + 255) as i64).collect();
            (format!("{key}:b={vb}"), t, a.add_scalar(-(lo as f32))?)
        }
        (Some(va), None) => {
            let t: Vec<i64> = all.map(|x| eval(kind, &p, va, x, lo, lo + 255) as i64).collect();
            (format!("{key}:a={va}"), t, b.add_scalar(-(lo as f32))?)
        }
        // 256 · (a - lo) + (b - lo): whole numbers below 2^16, exact on every backend.
        (None, None) => {
            let idx = a.add_scalar(-(lo as f32))?.mul_scalar(256.0)?.add(&b.add_scalar(-(lo as f32))?)?;
            (key, table(kind, &p, lo, lo + 255), idx)
        }
    };
    let host = HostTensor::ints(dt, vec![values.len(), 1], values);
    let lut = cx.consts.cached(&key, &host)?;
    let dims = idx.dims().to_vec();
    let n = idx.numel();
    Ok(Some(lut.gather(0, &idx.reshape([n, 1])?)?.reshape(dims)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    // onnxruntime 1.20.1 (x86-64, AVX2 + FMA3), single-node models: the hard-swish pattern
    // (B_scale / C_scale = 0.5 exactly) puts many sums on ties.
    const HSWISH: Params = Params { sa: 0.074_303_75, za: 109, sb: 0.011_764_706, zb: 0, sc: 0.023_529_412, zc: 0 };

    #[test]
    fn add_rounds_ties_as_onnxruntime() {
        // measured: (a, b) -> onnxruntime's QLinearAdd output for HSWISH. At a = za the exact
        // sum is b / 2: (109, 3) is 1.5, which rounds to 2, but onnxruntime's fused sum lands
        // just below the tie (as do 9.5 and 49.5); float dequantisation gives 2, 10 and 50.
        let k = Kind::Add { swapped: false };
        let cases = [(0, 0, 0), (109, 0, 0), (109, 3, 1), (109, 19, 9), (109, 99, 49), (109, 255, 128), (110, 255, 131), (120, 33, 51)];
        for &(a, b, want) in &cases {
            assert_eq!(eval(k, &HSWISH, a, b, 0, 255), want, "a={a} b={b}");
        }
    }

    #[test]
    fn broadcast_decides_the_operand_order() {
        assert!(!add_swaps(&[2, 3], &[2, 3]));
        assert!(add_swaps(&[1], &[2, 3]));
        assert!(add_swaps(&[1], &[1]));
        assert!(add_swaps(&[2, 1], &[2, 3]));
        assert!(!add_swaps(&[2, 3], &[2, 1]));
        assert!(!add_swaps(&[1, 3], &[2, 3]));
        assert!(add_swaps(&[1, 4, 1, 1], &[1, 4, 5, 5]));
        assert!(!add_swaps(&[4, 5, 1], &[4, 5, 1]));
    }

    #[test]
    fn the_direct_formula_is_taken_only_where_every_pair_agrees() {
        // The hard-swish sums above land on ties the unfused formula rounds the other way.
        assert!(!direct_is_exact(Kind::Add { swapped: false }, &HSWISH, 0..256, 0..256, 0, 255));
        let (a, b) = (109, 3);
        let y = direct(Kind::Add { swapped: false }, &HSWISH, a as f32, b as f32).round_ties_even() as i32;
        assert_ne!(y, eval(Kind::Add { swapped: false }, &HSWISH, a, b, 0, 255));
        // Power-of-two ratios and no zero-point products: every step is exact, fused or not.
        let p = Params { sa: 0.5, za: 0, sb: 0.25, zb: 0, sc: 1.0, zc: 3 };
        assert!(direct_is_exact(Kind::Add { swapped: true }, &p, 0..256, 0..256, 0, 255));
        // QLinearMul's formula is onnxruntime's, operation for operation: only saturation
        // past i32 (the kernel's i32::MIN) tells them apart.
        assert!(direct_is_exact(Kind::Mul, &HSWISH, 0..256, 0..256, 0, 255));
        assert!(direct_is_exact(Kind::Mul, &HSWISH, -128..128, -128..128, -128, 127));
        let huge = Params { sc: 1e-30, ..HSWISH };
        assert!(!direct_is_exact(Kind::Mul, &huge, 0..256, 0..256, 0, 255));
    }

    #[test]
    fn steps_correct_the_unfused_sums_where_they_miss_a_tie() {
        // Every constant b at the hard-swish scales: where steps are found, the corrected
        // unfused sums give onnxruntime's results for all 256 values of a; some constants need
        // steps (the fused sum lands on the other side of a tie), some none.
        let k = Kind::Add { swapped: false };
        let (mut corrected, mut plain) = (0, 0);
        for c in 0..256 {
            let Some(steps) = corrections(k, &HSWISH, c, false, 0, 255) else { continue };
            if steps.is_empty() {
                plain += 1;
            } else {
                corrected += 1;
            }
            for a in 0..256 {
                let y = steps.iter().fold(direct(k, &HSWISH, a as f32, c as f32), |acc, &(t, d)| acc + if a as f32 > t { d } else { 0.0 });
                assert_eq!(store(y, 0, 255), Some(eval(k, &HSWISH, a, c, 0, 255)), "a={a} b={c}");
            }
        }
        assert!(corrected > 0 && plain > 0, "{corrected} corrected, {plain} exact unfused");
        // The constant 255 (hard-swish's 3 at this scale) needs none.
        assert_eq!(corrections(k, &HSWISH, 255, false, 0, 255), Some(vec![]));
        // Saturation past i32 (the kernel's minimum) is no tie: too many steps, or none that work.
        let huge = Params { sc: 1e-30, ..HSWISH };
        assert_eq!(corrections(Kind::Mul, &huge, 200, true, 0, 255), None);
    }

    #[test]
    fn overflow_and_nan_give_the_minimum() {
        // measured too: uint8 add with C_scale 1e-30 gives 0, int8 mul with C_scale 0 gives -128
        let p = Params { sa: 1.0, za: 0, sb: 1.0, zb: 0, sc: 1e-30, zc: 0 };
        assert_eq!(eval(Kind::Add { swapped: false }, &p, 5, 5, 0, 255), 0);
        let p = Params { sc: 0.0, ..p };
        assert_eq!(eval(Kind::Mul, &p, 0, 0, -128, 127), -128);
    }
}
