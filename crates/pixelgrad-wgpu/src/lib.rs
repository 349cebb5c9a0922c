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
//! Design in brief (details in the crate README):
//! - **buffers** come from a pool of power-of-two size classes ([`pool`]); a dropped tensor's
//!   buffer is recycled only once the submission that last used it has completed;
//! - **pipelines** are cached by kernel and a small configuration (op code, transpose flags),
//!   never by shape: shapes, strides and scalars travel in a 256-byte uniform slot per launch;
//! - **submission**: launches are recorded into one command encoder and submitted at sync
//!   points (reads, [`Backend::flush`](pixelgrad_core::Backend::flush)) or every
//!   [`WgpuOptions::max_ops_per_submit`] launches;
//! - **limits**: launches fold into 2-D grids under `maxComputeWorkgroupsPerDimension`; a
//!   tensor over `maxStorageBufferBindingSize` is an [`pixelgrad_core::Error::Limit`];
//! - **errors**: device loss becomes [`pixelgrad_core::Error::DeviceLost`]; any other wgpu
//!   error is reported by the next call as [`pixelgrad_core::Error::Backend`];
//! - **matmul kernel** ([`MatmulKernel`]): on CPU adapters (Mesa lavapipe) a register-blocked
//!   kernel without workgroup memory, because lavapipe compiles every storage and workgroup
//!   load into a per-lane loop (~30 cycles per lane and value); tiles in workgroup memory
//!   elsewhere.
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
//! - `bytes_in_use`: bytes of every buffer the pool owns (live, pending and free).
//!
//! A training step with the same shapes every time reaches a steady state after two steps
//! (tested in `tests/steady_state.rs` for an MLP and a CNN with SGD and Adam): no
//! allocations, no compiles, the same launches, and exactly one submission per step when it
//! reads nothing back. What makes that hold: the size-class pool, the pipeline cache, and
//! natively at most one submission in flight: a pool miss whose class has a buffer waiting
//! only for submitted work waits for that work instead of allocating. This is *not* a
//! recorded plan: every step still records its launches (and creates their bind groups)
//! afresh on the CPU; replaying a recorded command buffer is future work.

mod backend;
mod context;
mod ops;
mod pipelines;
pub mod pool;
mod readback;
mod report;
mod strides;

pub use backend::{MatmulKernel, WgpuBackend, WgpuOptions};
pub use report::{SelfTest, WgpuReport};
/// The `wgpu` version this crate is built on (for options such as [`wgpu::PowerPreference`]).
pub use wgpu;

/// Backend name used in errors.
pub(crate) const BACKEND: &str = "webgpu";

#[cfg(test)]
mod validate;
