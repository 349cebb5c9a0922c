//! Backend selection: `auto` tries WebGPU, then WebGL2, then WebGL1 (the webgl backend's GLSL ES
//! 1.00 mode), then the CPU, and says why it chose.
//!
//! A GPU backend is chosen by `auto` only if it starts, its precision self-test against host
//! f64 passes (`pixelgrad::SELF_TEST_TOL`), and its adapter is real hardware: software rasterisers
//! (Mesa lavapipe / llvmpipe, SwiftShader) run the GPU code on the CPU more slowly than the CPU
//! backend itself, so `auto` passes them over with that reason. Naming a backend explicitly
//! (`--backend webgpu`) always uses it if it starts; a WebGL device named so that stores
//! tensors in RGBA16F passes within a half-float tolerance, and training on it is checked
//! against the CPU first (`pixelgrad train` prints the check).
//!
//! When `auto` is given the model to train and more than one backend passes those checks (a
//! hardware GPU and the CPU, say), it times that model on each (`crate::measure`) and takes the
//! fastest: for a small model the CPU can beat a GPU's launch overhead. The choice is cached per
//! model and device set. Test hook: `PIXELGRAD_AUTO_SOFTWARE=1` lets `auto` consider software
//! rasterisers too (they are then measured like any other), so the measuring path runs on
//! machines without a GPU.

use pixelgrad::cpu::CpuBackend;
use pixelgrad::nn::ModelConfig;
use pixelgrad::{is_software_renderer, Device, SELF_TEST_TOL};

use crate::measure::{self, Choice};

/// Self-test tolerance of a WebGL device named explicitly whose tensors are RGBA16F (half
/// floats keep ~3 decimal digits; beyond this even small networks do not train).
const HALF_SELF_TEST_TOL: f64 = 5e-2;

use crate::CliResult;

/// The chosen device and the log of what was tried.
pub struct Selected {
    pub device: Device,
    pub name: String,
    pub tried: Vec<(String, Result<String, String>)>,
    /// The timings `auto` chose by, when it measured (or read them from its cache).
    pub measured: Option<Choice>,
}

impl Selected {
    /// One clause per backend tried, e.g. `webgpu: skipped (no adapter)`.
    pub fn explain(&self) -> String {
        let mut s = Vec::new();
        for (b, r) in &self.tried {
            match r {
                Ok(why) => s.push(format!("{b}: chosen ({why})")),
                Err(why) => s.push(format!("{b}: skipped ({why})")),
            }
        }
        if let Some(m) = &self.measured {
            s.push(m.summary());
        }
        s.join("; ")
    }
}

/// Starts a backend. `auto` is true when called from auto-selection (stricter: no software
/// adapters). On success returns the device and a short reason.
pub fn try_backend(name: &str, auto: bool) -> Result<(Device, String), String> {
    match name {
        "cpu" => {
            let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            Ok((Device::new(CpuBackend::new()), format!("f32, {threads} threads")))
        }
        "webgpu" => {
            let b = pixelgrad::wgpu::WgpuBackend::new(Default::default()).map_err(|e| e.to_string())?;
            let report = b.report();
            let st = b.self_test().map_err(|e| format!("self-test failed to run: {e}"))?;
            if !st.passes(SELF_TEST_TOL) {
                return Err(format!("self-test max relative error {:.2e} exceeds {SELF_TEST_TOL:.0e}", st.max_rel_error));
            }
            if auto && report.is_software() && !software_allowed() {
                return Err(format!(
                    "adapter '{}' is a software rasteriser, slower than the CPU backend; use --backend webgpu to force it",
                    report.adapter
                ));
            }
            Ok((Device::new(b), format!("adapter '{}', self-test max rel error {:.1e}", report.adapter, st.max_rel_error)))
        }
        "webgl" | "webgl1" => {
            // webgl1: the same backend's GLSL ES 1.00 mode (what runs on WebGL1-only devices).
            let opts = pixelgrad::webgl::WebGlOptions { webgl1: name == "webgl1", ..Default::default() };
            let b = pixelgrad::webgl::WebGlBackend::new_headless(opts).map_err(|e| e.to_string())?;
            let report = b.report();
            let st = match report.self_test.clone() {
                Some(st) => st,
                None => b.self_test().map_err(|e| format!("self-test failed to run: {e}"))?,
            };
            // Half-float tensors (a device without 32-bit float render targets) miss the f32
            // tolerance by design: named explicitly, such a device is used within the half
            // tolerance, and `pixelgrad train` checks its first steps against the CPU
            // (`pixelgrad::nn::train::PrecisionCheck`) and falls back when they differ.
            let half = !auto && report.format == pixelgrad::webgl::TexelFormat::Rgba16F;
            let tol = if half { HALF_SELF_TEST_TOL } else { SELF_TEST_TOL };
            if st.max_rel_error.is_nan() || st.max_rel_error > tol {
                return Err(format!(
                    "self-test max relative error {:.2e} exceeds {tol:.0e} ({:?} textures)",
                    st.max_rel_error, report.format
                ));
            }
            if auto && is_software_renderer(&report.renderer) && !software_allowed() {
                return Err(format!(
                    "renderer '{}' is a software rasteriser, slower than the CPU backend; use --backend {name} to force it",
                    report.renderer
                ));
            }
            Ok((
                Device::new(b),
                format!("renderer '{}', {:?} textures, self-test max rel error {:.1e}", report.renderer, report.format, st.max_rel_error),
            ))
        }
        other => Err(format!("unknown backend '{other}' (auto, cpu, webgpu, webgl, webgl1)")),
    }
}

