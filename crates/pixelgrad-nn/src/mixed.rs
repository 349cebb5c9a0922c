//! Mixed-precision training: f16 activations and gradients, f32 master weights, dynamic loss
//! scaling decided on the device.
//!
//! A mixed step ([`train_batch_mixed`]) runs forward and backward inside
//! [`pixelgrad_core::mixed_precision`]: the activations kept for the backward pass are f16
//! copies and every gradient is rounded through f16. The loss is multiplied by the current
//! scale before the backward pass, so small gradients do not flush to zero in f16. Then, on
//! the device and without a readback:
//!
//! - `ok` = every parameter gradient is finite (a sum of `g · 0` over all of them is NaN
//!   exactly when one element is infinite or NaN);
//! - the optimizer updates from the unscaled gradients `g / scale`, and every parameter and
//!   optimizer-state tensor becomes `ok ? updated : previous`: a step whose gradients
//!   overflowed changes nothing (except the optimizer's host-side step counter, which the host
//!   cannot know to hold back, and batch-norm running statistics, updated in the forward pass);
//! - the scale halves after an overflow, and doubles after `growth_interval` good steps in a
//!   row.
//!
//! The parameters, their gradients and the optimizer state stay f32 throughout. Where the
//! device cannot narrow to f16 ([`pixelgrad_core::mixed_precision_available`]), training stays
//! f32 and [`MixedReport::fallback`] says why.

use pixelgrad_core::{mixed_precision, mixed_precision_available, no_grad, Device, Error, Result, Tensor};

use crate::optim::Optimizer;
use crate::sums::Sums;
use crate::{Loss, Mode, Module};

/// Numeric precision of training.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// Everything f32.
    #[default]
    F32,
    /// f16 activations and gradients with f32 master weights and dynamic loss scaling.
    Mixed,
}

impl Precision {
    /// `f32` or `mixed`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "f32" => Ok(Precision::F32),
            "mixed" => Ok(Precision::Mixed),
            other => Err(Error::invalid("precision", format!("unknown training precision '{other}' (f32 or mixed)"))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Mixed => "mixed",
        }
    }
}

/// Loss-scale settings (the defaults are the usual ones: start at 2^16, halve on overflow,
/// double after 2000 good steps).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleOptions {
    pub initial: f32,
    pub growth_interval: u32,
}

impl Default for ScaleOptions {
    fn default() -> Self {
        ScaleOptions { initial: 65536.0, growth_interval: 2000 }
    }
}

/// The dynamic loss scale, kept on the device: the scale, the good steps since the last
/// change, and the steps skipped for overflow.
pub struct LossScaler {
    opts: ScaleOptions,
    scale: Tensor,
    good: Tensor,
    skipped: Tensor,
}

/// What mixed-precision training did, read back once at the end of training.
#[derive(Clone, Debug, PartialEq)]
pub struct MixedReport {
    /// `mixed`, or `f32` where the device cannot (see `fallback`).
    pub precision: &'static str,
    /// Why training ran f32 although mixed precision was asked for.
    pub fallback: Option<String>,
    /// The loss scale at the end.
    pub final_scale: f32,
    /// Steps whose gradients overflowed in f16 and were skipped.
    pub skipped_steps: u64,
}

