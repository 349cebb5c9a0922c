//! [`pixelgrad_core::Op::Attention`] in one pass (`kernels/attention.wgsl`): a workgroup per
//! 64 query rows of one head, key/value tiles in workgroup memory, an online softmax per row,
//! so the `S × T` scores never exist. Head sizes up to [`MAX_HEAD`] (a row's query and
//! accumulator live in private arrays); above it the op is a typed error. Reached through
//! `Tensor::attention_fused` only: [`crate::WgpuBackend`] answers `fused_attention` false, so
//! `Tensor::attention` composes the op, because this kernel measured 3-9x slower than the
//! composition on lavapipe (`bench/notes/2026-12-07-fused-attention.md`; per-row private
//! arrays indexed at run time, one row per invocation). It runs plain attention only (the
//! scale and an additive mask): the other options of [`AttentionOpts`] (causal exclusion,
//! softcap, smooth softmax) are a typed error here, and `Tensor::attention` composes them.

use std::borrow::Cow;

use pixelgrad_core::{AttentionOpts, Error, Result, Shape};

use super::{f, u};
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::BACKEND;

pub(crate) const ATTENTION: Kernel = Kernel {
    name: Cow::Borrowed("attention"),
    source: Cow::Borrowed(include_str!("../kernels/attention.wgsl")),
    inputs: 4,
    outputs: 1,
    overrides: &[],
    status: false,
};

/// The largest `H` and `Hv` the kernel holds in private memory (`qr` and `acc`).
pub(crate) const MAX_HEAD: usize = 256;
/// Floats of workgroup memory for one key tile and one value tile (`tiles`).
const TILE_FLOATS: usize = 4096;
/// Most keys per tile (`sc`, the tile's scores).
const MAX_TILE: usize = 64;
/// Query rows per workgroup.
const ROWS: usize = 64;

/// `ins` = q, k, v and the mask when `masked`; shapes passed `Op::infer_shape`.
pub(crate) fn attention(
    gpu: &Gpu,
    opts: &AttentionOpts,
    masked: bool,
    ins: &[&GpuTensor],
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
) -> Result<()> {
    let op = "attention";
    if !opts.is_plain() {
        let msg = format!(
            "the fused kernel runs the scale and an additive mask only, not {opts:?} (Tensor::attention composes the op with these options)"
        );
        return Err(Error::backend(op, BACKEND, msg));
    }
    let scale = opts.scale;
    let (q, k, v) = (shapes[0].dims(), shapes[1].dims(), shapes[2].dims());
    let (b, n, s, h, nkv, t, hv) = (q[0], q[1], q[2], q[3], k[1], k[2], v[3]);
    if h > MAX_HEAD || hv > MAX_HEAD {
        let msg =
            format!("head sizes {h} and {hv}: the fused kernel holds at most {MAX_HEAD} (Tensor::attention composes the op above that)");
        return Err(Error::backend(op, BACKEND, msg));
    }
    // u32 indices: every tensor the kernel reads or writes stays below 2^32 elements
    for sh in shapes.iter().copied().chain([out]) {
        u(op, sh.numel())?;
    }
    let tile = (TILE_FLOATS / (h + hv).max(1)).clamp(1, MAX_TILE);
    let ms = if masked { pixelgrad_core::shape::broadcast_strides4(shapes[3].dims()) } else { [0; 4] };
    let blocks = s.div_ceil(ROWS);
    let p = [
        u(op, b)?,
        u(op, n)?,
        u(op, s)?,
        u(op, h)?,
        u(op, nkv)?,
        u(op, t)?,
        u(op, hv)?,
        u(op, n / nkv)?,
        f(scale),
        u32::from(masked),
        u(op, ms[0])?,
        u(op, ms[1])?,
        u(op, ms[2])?,
        u(op, ms[3])?,
        u(op, tile)?,
        u(op, blocks)?,
    ];
    let grid = gpu.grid_1d(op, (b * n * blocks) as u64)?;
    // Without a mask the kernel never reads binding 4: q is bound there.
    let mask = if masked { ins[3] } else { ins[0] };
    gpu.launch(op, &ATTENTION, &[], &[ins[0].buffer(), ins[1].buffer(), ins[2].buffer(), mask.buffer()], res.buffer(), &p, grid)
}
