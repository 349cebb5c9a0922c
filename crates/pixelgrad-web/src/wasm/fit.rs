//! The read and checkpoint cadence of the package's `fit` (web/js/fit.js): the native loop's
//! [`Cadence`], so both read back, take checkpoints and choose the automatic interval by
//! one rule. The JS loop keeps what only a page has: its callbacks, pacing, asynchronous
//! reads, recovery of a lost context and IndexedDB saves.

use js_sys::{Object, Reflect};
use pixelgrad::nn::train::Cadence;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
pub struct FitCadence {
    inner: Cadence,
}

#[wasm_bindgen]
impl FitCadence {
    /// `checkpoint_every`: `undefined`/`null` automatic, 0 never, else every that many steps.
    #[wasm_bindgen(constructor)]
    pub fn new(checkpoint_every: Option<u32>, read_every: u32) -> FitCadence {
        FitCadence { inner: Cadence::new(checkpoint_every.map(|n| n as usize), read_every as usize, None) }
    }

    /// The checkpoint interval now (0: none; automatic: 20 until the first interval chose).
    #[wasm_bindgen(getter)]
    pub fn every(&self) -> u32 {
        self.inner.every() as u32
    }

    /// Training starts or goes on at `step` (resumed, or back at a checkpoint after a loss).
    #[wasm_bindgen(js_name = startAt)]
    pub fn start_at(&mut self, step: u32) {
        self.inner.start_at(step as usize);
    }

    /// What is due after `step` steps with `since_read` of them not read back:
    /// `{ read, checkpoint }`.
    #[wasm_bindgen(js_name = afterStep)]
    pub fn after_step(&self, step: u32, since_read: u32, epoch_end: bool) -> Object {
        let due = self.inner.after_step(step as usize, since_read as usize, epoch_end);
        let o = Object::new();
        let _ = Reflect::set(&o, &"read".into(), &due.read.into());
        let _ = Reflect::set(&o, &"checkpoint".into(), &due.checkpoint.into());
        o
    }

    /// A checkpoint after `step` steps took `checkpoint_ms`; the steps since the last one (or
    /// the start) took `interval_ms`. Returns the interval from now on.
    pub fn checkpointed(&mut self, step: u32, checkpoint_ms: f64, interval_ms: f64) -> u32 {
        self.inner.checkpointed(step as usize, Some(checkpoint_ms / 1000.0), Some(interval_ms / 1000.0)) as u32
    }
}
