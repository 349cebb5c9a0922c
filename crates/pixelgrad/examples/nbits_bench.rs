//! Time per launch of the product with 4-bit and 8-bit block-quantised weights kept packed
//! (`Tensor::matmul_nbits`, onnxruntime's `MatMulNBits` layout, blocks of 32) on WebGPU,
//! against the f32 product with the same (dequantised) weight in the same run: a decoder's
//! next-token product (1 row), its prompt (16 rows) and a batch (128 rows). Benchmark, not a
//! test: it asserts nothing. Uses only the public tensor API, so the same file measures an
//! older build side by side. Times include reading the result back.
//!
//! `cargo run -p pixelgrad --features webgpu --example nbits_bench -- [reps]`

use std::time::Instant;

use pixelgrad::wgpu::{WgpuBackend, WgpuOptions};
use pixelgrad::NBits;
use pixelgrad::{Device, Result, Tensor};

fn time(label: &str, reps: usize, f: &dyn Fn() -> Result<Tensor>) -> Result<f64> {
    f()?.to_vec()?;
    let t = Instant::now();
    for _ in 0..reps {
        f()?.to_vec()?;
    }
    let ms = t.elapsed().as_secs_f64() * 1e3 / reps as f64;
    println!("{label:<34} {ms:>9.3} ms");
    Ok(ms)
}

fn main() -> Result<()> {
    let reps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let dev = Device::new(WgpuBackend::new(WgpuOptions::default())?);
    for &(m, k, n) in &[(1, 256, 768), (16, 256, 768), (128, 256, 768), (1, 1024, 1024), (16, 1024, 1024)] {
        let a = Tensor::rand_uniform(&dev, vec![m, k], -1.0, 1.0, 1)?;
        let w = Tensor::rand_uniform(&dev, vec![k, n], -0.1, 0.1, 2)?;
        let f32_ms = time(&format!("f32    [{m},{k}]x[{k},{n}]"), reps, &|| a.matmul(&w))?;
        for bits in [4, 8] {
            let g = NBits { bits, block: 32, k };
            let (kb, blob) = (g.k_blocks(), g.blob());
            let q: Vec<u8> = (0..n * kb * blob).map(|i| ((i * 37 + 11) % 256) as u8).collect();
            let q = Tensor::from_u8(&dev, &q, [n, kb * blob])?;
            let scales = Tensor::rand_uniform(&dev, vec![n, kb], 0.001, 0.01, 3)?;
            let zeros = Tensor::full(&dev, vec![n, kb], (1 << (bits - 1)) as f32)?;
            let ms = time(&format!("{bits}-bit  [{m},{k}]x[{k},{n}]"), reps, &|| a.matmul_nbits(&q, &scales, &zeros, g, false))?;
            println!("{:<34} {:>9.2} x the f32 time", "", ms / f32_ms);
        }
    }
    Ok(())
}
