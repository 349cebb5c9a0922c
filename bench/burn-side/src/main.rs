//! Burn 0.22's wgpu backend on the browser benchmark's workloads (web/bench/lib/workloads.mjs),
//! so `scripts/bench-burn.sh` can run it next to `pixelgrad bench --backends webgpu` on the same
//! adapter and print ratios. A benchmark, never a test: nothing is asserted.
//!
//! Usage: `burn-side [--seconds S] [--only seed-mlp,mnist-mlp,cnn,matmul-1024] [--device KIND]`.
//! Prints one line per workload: `burn <workload> <value> <unit>` (steps/s, or GFLOP/s for
//! matmul). `--device` picks Burn's wgpu adapter: `cpu` (the default: lavapipe, where the
//! project's machines run it), `discrete`, `integrated`, `virtual` (the first of that kind) or
//! `default` (Burn's own choice); `scripts/gpu-bench.sh` passes `discrete` on a real GPU.
//!
//! Each training step uploads its batch (as `pixelgrad bench` does), runs forward, loss,
//! backward and the SGD update, and reads the loss back every 10 steps. Warm-up steps come first:
//! they compile kernels and let Burn's autotune settle before the clock starts.

use std::time::Instant;

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig, MseLoss, Reduction};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig};
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::activation::{relu, sigmoid};
use burn::tensor::{Device, DeviceKind, Int, Tensor, TensorData};

#[derive(Module, Debug)]
struct SeedMlp {
    l1: Linear,
    l2: Linear,
}

impl SeedMlp {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        sigmoid(self.l2.forward(sigmoid(self.l1.forward(x))))
    }
}

#[derive(Module, Debug)]
struct MnistMlp {
    l1: Linear,
    l2: Linear,
}

impl MnistMlp {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.l2.forward(relu(self.l1.forward(x)))
    }
}

/// conv3x3x8 relu, maxpool 2, conv3x3x16 relu, maxpool 2, dense 10; 'valid' padding.
#[derive(Module, Debug)]
struct Cnn {
    c1: Conv2d,
    c2: Conv2d,
    pool: MaxPool2d,
    out: Linear,
}

impl Cnn {
    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let h = self.pool.forward(relu(self.c1.forward(x)));
        let h = self.pool.forward(relu(self.c2.forward(h)));
        let [b, c, hh, ww] = h.dims();
        self.out.forward(h.reshape([b, c * hh * ww]))
    }
}

/// A fixed pseudo-random stream in [0, 1) (splitmix64), so every run sees the same data.
fn uniform(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

/// Host-side batches: 8 distinct batches of `per` floats each, cycled through.
struct Data {
    x: Vec<f32>,
    labels: Vec<i32>,
    batch: usize,
    per: usize,
    classes: usize,
}

impl Data {
    fn new(batch: usize, per: usize, classes: usize) -> Self {
        let n = batch * 8;
        Data { x: uniform(n * per, 9), labels: (0..n).map(|i| (i % classes) as i32).collect(), batch, per, classes }
    }
    fn x(&self, step: usize) -> (Vec<f32>, Vec<i32>) {
        let j = step % 8;
        let (b, p) = (self.batch, self.per);
        (self.x[j * b * p..(j + 1) * b * p].to_vec(), self.labels[j * b..(j + 1) * b].to_vec())
    }
}

/// Calls per second of `step(i)` over at least `secs` seconds, after `warm` calls; `step`
/// returns the loss tensor, read back every 10 steps and at the end (so queued work is done).
fn rate(secs: f64, warm: usize, mut step: impl FnMut(usize) -> Tensor<1>) -> f64 {
    for i in 0..warm {
        let l = step(i);
        if i + 1 == warm {
            l.into_scalar::<f32>();
        }
    }
    let t0 = Instant::now();
    let mut n = 0;
    loop {
        let l = step(warm + n);
        n += 1;
        let done = n >= 3 && t0.elapsed().as_secs_f64() >= secs;
        if n % 10 == 0 || done {
            let v = l.into_scalar::<f32>();
            if !v.is_finite() {
                eprintln!("warning: loss {v}");
            }
        }
        if done {
            break;
        }
    }
    n as f64 / t0.elapsed().as_secs_f64()
}

fn seed_mlp(device: &Device, secs: f64) -> f64 {
    let mut model = SeedMlp { l1: LinearConfig::new(48, 64).init(device), l2: LinearConfig::new(64, 2).init(device) };
    let mut optim = SgdConfig::new().init();
    let data = Data::new(1, 48, 2);
    let mse = MseLoss::new();
    rate(secs, 20, |i| {
        let (x, y) = data.x(i);
        let x = Tensor::<2>::from_data(TensorData::new(x, [1, 48]), device);
        let onehot: Vec<f32> = (0..data.classes).map(|c| if c as i32 == y[0] { 1.0 } else { 0.0 }).collect();
        let t = Tensor::<2>::from_data(TensorData::new(onehot, [1, 2]), device);
        let loss = mse.forward(model.forward(x), t, Reduction::Mean);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.5, model.clone(), grads);
        loss.detach()
    })
}

