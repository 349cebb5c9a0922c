//! [`Session`]: a [`Model`] bound to a `Device`. Weights are uploaded once as [`Param`]s (so an
//! imported model can be fine-tuned); each run checks the inputs, evaluates the nodes needed
//! for the requested outputs in order and frees every value after its last use.

use std::cell::{OnceCell, RefCell};
use std::collections::HashSet;

// FxHash for the maps read on every run (names of values and constants): SipHash showed up
// in the CPU backend's profiles.
use rustc_hash::FxHashMap as HashMap;
use std::future::Future;
use std::rc::Rc;

use pixelgrad_core::{Device, Param, Tensor};

use crate::graph::{Node, ValueInfo};
use crate::host::{DType, HostTensor};
use crate::ops::{self, upload, Cx, V};
use crate::replay::{Plan, Recording, Replays};
use crate::value::host_of;
pub use crate::value::Value;

mod consts;
mod control;
mod limits;
mod live;
mod wiring;

use crate::{Model, OnnxError, Result};
use limits::RunGuard;
pub use limits::{Pause, RunOptions, DEFAULT_MAX_WORK, ITERATION_WORK};
use live::LiveBytes;
use wiring::{RunPlan, Wiring};

/// A caller's input: a device tensor (f32) or a host tensor of any supported element type.
#[derive(Clone, Debug)]
pub enum Input {
    Tensor(Tensor),
    Host(HostTensor),
}

/// The ONNX element type a device tensor stands for: its storage type (u8, i8 or f16 storage
/// for a model input of that type), f32 for everything else.
fn device_element_type(t: &Tensor) -> DType {
    use pixelgrad_core::kernel::DType as Storage;
    match t.storage_dtype() {
        Storage::U8 => DType::U8,
        Storage::I8 => DType::I8,
        Storage::F16 => DType::F16,
        _ => DType::F32,
    }
}

impl From<Tensor> for Input {
    fn from(t: Tensor) -> Self {
        Input::Tensor(t)
    }
}
impl From<&Tensor> for Input {
    fn from(t: &Tensor) -> Self {
        Input::Tensor(t.clone())
    }
}
impl From<HostTensor> for Input {
    fn from(t: HostTensor) -> Self {
        Input::Host(t)
    }
}

/// Float host inputs up to this many elements stay on the host (see [`keeps_on_host`]).
const SMALL_HOST_INPUT: usize = 16;

/// Whether a host input stays on the host: integer and bool inputs (indices, axes, shapes,
/// pads) and tiny float ones (Resize scales). Operators that take such a value as an argument
/// read it there, as they read a constant (so a graph whose `axes` or `sizes` is an input
/// runs); operators that compute with it upload it when they run.
fn keeps_on_host(h: &HostTensor) -> bool {
    !h.dtype.is_float() || h.numel() <= SMALL_HOST_INPUT
}

/// How a [`Session`] stores the model's float weights on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WeightStorage {
    /// `float16` weights of the file in f16, the others in f32 (trainable).
    #[default]
    Auto,
    /// Every float weight in f32, trainable ([`Session::params`]).
    F32,
    /// Every float weight in f16 (half the bytes), widened to f32 where an operator reads it;
    /// arithmetic stays f32. Inference only: the weights are not [`Param`]s. Backends without
    /// f16 storage ([`Caps::f16_storage`](pixelgrad_core::Caps::f16_storage)) keep f32, and
    /// [`Session::weight_storage`] says so.
    F16,
}

/// A shared host constant and its name, as operators receive it.
type HostConst = (Rc<HostTensor>, Rc<str>);

/// A model bound to a device.
pub struct Session {
    model: Rc<Model>,
    device: Device,
    /// Float constants that live in f16 on the device (not parameters).
    f16: HashSet<String>,
    /// Trainable weights by constant name, in a stable order.
    params: Vec<(String, Param)>,
    param_index: HashMap<String, usize>,
    /// Device copies of the other constants read by device ops, uploaded on first use.
    cache: RefCell<HashMap<String, Tensor>>,
    /// Shared host copies of the non-trainable constants operators read.
    host: RefCell<HashMap<String, HostConst>>,
    /// Row sums of 8-bit weight matrices and their largest `Σ|w|`, by name and transpose
    /// ([`Consts::cached_int8_row_sums`]); not counted as weight bytes (one f32 per row).
    int8_sums: RefCell<HashMap<(String, bool), (Tensor, u64)>>,
    /// See [`Session::set_max_work`].
    max_work: std::cell::Cell<u64>,
    /// The graph's values and nodes by integer id, built on the first run.
    wiring: OnceCell<Wiring>,
    /// What a run needs for each set of requested values, by those values' names.
    plans: RefCell<HashMap<Vec<String>, Rc<RunPlan>>>,
    /// Recorded runs whose kernels later runs launch again (see [`Session::set_kernel_replay`]).
    replays: Replays,
    /// See [`Session::activation_bytes`].
    activation_peak: std::cell::Cell<usize>,
    /// See [`Session::set_int8_activations`].
    int8_activations: std::cell::Cell<bool>,
    /// Whether the node running now keeps its quantised results in 8-bit storage
    /// ([`RunPlan::held`]).
    narrow_results: std::cell::Cell<bool>,
}

