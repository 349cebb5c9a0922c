//! Shared helpers for the GPU tests: the device, running one op, deterministic data.
#![allow(dead_code)]

use pixelgrad_core::{Backend, Op, Shape};
use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};

/// The backend under test. Without an adapter the tests fail loudly: CI has Mesa lavapipe.
pub fn backend() -> WgpuBackend {
    match WgpuBackend::new(WgpuOptions::default()) {
        Ok(b) => b,
        Err(e) => panic!(
            "no WebGPU adapter, so the wgpu backend cannot be tested: {e}\n\
             Install Mesa's Vulkan drivers (Debian: mesa-vulkan-drivers, which provides lavapipe)."
        ),
    }
}

/// Runs `op` on host inputs (data, shape) and reads the result back.
pub fn run(b: &WgpuBackend, op: &Op, inputs: &[(&[f32], &[usize])]) -> (Vec<f32>, Vec<usize>) {
    let shapes: Vec<Shape> = inputs.iter().map(|(_, s)| Shape::from(s.to_vec())).collect();
    let shape_refs: Vec<&Shape> = shapes.iter().collect();
    let out = op.infer_shape(&shape_refs).unwrap();
    let stores: Vec<_> = inputs.iter().map(|(d, _)| b.upload(d).unwrap()).collect();
    let store_refs: Vec<_> = stores.iter().collect();
    let res = b.execute(op, &store_refs, &shape_refs, &out).unwrap();
    (b.read(&res, out.numel()).unwrap(), out.0)
}

/// Deterministic values in [lo, hi).
pub fn data(n: usize, salt: u64, lo: f32, hi: f32) -> Vec<f32> {
    (0..n).map(|i| lo + (hi - lo) * pixelgrad_core::rng::uniform(salt, i as u64)).collect()
}

/// Asserts |got - want| <= atol + rtol·|want| elementwise.
pub fn close(got: &[f32], want: &[f64], rtol: f64, atol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g as f64 - w).abs() <= atol + rtol * w.abs() || (w.is_nan() && g.is_nan()) || (w.is_infinite() && g as f64 == w);
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

/// Row-major strides.
pub fn strides(d: &[usize]) -> Vec<usize> {
    pixelgrad_core::shape::contiguous_strides(d)
}

/// Coordinates of flat index `i` in `d`.
pub fn coords(mut i: usize, d: &[usize]) -> Vec<usize> {
    let mut c = vec![0; d.len()];
    for ax in (0..d.len()).rev() {
        c[ax] = i % d[ax];
        i /= d[ax];
    }
    c
}
