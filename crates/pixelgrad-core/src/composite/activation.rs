//! Activations and normalisers.

use crate::tensor::Tensor;
use crate::Result;

impl Tensor {
    /// `max(x, 0)`.
    pub fn relu(&self) -> Result<Tensor> {
        self.max_scalar(0.0)
    }

    /// `x` where positive, `slope * x` elsewhere (for `0 <= slope <= 1` this is `max(x, slope x)`).
    pub fn leaky_relu(&self, slope: f32) -> Result<Tensor> {
        let neg = self.min_scalar(0.0)?.mul_scalar(slope)?;
        self.relu()?.add(&neg)
    }

    /// GELU, tanh approximation: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
    pub fn gelu(&self) -> Result<Tensor> {
        let c = (2.0f32 / std::f32::consts::PI).sqrt();
        let inner = self.add(&self.powf(3.0)?.mul_scalar(0.044715)?)?.mul_scalar(c)?;
        self.mul(&inner.tanh()?.affine(0.5, 0.5)?)
    }

    /// Softmax along `axis`; the max is subtracted first (and treated as a constant, which does
    /// not change the gradient) so `exp` never overflows. (Not `exp(x - logsumexp(x))`: that
    /// needs one reduction instead of two, but `x - logsumexp(x)` loses every digit once the
    /// logits are so large that `ln n` is below their rounding step, where `x - max` is exact.)
    pub fn softmax(&self, axis: isize) -> Result<Tensor> {
        let m = self.max_axis(axis, true)?.detach();
        let e = self.sub(&m)?.exp()?;
        e.div(&e.sum_axis(axis, true)?)
    }

    /// `log(softmax(x))` computed stably: `x - m - log(sum(exp(x - m)))` (see
    /// [`Tensor::softmax`] for why not `x - logsumexp(x)`).
    pub fn log_softmax(&self, axis: isize) -> Result<Tensor> {
        let m = self.max_axis(axis, true)?.detach();
        let z = self.sub(&m)?;
        z.sub(&z.exp()?.sum_axis(axis, true)?.log()?)
    }

    /// Population variance along `axis` (divides by n).
    pub fn var_axis(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        let mu = self.mean_axis(axis, true)?;
        self.sub(&mu)?.square()?.mean_axis(axis, keepdim)
    }
}
