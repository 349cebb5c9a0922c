//! pixelgrad-wgpu: the WebGPU backend. Every primitive op of [`pixelgrad_core::Op`] runs as a
//! WGSL compute kernel (`src/kernels/*.wgsl`) through `wgpu`: natively on Vulkan / Metal / DX12
//! (Mesa lavapipe on machines without a GPU), and in browsers through WebGPU when built for
//! wasm32.
//!
//! ```no_run
//! # #[cfg(not(target_arch = "wasm32"))]
//! # fn main() -> pixelgrad_core::Result<()> {
//! use pixelgrad_core::{Device, Tensor};
//! use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};
//!
//! let backend = WgpuBackend::new(WgpuOptions::default())?;
//! println!("{}", backend.report());
//! let test = backend.self_test()?;
//! println!("self-test max relative error {:e}", test.max_rel_error);
//! let dev = Device::new(backend);
//! let a = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0, 4.0], [2, 2])?;
//! let b = a.matmul(&a)?;
//! assert_eq!(b.to_vec()?, vec![7.0, 10.0, 15.0, 22.0]);
//! # Ok(())
//! # }
//! # #[cfg(target_arch = "wasm32")]
//! # fn main() {}
//! ```
//!
//! Design in brief (details in the book's chapter `docs/src/design/webgpu.md`):
//! - **buffers** come from a pool of power-of-two size classes ([`pool`]); a dropped tensor's
//!   buffer is recycled once the submission that last used it has been submitted (queue
//!   order makes later writes safe; no waiting for the GPU); free buffers past a byte budget
//!   ([`WgpuOptions::pool_budget`]) are destroyed, oldest first, once their work completed;
//! - **pipelines** are cached by kernel and a small configuration (op code, transpose flags),
//!   never by shape: shapes, strides and scalars travel in a 256-byte uniform slot per launch;
//! - **submission**: launches are recorded into one command encoder and submitted at sync
//!   points (reads, [`Backend::flush`](pixelgrad_core::Backend::flush)) or every
//!   [`WgpuOptions::max_ops_per_submit`] launches;
//! - **limits**: launches fold into 2-D grids under `maxComputeWorkgroupsPerDimension`; a
//!   tensor over `maxStorageBufferBindingSize` is an [`pixelgrad_core::Error::Limit`];
//! - **errors**: device loss becomes [`pixelgrad_core::Error::DeviceLost`]; any other wgpu
//!   error is reported by the next call as [`pixelgrad_core::Error::Backend`];
//! - **8-bit weights** ([`pixelgrad_core::Tensor::from_i8`], `caps.int8` is true): packed
//!   four per u32 word (element `4i + j` in byte `j` of word `i`), buffers rounded up to whole
//!   words, read back as exact f32; [`pixelgrad_core::Op::MatMulI8`] unpacks them with shifts
//!   and accumulates in i32 (`src/ops/matmul_i8_src.rs` renders it), or, for
//!   [`pixelgrad_core::Tensor::matmul_i8_packed`] where the WGSL has
//!   `packed_4x8_integer_dot_product`, packs `b` to bytes too and multiplies with
//!   `dot4I8Packed` (the same generator's dot4 variants); [`WgpuBackend::int8_path`] says which;
//! - **f16 storage** ([`pixelgrad_core::Tensor::from_f16`], `caps.f16_storage` is true):
//!   packed two per u32 word (element `2i` in the low 16 bits of word `i`), buffers rounded up
//!   to whole words, read back as exact f32; [`pixelgrad_core::Op::Widen`] converts 8-bit or
//!   f16 storage to f32 with integer operations only (`src/kernels/widen.wgsl`: exact,
//!   subnormals included, no `shader-f16` feature); [`pixelgrad_core::Op::MatMul`] takes one
//!   f16 operand directly where the tiled kernels run (`caps.f16_matmul`;
//!   the tiled kernel rendered by `src/ops/matmul_tiled_src.rs` converts the halves the same way at its tile loads; opt-in
//!   f16 products with `shader-f16`: [`WgpuOptions::f16_arithmetic`], its f16-products variant);
//!   [`WgpuBackend::f16_matmul_path`] says which;
//! - **matmul kernel** ([`MatmulKernel`]): on CPU adapters register-blocked kernels without
//!   workgroup memory — on Mesa lavapipe `vec4` kernels specialised per operand layout
//!   (lavapipe compiles every storage and workgroup load into a per-lane loop, ~30 cycles per
//!   lane and value); in browsers and on SwiftShader one kernel with run-time strides for
//!   every layout, because there pipeline compiles (seconds per variant) dominate a first
//!   step; tiles in workgroup memory on real GPUs.
//!
//! # Counters and the steady state
//!
//! [`Backend::counters`](pixelgrad_core::Backend::counters) reports, cumulatively:
//! - `allocations`: wgpu buffers created (tensor storage and readback staging; pool hits
//!   are not counted);
//! - `compiles`: compute pipelines created (cache misses of the (kernel, constants) cache);
//! - `launches`: compute dispatches recorded;
//! - `submissions`: `queue.submit` calls (one per sync point: a read, a `flush`, or
//!   [`WgpuOptions::max_ops_per_submit`] launches);
//! - `readbacks`: tensors copied back to the host;
//! - `bytes_in_use`: bytes of every buffer the pool owns (live, pending, free, planned);
//! - `pooled_bytes`: the free and pending ones (at most [`WgpuOptions::pool_budget`] once
//!   their work has completed; `Backend::trim` destroys them);
//! - `bindings`: bind groups created (a replayed launch reuses a prepared one);
//! - `replayed`: launches served from a step plan.
//!
//! # Step plans (record once, replay)
//!
//! Inside [`Device::step`](pixelgrad_core::Device::step) (the training loops of
//! `pixelgrad-nn` and the browser package use it), every tensor buffer a step asks for and
//! every launch's bind group are recorded into a plan, per key and parity (even and odd steps
//! alternate between two plans, so parameters and optimizer state ping-pong between two sets
//! of buffers). Later steps replay it: the k-th allocation is the plan's k-th buffer, the
//! j-th launch binds the plan's j-th bind group, and the step is one `queue.submit`; only the
//! batch is uploaded. Each replayed call is checked (same size class, buffer not held by a
//! live tensor; same layout, slot and buffers), and one that differs runs as usual and
//! updates the plan, so replay never changes a result. Details in `src/plan.rs`. Tested in
//! `tests/steady_state.rs` (MLP and CNN, SGD and Adam): from the fifth step on nothing is
//! allocated, compiled or bound, every launch is replayed, one submission per step, and the
//! parameters are bit-identical to a run without plans.
//!
//! Outside steps, the size-class pool and the pipeline cache keep repeated work
//! allocation-free after two repetitions: a released buffer is reusable as soon as the work
//! using it has been submitted (queue order, see `pool.rs`), so the pool does not grow while
//! the GPU lags, in the browser as natively. Natively at most two submissions are in flight
//! (a flush waits for the one before the previous).