impl LossScaler {
    /// A scaler on `dev`. Errors for a scale that is not a positive finite number or a zero
    /// growth interval.
    pub fn new(dev: &Device, opts: ScaleOptions) -> Result<Self> {
        if !(opts.initial.is_finite() && opts.initial > 0.0) || opts.growth_interval == 0 {
            return Err(Error::invalid(
                "loss scale",
                format!("the initial scale must be a positive finite number and the growth interval at least 1, got {opts:?}"),
            ));
        }
        Ok(LossScaler {
            opts,
            scale: Tensor::scalar(dev, opts.initial)?,
            good: Tensor::scalar(dev, 0.0)?,
            skipped: Tensor::scalar(dev, 0.0)?,
        })
    }
    pub fn options(&self) -> ScaleOptions {
        self.opts
    }
    /// The current scale (a device scalar).
    pub fn scale(&self) -> &Tensor {
        &self.scale
    }
    /// Steps skipped so far for f16 overflow (a device scalar).
    pub fn skipped(&self) -> &Tensor {
        &self.skipped
    }
    /// One readback: `(scale, skipped steps)`.
    pub fn read(&self) -> Result<(f32, u64)> {
        let v = Tensor::concat(&[&self.scale.reshape([1])?, &self.skipped.reshape([1])?], 0)?.to_vec()?;
        Ok((v[0], v[1] as u64))
    }
    /// The scale, the good steps in a row and the skipped steps (one readback): what a saved
    /// run keeps to go on exactly ([`crate::train::Resume::loss_scale`]).
    pub fn state(&self) -> Result<[f32; 3]> {
        let v = self.state_tensor()?.to_vec()?;
        match v[..] {
            [scale, good, skipped] => Ok([scale, good, skipped]),
            _ => Err(Error::invalid("loss scale", format!("read {} values, expected 3", v.len()))),
        }
    }
    /// The state of [`LossScaler::state`] on the device, `[scale, good steps, skipped]`, for
    /// a caller that reads it with other values (a training run's checkpoint).
    pub fn state_tensor(&self) -> Result<Tensor> {
        Tensor::concat(&[&self.scale.reshape([1])?, &self.good.reshape([1])?, &self.skipped.reshape([1])?], 0)
    }
    /// Puts back a [`LossScaler::state`], on `dev`.
    pub fn set_state(&mut self, dev: &Device, state: [f32; 3]) -> Result<()> {
        let [scale, good, skipped] = state;
        let valid = scale.is_finite() && scale > 0.0 && good.is_finite() && good >= 0.0 && skipped.is_finite() && skipped >= 0.0;
        if !valid {
            return Err(Error::invalid("loss scale", format!("not a loss scaler state: {state:?}")));
        }
        self.scale = Tensor::scalar(dev, scale)?;
        self.good = Tensor::scalar(dev, good)?;
        self.skipped = Tensor::scalar(dev, skipped)?;
        Ok(())
    }
    /// The report of a run on `dev` (one readback where the scaler ran).
    pub fn report(scaler: Option<&LossScaler>, dev: &Device) -> Result<MixedReport> {
        match scaler {
            Some(s) => {
                let (final_scale, skipped_steps) = s.read()?;
                Ok(MixedReport { precision: "mixed", fallback: None, final_scale, skipped_steps })
            }
            None => Ok(MixedReport { precision: "f32", fallback: Some(fallback_reason(dev)), final_scale: 1.0, skipped_steps: 0 }),
        }
    }

    /// Advances the scale from this step's `ok` (1 if every gradient was finite, else 0).
    fn update(&mut self, ok: &Tensor) -> Result<()> {
        let one = Tensor::scalar(ok.device(), 1.0)?;
        let zero = Tensor::scalar(ok.device(), 0.0)?;
        let good = Tensor::select(ok, &self.good.add_scalar(1.0)?, &zero)?;
        let grow = good.gt_scalar(self.opts.growth_interval as f32 - 0.5)?;
        let kept = Tensor::select(&grow, &self.scale.mul_scalar(2.0)?, &self.scale)?;
        self.scale = Tensor::select(ok, &kept, &self.scale.mul_scalar(0.5)?)?;
        self.good = Tensor::select(&grow, &zero, &good)?;
        self.skipped = self.skipped.add(&one.sub(ok)?)?;
        Ok(())
    }
}

/// Why mixed precision does not run on `dev`.
pub fn fallback_reason(dev: &Device) -> String {
    format!("the {} backend does not store f16 results (caps.narrow_f16 / caps.f16_storage): trained in f32", dev.name())
}

/// The largest initial loss scale on a device whose f32 tensors are really halves: the scaled
/// loss itself is a half there (largest 65504), and a cross-entropy of up to ~60 times 2^10
/// still fits, while gradients of 1e-7 scale to the half's normal range (6.1e-5).
pub const HALF_STORAGE_MAX_SCALE: f32 = 1024.0;

