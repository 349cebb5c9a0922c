// Op::Attention: out[b, n, i, :] = softmax_j(scale * q[b, n, i, :] . k[b, g, j, :] + mask) v[b, g, j, :]
// with g = n / (N / Nkv), never materialising the S x T scores. Each workgroup of 64 owns 64
// query rows of one head (one invocation per row, the row's query and output accumulator in
// private memory, so H and Hv are at most 256: the launcher falls back to the composition
// above that). The keys and values are walked in tiles of `tile` rows, loaded once per
// workgroup into workgroup memory (tile * (H + Hv) <= 4096 floats, at most 64 keys); each
// row scores the tile, then updates its online softmax: the running maximum m, the running
// sum l, the accumulator rescaled by exp(m_old - m_new) once per tile when the maximum grows.
// Hand-written, not rendered from the kernel IR: the IR's programs have no workgroup memory
// or barriers, and no private arrays for a row's accumulator.
// params [B, N, S, H, Nkv, T, Hv, group, f32 scale, masked, mask strides b n i j, tile,
//         row blocks per head]
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

var<workgroup> tiles: array<f32, 4096>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let nh = pu(1u);
    let s = pu(2u);
    let h = pu(3u);
    let nkv = pu(4u);
    let t = pu(5u);
    let hv = pu(6u);
    let group = pu(7u);
    let scale = pf(8u);
    let masked = pu(9u) != 0u;
    let tile = pu(14u);
    let blocks = pu(15u);
    let wg = flat_group(wid, nwg);
    let head = wg / blocks;
    if (head >= pu(0u) * nh) {
        return; // a whole workgroup past the end (the grid folded): uniform
    }
    let row = (wg - head * blocks) * 64u + lid;
    let live = row < s;
    let bi = head / nh;
    let ni = head - bi * nh;
    let kvh = bi * nkv + ni / group;
    let neg_inf = from_bits(0xff800000u);

    var qr: array<f32, 256>;
    var acc: array<f32, 256>;
    var sc: array<f32, 64>;
    let qbase = (head * s + min(row, s - 1u)) * h;
    for (var c = 0u; c < h; c++) {
        qr[c] = q[qbase + c];
    }
    for (var c = 0u; c < hv; c++) {
        acc[c] = 0.0;
    }
    var m = neg_inf;
    var l = 0.0;
    let mrow = bi * pu(10u) + ni * pu(11u) + min(row, s - 1u) * pu(12u);
    let mj = pu(13u);
    let kbase = kvh * t * h;
    let vbase = kvh * t * hv;
    for (var j0 = 0u; j0 < t; j0 += tile) {
        let tl = min(tile, t - j0);
        workgroupBarrier();
        for (var e = lid; e < tl * h; e += 64u) {
            tiles[e] = k[kbase + j0 * h + e];
        }
        let voff = tl * h;
        for (var e = lid; e < tl * hv; e += 64u) {
            tiles[voff + e] = v[vbase + j0 * hv + e];
        }
        workgroupBarrier();
        if (live) {
            var top = neg_inf;
            for (var jj = 0u; jj < tl; jj++) {
                var dot = 0.0;
                let kr = jj * h;
                for (var c = 0u; c < h; c++) {
                    dot += qr[c] * tiles[kr + c];
                }
                var x = dot * scale;
                if (masked) {
                    x += mask[mrow + (j0 + jj) * mj];
                }
                sc[jj] = x;
                top = max(top, x);
            }
            let next = max(m, top);
            if (next > neg_inf) {
                // exp(-inf) is 0 on every adapter, but say it: the first tile with a score
                let alpha = select(exp(m - next), 0.0, m == neg_inf);
                l *= alpha;
                for (var c = 0u; c < hv; c++) {
                    acc[c] *= alpha;
                }
                for (var jj = 0u; jj < tl; jj++) {
                    let p = exp(sc[jj] - next);
                    l += p;
                    let vr = voff + jj * hv;
                    for (var c = 0u; c < hv; c++) {
                        acc[c] += p * tiles[vr + c];
                    }
                }
                m = next;
            }
        }
    }
    if (live) {
        let inv = 1.0 / l;
        let obase = (head * s + row) * hv;
        for (var c = 0u; c < hv; c++) {
            out[obase + c] = acc[c] * inv;
        }
    }
}
