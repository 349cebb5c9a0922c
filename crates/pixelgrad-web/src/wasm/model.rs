//! A model on a runtime: one call per training/evaluation batch, async reads of the sums,
//! predict, save bytes, weight images.

use std::collections::HashMap;

use js_sys::{Float64Array, Object, Promise, Reflect, Uint8Array, Uint8ClampedArray};
use pixelgrad::Tensor;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::{js_err, DeviceTensor, Runtime};
use crate::net::Net;
use crate::{save, weights};

#[wasm_bindgen]
pub struct Model {
    pub(crate) net: Net,
}

fn dims(shape: &[u32]) -> Vec<usize> {
    shape.iter().map(|&d| d as usize).collect()
}

/// A promise of `[loss sum, correct, samples]` (a Float64Array; `correct` is NaN where the loss
/// has no accuracy), or `null` if nothing was added.
fn read_sums(taken: Option<(Tensor, usize)>) -> Promise {
    future_to_promise(async move {
        let Some((t, n)) = taken else { return Ok(JsValue::NULL) };
        let v = t.to_vec_async().await.map_err(js_err)?;
        let (l, c) = (v.first().copied().unwrap_or(f32::NAN), v.get(1).copied().unwrap_or(f32::NAN));
        Ok(Float64Array::from(&[l as f64, c as f64, n as f64][..]).into())
    })
}

#[wasm_bindgen]
impl Model {
    /// Builds the layers of `config` (JSON `{ layers: [...], seed }`) on the runtime's device.
    #[wasm_bindgen(constructor)]
    pub fn new(rt: &Runtime, config: &str, onnx: js_sys::Array) -> Result<Model, JsValue> {
        let cfg: serde_json::Value = serde_json::from_str(config).map_err(|e| js_err(format!("sequential: bad config: {e}")))?;
        // the .onnx files that `onnx` layers refer to by index
        let mut models = Vec::new();
        for (k, b) in onnx.iter().enumerate() {
            let bytes = js_sys::Uint8Array::new(&b).to_vec();
            let m = pixelgrad::onnx::Model::from_bytes(&bytes).map_err(|e| js_err(format!("sequential: imported model {k}: {e}")))?;
            models.push(std::rc::Rc::new(m));
        }
        Ok(Model { net: Net::new_with(rt.device(), cfg, models).map_err(js_err)? })
    }

    /// Chooses optimizer (fresh state) and loss.
    pub fn compile(&mut self, optimizer: &str, lr: f32, momentum: f32, loss: &str) -> Result<(), JsValue> {
        self.net.compile(optimizer, lr, momentum, loss).map_err(js_err)
    }

    /// Training precision: `f32` or `mixed` (see `Net::set_precision`).
    #[wasm_bindgen(js_name = setPrecision)]
    pub fn set_precision(&mut self, name: &str) -> Result<(), JsValue> {
        self.net.set_precision(name).map_err(js_err)
    }

    /// `{ requested, precision, fallback }`: what was asked, what trains, and why they differ
    /// (null when they do not).
    #[wasm_bindgen(js_name = precisionInfo)]
    pub fn precision_info(&self) -> Result<Object, JsValue> {
        let (asked, running, why) = self.net.precision_info();
        let o = Object::new();
        Reflect::set(&o, &"requested".into(), &asked.into())?;
        Reflect::set(&o, &"precision".into(), &running.into())?;
        Reflect::set(&o, &"fallback".into(), &why.map(JsValue::from).unwrap_or(JsValue::NULL))?;
        Ok(o)
    }

    /// Reads (async) the mixed-precision loss scale and the steps skipped for f16 overflow:
    /// `[scale, skipped]`, or null in f32.
    #[wasm_bindgen(js_name = readLossScale)]
    pub fn read_loss_scale(&self) -> Result<Promise, JsValue> {
        let both = match self.net.scaler() {
            Some(s) => Some(
                Tensor::concat(&[&s.scale().reshape([1]).map_err(js_err)?, &s.skipped().reshape([1]).map_err(js_err)?], 0)
                    .map_err(js_err)?,
            ),
            None => None,
        };
        Ok(future_to_promise(async move {
            let Some(t) = both else { return Ok(JsValue::NULL) };
            let v = t.to_vec_async().await.map_err(js_err)?;
            Ok(Float64Array::from(&[v[0] as f64, v[1] as f64][..]).into())
        }))
    }

    /// One training step on a batch `x` of `shape` `[n, ...input]` with targets `y` of
    /// `y_shape`: class indices `[n]` or float targets `[n, outputs]`, used as given.
    #[wasm_bindgen(js_name = trainStep)]
    pub fn train_step(&mut self, x: &[f32], shape: Vec<u32>, y: &[f32], y_shape: Vec<u32>) -> Result<(), JsValue> {
        self.net.train_step(x, &dims(&shape), y, &dims(&y_shape)).map_err(js_err)
    }