fn software_allowed() -> bool {
    std::env::var("PIXELGRAD_AUTO_SOFTWARE").is_ok_and(|v| v == "1")
}

/// Picks the backend named by `choice` (`auto`, `cpu`, `webgpu`, `webgl`, `webgl1`); `auto`
/// takes the first that passes its checks.
pub fn select(choice: &str) -> CliResult<Selected> {
    select_for(choice, None)
}

/// As [`select`]; with `model` (the network and batch size to train), `auto` starts every
/// backend that passes its checks and measures that model on them when there is more than one.
pub fn select_for(choice: &str, model: Option<(&ModelConfig, usize)>) -> CliResult<Selected> {
    let auto = choice == "auto";
    let order: Vec<&str> = if auto { vec!["webgpu", "webgl", "webgl1", "cpu"] } else { vec![choice] };
    let mut tried = Vec::new();
    let mut started: Vec<(String, Device)> = Vec::new();
    for b in order {
        // WebGL1 is the WebGL backend's fallback mode, not a candidate of its own beside WebGL2.
        if b == "webgl1" && started.iter().any(|(s, _)| s == "webgl") {
            continue;
        }
        match try_backend(b, auto) {
            Ok((device, why)) => {
                tried.push((b.to_string(), Ok(why)));
                started.push((b.to_string(), device));
                if model.is_none() || !auto {
                    break;
                }
            }
            Err(why) => {
                if !auto {
                    return Err(format!("backend {b}: {why}"));
                }
                tried.push((b.to_string(), Err(why)));
            }
        }
    }
    if started.is_empty() {
        return Err("no backend could be started".into());
    }
    let measured = match model {
        Some((spec, batch)) if started.len() > 1 => Some(choose(&started, spec, batch)?),
        _ => None,
    };
    let index = measured.as_ref().and_then(|m| started.iter().position(|(b, _)| *b == m.backend)).unwrap_or(0);
    let (chosen, device) = started.swap_remove(index);
    // Only the chosen backend reads "chosen" in the log; the others started and lost.
    for (b, r) in tried.iter_mut() {
        if *b != chosen {
            if let Ok(why) = r {
                *r = Err(format!("slower on this model; {why}"));
            }
        }
    }
    Ok(Selected { name: device.name(), device, tried, measured })
}

/// The cached choice for these devices and this model, or a new measurement (then cached).
fn choose(started: &[(String, Device)], spec: &ModelConfig, batch: usize) -> CliResult<Choice> {
    let devices: Vec<(String, String)> = started.iter().map(|(b, d)| (b.clone(), d.name())).collect();
    let key = measure::cache_key(spec, batch, &devices);
    if let Some(c) = measure::cached(&key).filter(|c| started.iter().any(|(b, _)| *b == c.backend)) {
        return Ok(c);
    }
    let share = measure::BUDGET_MS / started.len() as f64;
    let mut timings = Vec::new();
    for (b, dev) in started {
        timings.push(measure::time_model(b, dev, spec, batch, share)?);
    }
    let backend = measure::fastest(&timings).map(|t| t.backend.clone()).unwrap_or_default();
    let choice = Choice { backend, timings, cached: false };
    if let Err(e) = measure::store(&key, &choice) {
        eprintln!("note: the measured backend choice is not cached ({e})");
    }
    Ok(choice)
}
