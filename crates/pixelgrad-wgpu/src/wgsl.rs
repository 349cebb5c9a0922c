//! The WGSL dialect of the kernel IR: how each device primitive, type and literal is written
//! (`pixelgrad_core::kernel::render::Dialect`), and the source of an elementwise kernel built
//! around a rendered body. This is the only place that writes WGSL for elementwise math.

use pixelgrad_core::kernel::ir::{DType, Kernel};
use pixelgrad_core::kernel::lower::{Prim1, Prim2};
use pixelgrad_core::kernel::program::{Bound, Program};
use pixelgrad_core::kernel::program_render::{render_program, Spelling};
use pixelgrad_core::kernel::render::{render_function, Dialect};
use pixelgrad_core::Result;

/// WGSL as the kernels use it. Parameter `i` of a rendered kernel is word `param_base + i`
/// of the launch's uniform slot.
pub(crate) struct Wgsl {
    pub param_base: usize,
}

/// First parameter word of an elementwise kernel (after `n` and `rank`).
pub(crate) const PARAM_BASE: usize = 2;

impl Dialect for Wgsl {
    fn name(&self) -> &'static str {
        "WGSL"
    }
    fn ty(&self, t: DType) -> Option<&'static str> {
        match t {
            DType::F32 => Some("f32"),
            DType::I32 => Some("i32"),
            DType::Bool => Some("bool"),
            // f16 needs the shader-f16 feature and `enable f16;`; 8-bit values are unpacked
            // from u32 words by their loads. Neither is rendered yet.
            DType::F16 | DType::I8 | DType::U8 => None,
        }
    }
    fn special_float(&self, bits: u32) -> String {
        // `from_bits` (common.wgsl) is a run-time call: a NaN or infinite constant expression
        // is a shader-creation error in WGSL.
        format!("from_bits({bits:#010x}u)")
    }
    fn input(&self, i: usize) -> String {
        format!("a{i}")
    }
    fn param(&self, i: usize) -> String {
        format!("pf({}u)", self.param_base + i)
    }
    fn prim1(&self, op: Prim1, a: &str) -> String {
        match op {
            Prim1::Neg => format!("(-{a})"),
            Prim1::Abs => format!("abs({a})"),
            Prim1::Not => format!("(!{a})"),
            // Bit tests on the float's bits: no compiler may fold these.
            Prim1::IsNan => format!("((bitcast<u32>({a}) & 0x7fffffffu) > 0x7f800000u)"),
            Prim1::IsInf => format!("((bitcast<u32>({a}) & 0x7fffffffu) == 0x7f800000u)"),
            Prim1::SignBit => format!("((bitcast<u32>({a}) >> 31u) != 0u)"),
            Prim1::Exp => format!("exp({a})"),
            Prim1::Log => format!("log({a})"),
            Prim1::Exp2 => format!("exp2({a})"),
            Prim1::Log2 => format!("log2({a})"),
            Prim1::Sqrt => format!("sqrt({a})"),
            Prim1::Floor => format!("floor({a})"),
        }
    }
    fn prim2(&self, op: Prim2, a: &str, b: &str) -> String {
        match op {
            Prim2::Add => format!("({a} + {b})"),
            Prim2::Sub => format!("({a} - {b})"),
            Prim2::Mul => format!("({a} * {b})"),
            Prim2::Div => format!("({a} / {b})"),
            Prim2::Max => format!("max({a}, {b})"),
            Prim2::Min => format!("min({a}, {b})"),
            Prim2::Lt => format!("({a} < {b})"),
            Prim2::Le => format!("({a} <= {b})"),
            Prim2::Eq => format!("({a} == {b})"),
            Prim2::And => format!("({a} && {b})"),
            Prim2::Or => format!("({a} || {b})"),
        }
    }
    fn select(&self, c: &str, a: &str, b: &str) -> String {
        // WGSL's select takes the false value first.
        format!("select({b}, {a}, {c})")
    }
    fn cast(&self, to: DType, from: DType, a: &str) -> Option<String> {
        match (from, to) {
            (f, t) if f == t => Some(a.to_string()),
            (DType::Bool, DType::F32) => Some(format!("select(0.0, 1.0, {a})")),
            (DType::I32, DType::F32) => Some(format!("f32({a})")),
            (DType::F32, DType::I32) => Some(format!("i32({a})")),
            _ => None,
        }
    }
    fn declare(&self, ty: &str, name: &str, value: &str) -> String {
        format!("    let {name}: {ty} = {value};")
    }
    fn function(&self, name: &str, args: &[(&str, String)], ret: &str, body: &str) -> String {
        let args: Vec<String> = args.iter().map(|(t, n)| format!("{n}: {t}")).collect();
        format!("fn {name}({}) -> {ret} {{\n{body}}}\n", args.join(", "))
    }
}

