// The f32 bits of the IEEE half whose bits are the low 16 of `h`: integer operations only, so
// subnormal halves, ±0, ±inf and NaN come out exact (`unpack2x16float` may flush subnormals and
// needs naga's SHADER_FLOAT16_IN_FLOAT32 capability). Put before the kernels that read f16
// storage: widen.wgsl and the generated f16 matmuls (ops/matmul_tiled_src.rs).
fn pg_half_bits(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) {
        if (m == 0u) {
            return sign | 0x7f800000u;
        }
        // NaN: sign and payload kept, quiet (as the host's f16 -> f32 conversion does).
        return sign | 0x7fc00000u | (m << 13u);
    }
    if (e == 0u) {
        if (m == 0u) {
            return sign;
        }
        // Subnormal: m * 2^-24 with the leading one at bit p, a normal f32 of exponent p - 24.
        let p = firstLeadingBit(m);
        return sign | ((p + 103u) << 23u) | ((m << (23u - p)) & 0x7fffffu);
    }
    return sign | ((e + 112u) << 23u) | (m << 13u);
}
