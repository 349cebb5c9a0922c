// Kept hand-written for a measured speed (issue 39): the reductions are defined once as
// programs of the kernel IR (pixelgrad_core::kernel::reductions), and ops/reduce_rendered.rs
// launches them (ReduceKernel::Auto). On SwiftShader (Chromium's WebGPU on the CPU, and
// natively by name) every kind renders from 2^16 input elements up: 0.25-0.69x this kernel's
// time on the large cases (measured natively on Chromium's libvk_swiftshader); below, this
// kernel (small-batch training steps ran 1.5-2x slower with them rendered). On lavapipe sums, log-sum-exp and
// one-group argmax render (0.62-0.97x); this kernel stays where it measured faster there:
// max over a [1024,1024] last axis (the rendered passes took 1.27x its time: their running
// maximum carries a tie count) and argmax over 2^20 elements (2.49x: four passes reading the
// input twice, against one workgroup folding (value, index) pairs); min runs max's program.
// It also does what the rendered passes do not: REPS (a bias gradient's two axes in one
// launch) and the 256-thread TREE on GPU adapters, where neither was measured (no GPU was
// lent). A fused elementwise input (wgsl::with_fused_input) the rendered first pass reads
// the same way (wgsl::fused_program_source); over one, Auto renders on SwiftShader (0.48-0.65x)
// and on lavapipe only log-sum-exp (0.68x): this kernel keeps fused sums there (the rendered
// sum of exp(x) took 0.96-1.28x its time).
// See bench/notes/2026-12-07-webgpu-reductions-rendered.md.
// Reduction of the middle axis of [outer, len, inner] to [outer, 1, inner]. OP: 0 sum, 1 max,
// 2 min, 3 argmax (index of the first maximum, as f32), 4 log-sum-exp (a partial is the
// running maximum v and the sum s of exp(x - v); the result v + log(s)).
// TREE: one workgroup per output; each thread folds a strided part of the axis, then a tree in
// workgroup memory combines the 256 partials (long sums keep their precision this way).
// Otherwise one thread per output walks the axis serially (short axes; on CPU adapters, where
// barriers are costly, axes up to a few thousand: see ops/reduce.rs).
// REPS > 1 (sums only) also sums `reps` copies of that layout `rep_stride` apart: the sum over
// the first and last axes of [reps, outputs, len] (a bias gradient) in one launch.
// params [outputs, len, inner, reps, rep_stride].
override OP: u32 = 0u;
override TREE: bool = true;

// The input section: `reduce_fused` kernels replace it with a fused read of a pending
// elementwise computation (wgsl::with_fused_input), so its values are never stored.
// BEGIN INPUT
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

fn pg_load(i: u32) -> f32 {
    return x[i];
}
// END INPUT

var<workgroup> part_v: array<f32, 256>;
var<workgroup> part_i: array<u32, 256>;
var<workgroup> part_s: array<f32, 256>;

struct Acc {
    v: f32,
    i: u32,
    // log-sum-exp only: the sum of exp(x - v).
    s: f32,
}

fn init() -> Acc {
    switch OP {
        case 0u: { return Acc(0.0, 0u, 0.0); }
        case 2u: { return Acc(from_bits(0x7f800000u), 0xffffffffu, 0.0); }
        default: { return Acc(from_bits(0xff800000u), 0xffffffffu, 0.0); }
    }
}

// One element as a partial.
fn elem(v: f32, j: u32) -> Acc {
    return Acc(v, j, 1.0);
}

fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// Log-sum-exp partials: NaN wins, then +inf; a partial with maximum -inf (nothing but -inf
// so far) adds nothing. Otherwise both sums are rescaled to the larger maximum, so no
// exponent is positive.
fn combine_lse(a: Acc, b: Acc) -> Acc {
    if (is_nan(a.v) || is_nan(b.v)) {
        return Acc(from_bits(0x7fc00000u), 0u, 1.0);
    }
    let inf = from_bits(0x7f800000u);
    if (a.v == inf || b.v == inf) {
        return Acc(inf, 0u, 1.0);
    }
    if (a.v == -inf) {
        return b;
    }
    if (b.v == -inf) {
        return a;
    }
    let m = max(a.v, b.v);
    return Acc(m, 0u, a.s * exp(a.v - m) + b.s * exp(b.v - m));
}

// Combines two partials; for argmax a tie keeps the smaller index (the first maximum).
fn combine(a: Acc, b: Acc) -> Acc {
    switch OP {
        case 0u: { return Acc(a.v + b.v, 0u, 0.0); }
        case 1u: { return Acc(max(a.v, b.v), 0u, 0.0); }
        case 2u: { return Acc(min(a.v, b.v), 0u, 0.0); }
        case 4u: { return combine_lse(a, b); }
        default: {
            if (b.v > a.v || (b.v == a.v && b.i < a.i)) {
                return b;
            }
            return a;
        }
    }
}

fn finish(a: Acc) -> f32 {
    if (OP == 3u) {
        return f32(a.i);
    }
    if (OP == 4u && a.s > 0.0 && abs(a.v) < from_bits(0x7f800000u)) {
        return a.v + log(a.s);
    }
    return a.v;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let outputs = pu(0u);
    let len = pu(1u);
    let inner = pu(2u);
    let reps = pu(3u);
    let rep_stride = pu(4u);
    if (!TREE) {
        // No early return on the per-thread index: WGSL's uniformity analysis (enforced by
        // browsers' Tint, not by naga) would then reject the barriers of the TREE path below.
        let o = flat_index(wid, nwg, lid);
        if (o < outputs) {
            let base = (o / inner) * len * inner + o % inner;
            // Chunks of 64 folded on their own, then combined: a long sum's rounding error
            // grows with 64 + len / 64 rather than with len.
            var acc = init();
            for (var r = 0u; r < reps; r++) {
                for (var j0 = 0u; j0 < len; j0 += 64u) {
                    var part = init();
                    let end = min(len, j0 + 64u);
                    for (var j = j0; j < end; j++) {
                        part = combine(part, elem(pg_load(base + r * rep_stride + j * inner), j));
                    }
                    acc = combine(acc, part);
                }
            }
            out[o] = finish(acc);
        }
        return;
    }
    // Workgroup ids are uniform, so this early return keeps the barriers below uniform.
    let o = flat_group(wid, nwg);
    if (o >= outputs) {
        return;
    }
    let base = (o / inner) * len * inner + o % inner;
    var acc = init();
    for (var r = 0u; r < reps; r++) {
        for (var j = lid; j < len; j += 256u) {
            acc = combine(acc, elem(pg_load(base + r * rep_stride + j * inner), j));
        }
    }
    part_v[lid] = acc.v;
    part_i[lid] = acc.i;
    part_s[lid] = acc.s;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) {
            let r = combine(Acc(part_v[lid], part_i[lid], part_s[lid]), Acc(part_v[lid + s], part_i[lid + s], part_s[lid + s]));
            part_v[lid] = r.v;
            part_i[lid] = r.i;
            part_s[lid] = r.s;
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        out[o] = finish(Acc(part_v[0], part_i[0], part_s[0]));
    }
}
