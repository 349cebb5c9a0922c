//! What one op, and one run, may cost before it is launched: the element cap every result must
//! fit, the estimated work of every primitive, a per-run work budget and a cancel token.
//!
//! Every primitive goes through [`crate::Tensor::apply`], which calls `Budget::admit` with
//! the inferred output shape before the backend allocates or launches anything. So a model
//! file, a page or a server that asks for a 16 GiB broadcast, a 2^40-step matrix product or a
//! run that never ends gets a typed [`Error::Budget`] (or [`Error::Cancelled`]) instead of an
//! allocation failure, a wrapped size or a GPU reset.
//!
//! ```
//! use pixelgrad_core::{budget::RunLimits, CancelToken, Device, Error, Tensor};
//! # fn demo(dev: &Device) -> pixelgrad_core::Result<()> {
//! let a = Tensor::from_vec(dev, &[1.0; 4], [4, 1])?;
//! let b = Tensor::from_vec(dev, &[1.0; 4], [1, 4])?;
//! let cancel = CancelToken::new();
//! let _run = dev.run_scope(RunLimits { max_work: Some(1_000), cancel: Some(cancel.clone()) });
//! assert!(a.add(&b).is_ok()); // 16 elements of work
//! cancel.cancel();
//! assert!(matches!(a.add(&b), Err(Error::Cancelled { .. })));
//! # Ok(()) }
//! ```

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::op::Op;
use crate::shape::Shape;
use crate::{Error, Result};

/// Default of [`Limits::max_elements`]: 2^28 elements (1 GiB of f32), the most one tensor may
/// hold. A wasm32 instance has 4 GiB of address space in all.
pub const DEFAULT_MAX_ELEMENTS: usize = 1 << 28;

/// Default of [`Limits::max_op_work`]: 2^36 estimated scalar steps (multiply-adds, window taps,
/// elements written) in one primitive. The largest products of common models are about 2^33
/// (a 64-image batch through a ResNet layer); a GPU at 1e12 steps per second finishes 2^36 in
/// about 70 ms, well inside the two seconds after which browsers reset a GPU.
pub const DEFAULT_MAX_OP_WORK: u64 = 1 << 36;

/// Per-device caps checked before every primitive ([`crate::Device::set_limits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most elements one result may have.
    pub max_elements: usize,
    /// Most estimated work ([`op_work`]) one primitive may do.
    pub max_op_work: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_elements: DEFAULT_MAX_ELEMENTS, max_op_work: DEFAULT_MAX_OP_WORK }
    }
}

/// A flag another thread (natively) or an event handler (in the browser, between awaits) sets
/// to stop a run. Cheap to clone; every clone shares the flag. Checked before every primitive
/// inside a [`crate::Device::run_scope`] that holds it, and by loops between steps.
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        CancelToken::default()
    }
    /// Asks every run holding this token to stop at its next check.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
    /// [`Error::Cancelled`] naming `op` if the token was cancelled.
    pub fn check(&self, op: &str) -> Result<()> {
        if self.is_cancelled() {
            return Err(Error::Cancelled { op: op.to_string() });
        }
        Ok(())
    }
}

/// What a run may spend: total estimated work of every primitive launched inside the scope,
/// and a token that stops it. See [`crate::Device::run_scope`].
#[derive(Clone, Debug, Default)]
pub struct RunLimits {
    /// Most total work ([`op_work`] summed) of the primitives run inside the scope; `None`: no
    /// run total (each op still has [`Limits::max_op_work`]).
    pub max_work: Option<u64>,
    pub cancel: Option<CancelToken>,
}

struct Run {
    limits: RunLimits,
    used: u64,
}

/// A device's limits and its open run scopes. Shared by every clone of a [`crate::Device`].
#[derive(Default)]
pub(crate) struct Budget {
    limits: Cell<Limits>,
    runs: RefCell<Vec<Run>>,
}

impl Budget {
    pub(crate) fn limits(&self) -> Limits {
        self.limits.get()
    }
    pub(crate) fn set_limits(&self, l: Limits) {
        self.limits.set(l);
    }

    /// Opens a run scope; [`Budget::close`] with the returned depth ends it.
    pub(crate) fn open(&self, limits: RunLimits) -> usize {
        let mut runs = self.runs.borrow_mut();
        runs.push(Run { limits, used: 0 });
        runs.len()
    }

