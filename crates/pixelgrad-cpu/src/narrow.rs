//! The CPU backend's ops on narrow storage (8-bit weights, f16 values): [`Op::MatMulI8`],
//! [`Op::NarrowF16`] and [`Op::Widen`], which `CpuBackend::compute` runs outside the typed
//! kernels (`kernels::run`) because their inputs or results are not this mode's floats.

use pixelgrad_core::kernel::eval::Float;
use pixelgrad_core::{Backend, Error, Op, Result, Shape, Storage};

use crate::{int8, pool, CpuBackend, CpuStorage, Mode};

impl CpuBackend {
    /// [`Op::MatMulI8`]: 8-bit weights times whole numbers of this mode's precision.
    /// With `b_i8` (`Tensor::matmul_i8_packed`) every `b` value is checked to be a whole
    /// number in `[-128, 127]` first: a typed [`Error::Shape`] otherwise, as WebGPU's packed
    /// path refuses it (the same product is computed either way).
    pub(crate) fn matmul_i8(&self, b_i8: bool, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<CpuStorage> {
        let op = Op::MatMulI8 { b_i8 };
        let name = self.name();
        if inputs.len() != 2 {
            return Err(Error::backend("matmul_i8", name, format!("expects 2 inputs, got {}", inputs.len())));
        }
        let (a, b) = (self.mine("matmul_i8", inputs[0])?, self.mine("matmul_i8", inputs[1])?);
        pixelgrad_core::check_execute(&op, &[a.len(), b.len()], shapes, out, &name)?;
        let shape_err = |msg: String| Error::Shape {
            op: "matmul_i8",
            shapes: shapes.iter().map(|s| s.0.clone()).collect(),
            backend: name.clone(),
            msg,
        };
        let (ad, bd, od) = (&shapes[0].0, &shapes[1].0, &out.0);
        if b_i8 {
            // In range, the cast back is exact only for whole numbers (`as` truncates); NaN is
            // out of range. No `trunc`: on x86_64 without SSE4.1 that is a libm call per value.
            let fits = |v: f64| (-128.0..=127.0).contains(&v) && v as i8 as f64 == v;
            let bad = match b {
                // Checked a chunk at a time without stopping early (a vectorised pass; the
                // per-value test above was 6% of the int8 PP-OCR classifier's run), the bad
                // value looked for only when there is one.
                CpuStorage::F32(bv) if bv.chunks(256).all(|c| c.iter().fold(true, |ok, &v| ok & whole_i8(v))) => None,
                CpuStorage::F32(bv) => bv.iter().map(|&v| v as f64).find(|&v| !fits(v)),
                CpuStorage::F64(bv) => bv.iter().copied().find(|&v| !fits(v)),
                _ => None,
            };
            if let Some(v) = bad {
                return Err(shape_err(format!("input 1 holds {v}; matmul_i8_packed takes whole numbers in [-128, 127]")));
            }
        }
        macro_rules! with_b {
            ($a:expr) => {
                match (b, self.mode) {
                    (CpuStorage::F32(bv), Mode::Fast) => CpuStorage::F32(int8::matmul_i8($a, ad, bv, bd, od)?),
                    (CpuStorage::F64(bv), Mode::Reference) => CpuStorage::F64(int8::matmul_i8($a, ad, bv, bd, od)?),
                    (other, _) => return Err(shape_err(format!("input 1 has {} storage of this mode; it must be f32", other.dtype()))),
                }
            };
        }
        Ok(match a {
            CpuStorage::I8(av) => with_b!(av),
            CpuStorage::U8(av) => with_b!(av),
            other => return Err(shape_err(format!("input 0 has {} storage; it must be 8-bit (i8 or u8)", other.dtype()))),
        })
    }

    /// [`Op::NarrowF16`]: this mode's values rounded to the nearest f16 (ties to even, one
    /// rounding from f32 or f64), stored as f16.
    pub(crate) fn narrow_f16(&self, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<CpuStorage> {
        let op = Op::NarrowF16;
        let name = self.name();
        if inputs.len() != 1 {
            return Err(Error::backend("narrow_f16", name, format!("expects 1 input, got {}", inputs.len())));
        }
        let x = self.mine("narrow_f16", inputs[0])?;
        pixelgrad_core::check_execute(&op, &[x.len()], shapes, out, &name)?;
        let n = out.numel();
        Ok(match x {
            CpuStorage::F32(v) => CpuStorage::F16(v[..n].iter().map(|&x| half::f16::from_f32(x)).collect()),
            CpuStorage::F64(v) => CpuStorage::F16(v[..n].iter().map(|&x| half::f16::from_f64(x)).collect()),
            other => {
                return Err(Error::backend("narrow_f16", name, format!("input has {} storage; it must be f32", other.dtype())));
            }
        })
    }

    /// [`Op::Narrow8`]: this mode's values rounded to the nearest integer (ties to even),
    /// saturated to the 8-bit type's range, NaN as 0, stored one byte per element.
    pub(crate) fn narrow8(&self, signed: bool, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<CpuStorage> {
        let op = Op::Narrow8 { signed };
        let name = self.name();
        if inputs.len() != 1 {
            return Err(Error::backend("narrow8", name, format!("expects 1 input, got {}", inputs.len())));
        }
        let x = self.mine("narrow8", inputs[0])?;
        pixelgrad_core::check_execute(&op, &[x.len()], shapes, out, &name)?;
        let n = out.numel();
        // `as` saturates float-to-integer casts and sends NaN to 0: exactly this op's rule once
        // the value is rounded. Clamping to the type's (whole) bounds first gives the same
        // result (both steps are monotone and the bounds are whole numbers) and keeps the
        // rounding within `Float::round_ties_even`'s exact range without libm: std's
        // `round_ties_even` is a call to `rintf` per value on x86_64 without SSE4.1, which
        // took 3.6% of the int8 PP-OCR classifier's run (perf, 1 thread) in this one loop.
        macro_rules! store {
            ($v:expr) => {
                if signed {
                    CpuStorage::I8($v[..n].iter().map(|&x| Float::round_ties_even(x.clamp(-128.0, 127.0)) as i8).collect())
                } else {
                    CpuStorage::U8($v[..n].iter().map(|&x| Float::round_ties_even(x.clamp(0.0, 255.0)) as u8).collect())
                }
            };
        }
        Ok(match x {
            // The same values, by a formula that vectorises (the saturating `as` above is a
            // scalar convert and compare per value: 4-5% of the int8 PP-OCR classifier's run).
            CpuStorage::F32(v) if signed => CpuStorage::I8(v[..n].iter().map(|&x| narrow_f32(x, -128.0, 127.0) as i8).collect()),
            CpuStorage::F32(v) => CpuStorage::U8(v[..n].iter().map(|&x| narrow_f32(x, 0.0, 255.0) as u8).collect()),
            CpuStorage::F64(v) => store!(v),
            other => {
                return Err(Error::Shape {
                    op: "narrow8",
                    shapes: shapes.iter().map(|s| s.0.clone()).collect(),
                    backend: name,
                    msg: format!("input 0 has {} storage; it must be f32", other.dtype()),
                })
            }
        })
    }

    /// [`Op::Widen`]: 8-bit or f16 storage to this mode's precision (exact in both).
    pub(crate) fn widen(&self, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<CpuStorage> {
        let op = Op::Widen;
        let name = self.name();
        if inputs.len() != 1 {
            return Err(Error::backend("widen", name, format!("expects 1 input, got {}", inputs.len())));
        }
        let x = self.mine("widen", inputs[0])?;
        pixelgrad_core::check_execute(&op, &[x.len()], shapes, out, &name)?;
        let n = out.numel();
        macro_rules! conv {
            ($v:expr, $f:expr) => {
                match self.mode {
                    // Into a recycled buffer (`pool`; every element is written): a fresh `Vec`
                    // per call was the allocator's zeroed pages, and the collect around it 7%
                    // of the int8 PP-OCR classifier's run (perf, 1 thread).
                    Mode::Fast => {
                        let mut out = pool::take(n);
                        for (d, &x) in out.iter_mut().zip(&$v[..n]) {
                            *d = $f(x) as f32;
                        }
                        CpuStorage::F32(out)
                    }
                    Mode::Reference => CpuStorage::F64($v[..n].iter().map(|&x| $f(x)).collect()),
                }
            };
        }
        Ok(match x {
            CpuStorage::I8(v) => conv!(v, |x: i8| x as f64),
            CpuStorage::U8(v) => conv!(v, |x: u8| x as f64),
            // f16 -> f64 -> f32 is exact: every f16 (NaN payloads aside) is an f32.
            CpuStorage::F16(v) => match self.mode {
                // Branch-free so that it vectorises (`crate::f16`): as fast as a copy.
                Mode::Fast => CpuStorage::F32(crate::f16::widen_f16(&v[..n])),
                Mode::Reference => CpuStorage::F64(v[..n].iter().map(|x| x.to_f64()).collect()),
            },
            other => {
                return Err(Error::Shape {
                    op: "widen",
                    shapes: shapes.iter().map(|s| s.0.clone()).collect(),
                    backend: name,
                    msg: format!("input 0 has {} storage; it must be i8, u8 or f16", other.dtype()),
                })
            }
        })
    }
}

/// `round_ties_even(clamp(x, lo, hi))`, NaN as 0, for whole `lo`, `hi` in `[-128, 255]`: what
/// [`CpuBackend::narrow8`] stores, without a branch or a saturating conversion. The clamped
/// value plus `1.5 · 2^23` lies in `[2^23, 2^24)`, where an `f32`'s last bit is worth 1: the
/// addition rounds it to a whole number, ties to even (the default rounding), and that whole
/// number is the sum's bits minus the constant's.
#[inline(always)]
fn narrow_f32(x: f32, lo: f32, hi: f32) -> i32 {
    const C: f32 = 12_582_912.0;
    // NaN -> 0, then the bounds.
    let x = if x.is_nan() { 0.0 } else { x };
    let x = if x > lo { x } else { lo };
    let x = if x < hi { x } else { hi };
    (x + C).to_bits() as i32 - C.to_bits() as i32
}

/// `x` is a whole number in `[-128, 127]` (false for NaN), as [`CpuBackend::matmul_i8`]'s
/// packed product requires, by comparisons alone (no branch, no conversion): within the
/// bounds, adding and subtracting `1.5 · 2^23` rounds to a whole number, which equals `x`
/// exactly when `x` is one.
#[inline(always)]
fn whole_i8(x: f32) -> bool {
    const C: f32 = 12_582_912.0;
    (-128.0..=127.0).contains(&x) & ((x + C) - C == x)
}
