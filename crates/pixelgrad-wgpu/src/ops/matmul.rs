//! Batched matmul with transpose flags and batch broadcasting.

use pixelgrad_core::{Result, Shape};

use super::{matmul_cpu, u};
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;

pub(crate) const MATMUL: Kernel = Kernel {
    name: "matmul",
    source: include_str!("../kernels/matmul.wgsl"),
    inputs: 2,
    overrides: &["TRANS_A", "TRANS_B"],
    status: false,
};

pub(crate) const MATMUL_BIG: Kernel = Kernel {
    name: "matmul_big",
    source: include_str!("../kernels/matmul_big.wgsl"),
    inputs: 2,
    overrides: &["TRANS_A", "TRANS_B"],
    status: false,
};

/// Output tile edges of one workgroup (must match the kernels).
const TILE: usize = 64;
const TILE_BIG: usize = 128;
/// Smallest M·N·K that runs on the register-blocked kernel on CPU adapters.
const REGISTERS_FROM: usize = 1 << 16;
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
    if std::env::var_os("PG_TRACE_MATMUL").is_some() { eprintln!("TRACE matmul m{m} n{n} k{k} batch{batch} ta{} tb{} sa{a_stride} sb{b_stride}", trans_a as u8, trans_b as u8); }
    let params = [u("matmul", m)?, u("matmul", n)?, u("matmul", k)?, u("matmul", a_stride)?, u("matmul", b_stride)?];
    // Tiny products (batch-1 layers) stay on the tiled kernel: measured on lavapipe, a
    // batch-1 MLP step was ~3x slower with the register kernel (its 16x16 blocks and
    // 256 scalar stores per lane do not pay off when a matmul is a few thousand FMAs).
    if gpu.cpu_matmul && m * n * k >= REGISTERS_FROM {
        // Aligned vec4 reads need the contiguous dimension (which also makes every batch
        // offset) a multiple of 4.
        let vec_a = if trans_a { m % 4 == 0 } else { k % 4 == 0 };
        let vec_b = if trans_b { k % 4 == 0 } else { n % 4 == 0 };
        let grid = [
            gpu.check_dim("matmul", n.div_ceil(matmul_cpu::COLS * matmul_cpu::LANES) as u64)?,
            gpu.check_dim("matmul", m.div_ceil(matmul_cpu::ROWS) as u64)?,
            gpu.check_dim("matmul", batch as u64)?,
        ];
        let config = [u32::from(trans_a), u32::from(trans_b), u32::from(vec_a), u32::from(vec_b)];
        return gpu.launch("matmul", matmul_cpu::kernel(), &config, &[a.buffer(), b.buffer()], res.buffer(), &params, grid);
    }
    let big = m >= BIG_FROM && n >= BIG_FROM;
    let (kernel, tile) = if big { (&MATMUL_BIG, TILE_BIG) } else { (&MATMUL, TILE) };
    let grid = [
        gpu.check_dim("matmul", n.div_ceil(tile) as u64)?,
        gpu.check_dim("matmul", m.div_ceil(tile) as u64)?,
        gpu.check_dim("matmul", batch as u64)?,
    ];
    gpu.launch(
        "matmul",
        kernel,
        &[u32::from(trans_a), u32::from(trans_b)],
        &[a.buffer(), b.buffer()],
        res.buffer(),
        &params,
        grid,
    )
}
