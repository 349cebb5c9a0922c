//! `pixelgrad run MODEL.onnx --input NAME=FILE.npy ...`: runs an ONNX model on a backend and
//! writes its outputs as `.npy` files. An input may also be a PNG (`NAME=photo.png`): it is
//! decoded to 8-bit RGBA, uploaded as `[1, 4, H, W]` in `[0, 1]` and turned into the model input
//! on the device by `pixelgrad_image::preprocess` (`--resize`, `--fit`, `--mean`,
//! `--std`, `--channels`, `--layout`: the same definition as `pg.fromPixels` in the browser).

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use pixelgrad::image::{Fit, Layout, PixelSpec};
use pixelgrad::onnx::{npy, HostTensor, Input, Model, Session, WeightStorage};
use pixelgrad::{Device, Tensor};

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
    /// How float weights are stored on the device: auto (f16 for a float16 model, else f32),
    /// f32, or f16 (half the bytes; WebGPU's matrix products read them directly, other
    /// operators and backends widen them to f32 where read; see "arithmetic" in the JSON)
    #[arg(long, default_value = "auto", value_parser = ["auto", "f32", "f16"])]
    pub precision: String,
    /// Quantised models: how uint8 / int8 results are kept between nodes: 8bit (8-bit tensors,
    /// a quarter of the memory, where the backend stores them; WebGL1 does not) or f32 (whole
    /// numbers in f32: no narrowing and widening passes). The outputs are the same.
    #[arg(long, default_value = "8bit", value_parser = ["8bit", "f32"])]
    pub int8_activations: String,
    /// PNG inputs: output size H,W (default: the image's)
    #[arg(long, value_name = "H,W")]
    pub resize: Option<String>,
    /// PNG inputs: fill (stretch), cover (centre crop) or contain (letterbox)
    #[arg(long, default_value = "fill")]
    pub fit: String,
    /// PNG inputs: per-channel mean in [0, 1] pixel units (one value or one per channel)
    #[arg(long, value_name = "M[,M,M]")]
    pub mean: Option<String>,
    /// PNG inputs: per-channel std in [0, 1] pixel units: value = (v / 255 - mean) / std
    #[arg(long, value_name = "S[,S,S]")]
    pub std: Option<String>,
    /// PNG inputs: 1 (luma), 3 (RGB) or 4 (RGBA)
    #[arg(long, default_value_t = 3)]
    pub channels: usize,
    /// PNG inputs: nchw ([1, C, H, W]) or nhwc ([1, H, W, C])
    #[arg(long, default_value = "nchw")]
    pub layout: String,
    /// Most elements one result may have (default 2^28 = 1 GiB of f32); a model asking for more
    /// is refused before anything is allocated
    #[arg(long, value_name = "N")]
    pub max_elements: Option<usize>,
    /// Most estimated steps of work one primitive may do (default 2^36)
    #[arg(long, value_name = "N")]
    pub max_op_work: Option<u64>,
    /// Most estimated steps of work one run may do (default 2^40); lower it for models you do
    /// not trust
    #[arg(long, value_name = "N")]
    pub max_work: Option<u64>,
}

/// A budget refusal names the library calls that raise the limit; on the command line the
/// flags do.
fn with_flag_hint(e: String) -> String {
    if e.contains("(raise it with") {
        format!("{e}; pixelgrad run: --max-elements, --max-op-work or --max-work")
    } else {
        e
    }
}

