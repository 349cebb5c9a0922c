// Counter-based random numbers, bit-for-bit the Philox4x32-10 of `pixelgrad_core::rng`:
// element i uses counter (i, 0, 0, 0) and key (seed_lo, seed_hi).
// params [n, seed_lo, seed_hi, p0, p1]: uniform low/high or normal mean/std.
override NORMAL: bool = false;

@group(0) @binding(1) var<storage, read_write> out: array<f32>;

// (hi, lo) words of the 64-bit product a * b. WGSL has no 32x32->64 multiply, so the high word
// is assembled from 16-bit halves; every partial sum below fits in 32 bits.
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(hi, a * b);
}

fn philox(c_in: vec4<u32>, k_in: vec2<u32>) -> vec4<u32> {
    var c = c_in;
    var k = k_in;
    for (var round = 0u; round < 10u; round++) {
        if (round > 0u) {
            k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
        }
        let p0 = mulhilo(0xD2511F53u, c.x);
        let p1 = mulhilo(0xCD9E8D57u, c.z);
        c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
    }
    return c;
}

// 24 high bits scaled to [0, 1), exact in f32 (as `rng::unit`).
fn unit(r: u32) -> f32 {
    return f32(r >> 8u) * (1.0 / 16777216.0);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if (i >= pu(0u)) {
        return;
    }
    let w = philox(vec4<u32>(i, 0u, 0u, 0u), vec2<u32>(pu(1u), pu(2u)));
    let p0 = pf(3u);
    let p1 = pf(4u);
    if (NORMAL) {
        // Box-Muller as in rng::normal (there in f64, here in f32), rendered into the prelude
        // from its one definition (kernel::defs::box_muller_kernel).
        let u1 = unit(w.x) + 1.0 / 16777216.0;
        let u2 = unit(w.y);
        let z = pg_box_muller(u1, u2);
        out[i] = p0 + p1 * z;
    } else {
        out[i] = p0 + (p1 - p0) * unit(w.x);
    }
}
