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
//! the same scales and zero points share one). That is the price of exactness: the PP-OCR
//! classifier's 71 QLinearAdd / QLinearMul nodes hold 4.5 MiB of tables next to 160 KiB of
//! weights.

use pixelgrad_core::Tensor;

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
            let (a, b, za, zb) = (a as f32, b as f32, p.za as f32, p.zb as f32);
            if swapped {
                let fixed = p.zc as f32 - rb.mul_add(zb, ra * za);
                b.mul_add(rb, a.mul_add(ra, fixed))
            } else {
                let fixed = p.zc as f32 - ra.mul_add(za, rb * zb);
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
    let key = format!(
        "{TABLE_PREFIX}{kind:?}:{dt}:{:08x}:{}:{:08x}:{}:{:08x}:{}",
        p.sa.to_bits(),
        p.za,
        p.sb.to_bits(),
        p.zb,
        p.sc.to_bits(),
        p.zc
    );
    // In the output's 8-bit type: 64 KiB on the device where the backend stores 8 bits.
    let host = HostTensor::ints(dt, vec![256 * 256, 1], table(kind, &p, lo, lo + 255));
    let lut = cx.consts.cached(&key, &host)?;
    // 256 · (a - lo) + (b - lo): whole numbers below 2^16, exact on every backend.
    let idx = a.add_scalar(-(lo as f32))?.mul_scalar(256.0)?.add(&b.add_scalar(-(lo as f32))?)?;
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
    fn overflow_and_nan_give_the_minimum() {
        // measured too: uint8 add with C_scale 1e-30 gives 0, int8 mul with C_scale 0 gives -128
        let p = Params { sa: 1.0, za: 0, sb: 1.0, zb: 0, sc: 1e-30, zc: 0 };
        assert_eq!(eval(Kind::Add { swapped: false }, &p, 5, 5, 0, 255), 0);
        let p = Params { sc: 0.0, ..p };
        assert_eq!(eval(Kind::Mul, &p, 0, 0, -128, 127), -128);
    }
}
