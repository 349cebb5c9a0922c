// fromPixels with dtype 'uint8': f32 pixel values in [0, 1] (the from_pixels kernel's output
// with mean 0, std 1) to 8-bit storage, four elements per u32 word (element 4w + j in byte j
// of word w; a last partial word leaves its high bytes zero), the layout upload_int8 writes.
// One invocation per word. Each value becomes floor(clamp(v * 255, 0, 255) + 0.5): the
// nearest integer, ties up. params [n elements].
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

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
            let b = u32(floor(clamp(x[e] * 255.0, 0.0, 255.0) + 0.5));
            word = word | (b << (8u * j));
        }
    }
    out[w] = word;
}
