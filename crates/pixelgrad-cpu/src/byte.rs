//! The 8-bit weight types (`i8`, `u8`) that [`pixelgrad_core::Op::MatMulI8`] reads, widened to
//! `i32` (`crate::int8` and its integer GEMM, `crate::igemm`).

/// One 8-bit weight widened to `i32`.
pub(crate) trait Byte: Copy + Sync {
    /// Largest magnitude of the type (128 for i8, 255 for u8).
    const MAX_ABS: u64;
    fn widen(self) -> i32;
}

impl Byte for i8 {
    const MAX_ABS: u64 = 128;
    #[inline]
    fn widen(self) -> i32 {
        self as i32
    }
}

impl Byte for u8 {
    const MAX_ABS: u64 = 255;
    #[inline]
    fn widen(self) -> i32 {
        self as i32
    }
}
