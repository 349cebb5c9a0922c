//! The model presets used by the CLI, the browser package and the benchmarks: `seed-mlp` (the
//! seed article's 48-64-2 sigmoid network), `mlp` and `cnn`, each a [`ModelConfig`] (see
//! [`Preset::config`]). A model file stores its description as JSON under [`SPEC_KEY`], so
//! `eval` and `predict` rebuild the architecture from the file.

use pixelgrad_core::{Device, Error, Result};

pub use crate::config::MAX_WEIGHTS;
use crate::config::{DataFormat, Initializer, Layer, LayerConfig, ModelConfig, Padding, Window};
use crate::{Loss, Sequential};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// 48 inputs → 64 sigmoid → 2 sigmoid outputs, MSE, SGD at batch 1 (the seed article).
    SeedMlp,
    /// Flatten → 256 ReLU → classes, cross-entropy.
    Mlp,
    /// conv 3x3x16 ReLU → maxpool 2 → conv 3x3x32 ReLU → maxpool 2 → dense, cross-entropy.
    Cnn,
}

impl Preset {
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "seed-mlp" => Preset::SeedMlp,
            "mlp" => Preset::Mlp,
            "cnn" => Preset::Cnn,
            other => return Err(Error::invalid("model", format!("unknown model '{other}' (seed-mlp, mlp, cnn)"))),
        })
    }
    pub fn name(&self) -> &'static str {
        match self {
            Preset::SeedMlp => "seed-mlp",
            Preset::Mlp => "mlp",
            Preset::Cnn => "cnn",
        }
    }
    pub fn loss(&self) -> Loss {
        match self {
            Preset::SeedMlp => Loss::Mse,
            _ => Loss::CrossEntropy,
        }
    }
    /// True if the outputs are logits (apply softmax for probabilities).
    pub fn outputs_logits(&self) -> bool {
        !matches!(self, Preset::SeedMlp)
    }
}

/// A preset applied to an input shape `[C, H, W]` and a number of classes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSpec {
    pub preset: Preset,
    pub input: [usize; 3],
    pub classes: usize,
}

impl Preset {
    /// The preset as a model description for samples of shape `input` (`[C, H, W]`) and
    /// `classes` outputs; its `name` is the preset's.
    pub fn config(&self, input: [usize; 3], classes: usize) -> ModelConfig {
        let dense = |units: usize, activation: Option<&str>, init: Initializer| Layer::Dense {
            units,
            activation: activation.map(str::to_string),
            use_bias: true,
            kernel_initializer: init,
        };
        let conv = |filters: usize| Layer::Conv2d {
            filters,
            kernel_size: Window(3),
            strides: None,
            padding: Padding::Same,
            activation: Some("relu".to_string()),
        };
        let pool = || Layer::MaxPooling2d { pool_size: Some(Window(2)), strides: None };
        let mut layers: Vec<LayerConfig> = match self {
            Preset::SeedMlp => vec![
                Layer::Flatten {},
                dense(64, Some("sigmoid"), Initializer::GlorotUniform),
                dense(classes, Some("sigmoid"), Initializer::GlorotUniform),
            ],
            Preset::Mlp => {
                vec![Layer::Flatten {}, dense(256, Some("relu"), Initializer::HeUniform), dense(classes, None, Initializer::GlorotUniform)]
            }
            Preset::Cnn => vec![conv(16), pool(), conv(32), pool(), Layer::Flatten {}, dense(classes, None, Initializer::GlorotUniform)],
        }
        .into_iter()
        .map(LayerConfig::from)
        .collect();
        layers[0].input_shape = Some(input.to_vec());
        ModelConfig {
            name: Some(self.name().to_string()),
            data_format: DataFormat::ChannelsFirst,
            loss: Some(if self.loss() == Loss::Mse { "mse" } else { "cross-entropy" }.to_string()),
            layers,
        }
    }
}

impl ModelSpec {
    /// The description of this preset at this size.
    pub fn config(&self) -> ModelConfig {
        self.preset.config(self.input, self.classes)
    }

    /// Builds the network with weights drawn from `seed` (through [`ModelSpec::config`]).
    pub fn build(&self, dev: &Device, seed: u64) -> Result<Sequential> {
        if self.input.contains(&0) || self.classes < 2 {
            return Err(Error::invalid("model", format!("input {:?} with {} classes cannot be built", self.input, self.classes)));
        }
        self.config().build(dev, seed)
    }

    /// `seed-mlp;1,8,6;2` style string stored in model files.
    pub fn to_meta(&self) -> String {
        format!("{};{},{},{};{}", self.preset.name(), self.input[0], self.input[1], self.input[2], self.classes)
    }

    pub fn from_meta(s: &str) -> Result<Self> {
        let bad = || Error::invalid("model file", format!("unrecognised architecture metadata '{s}'"));
        let parts: Vec<&str> = s.split(';').collect();
        if parts.len() != 3 {
            return Err(bad());
        }
        let dims: Vec<usize> = parts[1].split(',').map(|d| d.parse().map_err(|_| bad())).collect::<Result<_>>()?;
        if dims.len() != 3 {
            return Err(bad());
        }
        Ok(ModelSpec {
            preset: Preset::parse(parts[0])?,
            input: [dims[0], dims[1], dims[2]],
            classes: parts[2].parse().map_err(|_| bad())?,
        })
    }
}

/// Metadata key under which a model file stores its [`ModelConfig`] as JSON (files written
/// before the description existed hold a [`ModelSpec::to_meta`] string there).
pub const SPEC_KEY: &str = "pixelgrad.model";

/// The description stored under [`SPEC_KEY`]: its JSON, or the `preset;c,h,w;classes` string of
/// older files (turned into the preset's description).
pub fn config_from_meta(s: &str) -> Result<ModelConfig> {
    if s.trim_start().starts_with('{') {
        return ModelConfig::from_json(s).map_err(|e| Error::invalid("model file", e.to_string()));
    }
    let spec = ModelSpec::from_meta(s)?;
    if spec.input.contains(&0) || spec.classes < 2 {
        return Err(Error::invalid("model file", format!("input {:?} with {} classes cannot be built", spec.input, spec.classes)));
    }
    Ok(spec.config())
}
