//! [`HostTensor`]: an ONNX tensor on the host with its element type. Initializers, `Constant`
//! values, shape arithmetic (`Shape` → `Gather` → `Concat` → `Reshape`) and the caller's inputs
//! before upload are host tensors; everything the device computes is a pixelgrad `Tensor`.

use crate::proto::{data_type as dt, TensorProto};
use crate::{OnnxError, Result};

/// ONNX element types pixelgrad can hold. Floats are held (and computed) as `f32`: float16 and
/// bfloat16 widen exactly. Integer and boolean types are held as `i64` on the host; on a
/// device they are `f32` values, exact up to 2^24 (larger ones are refused at upload).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F16,
    BF16,
    I64,
    I32,
    I16,
    I8,
    U8,
    U16,
    U32,
    Bool,
    /// 4-bit integers (`int4`, `uint4`), two to a byte in files (the first in the low
    /// nibble); held as `i64` values on the host. Only `GatherBlockQuantized` reads them.
    I4,
    U4,
}

impl DType {
    /// The type of an ONNX `data_type` / `elem_type` code; unsupported codes give an error
    /// naming `what` and the type.
    pub fn from_onnx(code: i32, what: &str) -> Result<DType> {
        Ok(match code {
            dt::FLOAT => DType::F32,
            dt::FLOAT16 => DType::F16,
            dt::BFLOAT16 => DType::BF16,
            dt::INT64 => DType::I64,
            dt::INT32 => DType::I32,
            dt::INT16 => DType::I16,
            dt::INT8 => DType::I8,
            dt::UINT8 => DType::U8,
            dt::UINT16 => DType::U16,
            dt::UINT32 => DType::U32,
            dt::BOOL => DType::Bool,
            dt::INT4 => DType::I4,
            dt::UINT4 => DType::U4,
            other => return Err(OnnxError::Dtype { what: what.to_string(), dtype: onnx_type_name(other).to_string() }),
        })
    }
    pub fn to_onnx(self) -> i32 {
        match self {
            DType::F32 => dt::FLOAT,
            DType::F16 => dt::FLOAT16,
            DType::BF16 => dt::BFLOAT16,
            DType::I64 => dt::INT64,
            DType::I32 => dt::INT32,
            DType::I16 => dt::INT16,
            DType::I8 => dt::INT8,
            DType::U8 => dt::UINT8,
            DType::U16 => dt::UINT16,
            DType::U32 => dt::UINT32,
            DType::Bool => dt::BOOL,
            DType::I4 => dt::INT4,
            DType::U4 => dt::UINT4,
        }
    }
    /// Bits per element as ONNX files store them.
    pub fn bits(self) -> usize {
        match self {
            DType::I64 => 64,
            DType::F32 | DType::I32 | DType::U32 => 32,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 16,
            DType::I8 | DType::U8 | DType::Bool => 8,
            DType::I4 | DType::U4 => 4,
        }
    }
    /// Bytes per element as ONNX files store them, 4-bit types rounded up to 1 (totals:
    /// [`DType::bytes`]).
    pub fn size(self) -> usize {
        self.bits().div_ceil(8)
    }
    /// Bytes that `n` elements take as ONNX files store them (4-bit types: two to a byte,
    /// rounded up); `None` on overflow.
    pub fn bytes(self, n: usize) -> Option<usize> {
        Some(n.checked_mul(self.bits())?.div_ceil(8))
    }
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16)
    }
    /// The ONNX spelling (`float`, `int64`, ...), used in errors and `m.inputs`.
    pub fn name(self) -> &'static str {
        onnx_type_name(self.to_onnx())
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// ONNX's name of a `data_type` code.
pub fn onnx_type_name(code: i32) -> &'static str {
    match code {
        dt::FLOAT => "float",
        dt::UINT8 => "uint8",
        dt::INT8 => "int8",
        dt::UINT16 => "uint16",
        dt::INT16 => "int16",
        dt::INT32 => "int32",
        dt::INT64 => "int64",
        dt::STRING => "string",
        dt::BOOL => "bool",
        dt::FLOAT16 => "float16",
        dt::DOUBLE => "double",
        dt::UINT32 => "uint32",
        dt::UINT64 => "uint64",
        dt::COMPLEX64 => "complex64",
        dt::COMPLEX128 => "complex128",
        dt::BFLOAT16 => "bfloat16",
        // read by no operator yet (GatherBlockQuantized's 4-bit data among them), named in errors
        dt::FLOAT8E4M3FN => "float8e4m3fn",
        dt::FLOAT8E4M3FNUZ => "float8e4m3fnuz",
        dt::FLOAT8E5M2 => "float8e5m2",
        dt::FLOAT8E5M2FNUZ => "float8e5m2fnuz",
        dt::UINT4 => "uint4",
        dt::INT4 => "int4",
        dt::FLOAT4E2M1 => "float4e2m1",
        dt::UNDEFINED => "undefined",
        _ => "an unknown type code",
    }
}

