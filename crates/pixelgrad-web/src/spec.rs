//! Layer configs as the JavaScript API writes them (`{"type": "dense", "units": 10, ...}`),
//! turned into engine layers with shape inference.
//!
//! Users give image inputs as NHWC (`inputShape: [h, w, c]`, TF.js style); the engine's conv and
//! pooling ops are NCHW. The built network therefore starts with a `Permute([0, 3, 1, 2])` and
//! tracks shapes in engine layout, while summaries print the user's layout.

use pixelgrad::nn::layers::{Activation, BatchNorm, Conv2d, Dropout, Flatten, Linear, MaxPool2d, Permute};
use pixelgrad::nn::{Init, Module, Sequential};
use pixelgrad::{Device, Error, Result};
use std::rc::Rc;

use serde_json::Value;

/// Shape of one sample between layers, in engine layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Flat(usize),
    /// Channels, height, width.
    Image(usize, usize, usize),
}

impl Shape {
    /// The user's (NHWC) view, without the batch axis.
    pub fn user_dims(&self) -> Vec<usize> {
        match *self {
            Shape::Flat(n) => vec![n],
            Shape::Image(c, h, w) => vec![h, w, c],
        }
    }
    pub fn numel(&self) -> usize {
        match *self {
            Shape::Flat(n) => n,
            Shape::Image(c, h, w) => c * h * w,
        }
    }
}

/// How a layer's weights are drawn by `drawWeights`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightView {
    /// Dense weights `[h*w, units]` over an image input: one `h`x`w` tile per unit.
    UnitTiles { h: usize, w: usize },
    /// Dense weights drawn as one `[in, units]` heatmap.
    Heatmap,
    /// Conv filters `[out, in, k, k]`: one `k`x`k` tile per (filter, input channel).
    Filters,
}

/// What the network knows about one layer as the user listed it.
#[derive(Clone, Debug)]
pub struct LayerInfo {
    /// The config's `type` (`dense`, `conv2d`...).
    pub kind: String,
    /// Output shape of one sample, user layout.
    pub out: Vec<usize>,
    pub params: usize,
    /// Name of its weight parameter in the [`Sequential`] (e.g. `1.weight`), if it has one.
    pub weight: Option<String>,
    pub view: Option<WeightView>,
    /// Modules of the [`Sequential`] up to and including this layer (its activation too):
    /// `seq.layers()[..end]` computes its output (`model.activations`).
    pub end: usize,
}

/// A network built from a config.
pub struct Built {
    pub seq: Sequential,
    pub layers: Vec<LayerInfo>,
    /// Sample shape the user feeds (NHWC for images).
    pub input: Vec<usize>,
    pub output: Shape,
}

fn bad(what: &str, msg: impl Into<String>) -> Error {
    Error::invalid(what, msg)
}

/// Largest weight tensor a layer may ask for (2^28 floats = 1 GiB): a typo such as
/// `units: 1e8` must be an error, not an allocation failure that aborts the wasm module.
const MAX_WEIGHTS: usize = 1 << 28;

fn check_size(layer: &str, dims: &[usize]) -> Result<()> {
    let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    match n {
        Some(n) if n <= MAX_WEIGHTS => Ok(()),
        _ => Err(bad(layer, format!("weights of shape {dims:?} exceed the limit of {MAX_WEIGHTS} values"))),
    }
}

/// A non-negative integer field; `default` when absent.
fn uint(v: &Value, key: &str, layer: &str, default: Option<usize>) -> Result<usize> {
    match v.get(key) {
        None | Some(Value::Null) => default.ok_or_else(|| bad(layer, format!("'{key}' is required"))),
        Some(x) => match x.as_f64() {
            Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 1e9 => Ok(f as usize),
            _ => Err(bad(layer, format!("'{key}' must be a non-negative whole number, got {x}"))),
        },
    }
}

/// A size given as `k` or `[k, k]` (only square windows are supported).
fn square(v: &Value, key: &str, layer: &str, default: Option<usize>) -> Result<usize> {
    match v.get(key) {
        Some(Value::Array(a)) => {
            let dims: Vec<usize> = a.iter().filter_map(|x| x.as_u64().map(|u| u as usize)).collect();
            match dims.as_slice() {
                [k] => Ok(*k),
                [a, b] if a == b => Ok(*a),
                _ => Err(bad(layer, format!("'{key}' must be a number or a square [k, k], got {}", Value::Array(a.clone())))),
            }
        }
        _ => uint(v, key, layer, default),
    }
}

fn activation(v: &Value, layer: &str) -> Result<Option<Activation>> {
    match v.get("activation") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Activation::parse(s)
            .ok_or_else(|| bad(layer, format!("unknown activation '{s}' (linear, relu, leakyRelu, sigmoid, tanh, gelu, softmax)"))),
        Some(x) => Err(bad(layer, format!("'activation' must be a string, got {x}"))),
    }
}

