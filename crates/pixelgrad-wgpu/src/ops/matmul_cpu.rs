//! Matmul for CPU adapters (Mesa lavapipe, SwiftShader): register-blocked kernels without
//! workgroup memory or barriers, generated (`matmul_cpu_src.rs`) because they are fully
//! unrolled.
//!
//! Why not the tiled GPU kernel: lavapipe runs 8 invocations as the lanes of one AVX2
//! vector, but (Mesa 22.3) compiles every storage-buffer *and* workgroup-memory load into a
//! loop over those 8 lanes that inserts each scalar through the stack (a store-forwarding
//! stall per lane). A load therefore costs ~30 cycles per lane and component while an FMA
//! costs a fraction of one, so speed is set by FMAs per loaded value. The tiled kernels
//! (`matmul_tiled_src.rs`) load every operand twice (global → workgroup memory → registers) and
//! their barriers turn each workgroup into coroutines; SwiftShader (Chromium's WebGPU on
//! machines without a GPU) runs them 5-20x slower than these kernels and takes 2-4 s to
//! compile each of their variants. Here every invocation owns a block of C, loads A and B
//! straight from storage and keeps all accumulators in registers.
//!
//! Two tunings, by adapter ([`Tuning`]), because the costs differ:
//! - **lavapipe** (native): loads are what costs, so operands are read as aligned `vec4`s
//!   where the layout allows, with a source specialised per operand layout; 16x16 blocks
//!   (32 `vec4` loads per 4 steps of K feed 1024 FMAs) once a product is large enough to fill
//!   them, 4x4 blocks below that (tiny batch-1 layers waste a 16x16 block).
//! - **browsers** (Chromium's SwiftShader, any CPU fallback adapter) and native SwiftShader:
//!   pipeline compiles are what costs (an unrolled 16x16 kernel took 2.4 s to compile in
//!   Chromium, a 4x4 one 0.2 s; a first training step compiles every layout it meets), and
//!   SwiftShader gathers storage loads per lane anyway, so `vec4` reads buy little. So one
//!   8x8 kernel with run-time strides serves every layout and shape: a single pipeline
//!   compile per device, at about the specialised kernels' speed (measured with
//!   `web/bench/probe/run.mjs`).

use std::sync::Mutex;

use super::matmul_cpu_src::{source, source_split_k, source_with, Variant};
use crate::pipelines::Kernel;

/// Which family of register kernels an adapter runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tuning {
    /// Specialised `vec4` kernels, 16x16 or 4x4 blocks (native CPU adapters without
    /// subgroups of [`VEC4_LANES`]).
    Vec4,
    /// As `Vec4`, but large products share A's loads across the workgroup's lanes through
    /// subgroup broadcasts, in blocks shaped by M (lavapipe with 8-wide subgroups; see
    /// [`shared_block`]).
    Shared,
    /// One run-time-strided 8x8 kernel (browsers, SwiftShader).
    Strided,
}

/// The tuning for an adapter: compile-cost-bound (browsers, SwiftShader) or load-bound, and
/// for the latter whether the device has subgroups of exactly [`VEC4_LANES`] invocations.
pub(crate) fn tuning(info: &wgpu::AdapterInfo, features: wgpu::Features) -> Tuning {
    let swiftshader = info.name.to_ascii_lowercase().contains("swiftshader");
    if info.backend == wgpu::Backend::BrowserWebGpu || swiftshader {
        Tuning::Strided
    } else if features.contains(wgpu::Features::SUBGROUP)
        && info.subgroup_min_size as usize == VEC4_LANES
        && info.subgroup_max_size as usize == VEC4_LANES
    {
        Tuning::Shared
    } else {
        Tuning::Vec4
    }
}

