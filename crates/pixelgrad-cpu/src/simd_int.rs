//! Integer lanes for the 8-bit GEMM (`crate::igemm`): eight i16 values multiplied in adjacent
//! pairs with eight others, each pair's two products summed into one of four i32 lanes, and
//! those added to an accumulator with wrapping `i32` addition.
//!
//! - wasm `simd128`: `i32x4_dot_i16x8` then `i32x4_add`;
//! - x86_64: SSE2's `pmaddwd` (`_mm_madd_epi16`) then `paddd` (SSE2 is part of every x86_64
//!   CPU, so no runtime detection is needed; where the CPU has AVX2, detected at run time, the
//!   GEMM takes `crate::igemm_avx2`'s 256-bit kernel instead, with the same sums);
//! - elsewhere: plain arrays with the same arithmetic, so native tests on any machine run the
//!   kernel's blocking and packing.
//!
//! A pair sum `a0 * b0 + a1 * b1` overflows i32 only when all four are -32768; the GEMM's
//! left operand is an 8-bit value (|a| <= 255), so every pair sum is exact and the
//! accumulation is exactly the wrapping `i32` sum [`pixelgrad_core::Op::MatMulI8`] defines.

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod lanes {
    use core::arch::wasm32::*;

    /// Eight i16 lanes.
    #[derive(Clone, Copy)]
    pub struct Pairs(v128);

    /// Four i32 accumulator lanes.
    #[derive(Clone, Copy)]
    pub struct Acc(v128);

    impl Pairs {
        /// Four copies of one packed pair word (`lo | hi << 16`).
        #[inline(always)]
        pub fn splat(word: i32) -> Self {
            Pairs(i32x4_splat(word))
        }
        #[inline(always)]
        pub fn load(v: &[i16; 8]) -> Self {
            // SAFETY: `v` is 16 readable bytes; wasm's v128.load needs no alignment.
            Pairs(unsafe { v128_load(v.as_ptr() as *const v128) })
        }
    }

    impl Acc {
        #[inline(always)]
        pub fn load(v: &[i32; 4]) -> Self {
            // SAFETY: as in `Pairs::load`.
            Acc(unsafe { v128_load(v.as_ptr() as *const v128) })
        }
        #[inline(always)]
        pub fn store(self, v: &mut [i32; 4]) {
            // SAFETY: `v` is 16 writable bytes; no alignment needed.
            unsafe { v128_store(v.as_mut_ptr() as *mut v128, self.0) }
        }
        /// `self + (a[2l] * b[2l] + a[2l+1] * b[2l+1])` in lane `l`, wrapping.
        #[inline(always)]
        pub fn dot_add(self, a: Pairs, b: Pairs) -> Acc {
            Acc(i32x4_add(self.0, i32x4_dot_i16x8(a.0, b.0)))
        }
    }
}

#[cfg(all(target_arch = "x86_64", not(all(target_arch = "wasm32", target_feature = "simd128"))))]
mod lanes {
    use core::arch::x86_64::*;

    /// Eight i16 lanes.
    #[derive(Clone, Copy)]
    pub struct Pairs(__m128i);

    /// Four i32 accumulator lanes.
    #[derive(Clone, Copy)]
    pub struct Acc(__m128i);

    impl Pairs {
        /// Four copies of one packed pair word (`lo | hi << 16`).
        #[inline(always)]
        pub fn splat(word: i32) -> Self {
            // SAFETY: SSE2 is part of every x86_64 CPU.
            Pairs(unsafe { _mm_set1_epi32(word) })
        }
        #[inline(always)]
        pub fn load(v: &[i16; 8]) -> Self {
            // SAFETY: `v` is 16 readable bytes; `loadu` needs no alignment.
            Pairs(unsafe { _mm_loadu_si128(v.as_ptr() as *const __m128i) })
        }
    }

    impl Acc {
        #[inline(always)]
        pub fn load(v: &[i32; 4]) -> Self {
            // SAFETY: as in `Pairs::load`.
            Acc(unsafe { _mm_loadu_si128(v.as_ptr() as *const __m128i) })
        }
        #[inline(always)]
        pub fn store(self, v: &mut [i32; 4]) {
            // SAFETY: `v` is 16 writable bytes; `storeu` needs no alignment.
            unsafe { _mm_storeu_si128(v.as_mut_ptr() as *mut __m128i, self.0) }
        }
        /// `self + (a[2l] * b[2l] + a[2l+1] * b[2l+1])` in lane `l`, wrapping.
        #[inline(always)]
        pub fn dot_add(self, a: Pairs, b: Pairs) -> Acc {
            // SAFETY: SSE2 is part of every x86_64 CPU.
            Acc(unsafe { _mm_add_epi32(self.0, _mm_madd_epi16(a.0, b.0)) })
        }
    }
}

#[cfg(not(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128"))))]
mod lanes {
    /// Eight i16 lanes as a plain array.
    #[derive(Clone, Copy)]
    pub struct Pairs([i16; 8]);

    /// Four i32 accumulator lanes as a plain array.
    #[derive(Clone, Copy)]
    pub struct Acc([i32; 4]);

    impl Pairs {
        /// Four copies of one packed pair word (`lo | hi << 16`).
        #[inline(always)]
        pub fn splat(word: i32) -> Self {
            let (lo, hi) = (word as i16, (word >> 16) as i16);
            Pairs([lo, hi, lo, hi, lo, hi, lo, hi])
        }
        #[inline(always)]
        pub fn load(v: &[i16; 8]) -> Self {
            Pairs(*v)
        }
    }

    impl Acc {
        #[inline(always)]
        pub fn load(v: &[i32; 4]) -> Self {
            Acc(*v)
        }
        #[inline(always)]
        pub fn store(self, v: &mut [i32; 4]) {
            *v = self.0;
        }
        /// `self + (a[2l] * b[2l] + a[2l+1] * b[2l+1])` in lane `l`, wrapping.
        #[inline(always)]
        pub fn dot_add(self, a: Pairs, b: Pairs) -> Acc {
            Acc(std::array::from_fn(|l| {
                let pair = (a.0[2 * l] as i32 * b.0[2 * l] as i32).wrapping_add(a.0[2 * l + 1] as i32 * b.0[2 * l + 1] as i32);
                self.0[l].wrapping_add(pair)
            }))
        }
    }
}

pub(crate) use lanes::{Acc, Pairs};

/// Two i16 values as one pair word for [`Pairs::splat`] (`lo` in the low half, as the lanes
/// lie in memory on every target: wasm and x86 are little-endian).
#[inline(always)]
pub(crate) fn pair_word(lo: i16, hi: i16) -> i32 {
    (lo as u16 as u32 | (hi as u16 as u32) << 16) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lanes compute pairwise products summed and added with wrapping, whatever the
    /// target's implementation, including the extremes of both operands.
    #[test]
    fn dot_add_is_the_wrapping_pair_sum() {
        let b: [i16; 8] = [-32768, 32767, 1, -1, 255, -255, 0, 12345];
        for (lo, hi) in [(255i16, -128i16), (-128, 127), (0, 1), (-1, -1)] {
            let start = [i32::MAX, i32::MIN, 7, -7];
            let mut got = [0i32; 4];
            Acc::load(&start).dot_add(Pairs::splat(pair_word(lo, hi)), Pairs::load(&b)).store(&mut got);
            for l in 0..4 {
                let want = start[l].wrapping_add(lo as i32 * b[2 * l] as i32 + hi as i32 * b[2 * l + 1] as i32);
                assert_eq!(got[l], want, "lane {l} of ({lo}, {hi})");
            }
        }
    }
}
