//! Time per launch of the depthwise convolution on WebGPU, WebGL2 and the `webgl1` mode, for a
//! 3x3 stride-1 layer (the MobileNet shape), 3x3 stride 2 and 5x5 stride 1. Benchmark, not a
//! test: it asserts nothing. Uses only `depthwise_conv`, so the same file measures an older
//! build side by side (bench/notes/2026-12-07-depthwise-from-one-definition.md).
//!
//! `cargo run -p pixelgrad --features webgpu,webgl --example depthwise_bench -- [reps] [backend]`

use std::time::Instant;

use pixelgrad::webgl::{WebGlBackend, WebGlOptions};
use pixelgrad::wgpu::{WgpuBackend, WgpuOptions};
use pixelgrad::{Device, Result, Tensor, Window};

fn bench(label: &str, dev: &Device, reps: usize) -> Result<()> {
    let cases = [
        ("[8,32,28,28] k3s1p1", [8, 32, 28, 28], Window::square(3, 1, 1)),
        ("[8,32,28,28] k3s2p1", [8, 32, 28, 28], Window::square(3, 2, 1)),
        ("[4,16,32,32] k5s1p2", [4, 16, 32, 32], Window::square(5, 1, 2)),
    ];
    for (name, dims, w) in cases {
        let x = Tensor::rand_uniform(dev, dims.to_vec(), -1.0, 1.0, 1)?;
        let k = Tensor::rand_uniform(dev, vec![dims[1], 1, w.kh, w.kw], -1.0, 1.0, 2)?;
        x.depthwise_conv(&k, w)?.to_vec()?;
        let t = Instant::now();
        let mut last = None;
        for _ in 0..reps {
            last = Some(x.depthwise_conv(&k, w)?);
        }
        if let Some(l) = last {
            l.to_vec()?;
        }
        println!("{label:<8} depthwise_conv {name:<20} {:>9.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    }
    Ok(())
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let reps: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let only = args.next();
    let on = |b: &str| only.as_deref().is_none_or(|o| o == b);
    if on("webgpu") {
        bench("webgpu", &Device::new(WgpuBackend::new(WgpuOptions::default())?), reps)?;
    }
    if on("webgl2") {
        bench("webgl2", &Device::new(WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() })?), reps)?;
    }
    if on("webgl1") {
        let gl1 = WebGlOptions { self_test: false, webgl1: true, ..Default::default() };
        bench("webgl1", &Device::new(WebGlBackend::new_headless(gl1)?), reps)?;
    }
    Ok(())
}
