//! The matmul program rendered from its one definition (`pixelgrad_core::kernel::products`),
//! forced on ([`MatMulKernel::Rendered`]) in both modes: the conformance families that take
//! products (`matmul`, `conv`, both training curves) pass, and the shapes of
//! `tests/matmul_paths.rs` (every transpose combination, batched, broadcast, summed over the
//! batch with an epilogue) match the CPU, each product drawn by the program and nothing else.

use pixelgrad_conformance::{families, run_family};
use pixelgrad_core::{Device, Tensor};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_webgl::{MatMulKernel, WebGlBackend, WebGlOptions};

mod products;

use products::values;

fn backend(webgl1: bool) -> WebGlBackend {
    WebGlBackend::new_headless(WebGlOptions { webgl1, self_test: false, matmul: MatMulKernel::Rendered, ..Default::default() })
        .expect("headless WebGL (EGL) context")
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

/// The shapes of `tests/matmul_paths.rs` (`products/mod.rs`): the hand-written kernels' block
/// path, repacking and strided reads, each drawn here by the program alone.
fn shapes_match_the_cpu(webgl1: bool) {
    let gl = backend(webgl1);
    let gl_dev = Device::new(gl.clone());
    let cpu = Device::new(CpuBackend::new());
    for p in products::products() {
        let (da, db) = (&p.da, &p.db);
        gl.set_pass_log(true);
        let got = p.run(&gl_dev);
        let log = gl.take_pass_log();
        gl.set_pass_log(false);
        let want = p.run(&cpu);
        assert!(log.len() == 1 && log[0].starts_with("matmul_program"), "{da:?} x {db:?} (webgl1 {webgl1}): {log:?}");
        p.assert_close(&got, &want, &format!("webgl1 {webgl1}"));
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
