//! Which submissions the GPU has finished. The pool may *reuse* a buffer once the work that
//! used it was submitted (queue order), but may only *destroy* it once that work completed:
//! every submission registers `Queue::on_submitted_work_done`, whose callback (run by a native
//! `Device::poll` or the browser's event loop) raises the completed serial; a readback whose
//! map resolved raises it too, since its submission must have completed.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// The serial of the last submission known to have completed (0: none).
#[derive(Clone, Default)]
pub(crate) struct Completion(Arc<AtomicU64>);

impl Completion {
    pub(crate) fn completed(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Records that submission `serial` (and so every earlier one) has completed.
    pub(crate) fn mark(&self, serial: u64) {
        self.0.fetch_max(serial, Ordering::AcqRel);
    }

    /// Marks submission `serial` complete once the GPU has finished the work submitted so far.
    pub(crate) fn watch(&self, queue: &wgpu::Queue, serial: u64) {
        let done = self.0.clone();
        queue.on_submitted_work_done(move || {
            done.fetch_max(serial, Ordering::AcqRel);
        });
    }
}

#[derive(Default)]
struct State {
    done: bool,
    waker: Option<Waker>,
}

/// Resolves once every submission made before it was created has completed (the browser path
/// of `WgpuBackend::trim_async`; natively a blocking `Device::poll` does the same).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) struct WorkDone(Arc<Mutex<State>>);

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl WorkDone {
    pub(crate) fn new(queue: &wgpu::Queue) -> WorkDone {
        let state = Arc::new(Mutex::new(State::default()));
        let s = state.clone();
        queue.on_submitted_work_done(move || {
            if let Ok(mut st) = s.lock() {
                st.done = true;
                if let Some(w) = st.waker.take() {
                    w.wake();
                }
            }
        });
        WorkDone(state)
    }
}

/// True once the work completed; false if that can no longer be known (a poisoned lock).
impl Future for WorkDone {
    type Output = bool;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let Ok(mut st) = self.0.lock() else {
            return Poll::Ready(false);
        };
        if st.done {
            return Poll::Ready(true);
        }
        st.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}