/// The `PixelSpec` of the image flags.
fn pixel_spec(a: &RunArgs) -> Result<PixelSpec, String> {
    let nums = |s: &str, what: &str| -> Result<Vec<f32>, String> {
        s.split(',').map(|v| v.trim().parse::<f32>().map_err(|_| format!("--{what} '{s}': expected numbers separated by commas"))).collect()
    };
    let per_channel = |s: &Option<String>, what: &str, default: f32| -> Result<[f32; 4], String> {
        let Some(s) = s else { return Ok([default; 4]) };
        let v = nums(s, what)?;
        match v.len() {
            1 => Ok([v[0]; 4]),
            n if n >= a.channels && n <= 4 => {
                let mut out = [default; 4];
                out[..n].copy_from_slice(&v);
                Ok(out)
            }
            n => Err(format!("--{what} '{s}': {n} values for {} channels (give one, or one per channel)", a.channels)),
        }
    };
    let size = match &a.resize {
        None => None,
        Some(s) => {
            let v: Vec<usize> = s
                .split(',')
                .map(|x| x.trim().parse::<usize>())
                .collect::<Result<_, _>>()
                .map_err(|_| format!("--resize '{s}': expected H,W"))?;
            match v[..] {
                [h, w] => Some((h, w)),
                _ => return Err(format!("--resize '{s}': expected H,W")),
            }
        }
    };
    let spec = PixelSpec {
        size,
        fit: Fit::parse(&a.fit).ctx()?,
        channels: a.channels,
        layout: Layout::parse(&a.layout).ctx()?,
        mean: per_channel(&a.mean, "mean", 0.0)?,
        std: per_channel(&a.std, "std", 1.0)?,
        ..PixelSpec::default()
    };
    spec.validate("--input").ctx()?;
    Ok(spec)
}

/// A PNG input decoded to 8-bit RGBA, before a backend starts: `(pixels, width, height)`.
/// The data crate's decoder refuses a header claiming more than `MAX_PNG_PIXELS` before
/// allocating anything.
struct DecodedPng {
    path: PathBuf,
    px: Vec<u8>,
    w: usize,
    h: usize,
}

fn decode_png(path: &Path) -> Result<DecodedPng, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = path.display().to_string();
    let (px, w, h) = pixelgrad::data::decode_png_rgba8(&bytes, &file).map_err(|e| match e {
        pixelgrad::data::DataError::Png { detail, .. } => format!("{file}: not a readable PNG: {detail}"),
        other => other.to_string(),
    })?;
    Ok(DecodedPng { path: path.to_path_buf(), px, w, h })
}