    /// Closes the scope opened at `depth` (and any left open inside it) and returns its work.
    pub(crate) fn close(&self, depth: usize) -> u64 {
        let mut runs = self.runs.borrow_mut();
        let used = runs.get(depth - 1).map_or(0, |r| r.used);
        runs.truncate(depth - 1);
        used
    }

    /// Work spent so far in the innermost open scope.
    pub(crate) fn used(&self) -> u64 {
        self.runs.borrow().last().map_or(0, |r| r.used)
    }

    /// Checks `op` with output `out` against the caps and every open run scope, and charges
    /// its work to them. Nothing is charged when it is refused.
    pub(crate) fn admit(&self, op: &Op, inputs: &[&Shape], out: &Shape, backend: impl Fn() -> String) -> Result<()> {
        let mut runs = self.runs.borrow_mut();
        for r in runs.iter() {
            if let Some(c) = &r.limits.cancel {
                c.check(op.name())?;
            }
        }
        let limits = self.limits.get();
        // Counted in u128 so a count past usize (on wasm32, 2^32) is still weighed, not wrapped.
        let elements = out.dims().iter().try_fold(1u128, |acc, &d| acc.checked_mul(d as u128)).map_or(u64::MAX, |n| n.min(u64::MAX as u128) as u64);
        if elements > limits.max_elements as u64 {
            return Err(Error::Budget {
                op: op.name(),
                backend: backend(),
                what: "elements in one result",
                requested: elements,
                limit: limits.max_elements as u64,
                raise: "Device::set_limits (max_elements); in JS, init({ limits: { maxElements } })",
            });
        }
        let work = op_work(op, inputs, out);
        if work > limits.max_op_work {
            return Err(Error::Budget {
                op: op.name(),
                backend: backend(),
                what: "estimated steps of work in one op",
                requested: work,
                limit: limits.max_op_work,
                raise: "Device::set_limits (max_op_work); in JS, init({ limits: { maxOpWork } })",
            });
        }
        for r in runs.iter() {
            if let Some(max) = r.limits.max_work {
                let total = r.used.saturating_add(work);
                if total > max {
                    return Err(Error::Budget {
                        op: op.name(),
                        backend: backend(),
                        what: "estimated steps of work in this run",
                        requested: total,
                        limit: max,
                        raise: "the run's max_work (Session::set_max_work; in JS, run(inputs, { maxWork }))",
                    });
                }
            }
        }
        for r in runs.iter_mut() {
            r.used = r.used.saturating_add(work);
        }
        Ok(())
    }
}

/// While alive, the primitives run on the device count against its [`RunLimits`]; dropping it
/// closes the scope. Scopes nest: an op must fit every open one.
pub struct RunScope {
    pub(crate) device: crate::Device,
    pub(crate) depth: usize,
}

impl RunScope {
    /// Work spent inside this scope so far (and in scopes nested in it).
    pub fn work(&self) -> u64 {
        self.device.budget().runs.borrow().get(self.depth - 1).map_or(0, |r| r.used)
    }
}

impl Drop for RunScope {
    fn drop(&mut self) {
        self.device.budget().close(self.depth);
    }
}

