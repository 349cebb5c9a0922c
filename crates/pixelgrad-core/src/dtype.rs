//! [`DType`]: the element types of stored tensors and of kernel values (re-exported as
//! `kernel::DType`, where the kernel IR types its nodes with it).

use std::fmt;

/// Element types of kernel values. Everything stored today is `F32`; the other types exist so
/// the quantisation and half-precision work can add loads, stores and arithmetic without
/// changing the IR (renderers report a clear error for a type they do not handle yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 16-bit IEEE float.
    F16,
    /// 32-bit signed integer (accumulators of 8-bit products).
    I32,
    /// 8-bit signed integer, storage only: loading one yields an `I32`; four pack into one
    /// 32-bit word on the GPU.
    I8,
    /// 8-bit unsigned integer, storage only (as [`DType::I8`]).
    U8,
    /// Comparison results and select conditions. Never stored.
    Bool,
}

impl DType {
    /// True for the floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16)
    }

    /// Bytes per stored element (1 for the 8-bit types; `Bool` is never stored, counted as 4).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::Bool => 4,
            DType::F16 => 2,
            DType::I8 | DType::U8 => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::I32 => "i32",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::Bool => "bool",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
