//! Time per launch of the ops in one training step of the browser benchmark's cnn (batch 32,
//! 28x28x1, conv 3x3x8, pool 2, conv 3x3x16, pool 2, dense 10) on one adapter: which passes
//! the step's time goes to. Benchmark, not a test.
//!
//! `cargo run --release -p pixelgrad-wgpu --example cnn_ops -- [reps]`

#[cfg(not(target_arch = "wasm32"))]
fn main() -> pixelgrad_core::Result<()> {
    use pixelgrad_core::{Device, Tensor, Window};
    use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};
    use std::time::Instant;

    let reps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let dev = Device::new(WgpuBackend::new(WgpuOptions::default())?);
    println!("adapter: {}", dev.name());
    let r = |shape: &[usize], seed: u64| Tensor::rand_uniform(&dev, shape.to_vec(), -1.0, 1.0, seed);
    let x = r(&[32, 1, 28, 28], 1)?;
    let w1 = r(&[8, 9], 2)?;
    let h1 = r(&[32, 8, 26, 26], 3)?;
    let p1 = r(&[32, 8, 13, 13], 4)?;
    let w2 = r(&[16, 72], 5)?;
    let c2 = r(&[32, 72, 121], 6)?;
    let g2 = r(&[32, 16, 121], 7)?;
    let c1 = r(&[32, 9, 676], 8)?;
    let g1 = r(&[32, 8, 676], 9)?;
    let k3 = Window::square(3, 1, 0);
    let k2 = Window::square(2, 2, 0);
    // (label, op): each closure runs one launch.
    type Op<'a> = Box<dyn Fn() -> pixelgrad_core::Result<Tensor> + 'a>;
    let ops: Vec<(&str, Op)> = vec![
        ("im2col conv1 [32,1,28,28] -> [32,9,676]", Box::new(|| x.im2col(k3))),
        ("matmul conv1 8x9 . [32,9,676]", Box::new(|| w1.matmul(&c1))),
        ("relu [32,8,26,26]", Box::new(|| h1.relu())),
        ("add bias [32,8,26,26] + [1,8,1,1]", Box::new(|| h1.add(&r(&[1, 8, 1, 1], 10)?))),
        ("im2col pool1 [256,1,26,26] -> [256,4,169]", Box::new(|| h1.reshape([256, 1, 26, 26])?.im2col(k2))),
        ("im2col conv2 [32,8,13,13] -> [32,72,121]", Box::new(|| p1.im2col(k3))),
        ("matmul conv2 16x72 . [32,72,121]", Box::new(|| w2.matmul(&c2))),
        ("matmul dW2 [32,16,121] . [32,72,121]^T", Box::new(|| g2.matmul_t(&c2, false, true))),
        ("matmul dcols2 16x72^T . [32,16,121]", Box::new(|| w2.matmul_t(&g2, true, false))),
        ("col2im conv2 [32,72,121] -> [32,8,13,13]", Box::new(|| c2.col2im(k3, 13, 13))),
        ("matmul dW1 [32,8,676] . [32,9,676]^T", Box::new(|| g1.matmul_t(&c1, false, true))),
        ("col2im pool1 [256,4,169] -> [256,1,26,26]", Box::new(|| r(&[256, 4, 169], 11)?.col2im(k2, 26, 26))),
    ];
    for (label, op) in &ops {
        op()?.to_vec()?;
        let t = Instant::now();
        let mut last = None;
        for _ in 0..reps {
            last = Some(op()?);
        }
        if let Some(l) = last {
            l.to_vec()?;
        }
        println!("{label:<48} {:>8.3} ms", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    }
    Ok(())
}

#[cfg(target_arch = "wasm32")]
fn main() {}
