//! Layer configs as the JavaScript API writes them (`{"type": "dense", "units": 10, ...}`):
//! the one model description, [`ModelConfig`] (pixelgrad-nn's `config`), plus what only the
//! browser package has: the `seed` given to `sequential`, the imported ONNX models of `onnx`
//! layers, and how `drawWeights` shows each layer.
//!
//! Users give image inputs as NHWC (`inputShape: [h, w, c]`, TF.js style, the description's
//! default `channelsLast`); the engine's conv and pooling ops are NCHW, so the built network
//! starts with a `Permute([0, 3, 1, 2])` and summaries print the user's layout.

use pixelgrad::nn::config::{BuiltLayer, DataFormat, Imported};
use pixelgrad::nn::{ModelConfig, Module, Sequential};
use pixelgrad::{Device, Error, Result};
use std::rc::Rc;

use serde_json::Value;

/// Shape of one sample between layers, in engine layout.
pub use pixelgrad::nn::config::SampleShape as Shape;

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
    /// How the user lays out image samples (`channelsLast` unless the config says otherwise).
    pub format: DataFormat,
}

fn bad(what: &str, msg: impl Into<String>) -> Error {
    Error::invalid(what, msg)
}

/// The description and the seed of `config = {"layers": [...], "seed": n}`.
pub fn parse(config: &Value) -> Result<(ModelConfig, u64)> {
    let Value::Object(o) = config else {
        return Err(bad("sequential", format!("the config must be an object with a 'layers' list, got {config}")));
    };
    let mut o = o.clone();
    let seed = match o.remove("seed") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_u64().ok_or_else(|| bad("sequential", format!("'seed' must be a non-negative whole number, got {v}")))?,
    };
    if !o.contains_key("layers") {
        return Err(bad("sequential", "the config has no 'layers' list"));
    }
    let cfg: ModelConfig = serde_json::from_value(Value::Object(o)).map_err(|e| bad("sequential", e.to_string()))?;
    Ok((cfg, seed))
}

/// Builds the network for `config = {"layers": [...], "seed": n}` on `dev`.
pub fn build(dev: &Device, config: &Value) -> Result<Built> {
    build_with(dev, config, &[])
}

/// `onnx` layers from the imported models, their output shape found by running them once.
struct Onnx<'a>(&'a [Rc<pixelgrad::onnx::Model>]);

impl Imported for Onnx<'_> {
    fn layer(&mut self, dev: &Device, k: usize, input: Option<&str>, output: Option<&str>, at: Shape) -> Result<(Box<dyn Module>, Shape)> {
        // An imported graph (or its part up to `output`) as a layer; images reach it in NCHW,
        // as ONNX models expect (permuted to NHWC by the layer for a model whose input is
        // declared [N, H, W, C]).
        let model = self.0.get(k).ok_or_else(|| bad("onnx", format!("no imported model {k} was given")))?;
        let layer = pixelgrad::onnx::OnnxLayer::from_model(model.clone(), dev, input, output).map_err(|e| bad("onnx", e.to_string()))?;
        let mut probe = vec![1usize];
        probe.extend(at.dims());
        let y = {
            let _g = pixelgrad::no_grad();
            layer
                .forward(&pixelgrad::Tensor::zeros(dev, probe.clone())?, pixelgrad::nn::Mode::Eval)
                .map_err(|e| bad("onnx", format!("on input {:?}: {e}", &probe[1..])))?
        };
        let out = match *y.dims() {
            [1, n] => Shape::Flat(n),
            [1, c, h, w] => Shape::Image(c, h, w),
            ref other => return Err(bad("onnx", format!("output {other:?} is neither [1, n] nor [1, c, h, w]; pick another output"))),
        };
        Ok((Box::new(layer), out))
    }
}

/// [`build`] where `{"type": "onnx", "model": k, ...}` layers use the imported model `onnx[k]`.
pub fn build_with(dev: &Device, config: &Value, onnx: &[Rc<pixelgrad::onnx::Model>]) -> Result<Built> {
    let (cfg, seed) = parse(config)?;
    let built = cfg.build_parts(dev, seed, Some(&mut Onnx(onnx)))?;
    let format = cfg.data_format;
    let input = built.input;
    let layers = built
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| LayerInfo {
            kind: l.kind.to_string(),
            out: l.output.user_dims(format),
            params: l.params,
            weight: l.weight.clone(),
            view: view(l, input, i == 0),
            end: l.end,
        })
        .collect();
    Ok(Built { seq: built.seq, layers, input: input.user_dims(format), output: built.output, format })
}

fn view(l: &BuiltLayer, input: Shape, first: bool) -> Option<WeightView> {
    match (l.kind, l.input) {
        ("dense", Shape::Flat(n)) => Some(dense_view(input, first, n)),
        ("conv2d", _) => Some(WeightView::Filters),
        _ => None,
    }
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
        assert!(build(&dev(), &huge).err().unwrap().to_string().contains("more than"));
        let act = serde_json::json!({"layers": [{"type": "dense", "units": 3, "inputShape": [3], "activation": "swish"}]});
        assert!(build(&dev(), &act).err().unwrap().to_string().contains("swish"));
    }
}
