//! The Backend trait: what a device must provide. Backends implement forward kernels of the
//! primitive ops ([`crate::op::Op`]) plus upload and download; autodiff, composites, layers and
//! training all live above this line and come for free.

use std::future::Future;
use std::pin::Pin;

use crate::caps::Caps;
use crate::dtype::DType;
pub use crate::fusion::storage::{Storage, WeakStorage};
use crate::op::Op;
use crate::recording::Trace;
use crate::shape::Shape;
use crate::{Error, Result};

/// Which kind of device a backend drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    Cpu,
    WebGpu,
    WebGl,
}

impl BackendKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::WebGpu => "webgpu",
            BackendKind::WebGl => "webgl",
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Largest relative error a GPU backend's precision self-test (against host f64) may show for
/// automatic backend selection to use it, natively (the CLI's `--backend auto`) and in the
/// browser (`pg.init({ backend: 'auto' })`).
pub const SELF_TEST_TOL: f64 = 1e-3;

/// Names (lower case) of software rasterisers: Mesa's llvmpipe / lavapipe / softpipe, Google's
/// SwiftShader, Microsoft's Basic Render Driver. They run GPU code correctly on the CPU, but
/// more slowly than the CPU backend itself, so automatic selection passes them over.
pub const SOFTWARE_RASTERISERS: [&str; 5] = ["llvmpipe", "lavapipe", "softpipe", "swiftshader", "microsoft basic render"];

/// True if an adapter or renderer description names a software rasteriser
/// ([`SOFTWARE_RASTERISERS`], case-insensitive).
pub fn is_software_renderer(description: &str) -> bool {
    let d = description.to_ascii_lowercase();
    SOFTWARE_RASTERISERS.iter().any(|s| d.contains(s))
}

/// Counters a backend keeps so tests and benchmarks can see what it did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Device allocations that were not served from a pool.
    pub allocations: u64,
    /// Kernels / programs compiled.
    pub compiles: u64,
    /// Command submissions (WebGPU) or draws (WebGL) or kernel launches (CPU).
    pub launches: u64,
    pub submissions: u64,
    /// Reads back to the host.
    pub readbacks: u64,
    /// Bytes currently held by live tensors, pools and step plans.
    pub bytes_in_use: u64,
    /// The part of `bytes_in_use` that no tensor or step plan holds: device memory kept in
    /// a pool for reuse (within the backend's pool budget) or waiting for submitted work to
    /// finish with it. [`Backend::trim`] gives it back; `bytes_in_use - pooled_bytes` is
    /// what live tensors and step plans hold.
    pub pooled_bytes: u64,
    /// Bind groups (WebGPU) or framebuffers (WebGL) created. A replayed step creates none.
    pub bindings: u64,
    /// Launches served from a recording: from a step plan (their output memory and bind
    /// group / framebuffer were prepared by an earlier step with the same key, see
    /// [`Backend::begin_step`]) or by a trace replay ([`Backend::trace_replay`], every backend).
    pub replayed: u64,
}

/// A future that is not `Send` (wasm futures are not).
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A compute device. Implementations: `pixelgrad-cpu`, `pixelgrad-wgpu`, `pixelgrad-webgl`.
///
/// Contract:
/// - `execute` gets shapes that passed [`Op::infer_shape`], and `out` is the inferred shape;
/// - inputs are never written; the result is fresh storage (or, for [`Op::Reshape`], may be the
///   input's storage itself, since no data moves);
/// - GPU backends may queue work and run it later; `read` / `read_async` wait for it.
pub trait Backend {
    fn kind(&self) -> BackendKind;

    /// Human-readable name including the adapter, e.g. `webgpu (llvmpipe, Vulkan)`.
    fn name(&self) -> String;

    /// Copies host data to a new device tensor of `data.len()` elements.
    fn upload(&self, data: &[f32]) -> Result<Storage>;

