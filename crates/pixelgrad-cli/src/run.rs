//! `pixelgrad run MODEL.onnx --input NAME=FILE.npy ...`: runs an ONNX model on a backend and
//! writes its outputs as `.npy` files.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use pixelgrad_onnx::{npy, HostTensor, Input, Model, Session};

use crate::{backend, CliResult, Context};

#[derive(Args)]
pub struct RunArgs {
    /// The .onnx model file
    pub model: PathBuf,
    /// An input as NAME=FILE.npy (float32, float16, int64, int32 or uint8); repeat per input
    #[arg(long = "input", value_name = "NAME=FILE.npy")]
    pub inputs: Vec<String>,
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Folder for output_0.npy, output_1.npy, ... and outputs.json
    #[arg(long, default_value = "runs/onnx")]
    pub out: PathBuf,
    /// Run the model this many times (run_ms is the median)
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Print one JSON object as the last line of stdout
    #[arg(long)]
    pub json: bool,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

pub fn run(a: RunArgs) -> CliResult<()> {
    if a.repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    // Inputs and model first, so bad files fail before a backend starts.
    let mut feeds: Vec<(String, HostTensor)> = Vec::new();
    for spec in &a.inputs {
        let (name, file) = spec.split_once('=').ok_or_else(|| format!("--input '{spec}': expected NAME=FILE.npy"))?;
        if name.is_empty() {
            return Err(format!("--input '{spec}': the input name is empty"));
        }
        feeds.push((name.to_string(), npy::load(Path::new(file)).ctx()?));
    }
    let t_load = Instant::now();
    let model = Model::load(&a.model).ctx()?;
    let sel = backend::select(&a.backend)?;
    eprintln!("backend: {}", sel.explain());
    let weight_bytes = model.weight_bytes();
    let session = Session::new(model, &sel.device).ctx()?;
    sel.device.flush().ctx()?;
    let load_ms = ms(t_load);
    let inputs: Vec<(&str, Input)> = feeds.iter().map(|(n, t)| (n.as_str(), Input::Host(t.clone()))).collect();
    let _g = pixelgrad::no_grad();
    let mut times = Vec::with_capacity(a.repeat);
    let mut results = Vec::new();
    for _ in 0..a.repeat {
        let t = Instant::now();
        let outs = session.run(&inputs).ctx()?;
        // reading the outputs back is part of a run (GPU work is asynchronous until then)
        results = outs.iter().map(|(n, v)| v.to_host().map(|h| (n.clone(), h))).collect::<Result<Vec<_>, _>>().ctx()?;
        times.push(ms(t));
    }
    let first_run_ms = times[0];
    let mut sorted = times.clone();
    sorted.sort_by(|x, y| x.total_cmp(y));
    let run_ms = sorted[sorted.len() / 2];
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let mut listed = Vec::new();
    for (k, (name, t)) in results.iter().enumerate() {
        let file = format!("output_{k}.npy");
        let path = a.out.join(&file);
        std::fs::write(&path, npy::write(t).ctx()?).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("{name}: {} {:?} -> {}", t.dtype, t.shape, path.display());
        listed.push(serde_json::json!({ "name": name, "shape": t.shape, "dtype": t.dtype.name(), "file": file }));
    }
    let index = a.out.join("outputs.json");
    let text = serde_json::to_string_pretty(&serde_json::json!({ "outputs": listed })).ctx()?;
    std::fs::write(&index, text).map_err(|e| format!("{}: {e}", index.display()))?;
    eprintln!(
        "load {load_ms:.1} ms, first run {first_run_ms:.1} ms, median of {} runs {run_ms:.1} ms, {weight_bytes} weight bytes",
        a.repeat
    );
    if a.json {
        let j = serde_json::json!({
            "backend": sel.device.kind().as_str(),
            "device": sel.name,
            "outputs": listed,
            "load_ms": load_ms,
            "first_run_ms": first_run_ms,
            "run_ms": run_ms,
            "weight_bytes": weight_bytes,
        });
        println!("{j}");
    }
    Ok(())
}
