//! Every matmul kernel path against the CPU backend: large products take the 4x4-block path
//! (operands repacked into blocks, 4 render targets, then assembled), small ones the
//! one-target kernel with its repacking of transposed or unaligned operands. The conformance
//! suite's shapes are too small for the block path, so these sizes are chosen to cross it.

use pixelgrad_core::{Device, Tensor};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

mod products;

use products::values;

/// `run` on the WebGL device with its pass log recorded, then on the CPU: (WebGL's result,
/// its passes, the CPU's result).
fn on_both<T>(gl: &WebGlBackend, gl_dev: &Device, cpu: &Device, run: impl Fn(&Device) -> T) -> (T, Vec<String>, T) {
    gl.set_pass_log(true);
    let got = run(gl_dev);
    let log = gl.take_pass_log();
    gl.set_pass_log(false);
    (got, log, run(cpu))
}

#[test]
fn every_path_matches_the_cpu() {
    let gl =
        WebGlBackend::new_headless(WebGlOptions { self_test: false, ..WebGlOptions::default() }).expect("headless WebGL (EGL) context");
    let gl_dev = Device::new(gl.clone());
    let cpu = Device::new(CpuBackend::new());
    for p in products::products() {
        let (da, db) = (&p.da, &p.db);
        let (ba, bb, m, k, n) = p.geometry;
        let (got, log, want) = on_both(&gl, &gl_dev, &cpu, |dev: &Device| p.run(dev));
        assert_eq!(got.len(), want.len());
        let blocked = log.iter().any(|l| l.starts_with("matmul_block ") || l.starts_with("matmul_block."));
        let macs = m * n * k * ba.unwrap_or(1).max(bb.unwrap_or(1));
        assert_eq!(blocked, macs >= 1 << 20, "{da:?} x {db:?}: {log:?}");
        // Tiny products never pack an operand: the strided kernel reads them where they
        // lie, in the product's one draw; large ones pack rather than fetch per element.
        let strided = log.iter().any(|l| l.starts_with("matmul.strided"));
        let packed = log.iter().any(|l| l.starts_with("matmul_pack"));
        assert!(!(strided && packed), "{da:?} x {db:?}: {log:?}");
        assert!(!(macs <= 1 << 12 && packed), "{da:?} x {db:?}: {log:?}");
        assert!(!(macs > 1 << 16 && strided), "{da:?} x {db:?}: {log:?}");
        p.assert_close(&got, &want, &format!("{log:?}"));
    }
}

/// The block path draws into 4 render targets at once: inside replayed steps those draws are
/// planned like any other (every draw replayed, nothing bound anew from the third step on),
/// and the result equals the eager one, bit for bit.
#[test]
fn block_path_inside_replayed_steps_matches_eager() {
    let gl =
        WebGlBackend::new_headless(WebGlOptions { self_test: false, ..WebGlOptions::default() }).expect("headless WebGL (EGL) context");
    let dev = Device::new(gl.clone());
    let a = Tensor::from_vec(&dev, &values(96 * 80, 7), [96, 80]).unwrap();
    let b = Tensor::from_vec(&dev, &values(80 * 160, 8), [80, 160]).unwrap();
    let step = || a.matmul(&b)?.relu()?.matmul_t(&b, false, true)?.sigmoid();
    let want = step().unwrap().to_vec().unwrap();
    for i in 0..5 {
        let before = dev.counters();
        let got = dev.step(1, step).unwrap();
        let after = dev.counters();
        assert_eq!(got.to_vec().unwrap(), want, "step {i}");
        if i >= 2 {
            assert_eq!(after.replayed - before.replayed, after.launches - before.launches, "step {i}: {before:?} {after:?}");
            assert_eq!((after.bindings, after.allocations), (before.bindings, before.allocations), "step {i}");
        }
    }
}

