//! WGSL generator of the workgroup-tiled matmul (GPU adapters; CPU adapters run the register
//! kernels of `matmul_cpu_src.rs`). One [`Tiled`] value per variant the backend launches: the
//! tile edges, each invocation's register block and the operand storage / arithmetic. The
//! pipeline cache is keyed by that value (`matmul.rs`), and `validate.rs` renders every one.
//!
//! The algorithm, whatever the variant: a square workgroup of `(tile / block)²` invocations
//! computes a `tile` x `tile` tile of C, each invocation a `block` x `block` block of it (rows
//! `ty + side * i`, columns `tx + side * j` with `side = tile / block`, so neighbouring
//! invocations touch neighbouring addresses). K advances `k_step` at a time: both operands'
//! tiles are staged k-major in workgroup memory (`as_[k * tile + m]`, `bs[k * tile + n]`),
//! their loads following the memory order of each layout (the `TRANS_A` / `TRANS_B`
//! overrides read A as [K, M] / B as [N, K]) so global reads stay coalesced; the products
//! are unrolled here over the block.
//!
//! params [M, N, K, a_batch_stride, b_batch_stride, batches summed]; a batch stride 0
//! broadcasts; with more than one batch summed every output sums that many products (the
//! grid's z is then 1). Grid (ceil(N / tile), ceil(M / tile), batch).

/// How the operands are stored and multiplied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Operands {
    /// Both f32, fused multiply-adds in f32.
    F32,
    /// One operand (the `F16_B` override: B, else A) stored as packed f16, two halves per
    /// u32 word (element 2i in the low half of word i), read exactly with integer operations
    /// where the tiles are loaded (no float16 capability needed, subnormals kept); the other
    /// read as f32 bits. Products and sums in f32.
    F16Storage,
    /// As `F16Storage`, but tiles staged in workgroup memory as f16 (the f32 operand rounded
    /// to f16) and each product formed in f16 (WGSL's f16, the `shader-f16` feature),
    /// accumulated in f32: two f16 roundings per product, not K of them.
    F16Products,
}

/// One tiled matmul kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Tiled {
    /// Edge of the square tile of C per workgroup.
    pub tile: usize,
    /// Steps of K staged in workgroup memory at a time.
    pub k_step: usize,
    /// Edge of the square block of C per invocation (a multiple of 4: columns are `vec4`s).
    pub block: usize,
    pub operands: Operands,
}

/// The f32 bits of the IEEE half whose bits are the low 16 of `h` (`pg_half_bits`, the
/// conversion widen.wgsl uses too).
const HALF_BITS: &str = include_str!("../kernels/half_bits.wgsl");

impl Tiled {
    /// 64x64 tiles of C, 4x4 blocks, K in steps of 16: the default.
    pub(crate) const fn small(operands: Operands) -> Tiled {
        Tiled { tile: 64, k_step: 16, block: 4, operands }
    }

    /// 128x128 tiles, 8x8 blocks, K in steps of 8: twice the work per workgroup-memory read
    /// of [`Tiled::small`], at the price of fewer workgroups (the launcher picks it only when
    /// both M and N are large).
    pub(crate) const fn big(operands: Operands) -> Tiled {
        Tiled { tile: 128, k_step: 8, block: 8, operands }
    }

    /// Every variant the launcher can pick, for validation.
    #[cfg(test)]
    pub(crate) fn all() -> Vec<Tiled> {
        let mut v = vec![Tiled::small(Operands::F32), Tiled::big(Operands::F32)];
        v.extend([Operands::F16Storage, Operands::F16Products].map(Tiled::small));
        v
    }

    /// Invocations along each edge of the workgroup.
    fn side(&self) -> usize {
        self.tile / self.block
    }

    /// Unique per source (the pipeline cache's key): `matmul`, `matmul_f16` or `matmul_f16h`,
    /// then the tile, K step and block.
    pub(crate) fn name(&self) -> String {
        let kind = match self.operands {
            Operands::F32 => "matmul",
            Operands::F16Storage => "matmul_f16",
            Operands::F16Products => "matmul_f16h",
        };
        format!("{kind}_t{}k{}b{}", self.tile, self.k_step, self.block)
    }