    /// One training step on rows `rows` of the device tensor `x` (`[N, ..input]`), gathered
    /// on the device; `y` the batch's targets.
    #[wasm_bindgen(js_name = trainStepRows)]
    pub fn train_step_rows(&mut self, x: &DeviceTensor, rows: &[u32], y: &[f32], y_shape: Vec<u32>) -> Result<(), JsValue> {
        self.net.train_step_rows(x.tensor(), rows, y, &dims(&y_shape)).map_err(js_err)
    }

    /// Reads (async) and resets the training sums: `[loss sum, correct, samples]` or null.
    #[wasm_bindgen(js_name = readTrain)]
    pub fn read_train(&mut self) -> Result<Promise, JsValue> {
        Ok(read_sums(self.net.take_train().map_err(js_err)?))
    }

    /// Adds one batch to the evaluation sums.
    #[wasm_bindgen(js_name = evalStep)]
    pub fn eval_step(&mut self, x: &[f32], shape: Vec<u32>, y: &[f32], y_shape: Vec<u32>) -> Result<(), JsValue> {
        self.net.eval_step(x, &dims(&shape), y, &dims(&y_shape)).map_err(js_err)
    }

    /// Whether the compiled loss reports an accuracy for targets of `y_shape` (MSE on float
    /// targets does not).
    #[wasm_bindgen(js_name = hasAccuracy)]
    pub fn has_accuracy(&self, y_shape: Vec<u32>) -> bool {
        self.net.has_accuracy(&dims(&y_shape))
    }

    /// Reads (async) and resets the evaluation sums.
    #[wasm_bindgen(js_name = readEval)]
    pub fn read_eval(&mut self) -> Result<Promise, JsValue> {
        Ok(read_sums(self.net.take_eval().map_err(js_err)?))
    }

    /// Model outputs `[n, classes]` on the device.
    pub fn predict(&self, x: &[f32], shape: Vec<u32>) -> Result<DeviceTensor, JsValue> {
        self.net.predict(x, &dims(&shape)).map(DeviceTensor::new).map_err(js_err)
    }

    /// Model outputs for a tensor already on this runtime's device (`pg.fromPixels`).
    #[wasm_bindgen(js_name = predictDevice)]
    pub fn predict_device(&self, x: &DeviceTensor) -> Result<DeviceTensor, JsValue> {
        self.net.predict_tensor(x.tensor()).map(DeviceTensor::new).map_err(js_err)
    }

    /// Layer `layer`'s output for `x` (a device tensor of this runtime), on the device, in the
    /// user's layout.
    pub fn activations(&self, x: &DeviceTensor, layer: u32) -> Result<DeviceTensor, JsValue> {
        self.net.activations(x.tensor(), layer as usize).map(DeviceTensor::new).map_err(js_err)
    }

    /// Sample 0 of layer `layer`'s output for `x` as `{ width, height, pixels }` (RGBA):
    /// channels as tiles, colour-mapped on the device (as `weightsImage`).
    #[wasm_bindgen(js_name = activationsImage)]
    pub fn activations_image(&self, x: &DeviceTensor, layer: u32) -> Result<Promise, JsValue> {
        let t = self.net.activations_internal(x.tensor(), layer as usize).map_err(js_err)?;
        let p = weights::activation_plan(&t).map_err(js_err)?;
        let rgb = weights::colour_map(&p.values).map_err(js_err)?;
        Ok(future_to_promise(async move {
            let v = rgb.to_vec_async().await.map_err(js_err)?;
            let img = weights::layout(&v, p.tiles, p.th, p.tw, p.cols).map_err(js_err)?;
            let o = Object::new();
            Reflect::set(&o, &"width".into(), &(img.width as u32).into())?;
            Reflect::set(&o, &"height".into(), &(img.height as u32).into())?;
            Reflect::set(&o, &"pixels".into(), &Uint8ClampedArray::from(&img.pixels[..]).into())?;
            Ok(o.into())
        }))
    }

    /// Keras-style summary table.
    pub fn summary(&self) -> String {
        self.net.summary()
    }

    /// Sample shape the model takes (NHWC for images).
    #[wasm_bindgen(getter, js_name = inputShape)]
    pub fn input_shape(&self) -> Vec<u32> {
        self.net.built.input.iter().map(|&d| d as u32).collect()
    }

    /// Number of outputs (0 if the model does not end flat).
    #[wasm_bindgen(getter)]
    pub fn classes(&self) -> u32 {
        self.net.classes().map(|c| c as u32).unwrap_or(0)
    }

