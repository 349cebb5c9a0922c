//! [`Value`]: what a run returns for each requested output, on the device or on the host.

use pixelgrad_core::{Device, Tensor};

use crate::host::{DType, HostTensor};
use crate::ops::upload;
use crate::Result;

/// An output value: on the device (what most nodes produce) or on the host (outputs that are
/// constants or shape arithmetic).
#[derive(Clone, Debug)]
pub enum Value {
    Device { tensor: Tensor, dtype: DType },
    Host(HostTensor),
}

impl Value {
    pub fn dims(&self) -> &[usize] {
        match self {
            Value::Device { tensor, .. } => tensor.dims(),
            Value::Host(h) => &h.shape,
        }
    }
    pub fn dtype(&self) -> DType {
        match self {
            Value::Device { dtype, .. } => *dtype,
            Value::Host(h) => h.dtype,
        }
    }
    /// The values on the host (a blocking read for device values; see [`Value::to_host_async`]).
    pub fn to_host(&self) -> Result<HostTensor> {
        match self {
            Value::Host(h) => Ok(h.clone()),
            Value::Device { tensor, dtype } => Ok(host_of(tensor.to_vec()?, tensor.dims().to_vec(), *dtype)),
        }
    }
    pub async fn to_host_async(&self) -> Result<HostTensor> {
        match self {
            Value::Host(h) => Ok(h.clone()),
            Value::Device { tensor, dtype } => Ok(host_of(tensor.to_vec_async().await?, tensor.dims().to_vec(), *dtype)),
        }
    }
    /// The value as an f32 device tensor on `dev` (host values are uploaded; a quantised
    /// output kept in 8-bit storage is widened, exactly). `Value::Device`'s `tensor` is the
    /// stored one.
    pub fn tensor(&self, dev: &Device) -> Result<Tensor> {
        match self {
            Value::Device { tensor, .. } => Ok(tensor.widen()?),
            Value::Host(h) => upload(dev, h, "output"),
        }
    }
}

/// A device read-back as a host tensor of the ONNX type `dtype` (integers rounded).
pub(crate) fn host_of(v: Vec<f32>, shape: Vec<usize>, dtype: DType) -> HostTensor {
    if dtype.is_float() {
        HostTensor { dtype, shape, data: crate::host::Data::F32(v) }
    } else {
        HostTensor::ints(dtype, shape, v.iter().map(|&x| x.round() as i64).collect())
    }
}
