//! `pixelgrad backends`: what this machine offers, why auto-selection picks one, what the chosen
//! backend measured at start-up, and (on request) a cross-check, layout table or timing of every
//! backend that starts. Selection itself is `crate::backend`.

use crate::backend::{select, try_backend};
use crate::{measure, CliResult};

/// `pixelgrad backends` options.
#[derive(clap::Args)]
pub struct BackendsArgs {
    /// Also cross-check every backend that starts against the f64 CPU reference
    /// (`pixelgrad check` with its defaults)
    #[arg(long)]
    pub check: bool,
    /// Also print the layout table (texture / buffer of every tensor) of a small model on each
    /// GPU backend that starts
    #[arg(long)]
    pub layouts: bool,
    /// Also time a few training steps of a model (the `--model` preset on 8x8 inputs, 10
    /// classes, `--batch`) on every backend that starts, software rasterisers included, and say
    /// which is fastest; `train --backend auto` does the same among its candidates
    #[arg(long)]
    pub measure: bool,
    /// Model timed by --measure (seed-mlp, mlp, cnn, or a FILE.json description)
    #[arg(long, default_value = "mlp")]
    pub model: String,
    /// Batch size timed by --measure
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// The backend whose capabilities to state (auto, cpu, webgpu, webgl, webgl1); a named
    /// one is started even where auto-selection would pass it over
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Print one JSON object (`using`, `selection`, `caps`) instead of the text
    #[arg(long, conflicts_with_all = ["check", "layouts", "measure"])]
    pub json: bool,
}

pub fn list(a: BackendsArgs) -> CliResult<()> {
    let s = select(&a.backend)?;
    let caps = s.device.backend().caps();
    if a.json {
        let j = serde_json::json!({ "using": s.name, "selection": s.explain(), "caps": caps });
        println!("{j}");
        return Ok(());
    }
    println!("{}: {}", if a.backend == "auto" { "auto-selection" } else { "selection" }, s.explain());
    println!("using: {}", s.name);
    match &caps.reduced_precision {
        None => println!("precision: f32"),
        Some(why) => println!(
            "precision: below f32 ({why}); `pixelgrad train` checks the first {} steps against the cpu and falls back to it when the losses differ by more than {} (relative)",
            pixelgrad::nn::train::PRECISION_CHECK_STEPS,
            pixelgrad::nn::train::PRECISION_CHECK_TOLERANCE
        ),
    }
    print!("{}", what_will_work(caps));
    // What the chosen backend measured at start-up (`Backend::caps`), one JSON object.
    let caps = serde_json::to_string(caps).map_err(|e| format!("caps: {e}"))?;
    println!("caps: {caps}");
    let mut failed = Vec::new();
    if a.check || a.layouts {
        for b in ["cpu", "webgpu", "webgl"] {
            let dev = match try_backend(b, false) {
                Ok((dev, _)) => dev,
                Err(why) => {
                    println!("\n{b}: not available ({why})");
                    continue;
                }
            };
            if a.check {
                let r = crate::check::check_device(&dev, &Default::default(), None)?;
                println!("\n{b} cross-check: {}", r.summary());
                if !r.passed() {
                    failed.push(b);
                }
            }
            if a.layouts && b != "cpu" {
                println!("\n{b} layout table ({}, mlp preset after one Adam step):", dev.name());
                print!("{}", crate::check::layouts(&dev)?);
            }
        }
    }
    if a.measure {
        measure_all(&a)?;
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("cross-check failed on {} (run `pixelgrad check --backend {}` for the table)", failed.join(", "), failed[0]))
    }
}

/// The lines of `pixelgrad backends` that say what will work on a backend, from its measured
/// [`Caps`](pixelgrad::Caps): storage and arithmetic precision, the largest texture and
/// tensor, and the training verdict with its reason.
fn what_will_work(c: &pixelgrad::Caps) -> String {
    let (arithmetic, training) = (c.arithmetic.as_str(), c.training.as_str());
    let texture = c.max_texture_side.map_or("none (no textures)".to_string(), |t| format!("{t} texels"));
    format!(
        "storage: {} mantissa bits (measured)\narithmetic: {arithmetic} ({} mantissa bits)\nlargest texture side: {texture}\n\
         largest tensor: {} elements\ntraining: {training} ({})\n",
        c.storage_mantissa_bits, c.arithmetic_mantissa_bits, c.max_tensor_elements, c.training_reason
    )
}

/// `backends --measure`: every backend that starts, timed on the same model, fastest named.
fn measure_all(a: &BackendsArgs) -> CliResult<()> {
    let model = crate::model::ModelArg::parse(&a.model)?;
    if a.batch == 0 {
        return Err("--batch must be at least 1".into());
    }
    let spec = model.config_for([1, 8, 8], 10)?;
    let mut started = Vec::new();
    for b in ["webgpu", "webgl", "webgl1", "cpu"] {
        match try_backend(b, false) {
            Ok((dev, _)) => started.push((b, dev)),
            Err(why) => println!("{b}: not available ({why})"),
        }
    }
    let share = measure::BUDGET_MS / started.len().max(1) as f64;
    println!(
        "\ntraining steps of {} at batch {} ({:.0} ms of timed steps per backend, after {} warm-up steps):",
        model.name(),
        a.batch,
        share,
        measure::WARM_STEPS
    );
    let mut timings = Vec::new();
    for (b, dev) in &started {
        let t = measure::time_model(b, dev, &spec, a.batch, share)?;
        println!("  {:<7} {:>9.2} ms/step over {:>3} steps (warm-up {:.0} ms)  {}", t.backend, t.step_ms, t.steps, t.warm_ms, t.device);
        timings.push(t);
    }
    if let Some(f) = measure::fastest(&timings) {
        println!("fastest: {}", f.backend);
    }
    Ok(())
}
