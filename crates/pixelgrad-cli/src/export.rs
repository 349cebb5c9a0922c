//! `pixelgrad export --model-file F --onnx OUT.onnx`: a model saved by `pixelgrad train`
//! written as ONNX (input `input` `[N, C, H, W]`, output `output`), runnable by onnxruntime.

use std::path::PathBuf;

use clap::Args;
use pixelgrad::cpu::CpuBackend;
use pixelgrad::Device;

use crate::eval::{load_model, read_model_file};
use crate::{CliResult, Context};

#[derive(Args)]
pub struct ExportArgs {
    /// A model.safetensors written by `pixelgrad train`
    #[arg(long)]
    pub model_file: PathBuf,
    /// Where to write the .onnx file
    #[arg(long)]
    pub onnx: PathBuf,
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: ExportArgs) -> CliResult<()> {
    let file = read_model_file(&a.model_file)?;
    // Export only reads the weights: the CPU backend is enough.
    let dev = Device::new(CpuBackend::new());
    let model = load_model(&a.model_file, &file, &dev)?;
    let shape = file.config.input().ctx()?.dims();
    let bytes = pixelgrad::onnx::export::to_onnx(&model, &shape).ctx()?;
    pixelgrad_durable::write(&a.onnx, &bytes).map_err(|e| format!("{}: {e}", a.onnx.display()))?;
    eprintln!(
        "{} -> {} ({} bytes; input 'input' [N, {}], output 'output')",
        a.model_file.display(),
        a.onnx.display(),
        bytes.len(),
        shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
    );
    if a.json {
        println!(
            "{}",
            serde_json::json!({ "onnx": a.onnx.display().to_string(), "bytes": bytes.len(), "input": "input", "output": "output", "sample_shape": shape })
        );
    }
    Ok(())
}
