// Widen (Op::Widen): packed storage to f32, exactly. KIND 0: i8 and 1: u8, four per u32 word
// (element e in byte e % 4 of word e / 4, little-endian; i8 sign-extended); 2: f16, two per
// word (element e in the low 16 bits of word e / 2 when e is even, the high when odd).
// Integer operations only: the f32 bit pattern is built and stored as bits, so subnormal
// halves, ±0, ±inf and NaN come out exact whatever the device does with float subnormals
// (unpack2x16float may flush them). params [n].
override KIND: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

// The f32 bits of the IEEE half whose bits are the low 16 of `h`.
fn half_bits(h: u32) -> u32 {
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

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if (i >= pu(0u)) {
        return;
    }
    if (KIND == 2u) {
        out[i] = half_bits(x[i >> 1u] >> ((i & 1u) * 16u));
        return;
    }
    let w = x[i >> 2u];
    let sh = (i & 3u) * 8u;
    if (KIND == 0u) {
        // The byte into the top 8 bits, then an arithmetic shift back: sign extension.
        out[i] = bitcast<u32>(f32(bitcast<i32>(w << (24u - sh)) >> 24u));
    } else {
        out[i] = bitcast<u32>(f32((w >> sh) & 0xffu));
    }
}
