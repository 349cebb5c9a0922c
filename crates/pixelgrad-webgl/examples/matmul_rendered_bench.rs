//! WebGL's matmuls side by side: the hand-written kernels the dispatcher picks
//! (`MatMulKernel::HandWritten`: `shaders/matmul.glsl`'s packed and strided configs, the 4x4
//! block path; in the `webgl1` mode `matmul.glsl`'s strided GLSL ES 1.00 form) against the
//! program rendered from the product's one definition (`MatMulKernel::Rendered`,
//! `pixelgrad_core::kernel::products`), two backends in one process, each case timed on one
//! then the other, alternating for `rounds` rounds; a cell is the minimum over the rounds of
//! the mean ms per product over a round's launches (flushed one by one, the last one read
//! back, so the GL's queue is drained). Also `Op::MatMulI8` and 8-bit `Op::MatMulNBits`
//! against their one-definition alternative: the weight widened (and dequantised by
//! elementwise ops), then the f32 product, on the rendered backend. Prints the pass log of
//! each case's first launch on each side. Benchmark, not a test: it asserts nothing.
//!
//! `cargo run --release -p pixelgrad-webgl --example matmul_rendered_bench -- [webgl1] [rounds=N] [ms=N] [only=SUBSTRING] [f32=hand]`
//!
//! (`f32=hand`: the second backend is hand-written too, so the 8-bit cases compare the op
//! against widen + the hand-written f32 product.)

use std::time::Instant;

use pixelgrad_core::{Device, NBits, Result, Tensor};
use pixelgrad_webgl::{MatMulKernel, WebGlBackend, WebGlOptions};

/// Makes a case's inputs on a device.
type Make = Box<dyn Fn(&Device) -> Result<Vec<Tensor>>>;

/// A case: its label, the inputs it makes on a device, and what each side runs.
struct Case {
    label: String,
    make: Make,
    hand: fn(&[Tensor]) -> Result<Tensor>,
    rendered: fn(&[Tensor]) -> Result<Tensor>,
}

fn values(n: usize, seed: u64) -> Vec<f32> {
    (0..n).map(|i| pixelgrad_core::rng::uniform(seed, i as u64) * 2.0 - 1.0).collect()
}

/// A matmul `a (dims) x b (dims)` with transposes, optionally summed over its batch.
fn product(label: &str, da: &[usize], db: &[usize], ta: bool, tb: bool, sum: bool) -> Case {
    let (da, db) = (da.to_vec(), db.to_vec());
    let make = move |d: &Device| -> Result<Vec<Tensor>> {
        Ok(vec![
            Tensor::from_vec(d, &values(da.iter().product(), 1), da.clone())?,
            Tensor::from_vec(d, &values(db.iter().product(), 2), db.clone())?,
        ])
    };
    let run: fn(&[Tensor]) -> Result<Tensor> = match (ta, tb, sum) {
        (false, false, false) => |t| t[0].matmul(&t[1]),
        (true, false, false) => |t| t[0].matmul_t(&t[1], true, false),
        (false, true, false) => |t| t[0].matmul_t(&t[1], false, true),
        (false, true, true) => |t| t[0].matmul_t(&t[1], false, true)?.sum_axis(0, false),
        _ => |t| t[0].matmul_t(&t[1], true, true),
    };
    Case { label: label.to_string(), make: Box::new(make), hand: run, rendered: run }
}

/// `Op::MatMulI8`: i8 weights `[m, k]` times whole numbers `[k, n]`, against widen + matmul.
fn int8(m: usize, k: usize, n: usize) -> Case {
    let make = move |d: &Device| -> Result<Vec<Tensor>> {
        let a: Vec<i8> = (0..m * k).map(|i| ((i * 37) % 255) as i32 as i8).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 11) % 17) as f32 - 8.0).collect();
        Ok(vec![Tensor::from_i8(d, &a, [m, k])?, Tensor::from_vec(d, &b, [k, n])?])
    };
    Case {
        label: format!("matmul_i8 [{m},{k}]x[{k},{n}]"),
        make: Box::new(make),
        hand: |t| t[0].matmul_i8(&t[1]),
        rendered: |t| t[0].widen()?.matmul(&t[1]),
    }
}

