//! The package's `fit` (web/js/fit.js) drives the native training loop: a
//! [`RunState`](pixelgrad::nn::train::RunState) owned here, advanced one event at a time with
//! the model lent for each call. Step order, reads, checkpoint cadence (given or measured), the
//! stop on a non-finite loss, the steps redone after a device loss and the history are the
//! native `fit`'s; every device read is left to the page ([`FitRun::read`], awaited, then
//! [`FitRun::feed`]), which also keeps its callbacks, pacing, the restart of a lost backend and
//! IndexedDB saves.

use js_sys::{Array, Float32Array, Object, Promise, Reflect};
use pixelgrad::nn::checkpoint::Checkpoint;
use pixelgrad::nn::train::{
    DeviceLost, EpochLog, Event, FitOptions, Parts, Position, ReadKind, Resume, RunState, Samples, StepLog, Stopped, Targets,
};
use pixelgrad::{Error, Tensor};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::future_to_promise;

use super::{js_err, DeviceTensor, HostCheckpoint, Model, Runtime};

/// The training samples, owned for the run.
enum Xs {
    Host { x: Vec<f32>, sample: Vec<usize> },
    Device(Tensor),
}

/// Targets, owned: class indices, or float targets of a shape each.
enum Ys {
    Classes(Vec<u32>),
    Values(Vec<f32>, Vec<usize>),
}

impl Ys {
    /// From the page's `y` of `y_shape` for `n` samples, checked by the model (shapes, class
    /// indices whole and in range).
    fn of(model: &Model, op: &'static str, y: Vec<f32>, y_shape: &[usize], n: usize) -> Result<Ys, Error> {
        let dims = model.net.check_targets(op, &y, y_shape, n)?;
        Ok(match dims[..] {
            [_] => Ys::Classes(y.iter().map(|&v| v as u32).collect()),
            _ => Ys::Values(y, dims[1..].to_vec()),
        })
    }

    fn targets(&self) -> Targets<'_> {
        match self {
            Ys::Classes(c) => Targets::Classes(c),
            Ys::Values(v, s) => Targets::Values { values: v, shape: s },
        }
    }
}

/// Host samples, their sample shape and targets (a validation set).
type HostSet = (Vec<f32>, Vec<usize>, Ys);

/// `performance.now()` in seconds (`Date.now()` where there is no `performance`).
fn clock() -> Option<f64> {
    let perf = Reflect::get(&js_sys::global(), &"performance".into()).ok().filter(|p| p.is_object());
    let ms = perf
        .and_then(|p| {
            let f = Reflect::get(&p, &"now".into()).ok()?.dyn_into::<js_sys::Function>().ok()?;
            f.call0(&p).ok()?.as_f64()
        })
        .unwrap_or_else(js_sys::Date::now);
    Some(ms / 1000.0)
}

/// One training run of a model (see the module doc).
#[wasm_bindgen]
pub struct FitRun {
    state: Option<RunState>,
    x: Xs,
    y: Ys,
    test: Option<HostSet>,
}

fn num(o: &Value, k: &str) -> Option<f64> {
    o.get(k).and_then(Value::as_f64)
}

/// The options of the page's `fit` (already checked there): `{ epochs, batchSize, readEvery,
/// shuffle, seed, checkpointEvery (null: automatic), stopOnNaN }`.
fn options(json: &str, precision: pixelgrad::nn::mixed::Precision) -> Result<FitOptions, Error> {
    let o: Value = serde_json::from_str(json).map_err(|e| Error::invalid("fit", format!("bad options: {e}")))?;
    let whole = |k: &str, d: usize| num(&o, k).map(|v| v as usize).unwrap_or(d);
    Ok(FitOptions {
        epochs: whole("epochs", 1),
        batch_size: whole("batchSize", 32),
        read_every: whole("readEvery", 10),
        shuffle: o.get("shuffle").and_then(Value::as_bool).unwrap_or(true),
        seed: num(&o, "seed").unwrap_or(0.0) as u64,
        checkpoint_every: num(&o, "checkpointEvery").map(|v| v as usize),
        stop_on_nan: o.get("stopOnNaN").and_then(Value::as_bool).unwrap_or(true),
        precision,
        ..FitOptions::default()
    })
}

fn set(o: &Object, k: &str, v: impl Into<JsValue>) {
    let _ = Reflect::set(o, &k.into(), &v.into());
}

