//! WGSL source generator of the register-blocked matmul (see `matmul_cpu.rs`). Plain `std`
//! only, so measurement examples can include this file with `#[path]` and time the very
//! kernels the backend runs.
//!
//! Each operand layout (transposed or not, readable as aligned `vec4`s or not) gets its own
//! source instead of `override` constants with both branches in one shader: in Chromium the
//! WGSL compiler and SwiftShader's JIT pay for every branch before dead ones are removed,
//! and for a fully unrolled kernel that was most of a multi-second pipeline compile.

/// One kernel: a `rows` x `cols` block of C per invocation, `lanes` invocations per
/// workgroup along columns, and the operand layout it is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    /// Rows of C per invocation (multiple of 4).
    pub rows: usize,
    /// Columns of C per invocation (multiple of 4).
    pub cols: usize,
    /// Invocations per workgroup.
    pub lanes: usize,
    /// A is stored as [K, M].
    pub trans_a: bool,
    /// B is stored as [N, K].
    pub trans_b: bool,
    /// A's contiguous dimension is a multiple of 4: read it as aligned `vec4`s.
    pub vec_a: bool,
    /// Same for B.
    pub vec_b: bool,
    /// N is a multiple of 4: C is written as aligned `vec4`s (implied by `vec_b` when B is
    /// not transposed).
    pub vec_c: bool,
    /// Any layout: A and B addressed through run-time row / column / K strides (params
    /// 5..9), element by element; `trans_*` and `vec_a` / `vec_b` are ignored. One
    /// pipeline then serves every matmul of a block shape.
    pub strided: bool,
    /// A is loaded once per workgroup instead of once per invocation: each of the `lanes`
    /// invocations loads every `lanes`-th row (or group of four rows) of the block and
    /// `subgroupBroadcast` hands the values to the others. Needs subgroup operations and
    /// subgroups of exactly `lanes` invocations, so one workgroup is one subgroup; `rows` a
    /// multiple of `lanes`. Ignored when `strided`.
    pub share_a: bool,
}

/// Reads element `idx` (a WGSL u32 expression) of `buf`, declared as `vec4`s when `vec`.
fn elem(buf: &str, vec: bool, idx: &str) -> String {
    if vec {
        format!("{buf}[({idx}) >> 2u][({idx}) & 3u]")
    } else {
        format!("{buf}[{idx}]")
    }
}

/// WGSL for `v` (without the common prelude). params [M, N, K, a_batch_stride,
/// b_batch_stride, (the strided variant's four strides,) batches summed]; grid
/// (ceil(N / (cols * lanes)), ceil(M / rows), batch), or z = 1 when every output sums
/// `batches summed` products. Rows, columns
/// and K steps past the edge are clamped for loads (see the stores below), so any shape
/// works.
pub fn source(v: &Variant) -> String {
    source_with(v, None)
}

