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
    overrides: &["TRANS_A", "TRANS_B"],
    status: false,
};

pub(crate) const MATMUL_BIG: Kernel = Kernel {
    name: Cow::Borrowed("matmul_big"),
    source: Cow::Borrowed(include_str!("../kernels/matmul_big.wgsl")),
    inputs: 2,
    overrides: &["TRANS_A", "TRANS_B"],
    status: false,
};

/// Output tile edges of one workgroup (must match the kernels).
const TILE: usize = 64;
const TILE_BIG: usize = 128;
/// Both M and N at least this large use the 128x128 kernel: it needs enough tiles to fill
/// the GPU, and wastes little on partial edge tiles.
const BIG_FROM: usize = 256;

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
    let (sa, sb) = (shapes[0].dims(), shapes[1].dims());
    let od = out.dims();
    let (m, n) = (od[od.len() - 2], od[od.len() - 1]);
    let ad = &sa[sa.len() - 2..];
    let k = if trans_a { ad[0] } else { ad[1] };
    let batch = if od.len() == 3 { od[0] } else { 1 };
    // A batch of one broadcasts: stride 0 re-reads the same matrix for every batch entry.
    let a_stride = if sa.len() == 3 && sa[0] > 1 { m * k } else { 0 };
    let b_stride = if sb.len() == 3 && sb[0] > 1 { k * n } else { 0 };
    let params = [u("matmul", m)?, u("matmul", n)?, u("matmul", k)?, u("matmul", a_stride)?, u("matmul", b_stride)?];
    if gpu.cpu_matmul {
        let c = matmul_cpu::choose(matmul_cpu::tuning(&gpu.info, gpu.device.features()), m, n, k, batch, trans_a, trans_b);
        let grid = [
            gpu.check_dim("matmul", n.div_ceil(c.cols) as u64)?,
            gpu.check_dim("matmul", m.div_ceil(c.rows) as u64)?,
            gpu.check_dim("matmul", batch as u64)?,
        ];
        let mut all = params.to_vec();
        for &s in &c.strides {
            all.push(u("matmul", s)?);
        }
        return gpu.launch("matmul", c.kernel, &[], &[a.buffer(), b.buffer()], res.buffer(), &all, grid);
    }
    let big = m >= BIG_FROM && n >= BIG_FROM;
    let (kernel, tile) = if big { (&MATMUL_BIG, TILE_BIG) } else { (&MATMUL, TILE) };
    let grid = [
        gpu.check_dim("matmul", n.div_ceil(tile) as u64)?,
        gpu.check_dim("matmul", m.div_ceil(tile) as u64)?,
        gpu.check_dim("matmul", batch as u64)?,
    ];
    gpu.launch("matmul", kernel, &[u32::from(trans_a), u32::from(trans_b)], &[a.buffer(), b.buffer()], res.buffer(), &params, grid)
}