/// Where a fused read keeps its words in the launch's uniform slot: its parameters, the rank
/// `r` of the (merged) index space, then its `r` dims and `r` strides per input, packed.
pub(crate) struct MapLayout {
    pub params: usize,
    pub rank: usize,
    pub dims: usize,
}

impl MapLayout {
    /// An elementwise kernel's: `[n, rank, params.., dims[r], strides[r] per input]`.
    pub(crate) fn map(params: usize) -> Self {
        MapLayout { params: PARAM_BASE, rank: 1, dims: PARAM_BASE + params }
    }
    /// A fused read placed after a kernel's own `first` words (a reduction's prologue):
    /// `[.., params.., rank, dims[r], strides[r] per input]`.
    pub(crate) fn after(first: usize, params: usize) -> Self {
        MapLayout { params: first, rank: first + params, dims: first + params + 1 }
    }
    /// Words used for `inputs` inputs over `rank` axes (the FAST path needs only the
    /// parameters, but the slot must hold the general one).
    pub(crate) fn words(&self, inputs: usize, rank: usize) -> usize {
        self.dims.max(self.rank + 1) + rank * (1 + inputs)
    }
}

/// The WGSL of a fused read of `kernel`: its inputs bound at 1..=n (`x0`, `x1`, ..), the
/// pipeline constants `FAST` (every input has the read's shape or is one element: no index
/// arithmetic) and `SCALARS` (bit `i`: input `i` is one element), the kernel as
/// `pg_apply(a0, ..)`, and `fn pg_load(i: u32) -> f32`, element `i` of the result (inputs read
/// through their broadcast strides, `lay` says where they are).
fn fused_read(kernel: &Kernel, lay: &MapLayout) -> Result<String> {
    let apply = render_function(kernel, &Wgsl { param_base: lay.params }, "pg_apply")?;
    let n = kernel.inputs().len();
    let mut s = String::new();
    s.push_str("// Fused read rendered from the kernel IR (pixelgrad_core::kernel).\n");
    s.push_str("override FAST: bool = false;\noverride SCALARS: u32 = 0u;\n\n");
    for i in 0..n {
        s.push_str(&format!("@group(0) @binding({}) var<storage, read> x{i}: array<f32>;\n", i + 1));
    }
    s.push_str(&apply);
    s.push_str("\nfn pg_load(i: u32) -> f32 {\n");
    let fast_args: Vec<String> = (0..n).map(|i| format!("x{i}[select(i, 0u, ((SCALARS >> {i}u) & 1u) == 1u)]")).collect();
    s.push_str(&format!("    if (FAST) {{\n        return pg_apply({});\n    }}\n", fast_args.join(", ")));
    // General path: decompose i into coordinates, innermost axis first.
    s.push_str("    var rem = i;\n");
    for i in 0..n {
        s.push_str(&format!("    var i{i} = 0u;\n"));
    }
    s.push_str(&format!(
        "    let rank = pu({}u);\n    for (var k = 0u; k < rank; k++) {{\n        let ax = rank - 1u - k;\n        \
         let d = pu({}u + ax);\n        let c = rem % d;\n        rem = rem / d;\n",
        lay.rank, lay.dims
    ));
    // Input k's strides follow the dims, `rank` words each.
    for i in 0..n {
        s.push_str(&format!("        i{i} += c * pu({}u + rank * {}u + ax);\n", lay.dims, i + 1));
    }
    s.push_str("    }\n");
    let idx_args: Vec<String> = (0..n).map(|i| format!("x{i}[i{i}]")).collect();
    s.push_str(&format!("    return pg_apply({});\n}}\n\n", idx_args.join(", ")));
    Ok(s)
}

/// The WGSL of an elementwise kernel: a fused read of `kernel` ([`fused_read`], laid out by
/// [`MapLayout::map`]) written to `out` at every index below `n`.
pub(crate) fn map_source(kernel: &Kernel) -> Result<String> {
    let n = kernel.inputs().len();
    let mut s = fused_read(kernel, &MapLayout::map(kernel.params()))?;
    s.push_str(&format!("@group(0) @binding({}) var<storage, read_write> out: array<f32>;\n\n", n + 1));
    s.push_str(
        "@compute @workgroup_size(256)\n\
         fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n        \
         @builtin(local_invocation_index) lid: u32) {\n    \
         let i = flat_index(wid, nwg, lid);\n    \
         if (i >= pu(0u)) {\n        return;\n    }\n    \
         out[i] = pg_load(i);\n}\n",
    );
    Ok(s)
}

