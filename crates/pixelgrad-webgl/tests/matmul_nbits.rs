//! `Op::MatMulNBits` on WebGL2 (Mesa llvmpipe natively) beyond the conformance family: the
//! packed bytes must be u8 storage (f32 whole numbers are a typed error, not a silent
//! conversion), pending fused inputs are drawn first, and inside repeated steps the pass is
//! planned and replayed like every other, with the same numbers as the CPU backend.

use pixelgrad_conformance::families::packed_weight;
use pixelgrad_core::{Device, NBits, Tensor};
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

fn webgl() -> Device {
    Device::new(WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).expect("headless WebGL (EGL) context"))
}

fn close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{what}: element {i} is {g}, the CPU gives {w}");
    }
}

/// `x [m, k]` (4-bit weights, k = 40 in blocks of 16) and its transposed product, on `dev`.
fn products(dev: &Device, xv: &[f32], m: usize) -> (Tensor, Tensor) {
    let (g, n) = (NBits { bits: 4, block: 16, k: 40 }, 6);
    let p = packed_weight(g, n);
    let q = Tensor::from_u8(dev, &p.q, [n, g.k_blocks() * g.blob()]).unwrap();
    let s = Tensor::from_vec(dev, &p.scales, [n, g.k_blocks()]).unwrap();
    let z = Tensor::from_vec(dev, &p.zeros, [n, g.k_blocks()]).unwrap();
    let x = Tensor::from_vec(dev, xv, [m, g.k]).unwrap();
    // a pending fused chain as the input
    let a = x.affine(0.5, -0.25).unwrap().max_scalar(-0.5).unwrap();
    let y = a.matmul_nbits(&q, &s, &z, g, false).unwrap();
    let t = y.matmul_nbits(&q, &s, &z, g, true).unwrap().mul_scalar(2.0).unwrap();
    (y, t)
}

fn read((y, t): (Tensor, Tensor)) -> (Vec<f32>, Vec<f32>) {
    (y.to_vec().unwrap(), t.to_vec().unwrap())
}

#[test]
fn matches_the_cpu_on_pending_inputs_and_inside_step_plans() {
    let dev = webgl();
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    let m = 3;
    for step in 0..6usize {
        let xv: Vec<f32> = (0..m * 40).map(|i| ((i * 13 + step * 7) % 29) as f32 / 14.0 - 1.0).collect();
        let (wy, wt) = read(products(&cpu, &xv, m));
        let before = dev.counters();
        let out = dev.step(7, || Ok(products(&dev, &xv, m))).unwrap();
        let after = dev.counters();
        let (y, t) = read(out);
        close(&y, &wy, &format!("step {step}: product"));
        close(&t, &wt, &format!("step {step}: transposed product"));
        if step >= 4 {
            assert!(after.replayed > before.replayed, "step {step}: {before:?} -> {after:?}");
        }
    }
}

#[test]
fn packed_bytes_in_f32_storage_are_a_typed_error() {
    let dev = webgl();
    let g = NBits { bits: 8, block: 16, k: 16 };
    let p = packed_weight(g, 2);
    let as_f32: Vec<f32> = p.q.iter().map(|&b| f32::from(b)).collect();
    let q = Tensor::from_vec(&dev, &as_f32, [2, 16]).unwrap();
    let s = Tensor::from_vec(&dev, &p.scales, [2, 1]).unwrap();
    let z = Tensor::from_vec(&dev, &p.zeros, [2, 1]).unwrap();
    let a = Tensor::from_vec(&dev, &[0.5; 16], [1, 16]).unwrap();
    let e = a.matmul_nbits(&q, &s, &z, g, false).and_then(|y| y.to_vec()).unwrap_err().to_string();
    assert!(e.contains("matmul_nbits") && e.contains("u8"), "{e}");
    // the device stays usable: the same product with u8 bytes runs
    let q8 = Tensor::from_u8(&dev, &p.q, [2, 16]).unwrap();
    let y = a.matmul_nbits(&q8, &s, &z, g, false).unwrap().to_vec().unwrap();
    let want: Vec<f32> = (0..2).map(|n| (0..16).map(|k| 0.5 * p.w[k * 2 + n] as f32).sum()).collect();
    close(&y, &want, "u8 bytes after the error");
}

/// Not a check: the packed product's time against the f32 matmul of the dequantised weight,
/// on this machine's GL (a decoder's token step, M = 1, and a batch of 16).
#[test]
#[ignore]
fn timing() {
    let dev = webgl();
    for (m, k, n) in [(1usize, 1024usize, 1024usize), (16, 1024, 1024)] {
        let g = NBits { bits: 4, block: 32, k };
        let p = packed_weight(g, n);
        let q = Tensor::from_u8(&dev, &p.q, [n, g.k_blocks() * g.blob()]).unwrap();
        let s = Tensor::from_vec(&dev, &p.scales, [n, g.k_blocks()]).unwrap();
        let z = Tensor::from_vec(&dev, &p.zeros, [n, g.k_blocks()]).unwrap();
        let w = Tensor::from_vec(&dev, &p.w.iter().map(|&v| v as f32).collect::<Vec<_>>(), [k, n]).unwrap();
        let a = Tensor::from_vec(&dev, &(0..m * k).map(|i| (i % 13) as f32 / 13.0).collect::<Vec<_>>(), [m, k]).unwrap();
        type Run<'a> = Box<dyn Fn() -> pixelgrad_core::Result<Tensor> + 'a>;
        let runs: [(&str, Run); 2] =
            [("matmul_nbits 4-bit", Box::new(|| a.matmul_nbits(&q, &s, &z, g, false))), ("matmul f32", Box::new(|| a.matmul(&w)))];
        for (name, f) in runs {
            f().unwrap().to_vec().unwrap();
            let t = std::time::Instant::now();
            let reps = 5;
            for _ in 0..reps {
                f().unwrap().to_vec().unwrap();
            }
            let secs = t.elapsed().as_secs_f64() / reps as f64;
            eprintln!("{m}x{k}x{n} {name}: {:.2} ms", secs * 1e3);
        }
    }
}
