//! Choosing among backends by timing the caller's own model: a few warm training steps on each
//! candidate, the fastest wins, and the choice is kept per model and device set so the next run
//! starts at once.
//!
//! Each candidate runs [`WARM_STEPS`] untimed steps first (kernel compiles, buffer pools, step
//! plans recorded for both parities; their time is reported as `warm_ms`), then timed steps until
//! its share of [`BUDGET_MS`] is spent, at least [`MIN_STEPS`].
//!
//! The choice is cached in `auto-backend.json` under `$PIXELGRAD_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/pixelgrad`, else `~/.cache/pixelgrad`, keyed by the model's signature and
//! the devices' names (adapter or renderer strings), so a new driver or GPU measures again. A
//! cache file that cannot be read or parsed is ignored and rewritten.
//!
//! Test hook: `PIXELGRAD_TEST_SLOW_BACKENDS=cpu,webgl` adds 50 ms to every timed step of the
//! named backends, so tests can make a known backend lose without timing anything themselves.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pixelgrad::nn::train::Samples;
use pixelgrad::nn::ModelConfig;
use pixelgrad::nn::{Mode, Module, OptimizerKind};
use pixelgrad::Device;
use serde::{Deserialize, Serialize};

use crate::{CliResult, Context};

/// Timed steps over all candidates together stay within this many milliseconds.
pub const BUDGET_MS: f64 = 300.0;

/// Untimed steps before the clock starts: step plans are recorded and settled by then.
pub const WARM_STEPS: usize = 4;

/// Timed steps even when the share of the budget is spent sooner.
pub const MIN_STEPS: usize = 2;

/// Delay the test hook adds to each timed step of a named backend.
const SLOW_HOOK: Duration = Duration::from_millis(50);

/// What one candidate measured.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Timing {
    pub backend: String,
    pub device: String,
    /// The untimed warm-up steps.
    pub warm_ms: f64,
    /// Mean of the timed steps.
    pub step_ms: f64,
    pub steps: usize,
}

/// A choice, measured now or read from the cache.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Choice {
    pub backend: String,
    pub timings: Vec<Timing>,
    #[serde(skip)]
    pub cached: bool,
}

impl Choice {
    /// `cpu 1.2 ms/step (chosen), webgpu 9.8 ms/step`, plus `cached` when read from the cache.
    pub fn summary(&self) -> String {
        let rows: Vec<String> = self
            .timings
            .iter()
            .map(|t| format!("{} {:.2} ms/step{}", t.backend, t.step_ms, if t.backend == self.backend { " (chosen)" } else { "" }))
            .collect();
        format!("measured: {}{}", rows.join(", "), if self.cached { "; cached" } else { "" })
    }
}

/// The fastest timing's backend (`None` for none).
pub fn fastest(timings: &[Timing]) -> Option<&Timing> {
    timings.iter().min_by(|a, b| a.step_ms.total_cmp(&b.step_ms))
}

fn slowed(backend: &str) -> bool {
    std::env::var("PIXELGRAD_TEST_SLOW_BACKENDS").is_ok_and(|v| v.split(',').any(|b| b.trim() == backend))
}