/// One output of a grouped elementwise launch ([`group_source`]): its kernel, which bound
/// input each kernel input reads, and which of those are one element (read at index 0; the
/// others have the output's shape and are read at the output's index).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct GroupMember {
    pub kernel: Kernel,
    pub reads: Vec<usize>,
    pub scalars: u32,
}

impl GroupMember {
    /// Parameter words it uses: its element count, then its kernel's parameters.
    pub(crate) fn words(&self) -> usize {
        1 + self.kernel.params()
    }
}

/// First parameter word of a grouped launch's members (after the grid's element count).
pub(crate) const GROUP_BASE: usize = 1;

/// The WGSL of one launch computing several elementwise results over `inputs` shared
/// inputs: member `k` writes `out{k}` at every index below its own element count. Word 0 of
/// the slot is the largest count (the grid); member `k`'s words follow the previous
/// members' ([`GroupMember::words`]). Every read is at the output's own index or index 0, so
/// no index arithmetic runs.
pub(crate) fn group_source(members: &[GroupMember], inputs: usize) -> Result<String> {
    let mut s = String::from("// Grouped elementwise results rendered from the kernel IR (pixelgrad_core::kernel).\n");
    for i in 0..inputs {
        s.push_str(&format!("@group(0) @binding({}) var<storage, read> x{i}: array<f32>;\n", i + 1));
    }
    for k in 0..members.len() {
        s.push_str(&format!("@group(0) @binding({}) var<storage, read_write> out{k}: array<f32>;\n", inputs + 1 + k));
    }
    let mut body = String::new();
    let mut base = GROUP_BASE;
    for (k, m) in members.iter().enumerate() {
        s.push_str(&render_function(&m.kernel, &Wgsl { param_base: base + 1 }, &format!("pg_apply{k}"))?);
        let args: Vec<String> = m
            .reads
            .iter()
            .enumerate()
            .map(|(j, &x)| if (m.scalars >> j) & 1 == 1 { format!("x{x}[0u]") } else { format!("x{x}[i]") })
            .collect();
        body.push_str(&format!("    if (i < pu({base}u)) {{\n        out{k}[i] = pg_apply{k}({});\n    }}\n", args.join(", ")));
        base += m.words();
    }
    s.push_str(
        "\n@compute @workgroup_size(256)\n\
         fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n        \
         @builtin(local_invocation_index) lid: u32) {\n    \
         let i = flat_index(wid, nwg, lid);\n    \
         if (i >= pu(0u)) {\n        return;\n    }\n",
    );
    s.push_str(&body);
    s.push_str("}\n");
    Ok(s)
}

/// An elementwise computation applied to a matmul's results as it stores them (an epilogue):
/// `kernel`'s input `given` is the matmul's value; its other inputs are bound from `binding`
/// on (`e0`, `e1`, .. in order, skipping `given`). Each is read at the output's flat index
/// when `fast` (bit `j` of `scalars`: input `j` is one element, read at 0), else at
/// `batch * sb + row * sr + col * sc` with its broadcast strides: three words per input after
/// the kernel's parameters. No loop, so the many inlined stores of a register kernel stay
/// cheap to compile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Epilogue {
    pub kernel: Kernel,
    pub given: usize,
    pub fast: bool,
    pub scalars: u32,
}

impl Epilogue {
    /// Storage buffers it reads (the kernel's inputs but the matmul's value).
    pub(crate) fn inputs(&self) -> usize {
        self.kernel.inputs().len() - 1
    }

    /// WGSL: the input bindings, `pg_epi_apply` and
    /// `fn pg_epi(i: u32, batch: u32, row: u32, col: u32, v: f32) -> f32`, the epilogue's
    /// value at flat output index `i` (= batch, row, col) for the matmul's value `v`.
    pub(crate) fn source(&self, binding: usize, first: usize) -> Result<String> {
        let n = self.kernel.inputs().len();
        let mut s = render_function(&self.kernel, &Wgsl { param_base: first }, "pg_epi_apply")?;
        // Bound position of kernel input j (the given one has none).
        let slot = |j: usize| if j < self.given { j } else { j - 1 };
        let strides = first + self.kernel.params();
        for j in (0..n).filter(|&j| j != self.given) {
            s.push_str(&format!("@group(0) @binding({}) var<storage, read> e{}: array<f32>;\n", binding + slot(j), slot(j)));
        }
        let args: Vec<String> = (0..n)
            .map(|j| {
                if j == self.given {
                    return "v".to_string();
                }
                let e = slot(j);
                if self.fast && (self.scalars >> j) & 1 == 1 {
                    format!("e{e}[0u]")
                } else if self.fast {
                    format!("e{e}[i]")
                } else {
                    let w = strides + 3 * e;
                    format!("e{e}[batch * pu({w}u) + row * pu({}u) + col * pu({}u)]", w + 1, w + 2)
                }
            })
            .collect();
        s.push_str(&format!(
            "fn pg_epi(i: u32, batch: u32, row: u32, col: u32, v: f32) -> f32 {{\n    return pg_epi_apply({});\n}}\n",
            args.join(", ")
        ));
        Ok(s)
    }
}