/// Element storage: floats as `f32`, integers and booleans as `i64`.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

/// A row-major tensor on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Data,
}

impl HostTensor {
    pub fn f32(shape: Vec<usize>, v: Vec<f32>) -> HostTensor {
        HostTensor { dtype: DType::F32, shape, data: Data::F32(v) }
    }
    pub fn i64(shape: Vec<usize>, v: Vec<i64>) -> HostTensor {
        HostTensor { dtype: DType::I64, shape, data: Data::I64(v) }
    }
    /// Integer-class data of another integer type (values must fit it).
    pub fn ints(dtype: DType, shape: Vec<usize>, v: Vec<i64>) -> HostTensor {
        HostTensor { dtype, shape, data: Data::I64(v) }
    }
    /// Elements the shape holds (saturating: a tensor that passed [`HostTensor::check`] or came
    /// from a file has an exact count).
    pub fn numel(&self) -> usize {
        checked_numel(&self.shape).unwrap_or(usize::MAX)
    }
    /// Elements stored.
    pub fn len(&self) -> usize {
        match &self.data {
            Data::F32(v) => v.len(),
            Data::I64(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Checks that the shape's size is representable ([`checked_numel`]) and that the data
    /// holds that many elements (a caller's [`HostTensor`] is a public struct); `what` names
    /// it in the error.
    pub fn check(&self, what: &str) -> Result<()> {
        match checked_numel(&self.shape) {
            Some(n) if n == self.len() => Ok(()),
            Some(n) => Err(OnnxError::Input {
                name: what.into(),
                msg: format!("holds {} values for shape {:?} ({n} elements)", self.len(), self.shape),
            }),
            None => Err(OnnxError::Input { name: what.into(), msg: format!("shape {:?} is too large", self.shape) }),
        }
    }
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Values as `f64` (both storage kinds), for host arithmetic.
    pub fn to_f64(&self) -> Vec<f64> {
        match &self.data {
            Data::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Data::I64(v) => v.iter().map(|&x| x as f64).collect(),
        }
    }
    /// Values as `f32` (integers converted; exact below 2^24).
    pub fn to_f32(&self) -> Vec<f32> {
        match &self.data {
            Data::F32(v) => v.clone(),
            Data::I64(v) => v.iter().map(|&x| x as f32).collect(),
        }
    }
    /// Integer values; float tensors are refused (shape arguments must be integers).
    pub fn to_i64(&self, what: &str) -> Result<Vec<i64>> {
        match &self.data {
            Data::I64(v) => Ok(v.clone()),
            Data::F32(_) => Err(OnnxError::Dtype { what: format!("{what} (expected an integer tensor)"), dtype: self.dtype.name().into() }),
        }
    }

    /// Decodes an ONNX `TensorProto`; `what` names it in errors.
    pub fn from_proto(t: &TensorProto, what: &str) -> Result<HostTensor> {
        if t.data_location == 1 || !t.external_data.is_empty() {
            return Err(OnnxError::UnsupportedModel(format!(
                "tensor {what} keeps its data in an external file; save the model with the weights inside the .onnx file"
            )));
        }
        let dtype = DType::from_onnx(t.data_type, what)?;
        let mut shape = Vec::with_capacity(t.dims.len());
        for &d in &t.dims {
            if d < 0 {
                return Err(OnnxError::Parse(format!("tensor {what} has a negative dimension {d}")));
            }
            shape.push(usize::try_from(d).map_err(|_| OnnxError::Parse(format!("tensor {what} has a dimension of {d}, too large")))?);
        }
        let n = checked_numel(&shape).ok_or_else(|| OnnxError::Parse(format!("tensor {what} of shape {shape:?} is too large")))?;
        let raw = &t.raw_data;
        let bad_len = |have: usize| OnnxError::Parse(format!("tensor {what}: {have} values stored for shape {shape:?} ({n} elements)"));
        let data = if !raw.is_empty() {
            // the byte count is computed checked: n elements may not fit usize in bytes
            if dtype.bytes(n) != Some(raw.len()) {
                return Err(OnnxError::Parse(format!("tensor {what}: {} raw bytes for shape {shape:?} of {}", raw.len(), dtype)));
            }
            match dtype {
                DType::F32 => Data::F32(raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
                DType::F16 => Data::F32(raw.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()),
                DType::BF16 => Data::F32(raw.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect()),
                DType::I64 => Data::I64(raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect()),
                DType::I32 => Data::I64(raw.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect()),
                DType::U32 => Data::I64(raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect()),
                DType::I16 => Data::I64(raw.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]]) as i64).collect()),
                DType::U16 => Data::I64(raw.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]) as i64).collect()),
                DType::I8 => Data::I64(raw.iter().map(|&b| b as i8 as i64).collect()),
                DType::U8 => Data::I64(raw.iter().map(|&b| b as i64).collect()),
                DType::Bool => Data::I64(raw.iter().map(|&b| (b != 0) as i64).collect()),
                DType::I4 | DType::U4 => Data::I64(unpack4(raw.iter().map(|&b| b as i64), n, dtype == DType::I4)),
            }
        } else {
            let d = match dtype {
                DType::F32 => Data::F32(t.float_data.clone()),
                DType::F16 => Data::F32(t.int32_data.iter().map(|&b| half::f16::from_bits(b as u16).to_f32()).collect()),
                DType::BF16 => Data::F32(t.int32_data.iter().map(|&b| half::bf16::from_bits(b as u16).to_f32()).collect()),
                DType::I64 => Data::I64(t.int64_data.clone()),
                DType::U32 => Data::I64(t.uint64_data.iter().map(|&v| v as i64).collect()),
                DType::Bool => Data::I64(t.int32_data.iter().map(|&v| (v != 0) as i64).collect()),
                DType::I32 | DType::I16 | DType::I8 | DType::U8 | DType::U16 => Data::I64(t.int32_data.iter().map(|&v| v as i64).collect()),
                // one packed byte per int32 value
                DType::I4 | DType::U4 => {
                    if t.int32_data.len() != n.div_ceil(2) {
                        return Err(bad_len(t.int32_data.len() * 2));
                    }
                    Data::I64(unpack4(t.int32_data.iter().map(|&v| v as i64), n, dtype == DType::I4))
                }
            };
            let have = match &d {
                Data::F32(v) => v.len(),
                Data::I64(v) => v.len(),
            };
            if have != n {
                return Err(bad_len(have));
            }
            d
        };
        Ok(HostTensor { dtype, shape, data })
    }

    /// Encodes as a `TensorProto` with `raw_data` (the layout onnxruntime reads fastest).
    pub fn to_proto(&self, name: &str) -> TensorProto {
        let mut raw = Vec::new();
        match (&self.data, self.dtype) {
            (Data::I64(v), DType::I4 | DType::U4) => {
                raw = v.chunks(2).map(|p| (p[0] as u8 & 15) | ((p.get(1).copied().unwrap_or(0) as u8 & 15) << 4)).collect();
            }
            (Data::F32(v), DType::F16) => v.iter().for_each(|&x| raw.extend_from_slice(&half::f16::from_f32(x).to_le_bytes())),
            (Data::F32(v), DType::BF16) => v.iter().for_each(|&x| raw.extend_from_slice(&half::bf16::from_f32(x).to_le_bytes())),
            (Data::F32(v), _) => v.iter().for_each(|&x| raw.extend_from_slice(&x.to_le_bytes())),
            (Data::I64(v), d) => v.iter().for_each(|&x| match d {
                DType::I64 => raw.extend_from_slice(&x.to_le_bytes()),
                DType::I32 => raw.extend_from_slice(&(x as i32).to_le_bytes()),
                DType::U32 => raw.extend_from_slice(&(x as u32).to_le_bytes()),
                DType::I16 => raw.extend_from_slice(&(x as i16).to_le_bytes()),
                DType::U16 => raw.extend_from_slice(&(x as u16).to_le_bytes()),
                DType::I8 | DType::U8 | DType::Bool => raw.push(x as u8),
                _ => raw.extend_from_slice(&(x as f32).to_le_bytes()),
            }),
        }
        TensorProto {
            dims: self.shape.iter().map(|&d| d as i64).collect(),
            data_type: self.dtype.to_onnx(),
            name: name.to_string(),
            raw_data: raw,
            ..Default::default()
        }
    }

    /// Converts to `to` with ONNX `Cast` semantics (float → integer truncates toward zero;
    /// → bool is `!= 0`; integer → narrower integer wraps).
    pub fn cast(&self, to: DType) -> HostTensor {
        let data = if to.is_float() {
            let v = self.to_f32();
            let v = match to {
                DType::F16 => v.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect(),
                DType::BF16 => v.iter().map(|&x| half::bf16::from_f32(x).to_f32()).collect(),
                _ => v,
            };
            Data::F32(v)
        } else {
            let v: Vec<i64> = match &self.data {
                Data::I64(v) => v.clone(),
                Data::F32(v) => v.iter().map(|&x| if to == DType::Bool { (x != 0.0) as i64 } else { x.trunc() as i64 }).collect(),
            };
            Data::I64(v.into_iter().map(|x| wrap_int(x, to)).collect())
        };
        HostTensor { dtype: to, shape: self.shape.clone(), data }
    }
}