/// A scaler for `precision` on `dev`: `None` for f32 training and where the device cannot run
/// mixed precision (report that with [`LossScaler::report`]). On a device whose f32 tensors
/// are already halves ([`crate::optim::half::stores_halves`]) mixed precision is what it runs anyway, and the
/// scaler is what keeps small gradients from flushing to zero there: its initial scale is at
/// most [`HALF_STORAGE_MAX_SCALE`].
pub fn scaler_for(precision: Precision, dev: &Device, opts: ScaleOptions) -> Result<Option<LossScaler>> {
    match precision {
        Precision::Mixed if mixed_precision_available(dev) => Ok(Some(LossScaler::new(dev, opts)?)),
        Precision::Mixed if crate::optim::half::stores_halves(dev)? => {
            let opts = ScaleOptions { initial: opts.initial.min(HALF_STORAGE_MAX_SCALE), ..opts };
            Ok(Some(LossScaler::new(dev, opts)?))
        }
        _ => Ok(None),
    }
}

/// [`crate::train::train_batch`] in mixed precision (see the module docs). A failed backward
/// or update clears the gradients it half-accumulated.
pub fn train_batch_mixed(
    model: &dyn Module,
    opt: &mut dyn Optimizer,
    loss: Loss,
    x: &Tensor,
    y: &Tensor,
    sums: &mut Sums,
    scaler: &mut LossScaler,
) -> Result<()> {
    let (l, correct) = {
        let _mixed = mixed_precision();
        let out = model.forward(x, Mode::Train)?;
        let l = loss.compute(&out, y)?;
        let correct = {
            let _g = no_grad();
            loss.correct(&out, y)?
        };
        if let Err(e) = l.mul(&scaler.scale).and_then(|s| s.backward()) {
            model.zero_grad();
            return Err(e);
        }
        (l, correct)
    };
    if let Err(e) = gated_update(model, opt, scaler) {
        model.zero_grad();
        return Err(e);
    }
    sums.add(&l, correct.as_ref(), x.dims().first().copied().unwrap_or(0))
}

/// The overflow check, the unscaled update gated by it, and the scale update.
fn gated_update(model: &dyn Module, opt: &mut dyn Optimizer, scaler: &mut LossScaler) -> Result<()> {
    let _g = no_grad();
    // Pass 1: the gradients, and the probe Σ (g · 0) over all of them.
    let mut probe: Option<Tensor> = None;
    let mut failed: Result<()> = Ok(());
    model.visit_params(&mut |_, p| {
        if failed.is_err() {
            return;
        }
        let Some(g) = p.grad() else { return };
        let r = g.mul_scalar(0.0).and_then(|z| z.sum_all()).and_then(|s| match probe.take() {
            Some(acc) => acc.add(&s),
            None => Ok(s),
        });
        match r {
            Ok(acc) => probe = Some(acc),
            Err(e) => failed = Err(e),
        }
    });
    failed?;
    let Some(probe) = probe else { return Ok(()) };
    // NaN (an infinite or NaN gradient somewhere) is the one value not equal to itself.
    let ok = probe.eq(&probe)?;
    let dev = ok.device().clone();
    let zero = Tensor::scalar(&dev, 0.0)?;
    let inv = Tensor::scalar(&dev, 1.0)?.div(&scaler.scale)?;
    let state_before = opt.state();
    // Pass 2: the update from the unscaled gradients, each parameter kept where `ok` is 0.
    opt.begin_step();
    let mut failed: Result<()> = Ok(());
    model.visit_params(&mut |name, p| {
        if failed.is_err() {
            return;
        }
        let Some(g) = p.grad() else { return };
        let old = p.tensor().detach();
        failed = (|| {
            let unscaled = Tensor::select(&ok, &g.mul(&inv)?, &zero)?;
            opt.update(name, p, &unscaled)?;
            p.zero_grad();
            p.set(&Tensor::select(&ok, &p.tensor().detach(), &old)?)
        })();
    });
    failed?;
    // The optimizer state likewise (state made by this step counts as zeros before it).
    let mut state = opt.state();
    for (name, t) in state.tensors.iter_mut() {
        let old = match state_before.tensors.iter().find(|(n, _)| n == name) {
            Some((_, old)) => old.clone(),
            None => Tensor::zeros(&dev, t.shape().clone())?,
        };
        *t = Tensor::select(&ok, t, &old)?;
    }
    opt.set_state(state)?;
    scaler.update(&ok)
}