/// Block (rows, columns) per invocation of the shared-A kernels for C [M, N]. Lavapipe (Mesa
/// 22.3) loads storage per lane, one lane after another, so a load costs about as much as
/// eight; with A loaded once per workgroup, a block of R x C per lane costs R / 8 + C `vec4`
/// loads per 4 steps of K for 4RC multiply-adds, and that count, summed over the blocks the
/// matrix needs (partial edge blocks in full), picks the shape; ties go to the taller block
/// (at 1024³ 64x4 ran 2.4x, 32x8 2.0x and 16x16 1.4x the unshared 16x16 block per CPU
/// second, `examples/lavapipe_probe.rs`). Blocks keep at most 256 accumulators: more spill
/// and compile for tens of seconds.
pub(crate) fn shared_block(m: usize, n: usize) -> (usize, usize) {
    let cost = |(r, c): (usize, usize)| m.div_ceil(r) * n.div_ceil(c * VEC4_LANES) * (r / VEC4_LANES + c);
    let shapes = [(64, 4), (32, 8), (16, 16), (8, 16)];
    // `min_by_key` keeps the first of equal costs: the tallest.
    shapes.into_iter().min_by_key(|&b| cost(b)).unwrap_or((16, 16))
}

/// Invocations per workgroup along columns for the vec4 kernels: one AVX2 vector of lanes.
const VEC4_LANES: usize = 8;
/// Smallest M·N·K·batch that runs on the 16x16 vec4 kernel; smaller products use 4x4
/// blocks (a batch-1 MLP layer filled few 16x16 blocks and ran ~3x slower on lavapipe).
const BIG_BLOCK_FROM: usize = 1 << 16;

/// The kernel and its launch for one matmul: (kernel, grid x/y divisors, extra params).
pub(crate) struct Choice {
    pub kernel: &'static Kernel,
    /// Rows of C per workgroup.
    pub rows: usize,
    /// Columns of C per workgroup.
    pub cols: usize,
    /// Strides [a_row, a_k, b_k, b_col] for the strided kernel (params 5..9), else empty.
    pub strides: Vec<usize>,
    /// The register variant (`None` for the split-K kernel, which takes no epilogue).
    pub variant: Option<Variant>,
}

/// Picks the register kernel for C[M, N] = A · B with K and `batch`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn choose(tuning: Tuning, m: usize, n: usize, k: usize, batch: usize, trans_a: bool, trans_b: bool) -> Choice {
    // N a multiple of 4 lets C be stored as aligned vec4s (vec4 kernels only: a strided
    // variant with and one without would be two compiles where one suffices; measured in
    // native SwiftShader, vec4 stores did not shorten its compile).
    let vec_c = n.is_multiple_of(4);
    if let Some((rows, cols)) = split_k_block(tuning, m, n, k, trans_a, trans_b) {
        return Choice { kernel: split_k_kernel(rows, cols), rows, cols, strides: Vec::new(), variant: None };
    }
    let v = match tuning {
        Tuning::Strided => Variant {
            rows: 8,
            cols: 8,
            lanes: 4,
            trans_a: false,
            trans_b: false,
            vec_a: false,
            vec_b: false,
            vec_c: false,
            strided: true,
            share_a: false,
        },
        Tuning::Vec4 | Tuning::Shared => {
            let big = m.saturating_mul(n).saturating_mul(k).saturating_mul(batch) >= BIG_BLOCK_FROM;
            let share_a = big && tuning == Tuning::Shared;
            let (rows, cols) = if share_a {
                shared_block(m, n)
            } else if big {
                (16, 16)
            } else {
                (4, 4)
            };
            Variant {
                rows,
                cols,
                lanes: VEC4_LANES,
                trans_a,
                trans_b,
                // Aligned vec4 reads need the contiguous dimension (which also makes every
                // batch offset) a multiple of 4.
                vec_a: if trans_a { m.is_multiple_of(4) } else { k.is_multiple_of(4) },
                vec_b: if trans_b { k.is_multiple_of(4) } else { n.is_multiple_of(4) },
                vec_c,
                strided: false,
                share_a,
            }
        }
    };
    let strides = if v.strided {
        // A(r, k) at r * a_row + k * a_k; B(k, c) at k * b_k + c * b_col.
        let (a_row, a_k) = if trans_a { (1, m) } else { (k, 1) };
        let (b_k, b_col) = if trans_b { (1, k) } else { (n, 1) };
        vec![a_row, a_k, b_k, b_col]
    } else {
        Vec::new()
    };
    Choice { kernel: kernel(v), rows: v.rows, cols: v.cols * v.lanes, strides, variant: Some(v) }
}

