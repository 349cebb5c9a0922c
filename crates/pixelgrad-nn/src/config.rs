//! The one model description: a [`ModelConfig`] is a list of serde [`LayerConfig`]s, written
//! as JSON with the names of the JavaScript API (TF.js/Keras style), e.g.
//!
//! ```json
//! {"dataFormat": "channelsFirst", "layers": [
//!   {"type": "conv2d", "filters": 16, "kernelSize": 3, "padding": "same", "activation": "relu",
//!    "inputShape": [1, 8, 8]},
//!   {"type": "maxPooling2d", "poolSize": 2},
//!   {"type": "flatten"},
//!   {"type": "dense", "units": 10}]}
//! ```
//!
//! The CLI (`--model FILE.json`, and the presets, which are `ModelConfig`s), the browser package
//! (`pg.sequential`) and the Flower app build their networks from it, and model files store it
//! under [`crate::presets::SPEC_KEY`]. Descriptions come from files and pages: every option
//! name is checked (`deny_unknown_fields`) and [`ModelConfig::build`] refuses sizes that
//! overflow or exceed [`MAX_WEIGHTS`] before allocating anything.

use pixelgrad_core::{Error, Result};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

mod build;
pub use build::{BuiltLayer, BuiltModel, Imported, SampleShape};

/// Most values one weight tensor, one sample's activations or a whole model may hold (256 MiB
/// of f32): model files and pages give the sizes, and a corrupt or hostile one must not make
/// the program allocate without bound.
pub const MAX_WEIGHTS: usize = 1 << 26;

/// Most layers a description may list.
pub const MAX_LAYERS: usize = 4096;

/// A sequential network: its layers in order; the first one carries `inputShape`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelConfig {
    /// A label (the presets put their name here); not used to build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// How image samples are laid out: `channelsLast` (`[h, w, c]`, the default, as the
    /// browser package takes images) or `channelsFirst` (`[c, h, w]`, the CLI's data sets).
    #[serde(default, skip_serializing_if = "DataFormat::is_default")]
    pub data_format: DataFormat,
    /// The loss the network is trained with (a name of [`crate::Loss::parse`]); the CLI uses
    /// it, the browser package takes the loss in `compile` instead. Absent: cross-entropy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<String>,
    #[serde(deserialize_with = "numbered_layers")]
    pub layers: Vec<LayerConfig>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DataFormat {
    #[default]
    ChannelsLast,
    ChannelsFirst,
}

impl DataFormat {
    fn is_default(&self) -> bool {
        *self == DataFormat::ChannelsLast
    }
}

/// One layer: what it is, plus the options every layer takes.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerConfig {
    #[serde(flatten)]
    pub layer: Layer,
    /// The sample shape this layer takes (required on the first layer; checked on others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_shape: Option<Vec<usize>>,
    /// `false` freezes the layer's weights (no updates; still saved).
    #[serde(skip_serializing_if = "is_true")]
    pub trainable: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

impl From<Layer> for LayerConfig {
    fn from(layer: Layer) -> Self {
        LayerConfig { layer, input_shape: None, trainable: true }
    }
}