/// 8-bit `Op::MatMulNBits` (blocks of 32): `a [m, k]` times the weight `[k, n]` stored as
/// `[n, k]` bytes, against its dequantisation (widen, `- zeros`, `* scales`) and a matmul.
fn nbits(m: usize, k: usize, n: usize) -> Case {
    const BLOCK: usize = 32;
    let make = move |d: &Device| -> Result<Vec<Tensor>> {
        let kb = k / BLOCK;
        let q: Vec<u8> = (0..n * k).map(|i| ((i * 29) % 256) as u8).collect();
        Ok(vec![
            Tensor::from_vec(d, &values(m * k, 3), [m, k])?,
            Tensor::from_u8(d, &q, [n, k])?,
            Tensor::from_vec(d, &values(n * kb, 4).iter().map(|v| v.abs() * 0.01).collect::<Vec<_>>(), [n, kb])?,
            Tensor::from_vec(d, &(0..n * kb).map(|i| (i % 256) as f32).collect::<Vec<_>>(), [n, kb])?,
        ])
    };
    Case {
        label: format!("matmul_nbits 8-bit [{m},{k}]x[{k},{n}]"),
        make: Box::new(make),
        hand: |t| {
            let k = t[0].dims()[1];
            t[0].matmul_nbits(&t[1], &t[2], &t[3], NBits { bits: 8, block: BLOCK, k }, false)
        },
        rendered: |t| {
            let (n, k) = (t[1].dims()[0], t[1].dims()[1]);
            let kb = k / BLOCK;
            let w = t[1].widen()?.reshape([n, kb, BLOCK])?;
            let w = w.sub(&t[3].reshape([n, kb, 1])?)?.mul(&t[2].reshape([n, kb, 1])?)?.reshape([n, k])?;
            t[0].matmul_t(&w, false, true)
        },
    }
}

fn cases() -> Vec<Case> {
    vec![
        // The mnist MLP's first layer (batch 128) and its two gradient products.
        product("mlp [128,784]x[784,128]", &[128, 784], &[784, 128], false, false, false),
        product("mlp dW [128,784]^T x[128,128]", &[128, 784], &[128, 128], true, false, false),
        product("mlp dX [128,128]x[784,128]^T", &[128, 128], &[784, 128], false, true, false),
        product("mlp2 [128,128]x[128,10]", &[128, 128], &[128, 10], false, false, false),
        // The cnn's im2col products at batch 32: conv1 (16 filters, 3x3 on 28x28), conv2 (32
        // filters over 16 channels on 14x14), conv2's weight gradient (summed over the batch)
        // and input gradient.
        product("conv1 [16,9]x[32,9,784]", &[16, 9], &[32, 9, 784], false, false, false),
        product("conv2 [32,144]x[32,144,196]", &[32, 144], &[32, 144, 196], false, false, false),
        product("conv2 dW sum_b [32,32,196]x[32,144,196]^T", &[32, 32, 196], &[32, 144, 196], false, true, true),
        product("conv2 dX [32,144]^T x[32,32,196]", &[32, 144], &[32, 32, 196], true, false, false),
        product("square 256", &[256, 256], &[256, 256], false, false, false),
        product("square 1024", &[1024, 1024], &[1024, 1024], false, false, false),
        product("decode [1,1024]x[1024,1024]", &[1, 1024], &[1024, 1024], false, false, false),
        product("decode^T [1,1024]x[1024,1024]^T", &[1, 1024], &[1024, 1024], false, true, false),
        // Shapes that reach the other hand-written paths: the block path with both operands
        // repacked (K, N odd), the strided config (small, unaligned), nt_shift (k contiguous,
        // rows off texels: a 10-class layer's input gradient).
        product("odd block-pack [130,70]x[70,121]", &[130, 70], &[70, 121], false, false, false),
        product("odd strided [9,10]x[10,7]", &[9, 10], &[10, 7], false, false, false),
        product("odd nt_shift [64,10]x[256,10]^T", &[64, 10], &[256, 10], false, true, false),
        product("odd strided sum_b [8,16,64]x[8,32,64]^T", &[8, 16, 64], &[8, 32, 64], false, true, true),
        int8(128, 784, 128),
        int8(1024, 1024, 4),
        nbits(1, 1024, 1024),
        nbits(16, 1024, 1024),
    ]
}

