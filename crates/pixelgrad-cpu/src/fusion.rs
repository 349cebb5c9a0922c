//! Elementwise fusion on the fast path. As on the GPU backends, an elementwise op (unary,
//! binary, `where`, `expand`, `fill`) is not run when called: it returns a [`Lazy`] storage
//! holding the composed kernel (`pixelgrad_core::kernel::fuse`), and the next elementwise op
//! that reads it composes with it. The chain runs as one pass over memory when its values are
//! needed: a non-elementwise op or a read takes the storage (`CpuBackend::mine`).
//!
//! On the CPU the gain is memory traffic and allocation: a chain such as ONNX's hard-swish
//! (`x * clip(x + 3, 0, 6) / 6`, four nodes) becomes one loop over blocks that stay in the L1
//! cache, with one output allocated instead of four. Results are bit-identical to running
//! the ops one by one: the fused kernel evaluates the same `f32` operations in the same order.
//!
//! Two bounds keep forcing cheap and shallow:
//! - a chain longer than [`MAX_NODES`] IR nodes or reading more than [`MAX_INPUTS`] tensors
//!   computes its largest pending input first (`fuse::defer`);
//! - every input that is still pending and not inlined (made before the last read, flush or
//!   step boundary, or left out to fit) is computed when the op is deferred, so a pending
//!   result's inputs are always in memory and forcing never recurses.
//!
//! The f64 reference ([`crate::CpuBackend::reference`]) never fuses, nor does
//! [`crate::CpuBackend::unfused`].

use pixelgrad_core::kernel::fuse::{Lazy, Pending};
use pixelgrad_core::Storage;

/// Longest kernel (IR nodes, before lowering) a chain grows to before it is computed.
pub(crate) const MAX_NODES: usize = 96;
/// Most distinct tensors a fused kernel reads (the elementwise rows path's fixed arrays).
pub(crate) const MAX_INPUTS: usize = crate::elementwise::MAX_INPUTS;

/// True if `p` may stay one pending computation.
pub(crate) fn fits(p: &Pending<Storage>) -> bool {
    p.inputs() <= MAX_INPUTS && p.nodes() <= MAX_NODES
}

/// True if `s` is a pending result not computed yet.
pub(crate) fn undone(s: &Storage) -> bool {
    s.downcast::<Lazy>().is_some_and(|l| !l.is_done())
}
