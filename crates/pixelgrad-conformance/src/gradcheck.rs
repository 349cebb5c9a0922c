//! Finite-difference gradient checks in f64 on the reference backend.
//!
//! For inputs `x_1..x_n` and `y = f(x)`, the scalar checked is `L = sum(y * r)` with a fixed
//! random `r` (so every output element counts with its own weight). Autodiff's `dL/dx` is
//! compared with central differences
//!
//! ```text
//! dL/dx_j ≈ (L(x + eps e_j) - L(x - eps e_j)) / (2 eps)
//! ```
//!
//! whose truncation error is `O(eps^2)` and round-off about `1e-16 |L| / eps`; with
//! `eps = 1e-6` both are far below the `1e-6` an exact gradient rule is expected to meet.

use pixelgrad_core::{no_grad, Error, Result, Shape, Tensor};

use crate::harness::{reference_device, seed_of, Gen};

/// Default step of the central differences.
pub const FD_EPS: f64 = 1e-6;

/// The error measure: relative for gradients above 1 in size, absolute below
/// (`|a - n| / max(|a|, |n|, 1)`), so tiny gradients do not blow up the ratio.
pub fn grad_error(analytic: f64, numeric: f64) -> f64 {
    (analytic - numeric).abs() / analytic.abs().max(numeric.abs()).max(1.0)
}

/// Checks autodiff of `f` against central differences at `inputs` (one value vector per
/// input, with `shapes`), on the f64 reference backend. Returns the largest
/// [`grad_error`] over every element of every input.
///
/// `f` receives the inputs as tensors on the reference device; constants it needs (indices,
/// targets) can be created on `x[0].device()`.
pub fn check_gradients(f: impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Vec<f64>], shapes: &[Shape]) -> Result<f64> {
    check_gradients_eps(f, inputs, shapes, FD_EPS)
}

/// [`check_gradients`] with a chosen step `eps`.
pub fn check_gradients_eps(f: impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Vec<f64>], shapes: &[Shape], eps: f64) -> Result<f64> {
    if inputs.len() != shapes.len() {
        return Err(Error::invalid("check_gradients", format!("{} input vectors but {} shapes", inputs.len(), shapes.len())));
    }
    for (i, (v, s)) in inputs.iter().zip(shapes).enumerate() {
        if v.len() != s.numel() {
            return Err(Error::invalid("check_gradients", format!("input {i} has {} values for shape {s}", v.len())));
        }
    }
    let dev = reference_device();
    let leaves: Vec<Tensor> =
        inputs.iter().zip(shapes).map(|(v, s)| Ok(Tensor::from_f64(&dev, v, s.clone())?.with_grad())).collect::<Result<_>>()?;
    let y = f(&leaves)?;
    let r = Gen::Uniform(-1.0, 1.0).values(seed_of("check_gradients/r"), y.numel());
    let rt = Tensor::from_f64(&dev, &r, y.shape().clone())?;
    let loss = y.mul(&rt)?.sum_all()?;
    if loss.requires_grad() {
        loss.backward()?;
    }
    let analytic: Vec<Vec<f64>> = leaves
        .iter()
        .zip(inputs)
        .map(|(t, v)| match t.grad() {
            Some(g) => g.to_vec_f64(),
            None => Ok(vec![0.0; v.len()]),
        })
        .collect::<Result<_>>()?;

    let _guard = no_grad();
    let loss_at = |vals: &[Vec<f64>]| -> Result<f64> {
        let xs: Vec<Tensor> = vals.iter().zip(shapes).map(|(v, s)| Tensor::from_f64(&dev, v, s.clone())).collect::<Result<_>>()?;
        let y = f(&xs)?.to_vec_f64()?;
        Ok(y.iter().zip(&r).map(|(a, b)| a * b).sum())
    };
    let mut vals: Vec<Vec<f64>> = inputs.to_vec();
    let mut worst = 0.0f64;
    for i in 0..vals.len() {
        for j in 0..vals[i].len() {
            let x0 = vals[i][j];
            vals[i][j] = x0 + eps;
            let lp = loss_at(&vals)?;
            vals[i][j] = x0 - eps;
            let lm = loss_at(&vals)?;
            vals[i][j] = x0;
            let numeric = (lp - lm) / (2.0 * eps);
            let e = grad_error(analytic[i][j], numeric);
            if e.is_nan() {
                return Err(Error::invalid("check_gradients", format!("NaN gradient at input {i} element {j}")));
            }
            worst = worst.max(e);
        }
    }
    Ok(worst)
}