mod backend;
mod completion;
mod context;
mod fusion;
mod image;
mod interop;
mod ops;
mod pipelines;
mod plan;
pub mod pool;
mod readback;
mod replay;
mod report;
mod strides;
mod trace;

pub use backend::{MatmulKernel, ReduceKernel, WgpuBackend, WgpuOptions};
pub use image::PIXEL_FORMAT;
pub use report::{SelfTest, WgpuReport};
/// The `wgpu` version this crate is built on (for options such as [`wgpu::PowerPreference`]).
pub use wgpu;

/// Backend name used in errors.
pub(crate) const BACKEND: &str = "webgpu";

/// The whole WGSL source (prelude included) that `which`, a program with loops rendered from
/// its one definition, is compiled from: what a browser's shader compiler is given, for
/// tests that check its shape.
pub fn program_wgsl(which: pixelgrad_core::kernel::programs::KernelProgram) -> String {
    pipelines::full_source(ops::programs::program_kernel(which))
}

/// The whole WGSL source (prelude included) of the rendered reduction pass `which` reading its
/// input through a fused read of the elementwise `input` (the first pass of a reduction of a
/// pending elementwise result), for tests that check its shape.
pub fn fused_reduce_wgsl(
    which: pixelgrad_core::kernel::reductions::ReduceProgram,
    input: &pixelgrad_core::kernel::Kernel,
) -> pixelgrad_core::Result<String> {
    Ok(format!("{}\n{}", pipelines::prelude(), wgsl::fused_program_source(&which.program(), input)?))
}

#[cfg(test)]
mod validate;
mod wgsl;