fn opt_f32(v: Option<f32>) -> JsValue {
    v.map(|v| JsValue::from(v as f64)).unwrap_or(JsValue::UNDEFINED)
}

fn lost_obj(kind: &str, i: &DeviceLost) -> Object {
    let o = Object::new();
    set(&o, "type", kind);
    set(&o, "step", i.step as u32);
    set(&o, "checkpointStep", i.checkpoint_step as u32);
    set(&o, "backend", i.backend.as_str());
    set(&o, "reason", i.reason.as_str());
    o
}

fn log_obj(l: &StepLog) -> Object {
    let o = Object::new();
    set(&o, "type", "log");
    set(&o, "step", l.step as u32);
    set(&o, "epoch", l.epoch as u32);
    set(&o, "loss", l.loss as f64);
    set(&o, "accuracy", opt_f32(l.accuracy));
    o
}

fn epoch_obj(e: &EpochLog) -> Object {
    let o = Object::new();
    set(&o, "type", "epoch");
    set(&o, "epoch", e.epoch as u32);
    set(&o, "loss", e.train_loss as f64);
    set(&o, "accuracy", opt_f32(e.train_accuracy));
    set(&o, "valLoss", opt_f32(e.test_loss));
    set(&o, "valAccuracy", opt_f32(e.test_accuracy));
    o
}

fn stopped_obj(s: &Option<Stopped>) -> JsValue {
    let Some(s) = s else { return JsValue::NULL };
    let o = Object::new();
    match s {
        Stopped::NonFiniteLoss { first_step, step, loss, restored_step } => {
            set(&o, "kind", "nonFiniteLoss");
            set(&o, "firstStep", *first_step as u32);
            set(&o, "step", *step as u32);
            set(&o, "loss", *loss as f64);
            set(&o, "restoredStep", *restored_step as u32);
        }
        Stopped::MaxSteps { step } => {
            set(&o, "kind", "maxSteps");
            set(&o, "step", *step as u32);
        }
    }
    o.into()
}

/// An event as the page sees it: `{ type, ... }`.
fn event_obj(ev: &Event) -> Object {
    match ev {
        Event::Step { step, epoch, lr } => {
            let o = Object::new();
            set(&o, "type", "step");
            set(&o, "step", *step as u32);
            set(&o, "epoch", *epoch as u32);
            set(&o, "lr", *lr as f64);
            o
        }
        Event::Read(kind) => {
            let o = Object::new();
            set(&o, "type", "read");
            set(
                &o,
                "what",
                match kind {
                    ReadKind::Sums => "sums",
                    ReadKind::Checkpoint => "checkpoint",
                    ReadKind::Evaluation => "evaluation",
                },
            );
            o
        }
        Event::Log(l) => log_obj(l),
        Event::Checkpoint { step, every, .. } => {
            let o = Object::new();
            set(&o, "type", "checkpoint");
            set(&o, "step", *step as u32);
            set(&o, "every", *every as u32);
            o
        }
        Event::Epoch(e) => epoch_obj(e),
        Event::DeviceLost(i) => lost_obj("deviceLost", i),
        Event::Recovered(i) => lost_obj("recovered", i),
        Event::Done(s) => {
            let o = Object::new();
            set(&o, "type", "done");
            set(&o, "stopped", stopped_obj(s));
            o
        }
    }
}

/// What an autosave keeps besides the checkpoint: where the run was and its logs.
fn resume_json(pos: &Position, loss_scale: Option<[f32; 3]>, steps: &[StepLog], epochs: &[EpochLog]) -> Value {
    json!({
        "format": "pixelgrad-run-1",
        "position": [pos.epoch, pos.batch, pos.step, pos.epoch_loss, pos.epoch_correct, pos.epoch_samples],
        "lossScale": loss_scale,
        "steps": steps.iter().map(|s| json!([s.step, s.epoch, s.loss, s.accuracy, s.lr])).collect::<Vec<_>>(),
        "epochs": epochs.iter().map(|e| json!([e.epoch, e.train_loss, e.train_accuracy, e.test_loss, e.test_accuracy])).collect::<Vec<_>>(),
    })
}