/// The layer types and their options. `activation` names are those of
/// [`crate::layers::Activation::parse`] (`relu`, `sigmoid`, `tanh`, `gelu`, `softmax`,
/// `leakyRelu`, `linear`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum Layer {
    /// Fully connected, on a flat input.
    Dense {
        units: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        activation: Option<String>,
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        use_bias: bool,
        #[serde(default, skip_serializing_if = "Initializer::is_default")]
        kernel_initializer: Initializer,
    },
    /// 2-D convolution over an image input (square kernels and strides).
    Conv2d {
        filters: usize,
        kernel_size: Window,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strides: Option<Window>,
        #[serde(default, skip_serializing_if = "Padding::is_default")]
        padding: Padding,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        activation: Option<String>,
    },
    /// Max pooling: `poolSize` (default 2), `strides` (default `poolSize`).
    MaxPooling2d {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pool_size: Option<Window>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strides: Option<Window>,
    },
    /// Flattens an image sample to a vector (in the layout the network computes in: NCHW).
    Flatten {},
    /// Inverted dropout in training.
    Dropout { rate: f32 },
    /// Batch normalisation over features or channels.
    BatchNormalization {},
    /// An activation on its own.
    Activation { activation: String },
    /// Token embedding (Keras `Embedding`): token ids `[seq]` (f32 whole numbers below
    /// `inputDim`) become `[seq, outputDim]`.
    Embedding { input_dim: usize, output_dim: usize },
    /// Learned positions added to a sequence (keras-hub `PositionEmbedding`); `sequenceLength`
    /// is the longest sequence it takes.
    PositionEmbedding { sequence_length: usize },
    /// Layer normalisation over the last axis; `epsilon` defaults to Keras' 1e-3.
    LayerNormalization {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        epsilon: Option<f32>,
    },
    /// RMS normalisation over the last axis; `epsilon` defaults to Keras' 1e-6.
    RmsNormalization {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        epsilon: Option<f32>,
    },
    /// Self-attention over a sequence `[seq, width]` with output projection back to `width`.
    MultiHeadAttention {
        num_heads: usize,
        /// Grouped key/value heads (`numHeads` must be a multiple); default `numHeads`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        num_key_value_heads: Option<usize>,
        /// Head size; default `width / numHeads`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key_dim: Option<usize>,
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        use_bias: bool,
        #[serde(default, skip_serializing_if = "is_false")]
        use_causal_mask: bool,
        /// Rotary positions on queries and keys with this `maxWavelength` (e.g. 10000).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rotary_max_wavelength: Option<f64>,
        /// Dropout of the attention weights in training.
        #[serde(default, skip_serializing_if = "is_zero")]
        dropout: f32,
    },
    /// A pre-norm transformer block over a sequence `[seq, width]`.
    TransformerBlock {
        num_heads: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        num_key_value_heads: Option<usize>,
        /// Hidden size of the MLP.
        intermediate_dim: usize,
        /// `gelu` (default) or `swiglu`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        activation: Option<String>,
        /// `layerNormalization` (default) or `rmsNormalization`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        normalization: Option<String>,
        /// Normalisation epsilon; default 1e-5.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        epsilon: Option<f32>,
        /// Dropout of the attention weights and of both branches' outputs, in training.
        #[serde(default, skip_serializing_if = "is_zero")]
        dropout: f32,
        /// Default true: a decoder block.
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        use_causal_mask: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rotary_max_wavelength: Option<f64>,
    },
    /// An imported ONNX graph (or its part between `input` and `output`), given by the host
    /// that builds the model (the browser package) as its `model`-th import.
    Onnx {
        model: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        activation: Option<String>,
    },
}

fn yes() -> bool {
    true
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(x: &f32) -> bool {
    *x == 0.0
}

impl Layer {
    /// The `type` name.
    pub fn kind(&self) -> &'static str {
        match self {
            Layer::Dense { .. } => "dense",
            Layer::Conv2d { .. } => "conv2d",
            Layer::MaxPooling2d { .. } => "maxPooling2d",
            Layer::Flatten {} => "flatten",
            Layer::Dropout { .. } => "dropout",
            Layer::BatchNormalization {} => "batchNormalization",
            Layer::Activation { .. } => "activation",
            Layer::Embedding { .. } => "embedding",
            Layer::PositionEmbedding { .. } => "positionEmbedding",
            Layer::LayerNormalization { .. } => "layerNormalization",
            Layer::RmsNormalization { .. } => "rmsNormalization",
            Layer::MultiHeadAttention { .. } => "multiHeadAttention",
            Layer::TransformerBlock { .. } => "transformerBlock",
            Layer::Onnx { .. } => "onnx",
        }
    }
}

/// How dense weights are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Initializer {
    #[default]
    GlorotUniform,
    HeUniform,
}