impl Session {
    /// Binds `model` to `device`, uploading its weights: every float constant that a device op
    /// reads as data and that is either larger than one element or an input of a weighted op
    /// (Conv, Gemm, MatMul, ...) becomes a [`Param`].
    pub fn new(model: Model, device: &Device) -> Result<Session> {
        Session::from_rc(Rc::new(model), device)
    }

    pub fn from_rc(model: Rc<Model>, device: &Device) -> Result<Session> {
        Session::with_storage(model, device, WeightStorage::Auto)
    }

    /// [`Session::from_rc`] with the float weights stored as `storage` says (`F16`: half the
    /// weight bytes, inference only).
    pub fn with_storage(model: Rc<Model>, device: &Device, storage: WeightStorage) -> Result<Session> {
        let f16_ok = device.backend().caps().f16_storage;
        let f16: HashSet<String> = model
            .constants
            .iter()
            .filter(|(_, t)| {
                f16_ok
                    && t.dtype.is_float()
                    && match storage {
                        WeightStorage::F16 => true,
                        WeightStorage::Auto => t.dtype == DType::F16,
                        WeightStorage::F32 => false,
                    }
            })
            .map(|(k, _)| k.clone())
            .collect();
        let mut wanted: Vec<&str> = Vec::new();
        let mut seen = HashSet::new();
        for (op_type, i, name) in constant_uses(&model.nodes, &HashSet::new()) {
            let Some(t) = model.constants.get(name) else {
                continue;
            };
            if !t.dtype.is_float() || seen.contains(name) || ops::host_argument(op_type, i) || f16.contains(name) {
                continue;
            }
            let weighted = ops::has_weights(op_type) && i >= 1;
            if t.numel() > 1 || weighted {
                seen.insert(name);
                wanted.push(name);
            }
        }
        let mut params = Vec::with_capacity(wanted.len());
        let mut param_index = HashMap::default();
        for name in wanted {
            let t = &model.constants[name];
            let p = Param::new(Tensor::from_vec(device, &t.to_f32(), t.shape.clone())?);
            param_index.insert(name.to_string(), params.len());
            params.push((name.to_string(), p));
        }
        Ok(Session {
            model,
            device: device.clone(),
            f16,
            params,
            param_index,
            cache: RefCell::new(HashMap::default()),
            host: RefCell::new(HashMap::default()),
            int8_sums: RefCell::new(HashMap::default()),
            max_work: std::cell::Cell::new(DEFAULT_MAX_WORK),
            wiring: OnceCell::new(),
            plans: RefCell::new(HashMap::default()),
            replays: Replays::default(),
            activation_peak: std::cell::Cell::new(0),
            int8_activations: std::cell::Cell::new(true),
            narrow_results: std::cell::Cell::new(false),
        })
    }

    /// Sets the element cap of the session's **device** ([`Device::set_limits`]'s
    /// `max_elements`, for every user of that device): every result, of every operator, host
    /// or device, is refused above it before anything is allocated. Default 2^28 (1 GiB of
    /// f32).
    #[deprecated(note = "the element cap is the device's now: use Device::set_limits (this sets it for every user of the device)")]
    pub fn set_max_elements(&self, n: usize) {
        let l = self.device.limits();
        self.device.set_limits(pixelgrad_core::Limits { max_elements: n, ..l });
    }

    /// The most estimated work one run may do ([`RunOptions::max_work`] when a run does not
    /// say): every primitive's estimate ([`pixelgrad_core::budget::op_work`], from the shapes
    /// before it launches) plus one step per element the host operators make. A run past it
    /// stops with an [`pixelgrad_core::Error::Budget`] naming this setting. Default
    /// [`DEFAULT_MAX_WORK`] (2^40); lower it for models from untrusted sources that must stay
    /// cheap to run.
    pub fn set_max_work(&self, steps: u64) {
        self.max_work.set(steps);
    }

    /// See [`Session::set_max_work`].
    pub fn max_work(&self) -> u64 {
        self.max_work.get()
    }