/// The saved run of [`resume_json`] with its checkpoint.
fn resume_of(ck: Checkpoint, state: &str) -> Result<Resume, Error> {
    let bad = || Error::invalid("fit", "resume: the saved run's state is not one this version wrote (start afresh)");
    let v: Value = serde_json::from_str(state).map_err(|_| bad())?;
    if v.get("format").and_then(Value::as_str) != Some("pixelgrad-run-1") {
        return Err(bad());
    }
    let f = |v: &Value| v.as_f64();
    let f32o = |v: &Value| v.as_f64().map(|x| x as f32);
    let p = v.get("position").and_then(Value::as_array).filter(|p| p.len() == 6).ok_or_else(bad)?;
    let u = |i: usize| f(&p[i]).map(|x| x as usize).ok_or_else(bad);
    let position = Position {
        epoch: u(0)?,
        batch: u(1)?,
        step: u(2)?,
        epoch_loss: f(&p[3]).ok_or_else(bad)?,
        epoch_correct: f(&p[4]).ok_or_else(bad)?,
        epoch_samples: u(5)?,
    };
    let loss_scale = match v.get("lossScale") {
        Some(Value::Array(a)) if a.len() == 3 => {
            Some([f32o(&a[0]).ok_or_else(bad)?, f32o(&a[1]).ok_or_else(bad)?, f32o(&a[2]).ok_or_else(bad)?])
        }
        None | Some(Value::Null) => None,
        _ => return Err(bad()),
    };
    let rows = |k: &str| v.get(k).and_then(Value::as_array).cloned().ok_or_else(bad);
    let mut steps = Vec::new();
    for r in rows("steps")? {
        let r = r.as_array().filter(|r| r.len() == 5).ok_or_else(bad)?;
        steps.push(StepLog {
            step: f(&r[0]).ok_or_else(bad)? as usize,
            epoch: f(&r[1]).ok_or_else(bad)? as usize,
            loss: f32o(&r[2]).unwrap_or(f32::NAN),
            accuracy: f32o(&r[3]),
            lr: f32o(&r[4]).ok_or_else(bad)?,
        });
    }
    let mut epochs = Vec::new();
    for r in rows("epochs")? {
        let r = r.as_array().filter(|r| r.len() == 5).ok_or_else(bad)?;
        epochs.push(EpochLog {
            epoch: f(&r[0]).ok_or_else(bad)? as usize,
            train_loss: f32o(&r[1]).unwrap_or(f32::NAN),
            train_accuracy: f32o(&r[2]),
            test_loss: f32o(&r[3]),
            test_accuracy: f32o(&r[4]),
        });
    }
    Ok(Resume { checkpoint: ck, position, loss_scale, steps, epochs })
}

fn dims(shape: &[u32]) -> Vec<usize> {
    shape.iter().map(|&d| d as usize).collect()
}

impl FitRun {
    fn state(&mut self) -> Result<&mut RunState, JsValue> {
        self.state.as_mut().ok_or_else(|| js_err(Error::invalid("fit", "the run is over")))
    }

    /// Lends `model`'s network, optimizer and this run's data to `f` with the state.
    fn with<R>(&mut self, model: &mut Model, f: impl FnOnce(&mut RunState, &mut Parts) -> Result<R, Error>) -> Result<R, JsValue> {
        let FitRun { state, x, y, test } = self;
        let state = state.as_mut().ok_or_else(|| js_err(Error::invalid("fit", "the run is over")))?;
        let (seq, opt) = model.net.fit_parts().map_err(js_err)?;
        let train = samples(x, y).map_err(js_err)?;
        let test = match test {
            Some((tx, ts, ty)) => Some(sample_set(tx, ts, ty).map_err(js_err)?),
            None => None,
        };
        let mut parts = Parts { model: seq, opt, train, test };
        f(state, &mut parts).map_err(js_err)
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        model: &mut Model,
        x: Xs,
        y: Ys,
        test: Option<HostSet>,
        opts: &str,
        resume: Option<HostCheckpoint>,
        resume_state: Option<String>,
    ) -> Result<FitRun, JsValue> {
        let mut opts = options(opts, model.net.precision()).map_err(js_err)?;
        if let (Some(ck), Some(st)) = (resume, resume_state) {
            opts.resume = Some(resume_of(ck.into_inner(), &st).map_err(js_err)?);
        }
        let (dev, loss) = (model.net.dev.clone(), model.net.loss());
        let mut run = FitRun { state: None, x, y, test };
        let (seq, opt) = model.net.fit_parts().map_err(js_err)?;
        let train = samples(&run.x, &run.y).map_err(js_err)?;
        let test = match &run.test {
            Some((tx, ts, ty)) => Some(sample_set(tx, ts, ty).map_err(js_err)?),
            None => None,
        };
        let mut parts = Parts { model: seq, opt, train, test };
        let mut state = RunState::new(&mut parts, loss, &dev, &opts).map_err(js_err)?;
        state.defer_reads();
        state.set_clock(clock);
        state.checkpoint_at_end();
        run.state = Some(state);
        Ok(run)
    }
}

