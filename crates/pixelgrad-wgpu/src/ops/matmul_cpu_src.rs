//! WGSL source generator of the register-blocked matmul (see `matmul_cpu.rs`). Plain `std`
//! only, so measurement examples can include this file with `#[path]` and time the very
//! kernels the backend runs.

/// Helpers shared by every block size: element and 4-element reads of A (element (r, k))
/// and B (element (k, c)) in either storage order. `l` clamps indices past the edge.
const HELPERS: &str = r#"
override TRANS_A: bool = false;
override TRANS_B: bool = false;
override VEC_A: bool = false;
override VEC_B: bool = false;

@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

fn elem_a(off: u32, r: u32, k: u32, m: u32, kk: u32) -> f32 {
    var i = off + r * kk + k;
    if (TRANS_A) {
        i = off + k * m + r;
    }
    return a[i >> 2u][i & 3u];
}

fn elem_b(off: u32, k: u32, col: u32, n: u32, kk: u32) -> f32 {
    var i = off + k * n + col;
    if (TRANS_B) {
        i = off + col * kk + k;
    }
    return b[i >> 2u][i & 3u];
}

// A at (r, k0..k0+4).
fn a_k4(off: u32, r: u32, k0: u32, m: u32, kk: u32) -> vec4<f32> {
    if (VEC_A && !TRANS_A) {
        return a[(off + r * kk + k0) >> 2u];
    }
    return vec4<f32>(elem_a(off, r, k0, m, kk), elem_a(off, r, k0 + 1u, m, kk), elem_a(off, r, k0 + 2u, m, kk), elem_a(off, r, k0 + 3u, m, kk));
}

// A at (r0..r0+4, k), rows clamped to m - 1.
fn a_r4(off: u32, r0: u32, k: u32, m: u32, kk: u32) -> vec4<f32> {
    if (VEC_A && TRANS_A) {
        return a[(off + k * m + min(r0, m - 4u)) >> 2u];
    }
    let l = m - 1u;
    return vec4<f32>(elem_a(off, min(r0, l), k, m, kk), elem_a(off, min(r0 + 1u, l), k, m, kk), elem_a(off, min(r0 + 2u, l), k, m, kk), elem_a(off, min(r0 + 3u, l), k, m, kk));
}

// B at (k0..k0+4, col).
fn b_k4(off: u32, col: u32, k0: u32, n: u32, kk: u32) -> vec4<f32> {
    if (VEC_B && TRANS_B) {
        return b[(off + col * kk + k0) >> 2u];
    }
    return vec4<f32>(elem_b(off, k0, col, n, kk), elem_b(off, k0 + 1u, col, n, kk), elem_b(off, k0 + 2u, col, n, kk), elem_b(off, k0 + 3u, col, n, kk));
}

// B at (k, c0..c0+4), columns clamped to n - 1.
fn b_c4(off: u32, k: u32, c0: u32, n: u32, kk: u32) -> vec4<f32> {
    if (VEC_B && !TRANS_B) {
        return b[(off + k * n + min(c0, n - 4u)) >> 2u];
    }
    let l = n - 1u;
    return vec4<f32>(elem_b(off, k, min(c0, l), n, kk), elem_b(off, k, min(c0 + 1u, l), n, kk), elem_b(off, k, min(c0 + 2u, l), n, kk), elem_b(off, k, min(c0 + 3u, l), n, kk));
}
"#;