    /// Whether runs replay the kernels of an earlier run with the same input shapes and
    /// requested outputs instead of walking the graph again (default on). The first such run
    /// records them, on backends that record kernel traces (the CPU's fast path, WebGPU, WebGL); results are
    /// the same either way. Runs that want gradients, that keep an input on the host, or that
    /// read a value back while they run (`NonZero`, `NonMaxSuppression`) always walk the graph.
    /// Turning it off drops what was recorded.
    pub fn set_kernel_replay(&self, on: bool) {
        self.replays.set_enabled(on);
    }

    /// See [`Session::set_kernel_replay`].
    pub fn kernel_replay(&self) -> bool {
        self.replays.enabled()
    }

    /// How many runs of this session replayed recorded kernels (see
    /// [`Session::set_kernel_replay`]).
    pub fn kernel_replays(&self) -> u64 {
        self.replays.replayed.get()
    }

    pub fn model(&self) -> &Model {
        &self.model
    }
    pub fn device(&self) -> &Device {
        &self.device
    }
    pub fn inputs(&self) -> &[ValueInfo] {
        &self.model.inputs
    }
    pub fn outputs(&self) -> &[ValueInfo] {
        &self.model.outputs
    }
    /// Whether constant `t` lives in fewer bits than f32 on this device (8-bit values where the
    /// backend stores them, WebGL1's byte textures included).
    fn stored_narrow(&self, t: &HostTensor) -> bool {
        matches!(t.dtype, DType::I8 | DType::U8) && !t.shape.is_empty() && self.device.backend().caps().int8_storage
    }

    /// Whether quantised (`uint8` / `int8`) results that outlive the next node (read by a
    /// later node, as skip connections and concatenated branches are, or asked for as
    /// outputs) are stored as 8-bit tensors where the backend has 8-bit storage (default on):
    /// a quarter of their memory, for one narrowing pass per result (which also saturates) and
    /// one widening pass per reader. Results read by the next node alone stay whole numbers
    /// in f32: they are never held while another node runs, and their passes fuse. Off keeps
    /// every result in f32, as backends without 8-bit storage do; the outputs are the same
    /// either way.
    pub fn set_int8_activations(&self, on: bool) {
        self.int8_activations.set(on);
        self.replays.clear();
    }

    /// [`Session::set_int8_activations`] on and a backend with 8-bit arithmetic.
    fn int8_activations_on(&self) -> bool {
        self.int8_activations.get() && self.device.backend().caps().int8
    }

