//! The model presets used by the CLI, the browser package and the benchmarks: `seed-mlp` (the
//! seed article's 48-64-2 sigmoid network), `mlp` and `cnn`. A [`ModelSpec`] is stored in a
//! saved model's metadata, so `eval` and `predict` rebuild the architecture from the file.

use pixelgrad_core::{Device, Error, Result};

use crate::init::{Init, WeightInit};
use crate::layers::{Activation, Conv2d, Flatten, Linear, MaxPool2d};
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

impl ModelSpec {
    /// Builds the network with weights drawn from `seed`.
    pub fn build(&self, dev: &Device, seed: u64) -> Result<Sequential> {
        let mut init = Init::new(seed);
        let [c, h, w] = self.input;
        // sizes come from model files: no overflow, no weight matrix above MAX_WEIGHTS values
        let features = c.checked_mul(h).and_then(|n| n.checked_mul(w)).unwrap_or(usize::MAX);
        if features == 0 || self.classes < 2 {
            return Err(Error::invalid("model", format!("input {:?} with {} classes cannot be built", self.input, self.classes)));
        }
        let widest = match self.preset {
            Preset::SeedMlp => [features.checked_mul(64), self.classes.checked_mul(64)],
            Preset::Mlp => [features.checked_mul(256), self.classes.checked_mul(256)],
            Preset::Cnn => [
                c.checked_mul(16 * 9),
                (h / 4).checked_mul(w / 4).and_then(|n| n.checked_mul(32)).and_then(|n| n.checked_mul(self.classes)),
            ],
        };
        if widest.iter().any(|n| !n.is_some_and(|n| n <= MAX_WEIGHTS)) {
            return Err(Error::invalid(
                "model",
                format!("input {:?} with {} classes needs a weight matrix of more than {MAX_WEIGHTS} values", self.input, self.classes),
            ));
        }
        Ok(match self.preset {
            Preset::SeedMlp => Sequential::new()
                .push(Flatten)
                .push(Linear::with_init(dev, features, 64, WeightInit::Glorot, true, &mut init)?)
                .push(Activation::Sigmoid)
                .push(Linear::with_init(dev, 64, self.classes, WeightInit::Glorot, true, &mut init)?)
                .push(Activation::Sigmoid),
            Preset::Mlp => Sequential::new()
                .push(Flatten)
                .push(Linear::with_init(dev, features, 256, WeightInit::He, true, &mut init)?)
                .push(Activation::Relu)
                .push(Linear::with_init(dev, 256, self.classes, WeightInit::Glorot, true, &mut init)?),
            Preset::Cnn => {
                let c1 = Conv2d::new(dev, c, 16, 3, 1, 1, &mut init)?;
                let (h1, w1) = (h / 2, w / 2);
                let c2 = Conv2d::new(dev, 16, 32, 3, 1, 1, &mut init)?;
                let (h2, w2) = (h1 / 2, w1 / 2);
                if h2 == 0 || w2 == 0 {
                    return Err(Error::invalid("model", format!("cnn needs inputs of at least 4x4, got {h}x{w}")));
                }
                Sequential::new()
                    .push(c1)
                    .push(Activation::Relu)
                    .push(MaxPool2d::new(2))
                    .push(c2)
                    .push(Activation::Relu)
                    .push(MaxPool2d::new(2))
                    .push(Flatten)
                    .push(Linear::with_init(dev, 32 * h2 * w2, self.classes, WeightInit::Glorot, true, &mut init)?)
            }
        })
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

/// Most values one weight tensor of a preset may hold (256 MiB of f32): model files give the
/// sizes, and a corrupt or hostile one must not make the program allocate without bound.
pub const MAX_WEIGHTS: usize = 1 << 26;

/// Metadata key under which [`ModelSpec::to_meta`] is stored.
pub const SPEC_KEY: &str = "pixelgrad.model";