/// WGSL for blocks of `rows` x `cols` per invocation and `lanes` invocations per workgroup.
/// params [M, N, K, a_batch_stride, b_batch_stride]; grid
/// (ceil(N / (cols * lanes)), ceil(M / rows), batch).
pub fn source(rows: usize, cols: usize, lanes: usize) -> String {
    let (rg, cg) = (rows / 4, cols / 4);
    let mut s = String::from(HELPERS);
    let mut w = |line: String| {
        s.push_str(&line);
        s.push('\n');
    };
    w(format!("@compute @workgroup_size({lanes})"));
    w("fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {".into());
    w("    let m = pu(0u);\n    let n = pu(1u);\n    let kk = pu(2u);".into());
    w("    let a_off = wid.z * pu(3u);\n    let b_off = wid.z * pu(4u);\n    let c_off = wid.z * m * n;".into());
    w(format!("    let row0 = wid.y * {rows}u;"));
    w(format!("    let col0 = (wid.x * {lanes}u + lid) * {cols}u;"));
    // No barriers below, so lanes past the edge may leave early.
    w("    if (row0 >= m || col0 >= n) {\n        return;\n    }".into());
    for i in 0..rows {
        w(format!("    let r{i} = min(row0 + {i}u, m - 1u);"));
    }
    for j in 0..cols {
        w(format!("    let c{j} = min(col0 + {j}u, n - 1u);"));
    }
    for i in 0..rows {
        for g in 0..cg {
            w(format!("    var acc{i}_{g} = vec4<f32>(0.0);"));
        }
    }
    // b{q}_{g}: B at (k0 + q, columns 4g..4g+4); a{i}: A at (row i, k0..k0+4).
    for q in 0..4 {
        for g in 0..cg {
            w(format!("    var b{q}_{g}: vec4<f32>;"));
        }
    }
    for i in 0..rows {
        w(format!("    var a{i}: vec4<f32>;"));
    }
    w("    var k0 = 0u;".into());
    w("    for (; k0 + 4u <= kk; k0 += 4u) {".into());
    w("        if (TRANS_B) {".into());
    for j in 0..cols {
        w(format!("            let t{j} = b_k4(b_off, c{j}, k0, n, kk);"));
    }
    for q in 0..4 {
        for g in 0..cg {
            let (j0, j1, j2, j3) = (4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3);
            w(format!("            b{q}_{g} = vec4<f32>(t{j0}[{q}], t{j1}[{q}], t{j2}[{q}], t{j3}[{q}]);"));
        }
    }
    w("        } else {".into());
    for q in 0..4 {
        for g in 0..cg {
            w(format!("            b{q}_{g} = b_c4(b_off, k0 + {q}u, col0 + {}u, n, kk);", 4 * g));
        }
    }
    w("        }".into());
    w("        if (TRANS_A) {".into());
    for g in 0..rg {
        for q in 0..4 {
            w(format!("            let u{g}_{q} = a_r4(a_off, row0 + {}u, k0 + {q}u, m, kk);", 4 * g));
        }
        for e in 0..4 {
            w(format!("            a{} = vec4<f32>(u{g}_0[{e}], u{g}_1[{e}], u{g}_2[{e}], u{g}_3[{e}]);", 4 * g + e));
        }
    }
    w("        } else {".into());
    for i in 0..rows {
        w(format!("            a{i} = a_k4(a_off, r{i}, k0, m, kk);"));
    }
    w("        }".into());
    for i in 0..rows {
        for q in 0..4 {
            for g in 0..cg {
                w(format!("        acc{i}_{g} = fma(vec4<f32>(a{i}[{q}]), b{q}_{g}, acc{i}_{g});"));
            }
        }
    }
    w("    }".into());
    // K % 4 leftover steps, element by element.
    w("    for (; k0 < kk; k0 += 1u) {".into());
    for g in 0..cg {
        let cs: Vec<String> = (0..4).map(|e| format!("elem_b(b_off, k0, c{}, n, kk)", 4 * g + e)).collect();
        w(format!("        let bt{g} = vec4<f32>({});", cs.join(", ")));
    }
    for i in 0..rows {
        w(format!("        let at{i} = vec4<f32>(elem_a(a_off, r{i}, k0, m, kk));"));
        for g in 0..cg {
            w(format!("        acc{i}_{g} = fma(at{i}, bt{g}, acc{i}_{g});"));
        }
    }
    w("    }".into());
    for i in 0..rows {
        w(format!("    if (row0 + {i}u < m) {{"));
        w(format!("        let o{i} = c_off + (row0 + {i}u) * n + col0;"));
        for j in 0..cols {
            w(format!("        if (col0 + {j}u < n) {{\n            c[o{i} + {j}u] = acc{i}_{}[{}];\n        }}", j / 4, j % 4));
        }
        w("    }".into());
    }
    w("}".into());
    s
}
