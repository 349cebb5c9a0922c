//! Quantised tensors: 8-bit values that carry their scale and zero point, per tensor or per
//! channel, with `real = (q - zero_point) · scale`.
//!
//! A [`QTensor`] keeps its values in 8-bit storage where the backend has 8-bit arithmetic
//! ([`Caps::int8`](crate::Caps::int8): CPU, WebGPU, WebGL2), one byte per element; elsewhere (the
//! WebGL1 mode) as whole numbers in f32, which [`QTensor::values`]' storage type says. Integer
//! products ([`QTensor::matmul_acc`]) accumulate in `i32` on [`crate::Op::MatMulI8`] and come
//! back as whole numbers in f32; [`QTensor::matmul`] scales them to real values.
//!
//! ```
//! use pixelgrad_core::kernel::DType;
//! use pixelgrad_core::quant::QuantParams;
//! // Asymmetric u8 over [-1, 3]: the range spread over 0..=255, 0 at 64.
//! let p = QuantParams::from_range(DType::U8, -1.0, 3.0, false).unwrap();
//! assert_eq!((p.scale[0], p.zero_point[0]), (4.0 / 255.0, 64));
//! // Then, on any device: `QTensor::quantize(&x, p)?.dequantize()?` is `x` within scale / 2.
//! ```

use crate::dtype::DType;
use crate::{Error, Result, Tensor};

/// Scale and zero point of an 8-bit quantised tensor: one pair for the whole tensor (`axis`
/// `None`) or one per index of `axis` (per channel).
#[derive(Clone, Debug, PartialEq)]
pub struct QuantParams {
    /// [`DType::I8`] or [`DType::U8`].
    pub dtype: DType,
    /// Positive, finite scales: one, or one per channel.
    pub scale: Vec<f32>,
    /// Zero points in the type's range, as many as `scale`.
    pub zero_point: Vec<i32>,
    /// The channel axis for per-channel parameters.
    pub axis: Option<usize>,
}

/// The range of an 8-bit type.
fn range(dtype: DType) -> Result<(i32, i32)> {
    match dtype {
        DType::I8 => Ok((-128, 127)),
        DType::U8 => Ok((0, 255)),
        other => Err(Error::invalid("quantisation", format!("dtype {other}: quantised tensors are i8 or u8"))),
    }
}

impl QuantParams {
    /// One scale and zero point for the whole tensor.
    pub fn per_tensor(dtype: DType, scale: f32, zero_point: i32) -> Result<QuantParams> {
        let p = QuantParams { dtype, scale: vec![scale], zero_point: vec![zero_point], axis: None };
        p.check()?;
        Ok(p)
    }

    /// One scale and zero point per index of `axis`.
    pub fn per_channel(dtype: DType, axis: usize, scale: Vec<f32>, zero_point: Vec<i32>) -> Result<QuantParams> {
        let p = QuantParams { dtype, scale, zero_point, axis: Some(axis) };
        p.check()?;
        Ok(p)
    }

    /// Parameters covering `[min, max]` (widened to include 0, so 0 is exact): asymmetric, the
    /// range spread over the type's 256 values, `scale = (max - min) / 255` and
    /// `zero_point = round(qmin - min / scale)`; symmetric, `scale = max(|min|, |max|) / 127`
    /// with zero point 0 (i8) or 128 (u8). An empty range (all zeros) gets scale 1.
    pub fn from_range(dtype: DType, min: f32, max: f32, symmetric: bool) -> Result<QuantParams> {
        let (qmin, qmax) = range(dtype)?;
        if !min.is_finite() || !max.is_finite() || min > max {
            return Err(Error::invalid("quantisation", format!("range [{min}, {max}] is not a finite interval")));
        }
        let (lo, hi) = (min.min(0.0), max.max(0.0));
        let (scale, zp) = if symmetric {
            let m = lo.abs().max(hi.abs());
            (m / 127.0, if dtype == DType::U8 { 128 } else { 0 })
        } else {
            let s = (hi - lo) / (qmax - qmin) as f32;
            (s, if s > 0.0 { (qmin as f32 - lo / s).round_ties_even().clamp(qmin as f32, qmax as f32) as i32 } else { 0 })
        };
        let scale = if scale > 0.0 && scale.is_finite() { scale } else { 1.0 };
        QuantParams::per_tensor(dtype, scale, zp)
    }

    /// Parameters from the values of `x` (read back to the host, blocking: natively; in the
    /// browser's WebGPU use [`QuantParams::calibrate_async`]): see [`QuantParams::from_values`].
    pub fn calibrate(x: &Tensor, dtype: DType, axis: Option<usize>, symmetric: bool) -> Result<QuantParams> {
        QuantParams::from_values(&x.to_vec()?, x.dims(), dtype, axis, symmetric)
    }

