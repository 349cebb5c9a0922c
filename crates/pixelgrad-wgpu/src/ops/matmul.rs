//! Batched matmul with transpose flags and batch broadcasting.

use pixelgrad_core::{Result, Shape};

use super::matmul_tiled_src::{Operands, Tiled};
use super::{matmul_cpu, u};
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;

/// What [`crate::WgpuBackend::f16_matmul_path`] reports for [`Operands::F16Storage`].
pub(crate) const F16_PATH_F32: &str = "f32 (f16 weights read directly)";

/// What it reports for [`Operands::F16Products`].
pub(crate) const F16_PATH_F16: &str = "f16 products (shader-f16)";

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
        let t = tiled(m, n);
        all.push(1);
        let kernel = tiled_with_epilogue(t, &e, all.len())?;
        push_epilogue_words(op, epi, out, &mut all)?;
        let grid = tiled_grid(gpu, &t, m, n, batch)?;
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

/// The f32 tiled variant for C [M, N]: 128x128 tiles when both are large, else 64x64.
fn tiled(m: usize, n: usize) -> Tiled {
    if m >= BIG_FROM && n >= BIG_FROM {
        Tiled::big(Operands::F32)
    } else {
        Tiled::small(Operands::F32)
    }
}

/// The grid of tiled variant `t` for C [M, N] in `batch` entries.
fn tiled_grid(gpu: &Gpu, t: &Tiled, m: usize, n: usize, batch: usize) -> Result<[u32; 3]> {
    let op = "matmul";
    Ok([gpu.check_dim(op, n.div_ceil(t.tile) as u64)?, gpu.check_dim(op, m.div_ceil(t.tile) as u64)?, gpu.check_dim(op, batch as u64)?])
}

/// The kernels rendered so far, each kept for the process: keyed by the variant, and for those
/// storing an epilogue too by the epilogue and where its parameter words start.
type TiledKey = (Tiled, Option<(crate::wgsl::Epilogue, usize)>);
static TILED_CACHE: std::sync::Mutex<Vec<(TiledKey, &'static Kernel)>> = std::sync::Mutex::new(Vec::new());

/// The kernel of tiled variant `t`, rendered on first use.
pub(crate) fn tiled_kernel(t: Tiled) -> Result<&'static Kernel> {
    tiled_render(t, None)
}

/// The kernel of `t` storing `epi` of every result too: the epilogue's inputs bound from 3 on,
/// then `c` and the epilogue's output; `first` is where the epilogue's parameter words start.
fn tiled_with_epilogue(t: Tiled, epi: &crate::wgsl::Epilogue, first: usize) -> Result<&'static Kernel> {
    tiled_render(t, Some((epi, first)))
}

fn tiled_render(t: Tiled, epi: Option<(&crate::wgsl::Epilogue, usize)>) -> Result<&'static Kernel> {
    // A poisoned lock only means a panic elsewhere while it was held; the list is still valid.
    let mut cache = TILED_CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let key: TiledKey = (t, epi.map(|(e, first)| (e.clone(), first)));
    if let Some((_, k)) = cache.iter().find(|(w, _)| *w == key) {
        return Ok(k);
    }
    let (epi_src, epi_inputs) = match epi {
        Some((e, first)) => (Some(e.source(3, first)?), e.inputs()),
        None => (None, 0),
    };
    let Some(source) = t.source(epi_src.as_deref().map(|s| (s, epi_inputs))) else {
        return Err(pixelgrad_core::Error::backend(
            "matmul",
            crate::BACKEND,
            format!("internal: tiled variant {t:?} does not fit its algorithm"),
        ));
    };
    let name = match epi {
        Some(_) => format!("{}_epi{}", t.name(), cache.len()),
        None => t.name(),
    };
    let k: &'static Kernel = Box::leak(Box::new(Kernel {
        name: name.into(),
        source: source.into(),
        inputs: 2 + epi_inputs,
        outputs: if epi.is_some() { 2 } else { 1 },
        overrides: t.overrides(),
        status: false,
    }));
    cache.push((key, k));
    Ok(k)
}

/// Every tiled variant the launcher can pick (without epilogue), for validation tests.
#[cfg(test)]
pub(crate) fn all_tiled() -> Vec<&'static Kernel> {
    Tiled::all().into_iter().map(|t| tiled_kernel(t).unwrap()).collect()
}

/// The f32 tiled variants storing `epi` too, its parameter words from `first` on, for
/// validation tests (the f16 ones take no epilogue).
#[cfg(test)]
pub(crate) fn tiled_with(epi: &crate::wgsl::Epilogue, first: usize) -> Vec<&'static Kernel> {
    [Tiled::small(Operands::F32), Tiled::big(Operands::F32)].into_iter().map(|t| tiled_with_epilogue(t, epi, first).unwrap()).collect()
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
    let t = tiled(m, n);
    let kernel = tiled_kernel(t)?;
    let grid = tiled_grid(gpu, &t, m, n, z)?;
    gpu.launch("matmul", kernel, &[u32::from(trans_a), u32::from(trans_b)], &[a.buffer(), b.buffer()], res.buffer(), &params, grid)
}

/// [`matmul`] where `a` or `b` (not both; the caller checked) is packed f16 storage: the
/// tiled kernel of [`Operands::F16Storage`], which reads the halves where it loads its tiles
/// (no widen pass), on every adapter (the register kernels have no f16 variant);
/// [`Operands::F16Products`], products in f16, where `Gpu::f16_arith` is on.
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
    let (mut params, (m, n, _, batch)) = own_params(trans_a, shapes, out)?;
    if out.numel() == 0 {
        return Ok(());
    }
    // One batch entry per output.
    params.push(1);
    let f16_b = b.dtype == pixelgrad_core::kernel::DType::F16;
    let t = Tiled::small(if gpu.f16_arith.get() { Operands::F16Products } else { Operands::F16Storage });
    let grid = tiled_grid(gpu, &t, m, n, batch)?;
    let config = [u32::from(trans_a), u32::from(trans_b), u32::from(f16_b)];
    let kernel = tiled_kernel(t)?;
    gpu.launch(op, kernel, &config, &[a.buffer(), b.buffer()], res.buffer(), &params, grid)
}