/// The first `n` 4-bit values of packed bytes (the low nibble first), sign-extended when
/// `signed`.
fn unpack4(bytes: impl Iterator<Item = i64>, n: usize, signed: bool) -> Vec<i64> {
    let nib = |v: i64| if signed { ((v as u8) << 4) as i8 as i64 >> 4 } else { v };
    bytes.flat_map(|b| [nib(b & 15), nib((b >> 4) & 15)]).take(n).collect()
}

/// The number of elements of `shape`, or `None` where the product of its non-zero sizes
/// overflows `usize` (then some partial product, a stride or an outer count, would too, even
/// when a zero size makes the whole product 0). Every shape read from a file or made by host
/// arithmetic is checked with it before anything is allocated for it.
pub fn checked_numel(shape: &[usize]) -> Option<usize> {
    let mut n = 1usize;
    let mut zero = false;
    for &d in shape {
        if d == 0 {
            zero = true;
        } else {
            n = n.checked_mul(d)?;
        }
    }
    Some(if zero { 0 } else { n })
}

/// Wraps an integer into the range of `to` (two's complement), as a C cast does.
pub fn wrap_int(x: i64, to: DType) -> i64 {
    match to {
        DType::I32 => x as i32 as i64,
        DType::U32 => x as u32 as i64,
        DType::I16 => x as i16 as i64,
        DType::U16 => x as u16 as i64,
        DType::I8 => x as i8 as i64,
        DType::U8 => x as u8 as i64,
        DType::Bool => (x != 0) as i64,
        DType::I4 => (((x as u8 & 15) << 4) as i8 >> 4) as i64,
        DType::U4 => x & 15,
        _ => x,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw byte count is compared with a checked `n * size`: a shape of 2^62 + 1 floats
    /// and 4 raw bytes wrapped to a match before (and panicked in debug builds).
    #[test]
    fn raw_data_sizes_are_checked() {
        let t = TensorProto { dims: vec![(1 << 62) + 1], data_type: dt::FLOAT, raw_data: vec![0; 4], ..Default::default() };
        assert!(matches!(HostTensor::from_proto(&t, "w"), Err(OnnxError::Parse(_))));
        let t = TensorProto { dims: vec![0, 1 << 40, 1 << 40], data_type: dt::FLOAT, ..Default::default() };
        assert!(matches!(HostTensor::from_proto(&t, "w"), Err(OnnxError::Parse(m)) if m.contains("too large")));
        let ok = TensorProto { dims: vec![1], data_type: dt::FLOAT, raw_data: vec![0, 0, 128, 63], ..Default::default() };
        assert_eq!(HostTensor::from_proto(&ok, "w").unwrap().to_f32(), vec![1.0]);
    }

    /// 4-bit tensors: two values a byte, the first in the low nibble, `int4` sign-extended,
    /// an odd count leaving the last high nibble unused; raw and `int32_data` alike, and
    /// encoded back to the same bytes. `Cast` to them wraps.
    #[test]
    fn four_bit_tensors_unpack_and_pack() {
        for (code, want) in [(dt::INT4, vec![-8, -1, 7]), (dt::UINT4, vec![8, 15, 7])] {
            let raw = TensorProto { dims: vec![3], data_type: code, raw_data: vec![0xF8, 0x07], ..Default::default() };
            let t = HostTensor::from_proto(&raw, "w").unwrap();
            assert_eq!(t.data, Data::I64(want.clone()));
            assert_eq!(t.to_proto("w").raw_data, vec![0xF8, 0x07]);
            let ints = TensorProto { dims: vec![3], data_type: code, int32_data: vec![0xF8, 0x07], ..Default::default() };
            assert_eq!(HostTensor::from_proto(&ints, "w").unwrap().data, Data::I64(want));
            let short = TensorProto { dims: vec![3], data_type: code, raw_data: vec![0xF8], ..Default::default() };
            assert!(matches!(HostTensor::from_proto(&short, "w"), Err(OnnxError::Parse(_))));
        }
        assert_eq!([9, -9, 16].map(|x| wrap_int(x, DType::I4)), [-7, 7, 0]);
        assert_eq!([9, -1, 16].map(|x| wrap_int(x, DType::U4)), [9, 15, 0]);
        assert_eq!(DType::I4.bytes(3), Some(2));
    }

    #[test]
    fn caller_tensors_are_checked() {
        assert!(HostTensor::f32(vec![2, 2], vec![0.0; 4]).check("x").is_ok());
        assert!(HostTensor::f32(vec![2, 3], vec![0.0; 4]).check("x").is_err());
        assert!(HostTensor::f32(vec![1 << 40, 1 << 40], vec![]).check("x").is_err());
        assert_eq!(checked_numel(&[0, usize::MAX, 2]), None);
        assert_eq!(checked_numel(&[3, 0, 5]), Some(0));
        assert_eq!(checked_numel(&[]), Some(1));
    }
}
