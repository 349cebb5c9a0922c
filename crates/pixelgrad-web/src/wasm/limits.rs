//! Bounded and cancellable calls from JavaScript: an `AbortSignal` becomes a
//! [`CancelToken`] (`web/js` makes one [`CancelHandle`] per call and cancels it from the
//! signal's `abort` event), `maxWork` a per-run work budget.
//!
//! A run scope ([`Device::run_scope`]) is a stack on the device, so it must not stay open
//! across an `await`: other calls on the same runtime run in between (a `predict` while an
//! ONNX run waits for a read-back) and would be charged to, or cancelled by, this run, and the
//! scopes would close out of order. [`Limited`] therefore opens the scope for each poll of the
//! run's future only, and carries the work spent from one poll to the next.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pixelgrad::budget::RunLimits;
use pixelgrad::{CancelToken, Device, Error};
use wasm_bindgen::prelude::*;

/// A cancel token JavaScript holds (one per call): `cancel()` from the signal's `abort` event.
#[wasm_bindgen]
#[derive(Default)]
pub struct CancelHandle(CancelToken);

#[wasm_bindgen]
impl CancelHandle {
    #[wasm_bindgen(constructor)]
    pub fn new() -> CancelHandle {
        CancelHandle::default()
    }

    /// Stops the calls holding this token at their next check (before their next primitive).
    pub fn cancel(&self) {
        self.0.cancel();
    }

    #[wasm_bindgen(getter)]
    pub fn cancelled(&self) -> bool {
        self.0.is_cancelled()
    }
}

impl CancelHandle {
    pub(crate) fn token(&self) -> CancelToken {
        self.0.clone()
    }
}

/// A run budget from JS: `maxWork` (a positive whole number of estimated steps) or none.
pub(crate) fn max_work(v: Option<f64>, what: &str) -> Result<Option<u64>, Error> {
    match v {
        None => Ok(None),
        Some(w) if w.is_finite() && w >= 1.0 && w.fract() == 0.0 && w <= 9_007_199_254_740_992.0 => Ok(Some(w as u64)),
        Some(w) => Err(Error::invalid(what, format!("maxWork must be a positive whole number of steps, got {w}"))),
    }
}

/// An error type that may carry an engine error (to report a run's budget in totals).
pub(crate) trait WithCore: From<Error> {
    fn core_mut(&mut self) -> Option<&mut Error>;
}

impl WithCore for Error {
    fn core_mut(&mut self) -> Option<&mut Error> {
        Some(self)
    }
}

impl WithCore for pixelgrad::onnx::OnnxError {
    fn core_mut(&mut self) -> Option<&mut Error> {
        match self {
            pixelgrad::onnx::OnnxError::Engine { source, .. } => Some(source),
            pixelgrad::onnx::OnnxError::Core(c) => Some(c),
            _ => None,
        }
    }
}

/// `fut` run under a per-run budget and cancel token on `device`, one scope per poll (see the
/// module docs).
pub(crate) struct Limited<F> {
    fut: Pin<Box<F>>,
    device: Device,
    max_work: Option<u64>,
    cancel: Option<CancelToken>,
    op: &'static str,
    used: u64,
}

impl<F> Limited<F> {
    pub(crate) fn new(fut: F, device: Device, max_work: Option<u64>, cancel: Option<CancelToken>, op: &'static str) -> Self {
        Limited { fut: Box::pin(fut), device, max_work, cancel, op, used: 0 }
    }
}

impl<F, T, E> Future for Limited<F>
where
    F: Future<Output = Result<T, E>>,
    E: WithCore,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is Unpin (the inner future is boxed), so the adapter is too.
        let this = self.get_mut();
        // A run that launches no primitive in this poll (a replayed plan, a host-only graph)
        // still stops here once cancelled.
        if let Some(c) = &this.cancel {
            c.check(this.op).map_err(E::from)?;
        }
        let before = this.used;
        let scope =
            this.device.run_scope(RunLimits { max_work: this.max_work.map(|m| m.saturating_sub(before)), cancel: this.cancel.clone() });
        let r = this.fut.as_mut().poll(cx);
        this.used = before.saturating_add(scope.work());
        drop(scope);
        match r {
            Poll::Ready(Err(mut e)) => {
                // The scope saw this poll's share only: report the run's totals.
                if let Some(Error::Budget { requested, limit, .. }) = e.core_mut() {
                    if before > 0 && this.max_work == Some(limit.saturating_add(before)) {
                        *requested = requested.saturating_add(before);
                        *limit = limit.saturating_add(before);
                    }
                }
                Poll::Ready(Err(e))
            }
            r => r,
        }
    }
}