    /// How quantised (`uint8` / `int8`) activations are kept between nodes: `"8-bit"` where
    /// the backend stores 8-bit tensors, `"f32"` (whole numbers in f32) where it does not
    /// (the WebGL1 mode) or [`Session::set_int8_activations`] turned it off.
    pub fn activation_storage(&self) -> &'static str {
        if self.int8_activations_on() {
            "8-bit"
        } else {
            "f32"
        }
    }

    /// How the float weights are stored: `"f32"`, `"f16"` (every float weight) or
    /// `"f16+f32"` (some of each).
    pub fn weight_storage(&self) -> &'static str {
        let floats = self.model.constants.values().filter(|t| t.dtype.is_float()).count();
        match self.f16.len() {
            0 => "f32",
            n if n == floats => "f16",
            _ => "f16+f32",
        }
    }

    /// The arithmetic of the matrix products (convolutions, Gemm, MatMul) on the float
    /// weights: `"f32"` where they are stored f32; with f16 weights, the backend's
    /// [`Caps::f16_matmul_arithmetic`](pixelgrad_core::Caps::f16_matmul_arithmetic) where it reads them directly
    /// (WebGPU: `"f32 (f16 weights read directly)"`), else `"f32 (widened)"` (a widen pass per
    /// weight per run). Other operators reading f16 weights (biases, normalisations, depthwise
    /// and dilated convolutions) widen them and compute in f32.
    pub fn arithmetic(&self) -> &'static str {
        if self.f16.is_empty() {
            return "f32";
        }
        let b = self.device.backend();
        match b.caps().f16_matmul_arithmetic {
            Some(a) if b.caps().f16_matmul => a,
            _ => "f32 (widened)",
        }
    }

    /// How the quantised operators compute on this device, or `None` when the model has no
    /// quantised operator: `"f32-emulated"` where the backend has no 8-bit storage (8-bit
    /// values held as integer-valued `f32`, products accumulated exactly in `f32` below 2^24
    /// and requantised as onnxruntime does); `"i8 weights stored 8-bit; every quantised op
    /// f32-emulated ..."` where it stores 8-bit tensors but has no 8-bit arithmetic (WebGL1:
    /// the weights are widened where read); else `"i8 weights stored 8-bit; ..."`, naming
    /// the kernel the integer products run on ([`Caps::int8_kernel`](pixelgrad_core::Caps::int8_kernel)):
    /// `(dot4I8Packed, i32 accumulation)` or `(unpacked-i32, i32 accumulation)` on WebGPU,
    /// `(i32 accumulation)` on the CPU.
    pub fn int8_path(&self) -> Option<&'static str> {
        if self.model.precision().int8.is_empty() {
            None
        } else if self.device.backend().caps().int8 {
            // The kernel the products run on (`Caps::int8_kernel`): WebGPU's dot4I8Packed or
            // unpacked-i32, the CPU's cpu-i32.
            Some(match self.device.backend().caps().int8_kernel {
                Some("dot4I8Packed") => {
                    "i8 weights stored 8-bit; group-1 convolutions and matrix products on matmul_i8 (dot4I8Packed, i32 accumulation), other quantised ops f32-emulated"
                }
                Some("unpacked-i32") => {
                    "i8 weights stored 8-bit; group-1 convolutions and matrix products on matmul_i8 (unpacked-i32, i32 accumulation), other quantised ops f32-emulated"
                }
                _ => "i8 weights stored 8-bit; group-1 convolutions and matrix products on matmul_i8 (i32 accumulation), other quantised ops f32-emulated",
            })
        } else if self.device.backend().caps().int8_storage {
            Some("i8 weights stored 8-bit; every quantised op f32-emulated (no 8-bit arithmetic on this backend)")
        } else {
            Some("f32-emulated")
        }
    }

    /// Bytes the device holds for the model's weights: the parameters and every constant
    /// uploaded so far (constants upload on first use: call after a run), 8-bit weights at one
    /// byte each. The lookup tables of `QLinearAdd` / `QLinearMul` are not weights: see
    /// [`Session::device_table_bytes`].
    pub fn device_weight_bytes(&self) -> usize {
        let params: usize = self.params.iter().map(|(_, p)| p.tensor().numel() * 4).sum();
        params + self.cached_bytes(false)
    }

    /// Bytes the device holds for the lookup tables of `QLinearAdd` / `QLinearMul` (one table
    /// of 65,536 results per set of scales and zero points, one byte each where the backend
    /// stores 8 bits), uploaded on first use: call after a run.
    pub fn device_table_bytes(&self) -> usize {
        self.cached_bytes(true)
    }

    /// Device bytes of the cached constants that are (`tables`) or are not lookup tables.
    fn cached_bytes(&self, tables: bool) -> usize {
        let size = |t: &Tensor| match t.storage_dtype() {
            pixelgrad_core::kernel::DType::I8 | pixelgrad_core::kernel::DType::U8 => 1,
            pixelgrad_core::kernel::DType::F16 => 2,
            _ => 4,
        };
        let cache = self.cache.borrow();
        cache.iter().filter(|(k, _)| k.starts_with(crate::ops::qbinary::TABLE_PREFIX) == tables).map(|(_, t)| t.numel() * size(t)).sum()
    }

    /// The most device bytes that the values passed between nodes held at once during the
    /// last run that walked the graph (a replayed run launches the same kernels on the same
    /// sizes, so it holds the same): each storage counted once, quantised activations at one
    /// byte per element where the backend stores them 8-bit, two for f16. Temporaries inside
    /// one operator are not counted. 0 before the first run.
    pub fn activation_bytes(&self) -> usize {
        self.activation_peak.get()
    }

    /// The weights, by the model's tensor names.
    pub fn params(&self) -> &[(String, Param)] {
        &self.params
    }

    /// Runs the graph for inference (no autodiff graph is recorded); returns the graph outputs
    /// in order.
    pub fn run(&self, inputs: &[(&str, Input)]) -> Result<Vec<(String, Value)>> {
        self.run_with(inputs, &RunOptions::default())
    }

    /// [`Session::run`] with a work limit and a cancel token ([`RunOptions`]).
    pub fn run_with(&self, inputs: &[(&str, Input)], options: &RunOptions) -> Result<Vec<(String, Value)>> {
        let _g = pixelgrad_core::no_grad();
        let names: Vec<&str> = self.model.outputs.iter().map(|o| o.name.as_str()).collect();
        let vals = self.run_to_with(inputs, &names, options)?;
        Ok(names.into_iter().map(|s| s.to_string()).zip(vals).collect())
    }

    /// Runs the part of the graph needed for the values `outputs` (graph outputs or any
    /// intermediate value name) and returns them in that order. Gradients are recorded when
    /// the caller has them enabled (this is how [`crate::OnnxLayer`] trains).
    pub fn run_to(&self, inputs: &[(&str, Input)], outputs: &[&str]) -> Result<Vec<Value>> {
        self.run_to_with(inputs, outputs, &RunOptions::default())
    }

    /// [`Session::run_to`] with a work limit and a cancel token ([`RunOptions`]).
    pub fn run_to_with(&self, inputs: &[(&str, Input)], outputs: &[&str], options: &RunOptions) -> Result<Vec<Value>> {
        // Natively every read completes at once, so the core below never waits; in a browser
        // only a graph with a data-dependent operator on WebGPU would, and that needs run_async.
        let fut = std::pin::pin!(self.run_core(inputs, outputs, options, false));
        match fut.poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
            std::task::Poll::Ready(r) => r,
            std::task::Poll::Pending => Err(OnnxError::Output {
                name: outputs.join(", "),
                msg: "this graph reads values back while it runs (NonMaxSuppression, NonZero), which the device cannot do without waiting: use Session::run_async".into(),
            }),
        }
    }

    /// [`Session::run`] for devices whose reads are asynchronous (WebGPU in a browser): the
    /// inputs of operators whose result length depends on the data (`NonMaxSuppression`,
    /// `NonZero`) are read back with [`Tensor::to_vec_async`] before they run.
    pub async fn run_async(&self, inputs: &[(&str, Input)]) -> Result<Vec<(String, Value)>> {
        self.run_async_with(inputs, &RunOptions::default()).await
    }

    /// [`Session::run_async`] with a work limit and a cancel token ([`RunOptions`]). The token
    /// is checked before every primitive and between nodes, so cancelling it from an event
    /// handler while the run awaits a read stops the run at its next step (in JS, an
    /// `AbortSignal`'s `abort` event cancelling the token).
    pub async fn run_async_with(&self, inputs: &[(&str, Input)], options: &RunOptions) -> Result<Vec<(String, Value)>> {
        let _g = pixelgrad_core::no_grad();
        let names: Vec<&str> = self.model.outputs.iter().map(|o| o.name.as_str()).collect();
        let vals = self.run_core(inputs, &names, options, true).await?;
        Ok(names.into_iter().map(|s| s.to_string()).zip(vals).collect())
    }

    /// `pausing`: whether the run awaits `options.pause` (only the asynchronous runs do).
    async fn run_core(&self, inputs: &[(&str, Input)], outputs: &[&str], options: &RunOptions, pausing: bool) -> Result<Vec<Value>> {
        let model = &*self.model;
        let mut guard = RunGuard::open(&self.device, self.max_work.get(), options, pausing);
        let mut env: HashMap<&str, V> = HashMap::default();
        for (name, input) in inputs {
            let wiring = self.wiring.get_or_init(|| Wiring::new(model));
            let info = wiring.input(model, name).ok_or_else(|| OnnxError::Input {
                name: name.to_string(),
                msg: format!("the model has no such input (its inputs: {})", input_list(&model.inputs)),
            })?;
            if env.contains_key(info.name.as_str()) {
                return Err(OnnxError::Input { name: name.to_string(), msg: "given twice".into() });
            }
            env.insert(info.name.as_str(), self.check_input(info, input)?);
        }
        for i in &model.inputs {
            if !env.contains_key(i.name.as_str()) {
                return Err(OnnxError::Input {
                    name: i.name.clone(),
                    msg: format!("missing (expected {} of shape {})", i.dtype, i.shape_text()),
                });
            }
        }
        let names: Vec<&str> = model.inputs.iter().map(|i| i.name.as_str()).collect();
        let params: Vec<Tensor> = self.params.iter().map(|(_, p)| p.tensor()).collect();
        let Some(traced) = self.replays.inputs(&self.device, &env, &names, &params) else {
            return self.walk(env, outputs, &mut guard).await;
        };
        match self.replays.prepare(&env, &names, outputs, self.device.limits()) {
            Plan::Walk => self.walk(env, outputs, &mut guard).await,
            Plan::Replay(key, rec) => {
                // The replay launches no primitive through the device's checks: the recorded
                // run's work counts against this run's limit, and the token is read first.
                guard.before_replay(rec.work)?;
                match self.replays.replay(&self.device, &rec, &traced) {
                    Ok(vals) => Ok(vals),
                    // Not expected; the graph walk is always right, so it takes over for good.
                    Err(_) => {
                        self.replays.keep(key, None);
                        self.walk(env, outputs, &mut guard).await
                    }
                }
            }
            Plan::Record(key) => {
                let stores: Vec<&pixelgrad_core::Storage> = traced.iter().map(|t| t.storage()).collect();
                if !self.device.backend().trace_begin(&stores) {
                    return self.walk(env, outputs, &mut guard).await;
                }
                let recording = Recording(&self.device, false);
                let vals = self.walk(env, outputs, &mut guard).await?;
                recording.done();
                self.replays.keep(key, Replays::finish(&self.device, &vals, guard.work()));
                Ok(vals)
            }
        }
    }

    /// Runs the graph node by node for `outputs`, given the checked inputs `env`.
    async fn walk(&self, env: HashMap<&str, V>, outputs: &[&str], guard: &mut RunGuard) -> Result<Vec<Value>> {
        let model = &*self.model;
        let wiring = self.wiring.get_or_init(|| Wiring::new(model));
        let plan = self.plan(wiring, outputs)?;
        // Values by id: the given inputs, then each node's results until their last read.
        let mut vals: Vec<Option<V>> = vec![None; wiring.producer.len()];
        for (name, v) in &env {
            if let Some(&i) = wiring.ids.get(*name) {
                vals[i] = Some(v.clone());
            }
        }
        let mut uses = plan.uses.clone();
        let mut live = LiveBytes::default();
        for (p, &k) in plan.nodes.iter().enumerate() {
            self.narrow_results.set(plan.held[p]);
            let node = &model.nodes[k];
            // let the caller's event loop run (an abort handler may cancel the token), then:
            // cancelled, or over the run's work, between nodes too (a host node launches no
            // primitive the device could stop)
            if let Some(pause) = guard.pause_due() {
                pause.await;
            }
            guard.before(node)?;
            let mut ins = Vec::with_capacity(node.inputs.len());
            for (name, id) in node.inputs.iter().zip(&wiring.ins[k]) {
                let Some(i) = *id else {
                    ins.push(None);
                    continue;
                };
                let v = match &vals[i] {
                    Some(v) => v.clone(),
                    None => self.constant(name).ok_or_else(|| node.err(format!("input '{name}' has not been computed")))?,
                };
                ins.push(Some(v));
            }
            let outs = self.exec_node(node, ins, guard).await?;
            for (id, v) in wiring.outs[k].iter().zip(outs) {
                if let Some(i) = *id {
                    if uses[i] > 0 {
                        live.add(&v);
                        vals[i] = Some(v);
                    }
                }
            }
            for i in wiring.ins[k].iter().flatten() {
                if uses[*i] > 0 {
                    uses[*i] -= 1;
                    if uses[*i] == 0 {
                        if let Some(v) = vals[*i].take() {
                            if wiring.producer[*i].is_some() {
                                live.remove(&v);
                            }
                        }
                    }
                }
            }
        }
        guard.end()?;
        self.activation_peak.set(live.peak);
        outputs
            .iter()
            .map(|o| {
                // A graph input asked for as an output is the value given.
                let v = wiring.ids.get(*o).and_then(|&i| vals[i].as_ref()).or_else(|| env.get(*o));
                match (v, model.constants.get(*o)) {
                    (Some(V::Dev { t, dtype }), _) => Ok(Value::Device { tensor: t.clone(), dtype: *dtype }),
                    (Some(V::Host { t, .. }), _) => Ok(Value::Host((**t).clone())),
                    (None, Some(t)) => Ok(Value::Host(t.clone())),
                    (None, None) => Err(OnnxError::Output { name: o.to_string(), msg: "was not computed".into() }),
                }
            })
            .collect()
    }

    /// Runs one node of the main graph or of a subgraph on its inputs: the inputs whose
    /// values decide the result's length come to the host first ([`ops::reads_back`]);
    /// control flow runs its subgraphs ([`Session::run_control`]); every other operator goes
    /// through [`ops::run`]. The host values it makes count as the run's work.
    async fn exec_node(&self, node: &Node, mut ins: Vec<Option<V>>, guard: &mut RunGuard) -> Result<Vec<V>> {
        // Data-dependent result length: those inputs come to the host first.
        for &i in ops::reads_back(&node.op_type) {
            if let Some(Some(v)) = ins.get_mut(i) {
                if let V::Dev { t, dtype } = &*v {
                    let h = host_of(t.to_vec_async().await?, t.dims().to_vec(), *dtype);
                    *v = V::host(h);
                }
            }
        }
        let outs = if crate::graph::is_control_flow(&node.op_type) {
            self.run_control(node, ins, guard).await?
        } else {
            let cx = Cx { consts: self, node };
            ops::run(&cx, &ins).map_err(|e| match e {
                OnnxError::Core(source) => OnnxError::Engine { context: node.context(), source },
                other => other,
            })?
        };
        guard.host_values(&outs);
        // an empty device result (a gather of no indices): the next operator would see it
        if let Some(v) = outs.iter().find(|v| matches!(v, V::Dev { .. }) && crate::host::checked_numel(v.dims()) == Some(0)) {
            return Err(
                node.err(format!("made an empty result of shape {:?} (zero-size tensors are not supported on the device)", v.dims()))
            );
        }
        Ok(outs)
    }

    /// The run plan for `outputs` (cached): the nodes they need and each value's reads.
    fn plan(&self, wiring: &Wiring, outputs: &[&str]) -> Result<Rc<RunPlan>> {
        let key: Vec<String> = outputs.iter().map(|o| o.to_string()).collect();
        if let Some(p) = self.plans.borrow().get(&key) {
            return Ok(p.clone());
        }
        let model = &*self.model;
        let mut ids = Vec::with_capacity(outputs.len());
        for o in outputs {
            let id = wiring.ids.get(*o).copied();
            let known =
                id.is_some_and(|i| wiring.producer[i].is_some()) || wiring.input(model, o).is_some() || model.constants.contains_key(*o);
            if !known {
                return Err(OnnxError::Output { name: o.to_string(), msg: "the graph has no such value".into() });
            }
            ids.push(id);
        }
        let plan = Rc::new(RunPlan::new(model, wiring, &ids));
        self.plans.borrow_mut().insert(key, plan.clone());
        Ok(plan)
    }

    fn constant(&self, name: &str) -> Option<V> {
        if let Some(&i) = self.param_index.get(name) {
            let t = &self.model.constants[name];
            return Some(V::dev(self.params[i].1.tensor(), t.dtype));
        }
        // Looked up by `&str` first: a run reads every constant, and neither the key nor the
        // name handed on is allocated again once cached.
        if let Some((t, n)) = self.host.borrow().get(name) {
            return Some(V::Host { t: t.clone(), name: Some(n.clone()) });
        }
        let t = self.model.constants.get(name)?;
        let cached = (Rc::new(t.clone()), Rc::<str>::from(name));
        self.host.borrow_mut().insert(name.to_string(), cached.clone());
        Some(V::Host { t: cached.0, name: Some(cached.1) })
    }

    fn check_input(&self, info: &ValueInfo, input: &Input) -> Result<V> {
        if let Input::Host(h) = input {
            h.check(&info.name)?;
        }
        let (dims, dtype) = match input {
            Input::Tensor(t) => (t.dims().to_vec(), device_element_type(t)),
            Input::Host(h) => (h.shape.clone(), h.dtype),
        };
        if dtype != info.dtype {
            return Err(OnnxError::Input {
                name: info.name.clone(),
                msg: format!("has element type {dtype} but the model expects {}", info.dtype),
            });
        }
        if !info.accepts(&dims) {
            return Err(OnnxError::Input {
                name: info.name.clone(),
                msg: format!("has shape {dims:?} but the model expects {}", info.shape_text()),
            });
        }
        let on_host = matches!(input, Input::Host(h) if keeps_on_host(h));
        if dims.contains(&0) && !on_host {
            return Err(OnnxError::Input {
                name: info.name.clone(),
                msg: format!("has shape {dims:?}; zero-size tensors are not supported"),
            });
        }
        match input {
            Input::Tensor(t) => {
                if !t.device().same(&self.device) {
                    return Err(OnnxError::Input {
                        name: info.name.clone(),
                        msg: format!("lives on {}, the session on {}", t.device().name(), self.device.name()),
                    });
                }
                // 8-bit and f16 storage (pg.fromPixels with dtype 'uint8' / 'float16') is
                // widened on the device, exactly: operators read f32, the element type stays
                // what the model declared.
                Ok(V::dev(t.widen()?, device_element_type(t)))
            }
            Input::Host(h) if on_host => Ok(V::Host { t: Rc::new(h.clone()), name: None }),
            Input::Host(h) => Ok(V::dev(upload(&self.device, h, &format!("input '{}'", info.name))?, h.dtype)),
        }
    }
}