fn samples<'a>(x: &'a Xs, y: &'a Ys) -> Result<Samples<'a>, Error> {
    match (x, y) {
        (Xs::Device(t), y) => Samples::on_device(t, y.targets()),
        (Xs::Host { x, sample }, y) => sample_set(x, sample, y),
    }
}

fn sample_set<'a>(x: &'a [f32], sample: &'a [usize], y: &'a Ys) -> Result<Samples<'a>, Error> {
    match y {
        Ys::Classes(c) => Samples::new(x, sample, c),
        Ys::Values(v, s) => Samples::with_values(x, sample, v, s),
    }
}

#[wasm_bindgen]
impl FitRun {
    /// A run on host samples `x` (`[n, ..sample]` as `shape`) with targets `y` of `y_shape`
    /// (class indices `[n]` or float targets `[n, ..]`), validated on `val_*` after each
    /// epoch when given; `opts` the JSON options; `resume`/`resume_state` an autosave.
    #[allow(clippy::too_many_arguments)]
    pub fn host(
        model: &mut Model,
        x: Vec<f32>,
        shape: Vec<u32>,
        y: Vec<f32>,
        y_shape: Vec<u32>,
        val_x: Option<Vec<f32>>,
        val_shape: Option<Vec<u32>>,
        val_y: Option<Vec<f32>>,
        val_y_shape: Option<Vec<u32>>,
        opts: &str,
        resume: Option<HostCheckpoint>,
        resume_state: Option<String>,
    ) -> Result<FitRun, JsValue> {
        let shape = dims(&shape);
        model.net.check_input("fit", &x, &shape).map_err(js_err)?;
        let y = Ys::of(model, "fit", y, &dims(&y_shape), shape[0]).map_err(js_err)?;
        let test = val_set(model, val_x, val_shape, val_y, val_y_shape)?;
        Self::start(model, Xs::Host { x, sample: shape[1..].to_vec() }, y, test, opts, resume, resume_state)
    }

    /// A run on the rows of the device tensor `x` (gathered on the device; never read back).
    #[allow(clippy::too_many_arguments)]
    pub fn rows(
        model: &mut Model,
        x: &DeviceTensor,
        y: Vec<f32>,
        y_shape: Vec<u32>,
        val_x: Option<Vec<f32>>,
        val_shape: Option<Vec<u32>>,
        val_y: Option<Vec<f32>>,
        val_y_shape: Option<Vec<u32>>,
        opts: &str,
        resume: Option<HostCheckpoint>,
        resume_state: Option<String>,
    ) -> Result<FitRun, JsValue> {
        let t = x.tensor().clone();
        model.net.check_tensor("fit", &t).map_err(js_err)?;
        let y = Ys::of(model, "fit", y, &dims(&y_shape), t.dims()[0]).map_err(js_err)?;
        let test = val_set(model, val_x, val_shape, val_y, val_y_shape)?;
        Self::start(model, Xs::Device(t), y, test, opts, resume, resume_state)
    }

    /// Does the next piece of work: `{ type: 'step' | 'read' | 'log' | 'checkpoint' | 'epoch'
    /// | 'deviceLost' | 'recovered' | 'done', ... }`. After `read`: `await run.read()`, then
    /// `run.feed(model, values)` (or `run.fail(reason)`).
    pub fn next(&mut self, model: &mut Model) -> Result<Object, JsValue> {
        self.with(model, |s, p| s.next(p)).map(|ev| event_obj(&ev))
    }

    /// Reads what the last `read` event waits for (async): a Float32Array.
    pub fn read(&mut self) -> Result<Promise, JsValue> {
        let t = self.state()?.pending().cloned();
        Ok(future_to_promise(async move {
            let v = match t {
                Some(t) => t.to_vec_async().await.map_err(js_err)?,
                None => Vec::new(),
            };
            Ok(Float32Array::from(&v[..]).into())
        }))
    }

