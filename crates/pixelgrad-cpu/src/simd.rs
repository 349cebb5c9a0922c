//! Four f32 lanes: a wasm `v128` in the browser (`simd128`), a plain `[f32; 4]` elsewhere (so
//! native tests run the same kernels). Used by the wasm GEMM (`sgemm`) and the depthwise
//! convolution. There is no fused multiply-add: each product is rounded, then added, like the
//! plain loops.

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) mod lanes {
    use core::arch::wasm32::*;

    /// Four f32 lanes in one wasm `v128`.
    #[derive(Clone, Copy)]
    pub struct F4(v128);

    impl F4 {
        #[inline(always)]
        pub fn zero() -> Self {
            F4(f32x4_splat(0.0))
        }
        #[inline(always)]
        pub fn splat(v: f32) -> Self {
            F4(f32x4_splat(v))
        }
        /// # Safety
        /// `p..p+4` must be readable.
        #[inline(always)]
        pub unsafe fn load(p: *const f32) -> Self {
            F4(v128_load(p as *const v128))
        }
        /// # Safety
        /// `p..p+4` must be writable.
        #[inline(always)]
        pub unsafe fn store(self, p: *mut f32) {
            v128_store(p as *mut v128, self.0)
        }
        /// `self + a * b`.
        #[inline(always)]
        pub fn mul_add(self, a: F4, b: F4) -> F4 {
            F4(f32x4_add(self.0, f32x4_mul(a.0, b.0)))
        }
        #[inline(always)]
        pub fn add(self, o: F4) -> F4 {
            F4(f32x4_add(self.0, o.0))
        }
    }
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
pub(crate) mod lanes {
    /// Four f32 lanes as a plain array (the portable stand-in for `v128`).
    #[derive(Clone, Copy)]
    pub struct F4([f32; 4]);

    impl F4 {
        #[inline(always)]
        pub fn zero() -> Self {
            F4([0.0; 4])
        }
        #[inline(always)]
        pub fn splat(v: f32) -> Self {
            F4([v; 4])
        }
        /// # Safety
        /// `p..p+4` must be readable.
        #[inline(always)]
        pub unsafe fn load(p: *const f32) -> Self {
            F4(std::ptr::read_unaligned(p as *const [f32; 4]))
        }
        /// # Safety
        /// `p..p+4` must be writable.
        #[inline(always)]
        pub unsafe fn store(self, p: *mut f32) {
            std::ptr::write_unaligned(p as *mut [f32; 4], self.0)
        }
        /// `self + a * b`, rounded twice (like the wasm lanes).
        #[inline(always)]
        pub fn mul_add(self, a: F4, b: F4) -> F4 {
            F4(std::array::from_fn(|l| self.0[l] + a.0[l] * b.0[l]))
        }
        #[inline(always)]
        pub fn add(self, o: F4) -> F4 {
            F4(std::array::from_fn(|l| self.0[l] + o.0[l]))
        }
    }
}

pub(crate) use lanes::F4;
