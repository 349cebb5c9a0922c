//! `pixelgrad predict`: grey-scale a PNG, resize it to the model's input, print class
//! probabilities.

use std::path::PathBuf;

use clap::Args;
use pixelgrad::data;
use pixelgrad::nn::config::SampleShape;
use pixelgrad::nn::train::predict;
use pixelgrad::nn::Loss;
use pixelgrad::Tensor;

use crate::eval::{load_model, read_model_file};
use crate::{backend, model, CliResult, Context};

#[derive(Args)]
pub struct PredictArgs {
    /// A model.safetensors written by `pixelgrad train`
    #[arg(long)]
    pub model_file: PathBuf,
    /// The image to classify (any PNG; dark-on-light drawings are inverted automatically)
    pub image: PathBuf,
    #[arg(long, default_value = "auto")]
    pub backend: String,
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: PredictArgs) -> CliResult<()> {
    let file = read_model_file(&a.model_file)?;
    let sel = backend::select(&a.backend)?;
    let model = load_model(&a.model_file, &file, &sel.device)?;
    let cfg = file.config;
    let seed = model::is_seed_mlp(&cfg);
    let SampleShape::Image(_, mh, mw) = cfg.input().ctx()? else {
        return Err(format!("{}: predict takes image models (inputShape [c, h, w])", a.model_file.display()));
    };
    let (mut pixels, w, h) = data::load_png_gray(&a.image).ctx()?;
    data::auto_invert(&mut pixels, w, h).ctx()?;
    let x = if seed {
        // the seed network sees rows 1..7 of the 8x8 digit
        let full = data::resize_bilinear(&pixels, w, h, 8, 8).ctx()?;
        full[8..56].to_vec()
    } else {
        data::resize_bilinear(&pixels, w, h, mw, mh).ctx()?
    };
    let mut shape = vec![1];
    shape.extend(cfg.input().ctx()?.dims());
    let xt = Tensor::from_vec(&sel.device, &x, shape).ctx()?;
    let out = predict(&model, &xt).ctx()?;
    let probs: Vec<f32> = if cfg.loss().ctx()? != Loss::Mse {
        let m = out.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = out.iter().map(|v| (v - m).exp()).collect();
        let s: f32 = e.iter().sum();
        e.iter().map(|v| v / s).collect()
    } else {
        let s: f32 = out.iter().sum::<f32>().max(1e-12);
        out.iter().map(|v| v / s).collect()
    };
    let best = probs.iter().enumerate().fold((0, f32::MIN), |b, (i, &p)| if p > b.1 { (i, p) } else { b });
    if a.json {
        println!("{}", serde_json::json!({ "class": best.0, "probabilities": probs }));
    } else {
        for (i, p) in probs.iter().enumerate() {
            println!("class {i}: {p:.4}{}", if i == best.0 { "  <-" } else { "" });
        }
        if seed {
            println!("(seed-mlp classes: 0 = digit >= 5, 1 = digit < 5)");
        }
    }
    Ok(())
}