    /// The values of `read`: the run goes on with them.
    pub fn feed(&mut self, model: &mut Model, values: Vec<f32>) -> Result<(), JsValue> {
        self.with(model, |s, p| s.feed(p, values))
    }

    /// The device is gone (noticed by the page, or a read failed with it): the next `next`
    /// says `deviceLost` (or throws where there is nothing to go back to).
    pub fn fail(&mut self, reason: &str) -> Result<(), JsValue> {
        let st = self.state()?;
        let backend = st.device().name();
        st.fail(Error::DeviceLost { backend, reason: reason.to_string() });
        Ok(())
    }

    /// After `deviceLost`: the last checkpoint into `model` (rebuilt on `rt`'s new device),
    /// and training goes back to it (the next event is `recovered`).
    pub fn recover(&mut self, model: &mut Model, rt: &Runtime) -> Result<(), JsValue> {
        let dev = rt.device().clone();
        self.with(model, |s, p| s.recover(p, dev))
    }

    /// Right after a `step` event: read the sums after it (step-through).
    #[wasm_bindgen(js_name = requestRead)]
    pub fn request_read(&mut self) -> Result<(), JsValue> {
        self.state()?.request_read();
        Ok(())
    }

    /// Right after a `step` event: take a checkpoint after it (an autosave is due).
    #[wasm_bindgen(js_name = requestCheckpoint)]
    pub fn request_checkpoint(&mut self) -> Result<(), JsValue> {
        self.state()?.request_checkpoint();
        Ok(())
    }

    /// `model.stopTraining`: the epoch ends after the step in progress (logged with its
    /// means so far), with a checkpoint there, and then the run.
    #[wasm_bindgen(js_name = endHere)]
    pub fn end_here(&mut self) -> Result<(), JsValue> {
        self.state()?.end_here();
        Ok(())
    }

    /// Ends the run now (an abort).
    pub fn stop(&mut self) -> Result<(), JsValue> {
        self.state()?.stop();
        Ok(())
    }

    /// Whether the next `next` trains a step (the page paces steps only).
    #[wasm_bindgen(getter, js_name = stepsNext)]
    pub fn steps_next(&self) -> bool {
        self.state.as_ref().is_some_and(RunState::steps_next)
    }

    /// Steps done.
    #[wasm_bindgen(getter)]
    pub fn step(&self) -> u32 {
        self.state.as_ref().map_or(0, |s| s.position().step as u32)
    }

    /// Checkpoints taken so far (the one before the first step included).
    #[wasm_bindgen(getter, js_name = checkpointsTaken)]
    pub fn checkpoints_taken(&self) -> u32 {
        self.state.as_ref().map_or(0, |s| s.checkpoints_taken() as u32)
    }

    /// The last good checkpoint (a copy), or undefined.
    #[wasm_bindgen(js_name = lastCheckpoint)]
    pub fn last_checkpoint(&self) -> Option<HostCheckpoint> {
        self.state.as_ref().and_then(|s| s.last_checkpoint()).cloned().map(HostCheckpoint::new)
    }

    /// The run to go on from at the last good checkpoint, as JSON (an autosave's state), or
    /// undefined.
    #[wasm_bindgen(js_name = resumeState)]
    pub fn resume_state(&self) -> Option<String> {
        let p = self.state.as_ref()?.resume_point()?;
        Some(resume_json(p.position, p.loss_scale, p.steps, p.epochs).to_string())
    }

    /// Ends the run: `{ epochs: [{ loss, accuracy?, valLoss?, valAccuracy? }], every, taken,
    /// seconds, stopped }`; the optimizer is back at its learning rate, and a mixed-precision
    /// loss scaler stays with the model.
    pub fn finish(&mut self, model: &mut Model) -> Result<Object, JsValue> {
        let h = self.with(model, |s, p| s.take_history(p))?;
        if let Some(s) = self.state.take().and_then(|mut s| s.take_scaler()) {
            model.net.set_scaler(s);
        }
        let o = Object::new();
        let epochs = Array::new();
        for e in &h.epochs {
            epochs.push(&epoch_obj(e));
        }
        set(&o, "epochs", epochs);
        set(&o, "every", h.checkpoint_every as u32);
        set(&o, "taken", h.checkpoints as u32);
        set(&o, "seconds", h.checkpoint_seconds);
        set(&o, "stopped", stopped_obj(&h.stopped));
        Ok(o)
    }
}