/// [`source`] with an epilogue: `epi` is `(wgsl, inputs)`, the epilogue's bindings and
/// `fn pg_epi(i, v)` (`crate::wgsl::Epilogue::source`, its inputs bound from 3 on). The
/// kernel then also writes `pg_epi(index, value)` of every result into `e`: bindings a = 1,
/// b = 2, the epilogue's inputs, then `c` and `e`.
pub fn source_with(v: &Variant, epi: Option<(&str, usize)>) -> String {
    let Variant { rows, cols, lanes, trans_a: ta, trans_b: tb, vec_a: va, vec_b: vb, vec_c: vc, strided: st, share_a: sh } = *v;
    let (ta, tb, va, vb, sh) = if st { (false, false, false, false, false) } else { (ta, tb, va, vb, sh) };
    // Aligned B columns are aligned C columns.
    let vc = vc || (!tb && vb);
    let (rg, cg) = (rows / 4, cols / 4);
    let ty = |vec: bool| if vec { "vec4<f32>" } else { "f32" };
    let mut s = String::new();
    let mut w = |line: String| {
        s.push_str(&line);
        s.push('\n');
    };
    w(format!("// register-blocked matmul {rows}x{cols}x{lanes}, trans_a {ta}, trans_b {tb}, vec_a {va}, vec_b {vb}, vec_c {vc}, strided {st}, share_a {sh}"));
    w(format!("@group(0) @binding(1) var<storage, read> a: array<{}>;", ty(va)));
    w(format!("@group(0) @binding(2) var<storage, read> b: array<{}>;", ty(vb)));
    let c_binding = 3 + epi.map_or(0, |(_, n)| n);
    w(format!("@group(0) @binding({c_binding}) var<storage, read_write> c: array<{}>;", ty(vc)));
    if let Some((src, _)) = epi {
        w(format!("@group(0) @binding({}) var<storage, read_write> e: array<{}>;", c_binding + 1, ty(vc)));
        w(src.to_string());
    }
    w(format!("@compute @workgroup_size({lanes})"));
    w("fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {".into());
    w("    let m = pu(0u);\n    let n = pu(1u);\n    let kk = pu(2u);".into());
    // Batches summed into each output (1: one batch entry, wid.z), after the strides.
    w(format!("    let nb = pu({}u);\n    let c_off = wid.z * m * n;", if st { 9 } else { 5 }));
    w(format!("    let row0 = wid.y * {rows}u;"));
    w(format!("    let col0 = (wid.x * {lanes}u + lid) * {cols}u;"));
    if sh {
        // Subgroup operations need every lane of the subgroup: lanes past the column edge
        // keep computing (on clamped columns) and only skip their stores. `row0` is the same
        // for the whole workgroup.
        w("    if (row0 >= m) {\n        return;\n    }".into());
    } else {
        // No barriers below, so lanes past the edge may leave early.
        w("    if (row0 >= m || col0 >= n) {\n        return;\n    }".into());
    }
    for i in 0..rows {
        for g in 0..cg {
            w(format!("    var acc{i}_{g} = vec4<f32>(0.0);"));
        }
    }
    w("    for (var zb = 0u; zb < nb; zb++) {\n    let a_off = (wid.z + zb) * pu(3u);\n    let b_off = (wid.z + zb) * pu(4u);".into());
    // Element (r, k) of A is at ar{i} + k * (trans_a ? m : 1) with ar{i} the row's base;
    // element (k, c) of B at bc{j} + k * (trans_b ? 1 : n).
    if st {
        w("    let a_rs = pu(5u);\n    let a_ks = pu(6u);\n    let b_ks = pu(7u);\n    let b_cs = pu(8u);".into());
    }
    for i in (0..rows).filter(|_| !sh) {
        let base = if st {
            format!("min(row0 + {i}u, m - 1u) * a_rs")
        } else if ta {
            format!("min(row0 + {i}u, m - 1u)")
        } else {
            format!("min(row0 + {i}u, m - 1u) * kk")
        };
        w(format!("    let ar{i} = a_off + {base};"));
    }
    // Shared A: this lane's rows (row units) or groups of four rows (transposed, aligned A).
    let group_units = ta && va;
    let units = if group_units { rows / 4 } else { rows };
    let per_lane = units.div_ceil(lanes);
    if sh {
        for t in 0..per_lane {
            // Units past the block (fewer units than lanes) load the last one again.
            let unit = format!("min({}u + lid, {}u)", t * lanes, units - 1);
            if group_units {
                w(format!("    let sg{t} = a_off + min(row0 + 4u * {unit}, m - 4u);"));
            } else {
                let base = if ta { format!("min(row0 + {unit}, m - 1u)") } else { format!("min(row0 + {unit}, m - 1u) * kk") };
                w(format!("    let sr{t} = a_off + {base};"));
            }
        }
    }
    // Columns past the edge read the last column, or with vec4 stores of C the last group
    // of four (so a group past the edge holds exactly the last group's values).
    for j in 0..cols {
        let col = if vc { format!("min(col0 + {}u, n - 4u) + {}u", j / 4 * 4, j % 4) } else { format!("min(col0 + {j}u, n - 1u)") };
        let base = if st {
            format!("({col}) * b_cs")
        } else if tb {
            format!("({col}) * kk")
        } else {
            col
        };
        w(format!("    let bc{j} = b_off + {base};"));
    }
    // Aligned vec4 groups along the contiguous dimension: four rows (trans_a) or columns
    // (!trans_b) at once, the group's start clamped so it stays inside the matrix (m or n
    // is a multiple of 4 there, so a clamped group is either whole or entirely past the
    // edge, whose values are never stored).
    if ta && va && !sh {
        for g in 0..rg {
            w(format!("    let ag{g} = a_off + min(row0 + {}u, m - 4u);", 4 * g));
        }
    }
    if !tb && vb {
        for g in 0..cg {
            w(format!("    let bg{g} = b_off + min(col0 + {}u, n - 4u);", 4 * g));
        }
    }
    // Element (row with base `base`, k) of A.
    let a_at = |base: &str, k: &str| {
        let idx = if st {
            format!("{base} + ({k}) * a_ks")
        } else if ta {
            format!("{base} + ({k}) * m")
        } else {
            format!("{base} + {k}")
        };
        elem("a", va, &idx)
    };
    let b_at = |j: usize, k: &str| {
        let idx = if st {
            format!("bc{j} + ({k}) * b_ks")
        } else if tb {
            format!("bc{j} + {k}")
        } else {
            format!("bc{j} + ({k}) * n")
        };
        elem("b", vb, &idx)
    };
    // One loop over K in steps of 4. When K % 4 may be nonzero (no layout here implies
    // K % 4 == 0), the last step's k indices are clamped to K - 1 and the values loaded there
    // replaced by zeros (select, not a multiply: 0 * inf is NaN). No second loop for the
    // tail: every branch in the shader costs compile time in SwiftShader.
    let mask = !((!ta && va) || (tb && vb));
    let kq = |q: usize| {
        if q == 0 {
            "k0".to_string()
        } else if mask {
            format!("k{q}")
        } else {
            format!("k0 + {q}u")
        }
    };
    w("    for (var k0 = 0u; k0 < kk; k0 += 4u) {".into());
    if mask {
        for q in 1..4 {
            w(format!("        let k{q} = min(k0 + {q}u, kk - 1u);"));
        }
    }
    let keep = |q: usize, v: String| if mask && q > 0 { format!("select(vec4<f32>(0.0), {v}, k0 + {q}u < kk)") } else { v };
    // b{q}_{g}: B at (k0 + q, columns 4g..4g+4).
    if tb && vb {
        for j in 0..cols {
            w(format!("        let t{j} = b[(bc{j} + k0) >> 2u];"));
        }
    }
    for q in 0..4 {
        let k = kq(q);
        for g in 0..cg {
            let v = if tb && vb {
                format!("vec4<f32>(t{}[{q}], t{}[{q}], t{}[{q}], t{}[{q}])", 4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3)
            } else if vb {
                format!("b[(bg{g} + ({k}) * n) >> 2u]")
            } else {
                let e: Vec<String> = (0..4).map(|x| b_at(4 * g + x, &k)).collect();
                format!("vec4<f32>({})", e.join(", "))
            };
            w(format!("        let b{q}_{g} = {};", keep(q, v)));
        }
    }
    // a{i}: A at (row i, k0..k0+4), for the row whose base offset is `base`.
    let a_row = |base: &str| -> String {
        if va && !ta {
            format!("a[({base} + k0) >> 2u]")
        } else if mask {
            let e: Vec<String> = (0..4).map(|q| a_at(base, &kq(q))).collect();
            format!("select(vec4<f32>(0.0), vec4<f32>({}), vec4<bool>(true, k0 + 1u < kk, k0 + 2u < kk, k0 + 3u < kk))", e.join(", "))
        } else {
            let e: Vec<String> = (0..4).map(|q| a_at(base, &kq(q))).collect();
            format!("vec4<f32>({})", e.join(", "))
        }
    };
    // Aligned groups of four rows of a transposed A: u{g}_{q} holds rows 4g..4g+4 at k0 + q.
    let group = |name: &str, base: &str| {
        (0..4).map(|q| format!("        let {name}_{q} = {};", keep(q, format!("a[({base} + ({}) * m) >> 2u]", kq(q))))).collect::<Vec<_>>()
    };
    if sh && group_units {
        for t in 0..per_lane {
            for line in group(&format!("s{t}"), &format!("sg{t}")) {
                w(line);
            }
        }
        // Group g came from lane g % lanes, unit g / lanes.
        for g in 0..rg {
            for q in 0..4 {
                w(format!("        let u{g}_{q} = subgroupBroadcast(s{}_{q}, {}u);", g / lanes, g % lanes));
            }
        }
    } else if sh {
        for t in 0..per_lane {
            w(format!("        let s{t} = {};", a_row(&format!("sr{t}"))));
        }
    } else if ta && va {
        for g in 0..rg {
            for line in group(&format!("u{g}"), &format!("ag{g}")) {
                w(line);
            }
        }
    }
    for i in 0..rows {
        let v = if ta && va {
            let (g, e) = (i / 4, i % 4);
            format!("vec4<f32>(u{g}_0[{e}], u{g}_1[{e}], u{g}_2[{e}], u{g}_3[{e}])")
        } else if sh {
            format!("subgroupBroadcast(s{}, {}u)", i / lanes, i % lanes)
        } else {
            a_row(&format!("ar{i}"))
        };
        w(format!("        let a{i} = {v};"));
    }
    for i in 0..rows {
        for q in 0..4 {
            for g in 0..cg {
                w(format!("        acc{i}_{g} = fma(vec4<f32>(a{i}[{q}]), b{q}_{g}, acc{i}_{g});"));
            }
        }
    }
    w("    }\n    }".into());
    if sh {
        // Past every subgroup operation: lanes past the column edge may leave now.
        w("    if (col0 >= n) {\n        return;\n    }".into());
    }
    // Stores without a branch per element: rows and columns past the edge go to the last
    // row / column (group of four columns with vec4 stores), in program order, so the last
    // value each such address receives is the one that belongs there: past-edge rows and
    // columns were loaded clamped to that same last row / column / group, so their
    // accumulators hold its exact values. No other invocation writes these addresses
    // (blocks past the edge returned above).
    for i in 0..rows {
        if epi.is_some() {
            w(format!("    let r{i} = min(row0 + {i}u, m - 1u);"));
        }
        w(format!("    let o{i} = c_off + min(row0 + {i}u, m - 1u) * n;"));
    }
    if vc {
        for g in 0..cg {
            w(format!("    let og{g} = min(col0 + {}u, n - 4u);", 4 * g));
        }
        for i in 0..rows {
            for g in 0..cg {
                w(format!("    c[(o{i} + og{g}) >> 2u] = acc{i}_{g};"));
                if epi.is_some() {
                    let lane = |q: usize| format!("pg_epi(o{i} + og{g} + {q}u, wid.z, r{i}, og{g} + {q}u, acc{i}_{g}[{q}])");
                    w(format!("    e[(o{i} + og{g}) >> 2u] = vec4<f32>({}, {}, {}, {});", lane(0), lane(1), lane(2), lane(3)));
                }
            }
        }
    } else {
        for j in 0..cols {
            w(format!("    let oc{j} = min(col0 + {j}u, n - 1u);"));
        }
        for i in 0..rows {
            for j in 0..cols {
                w(format!("    c[o{i} + oc{j}] = acc{i}_{}[{}];", j / 4, j % 4));
                if epi.is_some() {
                    w(format!("    e[o{i} + oc{j}] = pg_epi(o{i} + oc{j}, wid.z, r{i}, oc{j}, acc{i}_{}[{}]);", j / 4, j % 4));
                }
            }
        }
    }
    w("}".into());
    s
}

