//! Building a [`ModelConfig`]: shape inference layer by layer, size checks before each
//! allocation, and the engine modules in the order (and with the weight draws) of the list.

use pixelgrad_core::{Device, Error, Result};

use super::{DataFormat, Initializer, Layer, ModelConfig, Padding, MAX_WEIGHTS};
use crate::init::{Init, WeightInit};
use crate::layers::{
    Activation, AttentionOptions, BatchNorm, BlockOptions, Conv2d, Dropout, Embedding, Flatten, LayerNorm, LearnedPositions, Linear,
    MaxPool2d, Mlp, MultiHeadAttention, Normalization, Permute, RmsNorm, TimeDistributed, TransformerBlock,
};
use crate::{Module, Sequential};

/// Shape of one sample between layers, in engine layout (NCHW for images).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleShape {
    Flat(usize),
    /// Channels, height, width.
    Image(usize, usize, usize),
    /// A sequence: positions, and features per position (`[seq, width]`; token ids are a
    /// `Flat(seq)` sample until an embedding).
    Sequence(usize, usize),
}

impl SampleShape {
    /// The dims as the description writes them (`[h, w, c]` for `channelsLast`).
    pub fn user_dims(&self, format: DataFormat) -> Vec<usize> {
        match (*self, format) {
            (SampleShape::Flat(n), _) => vec![n],
            (SampleShape::Sequence(s, w), _) => vec![s, w],
            (SampleShape::Image(c, h, w), DataFormat::ChannelsLast) => vec![h, w, c],
            (SampleShape::Image(c, h, w), DataFormat::ChannelsFirst) => vec![c, h, w],
        }
    }
    /// The dims in engine layout.
    pub fn dims(&self) -> Vec<usize> {
        self.user_dims(DataFormat::ChannelsFirst)
    }
    pub fn numel(&self) -> usize {
        match *self {
            SampleShape::Flat(n) => n,
            SampleShape::Image(c, h, w) => c * h * w,
            SampleShape::Sequence(s, w) => s * w,
        }
    }
    fn from_user(dims: &[usize], format: DataFormat) -> Option<SampleShape> {
        match (dims, format) {
            (&[n], _) => Some(SampleShape::Flat(n)),
            (&[s, w], _) => Some(SampleShape::Sequence(s, w)),
            (&[h, w, c], DataFormat::ChannelsLast) | (&[c, h, w], DataFormat::ChannelsFirst) => Some(SampleShape::Image(c, h, w)),
            _ => None,
        }
    }
}

/// What the network knows about one layer of the description.
#[derive(Clone, Debug)]
pub struct BuiltLayer {
    /// The layer's `type`.
    pub kind: &'static str,
    /// Its input and output shapes of one sample.
    pub input: SampleShape,
    pub output: SampleShape,
    pub params: usize,
    /// Name of its weight parameter in the [`Sequential`] (e.g. `1.weight`), if it has one.
    pub weight: Option<String>,
    /// Modules of the [`Sequential`] up to and including this layer (its activation too).
    pub end: usize,
}

/// A network built from a description, with its per-layer shapes.
pub struct BuiltModel {
    pub seq: Sequential,
    pub layers: Vec<BuiltLayer>,
    pub input: SampleShape,
    pub output: SampleShape,
}

/// Builds the `onnx` layers, whose graphs the host holds (the browser package's imports).
pub trait Imported {
    /// The `model`-th import (between the values `input` and `output`) on samples of shape `at`:
    /// the module and its output shape.
    fn layer(
        &mut self,
        dev: &Device,
        model: usize,
        input: Option<&str>,
        output: Option<&str>,
        at: SampleShape,
    ) -> Result<(Box<dyn Module>, SampleShape)>;
}

/// A module of the network, or how to make it once every size has been checked.
enum Step {
    Ready(Box<dyn Module>),
    Make(Recipe),
}

type Recipe = Box<dyn FnOnce(&mut Init) -> Result<Box<dyn Module>>>;

fn make(f: impl FnOnce(&mut Init) -> Result<Box<dyn Module>> + 'static) -> Step {
    Step::Make(Box::new(f))
}

fn bad(what: &str, msg: impl Into<String>) -> Error {
    Error::invalid(what, msg)
}

