//! An imported ONNX model on a runtime (`pg.loadOnnx`): inputs are fed by name, `run` returns
//! the graph outputs as device tensors in graph order.

use std::collections::HashMap;

use pixelgrad::onnx::{DType, GenerateOptions, Generator, HostTensor, Input, Model, Session, StopReason, ValueInfo, WeightStorage};
use wasm_bindgen::prelude::*;

use super::limits::{max_work as parse_max_work, CancelHandle, Limited};
use super::{js_err, DeviceTensor, Runtime};

#[wasm_bindgen]
pub struct OnnxModel {
    session: std::rc::Rc<Session>,
    feeds: HashMap<String, Input>,
    /// [`pixelgrad::onnx::inspect::describe`]'s JSON, made once at load.
    described: serde_json::Value,
}

/// The files of a model's external data, by the `location` the model names
/// (`pg.loadOnnx(url, { externalData })`).
#[wasm_bindgen]
#[derive(Default)]
pub struct OnnxFiles {
    files: HashMap<String, Vec<u8>>,
}

#[wasm_bindgen]
impl OnnxFiles {
    #[wasm_bindgen(constructor)]
    pub fn new() -> OnnxFiles {
        OnnxFiles::default()
    }

    /// Adds (a copy of) file `location`'s bytes.
    pub fn add(&mut self, location: &str, bytes: &[u8]) {
        self.files.insert(location.to_string(), bytes.to_vec());
    }
}

/// Decodes a model's bytes, with its external data from `files` when any is given.
fn decode(bytes: &[u8], files: &OnnxFiles) -> Result<Model, pixelgrad::onnx::OnnxError> {
    if files.files.is_empty() {
        Model::from_bytes(bytes)
    } else {
        Model::from_bytes_with_external(bytes, &files.files)
    }
}

/// `pg.inspectOnnx`: JSON of [`pixelgrad::onnx::inspect::inspect`] (the model loaded on the
/// host to find what it refuses; nothing is uploaded or run).
#[wasm_bindgen(js_name = inspectOnnx)]
pub fn inspect_onnx(bytes: &[u8], files: &OnnxFiles) -> Result<String, JsValue> {
    use pixelgrad::onnx::external::External;
    let source = if files.files.is_empty() { External::None } else { External::Bytes(&files.files) };
    Ok(pixelgrad::onnx::inspect::inspect(bytes, &source).map_err(js_err)?.to_json().to_string())
}

