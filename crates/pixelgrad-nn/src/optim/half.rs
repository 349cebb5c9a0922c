//! Update rules that survive a device whose f32 tensors are really halves (WebGL's RGBA16F
//! fallback, mediump shaders, the half-precision emulation): every op's result is rounded to
//! ~11 bits and to the half range (largest 65504, smallest subnormal 2^-24 ~ 6e-8), and on
//! an emulated or mediump device so is every uniform (`eps = 1e-8` is 0 there).
//!
//! Two things break plain Adam there (measured on llvmpipe with `GL_EXT_color_buffer_float`
//! hidden, see `docs/src/webgl-precision.md`):
//!
//! - its second moment `v = b2 v + (1 - b2) g^2`: a gradient of 1e-4 squares to 1e-8, below
//!   the smallest half, so `v` is 0 and `m / (sqrt(v) + eps)` divides by ~0. Here the state is
//!   `r = sqrt(v)` instead (the gradient's own range), advanced as a hypotenuse whose squared
//!   terms are ratios in [0, 1] ([`root_mean_square`]), and `eps` becomes a floor on `r`
//!   no smaller than the smallest half;
//! - the master weights: an update below half the weight's ulp (2^-11 near 1) is lost. The
//!   weight is kept as a compensated pair ([`compensated_add`]): the parameter itself (`hi`)
//!   plus the rounding error of its last updates (`lo`, a second half tensor), Kahan's
//!   summation with every operation a rounded half op, which together hold ~22 bits.
//!
//! Every function here is a chain of ordinary tensor ops, so it runs (and is exact to the
//! same algebra) on every backend; the optimizers use it only on devices where
//! [`stores_halves`] measured it is needed ([`HalfDevices`]).

use pixelgrad_core::{Device, Param, Result, Tensor};

/// The smallest positive half (a subnormal, 2^-24): the floor of every denominator here, so
/// that a zero over a zero is 0 rather than NaN, and a floor that survives rounding to half.
pub const HALF_TINY: f32 = 5.960_464_5e-8;

/// Whether `dev` rounds the f32 tensors it stores or computes to ~11 bits (WebGL's RGBA16F
/// fallback, mediump shaders, the half emulation), measured rather than read from the
/// capability text: `1 + 2^-12` written by a device op reads back as 1. Devices at full
/// precision ([`pixelgrad_core::Caps::reduced_precision`] `None`) are not asked (no readback).
pub fn stores_halves(dev: &Device) -> Result<bool> {
    if dev.backend().caps().reduced_precision.is_none() {
        return Ok(false);
    }
    let probe = 1.0 + f32::powi(2.0, -12);
    let v = Tensor::from_vec(dev, &[probe], [1])?.add_scalar(0.0)?.to_vec()?;
    Ok(v.first().is_some_and(|x| *x != probe))
}

/// What [`stores_halves`] answered for each device an optimizer has updated on (by name), so
/// that it is measured once per device rather than once per step.
#[derive(Clone, Debug, Default)]
pub struct HalfDevices(Vec<(String, bool)>);

impl HalfDevices {
    /// Whether `p` lives on a device whose tensors are really halves.
    pub fn reduced(&mut self, p: &Param) -> Result<bool> {
        let dev = p.device();
        let name = dev.name();
        if let Some((_, h)) = self.0.iter().find(|(n, _)| *n == name) {
            return Ok(*h);
        }
        let h = stores_halves(&dev)?;
        self.0.push((name, h));
        Ok(h)
    }
}

/// `sqrt(b2 r^2 + (1 - b2) g^2)` without squaring anything but a ratio in [0, 1]: with
/// `hi = max(r, |g|)`, `lo = min(r, |g|)`, it is `hi * sqrt(w_hi + w_lo (lo / hi)^2)` where
/// `w_hi` is the weight of the larger term. `r` absent is the first step (`r = 0`).
pub fn root_mean_square(r: Option<&Tensor>, g: &Tensor, b2: f32) -> Result<Tensor> {
    let a = g.abs()?;
    let Some(r) = r else {
        // sqrt((1 - b2) g^2) = sqrt(1 - b2) |g|.
        return a.mul_scalar((1.0 - b2).sqrt());
    };
    let hi = r.maximum(&a)?;
    let lo = r.minimum(&a)?;
    let ratio = lo.div(&hi.max_scalar(HALF_TINY)?)?;
    // 1 where the gradient is the larger term, else 0.
    let g_big = a.gt(r)?;
    let r_big = g_big.mul_scalar(-1.0)?.add_scalar(1.0)?;
    let w_hi = g_big.mul_scalar(1.0 - b2)?.add(&r_big.mul_scalar(b2)?)?;
    let w_lo = g_big.mul_scalar(b2)?.add(&r_big.mul_scalar(1.0 - b2)?)?;
    hi.mul(&w_lo.mul(&ratio.square()?)?.add(&w_hi)?.sqrt()?)
}

