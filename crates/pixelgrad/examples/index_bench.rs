//! Time per launch of gather and scatter-add on WebGPU, WebGL2 and the `webgl1` mode, for an
//! embedding-style lookup (rows of a table along axis 0) and a last-axis pick and its scatter
//! (cross-entropy's shape). Benchmark, not a test: it asserts nothing. Uses only `gather` /
//! `scatter_add`, so the same file measures an older build side by side.
//!
//! `cargo run -p pixelgrad --features webgpu,webgl --example index_bench -- [reps]`

use std::time::Instant;

use pixelgrad::cpu::CpuBackend;
use pixelgrad::webgl::{WebGlBackend, WebGlOptions};
use pixelgrad::wgpu::{WgpuBackend, WgpuOptions};
use pixelgrad::{Device, Result, Tensor};

fn time(label: &str, op: &str, case: &str, reps: usize, f: &dyn Fn() -> Result<Tensor>) -> Result<()> {
    f()?.to_vec()?;
    let t = Instant::now();
    let mut last = None;
    for _ in 0..reps {
        last = Some(f()?);
    }
    if let Some(l) = last {
        l.to_vec()?;
    }
    println!("{label:<8} {op:<12} {case:<10} {:>9.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    Ok(())
}

/// Whole-number indices in `0..n` (as floats), deterministic.
fn indices(dev: &Device, dims: Vec<usize>, n: usize) -> Result<Tensor> {
    let len: usize = dims.iter().product();
    let v: Vec<f32> = (0..len).map(|i| ((i * 7919 + 13) % n) as f32).collect();
    Tensor::from_vec(dev, &v, dims)
}

fn bench(label: &str, dev: &Device, reps: usize) -> Result<()> {
    // Embedding: a [512, 64] table, 2048 rows looked up (idx expanded over the row).
    let table = Tensor::rand_uniform(dev, vec![512, 64], -1.0, 1.0, 1)?;
    let rows = indices(dev, vec![2048, 1], 512)?.broadcast_to(vec![2048, 64])?;
    time(label, "gather", "embed", reps, &|| table.gather(0, &rows))?;
    let g = Tensor::rand_uniform(dev, vec![2048, 64], -1.0, 1.0, 2)?;
    time(label, "scatter_add", "embed", reps, &|| g.scatter_add(0, 512, &rows))?;
    // Cross-entropy pick: [256, 1000] logits, one class per row, and its gradient's scatter.
    let logits = Tensor::rand_uniform(dev, vec![256, 1000], -1.0, 1.0, 3)?;
    let pick = indices(dev, vec![256, 1], 1000)?;
    time(label, "gather", "pick", reps, &|| logits.gather(1, &pick))?;
    let dp = Tensor::rand_uniform(dev, vec![256, 1], -1.0, 1.0, 4)?;
    time(label, "scatter_add", "pick", reps, &|| dp.scatter_add(1, 1000, &pick))?;
    Ok(())
}

fn main() -> Result<()> {
    let reps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    bench("cpu", &Device::new(CpuBackend::new()), reps)?;
    bench("webgpu", &Device::new(WgpuBackend::new(WgpuOptions::default())?), reps)?;
    bench("webgl2", &Device::new(WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() })?), reps)?;
    let gl1 = WebGlOptions { self_test: false, webgl1: true, ..Default::default() };
    bench("webgl1", &Device::new(WebGlBackend::new_headless(gl1)?), reps)?;
    Ok(())
}