/// The first inputs, for an error message (a model may have very many).
fn input_list(inputs: &[ValueInfo]) -> String {
    let mut s = inputs.iter().take(16).map(|i| format!("'{}' {} {}", i.name, i.dtype, i.shape_text())).collect::<Vec<_>>().join(", ");
    if inputs.len() > 16 {
        s.push_str(&format!(" and {} more", inputs.len() - 16));
    }
    s
}

/// Every `(operator, input index, name)` by which `nodes` read a value, in order, looking
/// through control flow: a subgraph's nodes read the outer values it captures by their own
/// operators, so an outer weight that a branch's `MatMulNBits` reads as its scales is a host
/// argument there, not a device weight of the `If` node. Names a subgraph defines itself (its
/// inputs, constants and node outputs, in `local`) are not outer reads and are left out.
fn constant_uses<'m>(nodes: &'m [Node], local: &HashSet<&'m str>) -> Vec<(&'m str, usize, &'m str)> {
    let mut uses = Vec::new();
    for n in nodes {
        let declared = if crate::graph::is_control_flow(&n.op_type) { crate::graph::declared_inputs(n) } else { n.inputs.len() };
        uses.extend(
            n.inputs[..declared]
                .iter()
                .enumerate()
                .filter(|(_, name)| !local.contains(name.as_str()))
                .map(|(i, name)| (n.op_type.as_str(), i, name.as_str())),
        );
        for (_, g) in crate::graph::graphs(n) {
            let mut inner = local.clone();
            inner.extend(g.inputs.iter().map(String::as_str));
            inner.extend(g.constants.keys().map(String::as_str));
            inner.extend(g.nodes.iter().flat_map(|m| m.outputs.iter().map(String::as_str)));
            uses.extend(constant_uses(&g.nodes, &inner));
        }
    }
    uses
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{
        attribute_type as at, data_type as dt, AttributeProto, DimValue, Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
        TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
    };
    use prost::Message;

    fn info(name: &str, elem_type: i32, dims: &[i64]) -> ValueInfoProto {
        let dim = dims.iter().map(|&d| Dimension { value: Some(DimValue::DimValue(d)), ..Default::default() }).collect();
        let tensor = TypeProtoTensor { elem_type, shape: Some(TensorShapeProto { dim }) };
        ValueInfoProto {
            name: name.into(),
            r#type: Some(TypeProto { tensor_type: Some(tensor), ..Default::default() }),
            ..Default::default()
        }
    }

    /// `y = float(x) * float(x)` with `x` of ONNX element type `elem_type`.
    fn cast_square(elem_type: i32) -> Model {
        let cast = NodeProto {
            input: vec!["x".into()],
            output: vec!["c".into()],
            name: "cast".into(),
            op_type: "Cast".into(),
            attribute: vec![AttributeProto { name: "to".into(), r#type: at::INT, i: dt::FLOAT as i64, ..Default::default() }],
            ..Default::default()
        };
        let mul = NodeProto {
            input: vec!["c".into(), "c".into()],
            output: vec!["y".into()],
            name: "mul".into(),
            op_type: "Mul".into(),
            ..Default::default()
        };
        let graph = GraphProto {
            node: vec![cast, mul],
            name: "g".into(),
            input: vec![info("x", elem_type, &[1, 4])],
            output: vec![info("y", dt::FLOAT, &[1, 4])],
            ..Default::default()
        };
        let m = ModelProto {
            ir_version: 8,
            opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
            graph: Some(graph),
            ..Default::default()
        };
        Model::from_bytes(&m.encode_to_vec()).unwrap()
    }

    /// Device tensors in 8-bit or f16 storage (what `pg.fromPixels` makes with dtype 'uint8' /
    /// 'float16') feed model inputs of that element type, widened exactly on the device; an f32
    /// tensor for a uint8 input is still refused by type.
    #[test]
    fn narrow_device_tensors_feed_inputs_of_their_type() {
        let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
        let s = Session::new(cast_square(dt::UINT8), &dev).unwrap();
        let x = Tensor::from_u8(&dev, &[0, 3, 128, 255], [1, 4]).unwrap();
        assert_eq!(x.storage_dtype(), pixelgrad_core::kernel::DType::U8);
        let y = s.run(&[("x", x.into())]).unwrap();
        let Value::Device { tensor, .. } = &y[0].1 else { panic!("a device output") };
        assert_eq!(tensor.to_vec().unwrap(), vec![0.0, 9.0, 16384.0, 65025.0]);
        let f = Tensor::from_vec(&dev, &[1.0; 4], [1, 4]).unwrap();
        let msg = s.run(&[("x", f.into())]).unwrap_err().to_string();
        assert!(msg.contains("float") && msg.contains("uint8"), "{msg}");

        let s = Session::new(cast_square(dt::FLOAT16), &dev).unwrap();
        let h: Vec<pixelgrad_core::half::f16> =
            [0.5f32, -2.0, 0.1, 1000.0].iter().map(|&v| pixelgrad_core::half::f16::from_f32(v)).collect();
        let x = Tensor::from_f16(&dev, &h, [1, 4]).unwrap();
        let y = s.run(&[("x", x.into())]).unwrap();
        let Value::Device { tensor, .. } = &y[0].1 else { panic!("a device output") };
        let want: Vec<f32> = h.iter().map(|v| v.to_f32() * v.to_f32()).collect();
        assert_eq!(tensor.to_vec().unwrap(), want);
    }
}