    /// [`QuantParams::calibrate`] reading `x` back without blocking (every backend, the
    /// browser's WebGPU included).
    pub async fn calibrate_async(x: &Tensor, dtype: DType, axis: Option<usize>, symmetric: bool) -> Result<QuantParams> {
        QuantParams::from_values(&x.to_vec_async().await?, x.dims(), dtype, axis, symmetric)
    }

    /// [`QuantParams::from_range`] of the minimum and maximum of `values` (a tensor of shape
    /// `dims`, row-major), over all of it or per index of `axis`.
    pub fn from_values(values: &[f32], dims: &[usize], dtype: DType, axis: Option<usize>, symmetric: bool) -> Result<QuantParams> {
        if values.len() != dims.iter().product::<usize>() {
            return Err(Error::invalid("quantisation", format!("{} values for shape {dims:?}", values.len())));
        }
        if let Some(x) = values.iter().find(|x| !x.is_finite()) {
            return Err(Error::invalid("quantisation", format!("cannot calibrate on the value {x}")));
        }
        let Some(axis) = axis else {
            let (lo, hi) = values.iter().fold((0.0f32, 0.0f32), |(a, b), &x| (a.min(x), b.max(x)));
            return QuantParams::from_range(dtype, lo, hi, symmetric);
        };
        if axis >= dims.len() {
            return Err(Error::invalid("quantisation", format!("axis {axis} of a rank-{} tensor", dims.len())));
        }
        let (c, inner) = (dims[axis], dims[axis + 1..].iter().product::<usize>());
        let (mut lo, mut hi) = (vec![0.0f32; c], vec![0.0f32; c]);
        for (i, &x) in values.iter().enumerate() {
            let k = (i / inner) % c;
            lo[k] = lo[k].min(x);
            hi[k] = hi[k].max(x);
        }
        let per: Vec<QuantParams> = (0..c).map(|k| QuantParams::from_range(dtype, lo[k], hi[k], symmetric)).collect::<Result<_>>()?;
        QuantParams::per_channel(dtype, axis, per.iter().map(|p| p.scale[0]).collect(), per.iter().map(|p| p.zero_point[0]).collect())
    }

    fn check(&self) -> Result<()> {
        let (qmin, qmax) = range(self.dtype)?;
        let bad = |msg: String| Err(Error::invalid("quantisation", msg));
        if self.scale.is_empty() || self.scale.len() != self.zero_point.len() {
            return bad(format!("{} scales and {} zero points", self.scale.len(), self.zero_point.len()));
        }
        if self.axis.is_none() && self.scale.len() != 1 {
            return bad(format!("{} scales for per-tensor parameters (give an axis for per-channel ones)", self.scale.len()));
        }
        if let Some(s) = self.scale.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return bad(format!("scale {s} is not positive and finite"));
        }
        if let Some(z) = self.zero_point.iter().find(|z| !(qmin..=qmax).contains(*z)) {
            return bad(format!("zero point {z} is outside the {} range [{qmin}, {qmax}]", self.dtype));
        }
        Ok(())
    }

    /// Checks these parameters against a tensor of `dims`.
    fn check_for(&self, dims: &[usize]) -> Result<()> {
        self.check()?;
        if let Some(a) = self.axis {
            if a >= dims.len() || dims[a] != self.scale.len() {
                return Err(Error::invalid(
                    "quantisation",
                    format!("{} per-channel scales along axis {a} of a tensor of shape {dims:?}", self.scale.len()),
                ));
            }
        }
        Ok(())
    }

    /// Scales and zero points on the device, shaped to broadcast against a rank-`rank` tensor.
    fn tensors(&self, dev: &crate::Device, rank: usize) -> Result<(Tensor, Tensor)> {
        let mut shape = vec![1usize; rank.max(1)];
        if let Some(a) = self.axis {
            shape[a] = self.scale.len();
        }
        let z: Vec<f32> = self.zero_point.iter().map(|&z| z as f32).collect();
        Ok((Tensor::from_vec(dev, &self.scale, shape.clone())?, Tensor::from_vec(dev, &z, shape)?))
    }
}

/// An 8-bit quantised tensor: its values and their [`QuantParams`].
#[derive(Clone, Debug)]
pub struct QTensor {
    values: Tensor,
    params: QuantParams,
}

