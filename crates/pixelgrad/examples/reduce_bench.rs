//! Time per launch of the reductions on WebGPU, WebGL2 and the `webgl1` mode: softmax-style
//! last-axis rows, a bias-gradient-style first axis, a long axis (several passes on WebGL), a
//! long argmax (its candidate pass and min tree) and a sum with a fused prologue. Benchmark,
//! not a test: it asserts nothing. Uses only the public tensor API, so the same file measures
//! an older build side by side. Times include reading the (small) result back.
//!
//! `cargo run -p pixelgrad --features webgpu,webgl --example reduce_bench -- [reps]`

use std::time::Instant;

use pixelgrad::cpu::CpuBackend;
use pixelgrad::webgl::{WebGlBackend, WebGlOptions};
use pixelgrad::wgpu::{WgpuBackend, WgpuOptions};
use pixelgrad::{Device, Result, Tensor};

fn time(label: &str, case: &str, reps: usize, f: &dyn Fn() -> Result<Tensor>) -> Result<()> {
    // Each result is read back: a reduction nobody reads may never be drawn (it stays a
    // pending value, to be fused into its reader).
    f()?.to_vec()?;
    let t = Instant::now();
    for _ in 0..reps {
        f()?.to_vec()?;
    }
    println!("{label:<8} {case:<22} {:>9.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    Ok(())
}

fn bench(label: &str, dev: &Device, reps: usize) -> Result<()> {
    let rows = Tensor::rand_uniform(dev, vec![256, 1000], -4.0, 4.0, 1)?;
    time(label, "sum [256,1000] ax1", reps, &|| rows.sum_axis(1, false))?;
    time(label, "max [256,1000] ax1", reps, &|| rows.max_axis(1, false))?;
    time(label, "lse [256,1000] ax1", reps, &|| rows.logsumexp(1, false))?;
    time(label, "argmax [256,1000] ax1", reps, &|| rows.argmax(1, false))?;
    let cols = Tensor::rand_uniform(dev, vec![1024, 256], -1.0, 1.0, 2)?;
    time(label, "sum [1024,256] ax0", reps, &|| cols.sum_axis(0, false))?;
    let long = Tensor::rand_uniform(dev, vec![4, 100_000], -1.0, 1.0, 3)?;
    time(label, "sum [4,100000] ax1", reps, &|| long.sum_axis(1, false))?;
    time(label, "argmax [4,100000] ax1", reps, &|| long.argmax(1, false))?;
    time(label, "sum(exp(x)) fused", reps, &|| rows.exp()?.sum_axis(1, false))?;
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
