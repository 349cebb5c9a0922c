use pixelgrad_core::{Device, Result, Tensor};

use super::{bad_input, bad_option};
use crate::{Mode, Module};

/// Rotary position embedding (keras-hub `RotaryEmbedding`, the "rotate half" form): each head
/// vector `x [.., seq, head_dim]` at position `p` becomes `x · cos(p θ) + rotate_half(x) ·
/// sin(p θ)`, with `rotate_half(x) = [-x₂, x₁]` for the halves `x₁, x₂` and the frequencies
/// `θ_i = max_wavelength^(-2i / head_dim)` shared by both halves. No parameters.
///
/// As a [`Module`]: input `[batch, heads, seq, head_dim]` (positions `0..seq`), output the
/// same shape. [`MultiHeadAttention`](super::MultiHeadAttention) applies it to queries and keys.
/// The cos/sin tables are computed on the host (in f64) and uploaded; the rotation is composed
/// of slices, a negation, a concat and products.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rotary {
    head_dim: usize,
    max_wavelength: f64,
}

impl Rotary {
    /// `head_dim` must be even; keras-hub's default `max_wavelength` is 10000.
    pub fn new(head_dim: usize, max_wavelength: f64) -> Result<Self> {
        if head_dim == 0 || !head_dim.is_multiple_of(2) || !(max_wavelength.is_finite() && max_wavelength > 1.0) {
            return Err(bad_option(
                "rotary",
                format!("head_dim ({head_dim}) must be even and above 0, max_wavelength ({max_wavelength}) finite and above 1"),
            ));
        }
        Ok(Rotary { head_dim, max_wavelength })
    }
    pub fn head_dim(&self) -> usize {
        self.head_dim
    }
    pub fn max_wavelength(&self) -> f64 {
        self.max_wavelength
    }

    /// The `[seq, head_dim]` cos and sin tables for positions `offset..offset + seq`.
    pub fn tables(&self, dev: &Device, offset: usize, seq: usize) -> Result<(Tensor, Tensor)> {
        let (h, half) = (self.head_dim, self.head_dim / 2);
        let mut cos = Vec::with_capacity(seq * h);
        let mut sin = Vec::with_capacity(seq * h);
        for p in offset..offset + seq {
            for j in 0..h {
                let i = j % half;
                let angle = p as f64 * self.max_wavelength.powf(-2.0 * i as f64 / h as f64);
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        Ok((Tensor::from_f64(dev, &cos, [seq, h])?, Tensor::from_f64(dev, &sin, [seq, h])?))
    }

    /// Rotates `x [.., seq, head_dim]` (rank 2 or more) for positions `offset..offset + seq`.
    pub fn apply(&self, x: &Tensor, offset: usize) -> Result<Tensor> {
        let r = x.rank();
        if r < 2 || x.dims()[r - 1] != self.head_dim {
            return Err(bad_input("rotary", x, format!("expects [.., seq, {}]", self.head_dim)));
        }
        let seq = x.dims()[r - 2];
        let (cos, sin) = self.tables(x.device(), offset, seq)?;
        let half = self.head_dim / 2;
        let x1 = x.slice(r - 1, 0, half)?;
        let x2 = x.slice(r - 1, half, self.head_dim)?;
        let rotated = Tensor::concat(&[&x2.neg()?, &x1], r - 1)?;
        x.mul(&cos)?.add(&rotated.mul(&sin)?)
    }
}

impl Module for Rotary {
    fn forward(&self, x: &Tensor, _mode: Mode) -> Result<Tensor> {
        self.apply(x, 0)
    }
    fn describe(&self) -> String {
        format!("Rotary({}, {})", self.head_dim, self.max_wavelength)
    }
}