impl QTensor {
    /// Quantises `x` on its device: `saturate(round_half_even(x / scale) + zero_point)`, per
    /// tensor or per channel. The result is 8-bit storage where the backend has 8-bit
    /// arithmetic ([`Tensor::narrow8`], which rounds and saturates in one pass), whole
    /// numbers in f32 elsewhere. Not differentiable.
    pub fn quantize(x: &Tensor, params: QuantParams) -> Result<QTensor> {
        params.check_for(x.dims())?;
        let (qmin, qmax) = range(params.dtype)?;
        let (s, z) = params.tensors(x.device(), x.rank())?;
        let q = x.widen()?.div(&s)?.round_even()?.add(&z)?;
        let values = if x.device().backend().caps().int8 {
            q.narrow8(params.dtype == DType::I8)?
        } else {
            q.max_scalar(qmin as f32)?.min_scalar(qmax as f32)?
        };
        Ok(QTensor { values, params })
    }

    /// A quantised tensor over existing values: 8-bit storage of `params.dtype` (from
    /// [`Tensor::from_i8`] / [`Tensor::from_u8`]), or f32 holding whole numbers in the type's
    /// range (not checked: the caller vouches for them).
    pub fn from_parts(values: Tensor, params: QuantParams) -> Result<QTensor> {
        params.check_for(values.dims())?;
        let d = values.storage_dtype();
        if d != DType::F32 && d != params.dtype {
            return Err(Error::invalid("quantisation", format!("values in {d} storage for {} parameters", params.dtype)));
        }
        Ok(QTensor { values, params })
    }

    /// The stored values (8-bit storage, or whole numbers in f32; see the module docs).
    pub fn values(&self) -> &Tensor {
        &self.values
    }
    pub fn params(&self) -> &QuantParams {
        &self.params
    }
    pub fn dims(&self) -> &[usize] {
        self.values.dims()
    }
    /// Bytes the values take on the device (1 per element in 8-bit storage, 4 in f32).
    pub fn storage_bytes(&self) -> usize {
        self.values.numel() * self.values.storage_dtype().size_bytes()
    }

    /// The real values `(q - zero_point) · scale` as an f32 tensor.
    pub fn dequantize(&self) -> Result<Tensor> {
        let (s, z) = self.params.tensors(self.values.device(), self.values.rank())?;
        self.values.widen()?.sub(&z)?.mul(&s)
    }

    /// The integer product of `self` (activations `[M, K]` or `[B, M, K]`, per-tensor
    /// parameters) and `w` (weights `[K, N]`, per tensor or per output channel, axis 1):
    /// `acc[.., m, n] = Σ_k (a[.., m, k] - za) · (w[k, n] - zw[n])`, whole numbers in f32
    /// storage. Where the backend has 8-bit arithmetic and `self` is 8-bit, the products are
    /// summed in `i32` ([`Tensor::matmul_i8`], exact) and `za · Σ_k (w - zw)` is subtracted
    /// in f32 (exact while below 2^24, rounded to f32 beyond); elsewhere the centred values
    /// are multiplied in f32, exact while partial sums stay below 2^24.
    pub fn matmul_acc(&self, w: &QTensor) -> Result<Tensor> {
        let (ad, wd) = (self.dims(), w.dims());
        let bad = |msg: String| {
            Err(Error::Shape { op: "qmatmul", shapes: vec![ad.to_vec(), wd.to_vec()], backend: self.values.device().name(), msg })
        };
        if !(2..=3).contains(&ad.len()) || wd.len() != 2 || ad[ad.len() - 1] != wd[0] {
            return bad("expects activations [M, K] or [B, M, K] and weights [K, N]".into());
        }
        if self.params.axis.is_some() {
            return bad("activations must have per-tensor parameters".into());
        }
        if !matches!(w.params.axis, None | Some(1)) {
            return bad("weights must have per-tensor or per-output-channel (axis 1) parameters".into());
        }
        let (_, zw) = w.params.tensors(w.values.device(), 2)?;
        let wc = w.values.widen()?.sub(&zw)?; // [K, N], whole numbers within ±255
        let za = self.params.zero_point[0] as f32;
        if self.values.device().backend().caps().int8 && self.values.storage_dtype() != DType::F32 {
            let acc = self.values.matmul_i8(&wc)?;
            if za == 0.0 {
                return Ok(acc);
            }
            return acc.sub(&wc.sum_axis(0, true)?.mul_scalar(za)?);
        }
        self.values.widen()?.add_scalar(-za)?.matmul(&wc)
    }

    /// The real product `(a - za)·sa · (w - zw)·sw` as an f32 tensor: [`QTensor::matmul_acc`]
    /// times `sa · sw[n]`.
    pub fn matmul(&self, w: &QTensor) -> Result<Tensor> {
        let acc = self.matmul_acc(w)?;
        let sa = self.params.scale[0];
        let m: Vec<f32> = w.params.scale.iter().map(|&s| sa * s).collect();
        let mut shape = vec![1usize; acc.rank()];
        shape[acc.rank() - 1] = m.len();
        acc.mul(&Tensor::from_vec(acc.device(), &m, shape)?)
    }
}