/// WGSL of the split-K register matmul for small outputs with a long K, both operands
/// contiguous along K and aligned (A [M, K], B stored [N, K], K a multiple of 4): the
/// workgroup's `lanes` invocations (one subgroup, as for `share_a`) own the same `rows` x
/// `cols` block of C and take turns along K, four values each, then `subgroupAdd` sums
/// their partial blocks and the first lane stores. This is the weight gradient of a
/// convolution (dC [O, P] times columns [C*kh*kw, P] transposed): with the usual kernels its
/// 8x9 output left 7 of 8 lanes idle for 676 K steps. params and grid as [`source`].
pub fn source_split_k(rows: usize, cols: usize, lanes: usize) -> String {
    let cg = cols / 4;
    let mut s = String::new();
    let mut w = |line: String| {
        s.push_str(&line);
        s.push('\n');
    };
    w(format!("// split-K register matmul {rows}x{cols}, {lanes} lanes along K, A [M, K], B [N, K]"));
    w("@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;".into());
    w("@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;".into());
    w("@group(0) @binding(3) var<storage, read_write> c: array<f32>;".into());
    w(format!("@compute @workgroup_size({lanes})"));
    w("fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {".into());
    w("    let m = pu(0u);\n    let n = pu(1u);\n    let kk = pu(2u);".into());
    w("    let nb = pu(5u);\n    let c_off = wid.z * m * n;".into());
    w(format!("    let row0 = wid.y * {rows}u;"));
    w(format!("    let col0 = wid.x * {cols}u;"));
    // The same for the whole workgroup, so leaving keeps the subgroup whole.
    w("    if (row0 >= m || col0 >= n) {\n        return;\n    }".into());
    for i in 0..rows {
        for g in 0..cg {
            w(format!("    var acc{i}_{g} = vec4<f32>(0.0);"));
        }
    }
    w("    for (var zb = 0u; zb < nb; zb++) {\n    let a_off = (wid.z + zb) * pu(3u);\n    let b_off = (wid.z + zb) * pu(4u);".into());
    for i in 0..rows {
        w(format!("    let ar{i} = a_off + min(row0 + {i}u, m - 1u) * kk;"));
    }
    for j in 0..cols {
        w(format!("    let bc{j} = b_off + min(col0 + {j}u, n - 1u) * kk;"));
    }
    // A uniform loop (every lane runs every step, so the subgroup stays whole for the sum
    // after it); a lane past the end of K loads the last four values and drops them.
    w(format!("    for (var k00 = 0u; k00 < kk; k00 += {}u) {{", 4 * lanes));
    w("        let k = k00 + 4u * lid;".into());
    w("        let k0 = min(k, kk - 4u);".into());
    w("        let live = k < kk;".into());
    for i in 0..rows {
        w(format!("        let a{i} = select(vec4<f32>(0.0), a[(ar{i} + k0) >> 2u], live);"));
    }
    // Both dropped, not just one: 0 * inf is NaN.
    for j in 0..cols {
        w(format!("        let t{j} = select(vec4<f32>(0.0), b[(bc{j} + k0) >> 2u], live);"));
    }
    for q in 0..4 {
        for g in 0..cg {
            w(format!("        let b{q}_{g} = vec4<f32>(t{}[{q}], t{}[{q}], t{}[{q}], t{}[{q}]);", 4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3));
        }
    }
    for i in 0..rows {
        for q in 0..4 {
            for g in 0..cg {
                w(format!("        acc{i}_{g} = fma(vec4<f32>(a{i}[{q}]), b{q}_{g}, acc{i}_{g});"));
            }
        }
    }
    w("    }\n    }".into());
    for i in 0..rows {
        for g in 0..cg {
            w(format!("    let s{i}_{g} = subgroupAdd(acc{i}_{g});"));
        }
    }
    w("    if (lid != 0u) {\n        return;\n    }".into());
    // Past-edge rows and columns hold the last row's / column's values (clamped loads), and
    // go to that same address after it, in program order (see `source`).
    for i in 0..rows {
        w(format!("    let o{i} = c_off + min(row0 + {i}u, m - 1u) * n;"));
    }
    for j in 0..cols {
        w(format!("    let oc{j} = min(col0 + {j}u, n - 1u);"));
    }
    for i in 0..rows {
        for j in 0..cols {
            w(format!("    c[o{i} + oc{j}] = s{i}_{}[{}];", j / 4, j % 4));
        }
    }
    w("}".into());
    s
}
