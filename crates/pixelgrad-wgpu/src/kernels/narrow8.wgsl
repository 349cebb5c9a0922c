// f32 values to 8-bit storage, four elements per u32 word (element 4w + j in byte j of word
// w; a last partial word leaves its high bytes zero), the layout upload_int8 writes. One
// invocation per word. params [n elements].
//   KIND 0 (Op::Narrow8, i8) and 1 (u8): the nearest integer, ties to even (WGSL's round),
//     saturated to [-128, 127] or [0, 255]; NaN gives 0.
//   KIND 2 (fromPixels with dtype 'uint8'): pixel values in [0, 1] as
//     floor(clamp(v * 255, 0, 255) + 0.5), the nearest integer, ties up.
override KIND: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

fn byte_of(v: f32) -> u32 {
    if (KIND == 2u) {
        return u32(floor(clamp(v * 255.0, 0.0, 255.0) + 0.5));
    }
    // NaN by its bits: no compiler may fold this test away.
    if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) {
        return 0u;
    }
    if (KIND == 0u) {
        return bitcast<u32>(i32(clamp(round(v), -128.0, 127.0))) & 0xffu;
    }
    return u32(clamp(round(v), 0.0, 255.0));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = flat_index(wid, nwg, lid);
    let n = pu(0u);
    if (w >= (n + 3u) / 4u) {
        return;
    }
    var word = 0u;
    for (var j = 0u; j < 4u; j++) {
        let e = 4u * w + j;
        if (e < n) {
            word = word | (byte_of(x[e]) << (8u * j));
        }
    }
    out[w] = word;
}