/// A batched product summed over its batch (a convolution's weight gradient: `G X^T` per
/// sample, summed) is one matmul with the batch merged into k: in one draw on the strided
/// kernel, in the block path's draws, or the batched product and a reduction past both; an
/// elementwise result of the sum (an SGD update) is the epilogue of that matmul (or of the
/// reduction on the last path). Every path equals the CPU.
#[test]
fn products_summed_over_the_batch_match_the_cpu() {
    let gl =
        WebGlBackend::new_headless(WebGlOptions { self_test: false, ..WebGlOptions::default() }).expect("headless WebGL (EGL) context");
    let gl_dev = Device::new(gl.clone());
    let cpu = Device::new(CpuBackend::new());
    // (batch, m, k, n, trans_b, a broadcast over the batch, the path's draw count, whether it
    // is the fallback)
    for (i, &(batch, m, k, n, tb, shared_a, draws, fallback)) in [
        (4, 5, 6, 7, true, false, 1, false),
        (3, 6, 9, 5, false, true, 1, false),
        (8, 16, 300, 9, true, false, 2, true),
        // The block kernel reading both operands in place (a convolution's weight gradient).
        (32, 16, 784, 9, true, false, 2, false),
        (6, 20, 400, 24, false, false, 2, false),
        // k runs not a multiple of 4: the block path packs both operands.
        (8, 20, 398, 24, true, false, 4, false),
    ]
    .iter()
    .enumerate()
    {
        let da = if shared_a { vec![m, k] } else { vec![batch, m, k] };
        let db = if tb { vec![batch, n, k] } else { vec![batch, k, n] };
        let va = values(da.iter().product(), 20 + 2 * i as u64);
        let vb = values(db.iter().product(), 21 + 2 * i as u64);
        let vw = values(m * n, 40 + i as u64);
        let run = |dev: &Device| -> (Vec<f32>, Vec<f32>) {
            let a = Tensor::from_vec(dev, &va, da.clone()).unwrap();
            let b = Tensor::from_vec(dev, &vb, db.clone()).unwrap();
            let w = Tensor::from_vec(dev, &vw, [m, n]).unwrap();
            let g = a.matmul_t(&b, false, tb).unwrap().sum_axis(0, false).unwrap();
            let updated = w.sub(&g.mul_scalar(0.1).unwrap()).unwrap();
            (updated.to_vec().unwrap(), g.to_vec().unwrap())
        };
        let (got, log, want) = on_both(&gl, &gl_dev, &cpu, run);
        let what = format!("{da:?} x {db:?} (trans_b {tb}) summed over {batch}");
        assert_eq!(log.len(), draws, "{what}: {log:?}");
        // The fallback (the batched product, then its sum) draws the update in the sum's pass.
        let epilogues = log.iter().filter(|l| l.contains(" + fused ")).count();
        assert_eq!(epilogues, 1, "{what}: the update is an epilogue: {log:?}");
        assert_eq!(log.iter().any(|l| l.starts_with("reduce")), fallback, "{what}: {log:?}");
        let tol = 1e-5 * (k * batch) as f32;
        for (got, want) in [(&got.0, &want.0), (&got.1, &want.1)] {
            assert_eq!(got.len(), m * n);
            for (j, (g, w)) in got.iter().zip(want.iter()).enumerate() {
                assert!((g - w).abs() <= tol * w.abs().max(1.0), "{what} element {j}: {g} vs {w} ({log:?})");
            }
        }
    }
}

/// Operands whose rows have k contiguous but do not start on a texel are read in place, in
/// one draw with no packing pass, on every K % 4 and batched: a `[64, 10]` gradient times a
/// `[256, 10]` weight transposed (backprop through a 10-class layer; `nt_shift`), and a
/// `[16, 9]` convolution weight times its im2col columns (rows of N; `nn_shift`).
#[test]
fn unaligned_rows_are_read_in_place() {
    let gl =
        WebGlBackend::new_headless(WebGlOptions { self_test: false, ..WebGlOptions::default() }).expect("headless WebGL (EGL) context");
    let gl_dev = Device::new(gl.clone());
    let cpu = Device::new(CpuBackend::new());
    // (batch, m, k, n, B given transposed [N, K]); A is batched with B only when B is.
    let transposed = [(1, 64, 10, 256), (1, 33, 9, 17), (1, 7, 7, 5), (1, 12, 5, 40), (3, 9, 6, 11), (1, 20, 13, 3)].map(|c| (c, true));
    let rows_of_n = [(4, 16, 9, 784), (1, 5, 7, 8), (1, 33, 10, 12), (2, 3, 5, 4), (1, 6, 11, 400)].map(|c| (c, false));
    for (i, ((batch, m, k, n), tb)) in transposed.into_iter().chain(rows_of_n).enumerate() {
        let batched = |d: Vec<usize>| if batch > 1 { [vec![batch], d].concat() } else { d };
        let (da, db) = if tb { (batched(vec![m, k]), batched(vec![n, k])) } else { (vec![m, k], batched(vec![k, n])) };
        let va = values(da.iter().product(), 60 + 2 * i as u64);
        let vb = values(db.iter().product(), 61 + 2 * i as u64);
        let run = |dev: &Device| -> Vec<f32> {
            let a = Tensor::from_vec(dev, &va, da.clone()).unwrap();
            let b = Tensor::from_vec(dev, &vb, db.clone()).unwrap();
            a.matmul_t(&b, false, tb).unwrap().to_vec().unwrap()
        };
        let (got, log, want) = on_both(&gl, &gl_dev, &cpu, run);
        let kernel = if tb { "matmul.nt_shift" } else { "matmul.nn_shift" };
        assert!(log.len() == 1 && log[0].starts_with(kernel), "{da:?} x {db:?} (trans_b {tb}): {log:?}");
        let tol = 1e-5 * k as f32;
        for (j, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= tol * w.abs().max(1.0), "{da:?} x {db:?} (trans_b {tb}) element {j}: {g} vs {w}");
        }
    }
}

