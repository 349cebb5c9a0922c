//! Time per launch of max pooling and its gradient on WebGPU, WebGL2 and the `webgl1` mode, for
//! the cnn's 2x2 stride-2 pooling and for windows that take the general path (3x3 stride 2
//! padding 1, 3x3 stride 1 padding 1). Benchmark, not a test: it asserts nothing. Uses only
//! `max_pool` / `max_pool_grad`, so the same file measures an older build side by side.
//!
//! `cargo run --release -p pixelgrad --features webgpu,webgl --example pool_bench -- [reps]`

use std::time::Instant;

use pixelgrad::webgl::{WebGlBackend, WebGlOptions};
use pixelgrad::wgpu::{WgpuBackend, WgpuOptions};
use pixelgrad::{Device, Result, Tensor, Window};

/// One timed operation: its name and a call that launches it.
type Timed<'a> = (&'a str, Box<dyn Fn() -> Result<Tensor> + 'a>);

fn bench(label: &str, dev: &Device, reps: usize) -> Result<()> {
    let x = Tensor::rand_uniform(dev, vec![32, 8, 26, 26], -1.0, 1.0, 1)?;
    for (name, w) in [("k2s2", Window::square(2, 2, 0)), ("k3s2p1", Window::square(3, 2, 1)), ("k3s1p1", Window::square(3, 1, 1))] {
        let y = x.max_pool(w)?;
        let dy = Tensor::rand_uniform(dev, y.dims().to_vec(), -1.0, 1.0, 2)?;
        let ops: [Timed; 2] = [("max_pool", Box::new(|| x.max_pool(w))), ("max_pool_grad", Box::new(|| x.max_pool_grad(&dy, w)))];
        for (op, f) in &ops {
            f()?.to_vec()?;
            let t = Instant::now();
            let mut last = None;
            for _ in 0..reps {
                last = Some(f()?);
            }
            if let Some(l) = last {
                l.to_vec()?;
            }
            println!("{label:<8} {op:<14} {name:<7} {:>9.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let reps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    bench("webgpu", &Device::new(WgpuBackend::new(WgpuOptions::default())?), reps)?;
    bench("webgl2", &Device::new(WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() })?), reps)?;
    let gl1 = WebGlOptions { self_test: false, webgl1: true, ..Default::default() };
    bench("webgl1", &Device::new(WebGlBackend::new_headless(gl1)?), reps)?;
    Ok(())
}
