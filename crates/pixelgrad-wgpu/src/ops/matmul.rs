//! Batched matmul with transpose flags and batch broadcasting.

use std::borrow::Cow;

use pixelgrad_core::{Result, Shape};

use super::{matmul_cpu, u};
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;

pub(crate) const MATMUL: Kernel = Kernel {
    name: Cow::Borrowed("matmul"),
    source: Cow::Borrowed(include_str!("../kernels/matmul.wgsl")),
    inputs: 2,
    outputs: 1,
    overrides: &["TRANS_A", "TRANS_B"],
    status: false,
};

pub(crate) const MATMUL_BIG: Kernel = Kernel {
    name: Cow::Borrowed("matmul_big"),
    source: Cow::Borrowed(include_str!("../kernels/matmul_big.wgsl")),
    inputs: 2,
    outputs: 1,
    overrides: &["TRANS_A", "TRANS_B"],
    status: false,
};

/// [`MATMUL`] with one operand (`F16_B`: B, else A) stored as packed f16, read directly.
pub(crate) const MATMUL_F16: Kernel = Kernel {
    name: Cow::Borrowed("matmul_f16"),
    source: Cow::Borrowed(include_str!("../kernels/matmul_f16.wgsl")),
    inputs: 2,
    outputs: 1,
    overrides: &["TRANS_A", "TRANS_B", "F16_B"],
    status: false,
};

/// [`MATMUL_F16`] with f16 products (f32 accumulation), on devices with `shader-f16`.
pub(crate) const MATMUL_F16H: Kernel = Kernel {
    name: Cow::Borrowed("matmul_f16h"),
    source: Cow::Borrowed(include_str!("../kernels/matmul_f16h.wgsl")),
    inputs: 2,
    outputs: 1,
    overrides: &["TRANS_A", "TRANS_B", "F16_B"],
    status: false,
};

/// What [`crate::WgpuBackend::f16_matmul_path`] reports for [`MATMUL_F16`].
pub(crate) const F16_PATH_F32: &str = "f32 (f16 weights read directly)";

/// What it reports for [`MATMUL_F16H`].
pub(crate) const F16_PATH_F16: &str = "f16 products (shader-f16)";

/// Output tile edges of one workgroup (must match the kernels).
const TILE: usize = 64;
const TILE_BIG: usize = 128;
/// Both M and N at least this large use the 128x128 kernel: it needs enough tiles to fill
/// the GPU, and wastes little on partial edge tiles.
const BIG_FROM: usize = 256;

/// An elementwise computation a matmul applies to its results as it stores them: `launch`
/// over `leaves` (of `shapes`, broadcast to the output's shape), whose input `given` is the
/// matmul's result.
pub(crate) struct EpilogueArgs<'a> {
    pub launch: &'a pixelgrad_core::kernel::Launch,
    pub given: usize,
    pub leaves: Vec<&'a GpuTensor>,
    pub shapes: Vec<&'a Shape>,
}

/// The matmul's own parameter words on the register kernels: 5, plus 4 strides when strided,
/// plus the count of batches summed.
const OWN_WORDS_MAX: usize = 10;

/// True if a matmul into `out` can store `epi` in the same launch: register kernels (native
/// CPU adapters) other than split-K, and the epilogue's words fit the parameter slot.
pub(crate) fn takes_epilogue(
    gpu: &Gpu,
    trans_a: bool,
    trans_b: bool,
    shapes: &[&Shape],
    out: &Shape,
    epi_params: usize,
    epi_inputs: usize,
) -> bool {
    if shapes.len() != 2 {
        return false;
    }
    let (m, n, k, batch) = dims(trans_a, shapes, out);
    // The tiled kernels always can; of the register kernels, all but split-K.
    let kernel_can = !gpu.cpu_matmul
        || matmul_cpu::choose(matmul_cpu::tuning(&gpu.info, gpu.device.features()), m, n, k, batch, trans_a, trans_b).variant.is_some();
    let words = OWN_WORDS_MAX + epi_params + 3 * epi_inputs;
    kernel_can && out.rank() <= 3 && words <= crate::context::PARAM_WORDS && 4 + epi_inputs <= gpu.max_buffers()
}