/// Large products whose operands already have the block kernel's access pattern (A's rows
/// with k contiguous, B as rows of N or with k contiguous, every row on a texel) skip the
/// block packing passes: the kernel reads them in place (`matmul_block.nn` / `.nt`) and the
/// product is the block draw plus the assembling pass. A transposed A is read in place too
/// (`matmul_block.tn`) when its rows of m are aligned and B is rows of N, and otherwise
/// repacked by one cheap pass. Anything else keeps both packing passes. Every case equals
/// the CPU.
#[test]
fn aligned_operands_skip_the_block_packing() {
    let gl =
        WebGlBackend::new_headless(WebGlOptions { self_test: false, ..WebGlOptions::default() }).expect("headless WebGL (EGL) context");
    let gl_dev = Device::new(gl.clone());
    let cpu = Device::new(CpuBackend::new());
    // (A dims, B dims, trans_a, trans_b, the passes expected)
    type Case<'a> = (&'a [usize], &'a [usize], bool, bool, &'a [&'a str]);
    let cases: &[Case] = &[
        (&[128, 64], &[64, 128], false, false, &["matmul_block.nn", "matmul_unblock"]),
        (&[130, 80], &[121, 80], false, true, &["matmul_block.nt", "matmul_unblock"]),
        // A transposed with M % 4 != 0 (rows of k not aligned): one cheap repack.
        (&[64, 130], &[64, 132], true, false, &["matmul_pack", "matmul_block.nn", "matmul_unblock"]),
        // A transposed with M % 4 == 0 (a dense layer's weight gradient x^T dy): in place.
        (&[64, 784], &[64, 128], true, false, &["matmul_block.tn", "matmul_unblock"]),
        (&[120, 132], &[120, 68], true, false, &["matmul_block.tn", "matmul_unblock"]),
        (&[4, 64, 64], &[4, 64, 68], true, false, &["matmul_block.tn", "matmul_unblock"]),
        // A convolution's forward product: a weight shared over the batch, im2col columns.
        (&[32, 144], &[4, 144, 196], false, false, &["matmul_block.nn", "matmul_unblock"]),
        (&[6, 40, 96], &[6, 96, 68], false, false, &["matmul_block.nn", "matmul_unblock"]),
        // K = 16 (a convolution's input gradient W^T dy with 16 filters): in place.
        (&[16, 72], &[8, 16, 132], true, false, &["matmul_block.tn", "matmul_unblock"]),
        (&[512, 20], &[20, 128], false, false, &["matmul_block.nn", "matmul_unblock"]),
        // K under 32 whose operands would need packing: the one-target kernel instead.
        (&[512, 20], &[20, 127], false, false, &["matmul_pack", "matmul.nt_any"]),
        // N % 4 != 0 and B not transposed: packed.
        (&[128, 80], &[80, 127], false, false, &["matmul_block_pack", "matmul_block_pack", "matmul_block ", "matmul_unblock"]),
        // K % 4 != 0: packed.
        (&[128, 66], &[128, 66], false, true, &["matmul_block_pack", "matmul_block_pack", "matmul_block ", "matmul_unblock"]),
    ];
    for (i, &(da, db, ta, tb, want_log)) in cases.iter().enumerate() {
        let va = values(da.iter().product(), 80 + 2 * i as u64);
        let vb = values(db.iter().product(), 81 + 2 * i as u64);
        let run = |dev: &Device| -> Vec<f32> {
            let a = Tensor::from_vec(dev, &va, da.to_vec()).unwrap();
            let b = Tensor::from_vec(dev, &vb, db.to_vec()).unwrap();
            a.matmul_t(&b, ta, tb).unwrap().to_vec().unwrap()
        };
        let (got, log, want) = on_both(&gl, &gl_dev, &cpu, run);
        assert_eq!(log.len(), want_log.len(), "{da:?}{ta} x {db:?}{tb}: {log:?}");
        for (l, w) in log.iter().zip(want_log.iter()) {
            assert!(l.starts_with(w), "{da:?}{ta} x {db:?}{tb}: {log:?}");
        }
        let k = if ta { da[da.len() - 2] } else { da[da.len() - 1] };
        let tol = 1e-5 * k as f32;
        assert_eq!(got.len(), want.len());
        for (j, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= tol * w.abs().max(1.0), "{da:?}{ta} x {db:?}{tb} element {j}: {g} vs {w} ({log:?})");
        }
    }
}
