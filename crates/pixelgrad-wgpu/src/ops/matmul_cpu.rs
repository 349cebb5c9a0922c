//! Matmul for CPU adapters (Mesa lavapipe, SwiftShader): a register-blocked kernel without
//! workgroup memory or barriers, generated here because it is fully unrolled.
//!
//! Why a separate kernel: lavapipe runs 8 invocations as the lanes of one AVX2 vector, but
//! (Mesa 22.3) compiles every storage-buffer *and* workgroup-memory load into a loop over
//! those 8 lanes that inserts each scalar through the stack (a store-forwarding stall per
//! lane). A load therefore costs ~30 cycles per lane and component while an FMA costs a
//! fraction of one, so speed is set by FMAs per loaded value. The GPU-style tiled kernels
//! (`matmul.wgsl`) load every operand twice (global → workgroup memory → registers) and
//! their barriers turn each workgroup into coroutines. This kernel instead gives every
//! invocation a [`ROWS`]×[`COLS`] block of C, loads A and B straight from storage as `vec4`s
//! (one lane loop fetches four components) and keeps all accumulators in registers:
//! 32 `vec4` loads per 4 steps of K feed 1024 FMAs. Measured on lavapipe: ~4x the tiled
//! kernel's GFLOP/s (see BENCHMARKS.md).
//!
//! Operands whose contiguous dimension is a multiple of 4 (`VEC_A` / `VEC_B`) are read as
//! aligned `vec4`s; others element by element (one `vec4` load per element), so any shape
//! works. Rows and columns past the edge are clamped for loads and skipped for stores.

use std::sync::OnceLock;

use super::matmul_cpu_src::source;
use crate::pipelines::Kernel;

/// Rows of C per invocation (multiple of 4).
pub(crate) const ROWS: usize = 16;
/// Columns of C per invocation (multiple of 4).
pub(crate) const COLS: usize = 16;
/// Invocations per workgroup, along columns: one AVX2 vector of lanes.
pub(crate) const LANES: usize = 8;

/// The kernel (source generated on first use).
pub(crate) fn kernel() -> &'static Kernel {
    static K: OnceLock<Kernel> = OnceLock::new();
    static SRC: OnceLock<String> = OnceLock::new();
    K.get_or_init(|| Kernel {
        name: "matmul_cpu",
        source: SRC.get_or_init(|| source(ROWS, COLS, LANES)).as_str(),
        inputs: 2,
        overrides: &["TRANS_A", "TRANS_B", "VEC_A", "VEC_B"],
        status: false,
    })
}