/// `(m, n, k, batch)` of a matmul.
type Mnkb = (usize, usize, usize, usize);

/// The [`Mnkb`] of a matmul.
fn dims(trans_a: bool, shapes: &[&Shape], out: &Shape) -> Mnkb {
    let sa = shapes[0].dims();
    let od = out.dims();
    let (m, n) = (od[od.len() - 2], od[od.len() - 1]);
    let ad = &sa[sa.len() - 2..];
    let k = if trans_a { ad[0] } else { ad[1] };
    let batch = if od.len() == 3 { od[0] } else { 1 };
    (m, n, k, batch)
}

/// The matmul's own parameter words `[m, n, k, a batch stride, b batch stride]` (a batch of
/// one broadcasts: stride 0 re-reads the same matrix for every batch entry) and its
/// `(m, n, k, batch)`.
fn own_params(trans_a: bool, shapes: &[&Shape], out: &Shape) -> Result<(Vec<u32>, Mnkb)> {
    let op = "matmul";
    let (m, n, k, batch) = dims(trans_a, shapes, out);
    let (sa, sb) = (shapes[0].dims(), shapes[1].dims());
    let a_stride = if sa.len() == 3 && sa[0] > 1 { m * k } else { 0 };
    let b_stride = if sb.len() == 3 && sb[0] > 1 { k * n } else { 0 };
    Ok((vec![u(op, m)?, u(op, n)?, u(op, k)?, u(op, a_stride)?, u(op, b_stride)?], (m, n, k, batch)))
}

/// The register kernel's grid for a `rows` x `cols` block per workgroup.
fn register_grid(gpu: &Gpu, c: &matmul_cpu::Choice, (m, n, _, batch): Mnkb) -> Result<[u32; 3]> {
    let op = "matmul";
    Ok([gpu.check_dim(op, n.div_ceil(c.cols) as u64)?, gpu.check_dim(op, m.div_ceil(c.rows) as u64)?, gpu.check_dim(op, batch as u64)?])
}

/// [`matmul`] into `res` that also writes `epi` of every result into `epi_res`, in one launch
/// (callers check [`takes_epilogue`] first).
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_epilogue(
    gpu: &Gpu,
    trans_a: bool,
    trans_b: bool,
    a: &GpuTensor,
    b: &GpuTensor,
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
    epi: &EpilogueArgs<'_>,
    epi_res: &GpuTensor,
) -> Result<()> {
    let op = "matmul";
    let (mut all, mnkb) = own_params(trans_a, shapes, out)?;
    let (m, n, k, batch) = mnkb;
    // Every leaf, the matmul's own result (given) included, read as the output's shape.
    let mut leaf_shapes: Vec<&Shape> = epi.shapes.clone();
    leaf_shapes.insert(epi.given, out);
    let (fast, scalars) = pixelgrad_core::kernel::fuse::read_mode(&leaf_shapes, out);
    let e = crate::wgsl::Epilogue { kernel: epi.launch.kernel.clone(), given: epi.given, fast, scalars };
    let mut ins: Vec<&wgpu::Buffer> = vec![a.buffer(), b.buffer()];
    ins.extend(epi.leaves.iter().map(|t| t.buffer()));
    if !gpu.cpu_matmul {
        let (big, tile) = tiled(m, n);
        all.push(1);
        let kernel = tiled_with_epilogue(big, &e, all.len())?;
        push_epilogue_words(op, epi, out, &mut all)?;
        let grid =
            [gpu.check_dim(op, n.div_ceil(tile) as u64)?, gpu.check_dim(op, m.div_ceil(tile) as u64)?, gpu.check_dim(op, batch as u64)?];
        return gpu.launch_multi(
            op,
            kernel,
            &[u32::from(trans_a), u32::from(trans_b)],
            &ins,
            &[res.buffer(), epi_res.buffer()],
            &all,
            grid,
        );
    }
    let c = matmul_cpu::choose(matmul_cpu::tuning(&gpu.info, gpu.device.features()), m, n, k, batch, trans_a, trans_b);
    let Some(v) = c.variant else {
        return Err(pixelgrad_core::Error::backend(op, crate::BACKEND, "internal: an epilogue on the split-K kernel"));
    };
    for &s in &c.strides {
        all.push(u(op, s)?);
    }
    all.push(1);
    let kernel = matmul_cpu::kernel_with_epilogue(v, &e, all.len())?;
    push_epilogue_words(op, epi, out, &mut all)?;
    let grid = register_grid(gpu, &c, mnkb)?;
    gpu.launch_multi(op, kernel, &[], &ins, &[res.buffer(), epi_res.buffer()], &all, grid)
}