    #[wasm_bindgen(getter, js_name = isCompiled)]
    pub fn is_compiled(&self) -> bool {
        self.net.is_compiled()
    }

    /// Throws the `drawWeights` error for a layer without drawable weights.
    #[wasm_bindgen(js_name = checkLayer)]
    pub fn check_layer(&self, layer: u32) -> Result<(), JsValue> {
        weights::plan(&self.net, layer as usize).map(|_| ()).map_err(js_err)
    }

    /// Layer `layer`'s weights as `{ width, height, pixels: Uint8ClampedArray }` (RGBA),
    /// normalised and colour-mapped on the device.
    #[wasm_bindgen(js_name = weightsImage)]
    pub fn weights_image(&self, layer: u32) -> Result<Promise, JsValue> {
        let p = weights::plan(&self.net, layer as usize).map_err(js_err)?;
        let rgb = weights::colour_map(&p.values).map_err(js_err)?;
        Ok(future_to_promise(async move {
            let v = rgb.to_vec_async().await.map_err(js_err)?;
            let img = weights::layout(&v, p.tiles, p.th, p.tw, p.cols).map_err(js_err)?;
            let o = Object::new();
            Reflect::set(&o, &"width".into(), &(img.width as u32).into())?;
            Reflect::set(&o, &"height".into(), &(img.height as u32).into())?;
            Reflect::set(&o, &"pixels".into(), &Uint8ClampedArray::from(&img.pixels[..]).into())?;
            Ok(o.into())
        }))
    }

    /// safetensors bytes of every parameter and buffer, with `metadata` (a JSON object of
    /// strings) in the header.
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self, metadata: &str) -> Result<Promise, JsValue> {
        let meta: HashMap<String, String> = serde_json::from_str(metadata).map_err(|e| js_err(format!("save: bad metadata: {e}")))?;
        let tensors = self.net.named_tensors();
        Ok(future_to_promise(async move {
            let mut host = Vec::with_capacity(tensors.len());
            for (name, t) in tensors {
                let v = t.to_vec_async().await.map_err(js_err)?;
                host.push((name, t.dims().to_vec(), v));
            }
            let bytes = save::to_bytes(&host, &meta).map_err(js_err)?;
            Ok(Uint8Array::from(&bytes[..]).into())
        }))
    }

    /// JSON `[{ name, shape }]` of every parameter and buffer, in save order.
    #[wasm_bindgen(js_name = weightInfo)]
    pub fn weight_info(&self) -> String {
        let list: Vec<serde_json::Value> =
            self.net.named_tensors().iter().map(|(n, t)| serde_json::json!({ "name": n, "shape": t.dims() })).collect();
        serde_json::Value::Array(list).to_string()
    }

    /// Reads (async) every parameter and buffer: an Array of Float32Array in `weightInfo` order.
    #[wasm_bindgen(js_name = readWeights)]
    pub fn read_weights(&self) -> Promise {
        let tensors = self.net.named_tensors();
        future_to_promise(async move {
            let arr = js_sys::Array::new();
            for (_, t) in tensors {
                let v = t.to_vec_async().await.map_err(js_err)?;
                arr.push(&js_sys::Float32Array::from(&v[..]).into());
            }
            Ok(arr.into())
        })
    }

    /// Replaces one weight by name (same shape).
    #[wasm_bindgen(js_name = setWeight)]
    pub fn set_weight(&self, name: &str, data: &[f32], shape: Vec<u32>) -> Result<(), JsValue> {
        self.net.set_weight(name, data, &dims(&shape)).map_err(js_err)
    }

    /// The model as ONNX bytes (input `input` in the user's layout, output `output`).
    #[wasm_bindgen(js_name = toOnnx)]
    pub fn to_onnx(&self) -> Promise {
        let tensors = self.net.named_tensors();
        // The export rebuilds the network on the CPU from the config, so it needs only the
        // values, read asynchronously here.
        let config = self.net.config.clone();
        let onnx = self.net.onnx.clone();
        future_to_promise(async move {
            let mut host = Vec::with_capacity(tensors.len());
            for (name, t) in tensors {
                let v = t.to_vec_async().await.map_err(js_err)?;
                host.push((name, t.dims().to_vec(), v));
            }
            let bytes = crate::net::Net::onnx_bytes(&config, &onnx, &host).map_err(js_err)?;
            Ok(Uint8Array::from(&bytes[..]).into())
        })
    }

    /// Loads safetensors bytes saved from the same architecture.
    #[wasm_bindgen(js_name = loadBytes)]
    pub fn load_bytes(&self, bytes: &[u8]) -> Result<(), JsValue> {
        self.net.load_bytes(bytes).map_err(js_err)
    }
}
