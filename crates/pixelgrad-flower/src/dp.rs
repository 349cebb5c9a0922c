//! Differential privacy with Flower's definitions, computed on the device.
//!
//! Flower (`flwr.supercore.differential_privacy`, used by `fixedclipping_mod` and `LocalDpMod`):
//!
//! - update `u = new - old` per array; `norm = sqrt(sum_i ||u_i||^2)` over all arrays;
//!   `scale = min(1, C / norm)`; sent parameters `old + u * scale` (FlatClip, arXiv:1710.06963).
//!   Client-side fixed clipping does only this; the server wrapper
//!   `DifferentialPrivacyClientSideFixedClipping` sends `C` as `clipping_norm` in the train
//!   config and adds the noise to the aggregate.
//! - local DP additionally adds `N(0, s^2)` to every sent parameter, with
//!   `s = sensitivity * sqrt(2 ln(1.25 / delta)) / epsilon`.
//!
//! Here the update, the norm and the scale are tensor ops on the model's device: only the
//! result is read back, once, with the parameters. The noise is added on the host to what is
//! read back, from a cryptographically seeded generator ([`crate::noise`]).

use pixelgrad_core::{Result, Tensor};

/// Client-side local DP settings (Flower's `LocalDpMod(clipping_norm, sensitivity, epsilon, delta)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalDp {
    pub clipping_norm: f64,
    pub sensitivity: f64,
    pub epsilon: f64,
    pub delta: f64,
}

impl LocalDp {
    /// Checks the ranges `LocalDpMod` checks (and that epsilon and delta give a finite noise).
    pub fn new(
        clipping_norm: f64,
        sensitivity: f64,
        epsilon: f64,
        delta: f64,
    ) -> crate::Result<Self> {
        let bad = |m: &str| Err(crate::FlowerError::Invalid(format!("local DP: {m}")));
        if !(clipping_norm > 0.0 && clipping_norm.is_finite()) {
            return bad("the clipping norm must be a positive number");
        }
        if !(sensitivity >= 0.0 && sensitivity.is_finite()) {
            return bad("the sensitivity must be a non-negative number");
        }
        if !(epsilon > 0.0 && epsilon.is_finite()) {
            return bad("epsilon must be a positive number");
        }
        if !(delta > 0.0 && delta < 1.0) {
            return bad("delta must be in (0, 1)");
        }
        Ok(LocalDp {
            clipping_norm,
            sensitivity,
            epsilon,
            delta,
        })
    }
    /// The noise standard deviation `LocalDpMod` uses.
    pub fn std_dev(&self) -> f64 {
        local_dp_std(self.sensitivity, self.epsilon, self.delta)
    }
}

/// `sensitivity * sqrt(2 ln(1.25 / delta)) / epsilon`.
pub fn local_dp_std(sensitivity: f64, epsilon: f64, delta: f64) -> f64 {
    sensitivity * (2.0 * (1.25 / delta).ln()).sqrt() / epsilon
}

/// The L2 norm of `new - old` over all arrays, as a device scalar.
pub fn update_norm(new: &[Tensor], old: &[Tensor]) -> Result<Tensor> {
    let mut sumsq: Option<Tensor> = None;
    for (n, o) in new.iter().zip(old) {
        let s = n.sub(o)?.square()?.sum_all()?;
        sumsq = Some(match sumsq {
            Some(acc) => acc.add(&s)?,
            None => s,
        });
    }
    match sumsq {
        Some(s) => s.sqrt(),
        None => Tensor::scalar(
            new.first()
                .or(old.first())
                .map(|t| t.device())
                .ok_or_else(|| pixelgrad_core::Error::invalid("dp", "no parameters to clip"))?,
            0.0,
        ),
    }
}

/// `old + (new - old) * min(1, clip / norm)` per array, plus the norm before clipping (a device
/// scalar). A zero update stays zero (`clip / 0` is infinite, the scale 1).
pub fn clip_update(new: &[Tensor], old: &[Tensor], clip: f32) -> Result<(Vec<Tensor>, Tensor)> {
    if new.len() != old.len() {
        return Err(pixelgrad_core::Error::invalid(
            "dp",
            format!(
                "{} new arrays for {} reference arrays",
                new.len(),
                old.len()
            ),
        ));
    }
    let norm = update_norm(new, old)?;
    let scale = norm
        .max_scalar(f32::MIN_POSITIVE)?
        .recip()?
        .mul_scalar(clip)?
        .min_scalar(1.0)?;
    let mut out = Vec::with_capacity(new.len());
    for (n, o) in new.iter().zip(old) {
        out.push(o.add(&n.sub(o)?.mul(&scale)?)?);
    }
    Ok((out, norm))
}