/// Mean ms per launch of `f` over `reps` (each flushed; the last read back).
fn time(dev: &Device, reps: usize, f: &dyn Fn() -> Result<Tensor>) -> Result<f64> {
    let t = Instant::now();
    let mut last = None;
    for _ in 0..reps {
        last = Some(f()?);
        dev.flush()?;
    }
    if let Some(y) = last {
        y.to_vec()?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e3 / reps as f64)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |key: &str| args.iter().find_map(|a| a.strip_prefix(key).map(str::to_string));
    let webgl1 = args.iter().any(|a| a == "webgl1");
    let rounds: usize = arg("rounds=").and_then(|s| s.parse().ok()).unwrap_or(5);
    // Launches per round: as many as take about `ms` (at least 1).
    let budget: f64 = arg("ms=").and_then(|s| s.parse().ok()).unwrap_or(300.0);
    let only = arg("only=");
    let opts = |matmul| WebGlOptions { webgl1, self_test: false, matmul, ..WebGlOptions::default() };
    let hand = WebGlBackend::new_headless(opts(MatMulKernel::HandWritten))?;
    // `f32=hand`: the second backend's products are the hand-written ones too (for the
    // 8-bit cases: the op against widen + the hand-written f32 product).
    let second = if arg("f32=").as_deref() == Some("hand") { MatMulKernel::HandWritten } else { MatMulKernel::Rendered };
    let rendered = WebGlBackend::new_headless(opts(second))?;
    let backends = [hand.clone(), rendered.clone()];
    println!("renderer: {} ({})", hand.report().renderer, if webgl1 { "webgl1 mode" } else { "webgl2" });
    let devs = [Device::new(hand), Device::new(rendered)];
    let cases: Vec<Case> = cases().into_iter().filter(|c| only.as_ref().is_none_or(|o| c.label.contains(o.as_str()))).collect();
    let mut inputs = Vec::new();
    let mut reps = Vec::new();
    let mut skip = vec![false; cases.len()];
    for (c, case) in cases.iter().enumerate() {
        let mut pair = Vec::new();
        let mut first = 0.0f64;
        for (d, dev) in devs.iter().enumerate() {
            let run = if d == 0 { case.hand } else { case.rendered };
            let made = (case.make)(dev);
            let t = match &made {
                Ok(t) => {
                    // A first launch (compiles the programs), its passes logged; then one timed.
                    backends[d].set_pass_log(true);
                    let r = run(t).and_then(|y| y.to_vec());
                    let log = backends[d].take_pass_log();
                    backends[d].set_pass_log(false);
                    println!("  {:<44} {}: {log:?}", case.label, if d == 0 { "hand" } else { "rendered" });
                    r.and_then(|_| time(dev, 1, &|| run(t)))
                }
                Err(e) => Err(e.to_string()).map_err(|m| pixelgrad_core::Error::invalid("bench", m)),
            };
            match t {
                Ok(ms) => first = first.max(ms),
                Err(e) => {
                    println!("  {:<44} skipped: {e}", case.label);
                    skip[c] = true;
                }
            }
            pair.push(made.unwrap_or_default());
        }
        inputs.push(pair);
        reps.push(((budget / first.max(1e-3)) as usize).clamp(1, 50));
    }
    let mut best = vec![[f64::INFINITY; 2]; cases.len()];
    for _ in 0..rounds {
        for (c, case) in cases.iter().enumerate() {
            if skip[c] {
                continue;
            }
            for (d, cell) in best[c].iter_mut().enumerate() {
                let run = if d == 0 { case.hand } else { case.rendered };
                let t = &inputs[c][d];
                *cell = cell.min(time(&devs[d], reps[c], &|| run(t))?);
            }
        }
    }
    println!("{:<44} {:>6} {:>10} {:>10} {:>7}", "case", "reps", "hand ms", "rendered", "r / h");
    for (c, case) in cases.iter().enumerate() {
        if skip[c] {
            continue;
        }
        let [h, r] = best[c];
        println!("{:<44} {:>6} {h:>10.3} {r:>10.3} {:>7.2}", case.label, reps[c], r / h);
    }
    Ok(())
}
