//! The exact integer matmul of 8-bit weights ([`pixelgrad_core::Op::MatMulI8`]): weights
//! packed four per u32 word, i32 accumulation. Two paths: [`PATH`], bytes unpacked with
//! shifts and multiplied as i32 (any whole-number `b`), and [`PATH_DOT4`], for `b_i8`
//! (`b` in `[-128, 127]`) where the WGSL has `packed_4x8_integer_dot_product`: `b` packed
//! to bytes by a prologue launch, then `dot4I8Packed` on word pairs.

use std::borrow::Cow;
use std::rc::Rc;
use std::sync::Mutex;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Error, Result, Shape};

use super::matmul_i8_src::Int8;
use super::u;
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::BACKEND;

/// Packs `b` (f32 whole numbers in `[-128, 127]`) four k per word for the dot4 kernels ([`Int8::dot4`]);
/// raises a status bit for values outside that.
pub(crate) const MATMUL_I8_PACK_B: Kernel = Kernel {
    name: Cow::Borrowed("matmul_i8_pack_b"),
    source: Cow::Borrowed(include_str!("../kernels/matmul_i8_pack_b.wgsl")),
    inputs: 1,
    outputs: 1,
    overrides: &[],
    status: true,
};

/// The kernel of variant `v`, rendered on first use and kept for the process.
pub(crate) fn kernel(v: Int8) -> &'static Kernel {
    static CACHE: Mutex<Vec<(Int8, &'static Kernel)>> = Mutex::new(Vec::new());
    // A poisoned lock only means a panic elsewhere while it was held; the list is still valid.
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, k)) = cache.iter().find(|(w, _)| *w == v) {
        return k;
    }
    let k: &'static Kernel = Box::leak(Box::new(Kernel {
        name: Cow::Borrowed(v.name()),
        source: v.source().into(),
        inputs: 2,
        outputs: 1,
        overrides: v.overrides(),
        status: false,
    }));
    cache.push((v, k));
    k
}

/// Output tile edge of one workgroup (must match the kernel).
const TILE: usize = 32;

/// What [`crate::WgpuBackend::int8_path`] reports for the shift-unpacking kernels, i32 products.
pub(crate) const PATH: &str = "unpacked-i32";

/// What it reports where `b_i8` products run on `dot4I8Packed`.
pub(crate) const PATH_DOT4: &str = "dot4I8Packed";

/// `a` (8-bit, `[M, K]` or `[G, M, K]`) times `b` (f32 whole numbers; in `[-128, 127]` when
/// `b_i8`) into `res`; shapes passed `Op::infer_shape`, and the caller checked the storage
/// types. `b_i8` takes the `dot4I8Packed` path where `Gpu::int8_dot4` is on.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_i8(
    gpu: &Rc<Gpu>,
    b_i8: bool,
    a: &GpuTensor,
    b: &GpuTensor,
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
) -> Result<()> {
    let op = "matmul_i8";
    let signed = match a.dtype {
        DType::I8 => true,
        DType::U8 => false,
        other => return Err(Error::backend(op, BACKEND, format!("internal: weights of type {other}"))),
    };
    let (sa, sb, od) = (shapes[0].dims(), shapes[1].dims(), out.dims());
    let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
    let n = od[od.len() - 1];
    let batch = if od.len() == 3 { od[0] } else { 1 };
    if out.numel() == 0 {
        return Ok(());
    }
    let a_stride = if sa.len() == 3 && sa[0] > 1 { m * k } else { 0 };
    let b_stride = if sb.len() == 3 && sb[0] > 1 { k * n } else { 0 };
    // Element indices of A (and C) must fit u32.
    u(op, batch * m * k.max(1))?;
    u(op, batch * m * n)?;
    let params = [u(op, m)?, u(op, n)?, u(op, k)?, u(op, a_stride)?, u(op, b_stride)?];
    let grid = [gpu.check_dim(op, n.div_ceil(TILE) as u64)?, gpu.check_dim(op, m.div_ceil(TILE) as u64)?, gpu.check_dim(op, batch as u64)?];
    if b_i8 && gpu.int8_dot4.get() {
        // B's batches (1 when rank 2 or broadcast), each packed to [K4, N] words.
        let k4 = k.div_ceil(4);
        let b_batches = if sb.len() == 3 { sb[0] } else { 1 };
        let words = b_batches * k4 * n;
        let packed = GpuTensor::new(gpu, op, words)?;
        let pack = [u(op, words)?, u(op, n)?, u(op, k)?, u(op, k4)?];
        let pack_grid = gpu.grid_elems(op, words)?;
        gpu.launch(op, &MATMUL_I8_PACK_B, &[], &[b.buffer()], packed.buffer(), &pack, pack_grid)?;
        let bp_stride = if b_stride == 0 { 0 } else { k4 * n };
        let params = [u(op, m)?, u(op, n)?, u(op, k)?, u(op, a_stride)?, u(op, bp_stride)?, u(op, k4)?];
        let config = [u32::from(signed), u32::from(k.is_multiple_of(4))];
        let kernel = kernel(Int8 { dot4: true, vec4: n.is_multiple_of(4) });
        return gpu.launch(op, kernel, &config, &[a.buffer(), packed.buffer()], res.buffer(), &params, grid);
    }
    let kernel = kernel(Int8 { dot4: false, vec4: k.is_multiple_of(4) && n.is_multiple_of(4) });
    gpu.launch(op, kernel, &[u32::from(signed)], &[a.buffer(), b.buffer()], res.buffer(), &params, grid)
}