/// The epilogue's parameter words after the matmul's: its kernel's parameters, then each read
/// input's strides over (batch, row, column) of the output.
fn push_epilogue_words(op: &'static str, epi: &EpilogueArgs<'_>, out: &Shape, all: &mut Vec<u32>) -> Result<()> {
    all.extend(epi.launch.params.iter().map(|&p| super::f(p)));
    for sh in &epi.shapes {
        let st = pixelgrad_core::shape::broadcast_strides(sh, out);
        let mut bsc = [0usize; 3];
        for (slot, &v) in bsc.iter_mut().rev().zip(st.iter().rev()) {
            *slot = v;
        }
        for v in bsc {
            all.push(u(op, v)?);
        }
    }
    Ok(())
}

/// Whether the tiled path takes the 128x128 kernel, and its tile edge.
fn tiled(m: usize, n: usize) -> (bool, usize) {
    let big = m >= BIG_FROM && n >= BIG_FROM;
    (big, if big { TILE_BIG } else { TILE })
}

/// The line each tiled kernel stores a result with; the epilogue variant replaces it.
const TILED_STORE: &str = "c[c_off + row * n_size + col] = ";
/// The output's declaration in the tiled kernels.
const TILED_OUTPUT: &str = "@group(0) @binding(3) var<storage, read_write> c: array<f32>;";

/// The tiled kernel (`big`: the 128x128 one) storing `epi` of every result too: the
/// epilogue's inputs bound from 3 on, then `c` and `e`. Generated on first use and kept for the
/// process; `first` is where the epilogue's parameter words start.
fn tiled_with_epilogue(big: bool, epi: &crate::wgsl::Epilogue, first: usize) -> Result<&'static Kernel> {
    type Key = (bool, crate::wgsl::Epilogue, usize);
    static CACHE: std::sync::Mutex<Vec<(Key, &'static Kernel)>> = std::sync::Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let key = (big, epi.clone(), first);
    if let Some((_, k)) = cache.iter().find(|(w, _)| *w == key) {
        return Ok(k);
    }
    let base = if big { &MATMUL_BIG } else { &MATMUL };
    let n = epi.inputs();
    let src = base.source.as_ref();
    let store_at = src.find(TILED_STORE).filter(|_| src.contains(TILED_OUTPUT));
    let Some(at) = store_at else {
        return Err(pixelgrad_core::Error::backend("matmul", crate::BACKEND, "internal: the tiled kernel's store line changed"));
    };
    let end = at + src[at..].find(';').unwrap_or(0);
    let value = &src[at + TILED_STORE.len()..end];
    let store = format!(
        "{{ let v = {value}; let idx = c_off + row * n_size + col; c[idx] = v; pg_epi_out[idx] = pg_epi(idx, wid.z, row, col, v); }}"
    );
    let decl = format!(
        "{}@group(0) @binding({}) var<storage, read_write> c: array<f32>;\n@group(0) @binding({}) var<storage, read_write> pg_epi_out: array<f32>;",
        epi.source(3, first)?,
        3 + n,
        4 + n
    );
    let source = format!("{}{store}{}", &src[..at], &src[end + 1..]).replace(TILED_OUTPUT, &decl);
    let name: &'static str = Box::leak(format!("{}_epi{}", base.name, cache.len()).into_boxed_str());
    let k: &'static Kernel = Box::leak(Box::new(Kernel {
        name: name.into(),
        source: source.into(),
        inputs: 2 + n,
        outputs: 2,
        overrides: base.overrides,
        status: false,
    }));
    cache.push((key, k));
    Ok(k)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul(
    gpu: &Gpu,
    trans_a: bool,
    trans_b: bool,
    a: &GpuTensor,
    b: &GpuTensor,
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
) -> Result<()> {
    matmul_summing(gpu, trans_a, trans_b, a, b, shapes, out, res, false)
}

