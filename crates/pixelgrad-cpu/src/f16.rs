//! f16 to f32 conversion without branches, so that the compiler turns the loop into SIMD
//! (wasm `simd128`, SSE2) instead of calling the `half` crate's per-value conversion, which in
//! the browser is a branchy software routine: [`crate::CpuBackend`]'s `Op::Widen` of f16
//! weights is then a pass as fast as a copy.
//!
//! The f16's exponent and mantissa bits, moved to the same places of an f32, are the f32 value
//! times 2^-112 (subnormal f16 values become subnormal f32 ones), so one exact multiplication
//! by 2^112 gives the value; infinities and NaN (exponent all ones) take the f32's all-ones
//! exponent instead, NaN with its quiet bit set as `half` sets it. Every one of the 65,536 bit
//! patterns matches `half::f16::to_f32` (test below).

/// 2^112 as f32 bits.
const SCALE: u32 = 0x7780_0000;

/// One f16 (as bits) widened to f32.
#[inline(always)]
fn widen_bits(h: u16) -> f32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let em = h & 0x7fff;
    let finite = (f32::from_bits(em << 13) * f32::from_bits(SCALE)).to_bits();
    let quiet = if em > 0x7c00 { 0x0040_0000 } else { 0 };
    let special = (em << 13) | 0x7f80_0000 | quiet;
    f32::from_bits(if em >= 0x7c00 { special } else { finite } | sign)
}

/// Every value of `src` widened to f32, exactly.
pub(crate) fn widen_f16(src: &[half::f16]) -> Vec<f32> {
    src.iter().map(|x| widen_bits(x.to_bits())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f16 bit pattern widens to the bits `half` gives (NaN payloads included).
    #[test]
    fn every_bit_pattern_matches_half() {
        let all: Vec<half::f16> = (0..=u16::MAX).map(half::f16::from_bits).collect();
        let got = widen_f16(&all);
        for (h, g) in all.iter().zip(&got) {
            assert_eq!(g.to_bits(), h.to_f32().to_bits(), "f16 bits {:#06x}", h.to_bits());
        }
    }
}
