//! `pixelgrad eval`, and loading saved models (shared with `predict`).

use std::path::{Path, PathBuf};

use clap::Args;
use pixelgrad::nn::presets::{config_from_meta, SPEC_KEY};
use pixelgrad::nn::train::{evaluate, Samples};
use pixelgrad::nn::{io, ModelConfig, Sequential};
use pixelgrad::Device;

use crate::dataset::{self, DatasetSpec};
use crate::{backend, model, CliResult, Context};

#[derive(Args)]
pub struct EvalArgs {
    /// A model.safetensors written by `pixelgrad train`
    #[arg(long)]
    pub model_file: PathBuf,
    /// digits | idx:DIR | csv:PATH (its test split is used)
    #[arg(long, default_value = "digits")]
    pub dataset: String,
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Seed of the digits / CSV split (use the one given to `train`)
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
}

/// A model file read once: its bytes and the architecture recorded in it (its description,
/// or the preset string of older files). Reading it before any backend starts makes a missing
/// or foreign file fail fast.
pub struct ModelFile {
    pub config: ModelConfig,
    bytes: Vec<u8>,
}

pub fn read_model_file(path: &Path) -> CliResult<ModelFile> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let config = config_of(path, &bytes)?;
    config.input().map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(ModelFile { config, bytes })
}

fn config_of(path: &Path, bytes: &[u8]) -> CliResult<ModelConfig> {
    let meta = io::read_metadata(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let spec_s = meta
        .get(SPEC_KEY)
        .ok_or_else(|| format!("{}: no '{SPEC_KEY}' metadata; was it written by `pixelgrad train`?", path.display()))?;
    config_from_meta(spec_s).map_err(|e| format!("{}: {e}", path.display()))
}

/// Rebuilds the architecture recorded in the file on `dev` and loads its weights.
pub fn load_model(path: &Path, file: &ModelFile, dev: &Device) -> CliResult<Sequential> {
    let model = file.config.build(dev, 0).map_err(|e| format!("{}: {e}", path.display()))?;
    io::load_bytes(&model, &file.bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(model)
}

pub fn run(a: EvalArgs) -> CliResult<()> {
    let file = read_model_file(&a.model_file)?;
    let sel = backend::select(&a.backend)?;
    let model = load_model(&a.model_file, &file, &sel.device)?;
    let cfg = file.config;
    let data = dataset::load(&DatasetSpec::parse(&a.dataset)?, model::is_seed_mlp(&cfg), a.seed)?;
    let shape = model::sample_shape(&cfg, data.shape())?;
    let test = Samples::new(data.test.images(), &shape, data.test.labels()).ctx()?;
    let (loss, acc) = evaluate(&model, cfg.loss().ctx()?, &sel.device, test, 256).ctx()?;
    // class-index targets: accuracy is always defined
    let acc = acc.unwrap_or(f32::NAN);
    if a.json {
        println!("{}", serde_json::json!({ "test_accuracy": acc, "test_loss": loss, "samples": test.len(), "backend": sel.device.kind().as_str() }));
    } else {
        println!("{}: {} test samples, accuracy {acc:.4}, loss {loss:.4} ({})", data.name, test.len(), sel.name);
    }
    Ok(())
}
