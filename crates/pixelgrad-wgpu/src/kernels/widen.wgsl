// Widen (Op::Widen): packed storage to f32, exactly. KIND 0: i8 and 1: u8, four per u32 word
// (element e in byte e % 4 of word e / 4, little-endian; i8 sign-extended); 2: f16, two per
// word (element e in the low 16 bits of word e / 2 when e is even, the high when odd).
// Integer operations only: the f32 bit pattern is built and stored as bits, so subnormal
// halves, ±0, ±inf and NaN come out exact whatever the device does with float subnormals
// (unpack2x16float may flush them); the conversion is `pg_half_bits` (half_bits.wgsl, put
// before this file). params [n].
override KIND: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if (i >= pu(0u)) {
        return;
    }
    if (KIND == 2u) {
        out[i] = pg_half_bits(x[i >> 1u] >> ((i & 1u) * 16u));
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