impl Initializer {
    fn is_default(&self) -> bool {
        *self == Initializer::GlorotUniform
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Padding {
    #[default]
    Valid,
    Same,
}

impl Padding {
    fn is_default(&self) -> bool {
        *self == Padding::Valid
    }
}

/// A square window size: `k`, `[k]` or `[k, k]` (only square windows are supported).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window(pub usize);

impl Serialize for Window {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_u64(self.0 as u64)
    }
}

impl<'de> Deserialize<'de> for Window {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Window;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a whole number k or a square [k, k]")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Window, E> {
                usize::try_from(v).map(Window).map_err(|_| E::custom(format!("{v} is too large")))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Window, A::Error> {
                let a: usize = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let b: Option<usize> = seq.next_element()?;
                if seq.next_element::<de::IgnoredAny>()?.is_some() || b.is_some_and(|b| b != a) {
                    return Err(de::Error::custom("only square windows are supported: give k or [k, k]"));
                }
                Ok(Window(a))
            }
        }
        d.deserialize_any(V)
    }
}

/// The common options are taken out first; the rest must be exactly one [`Layer`]'s.
impl<'de> Deserialize<'de> for LayerConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(d)?;
        let input_shape = match map.remove("inputShape") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                Vec::<usize>::deserialize(v).map_err(|e| de::Error::custom(format!("inputShape must be a list of whole numbers: {e}")))?,
            ),
        };
        let trainable = match map.remove("trainable") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => b,
            Some(other) => return Err(de::Error::custom(format!("'trainable' must be true or false, got {other}"))),
        };
        let v = Value::Object(map);
        let layer = Layer::deserialize(&v).map_err(|e| {
            let kind = v.get("type").and_then(Value::as_str).map(|k| format!("({k}) ")).unwrap_or_default();
            let field = culprit(&v).map(|k| format!("'{k}': ")).unwrap_or_default();
            de::Error::custom(format!("{kind}{field}{e}"))
        })?;
        Ok(LayerConfig { layer, input_shape, trainable })
    }
}

/// The option whose value a failed [`Layer`] parse of `v` tripped on (serde's type errors do
/// not name the field): the one whose removal makes the rest parse, or makes it missing.
fn culprit(v: &Value) -> Option<&str> {
    // one parse per option: bounded (a layer has at most 9 options; more is already an error)
    let obj = v.as_object().filter(|o| o.len() <= 10)?;
    obj.keys().filter(|k| *k != "type").map(String::as_str).find(|k| {
        let mut rest = obj.clone();
        rest.remove(*k);
        match Layer::deserialize(&Value::Object(rest)) {
            Ok(_) => true,
            Err(e) => e.to_string().contains(&format!("missing field `{k}`")),
        }
    })
}

/// `layers` with the index of a bad layer in its error (`layers[2]: unknown field ...`).
fn numbered_layers<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<LayerConfig>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<LayerConfig>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of layers")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            loop {
                if out.len() == MAX_LAYERS {
                    return Err(de::Error::custom(format!("more than {MAX_LAYERS} layers")));
                }
                match seq.next_element::<LayerConfig>() {
                    Ok(Some(l)) => out.push(l),
                    Ok(None) => return Ok(out),
                    Err(e) => return Err(de::Error::custom(format!("layers[{}]: {e}", out.len()))),
                }
            }
        }
    }
    d.deserialize_seq(V)
}

impl ModelConfig {
    /// A description of `layers`, `channelsLast`, without name or loss.
    pub fn new(layers: Vec<LayerConfig>) -> Self {
        ModelConfig { name: None, data_format: DataFormat::ChannelsLast, loss: None, layers }
    }

    /// Parses the JSON form; an error names the layer and the option.
    pub fn from_json(s: &str) -> Result<Self> {
        serde_json::from_str(s).map_err(|e| Error::invalid("model", e.to_string()))
    }

    pub fn to_json(&self) -> String {
        // a derived Serialize of plain strings, numbers and lists cannot fail
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The loss to train with (cross-entropy when none is named).
    pub fn loss(&self) -> Result<crate::Loss> {
        self.loss.as_deref().map_or(Ok(crate::Loss::CrossEntropy), crate::Loss::parse)
    }
}