    /// Runs one primitive.
    fn execute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage>;

    /// Copies a tensor back to the host, blocking until it is ready. Backends that cannot block
    /// (GPU backends in wasm) return [`crate::Error::WouldBlock`].
    fn read(&self, storage: &Storage, len: usize) -> Result<Vec<f32>>;

    /// Copies a tensor back to the host without blocking the thread.
    fn read_async<'a>(&'a self, storage: &'a Storage, len: usize) -> LocalFuture<'a, Result<Vec<f32>>> {
        Box::pin(async move { self.read(storage, len) })
    }

    /// Upload in double precision. Only the CPU reference backend keeps f64; others round.
    fn upload_f64(&self, data: &[f64]) -> Result<Storage> {
        let v: Vec<f32> = data.iter().map(|&x| x as f32).collect();
        self.upload(&v)
    }

    /// Read back in double precision (exact on the f64 reference backend).
    fn read_f64(&self, storage: &Storage, len: usize) -> Result<Vec<f64>> {
        Ok(self.read(storage, len)?.into_iter().map(f64::from).collect())
    }

    /// What this backend can do ([`Caps`]: single-op convolution, 8-bit and f16 storage,
    /// f16 products, reduced precision...), measured once when it starts. Callers branch on
    /// its fields instead of asking the backend op by op; a device that changes (a lost and
    /// restored context) is a new backend with its own `Caps`. The default,
    /// [`Caps::F32_ONLY`], claims nothing beyond f32 arithmetic at full precision.
    fn caps(&self) -> &Caps {
        static F32_ONLY: Caps = Caps::F32_ONLY;
        &F32_ONLY
    }

    /// Whether this backend runs [`Op::Attention`] for query/key heads of `head` values,
    /// value heads of `value_head` values (a GPU kernel may keep a row's accumulator in
    /// registers only up to a size) and the options `opts`. Where false,
    /// [`crate::Tensor::attention`] composes the op from products and a softmax, which mean
    /// the same. The default: false.
    fn fused_attention(&self, head: usize, value_head: usize, opts: &crate::AttentionOpts) -> bool {
        let _ = (head, value_head, opts);
        false
    }

    /// The multiple of which a convolution's im2col rows should hold columns, for its product
    /// `[O, K] x [N, K, L]` (`batch` N, `out_ch` O, `k` = C·kh·kw, `cols` L = OH·OW); 1 (the
    /// default) for any. Where it is more than 1 and L is not a multiple of it,
    /// [`crate::composite::conv2d`] widens the output by up to `align - 1` columns per row (a
    /// zero-padded input) and slices them off after the product: a backend that reads whole
    /// texels (WebGL's 4 values) then reads the columns and the gradients where they lie
    /// instead of repacking them every step.
    fn im2col_align(&self, batch: usize, out_ch: usize, k: usize, cols: usize) -> usize {
        let _ = (batch, out_ch, k, cols);
        1
    }

    /// Copies 8-bit host data to a new device tensor of `data.len()` elements: `dtype` is
    /// [`DType::I8`] (each byte a two's-complement `i8`) or [`DType::U8`]. Reading it back
    /// ([`Backend::read`]) gives the values as f32, exactly. The default refuses: backends
    /// without [`Caps::int8_storage`] have no 8-bit storage.
    fn upload_int8(&self, data: &[u8], dtype: DType) -> Result<Storage> {
        let _ = data;
        Err(Error::backend("upload_int8", self.name(), format!("8-bit storage ({dtype}) is not supported on this backend")))
    }

    /// Copies IEEE half-precision bit patterns (`bits[i]` is element `i`) to a new device
    /// tensor of `bits.len()` elements, storage [`DType::F16`]. Reading it back
    /// ([`Backend::read`]) gives the values as f32, exactly. The default refuses: backends
    /// without [`Caps::f16_storage`] have no f16 storage.
    fn upload_f16(&self, bits: &[u16]) -> Result<Storage> {
        let _ = bits;
        Err(Error::backend("upload_f16", self.name(), "f16 storage is not supported on this backend"))
    }