/// The kernel for `v` storing `epi` of every result too (see
/// [`super::matmul_cpu_src::source_with`]), generated on first use and kept for the process
/// (one per layer shape of a model: few). `first` is where the epilogue's parameter words
/// start (after the matmul's own).
pub(crate) fn kernel_with_epilogue(v: Variant, epi: &crate::wgsl::Epilogue, first: usize) -> pixelgrad_core::Result<&'static Kernel> {
    type Key = (Variant, crate::wgsl::Epilogue, usize);
    static CACHE: Mutex<Vec<(Key, &'static Kernel)>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let key = (v, epi.clone(), first);
    if let Some((_, k)) = cache.iter().find(|(w, _)| *w == key) {
        return Ok(k);
    }
    let epi_src = epi.source(3, first)?;
    let base = kernel(v);
    let name: &'static str = Box::leak(format!("{}_epi{}", base.name, cache.len()).into_boxed_str());
    let src: &'static str = Box::leak(source_with(&v, Some((&epi_src, epi.inputs()))).into_boxed_str());
    let k: &'static Kernel = Box::leak(Box::new(Kernel {
        name: name.into(),
        source: src.into(),
        inputs: 2 + epi.inputs(),
        outputs: 2,
        overrides: &[],
        status: false,
    }));
    cache.push((key, k));
    Ok(k)
}

/// Smallest K for the split-K kernel: two rounds of its lanes, four values each.
const SPLIT_K_FROM: usize = 8 * VEC4_LANES;

/// The block (rows, columns) of the split-K kernel when it fits the product: shared tuning,
/// an output of at most 16x16 with a long K, both operands contiguous and aligned along K
/// (A [M, K], B stored [N, K]: the weight gradient of a convolution or dense layer). There
/// the other kernels put the lanes along N and leave most of them idle (an 8x9 output used
/// one lane of eight).
fn split_k_block(tuning: Tuning, m: usize, n: usize, k: usize, trans_a: bool, trans_b: bool) -> Option<(usize, usize)> {
    let fits = tuning == Tuning::Shared && !trans_a && trans_b && k.is_multiple_of(4) && k >= SPLIT_K_FROM && m <= 16 && n <= 16;
    fits.then(|| (m.next_power_of_two().max(4), n.next_multiple_of(4)))
}

/// The split-K kernel for a block, generated on first use and kept for the process.
fn split_k_kernel(rows: usize, cols: usize) -> &'static Kernel {
    static CACHE: Mutex<Vec<((usize, usize), &'static Kernel)>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, k)) = cache.iter().find(|(b, _)| *b == (rows, cols)) {
        return k;
    }
    let name: &'static str = Box::leak(format!("matmul_cpu_splitk_{rows}x{cols}x{VEC4_LANES}").into_boxed_str());
    let src: &'static str = Box::leak(source_split_k(rows, cols, VEC4_LANES).into_boxed_str());
    let k: &'static Kernel =
        Box::leak(Box::new(Kernel { name: name.into(), source: src.into(), inputs: 2, outputs: 1, overrides: &[], status: false }));
    cache.push(((rows, cols), k));
    k
}