fn input_shape(v: &Value, layer: &str) -> Result<Option<Shape>> {
    let Some(s) = v.get("inputShape").filter(|s| !s.is_null()) else { return Ok(None) };
    let dims: Option<Vec<usize>> =
        s.as_array().map(|a| a.iter().filter_map(|x| x.as_u64().map(|u| u as usize)).filter(|&u| u > 0).collect());
    let n = s.as_array().map(|a| a.len()).unwrap_or(0);
    match dims {
        Some(d) if d.len() == n && n == 1 => Ok(Some(Shape::Flat(d[0]))),
        Some(d) if d.len() == n && n == 3 => Ok(Some(Shape::Image(d[2], d[0], d[1]))),
        _ => Err(bad(layer, format!("inputShape must be [features] or [height, width, channels] with positive sizes, got {s}"))),
    }
}

/// Builds the network for `config = {"layers": [...], "seed": n}` on `dev`.
pub fn build(dev: &Device, config: &Value) -> Result<Built> {
    build_with(dev, config, &[])
}

/// [`build`] where `{"type": "onnx", "model": k, ...}` layers use the imported model `onnx[k]`.
pub fn build_with(dev: &Device, config: &Value, onnx: &[Rc<pixelgrad::onnx::Model>]) -> Result<Built> {
    let layers = config.get("layers").and_then(Value::as_array).ok_or_else(|| bad("sequential", "the config has no 'layers' list"))?;
    if layers.is_empty() {
        return Err(bad("sequential", "a model needs at least one layer"));
    }
    let seed = config.get("seed").and_then(Value::as_u64).unwrap_or(0);
    let mut init = Init::new(seed);
    let mut seq = Sequential::new();
    let mut infos = Vec::with_capacity(layers.len());

    let first = layers.first().map(|l| input_shape(l, "layer 0")).transpose()?.flatten();
    let Some(input) = first else {
        return Err(bad("sequential", "the first layer needs an inputShape, e.g. layers.dense({ units: 10, inputShape: [64] })"));
    };
    if let Shape::Image(..) = input {
        // NHWC → NCHW at the network's entrance (images are given as `[n, h, w, c]`)
        seq.add(Box::new(Permute(vec![0, 3, 1, 2])));
    }
    let mut cur = input;
    for (i, l) in layers.iter().enumerate() {
        let kind = l.get("type").and_then(Value::as_str).unwrap_or("").to_string();
        let name = format!("layer {i} ({kind})");
        if i > 0 && input_shape(l, &name)?.is_some_and(|s| s != cur) {
            return Err(bad(
                &name,
                format!("inputShape {:?} does not match the previous layer's output {:?}", l.get("inputShape"), cur.user_dims()),
            ));
        }
        let at_input = cur == input && infos.is_empty();
        let index = seq.len();
        let (mut weight, mut view, mut params) = (None, None, 0);
        let act;
        match kind.as_str() {
            "dense" => {
                let units = uint(l, "units", &name, None)?;
                let Shape::Flat(n) = cur else {
                    return Err(bad(&name, format!("expects a flat input but gets {:?}; add layers.flatten() before it", cur.user_dims())));
                };
                if units == 0 {
                    return Err(bad(&name, "'units' must be at least 1"));
                }
                check_size(&name, &[n, units])?;
                let lin = Linear::new(dev, n, units, &mut init)?;
                params = lin.num_params();
                seq.add(Box::new(lin));
                weight = Some(format!("{index}.weight"));
                view = Some(dense_view(input, at_input, n));
                cur = Shape::Flat(units);
                act = activation(l, &name)?;
            }
            "conv2d" => {
                let Shape::Image(c, h, w) = cur else {
                    return Err(bad(&name, format!("expects an image input [h, w, c] but gets {:?}", cur.user_dims())));
                };
                let filters = uint(l, "filters", &name, None)?;
                let k = square(l, "kernelSize", &name, None)?;
                let stride = square(l, "strides", &name, Some(1))?;
                let same = match l.get("padding").and_then(Value::as_str).unwrap_or("valid") {
                    "valid" => false,
                    "same" => true,
                    other => return Err(bad(&name, format!("padding must be 'valid' or 'same', got '{other}'"))),
                };
                if filters == 0 || k == 0 || stride == 0 {
                    return Err(bad(&name, "filters, kernelSize and strides must be at least 1"));
                }
                let pad = if same {
                    if k % 2 == 0 || stride != 1 {
                        return Err(bad(&name, "padding 'same' needs an odd kernelSize and strides 1"));
                    }
                    (k - 1) / 2
                } else {
                    0
                };
                if h + 2 * pad < k || w + 2 * pad < k {
                    return Err(bad(&name, format!("a {k}x{k} kernel does not fit the {h}x{w} input")));
                }
                check_size(&name, &[filters, c, k, k])?;
                check_size(&name, &[filters, h, w])?;
                let conv = Conv2d::new(dev, c, filters, k, stride, pad, &mut init)?;
                let (oh, ow) = conv.out_hw(h, w);
                params = conv.num_params();
                seq.add(Box::new(conv));
                weight = Some(format!("{index}.weight"));
                view = Some(WeightView::Filters);
                cur = Shape::Image(filters, oh, ow);
                act = activation(l, &name)?;
            }
            "maxPooling2d" => {
                let Shape::Image(c, h, w) = cur else {
                    return Err(bad(&name, format!("expects an image input [h, w, c] but gets {:?}", cur.user_dims())));
                };
                let p = square(l, "poolSize", &name, Some(2))?;
                let s = square(l, "strides", &name, Some(p))?;
                if p == 0 || s == 0 || h < p || w < p {
                    return Err(bad(&name, format!("a {p}x{p} pool with strides {s} does not fit the {h}x{w} input")));
                }
                let mut pool = MaxPool2d::new(p);
                pool.stride = s;
                seq.add(Box::new(pool));
                cur = Shape::Image(c, (h - p) / s + 1, (w - p) / s + 1);
                act = None;
            }
            "flatten" => {
                seq.add(Box::new(Flatten));
                cur = Shape::Flat(cur.numel());
                act = None;
            }
            "dropout" => {
                let rate = l.get("rate").and_then(Value::as_f64).ok_or_else(|| bad(&name, "'rate' (a number in [0, 1)) is required"))?;
                seq.add(Box::new(Dropout::new(rate as f32, init.next_seed())?));
                act = None;
            }
            "batchNormalization" => {
                let bn = match cur {
                    Shape::Flat(n) => BatchNorm::new_1d(dev, n)?,
                    Shape::Image(c, _, _) => BatchNorm::new_2d(dev, c)?,
                };
                params = bn.num_params();
                seq.add(Box::new(bn));
                act = None;
            }
            "activation" => {
                act = activation(l, &name)?;
            }
            "onnx" => {
                // An imported graph (or its part up to `output`) as a layer; images reach it in
                // NCHW, as ONNX models expect (permuted to NHWC by the layer for a model whose
                // input is declared [N, H, W, C]). Its output shape is found by running it once.
                let k = uint(l, "model", &name, None)?;
                let model = onnx.get(k).ok_or_else(|| bad(&name, format!("no imported model {k} was given")))?;
                let input = l.get("input").and_then(Value::as_str);
                let output = l.get("output").and_then(Value::as_str);
                let layer =
                    pixelgrad::onnx::OnnxLayer::from_model(model.clone(), dev, input, output).map_err(|e| bad(&name, e.to_string()))?;
                let mut probe = vec![1usize];
                probe.extend(match cur {
                    Shape::Flat(n) => vec![n],
                    Shape::Image(c, h, w) => vec![c, h, w],
                });
                let y = {
                    let _g = pixelgrad::no_grad();
                    layer
                        .forward(&pixelgrad::Tensor::zeros(dev, probe.clone())?, pixelgrad::nn::Mode::Eval)
                        .map_err(|e| bad(&name, format!("on input {:?}: {e}", &probe[1..])))?
                };
                cur = match *y.dims() {
                    [1, n] => Shape::Flat(n),
                    [1, c, h, w] => Shape::Image(c, h, w),
                    ref other => {
                        return Err(bad(&name, format!("output {other:?} is neither [1, n] nor [1, c, h, w]; pick another output")))
                    }
                };
                params = layer.num_params();
                seq.add(Box::new(layer));
                act = activation(l, &name)?;
            }
            other => return Err(bad(
                &format!("layer {i}"),
                format!(
                    "unknown layer type '{other}' (dense, conv2d, maxPooling2d, flatten, dropout, batchNormalization, activation, onnx)"
                ),
            )),
        }
        match l.get("trainable") {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => seq.layers()[index..].iter().for_each(|m| m.set_trainable(false)),
            Some(other) => return Err(bad(&name, format!("'trainable' must be true or false, got {other}"))),
        }
        if let Some(a) = act {
            seq.add(Box::new(a));
        }
        infos.push(LayerInfo { kind, out: cur.user_dims(), params, weight, view, end: seq.len() });
    }
    Ok(Built { seq, layers: infos, input: input.user_dims(), output: cur })
}

