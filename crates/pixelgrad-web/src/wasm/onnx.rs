//! An imported ONNX model on a runtime (`pg.loadOnnx`): inputs are fed by name, `run` returns
//! the graph outputs as device tensors in graph order.

use std::collections::HashMap;

use pixelgrad::onnx::{DType, HostTensor, Input, Model, Session, ValueInfo, WeightStorage};
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
}