/// Times training steps of `spec` at `batch` on `dev` within `budget_ms` of timed steps.
pub fn time_model(backend: &str, dev: &Device, spec: &ModelConfig, batch: usize, budget_ms: f64) -> CliResult<Timing> {
    let built = spec.build_parts(dev, 1, None).ctx()?;
    let model = built.seq;
    let input = built.input.user_dims(spec.data_format);
    let per: usize = input.iter().product();
    let classes = built.output.numel().max(1);
    let x: Vec<f32> = (0..batch * per).map(|i| pixelgrad::rng::uniform(3, i as u64)).collect();
    let y: Vec<u32> = (0..batch).map(|i| (i % classes) as u32).collect();
    let samples = Samples::new(&x, &input, &y).ctx()?;
    let idx: Vec<usize> = (0..batch).collect();
    let mut opt = OptimizerKind::parse("sgd").ctx()?.build(0.01);
    let loss = spec.loss().ctx()?;
    let mut step = || -> CliResult<()> {
        let l = dev
            .step(0x6d65_6173, || {
                let (xb, yb) = samples.batch(dev, &idx)?;
                let l = loss.compute(&model.forward(&xb, Mode::Train)?, &yb)?;
                l.backward()?;
                opt.step(&model)?;
                Ok(l.detach())
            })
            .ctx()?;
        // A readback ends each step, so queued GPU work is really done when the clock reads.
        l.to_vec().ctx()?;
        Ok(())
    };
    let t0 = Instant::now();
    for _ in 0..WARM_STEPS {
        step()?;
    }
    let warm_ms = t0.elapsed().as_secs_f64() * 1e3;
    let (t1, mut steps) = (Instant::now(), 0usize);
    while steps < MIN_STEPS || t1.elapsed().as_secs_f64() * 1e3 < budget_ms {
        step()?;
        if slowed(backend) {
            std::thread::sleep(SLOW_HOOK);
        }
        steps += 1;
    }
    let step_ms = t1.elapsed().as_secs_f64() * 1e3 / steps as f64;
    dev.drop_plans();
    Ok(Timing { backend: backend.to_string(), device: dev.name(), warm_ms, step_ms, steps })
}

/// Cache key: the model (its description), the batch and every candidate's device name.
pub fn cache_key(spec: &ModelConfig, batch: usize, devices: &[(String, String)]) -> String {
    let devs: Vec<String> = devices.iter().map(|(b, d)| format!("{b}={d}")).collect();
    format!("{}|batch {batch}|{}", spec.to_json(), devs.join("|"))
}

fn cache_file() -> Option<PathBuf> {
    let dir = match std::env::var_os("PIXELGRAD_CACHE_DIR") {
        Some(d) => PathBuf::from(d),
        None => match std::env::var_os("XDG_CACHE_HOME") {
            Some(d) => PathBuf::from(d).join("pixelgrad"),
            None => PathBuf::from(std::env::var_os("HOME")?).join(".cache").join("pixelgrad"),
        },
    };
    Some(dir.join("auto-backend.json"))
}

fn read_cache() -> BTreeMap<String, Choice> {
    cache_file().and_then(|f| std::fs::read(f).ok()).and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

/// The cached choice for `key`, if any.
pub fn cached(key: &str) -> Option<Choice> {
    read_cache().remove(key).map(|c| Choice { cached: true, ..c })
}

/// Stores `choice` under `key` (written to a temporary file, then renamed). A cache that cannot
/// be written costs only the next run's measurement, so the error is returned for a note.
pub fn store(key: &str, choice: &Choice) -> CliResult<()> {
    let file = cache_file().ok_or("no cache directory (set PIXELGRAD_CACHE_DIR or HOME)")?;
    let mut all = read_cache();
    all.insert(key.to_string(), Choice { cached: false, ..choice.clone() });
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let tmp = file.with_extension(format!("json.{}.tmp", std::process::id()));
    let body = serde_json::to_vec_pretty(&all).ctx()?;
    std::fs::write(&tmp, body).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &file).map_err(|e| format!("{}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(backend: &str, step_ms: f64) -> Timing {
        Timing { backend: backend.into(), device: format!("{backend} device"), warm_ms: 1.0, step_ms, steps: 3 }
    }

    #[test]
    fn the_fastest_candidate_wins() {
        assert_eq!(fastest(&[t("webgpu", 3.0), t("cpu", 1.5), t("webgl", 2.0)]).unwrap().backend, "cpu");
        assert!(fastest(&[]).is_none());
    }

    #[test]
    fn a_new_device_or_model_is_a_new_key() {
        use pixelgrad::nn::presets::Preset;
        let spec = Preset::Mlp.config([1, 8, 8], 10);
        let devs = vec![("cpu".to_string(), "cpu".to_string()), ("webgpu".to_string(), "GPU A".to_string())];
        let k = cache_key(&spec, 32, &devs);
        let mut other = devs.clone();
        other[1].1 = "GPU B".into();
        assert_ne!(k, cache_key(&spec, 32, &other));
        assert_ne!(k, cache_key(&spec, 64, &devs));
        assert_ne!(k, cache_key(&Preset::Mlp.config([1, 8, 8], 3), 32, &devs));
    }
}
