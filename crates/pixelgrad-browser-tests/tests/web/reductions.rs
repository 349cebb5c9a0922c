//! WebGPU's reductions rendered from their one definition (`ReduceKernel::Rendered`) in the
//! page, every kind over a first, middle and last axis, one group and a tree of passes, each
//! against the CPU backend in the same page. Each case is logged before it runs, so a lost
//! device names the pass that lost it.

use pixelgrad_browser_tests::browser::log;
use pixelgrad_browser_tests::smoke::host_values;
use pixelgrad_core::{Device, Result, Tensor};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_wgpu::{ReduceKernel, WgpuBackend, WgpuOptions};
use wasm_bindgen_test::*;

const KINDS: [&str; 5] = ["sum", "max", "min", "argmax", "logsumexp"];

/// Shapes and axes: short and long (two and three passes) last axes, a first and a middle axis.
const CASES: [(&[usize], isize); 6] =
    [(&[6, 17], 1), (&[6, 17], 0), (&[3, 5, 4], 1), (&[2, 3000], 1), (&[1, 1_100_000], 1), (&[2500, 3], 0)];

async fn reduce(dev: &Device, kind: &str, shape: &[usize], axis: isize) -> Result<Vec<f32>> {
    let n = shape.iter().product();
    let x = Tensor::from_vec(dev, &host_values(n, 7), shape.to_vec())?;
    let y = match kind {
        "sum" => x.sum_axis(axis, false)?,
        "max" => x.max_axis(axis, false)?,
        "min" => x.min_axis(axis, false)?,
        "argmax" => x.argmax(axis, false)?,
        _ => x.logsumexp(axis, false)?,
    };
    y.to_vec_async().await
}

#[wasm_bindgen_test]
async fn webgpu_rendered_reductions() {
    let opts = WgpuOptions { reductions: ReduceKernel::Rendered, ..WgpuOptions::default() };
    let dev = Device::new(WgpuBackend::new_async(opts).await.expect("webgpu device"));
    let cpu = Device::new(CpuBackend::new());
    for (shape, axis) in CASES {
        for kind in KINDS {
            log(&format!("rendered {kind} {shape:?} axis {axis}"));
            let got = reduce(&dev, kind, shape, axis).await.unwrap_or_else(|e| panic!("{kind} {shape:?} axis {axis}: {e}"));
            let want = reduce(&cpu, kind, shape, axis).await.unwrap();
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let tol = 1e-4 * (1.0 + w.abs()) * if kind == "sum" || kind == "logsumexp" { 100.0 } else { 0.0 };
                assert!((g - w).abs() <= tol, "{kind} {shape:?} axis {axis}: element {i}: {g} vs cpu {w}");
            }
        }
    }
}
