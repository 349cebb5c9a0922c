//! The matmul program rendered from its one definition (`pixelgrad_core::kernel::products`),
//! forced on ([`MatMulKernel::Rendered`]) in both modes: the conformance families that take
//! products (`matmul`, `conv`, both training curves) pass, and the shapes of
//! `tests/matmul_paths.rs` (every transpose combination, batched, broadcast, summed over the
//! batch with an epilogue) match the CPU, each product drawn by the program and nothing else.

use pixelgrad_conformance::{families, run_family};
use pixelgrad_core::{Device, Tensor};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_webgl::{MatMulKernel, WebGlBackend, WebGlOptions};

fn backend(webgl1: bool) -> WebGlBackend {
    WebGlBackend::new_headless(WebGlOptions { webgl1, self_test: false, matmul: MatMulKernel::Rendered, ..Default::default() })
        .expect("headless WebGL (EGL) context")
}

fn values(n: usize, seed: u64) -> Vec<f32> {
    (0..n).map(|i| pixelgrad_core::rng::uniform(seed, i as u64) * 2.0 - 1.0).collect()
}

fn families_pass(webgl1: bool) {
    let make = || Device::new(backend(webgl1));
    run_family("matmul", families::matmul, make);
    run_family("conv", families::conv, make);
    run_family("training_curve", families::training_curve, make);
    run_family("training_curve_cnn", families::training_curve_cnn, make);
}

#[test]
fn conformance_families_with_products_pass_webgl2() {
    families_pass(false);
}

#[test]
fn conformance_families_with_products_pass_webgl1() {
    families_pass(true);
}

/// (batch of A, batch of B, m, k, n); None = rank 2. `tests/matmul_paths.rs`' shapes: the
/// hand-written kernels' block path, repacking and strided reads.
type Geometry = (Option<usize>, Option<usize>, usize, usize, usize);

const SHAPES: &[Geometry] = &[
    (None, None, 128, 64, 128),
    (None, None, 130, 70, 121),
    (Some(20), Some(20), 37, 33, 45),
    (None, Some(6), 16, 72, 121),
    (Some(5), None, 40, 48, 68),
    (None, None, 64, 70, 63),
    (None, None, 8, 12, 16),
    (None, None, 9, 10, 7),
    (Some(3), Some(3), 5, 9, 6),
    (None, None, 1, 300, 33),
];

fn shapes_match_the_cpu(webgl1: bool) {
    let gl = backend(webgl1);
    let gl_dev = Device::new(gl.clone());
    let cpu = Device::new(CpuBackend::new());
    for (i, &(ba, bb, m, k, n)) in SHAPES.iter().enumerate() {
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let mut da = if ta { vec![k, m] } else { vec![m, k] };
            let mut db = if tb { vec![n, k] } else { vec![k, n] };
            if let Some(b) = ba {
                da.insert(0, b);
            }
            if let Some(b) = bb {
                db.insert(0, b);
            }
            let va = values(da.iter().product(), 2 * i as u64);
            let vb = values(db.iter().product(), 2 * i as u64 + 1);
            let run = |dev: &Device| -> Vec<f32> {
                let a = Tensor::from_vec(dev, &va, da.clone()).unwrap();
                let b = Tensor::from_vec(dev, &vb, db.clone()).unwrap();
                a.matmul_t(&b, ta, tb).unwrap().to_vec().unwrap()
            };
            gl.set_pass_log(true);
            let got = run(&gl_dev);
            let log = gl.take_pass_log();
            gl.set_pass_log(false);
            let want = run(&cpu);
            assert!(log.len() == 1 && log[0].starts_with("matmul_program"), "{da:?} x {db:?} (webgl1 {webgl1}): {log:?}");
            assert_eq!(got.len(), want.len());
            let tol = 1e-5 * k as f32;
            for (j, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= tol * w.abs().max(1.0), "{da:?}{ta} x {db:?}{tb} (webgl1 {webgl1}) element {j}: {g} vs {w}");
            }
        }
    }
}

#[test]
fn every_shape_matches_the_cpu_webgl2() {
    shapes_match_the_cpu(false);
}

#[test]
fn every_shape_matches_the_cpu_webgl1() {
    shapes_match_the_cpu(true);
}

/// A product summed over its batch (a convolution's weight gradient) with an SGD update fused
/// after it: the batched product by the program, then the sum, the update as the sum's
/// epilogue (or its own draw), equal to the CPU.
#[test]
fn products_summed_over_the_batch_match_the_cpu() {
    for webgl1 in [false, true] {
        let gl = backend(webgl1);
        let gl_dev = Device::new(gl.clone());
        let cpu = Device::new(CpuBackend::new());
        for (i, &(batch, m, k, n, tb)) in [(4, 5, 6, 7, true), (8, 16, 300, 9, true), (6, 20, 40, 24, false)].iter().enumerate() {
            let (da, db) = (vec![batch, m, k], if tb { vec![batch, n, k] } else { vec![batch, k, n] });
            let (va, vb, vw) = (values(batch * m * k, 20 + i as u64), values(batch * k * n, 30 + i as u64), values(m * n, 40 + i as u64));
            let run = |dev: &Device| -> Vec<f32> {
                let a = Tensor::from_vec(dev, &va, da.clone()).unwrap();
                let b = Tensor::from_vec(dev, &vb, db.clone()).unwrap();
                let w = Tensor::from_vec(dev, &vw, [m, n]).unwrap();
                let g = a.matmul_t(&b, false, tb).unwrap().sum_axis(0, false).unwrap();
                w.sub(&g.mul_scalar(0.1).unwrap()).unwrap().to_vec().unwrap()
            };
            gl.set_pass_log(true);
            let got = run(&gl_dev);
            let log = gl.take_pass_log();
            gl.set_pass_log(false);
            let want = run(&cpu);
            assert!(log.iter().any(|l| l.starts_with("matmul_program")), "webgl1 {webgl1}: {log:?}");
            assert!(!log.iter().any(|l| l.starts_with("matmul.") || l.starts_with("matmul_block")), "webgl1 {webgl1}: {log:?}");
            let tol = 1e-5 * (k * batch) as f32;
            for (j, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= tol * w.abs().max(1.0), "{da:?} x {db:?} (webgl1 {webgl1}) element {j}: {g} vs {w}");
            }
        }
    }
}