/// Estimated scalar steps of one primitive: elements written, plus the inner loops a kernel
/// runs per element (a product's shared axis, a window's taps inside the image, a reduction's
/// length). An upper bound of what any backend does, up to a small constant; it saturates
/// instead of overflowing. `inputs` passed [`Op::infer_shape`] and `out` is its result.
pub fn op_work(op: &Op, inputs: &[&Shape], out: &Shape) -> u64 {
    let n = |s: &Shape| s.try_numel().map_or(u64::MAX, |v| v as u64);
    let mul = |a: u64, b: u64| a.saturating_mul(b);
    let dims = |i: usize| inputs.get(i).map(|s| s.dims()).unwrap_or(&[]);
    // taps of a window that can lie inside an h x w image
    let taps = |w: &crate::op::Window, h: usize, wd: usize| mul(w.kh.min(h.max(1)) as u64, w.kw.min(wd.max(1)) as u64);
    let out_n = n(out);
    match op {
        Op::Reshape(_) => 0,
        Op::Fill { .. }
        | Op::Random { .. }
        | Op::Unary(_)
        | Op::Binary(_)
        | Op::Where
        | Op::Permute(_)
        | Op::Expand(_)
        | Op::Slice { .. }
        | Op::Pad { .. }
        | Op::Concat { .. }
        | Op::Widen
        | Op::NarrowF16
        | Op::Narrow8 { .. }
        | Op::Im2Col(_)
        | Op::Gather { .. } => out_n,
        Op::Reduce { .. } => n(inputs[0]).max(out_n),
        Op::MatMul { trans_a, .. } => {
            let a = dims(0);
            let k = if *trans_a { a[a.len() - 2] } else { a[a.len() - 1] };
            mul(out_n, k.max(1) as u64)
        }
        Op::MatMulI8 { .. } => {
            let a = dims(0);
            mul(out_n, a[a.len() - 1].max(1) as u64)
        }
        // every output sums over a's last axis (k, or N when transposed)
        Op::MatMulNBits { .. } => {
            let a = dims(0);
            mul(out_n, a[a.len() - 1].max(1) as u64)
        }
        // every query row scores T keys (H each) and sums T values (Hv each)
        Op::Attention { .. } => {
            let (q, k, v) = (dims(0), dims(1), dims(2));
            let rows = mul(mul(q[0] as u64, q[1] as u64), q[2].max(1) as u64);
            mul(mul(rows, k[2].max(1) as u64), (k[3] + v[3]).max(1) as u64)
        }
        Op::Col2Im { .. } => n(inputs[0]).max(out_n),
        Op::DepthwiseConv(w) => {
            let x = dims(0);
            mul(out_n, taps(w, x[2], x[3]))
        }
        Op::Conv2d(w) => {
            let x = dims(0);
            mul(mul(out_n, x[1].max(1) as u64), taps(w, x[2], x[3]))
        }
        Op::MaxPool(w) => {
            let x = dims(0);
            mul(out_n, taps(w, x[2], x[3]))
        }
        Op::Window { program, window: w } if program.form() == crate::kernel::windows::Form::Pool => {
            let x = dims(0);
            mul(out_n, taps(w, x[2], x[3]))
        }
        Op::MaxPoolGrad(w) | Op::Window { window: w, .. } => {
            // each pixel visits the windows that cover it, at most ceil(k / stride) per axis and
            // no more than there are (a 2^15 window at stride 1 on a 2-row image covers each
            // pixel 2^15 times), and recomputes their maxima
            let (x, dy) = (dims(0), dims(1));
            let t = taps(w, x[2], x[3]);
            let cover = |k: usize, s: usize, o: Option<&usize>| k.div_ceil(s.max(1)).min(o.copied().unwrap_or(1).max(1)) as u64;
            let covering = mul(cover(w.kh, w.stride_h, dy.get(2)), cover(w.kw, w.stride_w, dy.get(3)));
            mul(mul(out_n, t), covering)
        }
        Op::ScatterAdd { axis, .. } => {
            let src = dims(0);
            mul(out_n.max(n(inputs[0])), src.get(*axis).copied().unwrap_or(1).max(1) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Window;

    /// Window ops are charged for the taps inside the image, not the window's area, and the
    /// max-pool gradient for every window covering a pixel (bounded by the windows there are).
    #[test]
    fn window_work_counts_taps_inside_the_image_and_covering_windows() {
        let k = 1 << 15;
        let w = Window { kh: k, kw: k, stride_h: 1, stride_w: k, pad_h: k - 1, pad_w: k - 1 };
        let x = Shape::from([1, 2, 2, 3]);
        let y = Shape::from([1, 2, k + 1, 2]);
        // 6 taps inside (2 rows x 3 columns) per output.
        assert_eq!(op_work(&Op::MaxPool(w), &[&x], &y), y.numel() as u64 * 6);
        // Each of the 12 pixels lies in 2^15 windows (stride 1 down the rows), 1 across.
        assert_eq!(op_work(&Op::MaxPoolGrad(w), &[&x, &y], &x), 12 * 6 * k as u64);
        // 2x2 windows at stride 2: one window per pixel.
        let w2 = Window::square(2, 2, 0);
        let (x2, y2) = (Shape::from([1, 1, 8, 8]), Shape::from([1, 1, 4, 4]));
        assert_eq!(op_work(&Op::MaxPoolGrad(w2), &[&x2, &y2], &x2), 64 * 4);
    }
}