/// Markers around the input declarations of a kernel file that can read a fused input
/// instead (`reduce.wgsl`): [`with_fused_input`] replaces what lies between them.
const INPUT_BEGIN: &str = "// BEGIN INPUT";
const INPUT_END: &str = "// END INPUT";

/// `source` (a kernel whose input section, between the markers, declares `pg_load` and its
/// output binding) with that section replaced by a fused read of `kernel` placed after the
/// kernel's own `first` parameter words, and the output bound after its inputs.
pub(crate) fn with_fused_input(source: &str, kernel: &Kernel, first: usize) -> Result<String> {
    let missing = || pixelgrad_core::Error::invalid("WGSL kernel", "no fused-input markers in the kernel source");
    let a = source.find(INPUT_BEGIN).ok_or_else(missing)?;
    let b = source.find(INPUT_END).ok_or_else(missing)?;
    let n = kernel.inputs().len();
    let mut read = fused_read(kernel, &MapLayout::after(first, kernel.params()))?;
    read.push_str(&format!("@group(0) @binding({}) var<storage, read_write> out: array<f32>;\n", n + 1));
    Ok(format!("{}{read}{}", &source[..a], &source[b + INPUT_END.len()..]))
}

/// The Box-Muller transform of the random kernel, `pg_box_muller(u1, u2)`, rendered from its
/// one definition (`pixelgrad_core::kernel::defs::box_muller_kernel`).
pub(crate) fn box_muller() -> Result<String> {
    render_function(&pixelgrad_core::kernel::defs::box_muller_kernel()?, &Wgsl { param_base: PARAM_BASE }, "pg_box_muller")
}

/// WGSL spelling of the kernel IR's programs with loops
/// (`pixelgrad_core::kernel::program`): `i32` indices, parameter `i` in word `i` of the
/// launch's uniform slot and the element count in the word after them, inputs bound from 1
/// and the output after them, one invocation per output element on a folded 1-D grid.
/// `fused`: input 0 is a fused read of a pending elementwise computation (the first pass of a
/// rendered reduction): that read's `n` inputs bound from 1 instead, the program's other
/// inputs and its output after them, its parameters after the program's (and its count).
#[derive(Default)]
pub(crate) struct WgslProgram {
    fused: Option<(usize, String)>,
}