    /// Submits queued work without waiting for it.
    fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// What the backend has done so far.
    fn counters(&self) -> Counters {
        Counters::default()
    }

    /// Starts one step of a computation that repeats with the same structure: a training
    /// step. GPU backends keep a *step plan* per `key` and parity (even and odd steps
    /// alternate between two plans, so parameters and optimizer state ping-pong between two
    /// sets of memory): the first steps record every allocation and every launch with its
    /// prepared bind group / framebuffer, later steps replay them. Each replayed launch is
    /// checked against the recording (same kernel, same memory); one that differs, or whose
    /// planned output is still held by a live tensor, runs as usual and updates the plan, so
    /// replay never changes results. Queued work is submitted first, so a step is one
    /// submission. Steps do not nest; the default does nothing.
    fn begin_step(&self, key: u64) -> Result<()> {
        let _ = key;
        Ok(())
    }

    /// Ends the step begun by [`Backend::begin_step`] and submits it.
    fn end_step(&self) -> Result<()> {
        self.flush()
    }

    /// Drops every step plan, returning its memory to the pool (for example when a model is
    /// done training). The next steps record new plans.
    fn drop_plans(&self) {}

    /// Releases pooled device memory that nothing uses: every buffer or texture a pool keeps
    /// for reuse ([`Counters::pooled_bytes`]). Memory held by live tensors and step plans
    /// stays (drop the plans first with [`Backend::drop_plans`] to release theirs too), and
    /// nothing is destroyed while submitted work may still use it: natively the WebGPU
    /// backend waits for the device first; in a browser what is still in flight is released
    /// by a later call. The default does nothing (the CPU backend keeps no pool).
    fn trim(&self) -> Result<()> {
        Ok(())
    }

    /// Starts recording the kernels this backend launches into a [`Trace`]. `inputs` are the
    /// storages a replay is given new ones in place of, in order; every other storage a kernel
    /// reads that no recorded kernel wrote is kept by the trace as a constant. False (nothing
    /// recorded) where the backend has no traces, which is the default, or when it cannot
    /// record this run (a recording already open, one storage given twice).
    fn trace_begin(&self, inputs: &[&Storage]) -> bool {
        let _ = inputs;
        false
    }

    /// Ends the recording begun by [`Backend::trace_begin`], computing `outputs` first if they
    /// are still pending, and returns it; `None` where nothing was recording or what ran cannot
    /// be replayed: a value was read back to the host (so later work may depend on the data) or
    /// random numbers were drawn.
    fn trace_end(&self, outputs: &[&Storage]) -> Option<Trace> {
        let _ = outputs;
        None
    }

    /// Drops an open recording (the run it was recording failed).
    fn trace_abort(&self) {}

    /// Launches the kernels of `trace` again on `inputs` (one per input given to
    /// [`Backend::trace_begin`], each as long as the one recorded) and returns the storages of
    /// its outputs: the values the recorded run would compute from these inputs. Memory a
    /// caller still holds (the last run's outputs) is never written: the replay writes fresh
    /// memory there instead (see [`crate::recording`]).
    fn trace_replay(&self, trace: &Trace, inputs: &[&Storage]) -> Result<Vec<Storage>> {
        let _ = (trace, inputs);
        Err(crate::Error::backend("trace_replay", self.name(), "this backend records no traces"))
    }

    /// How `storage` (a tensor of `len` elements) sits in device memory, for the layout table
    /// (`pixelgrad backends --layouts`, `model.layouts()` in JS); `None` where the backend does
    /// not say or the storage is not its own.
    fn describe_storage(&self, storage: &Storage, len: usize) -> Option<crate::layout::StorageLayout> {
        let _ = (storage, len);
        None
    }
}