/// The model input for a PNG file under `spec`, computed on `dev`.
fn image_input(img: &DecodedPng, spec: &PixelSpec, dev: &Device) -> Result<Tensor, String> {
    let DecodedPng { path, px, w, h } = img;
    let (w, h) = (*w, *h);
    // HWC bytes -> [1, 4, H, W] in [0, 1]
    let mut chw = vec![0f32; 4 * w * h];
    for (i, p) in px.chunks_exact(4).enumerate() {
        for c in 0..4 {
            chw[c * w * h + i] = f32::from(p[c]) / 255.0;
        }
    }
    let x = Tensor::from_vec(dev, &chw, [1, 4, h, w]).ctx()?;
    let (t, g) = pixelgrad::composite::preprocess(&x, spec).ctx()?;
    eprintln!(
        "{}: {w}x{h} -> {:?} ({}, content {}x{} at ({}, {}))",
        path.display(),
        t.dims(),
        spec.fit.name(),
        g.x.len,
        g.y.len,
        g.x.start,
        g.y.start
    );
    Ok(t)
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
    let mut images: Vec<(String, DecodedPng)> = Vec::new();
    for spec in &a.inputs {
        let (name, file) = spec.split_once('=').ok_or_else(|| format!("--input '{spec}': expected NAME=FILE.npy or NAME=FILE.png"))?;
        if name.is_empty() {
            return Err(format!("--input '{spec}': the input name is empty"));
        }
        if file.to_ascii_lowercase().ends_with(".png") {
            images.push((name.to_string(), decode_png(Path::new(file))?));
        } else {
            feeds.push((name.to_string(), npy::load(Path::new(file)).ctx()?));
        }
    }
    let pixels = pixel_spec(&a)?;
    if a.max_elements == Some(0) || a.max_op_work == Some(0) || a.max_work == Some(0) {
        return Err("--max-elements, --max-op-work and --max-work must be at least 1".into());
    }
    let t_load = Instant::now();
    let model = Model::load(&a.model).map_err(|e| with_flag_hint(e.to_string()))?;
    let sel = backend::select(&a.backend)?;
    eprintln!("backend: {}", sel.explain());
    let mut limits = sel.device.limits();
    limits.max_elements = a.max_elements.unwrap_or(limits.max_elements);
    limits.max_op_work = a.max_op_work.unwrap_or(limits.max_op_work);
    sel.device.set_limits(limits);
    let weight_bytes = model.weight_bytes();
    let storage = match a.precision.as_str() {
        "f16" => WeightStorage::F16,
        "f32" => WeightStorage::F32,
        _ => WeightStorage::Auto,
    };
    let session = Session::with_storage(std::rc::Rc::new(model), &sel.device, storage).ctx()?;
    session.set_int8_activations(a.int8_activations == "8bit");
    if let Some(w) = a.max_work {
        session.set_max_work(w);
    }
    if a.precision == "f16" && session.weight_storage() == "f32" {
        eprintln!("precision f16: {} has no f16 storage; the weights stay f32", sel.device.name());
    }
    if session.weight_storage() != "f32" {
        let hw = match sel.device.backend().caps().shader_f16 {
            Some(true) => " (the adapter offers shader-f16)",
            Some(false) => " (the adapter has no shader-f16)",
            None => "",
        };
        eprintln!("f16 weights: stored in f16; matrix products: arithmetic {}{hw}", session.arithmetic());
    }
    sel.device.flush().ctx()?;
    let load_ms = ms(t_load);
    let mut inputs: Vec<(&str, Input)> = feeds.iter().map(|(n, t)| (n.as_str(), Input::Host(t.clone()))).collect();
    for (name, img) in &images {
        inputs.push((name.as_str(), Input::Tensor(image_input(img, &pixels, &sel.device)?)));
    }
    let _g = pixelgrad::no_grad();
    let mut times = Vec::with_capacity(a.repeat);
    let mut results = Vec::new();
    let mut launches = 0;
    for _ in 0..a.repeat {
        let t = Instant::now();
        let before = sel.device.counters().launches;
        let outs = session.run(&inputs).map_err(|e| with_flag_hint(e.to_string()))?;
        // reading the outputs back is part of a run (GPU work is asynchronous until then)
        results = outs.iter().map(|(n, v)| v.to_host().map(|h| (n.clone(), h))).collect::<Result<Vec<_>, _>>().ctx()?;
        times.push(ms(t));
        launches = sel.device.counters().launches - before;
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
        pixelgrad_durable::write(&path, npy::write(t).ctx()?).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("{name}: {} {:?} -> {}", t.dtype, t.shape, path.display());
        listed.push(serde_json::json!({ "name": name, "shape": t.shape, "dtype": t.dtype.name(), "file": file }));
    }
    let index = a.out.join("outputs.json");
    let text = serde_json::to_string_pretty(&serde_json::json!({ "outputs": listed })).ctx()?;
    pixelgrad_durable::write(&index, text).map_err(|e| format!("{}: {e}", index.display()))?;
    eprintln!(
        "load {load_ms:.1} ms, first run {first_run_ms:.1} ms, median of {} runs {run_ms:.1} ms, {weight_bytes} weight bytes, {launches} launches per run",
        a.repeat
    );
    let precision = session.model().precision();
    let device_weight_bytes = session.device_weight_bytes();
    let device_table_bytes = session.device_table_bytes();
    if let Some(path) = session.int8_path() {
        eprintln!(
            "precision: {} ({} int8 nodes, {} f32 nodes), int8 path {path}, {device_weight_bytes} weight bytes \
             and {device_table_bytes} QLinearAdd/QLinearMul table bytes on the device, quantised activations in {} storage",
            precision.summary(),
            precision.int8.values().sum::<usize>(),
            precision.f32.values().sum::<usize>(),
            session.activation_storage()
        );
    }
    if a.json {
        let j = serde_json::json!({
            "backend": sel.device.kind().as_str(),
            "device": sel.name,
            "outputs": listed,
            "load_ms": load_ms,
            "first_run_ms": first_run_ms,
            "run_ms": run_ms,
            "launches_per_run": launches,
            "weight_bytes": weight_bytes,
            "device_weight_bytes": device_weight_bytes,
            "device_table_bytes": device_table_bytes,
            "activation_bytes": session.activation_bytes(),
            "activation_storage": session.activation_storage(),
            "precision": precision.summary(),
            "weight_storage": session.weight_storage(),
            "precision_groups": { "int8": precision.int8, "f32": precision.f32 },
            "path": session.int8_path().unwrap_or("f32"),
            "arithmetic": session.arithmetic(),
            "shader_f16": sel.device.backend().caps().shader_f16,
        });
        println!("{j}");
    }
    Ok(())
}