fn infos(v: &[ValueInfo]) -> String {
    let list: Vec<serde_json::Value> = v
        .iter()
        .map(|i| {
            let shape: serde_json::Value = match &i.shape {
                None => serde_json::Value::Null,
                Some(d) => d
                    .iter()
                    .map(|x| match x {
                        pixelgrad::onnx::Dim::Fixed(n) => serde_json::json!(n),
                        pixelgrad::onnx::Dim::Named(s) => serde_json::json!(s),
                        pixelgrad::onnx::Dim::Unknown => serde_json::Value::Null,
                    })
                    .collect(),
            };
            serde_json::json!({ "name": i.name, "shape": shape, "dtype": i.dtype.name() })
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}

#[wasm_bindgen]
impl OnnxModel {
    /// Decodes `bytes` (an .onnx file; its external data from `files`) and uploads its weights
    /// to the runtime's device, float weights stored as `precision` says (`auto`, `f32` or
    /// `f16`).
    #[wasm_bindgen(constructor)]
    pub fn new(rt: &Runtime, bytes: &[u8], precision: &str, files: &OnnxFiles) -> Result<OnnxModel, JsValue> {
        let storage = match precision {
            "auto" => WeightStorage::Auto,
            "f32" => WeightStorage::F32,
            "f16" => WeightStorage::F16,
            other => return Err(js_err(format!("loadOnnx: precision '{other}' (use 'auto', 'f32' or 'f16')"))),
        };
        let model = decode(bytes, files).map_err(js_err)?;
        let described = pixelgrad::onnx::inspect::describe(bytes).map_err(js_err)?.to_json();
        let session = Session::with_storage(std::rc::Rc::new(model), rt.device(), storage).map_err(js_err)?;
        Ok(OnnxModel { session: std::rc::Rc::new(session), feeds: HashMap::new(), described })
    }

    /// Whether quantised results that outlive the next node are kept in 8-bit tensors (the
    /// default) or in f32 ([`Session::set_int8_activations`]); the outputs are the same.
    #[wasm_bindgen(js_name = setInt8Activations)]
    pub fn set_int8_activations(&self, on: bool) {
        self.session.set_int8_activations(on);
    }

    /// JSON `{ precision, precisionGroups, path, weightStorage, weightBytes, deviceWeightBytes,
    /// activationStorage, activationBytes, arithmetic, shaderF16 }`: what computes in which
    /// precision and how the weights are held (device bytes count the constants uploaded so
    /// far: read it after a run). `activationStorage` is how quantised activations that
    /// outlive the next node are kept (`8-bit`, or `f32` in the WebGL1 mode);
    /// `activationBytes` the most bytes the values between nodes held at once in the last run
    /// that walked the graph ([`Session::activation_bytes`]). `arithmetic`
    /// is how the matrix products compute on the float weights ([`Session::arithmetic`]):
    /// `f32` with f32 weights; with f16 weights `f32 (f16 weights read directly)` on WebGPU
    /// GPUs, `f32 (widened)` where they are widened first; `shaderF16` says whether the WebGPU
    /// adapter offers half-precision arithmetic (null on the other backends). With them, the
    /// file's description ([`pixelgrad::onnx::inspect::Report::to_json`]): `irVersion`,
    /// `producer`, `opsets`, `nodes`, `operators` (count and backends of each),
    /// `weightBytesByType`, `packedWeights` (MatMulNBits weights packed vs f32), `externalData`,
    /// `loads`, `refused`.
    pub fn info(&self) -> String {
        let p = self.session.model().precision();
        let mut info = serde_json::json!({
            "precision": p.summary(),
            "precisionGroups": { "int8": p.int8, "f32": p.f32 },
            "path": self.session.int8_path().unwrap_or("f32"),
            "weightStorage": self.session.weight_storage(),
            "weightBytes": self.session.model().weight_bytes(),
            "deviceWeightBytes": self.session.device_weight_bytes(),
            "deviceTableBytes": self.session.device_table_bytes(),
            "activationStorage": self.session.activation_storage(),
            "activationBytes": self.session.activation_bytes(),
            "arithmetic": self.session.arithmetic(),
            "shaderF16": self.session.device().backend().caps().shader_f16,
        });
        if let (Some(info), Some(d)) = (info.as_object_mut(), self.described.as_object()) {
            for (k, v) in d {
                if !matches!(k.as_str(), "inputs" | "outputs") {
                    info.insert(k.clone(), v.clone());
                }
            }
        }
        info.to_string()
    }

    /// JSON `[{ name, shape (numbers, names of dynamic sizes, or null), dtype }]`.
    pub fn inputs(&self) -> String {
        infos(self.session.inputs())
    }

    pub fn outputs(&self) -> String {
        infos(self.session.outputs())
    }

    /// Sets input `name` to a device tensor (float).
    pub fn feed(&mut self, name: &str, t: &DeviceTensor) {
        self.feeds.insert(name.to_string(), Input::Tensor(t.tensor().clone()));
    }

    /// Sets input `name` to whole numbers of element type `dtype` (`int64`, `int32`, `uint8`...).
    #[wasm_bindgen(js_name = feedInts)]
    pub fn feed_ints(&mut self, name: &str, data: &[i32], shape: Vec<u32>, dtype: &str) -> Result<(), JsValue> {
        let dt = match dtype {
            "int64" => DType::I64,
            "int32" => DType::I32,
            "int16" => DType::I16,
            "int8" => DType::I8,
            "uint8" => DType::U8,
            "uint16" => DType::U16,
            "bool" => DType::Bool,
            other => return Err(js_err(format!("input '{name}': cannot feed integers as {other}"))),
        };
        let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        if dims.iter().product::<usize>() != data.len() {
            return Err(js_err(format!("input '{name}': {} values do not fill shape {dims:?}", data.len())));
        }
        self.feeds.insert(name.to_string(), Input::Host(HostTensor::ints(dt, dims, data.iter().map(|&v| v as i64).collect())));
        Ok(())
    }

    /// Runs with the fed inputs (then forgets them); resolves to the outputs in graph order,
    /// on the device. Asynchronous because operators whose result length depends on the data
    /// (`NonMaxSuppression`, `NonZero`) read their inputs back while the graph runs, which
    /// WebGPU can only do by waiting for the GPU.
    ///
    /// `cancel` stops the run at its next check (before its next primitive; JS cancels it from
    /// an `AbortSignal`), `max_work` bounds the estimated work of every primitive the run
    /// launches ([`super::limits`]). A run with `max_work` walks the graph instead of replaying
    /// a recorded plan, so every primitive is counted.
    pub fn run(&mut self, max_work: Option<f64>, cancel: &CancelHandle) -> js_sys::Promise {
        let feeds = std::mem::take(&mut self.feeds);
        let session = self.session.clone();
        let token = cancel.token();
        wasm_bindgen_futures::future_to_promise(async move {
            let max_work = parse_max_work(max_work, "onnx.run").map_err(js_err)?;
            let inputs: Vec<(&str, Input)> = feeds.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            let replay = session.kernel_replay();
            if max_work.is_some() {
                session.set_kernel_replay(false);
            }
            let run = Limited::new(session.run_async(&inputs), session.device().clone(), max_work, Some(token), "onnx.run").await;
            if max_work.is_some() {
                session.set_kernel_replay(replay);
            }
            let outs = run.map_err(js_err)?;
            let arr = js_sys::Array::new();
            for (_, v) in outs {
                let t = v.tensor(session.device()).map_err(js_err)?;
                arr.push(&JsValue::from(DeviceTensor::new(t)));
            }
            Ok(arr.into())
        })
    }

    /// `model.generate(promptIds, options)`: generates token ids after `prompt` with the
    /// model's decoder (see [`pixelgrad::onnx::generate`]: the key/value cache stays on the
    /// device, one row of logits is read back per token). `options` is JSON `{ maxTokens,
    /// temperature, topK, topP, stop, seed, useCache }` (each optional); `on_token` is called
    /// with each token as it comes (returning `false` stops; a throw stops and rejects with
    /// it); `between` returns a promise awaited after each token (JS passes a `setTimeout(0)`
    /// one, so the page draws between tokens). Resolves to JSON `{ tokens, stopped,
    /// stopToken, cached, steps, prefillMs, decodeMs, tokensPerSecond,
    /// decodeTokensPerSecond }`.
    pub fn generate(
        &self,
        prompt: Vec<u32>,
        options: &str,
        on_token: Option<js_sys::Function>,
        between: Option<js_sys::Function>,
        cancel: &CancelHandle,
    ) -> js_sys::Promise {
        let session = self.session.clone();
        let token = cancel.token();
        let options = options.to_string();
        wasm_bindgen_futures::future_to_promise(async move {
            let mut opts = generate_options(&options).map_err(js_err)?;
            if let Some(f) = between {
                opts.between_tokens = Some(std::rc::Rc::new(move || {
                    let p = f.call0(&JsValue::NULL).ok().and_then(|v| v.dyn_into::<js_sys::Promise>().ok());
                    Box::pin(async move {
                        if let Some(p) = p {
                            let _ = wasm_bindgen_futures::JsFuture::from(p).await;
                        }
                    })
                }));
            }
            let generator = Generator::new(&session).map_err(js_err)?;
            let thrown = std::cell::RefCell::new(None);
            let mut each = |t: u32| match &on_token {
                None => true,
                Some(f) => match f.call1(&JsValue::NULL, &JsValue::from(t)) {
                    Ok(v) => v.as_bool() != Some(false),
                    Err(e) => {
                        *thrown.borrow_mut() = Some(e);
                        false
                    }
                },
            };
            let run = generator.generate_async(&prompt, &opts, &mut each, &clock_ms);
            let g = Limited::new(run, session.device().clone(), None, Some(token), "onnx.generate").await.map_err(js_err)?;
            if let Some(e) = thrown.take() {
                return Err(e);
            }
            let (stopped, stop_token) = match g.stopped {
                StopReason::MaxTokens => ("maxTokens", None),
                StopReason::StopToken(t) => ("stop", Some(t)),
                StopReason::Callback => ("onToken", None),
            };
            let out = serde_json::json!({
                "tokens": g.tokens,
                "stopped": stopped,
                "stopToken": stop_token,
                "cached": g.cached,
                "steps": g.steps,
                "prefillMs": g.prefill_ms,
                "decodeMs": g.decode_ms,
                "tokensPerSecond": g.tokens_per_second,
                "decodeTokensPerSecond": g.decode_tokens_per_second,
            });
            Ok(JsValue::from_str(&out.to_string()))
        })
    }
}

/// `performance.now()` in milliseconds (`Date.now()` where there is no `performance`).
fn clock_ms() -> f64 {
    let perf = js_sys::Reflect::get(&js_sys::global(), &"performance".into()).ok().filter(|p| p.is_object());
    perf.and_then(|p| {
        let now = js_sys::Reflect::get(&p, &"now".into()).ok()?.dyn_into::<js_sys::Function>().ok()?;
        now.call0(&p).ok()?.as_f64()
    })
    .unwrap_or_else(js_sys::Date::now)
}

/// [`GenerateOptions`] from `model.generate`'s options as JSON, every field checked.
fn generate_options(json: &str) -> Result<GenerateOptions, String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("onnx.generate: options: {e}"))?;
    let o = v.as_object().ok_or("onnx.generate: options must be an object")?;
    let mut opts = GenerateOptions::default();
    let whole = |k: &str, max: f64| -> Result<Option<u64>, String> {
        match o.get(k) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(x) => match x.as_f64() {
                Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= max => Ok(Some(n as u64)),
                _ => Err(format!("onnx.generate: {k} must be a whole number from 0 to {max}, got {x}")),
            },
        }
    };
    let number = |k: &str| -> Result<Option<f32>, String> {
        match o.get(k) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(x) => x.as_f64().map(|n| Some(n as f32)).ok_or_else(|| format!("onnx.generate: {k} must be a number, got {x}")),
        }
    };
    const SAFE: f64 = 9_007_199_254_740_991.0;
    if let Some(n) = whole("maxTokens", u32::MAX as f64)? {
        opts.max_tokens = n as usize;
    }
    if let Some(n) = whole("topK", u32::MAX as f64)? {
        opts.top_k = n as usize;
    }
    if let Some(n) = whole("seed", SAFE)? {
        opts.seed = n;
    }
    if let Some(t) = number("temperature")? {
        opts.temperature = t;
    }
    if let Some(p) = number("topP")? {
        opts.top_p = p;
    }
    match o.get("useCache") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Bool(b)) => opts.use_cache = *b,
        Some(x) => return Err(format!("onnx.generate: useCache must be true or false, got {x}")),
    }
    match o.get("stop") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Array(a)) => {
            for x in a {
                match x.as_u64() {
                    Some(t) if t <= u32::MAX as u64 => opts.stop.push(t as u32),
                    _ => return Err(format!("onnx.generate: stop must hold token ids (whole numbers ≥ 0), got {x}")),
                }
            }
        }
        Some(x) => return Err(format!("onnx.generate: stop must be an array of token ids, got {x}")),
    }
    Ok(opts)
}
