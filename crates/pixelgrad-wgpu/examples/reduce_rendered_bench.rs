//! The reductions on WebGPU side by side: the hand-written `kernels/reduce.wgsl` against the
//! passes rendered from their one definition (`ReduceKernel::Rendered`), two
//! backends in one process, each case timed on one then the other, alternating for `rounds`
//! rounds; a cell is the minimum over the rounds of the mean over `reps` launches (ms per
//! launch, reading the small result back). Inputs are stored tensors, except the cases
//! named `(fused)`: a reduction of a pending elementwise map, read by both launches through
//! the fused read. Benchmark, not a test: it asserts nothing.
//!
//! `cargo run -p pixelgrad-wgpu --example reduce_rendered_bench -- [reps] [rounds] [filter]`
//! (`filter`: only the cases whose label contains it).

use std::time::Instant;

use pixelgrad_core::{Device, Result, Tensor};
use pixelgrad_wgpu::{ReduceKernel, WgpuBackend, WgpuOptions};

type Case = (&'static str, Vec<usize>, fn(&Tensor) -> Result<Tensor>);

fn cases() -> Vec<Case> {
    vec![
        ("sum [1024,1024] ax1", vec![1024, 1024], |x| x.sum_axis(1, false)),
        ("max [1024,1024] ax1", vec![1024, 1024], |x| x.max_axis(1, false)),
        ("sum [1024,1024] ax0", vec![1024, 1024], |x| x.sum_axis(0, false)),
        ("sum [64,256,16] ax1", vec![64, 256, 16], |x| x.sum_axis(1, false)),
        ("argmax [1024,1000] ax1", vec![1024, 1000], |x| x.argmax(1, false)),
        ("lse [512,1000] ax1", vec![512, 1000], |x| x.logsumexp(1, false)),
        ("sum [8,10] ax1", vec![8, 10], |x| x.sum_axis(1, false)),
        ("sum [1<<20]", vec![1 << 20], |x| x.sum_axis(0, false)),
        ("argmax [1<<20]", vec![1 << 20], |x| x.argmax(0, false)),
        ("sum [4,100000] ax1", vec![4, 100_000], |x| x.sum_axis(1, false)),
        ("sum exp [1024,1024] ax1 (fused)", vec![1024, 1024], |x| x.exp()?.sum_axis(1, false)),
        ("max 2x+1 [1024,1024] ax0 (fused)", vec![1024, 1024], |x| x.mul_scalar(2.0)?.add_scalar(1.0)?.max_axis(0, false)),
        ("lse 2x [512,1000] ax1 (fused)", vec![512, 1000], |x| x.mul_scalar(2.0)?.logsumexp(1, false)),
        ("sum exp [1<<20] (fused)", vec![1 << 20], |x| x.exp()?.sum_axis(0, false)),
    ]
}

/// Mean ms per launch of `f` over `reps`, after one untimed run.
fn time(reps: usize, f: &dyn Fn() -> Result<Tensor>) -> Result<f64> {
    f()?.to_vec()?;
    let t = Instant::now();
    for _ in 0..reps {
        f()?.to_vec()?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e3 / reps as f64)
}

fn main() -> Result<()> {
    let reps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let rounds: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let hand = WgpuBackend::new(WgpuOptions { reductions: ReduceKernel::HandWritten, ..WgpuOptions::default() })?;
    let rendered = WgpuBackend::new(WgpuOptions { reductions: ReduceKernel::Rendered, ..WgpuOptions::default() })?;
    println!("adapter: {}", hand.report().adapter);
    let devs = [Device::new(hand), Device::new(rendered)];
    let filter = std::env::args().nth(3).unwrap_or_default();
    let cases: Vec<Case> = cases().into_iter().filter(|c| c.0.contains(filter.as_str())).collect();
    // Stored inputs on both devices (the same values).
    let mut inputs = Vec::new();
    for (i, (_, dims, _)) in cases.iter().enumerate() {
        let n: usize = dims.iter().product();
        let v: Vec<f32> = (0..n).map(|j| pixelgrad_core::rng::uniform(i as u64 + 1, j as u64) * 8.0 - 4.0).collect();
        let a = Tensor::from_vec(&devs[0], &v, dims.clone())?;
        let b = Tensor::from_vec(&devs[1], &v, dims.clone())?;
        inputs.push([a, b]);
    }
    let mut best = vec![[f64::INFINITY; 2]; cases.len()];
    for _ in 0..rounds {
        for (c, (_, _, f)) in cases.iter().enumerate() {
            for (d, cell) in best[c].iter_mut().enumerate() {
                let x = &inputs[c][d];
                *cell = cell.min(time(reps, &|| f(x))?);
            }
        }
    }
    println!("{:<34} {:>10} {:>10} {:>9}", "case", "hand ms", "rendered", "r / h");
    for (c, (label, _, _)) in cases.iter().enumerate() {
        let [h, r] = best[c];
        println!("{label:<34} {h:>10.3} {r:>10.3} {:>9.2}", r / h);
    }
    Ok(())
}