/// [`matmul`], or with `sum` the batched product into `out` (`[B, M, N]`) summed over its
/// batch, into `res` of `M * N` elements, in one launch: each output accumulates the `B`
/// products in turn (the matmul and a sum over axis 0; the weight gradient of a layer applied
/// to a batch of matrices, like a convolution's).
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_summing(
    gpu: &Gpu,
    trans_a: bool,
    trans_b: bool,
    a: &GpuTensor,
    b: &GpuTensor,
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
    sum: bool,
) -> Result<()> {
    let (mut params, mnkb) = own_params(trans_a, shapes, out)?;
    let (m, n, k, batch) = mnkb;
    // Summing: one launch along z, each output looping over every batch entry.
    let (summed, z) = if sum { (batch, 1) } else { (1, batch) };
    if gpu.cpu_matmul {
        let c = matmul_cpu::choose(matmul_cpu::tuning(&gpu.info, gpu.device.features()), m, n, k, batch, trans_a, trans_b);
        let grid = register_grid(gpu, &c, (m, n, k, z))?;
        for &s in &c.strides {
            params.push(u("matmul", s)?);
        }
        params.push(u("matmul", summed)?);
        return gpu.launch("matmul", c.kernel, &[], &[a.buffer(), b.buffer()], res.buffer(), &params, grid);
    }
    params.push(u("matmul", summed)?);
    let (big, tile) = tiled(m, n);
    let kernel = if big { &MATMUL_BIG } else { &MATMUL };
    let grid = [
        gpu.check_dim("matmul", n.div_ceil(tile) as u64)?,
        gpu.check_dim("matmul", m.div_ceil(tile) as u64)?,
        gpu.check_dim("matmul", z as u64)?,
    ];
    gpu.launch("matmul", kernel, &[u32::from(trans_a), u32::from(trans_b)], &[a.buffer(), b.buffer()], res.buffer(), &params, grid)
}

/// [`matmul`] where `a` or `b` (not both; the caller checked) is packed f16 storage: the
/// tiled [`MATMUL_F16`], which reads the halves where it loads its tiles (no widen pass), on
/// every adapter (the register kernels have no f16 variant); [`MATMUL_F16H`], products in
/// f16, where `Gpu::f16_arith` is on.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_f16(
    gpu: &Gpu,
    trans_a: bool,
    trans_b: bool,
    a: &GpuTensor,
    b: &GpuTensor,
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
) -> Result<()> {
    let op = "matmul";
    let (params, (m, n, _, batch)) = own_params(trans_a, shapes, out)?;
    if out.numel() == 0 {
        return Ok(());
    }
    let f16_b = b.dtype == pixelgrad_core::kernel::DType::F16;
    let grid = [gpu.check_dim(op, n.div_ceil(TILE) as u64)?, gpu.check_dim(op, m.div_ceil(TILE) as u64)?, gpu.check_dim(op, batch as u64)?];
    let config = [u32::from(trans_a), u32::from(trans_b), u32::from(f16_b)];
    let kernel = if gpu.f16_arith.get() { &MATMUL_F16H } else { &MATMUL_F16 };
    gpu.launch(op, kernel, &config, &[a.buffer(), b.buffer()], res.buffer(), &params, grid)
}
