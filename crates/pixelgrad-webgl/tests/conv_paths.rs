//! Convolutions whose output rows do not fill whole texels (an 11x11 map: 121 columns per
//! im2col row). `conv2d` widens such rows to a multiple of 4 on WebGL2 when the product takes
//! the block kernel (`Backend::im2col_align`), so the kernel reads the columns, the output
//! gradient and the weight gradient's operands where they lie: no block packing pass in the
//! forward or the backward pass. Values and gradients equal the CPU's, at strides 1 and 2,
//! with and without padding, and with widths the padding cannot reach.

use pixelgrad_core::composite::conv2d;
use pixelgrad_core::{Device, Tensor};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

fn values(n: usize, seed: u64) -> Vec<f32> {
    (0..n).map(|i| pixelgrad_core::rng::uniform(seed, i as u64) * 2.0 - 1.0).collect()
}

/// (batch, channels, height, width, filters, kernel, stride, padding)
type Conv = (usize, usize, usize, usize, usize, usize, usize, usize);

/// The output, then the gradients of `sum(relu(conv) * r)` for x, the weights and the bias;
/// with `mixed`, in a mixed-precision scope (values saved for the backward pass in f16).
fn run(dev: &Device, c: Conv, seed: u64, mixed: bool) -> Vec<Vec<f32>> {
    let _scope = mixed.then(pixelgrad_core::mixed_precision);
    let (n, ch, h, w, f, k, s, p) = c;
    let x = Tensor::from_vec(dev, &values(n * ch * h * w, seed), [n, ch, h, w]).unwrap().with_grad();
    let wt = Tensor::from_vec(dev, &values(f * ch * k * k, seed + 1), [f, ch, k, k]).unwrap().with_grad();
    let b = Tensor::from_vec(dev, &values(f, seed + 2), [f]).unwrap().with_grad();
    let y = conv2d(&x, &wt, Some(&b), s, p).unwrap().relu().unwrap();
    let r = Tensor::from_vec(dev, &values(y.numel(), seed + 3), y.dims().to_vec()).unwrap();
    y.mul(&r).unwrap().sum_all().unwrap().backward().unwrap();
    let mut out = vec![y.to_vec().unwrap()];
    for t in [&x, &wt, &b] {
        out.push(t.grad().expect("a gradient").to_vec().unwrap());
    }
    out
}

#[test]
fn unaligned_output_rows_match_the_cpu_without_packing() {
    let gl =
        WebGlBackend::new_headless(WebGlOptions { self_test: false, ..WebGlOptions::default() }).expect("headless WebGL (EGL) context");
    let gl_dev = Device::new(gl.clone());
    let cpu = Device::new(CpuBackend::new());
    let cases: &[Conv] = &[
        // The browser benchmark's second convolution: 13x13 -> 11x11.
        (32, 8, 13, 13, 16, 3, 1, 0),
        // Padding 1: 9x9 -> 9x9 (81 columns).
        (16, 8, 9, 9, 24, 3, 1, 1),
        // Stride 2: 15x15 -> 7x7, and an even height (10x5 = 50 columns, one extra per row).
        (24, 8, 15, 15, 16, 3, 2, 0),
        (24, 8, 10, 5, 16, 3, 1, 1),
    ];
    for (i, &c) in cases.iter().enumerate() {
        gl.set_pass_log(true);
        let got = run(&gl_dev, c, 10 * i as u64, false);
        let log = gl.take_pass_log();
        gl.set_pass_log(false);
        let want = run(&cpu, c, 10 * i as u64, false);
        assert!(log.iter().any(|l| l.starts_with("matmul_block")), "{c:?}: the block kernel: {log:?}");
        assert!(!log.iter().any(|l| l.starts_with("matmul_block_pack")), "{c:?}: no block packing: {log:?}");
        let k = c.1 * c.5 * c.5;
        for (what, (g, w)) in ["y", "dx", "dw", "db"].iter().zip(got.iter().zip(&want)) {
            assert_eq!(g.len(), w.len(), "{c:?} {what}");
            let scale = w.iter().fold(1f32, |m, v| m.max(v.abs()));
            for (j, (a, b)) in g.iter().zip(w).enumerate() {
                assert!((a - b).abs() <= 1e-5 * (k * c.0) as f32 * scale, "{c:?} {what}[{j}]: {a} vs {b}");
            }
        }
    }
}

/// The same convolution with its saved values in f16 (mixed-precision training): the widened
/// input, its columns and the cropped output go through the f16 copies and back, and the
/// gradients stay within f16 rounding of the CPU's f32 ones.
#[test]
fn unaligned_output_rows_train_in_mixed_precision() {
    let gl =
        WebGlBackend::new_headless(WebGlOptions { self_test: false, ..WebGlOptions::default() }).expect("headless WebGL (EGL) context");
    let gl_dev = Device::new(gl);
    assert!(pixelgrad_core::mixed_precision_available(&gl_dev));
    let cpu = Device::new(CpuBackend::new());
    let c = (32, 8, 13, 13, 16, 3, 1, 0);
    let got = run(&gl_dev, c, 7, true);
    let want = run(&cpu, c, 7, false);
    for (what, (g, w)) in ["y", "dx", "dw", "db"].iter().zip(got.iter().zip(&want)) {
        assert_eq!(g.len(), w.len(), "{what}");
        let scale = w.iter().fold(1f32, |m, v| m.max(v.abs()));
        for (j, (a, b)) in g.iter().zip(w).enumerate() {
            assert!((a - b).abs() <= 1e-2 * scale, "{what}[{j}]: {a} vs {b}");
        }
    }
}