fn val_set(
    model: &Model,
    x: Option<Vec<f32>>,
    shape: Option<Vec<u32>>,
    y: Option<Vec<f32>>,
    y_shape: Option<Vec<u32>>,
) -> Result<Option<HostSet>, JsValue> {
    let (Some(x), Some(shape), Some(y), Some(y_shape)) = (x, shape, y, y_shape) else { return Ok(None) };
    let shape = dims(&shape);
    model.net.check_input("evaluate", &x, &shape).map_err(js_err)?;
    let ys = Ys::of(model, "evaluate", y, &dims(&y_shape), shape[0]).map_err(js_err)?;
    Ok(Some((x, shape[1..].to_vec(), ys)))
}

/// What the native driver's callbacks saw (for [`Model::fit_blocking`]).
#[derive(Default)]
struct Seen {
    steps: Vec<StepLog>,
    checkpoints: Vec<usize>,
}

impl pixelgrad::nn::train::Callbacks for Seen {
    fn on_step(&mut self, log: &StepLog) -> std::ops::ControlFlow<()> {
        self.steps.push(log.clone());
        std::ops::ControlFlow::Continue(())
    }
    fn on_checkpoint(&mut self, p: &pixelgrad::nn::train::ResumePoint<'_>) -> pixelgrad::Result<()> {
        self.checkpoints.push(p.position.step);
        Ok(())
    }
}

#[wasm_bindgen]
impl Model {
    /// For tests comparing the page's `fit` with the native one: trains with the native
    /// driver (`pixelgrad_nn::train::fit`, blocking reads, so on the cpu backend only) on host
    /// samples, with `FitRun.host`'s arguments. Returns `{ steps: [{ step, epoch, loss,
    /// accuracy }], epochs: [{ loss, accuracy, valLoss, valAccuracy }], checkpoints: [step],
    /// taken, every, stopped }`.
    #[allow(clippy::too_many_arguments)]
    #[wasm_bindgen(js_name = fitBlocking)]
    pub fn fit_blocking(
        &mut self,
        x: Vec<f32>,
        shape: Vec<u32>,
        y: Vec<f32>,
        y_shape: Vec<u32>,
        val_x: Option<Vec<f32>>,
        val_shape: Option<Vec<u32>>,
        val_y: Option<Vec<f32>>,
        val_y_shape: Option<Vec<u32>>,
        opts: &str,
    ) -> Result<Object, JsValue> {
        let shape = dims(&shape);
        self.net.check_input("fit", &x, &shape).map_err(js_err)?;
        let ys = Ys::of(self, "fit", y, &dims(&y_shape), shape[0]).map_err(js_err)?;
        let test = val_set(self, val_x, val_shape, val_y, val_y_shape)?;
        let opts = options(opts, self.net.precision()).map_err(js_err)?;
        let (dev, loss) = (self.net.dev.clone(), self.net.loss());
        let sample = shape[1..].to_vec();
        let train = sample_set(&x, &sample, &ys).map_err(js_err)?;
        let test = match &test {
            Some((tx, ts, ty)) => Some(sample_set(tx, ts, ty).map_err(js_err)?),
            None => None,
        };
        let (seq, opt) = self.net.fit_parts().map_err(js_err)?;
        let mut seen = Seen::default();
        let h = pixelgrad::nn::train::fit(seq, opt, loss, &dev, train, test, &opts, &mut seen).map_err(js_err)?;
        let o = Object::new();
        let steps = Array::new();
        for s in &seen.steps {
            steps.push(&log_obj(s));
        }
        let epochs = Array::new();
        for e in &h.epochs {
            epochs.push(&epoch_obj(e));
        }
        let checkpoints: Array = seen.checkpoints.iter().map(|&s| JsValue::from(s as u32)).collect();
        set(&o, "steps", steps);
        set(&o, "epochs", epochs);
        set(&o, "checkpoints", checkpoints);
        set(&o, "taken", h.checkpoints as u32);
        set(&o, "every", h.checkpoint_every as u32);
        set(&o, "stopped", stopped_obj(&h.stopped));
        Ok(o)
    }
}