/// Adam's step direction `m / (r + eps)` with bias corrections, arranged so that nothing
/// leaves the half range: `(m / max(r, eps_c)) * (sqrt(c2) / c1)` with `eps_c = eps sqrt(c2)`
/// floored at [`HALF_TINY`] (the CPU's `m / c1 / (sqrt(v / c2) + eps)` up to `eps` being a
/// floor instead of a sum, which differ only where `r` is within a few `eps` of 0).
pub fn adam_direction(m: &Tensor, r: &Tensor, eps: f32, c1: f32, c2: f32) -> Result<Tensor> {
    let floor = (eps * c2.sqrt()).max(HALF_TINY);
    m.div(&r.max_scalar(floor)?)?.mul_scalar(c2.sqrt() / c1)
}

/// Kahan's compensated sum of a weight and its update, every op rounded: `y = delta + lo`,
/// `hi' = hi + y`, `lo' = y - (hi' - hi)`. `hi' - hi` is exact (Sterbenz) and so is the
/// subtraction, so `hi' + lo'` is `hi + lo + delta` to the rounding of `y`: the part of the
/// update that `hi'` could not hold is carried to the next step instead of being dropped.
pub fn compensated_add(hi: &Tensor, lo: Option<&Tensor>, delta: &Tensor) -> Result<(Tensor, Tensor)> {
    let y = match lo {
        Some(lo) => delta.add(lo)?,
        None => delta.clone(),
    };
    let new_hi = hi.add(&y)?;
    // A fusing backend would otherwise compute `y - ((hi + y) - hi)` in one f32 pass, which is
    // 0: `hi'` must be the value as stored (rounded) before its rounding error is taken. A
    // flush draws the pending chain, and later ops read `hi'` from its texture.
    new_hi.device().flush()?;
    let new_lo = y.sub(&new_hi.sub(hi)?)?;
    Ok((new_hi, new_lo))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad_core::Device;
    use pixelgrad_cpu::CpuBackend;

    fn dev() -> Device {
        Device::new(CpuBackend::new())
    }

    #[test]
    fn the_root_mean_square_is_the_square_root_of_the_second_moment() {
        let d = dev();
        let (b2, rs, gs) = (0.999f32, [0.0f32, 1e-4, 3.0, 2e-3], [1e-4f32, -5.0, 0.0, 2e-3]);
        let r = Tensor::from_vec(&d, &rs, [4]).unwrap();
        let g = Tensor::from_vec(&d, &gs, [4]).unwrap();
        let got = root_mean_square(Some(&r), &g, b2).unwrap().to_vec().unwrap();
        for i in 0..4 {
            let want = (b2 * rs[i] * rs[i] + (1.0 - b2) * gs[i] * gs[i]).sqrt();
            assert!((got[i] - want).abs() <= 1e-6 * want.max(1e-6), "{i}: {} vs {want}", got[i]);
        }
        let first = root_mean_square(None, &g, b2).unwrap().to_vec().unwrap();
        assert!((first[1] - 5.0 * (1.0f32 - b2).sqrt()).abs() < 1e-6, "{first:?}");
    }

    #[test]
    fn a_zero_moment_over_a_zero_root_is_a_zero_step() {
        let d = dev();
        let z = Tensor::from_vec(&d, &[0.0, 0.0], [2]).unwrap();
        let step = adam_direction(&z, &z, 0.0, 0.1, 0.001).unwrap().to_vec().unwrap();
        assert_eq!(step, [0.0, 0.0]);
    }

    #[test]
    fn the_compensation_keeps_the_sum_exact() {
        let d = dev();
        let hi = Tensor::from_vec(&d, &[1.0], [1]).unwrap();
        // Below half of f32's ulp at 1 (6e-8): plain addition drops it every time.
        let tiny = Tensor::from_vec(&d, &[5e-8], [1]).unwrap();
        let (mut h, mut l, mut plain) = (hi.clone(), None, hi);
        for _ in 0..100 {
            plain = plain.add(&tiny).unwrap();
            let (nh, nl) = compensated_add(&h, l.as_ref(), &tiny).unwrap();
            // Read back each step, as an optimizer's `Param::set` settles its values.
            h = Tensor::from_vec(&d, &nh.to_vec().unwrap(), [1]).unwrap();
            l = Some(Tensor::from_vec(&d, &nl.to_vec().unwrap(), [1]).unwrap());
        }
        let total = h.to_vec().unwrap()[0] as f64 + l.unwrap().to_vec().unwrap()[0] as f64;
        assert_eq!(plain.to_vec().unwrap()[0], 1.0);
        assert!((total - (1.0 + 5e-6)).abs() < 1e-9, "{total}");
    }
}
