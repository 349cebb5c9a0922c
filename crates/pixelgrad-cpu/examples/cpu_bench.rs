//! Rough timings of the kernels that dominate training on the fast CPU backend
//! (`cargo run --release -p pixelgrad-cpu --example cpu_bench`). Prints, asserts nothing.

use std::time::Instant;

use pixelgrad_core::{Device, Result, Tensor, Window};
use pixelgrad_cpu::CpuBackend;

fn time(name: &str, reps: usize, mut f: impl FnMut() -> Result<Tensor>) -> Result<()> {
    f()?; // warm up (thread pool, allocator)
    let t = Instant::now();
    for _ in 0..reps {
        f()?;
    }
    println!("{name:<40} {:>9.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    Ok(())
}

fn main() -> Result<()> {
    let d = Device::new(CpuBackend::new());
    let a = Tensor::rand_uniform(&d, [512, 512], -1.0, 1.0, 1)?;
    let b = Tensor::rand_uniform(&d, [512, 512], -1.0, 1.0, 2)?;
    time("matmul 512x512x512", 20, || a.matmul(&b))?;
    time("matmul 512^3, b transposed", 20, || a.matmul_t(&b, false, true))?;
    let x = Tensor::rand_uniform(&d, [1 << 20], -1.0, 1.0, 3)?;
    let y = Tensor::rand_uniform(&d, [1 << 20], -1.0, 1.0, 4)?;
    time("add 1M equal shapes", 50, || x.add(&y))?;
    time("exp 1M", 50, || x.exp())?;
    let m = x.reshape([1024, 1024])?;
    let row = Tensor::rand_uniform(&d, [1024], -1.0, 1.0, 5)?;
    time("add 1024x1024 + [1024] broadcast", 50, || m.add(&row))?;
    time("sum last axis 1024x1024", 50, || m.sum_axis(-1, true))?;
    time("sum first axis 1024x1024", 50, || m.sum_axis(0, true))?;
    time("permute 1024x1024", 50, || m.permute(&[1, 0]))?;
    let img = Tensor::rand_uniform(&d, [64, 16, 28, 28], -1.0, 1.0, 6)?;
    let w = Window::square(3, 1, 1);
    time("im2col [64,16,28,28] k3p1", 10, || img.im2col(w))?;
    let cols = img.im2col(w)?;
    time("col2im back", 10, || cols.col2im(w, 28, 28))?;
    let wt = Tensor::rand_uniform(&d, [32, 16, 3, 3], -1.0, 1.0, 7)?;
    let wm = wt.reshape([32, 144])?;
    time("matmul [32,144] x [64,144,784]", 10, || wm.matmul(&cols))?;
    time("conv2d [64,16,28,28] * [32,16,3,3]", 10, || pixelgrad_core::composite::conv2d(&img, &wt, None, 1, 1))?;
    let w5 = Tensor::rand_uniform(&d, [32, 16, 5, 5], -1.0, 1.0, 8)?;
    time("conv [64,16,28,28] * [32,16,5,5] s2p2", 10, || img.conv(&w5, Window::square(5, 2, 2)))?;
    let dw = Tensor::rand_uniform(&d, [16, 1, 3, 3], -1.0, 1.0, 9)?;
    time("depthwise [64,16,28,28] k3p1", 10, || img.depthwise_conv(&dw, w))?;
    time("depthwise [64,16,28,28] k3s2p1", 10, || img.depthwise_conv(&dw, Window::square(3, 2, 1)))?;
    let pool = Window::square(3, 2, 1);
    time("max_pool [64,16,28,28] k3s2p1", 10, || img.max_pool(pool))?;
    let dy = img.max_pool(pool)?;
    time("max_pool_grad [64,16,28,28] k3s2p1", 10, || img.max_pool_grad(&dy, pool))?;
    Ok(())
}
