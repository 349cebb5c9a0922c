//! What one run may spend ([`RunOptions`]) and how a run keeps to it ([`RunGuard`]): the
//! device's run scope adds up the estimated work of every primitive the run launches
//! ([`pixelgrad_core::Device::run_scope`]), the guard adds the elements the host operators
//! make (shape arithmetic, `Range`, small folds), and between nodes it checks the total and
//! the cancel token. So a model cannot make a run take unbounded time, and a caller can stop
//! one.

use pixelgrad_core::budget::RunLimits;
use pixelgrad_core::{CancelToken, Device, Error as CoreError, RunScope};

use crate::graph::Node;
use crate::ops::V;
use crate::{OnnxError, Result};

/// Default of [`crate::Session::set_max_work`]: 2^40 estimated steps (multiply-adds, window
/// taps, elements written) in one run, about 4000 times a ResNet-50 inference; a GPU at 10^12
/// steps a second runs it in about a second.
pub const DEFAULT_MAX_WORK: u64 = 1 << 40;

/// Steps of work one iteration of a `Loop` or `Scan` counts besides what its body's
/// operators do (about what launching a few small kernels costs): at the default
/// [`DEFAULT_MAX_WORK`] a run makes at most 2^20 iterations, however little each does.
pub const ITERATION_WORK: u64 = 1 << 20;

/// What [`RunOptions::pause`] returns: a future the run awaits before its next node.
pub type Pause = std::rc::Rc<dyn Fn() -> pixelgrad_core::LocalFuture<'static, ()>>;

/// Options of one run ([`crate::Session::run_with`], [`crate::Session::run_async_with`]).
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Most estimated work of the run, every primitive's ([`pixelgrad_core::budget::op_work`])
    /// plus one step per element a host operator makes; past it the run stops with an
    /// [`pixelgrad_core::Error::Budget`] (wrapped in [`OnnxError::Engine`]). `None`: the
    /// session's ([`crate::Session::set_max_work`]).
    pub max_work: Option<u64>,
    /// Stops the run at its next primitive or node once cancelled, with
    /// [`pixelgrad_core::Error::Cancelled`] (in JS, an `AbortSignal`).
    pub cancel: Option<CancelToken>,
    /// Awaited between nodes by [`crate::Session::run_async_with`] (never by the blocking
    /// runs) once the run's work has grown by [`RunOptions::pause_every`] since the last
    /// pause. In a browser, a future that resolves on the next task (a `setTimeout(0)`
    /// promise) lets the page's event handlers run meanwhile, an `AbortSignal`'s `abort`
    /// among them: without pauses a run that reads nothing back never yields, so a token can
    /// only be cancelled before it starts.
    pub pause: Option<Pause>,
    /// Work between pauses (0: before every node).
    pub pause_every: u64,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("max_work", &self.max_work)
            .field("cancel", &self.cancel)
            .field("pause", &self.pause.as_ref().map(|_| "Fn"))
            .field("pause_every", &self.pause_every)
            .finish()
    }
}

/// A run in progress: the device's run scope, the host operators' work, the pauses.
pub(super) struct RunGuard {
    scope: RunScope,
    device: Device,
    limit: u64,
    host: u64,
    cancel: Option<CancelToken>,
    pause: Option<(Pause, u64)>,
    paused_at: u64,
}

impl RunGuard {
    /// `pausing`: whether this run awaits `options.pause` (the asynchronous runs).
    pub(super) fn open(device: &Device, default_limit: u64, options: &RunOptions, pausing: bool) -> RunGuard {
        let limit = options.max_work.unwrap_or(default_limit);
        let cancel = options.cancel.clone();
        let scope = device.run_scope(RunLimits { max_work: Some(limit), cancel: cancel.clone() });
        let pause = options.pause.clone().filter(|_| pausing).map(|p| (p, options.pause_every));
        RunGuard { scope, device: device.clone(), limit, host: 0, cancel, pause, paused_at: 0 }
    }

    /// The pause to await now, if one is due.
    pub(super) fn pause_due(&mut self) -> Option<pixelgrad_core::LocalFuture<'static, ()>> {
        let (pause, every) = self.pause.as_ref()?;
        let work = self.work();
        if work.saturating_sub(self.paused_at) < *every {
            return None;
        }
        self.paused_at = work;
        Some(pause())
    }

    /// Work so far: the primitives' and the host operators'.
    pub(super) fn work(&self) -> u64 {
        self.scope.work().saturating_add(self.host)
    }

    /// Before `node` runs: the run was not cancelled and is within its work limit.
    pub(super) fn before(&self, node: &Node) -> Result<()> {
        self.check(&node.context(), &node.op_type)
    }

    /// Before an iteration of a `Loop` or `Scan` node: the iteration counts
    /// [`ITERATION_WORK`] steps, then, as before a node, the run was not cancelled and is
    /// within its work limit. So a loop that has no bound (no trip count, no condition) or
    /// whose body launches nothing still stops at the run's limit.
    pub(super) fn iteration(&mut self, node: &Node) -> Result<()> {
        self.host = self.host.saturating_add(ITERATION_WORK);
        self.before(node)
    }

    /// After the last node: within the work limit still.
    pub(super) fn end(&self) -> Result<()> {
        self.check("the run", "run")
    }

    /// Before a replayed run of `work` steps (what the recorded run spent).
    pub(super) fn before_replay(&mut self, work: u64) -> Result<()> {
        self.host = self.host.saturating_add(work);
        self.check("a replayed run", "replay")
    }

    fn check(&self, context: &str, op: &str) -> Result<()> {
        let engine = |source| OnnxError::Engine { context: context.to_string(), source };
        if let Some(c) = &self.cancel {
            c.check(op).map_err(engine)?;
        }
        let work = self.work();
        if work > self.limit {
            return Err(engine(CoreError::Budget {
                op: "onnx run",
                backend: self.device.name(),
                what: "estimated steps of work in this run",
                requested: work,
                limit: self.limit,
                raise: "the run's max_work (Session::set_max_work; in JS, run(inputs, { maxWork }))",
            }));
        }
        Ok(())
    }

    /// After a node: the elements of the host values it made count as work (one step each).
    pub(super) fn host_values(&mut self, outs: &[V]) {
        for v in outs {
            if let V::Host { t, name: None } = v {
                self.host = self.host.saturating_add(t.numel() as u64);
            }
        }
    }
}
