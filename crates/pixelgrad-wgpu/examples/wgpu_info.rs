//! Prints the adapter report, the precision self-test and a rough matmul throughput.
//!
//! `cargo run --release -p pixelgrad-wgpu --example wgpu_info [size]`

#[cfg(not(target_arch = "wasm32"))]
fn main() -> pixelgrad_core::Result<()> {
    use pixelgrad_core::{Backend, Op, Shape};
    use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};
    use std::time::Instant;

    let size: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(512);
    let b = WgpuBackend::new(WgpuOptions::default())?;
    println!("{}\n{}", b.name(), b.report());
    let t = b.self_test()?;
    for (what, err) in &t.details {
        println!("self-test {what}: max relative error {err:.2e}");
    }

    let n = size;
    let a = b.upload(&vec![0.5f32; n * n])?;
    let s = Shape::from([n, n]);
    let op = Op::MatMul { trans_a: false, trans_b: false };
    // Warm-up compiles the pipeline.
    let c = b.execute(&op, &[&a, &a], &[&s, &s], &s)?;
    b.read(&c, 1)?;
    let reps = 5;
    let start = Instant::now();
    let mut last = c;
    for _ in 0..reps {
        last = b.execute(&op, &[&a, &a], &[&s, &s], &s)?;
    }
    let v = b.read(&last, 1)?;
    let secs = start.elapsed().as_secs_f64();
    let gflops = 2.0 * (n as f64).powi(3) * reps as f64 / secs / 1e9;
    println!("matmul {n}^3: {gflops:.2} GFLOP/s (c[0] = {}, want {})", v[0], 0.25 * n as f32);

    // Per-op overhead: many tiny launches, one submission per 256.
    let x = b.upload(&[1.0f32; 16])?;
    let s16 = Shape::from([16]);
    let ops = 2000;
    let start = Instant::now();
    let mut y = x;
    for _ in 0..ops {
        y = b.execute(&Op::Unary(pixelgrad_core::UnaryOp::Neg), &[&y], &[&s16], &s16)?;
    }
    let record_us = start.elapsed().as_secs_f64() * 1e6 / ops as f64;
    b.read(&y, 16)?;
    let us = start.elapsed().as_secs_f64() * 1e6 / ops as f64;
    println!("tiny op: {us:.1} us per launch end to end, {record_us:.1} us of it before the final read");
    println!("counters {:?}", b.counters());
    Ok(())
}

#[cfg(target_arch = "wasm32")]
fn main() {}
