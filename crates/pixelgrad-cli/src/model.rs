//! `--model`: a preset name (`seed-mlp`, `mlp`, `cnn`) or a JSON model description file
//! (`pixelgrad::nn::ModelConfig`), and how a description meets a data set.

use std::path::PathBuf;

use pixelgrad::nn::config::{DataFormat, SampleShape};
use pixelgrad::nn::presets::{ModelSpec, Preset};
use pixelgrad::nn::ModelConfig;

use crate::{CliResult, Context};

/// Largest description file read (a description is a few hundred bytes per layer).
const MAX_FILE_BYTES: u64 = 1 << 20;

/// What `--model` names.
pub enum ModelArg {
    Preset(Preset),
    /// A description file, as given and as read.
    File(PathBuf, ModelConfig),
}

impl ModelArg {
    /// A preset name, or a path to a `.json` description (read and checked now).
    pub fn parse(arg: &str) -> CliResult<Self> {
        if let Ok(p) = Preset::parse(arg) {
            return Ok(ModelArg::Preset(p));
        }
        let path = PathBuf::from(arg);
        if !arg.ends_with(".json") && !path.is_file() {
            return Err(format!("unknown model '{arg}' (seed-mlp, mlp, cnn, or a FILE.json model description)"));
        }
        let f = std::fs::File::open(&path).map_err(|e| format!("{arg}: {e}"))?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(f, MAX_FILE_BYTES + 1), &mut text).map_err(|e| format!("{arg}: {e}"))?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(format!("{arg}: a model description is at most {MAX_FILE_BYTES} bytes"));
        }
        let cfg = ModelConfig::from_json(&text).map_err(|e| format!("{arg}: {e}"))?;
        cfg.loss().map_err(|e| format!("{arg}: {e}"))?;
        Ok(ModelArg::File(path, cfg))
    }

    pub fn preset(&self) -> Option<Preset> {
        match self {
            ModelArg::Preset(p) => Some(*p),
            ModelArg::File(..) => None,
        }
    }

    /// The preset's name or the file as given (what a checkpoint records).
    pub fn name(&self) -> String {
        match self {
            ModelArg::Preset(p) => p.name().to_string(),
            ModelArg::File(p, _) => p.display().to_string(),
        }
    }

    /// True for the seed network, whose data are the 48-pixel view of the 8x8 digits.
    pub fn seed_view(&self) -> bool {
        self.preset() == Some(Preset::SeedMlp)
    }

    /// The description for data samples of `shape` with `classes` classes.
    pub fn config_for(&self, shape: [usize; 3], classes: usize) -> CliResult<ModelConfig> {
        match self {
            ModelArg::Preset(p) => {
                if shape.contains(&0) || classes < 2 {
                    return Err(format!("input {shape:?} with {classes} classes cannot be built"));
                }
                Ok(ModelSpec { preset: *p, input: shape, classes }.config())
            }
            ModelArg::File(_, cfg) => Ok(cfg.clone()),
        }
    }
}

/// True for a description of the seed network (a file written by `train --model seed-mlp`).
pub fn is_seed_mlp(cfg: &ModelConfig) -> bool {
    cfg.name.as_deref() == Some(Preset::SeedMlp.name())
}

/// The shape one sample is fed to the network in, for a data set of `[C, H, W]` samples: the
/// image itself (`channelsFirst` descriptions), or the image as a vector of its values.
pub fn sample_shape(cfg: &ModelConfig, data: [usize; 3]) -> CliResult<Vec<usize>> {
    let input = cfg.input().ctx()?;
    match input {
        SampleShape::Image(..) if cfg.data_format == DataFormat::ChannelsLast => Err(
            "the CLI's samples are [channels, height, width]: give the description \"dataFormat\": \"channelsFirst\" and an inputShape of [c, h, w]"
                .to_string(),
        ),
        SampleShape::Image(c, h, w) if [c, h, w] == data => Ok(data.to_vec()),
        SampleShape::Flat(n) if n == data.iter().product::<usize>() => Ok(vec![n]),
        other => Err(format!("the model takes samples of shape {:?}, the data set has {data:?}", other.dims())),
    }
}

/// The network ends in one row of at least `classes` values per sample.
pub fn check_output(cfg: &ModelConfig, output: SampleShape, classes: usize) -> CliResult<()> {
    match output {
        SampleShape::Flat(n) if n >= classes.max(2) => Ok(()),
        other => Err(format!(
            "the model's output {:?} does not fit {classes} classes (end with a dense layer of {classes} units){}",
            other.dims(),
            cfg.name.as_deref().map(|n| format!(" [{n}]")).unwrap_or_default()
        )),
    }
}

/// Builds `cfg` (named `what` in errors) with weights from `seed`, checking it ends in at
/// least `classes` outputs.
pub fn build(cfg: &ModelConfig, what: &str, dev: &pixelgrad::Device, seed: u64, classes: usize) -> CliResult<pixelgrad::nn::Sequential> {
    let built = cfg.build_parts(dev, seed, None).map_err(|e| format!("{what}: {e}"))?;
    check_output(cfg, built.output, classes).map_err(|e| format!("{what}: {e}"))?;
    Ok(built.seq)
}