    /// The `override` constants, in the order the launcher passes them.
    pub(crate) fn overrides(&self) -> &'static [&'static str] {
        match self.operands {
            Operands::F32 => &["TRANS_A", "TRANS_B"],
            Operands::F16Storage | Operands::F16Products => &["TRANS_A", "TRANS_B", "F16_B"],
        }
    }

    /// Whether the shape constants fit the algorithm: square workgroup of whole vec4 blocks
    /// whose invocations load each tile in whole rounds.
    fn is_consistent(&self) -> bool {
        let threads = self.side() * self.side();
        self.block.is_multiple_of(4)
            && self.tile.is_multiple_of(self.block)
            && threads > 0
            && threads <= 256
            && (self.tile * self.k_step).is_multiple_of(threads)
    }

    /// The WGSL (without the common prelude). `epi` is `(wgsl, inputs)`: the epilogue's
    /// bindings and `fn pg_epi(i, batch, row, col, v)` (`crate::wgsl::Epilogue::source`, its
    /// inputs bound from 3 on); the kernel then also writes `pg_epi` of every result into
    /// `pg_epi_out`: bindings a = 1, b = 2, the epilogue's inputs, then `c` and `pg_epi_out`.
    /// `None` for an inconsistent variant (see the fields).
    pub(crate) fn source(&self, epi: Option<(&str, usize)>) -> Option<String> {
        if !self.is_consistent() {
            return None;
        }
        let Tiled { tile, k_step, block, operands } = *self;
        let side = self.side();
        let threads = side * side;
        let rounds = tile * k_step / threads;
        // Vec4 groups of a block row.
        let groups = block / 4;
        let f16 = operands != Operands::F32;
        // Type of the staged tiles.
        let t = if operands == Operands::F16Products { "f16" } else { "f32" };
        let mut s = String::new();
        let mut w = |line: &str| {
            s.push_str(line);
            s.push('\n');
        };
        if operands == Operands::F16Products {
            w("enable f16;");
        }
        w(&format!("// Generated by ops/matmul_tiled_src.rs: {self:?}."));
        w("override TRANS_A: bool = false;");
        w("override TRANS_B: bool = false;");
        if f16 {
            w("override F16_B: bool = true;");
        }
        let operand = if f16 { "u32" } else { "f32" };
        w(&format!("@group(0) @binding(1) var<storage, read> a: array<{operand}>;"));
        w(&format!("@group(0) @binding(2) var<storage, read> b: array<{operand}>;"));
        let c_binding = 3 + epi.map_or(0, |(_, n)| n);
        w(&format!("@group(0) @binding({c_binding}) var<storage, read_write> c: array<f32>;"));
        if let Some((src, _)) = epi {
            w(&format!("@group(0) @binding({}) var<storage, read_write> pg_epi_out: array<f32>;", c_binding + 1));
            w(src);
        }
        if f16 {
            w(HALF_BITS);
            // Element i of A / B, whichever is the f16 one, as the tiles' type.
            let (open, close) = if operands == Operands::F16Products { ("f16(", ")") } else { ("", "") };
            for (name, buf, half_when) in [("load_a", "a", "!F16_B"), ("load_b", "b", "F16_B")] {
                w(&format!("fn {name}(i: u32) -> {t} {{"));
                w(&format!("    if ({half_when}) {{"));
                w(&format!("        return {open}bitcast<f32>(pg_half_bits({buf}[i >> 1u] >> ((i & 1u) * 16u))){close};"));
                w("    }");
                w(&format!("    return {open}bitcast<f32>({buf}[i]){close};"));
                w("}");
            }
        }
        let load = |buf: &str, idx: &str| if f16 { format!("load_{buf}({idx})") } else { format!("{buf}[{idx}]") };
        w(&format!("var<workgroup> as_: array<{t}, {}>;", tile * k_step));
        w(&format!("var<workgroup> bs: array<{t}, {}>;", tile * k_step));
        w(&format!("@compute @workgroup_size({threads})"));
        w("fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {");
        w("    let m_size = pu(0u);\n    let n_size = pu(1u);\n    let k_size = pu(2u);\n    let nb = pu(5u);");
        w("    let c_off = wid.z * m_size * n_size;");
        w(&format!("    let row0 = wid.y * {tile}u;\n    let col0 = wid.x * {tile}u;"));
        w(&format!("    let tx = lid % {side}u;\n    let ty = lid / {side}u;"));
        // acc[groups * i + g]: row i, columns tx + side * (4g + 0..4).
        w(&format!("    var acc: array<vec4<f32>, {}>;", block * groups));
        w(&format!("    for (var i = 0u; i < {}u; i++) {{\n        acc[i] = vec4<f32>(0.0);\n    }}", block * groups));
        // Batches summed into this output (1: one batch entry, wid.z).
        w("    for (var zb = 0u; zb < nb; zb++) {");
        w("    let a_off = (wid.z + zb) * pu(3u);\n    let b_off = (wid.z + zb) * pu(4u);");
        w(&format!("    for (var k0 = 0u; k0 < k_size; k0 += {k_step}u) {{"));
        w(&format!("        for (var r = 0u; r < {rounds}u; r++) {{"));
        w(&format!("            let e = lid + {threads}u * r;"));
        w("            var am: u32;\n            var ak: u32;");
        w(&format!("            if (TRANS_A) {{\n                am = e % {tile}u;\n                ak = e / {tile}u;"));
        w(&format!("            }} else {{\n                am = e / {k_step}u;\n                ak = e % {k_step}u;\n            }}"));
        w("            let gm = row0 + am;\n            let gk = k0 + ak;");
        w(&format!("            var av = {t}(0.0);"));
        w("            if (gm < m_size && gk < k_size) {");
        w(&format!("                if (TRANS_A) {{\n                    av = {};", load("a", "a_off + gk * m_size + gm")));
        w(&format!("                }} else {{\n                    av = {};\n                }}", load("a", "a_off + gm * k_size + gk")));
        w("            }");
        w(&format!("            as_[ak * {tile}u + am] = av;"));
        w("            var bk: u32;\n            var bn: u32;");
        w(&format!("            if (TRANS_B) {{\n                bn = e / {k_step}u;\n                bk = e % {k_step}u;"));
        w(&format!("            }} else {{\n                bn = e % {tile}u;\n                bk = e / {tile}u;\n            }}"));
        w("            let gn = col0 + bn;\n            let gk2 = k0 + bk;");
        w(&format!("            var bv = {t}(0.0);"));
        w("            if (gn < n_size && gk2 < k_size) {");
        w(&format!("                if (TRANS_B) {{\n                    bv = {};", load("b", "b_off + gn * k_size + gk2")));
        w(&format!("                }} else {{\n                    bv = {};\n                }}", load("b", "b_off + gk2 * n_size + gn")));
        w("            }");
        w(&format!("            bs[bk * {tile}u + bn] = bv;"));
        w("        }");
        w("        workgroupBarrier();");
        w(&format!("        for (var k = 0u; k < {k_step}u; k++) {{"));
        w(&format!("            let bb = k * {tile}u + tx;"));
        for g in 0..groups {
            let at: Vec<String> = (0..4).map(|j| format!("bs[bb + {}u]", side * (4 * g + j))).collect();
            w(&format!("            let b{g} = vec4<{t}>({});", at.join(", ")));
        }
        w(&format!("            let ab = k * {tile}u + ty;"));
        for i in 0..block {
            w(&format!("            let a{i} = vec4<{t}>(as_[ab + {}u]);", side * i));
            for g in 0..groups {
                let x = groups * i + g;
                if operands == Operands::F16Products {
                    w(&format!("            acc[{x}] += vec4<f32>(a{i} * b{g});"));
                } else {
                    w(&format!("            acc[{x}] = fma(a{i}, b{g}, acc[{x}]);"));
                }
            }
        }
        w("        }");
        w("        workgroupBarrier();");
        w("    }");
        w("    }");
        w(&format!("    for (var i = 0u; i < {block}u; i++) {{"));
        w(&format!("        let row = row0 + ty + {side}u * i;"));
        w("        if (row >= m_size) {\n            continue;\n        }");
        w(&format!("        for (var j = 0u; j < {block}u; j++) {{"));
        w(&format!("            let col = col0 + tx + {side}u * j;"));
        w("            if (col < n_size) {");
        w(&format!("                let v = acc[{groups}u * i + j / 4u][j % 4u];"));
        w("                let idx = c_off + row * n_size + col;");
        w("                c[idx] = v;");
        if epi.is_some() {
            w("                pg_epi_out[idx] = pg_epi(idx, wid.z, row, col, v);");
        }
        w("            }");
        w("        }");
        w("    }");
        w("}");
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_shapes_checked() {
        let all = Tiled::all();
        let names: std::collections::HashSet<String> = all.iter().map(Tiled::name).collect();
        assert_eq!(names.len(), all.len());
        assert!(all.iter().all(|t| t.source(None).is_some()));
        // A block that is no whole number of vec4s, and a tile the workgroup cannot load in
        // whole rounds, are refused rather than rendered wrong.
        assert!(Tiled { tile: 64, k_step: 16, block: 6, operands: Operands::F32 }.source(None).is_none());
        assert!(Tiled { tile: 64, k_step: 3, block: 4, operands: Operands::F32 }.source(None).is_none());
    }
}