fn mnist_mlp(device: &Device, secs: f64) -> f64 {
    let mut model = MnistMlp { l1: LinearConfig::new(784, 128).init(device), l2: LinearConfig::new(128, 10).init(device) };
    let mut optim = SgdConfig::new().init();
    let data = Data::new(64, 784, 10);
    let ce: CrossEntropyLoss = CrossEntropyLossConfig::new().init(device);
    rate(secs, 20, |i| {
        let (x, y) = data.x(i);
        let x = Tensor::<2>::from_data(TensorData::new(x, [64, 784]), device);
        let y = Tensor::<1, Int>::from_data(TensorData::new(y, [64]), device);
        let loss = ce.forward(model.forward(x), y);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.1, model.clone(), grads);
        loss.detach()
    })
}

fn cnn(device: &Device, secs: f64) -> f64 {
    let mut model = Cnn {
        c1: Conv2dConfig::new([1, 8], [3, 3]).init(device),
        c2: Conv2dConfig::new([8, 16], [3, 3]).init(device),
        pool: MaxPool2dConfig::new([2, 2]).init(),
        out: LinearConfig::new(16 * 5 * 5, 10).init(device),
    };
    let mut optim = SgdConfig::new().init();
    let data = Data::new(32, 28 * 28, 10);
    let ce: CrossEntropyLoss = CrossEntropyLossConfig::new().init(device);
    rate(secs, 10, |i| {
        let (x, y) = data.x(i);
        let x = Tensor::<4>::from_data(TensorData::new(x, [32, 1, 28, 28]), device);
        let y = Tensor::<1, Int>::from_data(TensorData::new(y, [32]), device);
        let loss = ce.forward(model.forward(x), y);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.05, model.clone(), grads);
        loss.detach()
    })
}

/// GFLOP/s of n x n times n x n with both inputs resident on the device; batches of two
/// products end with a one-element readback (as `pixelgrad bench` does).
fn matmul(device: &Device, n: usize, secs: f64) -> f64 {
    let a = Tensor::<2>::from_data(TensorData::new(uniform(n * n, 1), [n, n]), device);
    let b = Tensor::<2>::from_data(TensorData::new(uniform(n * n, 2), [n, n]), device);
    let per = if n <= 512 { 8 } else { 2 };
    let steps = rate(secs, 3, |_| {
        let mut c = a.clone().matmul(b.clone());
        for _ in 1..per {
            c = a.clone().matmul(b.clone());
        }
        // Read back every batch, not every 10th: each call is a sync point like pixelgrad's.
        let one = c.slice([0..1, 0..1]).reshape([1]);
        let _ = one.clone().into_scalar::<f32>();
        one
    });
    steps * per as f64 * 2.0 * (n as f64).powi(3) / 1e9
}

fn main() {
    let mut secs = 2.0;
    let mut only: Option<Vec<String>> = None;
    let mut kind = DeviceKind::Cpu;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => secs = args.next().and_then(|v| v.parse().ok()).unwrap_or(secs),
            "--only" => only = args.next().map(|v| v.split(',').map(str::to_string).collect()),
            "--device" => {
                kind = match args.next().as_deref() {
                    Some("cpu") => DeviceKind::Cpu,
                    Some("discrete") => DeviceKind::DiscreteGpu(0),
                    Some("integrated") => DeviceKind::IntegratedGpu(0),
                    Some("virtual") => DeviceKind::VirtualGpu(0),
                    Some("default") => DeviceKind::DefaultDevice,
                    other => {
                        eprintln!("burn-side: --device {other:?}: expected cpu, discrete, integrated, virtual or default");
                        std::process::exit(2);
                    }
                }
            }
            other => {
                eprintln!("burn-side: unknown argument '{other}' (--seconds S, --only a,b, --device KIND)");
                std::process::exit(2);
            }
        }
    }
    let want = |w: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == w));
    // lavapipe reports device type Cpu; Burn picks the graphics API (Vulkan here) and, with
    // the plain `wgpu` feature, compiles its kernels to WGSL like pixelgrad does.
    let plain = Device::wgpu(kind);
    let train = plain.clone().autodiff();
    println!("burn device {plain:?}");
    if want("seed-mlp") {
        println!("burn seed-mlp {:.2} steps/s", seed_mlp(&train, secs));
    }
    if want("mnist-mlp") {
        println!("burn mnist-mlp {:.2} steps/s", mnist_mlp(&train, secs));
    }
    if want("cnn") {
        println!("burn cnn {:.2} steps/s", cnn(&train, secs));
    }
    for n in [256, 1024] {
        let name = format!("matmul-{n}");
        if want(&name) {
            println!("burn {name} {:.2} GFLOP/s", matmul(&plain, n, secs));
        }
    }
}