/// Dense weights over the raw input image draw as per-unit tiles; any other dense as a heatmap.
fn dense_view(input: Shape, at_input: bool, n: usize) -> WeightView {
    if at_input {
        match input {
            Shape::Image(1, h, w) => return WeightView::UnitTiles { h, w },
            Shape::Flat(f) => {
                let s = (f as f64).sqrt().round() as usize;
                if s > 1 && s * s == f && f == n {
                    return WeightView::UnitTiles { h: s, w: s };
                }
            }
            _ => {}
        }
    }
    WeightView::Heatmap
}

/// A Keras-style summary table: one row per layer as the user listed them.
pub fn summary(b: &Built) -> String {
    let mut s = String::new();
    s.push_str(&format!("{:<4}{:<22}{:<18}{:>10}\n", "#", "Layer (type)", "Output shape", "Params"));
    s.push_str(&format!("{}\n", "-".repeat(54)));
    for (i, l) in b.layers.iter().enumerate() {
        let shape = format!("[null, {}]", l.out.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "));
        s.push_str(&format!("{:<4}{:<22}{:<18}{:>10}\n", i, l.kind, shape, l.params));
    }
    s.push_str(&format!("{}\n", "-".repeat(54)));
    s.push_str(&format!("Input: [null, {}]\n", b.input.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")));
    s.push_str(&format!("Total params: {}\n", b.layers.iter().map(|l| l.params).sum::<usize>()));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad::cpu::CpuBackend;
    use pixelgrad::nn::Mode;
    use pixelgrad::Tensor;

    fn dev() -> Device {
        Device::new(CpuBackend::new())
    }

    #[test]
    fn conv_model_shapes_follow_nhwc_input() {
        let cfg = serde_json::json!({"layers": [
            {"type": "conv2d", "filters": 4, "kernelSize": 3, "padding": "same", "activation": "relu", "inputShape": [8, 8, 1]},
            {"type": "maxPooling2d", "poolSize": 2},
            {"type": "flatten"},
            {"type": "dense", "units": 10}
        ]});
        let d = dev();
        let b = build(&d, &cfg).unwrap();
        assert_eq!(b.input, vec![8, 8, 1]);
        assert_eq!(b.layers[0].out, vec![8, 8, 4]);
        assert_eq!(b.layers[1].out, vec![4, 4, 4]);
        assert_eq!(b.layers[2].out, vec![64]);
        assert_eq!(b.output, Shape::Flat(10));
        assert_eq!(b.layers[0].params, 4 * 9 + 4);
        let x = Tensor::ones(&d, [2, 8, 8, 1]).unwrap();
        assert_eq!(b.seq.forward(&x, Mode::Eval).unwrap().dims(), &[2, 10]);
        assert!(summary(&b).contains("Total params"));
    }

    #[test]
    fn dense_over_square_input_draws_tiles() {
        let cfg = serde_json::json!({"layers": [
            {"type": "dense", "units": 8, "inputShape": [64], "activation": "relu"},
            {"type": "dense", "units": 10}
        ]});
        let b = build(&dev(), &cfg).unwrap();
        assert_eq!(b.layers[0].view, Some(WeightView::UnitTiles { h: 8, w: 8 }));
        assert_eq!(b.layers[1].view, Some(WeightView::Heatmap));
        assert_eq!(b.layers[1].weight.as_deref(), Some("2.weight"));
    }

    #[test]
    fn trainable_false_freezes_the_layer() {
        let cfg = serde_json::json!({"layers": [
            {"type": "dense", "units": 4, "inputShape": [3], "trainable": false},
            {"type": "dense", "units": 2}
        ]});
        let b = build(&dev(), &cfg).unwrap();
        assert_eq!(b.seq.num_params(), 3 * 4 + 4 + 4 * 2 + 2);
        assert_eq!(b.seq.num_trainable(), 4 * 2 + 2);
        let bad = serde_json::json!({"layers": [{"type": "dense", "units": 4, "inputShape": [3], "trainable": "no"}]});
        assert!(build(&dev(), &bad).err().expect("a bad trainable value is an error").to_string().contains("'trainable'"));
    }

    #[test]
    fn bad_configs_are_errors_naming_the_layer() {
        let no_input = serde_json::json!({"layers": [{"type": "dense", "units": 3}]});
        assert!(build(&dev(), &no_input).err().unwrap().to_string().contains("inputShape"));
        let dense_on_image = serde_json::json!({"layers": [{"type": "dense", "units": 3, "inputShape": [4, 4, 1]}]});
        assert!(build(&dev(), &dense_on_image).err().unwrap().to_string().contains("flatten"));
        let unknown = serde_json::json!({"layers": [{"type": "lstm", "inputShape": [3]}]});
        assert!(build(&dev(), &unknown).err().unwrap().to_string().contains("lstm"));
        let huge = serde_json::json!({"layers": [{"type": "dense", "units": 100000000, "inputShape": [784]}]});
        assert!(build(&dev(), &huge).err().unwrap().to_string().contains("exceed"));
        let act = serde_json::json!({"layers": [{"type": "dense", "units": 3, "inputShape": [3], "activation": "swish"}]});
        assert!(build(&dev(), &act).err().unwrap().to_string().contains("swish"));
    }
}