/// `dims` hold at most [`MAX_WEIGHTS`] values (without overflowing on the way).
fn fits(what: &str, dims: &[usize]) -> Result<usize> {
    match dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) {
        Some(n) if n <= MAX_WEIGHTS => Ok(n),
        _ => Err(bad(what, format!("a tensor of shape {dims:?} holds more than {MAX_WEIGHTS} values"))),
    }
}

fn activation(name: Option<&str>, what: &str) -> Result<Option<Activation>> {
    match name {
        None => Ok(None),
        Some(s) => Activation::parse(s)
            .ok_or_else(|| bad(what, format!("unknown activation '{s}' (linear, relu, leakyRelu, sigmoid, tanh, gelu, softmax)"))),
    }
}

/// A rotary `maxWavelength` is finite and above 1.
fn check_rotary(what: &str, w: Option<f64>) -> Result<()> {
    match w {
        Some(w) if !(w.is_finite() && w > 1.0) => Err(bad(what, format!("rotaryMaxWavelength {w} must be finite and above 1"))),
        _ => Ok(()),
    }
}

impl ModelConfig {
    /// The sample shape the network takes (the first layer's `inputShape`), checked.
    pub fn input(&self) -> Result<SampleShape> {
        let Some(first) = self.layers.first() else {
            return Err(bad("model", "a model needs at least one layer"));
        };
        let Some(dims) = &first.input_shape else {
            return Err(bad(
                "model",
                "the first layer needs an inputShape, e.g. {\"type\": \"dense\", \"units\": 10, \"inputShape\": [64]}",
            ));
        };
        let input = SampleShape::from_user(dims, self.data_format)
            .filter(|s| s.dims().iter().all(|&d| d > 0))
            .ok_or_else(|| {
                bad(
                    "layer 0",
                    format!("inputShape must be [features] (or token ids [seq]), a sequence [seq, width] or an image of three positive sizes, got {dims:?}"),
                )
            })?;
        fits("input", &input.dims())?;
        Ok(input)
    }

    /// Builds the network with weights drawn from `seed`, in the order of the layers.
    pub fn build(&self, dev: &Device, seed: u64) -> Result<Sequential> {
        Ok(self.build_parts(dev, seed, None)?.seq)
    }

