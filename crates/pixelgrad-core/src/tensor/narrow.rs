//! Conversions between storage types: [`Tensor::widen`] to f32, [`Tensor::narrow_f16`] and
//! [`Tensor::narrow8`] from it.

use super::Tensor;
use crate::dtype::DType;
use crate::{Error, Op, Result};

impl Tensor {
    /// This tensor's values in f32 storage ([`Op::Widen`]): for 8-bit ([`DType::I8`],
    /// [`DType::U8`]) or half-precision ([`DType::F16`]) storage, a new f32 tensor of the same
    /// shape holding the same values, converted exactly (f16 subnormals, ±0, ±inf and NaN
    /// included); for an f32 tensor, a clone of it (no op runs). Use it to feed stored
    /// weights to ordinary f32 ops.
    ///
    /// Not differentiable: the widened tensor records no gradient (its input is stored data,
    /// a constant). Backends without 8-bit / f16 storage never hold such tensors
    /// ([`Tensor::from_i8`], [`Tensor::from_f16`] make f32 ones there), so `widen` is a clone.
    pub fn widen(&self) -> Result<Tensor> {
        if self.0.dtype == DType::F32 {
            return Ok(self.clone());
        }
        self.op1(Op::Widen)
    }
    /// This tensor's values rounded to half precision, in f16 storage ([`Op::NarrowF16`]:
    /// nearest, ties to even; ±inf past the f16 range). Not differentiable. Errors
    /// ([`Error::Backend`]) on backends without it
    /// ([`Caps::narrow_f16`](crate::Caps::narrow_f16)) and for input that is not f32.
    pub fn narrow_f16(&self) -> Result<Tensor> {
        if !self.0.device.backend().caps().narrow_f16 {
            return Err(Error::backend(
                "narrow_f16",
                self.0.device.name(),
                "this backend does not store f16 results (caps.narrow_f16 is false)",
            ));
        }
        self.op1(Op::NarrowF16)
    }
    /// This tensor's values in 8-bit storage ([`Op::Narrow8`]): [`DType::I8`] when `signed`,
    /// [`DType::U8`] otherwise, each rounded to the nearest integer (ties to even) and
    /// saturated to the type's range, NaN as 0. Not differentiable. Errors
    /// ([`Error::Backend`]) on backends without 8-bit storage
    /// ([`Caps::int8`](crate::Caps::int8)) and for input that is not f32.
    pub fn narrow8(&self, signed: bool) -> Result<Tensor> {
        if !self.0.device.backend().caps().int8 {
            return Err(Error::backend("narrow8", self.0.device.name(), "this backend does not store 8-bit tensors (caps.int8 is false)"));
        }
        self.op1(Op::Narrow8 { signed })
    }
}