impl Spelling for WgslProgram {
    fn int_ty(&self) -> &'static str {
        "i32"
    }
    fn int_lit(&self, v: i32) -> String {
        if v < 0 {
            format!("({v}i)")
        } else {
            format!("{v}i")
        }
    }
    fn to_float(&self, a: &str) -> String {
        format!("f32({a})")
    }
    fn to_int(&self, a: &str) -> String {
        format!("i32({a})")
    }
    fn is_nan(&self, a: &str) -> String {
        format!("((bitcast<u32>({a}) & 0x7fffffffu) > 0x7f800000u)")
    }
    /// A bit of the status word (`Gpu::status`), which the next readback turns into an error.
    fn fault(&self, code: u8) -> String {
        format!("atomicOr(&status[0], {}u);", 1u32 << code)
    }
    fn param(&self, i: usize, _name: &str) -> String {
        format!("i32(pu({i}u))")
    }
    fn load(&self, i: usize, name: &str, at: &str) -> String {
        if i == 0 && self.fused.is_some() {
            format!("pg_load(u32({at}))")
        } else {
            format!("{name}[{at}]")
        }
    }
    /// Through f32 (`pg_idiv`): lavapipe scalarises vector integer division, which made
    /// max_pool_grad 3x3 stride 2 about 1.6x slower than the old hand-written kernel's
    /// `div_small`.
    fn div(&self, a: &str, b: &str) -> String {
        format!("pg_idiv({a}, {b})")
    }
    fn let_(&self, float: bool, name: &str, value: &str) -> String {
        format!("let {name}: {} = {value};", if float { "f32" } else { "i32" })
    }
    fn var(&self, name: &str, value: &str) -> String {
        format!("var {name}: f32 = {value};")
    }
    fn let_bool(&self, name: &str, value: &str) -> String {
        format!("let {name}: bool = {value};")
    }
    /// `&` without short circuit: `&&` becomes a branch per operand, and the rendered
    /// reductions' folds (six conditions of up to five terms per element, four elements per
    /// texel) made SwiftShader (Chromium's WebGPU on the CPU) compile one log-sum-exp pass for
    /// minutes in gigabytes, until Chromium lost the device. (WGSL's `&` takes unary
    /// operands: each term in parentheses.)
    fn and(&self, terms: &[String]) -> String {
        let t: Vec<String> = terms.iter().map(|t| format!("({t})")).collect();
        format!("({})", t.join(" & "))
    }
    /// `|` without short circuit, as [`Spelling::and`].
    fn or(&self, terms: &[String]) -> String {
        let t: Vec<String> = terms.iter().map(|t| format!("({t})")).collect();
        format!("({})", t.join(" | "))
    }
    fn select(&self, c: &str, a: &str, b: &str) -> String {
        format!("select({b}, {a}, {c})")
    }
    fn for_open(&self, name: &str, lo: &str, hi: &str, _bound: Bound) -> String {
        format!("for (var {name}: i32 = {lo}; {name} < {hi}; {name}++) {{")
    }
    fn declarations(&self, p: &Program) -> String {
        let mut s = format!("// {}: rendered from its definition (pixelgrad_core::kernel::programs).\n", p.name);
        // Bindings before the program's own inputs (a fused read's), and its inputs read
        // through that read instead of a binding.
        let (before, skip) = match &self.fused {
            Some((n, read)) => {
                s.push_str(read);
                (*n, 1)
            }
            None => (0, 0),
        };
        for (i, name) in p.inputs.iter().enumerate().skip(skip) {
            s.push_str(&format!("@group(0) @binding({}) var<storage, read> {name}: array<f32>;\n", before + i - skip + 1));
        }
        let bound = before + p.inputs.len() - skip;
        s.push_str(&format!("@group(0) @binding({}) var<storage, read_write> out: array<f32>;\n", bound + 1));
        if p.faults() {
            s.push_str(&format!("@group(0) @binding({}) var<storage, read_write> status: array<atomic<u32>>;\n", bound + 2));
        }
        s.push('\n');
        // a / b rounded towards zero for |a| < 2^31 and 0 < b < 2^31 - 384: the f32 quotient
        // is off by less than 385 (2^-22 of a quotient below 2^31, plus truncation), so the
        // remainder it leaves is below 2^31 in magnitude and comes out exact from wrapping i32
        // products; the quotient of that remainder brings q within one, corrected once.
        // (One f32 quotient alone is exact only below 2^23, which gathers over large tensors
        // pass.)
        s.push_str(concat!(
            "fn pg_idiv(a: i32, b: i32) -> i32 {\n",
            "    let q0 = i32(f32(a) / f32(b));\n",
            "    let q = q0 + i32(f32(a - q0 * b) / f32(b));\n",
            "    let r = a - q * b;\n",
            "    // The remainder has a's sign and |r| < b.\n",
            "    let over = select(r < 0, r <= -b, a < 0);\n",
            "    let under = select(r >= b, r > 0, a < 0);\n",
            "    return q - select(0, 1, over) + select(0, 1, under);\n",
            "}\n\n"
        ));
        s.push_str(&format!(
            "@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n        @builtin(local_invocation_index) lid: u32) {{\n    let e = flat_index(wid, nwg, lid);\n    if (e >= pu({}u)) {{\n        return;\n    }}\n    out[e] = compute(i32(e));\n}}\n\n",
            p.params.len()
        ));
        s
    }
    fn function(&self, body: &str, result: &str) -> String {
        format!("fn compute(i: i32) -> f32 {{\n{body}    return {result};\n}}\n")
    }
}

/// The WGSL source of a window program.
pub(crate) fn program_source(p: &Program) -> String {
    let r = render_program(p, &WgslProgram::default());
    format!("{}{}", r.declarations, r.function)
}

/// The WGSL source of program `p` (one reading at least one input) with input 0 a fused read
/// of `kernel`: the read's inputs bound from 1, the program's other inputs and its output
/// after them; the read's parameters after the program's words (its parameters and its
/// output count), laid out by [`MapLayout::after`].
pub(crate) fn fused_program_source(p: &Program, kernel: &Kernel) -> Result<String> {
    let read = fused_read(kernel, &MapLayout::after(p.params.len() + 1, kernel.params()))?;
    let r = render_program(p, &WgslProgram { fused: Some((kernel.inputs().len(), read)) });
    Ok(format!("{}{}", r.declarations, r.function))
}