    /// [`ModelConfig::build`] keeping the per-layer shapes; `onnx` layers are built by
    /// `imported` (an error without it).
    pub fn build_parts(&self, dev: &Device, seed: u64, mut imported: Option<&mut dyn Imported>) -> Result<BuiltModel> {
        let format = self.data_format;
        let input = self.input()?;
        // First every shape and size is checked, with the modules as recipes; then the recipes
        // run in order (the order of the weight draws).
        let mut steps: Vec<Step> = Vec::new();
        if format == DataFormat::ChannelsLast && matches!(input, SampleShape::Image(..)) {
            // NHWC → NCHW at the network's entrance (images are given as `[n, h, w, c]`)
            steps.push(Step::Ready(Box::new(Permute(vec![0, 3, 1, 2]))));
        }
        // per layer: its first module, the end of its own modules (before its activation)
        let mut ranges = Vec::with_capacity(self.layers.len());
        let mut total = 0usize;
        let mut cur = input;
        let mut layers = Vec::with_capacity(self.layers.len());
        for (i, l) in self.layers.iter().enumerate() {
            let name = format!("layer {i} ({})", l.layer.kind());
            if let Some(d) = l.input_shape.as_ref().filter(|_| i > 0) {
                if SampleShape::from_user(d, format) != Some(cur) {
                    return Err(bad(
                        &name,
                        format!("inputShape {d:?} does not match the previous layer's output {:?}", cur.user_dims(format)),
                    ));
                }
            }
            let at = cur;
            let index = steps.len();
            let mut weight = None;
            let mut weights = |dims: &[usize]| -> Result<()> {
                let n = fits(&name, dims)?;
                total = total
                    .checked_add(n)
                    .filter(|&t| t <= MAX_WEIGHTS)
                    .ok_or_else(|| bad(&name, format!("the model's weights add up to more than {MAX_WEIGHTS} values")))?;
                Ok(())
            };
            let act = match &l.layer {
                Layer::Dense { units, activation: a, use_bias, kernel_initializer } => {
                    // on a sequence, the dense layer runs at every position (Keras' Dense on the last axis)
                    let (n, seq) = match cur {
                        SampleShape::Flat(n) => (n, None),
                        SampleShape::Sequence(s, n) => (n, Some(s)),
                        SampleShape::Image(..) => {
                            return Err(bad(
                                &name,
                                format!("expects a flat input but gets {:?}; add a flatten layer before it", cur.user_dims(format)),
                            ))
                        }
                    };
                    if *units == 0 {
                        return Err(bad(&name, "'units' must be at least 1"));
                    }
                    let act = activation(a.as_deref(), &name)?;
                    weights(&[n, *units])?;
                    let w = match kernel_initializer {
                        Initializer::GlorotUniform => WeightInit::Glorot,
                        Initializer::HeUniform => WeightInit::He,
                    };
                    let (n, units, bias, dev) = (n, *units, *use_bias, dev.clone());
                    steps.push(make(move |init| {
                        let l = Linear::with_init(&dev, n, units, w, bias, init)?;
                        Ok(if seq.is_some() { Box::new(TimeDistributed::new(Box::new(l))) } else { Box::new(l) })
                    }));
                    weight = Some(format!("{index}.weight"));
                    cur = match seq {
                        Some(s) => SampleShape::Sequence(s, units),
                        None => SampleShape::Flat(units),
                    };
                    act
                }
                Layer::Conv2d { filters, kernel_size, strides, padding, activation: a } => {
                    let SampleShape::Image(c, h, w) = cur else {
                        return Err(bad(&name, format!("expects an image input but gets {:?}", cur.user_dims(format))));
                    };
                    let (k, stride) = (kernel_size.0, strides.map_or(1, |s| s.0));
                    if *filters == 0 || k == 0 || stride == 0 {
                        return Err(bad(&name, "filters, kernelSize and strides must be at least 1"));
                    }
                    let pad = match padding {
                        Padding::Valid => 0,
                        Padding::Same if k % 2 == 1 && stride == 1 => (k - 1) / 2,
                        Padding::Same => return Err(bad(&name, "padding 'same' needs an odd kernelSize and strides 1")),
                    };
                    if h + 2 * pad < k || w + 2 * pad < k {
                        return Err(bad(&name, format!("a {k}x{k} kernel does not fit the {h}x{w} input")));
                    }
                    let act = activation(a.as_deref(), &name)?;
                    weights(&[*filters, c, k, k])?;
                    fits(&name, &[*filters, h, w])?;
                    let (oh, ow) = ((h + 2 * pad - k) / stride + 1, (w + 2 * pad - k) / stride + 1);
                    let (f, dev) = (*filters, dev.clone());
                    steps.push(make(move |init| Ok(Box::new(Conv2d::new(&dev, c, f, k, stride, pad, init)?))));
                    weight = Some(format!("{index}.weight"));
                    cur = SampleShape::Image(*filters, oh, ow);
                    act
                }
                Layer::MaxPooling2d { pool_size, strides } => {
                    let SampleShape::Image(c, h, w) = cur else {
                        return Err(bad(&name, format!("expects an image input but gets {:?}", cur.user_dims(format))));
                    };
                    let p = pool_size.map_or(2, |p| p.0);
                    let s = strides.map_or(p, |s| s.0);
                    if p == 0 || s == 0 || h < p || w < p {
                        return Err(bad(&name, format!("a {p}x{p} pool with strides {s} does not fit the {h}x{w} input")));
                    }
                    let mut pool = MaxPool2d::new(p);
                    pool.stride = s;
                    steps.push(Step::Ready(Box::new(pool)));
                    cur = SampleShape::Image(c, (h - p) / s + 1, (w - p) / s + 1);
                    None
                }
                Layer::Flatten {} => {
                    steps.push(Step::Ready(Box::new(Flatten)));
                    cur = SampleShape::Flat(cur.numel());
                    None
                }
                Layer::Dropout { rate } => {
                    let (rate, name) = (*rate, name.clone());
                    steps
                        .push(make(move |init| Ok(Box::new(Dropout::new(rate, init.next_seed()).map_err(|e| bad(&name, e.to_string()))?))));
                    None
                }
                Layer::BatchNormalization {} => {
                    let channels = match cur {
                        SampleShape::Flat(n) => n,
                        SampleShape::Image(c, _, _) => c,
                        SampleShape::Sequence(..) => {
                            return Err(bad(&name, "batch normalisation of sequences is not offered; use layerNormalization"))
                        }
                    };
                    weights(&[2, channels])?;
                    let (flat, dev) = (matches!(cur, SampleShape::Flat(_)), dev.clone());
                    steps.push(make(move |_| {
                        Ok(Box::new(if flat { BatchNorm::new_1d(&dev, channels)? } else { BatchNorm::new_2d(&dev, channels)? }))
                    }));
                    None
                }
                Layer::Activation { activation: a } => activation(Some(a), &name)?,
                Layer::Embedding { input_dim, output_dim } => {
                    let SampleShape::Flat(s) = cur else {
                        return Err(bad(&name, format!("expects token ids [seq] but gets {:?}", cur.user_dims(format))));
                    };
                    if *input_dim == 0 || *output_dim == 0 {
                        return Err(bad(&name, "inputDim and outputDim must be at least 1"));
                    }
                    weights(&[*input_dim, *output_dim])?;
                    fits(&name, &[s, *output_dim])?;
                    let (v, d, dev) = (*input_dim, *output_dim, dev.clone());
                    steps.push(make(move |init| Ok(Box::new(Embedding::new(&dev, v, d, init)?))));
                    weight = Some(format!("{index}.embeddings"));
                    cur = SampleShape::Sequence(s, d);
                    None
                }
                Layer::PositionEmbedding { sequence_length } => {
                    let SampleShape::Sequence(s, w) = cur else {
                        return Err(bad(&name, format!("expects a sequence [seq, width] but gets {:?}", cur.user_dims(format))));
                    };
                    if *sequence_length < s {
                        return Err(bad(&name, format!("sequenceLength {sequence_length} is shorter than the input's {s} positions")));
                    }
                    weights(&[*sequence_length, w])?;
                    let (len, dev) = (*sequence_length, dev.clone());
                    steps.push(make(move |init| Ok(Box::new(LearnedPositions::new(&dev, len, w, init)?))));
                    None
                }
                Layer::LayerNormalization { epsilon } | Layer::RmsNormalization { epsilon } => {
                    let w = match cur {
                        SampleShape::Flat(w) | SampleShape::Sequence(_, w) => w,
                        SampleShape::Image(..) => {
                            return Err(bad(&name, "normalises the last axis of a flat or sequence input, not an image"))
                        }
                    };
                    let rms = matches!(l.layer, Layer::RmsNormalization { .. });
                    let eps = epsilon.unwrap_or(if rms { 1e-6 } else { 1e-3 });
                    if !(eps.is_finite() && eps > 0.0) {
                        return Err(bad(&name, format!("epsilon {eps} must be finite and above 0")));
                    }
                    weights(&[if rms { 1 } else { 2 }, w])?;
                    let dev = dev.clone();
                    steps.push(make(move |_| {
                        Ok(if rms { Box::new(RmsNorm::new(&dev, w, eps)?) } else { Box::new(LayerNorm::new(&dev, w, eps)?) })
                    }));
                    None
                }
                Layer::MultiHeadAttention {
                    num_heads,
                    num_key_value_heads,
                    key_dim,
                    use_bias,
                    use_causal_mask,
                    rotary_max_wavelength,
                    dropout,
                } => {
                    let SampleShape::Sequence(_, w) = cur else {
                        return Err(bad(&name, format!("expects a sequence [seq, width] but gets {:?}", cur.user_dims(format))));
                    };
                    let opts = AttentionOptions {
                        width: w,
                        heads: *num_heads,
                        kv_heads: num_key_value_heads.unwrap_or(*num_heads),
                        head_dim: *key_dim,
                        use_bias: *use_bias,
                        causal: *use_causal_mask,
                        rotary: *rotary_max_wavelength,
                        dropout: *dropout,
                    };
                    if !(0.0..1.0).contains(dropout) {
                        return Err(bad(&name, format!("dropout {dropout} must be in [0, 1)")));
                    }
                    let h = opts.resolved_head_dim().map_err(|e| bad(&name, e.to_string()))?;
                    check_rotary(&name, opts.rotary)?;
                    weights(&[w, opts.heads * h])?;
                    weights(&[w, 2 * opts.kv_heads * h])?;
                    weights(&[opts.heads * h, w])?;
                    let dev = dev.clone();
                    steps.push(make(move |init| Ok(Box::new(MultiHeadAttention::new(&dev, opts, init)?))));
                    weight = Some(format!("{index}.query.weight"));
                    None
                }
                Layer::TransformerBlock {
                    num_heads,
                    num_key_value_heads,
                    intermediate_dim,
                    activation: a,
                    normalization,
                    epsilon,
                    dropout,
                    use_causal_mask,
                    rotary_max_wavelength,
                } => {
                    let SampleShape::Sequence(_, w) = cur else {
                        return Err(bad(&name, format!("expects a sequence [seq, width] but gets {:?}", cur.user_dims(format))));
                    };
                    let mlp = match a.as_deref() {
                        None | Some("gelu") => Mlp::Gelu,
                        Some("swiglu") => Mlp::SwiGlu,
                        Some(o) => return Err(bad(&name, format!("unknown activation '{o}' (gelu, swiglu)"))),
                    };
                    let eps = epsilon.unwrap_or(1e-5);
                    if !(eps.is_finite() && eps > 0.0) {
                        return Err(bad(&name, format!("epsilon {eps} must be finite and above 0")));
                    }
                    let norm = match normalization.as_deref() {
                        None | Some("layerNormalization") => Normalization::Layer(eps),
                        Some("rmsNormalization") => Normalization::Rms(eps),
                        Some(o) => return Err(bad(&name, format!("unknown normalization '{o}' (layerNormalization, rmsNormalization)"))),
                    };
                    if *intermediate_dim == 0 {
                        return Err(bad(&name, "intermediateDim must be at least 1"));
                    }
                    if !(0.0..1.0).contains(dropout) {
                        return Err(bad(&name, format!("dropout {dropout} must be in [0, 1)")));
                    }
                    let attention = AttentionOptions {
                        width: w,
                        heads: *num_heads,
                        kv_heads: num_key_value_heads.unwrap_or(*num_heads),
                        head_dim: None,
                        use_bias: true,
                        causal: *use_causal_mask,
                        rotary: *rotary_max_wavelength,
                        dropout: *dropout,
                    };
                    let h = attention.resolved_head_dim().map_err(|e| bad(&name, e.to_string()))?;
                    check_rotary(&name, attention.rotary)?;
                    weights(&[w, (attention.heads + 2 * attention.kv_heads) * h])?;
                    weights(&[attention.heads * h, w])?;
                    weights(&[if mlp == Mlp::SwiGlu { 3 } else { 2 }, w, *intermediate_dim])?;
                    let opts = BlockOptions { attention, mlp_dim: *intermediate_dim, mlp, norm, dropout: *dropout };
                    let dev = dev.clone();
                    steps.push(make(move |init| Ok(Box::new(TransformerBlock::new(&dev, opts, init)?))));
                    weight = Some(format!("{index}.attention.query.weight"));
                    None
                }
                Layer::Onnx { model, input, output, activation: a } => {
                    let act = activation(a.as_deref(), &name)?;
                    let Some(host) = imported.as_deref_mut() else {
                        return Err(bad(&name, "onnx layers are built by the browser package, with the imported model"));
                    };
                    let (m, out) =
                        host.layer(dev, *model, input.as_deref(), output.as_deref(), cur).map_err(|e| bad(&name, e.to_string()))?;
                    weights(&[m.num_params()])?;
                    steps.push(Step::Ready(m));
                    cur = out;
                    act
                }
            };
            ranges.push((index, steps.len()));
            if let Some(a) = act {
                steps.push(Step::Ready(Box::new(a)));
            }
            layers.push(BuiltLayer { kind: l.layer.kind(), input: at, output: cur, params: 0, weight, end: steps.len() });
        }
        let mut init = Init::new(seed);
        let mut seq = Sequential::new();
        for step in steps {
            seq.add(match step {
                Step::Ready(m) => m,
                Step::Make(f) => f(&mut init)?,
            });
        }
        for ((l, (start, own)), cfg) in layers.iter_mut().zip(ranges).zip(&self.layers) {
            let mine = &seq.layers()[start..own];
            l.params = mine.iter().map(|m| m.num_params()).sum();
            if !cfg.trainable {
                mine.iter().for_each(|m| m.set_trainable(false));
            }
        }
        Ok(BuiltModel { seq, layers, input, output: cur })
    }
}