/// The kernel for `v`, its source generated on first use and kept for the process (a few
/// dozen variants at most: two block shapes times the operand layouts, or one strided).
pub(crate) fn kernel(v: Variant) -> &'static Kernel {
    static CACHE: Mutex<Vec<(Variant, &'static Kernel)>> = Mutex::new(Vec::new());
    // A poisoned lock only means a panic elsewhere while it was held; the list is still valid.
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, k)) = cache.iter().find(|(w, _)| *w == v) {
        return k;
    }
    let bit = |b: bool| if b { '1' } else { '0' };
    let layout = if v.strided {
        format!("strided{}", bit(v.vec_c))
    } else {
        let bits: String = [v.trans_a, v.trans_b, v.vec_a, v.vec_b, v.vec_c].iter().map(|&b| bit(b)).collect();
        if v.share_a {
            format!("{bits}_shared")
        } else {
            bits
        }
    };
    let name: &'static str = Box::leak(format!("matmul_cpu_{}x{}x{}_{layout}", v.rows, v.cols, v.lanes).into_boxed_str());
    let src: &'static str = Box::leak(source(&v).into_boxed_str());
    let k: &'static Kernel =
        Box::leak(Box::new(Kernel { name: name.into(), source: src.into(), inputs: 2, outputs: 1, overrides: &[], status: false }));
    cache.push((v, k));
    k
}

/// Every variant the launcher can pick, for validation tests.
#[cfg(test)]
pub(crate) fn all() -> Vec<&'static Kernel> {
    let mut out = Vec::new();
    for bits in 0..32u32 {
        let b = |i: u32| bits >> i & 1 == 1;
        for (rows, cols) in [(64, 4), (32, 8), (16, 16), (8, 16)] {
            let v = Variant {
                rows,
                cols,
                lanes: VEC4_LANES,
                trans_a: b(0),
                trans_b: b(1),
                vec_a: b(2),
                vec_b: b(3),
                vec_c: b(4),
                strided: false,
                share_a: true,
            };
            out.push(kernel(v));
        }
    }
    for (m, n, k) in [(4, 4, 4), (64, 64, 64)] {
        for bits in 0..32u32 {
            let b = |i: u32| bits >> i & 1 == 1;
            // Shapes do not matter for the strided tuning; the vec flags come from them for
            // the vec4 one, so enumerate the layouts directly.
            let big = m * n * k >= BIG_BLOCK_FROM;
            let edge = if big { 16 } else { 4 };
            let v = Variant {
                rows: edge,
                cols: edge,
                lanes: VEC4_LANES,
                trans_a: b(0),
                trans_b: b(1),
                vec_a: b(2),
                vec_b: b(3),
                vec_c: b(4),
                strided: false,
                share_a: false,
            };
            out.push(kernel(v));
        }
    }
    for (m, n) in [(3, 5), (8, 9), (16, 16)] {
        out.push(choose(Tuning::Shared, m, n, 256, 1, false, true).kernel);
    }
    out.push(choose(Tuning::Strided, 8, 8, 8, 1, false, false).kernel);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_blocks_follow_the_shape() {
        // Square: the tallest of the tied shapes; a few rows: short blocks; M = 72 wastes less
        // in 32-row blocks than in 64-row ones.
        assert_eq!(shared_block(1024, 1024), (64, 4));
        assert_eq!(shared_block(8, 676), (8, 16));
        assert_eq!(shared_block(16, 121), (16, 16));
        assert_eq!(shared_block(72, 121), (32, 8));
        // Split-K only for small outputs with a long, aligned K in both operands.
        assert_eq!(split_k_block(Tuning::Shared, 8, 9, 676, false, true), Some((8, 12)));
        assert_eq!(split_k_block(Tuning::Shared, 8, 9, 675, false, true), None);
        assert_eq!(split_k_block(Tuning::Vec4, 8, 9, 676, false, true), None);
        assert_eq!(split_k_block(Tuning::Shared, 8, 9, 676, false, false), None);
        assert_eq!(split_k_block(Tuning::Shared, 17, 9, 676, false, true), None);
    }
}
