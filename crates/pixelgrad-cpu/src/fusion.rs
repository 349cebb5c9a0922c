//! Elementwise fusion on the fast path. As on the GPU backends, an elementwise op (unary,
//! binary, `where`, `expand`, `fill`) is not run when called: it returns a pending storage
//! holding the composed kernel (`pixelgrad_core::fusion`, which this file implements
//! [`FusionDevice`] for), and the next elementwise op that reads it composes with it. The chain runs as one pass over memory when its values are
//! needed: a non-elementwise op or a read takes the storage (`CpuBackend::mine`).
//!
//! On the CPU the gain is memory traffic and allocation: a chain such as ONNX's hard-swish
//! (`x * clip(x + 3, 0, 6) / 6`, four nodes) becomes one loop over blocks that stay in the L1
//! cache, with one output allocated instead of four. Results are bit-identical to running
//! the ops one by one: the fused kernel evaluates the same `f32` operations in the same order.
//!
//! Two bounds keep forcing cheap and shallow:
//! - a chain longer than [`MAX_NODES`] IR nodes or reading more than [`MAX_INPUTS`] tensors
//!   computes its largest pending input first (`pixelgrad_core::fusion::inline::defer`);
//! - every input that is still pending and not inlined (made before the last read, flush or
//!   step boundary, or left out to fit) is computed when the op is deferred, so a pending
//!   result's inputs are always in memory and forcing never recurses.
//!
//! The f64 reference ([`crate::CpuBackend::reference`]) never fuses, nor does
//! [`crate::CpuBackend::unfused`].

use pixelgrad_core::fusion::{FusionDevice, Limits};
use pixelgrad_core::kernel::fuse::Pending;
use pixelgrad_core::{Error, Result, Shape, Storage};

use crate::{CpuBackend, CpuBuffer};

/// Longest kernel (IR nodes, before lowering) a chain grows to before it is computed.
pub(crate) const MAX_NODES: usize = 96;
/// Most distinct tensors a fused kernel reads (the elementwise rows path's fixed arrays).
pub(crate) const MAX_INPUTS: usize = crate::elementwise::MAX_INPUTS;

/// The backend as the fusion layer sees it: elementwise chains only (matmuls and reductions
/// run when called, reading their pending inputs computed first).
pub(crate) struct Fuser<'a>(pub &'a CpuBackend);

impl FusionDevice for Fuser<'_> {
    type Memory = CpuBuffer;

    fn backend_name(&self) -> String {
        pixelgrad_core::Backend::name(self.0)
    }

    fn memory<'a>(&self, op: &'static str, s: &'a Storage) -> Result<&'a CpuBuffer> {
        s.downcast::<CpuBuffer>()
            .ok_or_else(|| Error::backend(op, pixelgrad_core::Backend::name(self.0), "storage belongs to another backend"))
    }

    fn len(&self, m: &CpuBuffer) -> usize {
        m.data.len()
    }

    fn check_size(&self, _op: &'static str, _out: &Shape) -> Result<()> {
        Ok(())
    }

    fn limits(&self) -> Limits {
        Limits {
            epilogue_nodes: 0,
            epilogue_inputs: 0,
            epilogue_params: 0,
            group: false,
            defer_summed_matmul: false,
            prologue_yields_to_epilogue: false,
            leaves_in_memory: true,
        }
    }

    fn fits_map(&self, p: &Pending<Storage>) -> bool {
        p.inputs() <= MAX_INPUTS && p.nodes() <= MAX_NODES
    }

    /// One elementwise pass over the inputs (already computed), recorded in an open trace.
    fn run_map(&self, p: &Pending<Storage>, _leaves: &[&CpuBuffer]) -> Result<Storage> {
        self.0.run_fused(p)
    }
}
