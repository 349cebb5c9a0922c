//! Fused kernels change no result beyond rounding: the conformance training workloads (MLP
//! and CNN, every optimizer) trained with fusion on and off on WebGL2 (llvmpipe through EGL in
//! CI), as replayed steps, end with the same parameters within `steps::FUSED_VS_UNFUSED`, and
//! the fused steps draw fewer times (`steps::fused_matches_unfused`).

use pixelgrad_conformance::steps;
use pixelgrad_core::Device;
use pixelgrad_nn::presets::Preset;
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

const STEPS: usize = 6;

fn device(fuse: bool) -> Device {
    let opts = WebGlOptions { fuse, self_test: false, ..WebGlOptions::default() };
    Device::new(WebGlBackend::new_headless(opts).expect("headless WebGL (EGL) context"))
}

fn compare(preset: Preset) {
    let counts = steps::fused_matches_unfused(&device, preset, STEPS).unwrap();
    for (opt, fused, unfused) in counts {
        eprintln!("{preset:?}/{opt}: {fused} passes per step fused, {unfused} unfused");
    }
}

#[test]
fn mlp_fused_equals_unfused_for_every_optimizer() {
    compare(Preset::Mlp);
}

#[test]
fn cnn_fused_equals_unfused_for_every_optimizer() {
    compare(Preset::Cnn);
}

/// Draws of one sum over `n` elements (the axis of a `[2, n]` tensor), and its result, on
/// WebGL2 or in the `webgl1` mode.
fn sum_draws(webgl1: bool, n: usize) -> (u64, Vec<f32>) {
    use pixelgrad_core::Tensor;
    let opts = WebGlOptions { webgl1, self_test: false, ..WebGlOptions::default() };
    let d = Device::new(WebGlBackend::new_headless(opts).expect("headless WebGL (EGL) context"));
    let data: Vec<f32> = (0..2 * n).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let x = Tensor::from_vec(&d, &data, [2, n]).unwrap();
    d.flush().unwrap();
    let before = d.counters().launches;
    let s = x.sum_axis(1, false).unwrap();
    d.flush().unwrap();
    let draws = d.counters().launches - before;
    (draws, s.to_vec().unwrap())
}

/// WebGL2 sums up to 1024 elements per fragment (one draw for a 1000-long axis, two up to
/// 2^20), WebGL1 keeps its constant group of 16 (three draws for 1000); all exact here
/// (whole numbers).
#[test]
fn reductions_take_the_fewest_draws_the_mode_allows() {
    for (webgl1, n, want) in [(false, 1000, 1), (false, 1024, 1), (false, 5000, 2), (false, 300_000, 2), (true, 1000, 3)] {
        let (draws, got) = sum_draws(webgl1, n);
        let exact: Vec<f32> = (0..2).map(|r| (0..n).map(|j| (((r * n + j) * 7) % 11) as f32 - 5.0).sum()).collect();
        assert_eq!(got, exact, "webgl1 {webgl1}, n {n}");
        assert_eq!(draws, want, "webgl1 {webgl1}, n {n}: draws");
    }
}

fn values(n: usize, seed: u64) -> Vec<f32> {
    (0..n).map(|i| pixelgrad_core::rng::uniform(seed, i as u64) * 2.0 - 1.0).collect()
}

/// `relu(A B + bias)` (bias broadcast over rows: a read with index arithmetic) and
/// `tanh(A B) * c` (c of the product's shape: the fast read) on one device: values and the
/// pass log.
fn epilogue_case(fuse: bool, m: usize, k: usize, n: usize, ta: bool, tb: bool) -> (Vec<f32>, Vec<f32>, Vec<String>) {
    use pixelgrad_core::Tensor;
    let b = WebGlBackend::new_headless(WebGlOptions { fuse, self_test: false, ..WebGlOptions::default() }).unwrap();
    let dev = Device::new(b.clone());
    let da = if ta { [k, m] } else { [m, k] };
    let db = if tb { [n, k] } else { [k, n] };
    let a = Tensor::from_vec(&dev, &values(m * k, 1), da).unwrap();
    let bm = Tensor::from_vec(&dev, &values(k * n, 2), db).unwrap();
    let bias = Tensor::from_vec(&dev, &values(n, 3), [n]).unwrap();
    let c = Tensor::from_vec(&dev, &values(m * n, 4), [m, n]).unwrap();
    b.set_pass_log(true);
    let y = a.matmul_t(&bm, ta, tb).unwrap().add(&bias).unwrap().relu().unwrap();
    let z = a.matmul_t(&bm, ta, tb).unwrap().tanh().unwrap().mul(&c).unwrap();
    let (y, z) = (y.to_vec().unwrap(), z.to_vec().unwrap());
    (y, z, b.take_pass_log())
}

/// An elementwise computation of a product (bias add and activation, with a broadcast or a
/// same-shape input) is drawn in the pass that stores the product, on every matmul path: the
/// one-target kernel's aligned, repacked and strided forms and the block path's assembling
/// pass (N a multiple of 4 or not). One draw fewer per product, the same values.
#[test]
fn elementwise_results_of_a_product_are_drawn_as_its_epilogue() {
    for (m, k, n, ta, tb) in [
        (8, 12, 16, false, false),
        (9, 10, 7, true, false),
        (5, 9, 6, true, true),
        (64, 70, 63, false, true),
        (128, 64, 128, false, false),
        (130, 70, 121, true, false),
    ] {
        let (y1, z1, fused) = epilogue_case(true, m, k, n, ta, tb);
        let (y0, z0, unfused) = epilogue_case(false, m, k, n, ta, tb);
        let what = format!("[{m}, {k}] x [{k}, {n}] ta {ta} tb {tb}");
        let epilogues = fused.iter().filter(|l| l.starts_with("matmul") && l.contains(" + fused ")).count();
        assert_eq!(epilogues, 2, "{what}: {fused:?}");
        assert!(!fused.iter().any(|l| l.starts_with("fused ")), "{what}: no elementwise draw of its own: {fused:?}");
        assert_eq!(fused.len() + 4, unfused.len(), "{what}: fused {fused:?} unfused {unfused:?}");
        let tol = 1e-5 * k as f32;
        for (got, want) in [(&y1, &y0), (&z1, &z0)] {
            assert_eq!(got.len(), want.len());
            for (j, (g, w)) in got.iter().zip(want.iter()).enumerate() {
                assert!((g - w).abs() <= tol * w.abs().max(1.0), "{what} element {j}: {g} vs {w}");
            }
        }
    }
}

/// A product read by two computations: the first drawn takes it as its epilogue, the second
/// reads the stored product (a draw of its own); one computation reading a product twice
/// (`q * q`) fetches it once and is an epilogue too.
#[test]
fn a_product_read_twice_is_stored_once() {
    use pixelgrad_core::Tensor;
    let run = |fuse: bool| {
        let b = WebGlBackend::new_headless(WebGlOptions { fuse, self_test: false, ..WebGlOptions::default() }).unwrap();
        let dev = Device::new(b.clone());
        let a = Tensor::from_vec(&dev, &values(6 * 10, 5), [6, 10]).unwrap();
        let w = Tensor::from_vec(&dev, &values(10 * 8, 6), [10, 8]).unwrap();
        let p = a.matmul(&w).unwrap();
        let y = p.sigmoid().unwrap();
        let z = p.mul(&p).unwrap().neg().unwrap();
        let q = a.matmul(&w).unwrap();
        let s = q.mul(&q).unwrap();
        b.set_pass_log(true);
        let out = [y.to_vec().unwrap(), z.to_vec().unwrap(), p.to_vec().unwrap(), s.to_vec().unwrap()];
        (out, b.take_pass_log())
    };
    let (fused, log) = run(true);
    let (unfused, _) = run(false);
    assert_eq!(log.iter().filter(|l| l.contains(" + fused ")).count(), 2, "{log:?}");
    assert_eq!(log.iter().filter(|l| l.starts_with("fused mul+neg")).count(), 1, "{log:?}");
    assert_eq!(log.len(), 3, "{log:?}");
    for (g, w) in fused.iter().flatten().zip(unfused.iter().flatten()) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} vs {w}");
    }
}

/// A pending elementwise result of a sum (a bias's update from its summed gradient) is drawn
/// in the sum's last pass: one-pass and multi-pass sums of a texture, and a max; the same
/// values as with fusion off. A sum of a pending computation keeps its prologue (drawn when
/// asked for, as before epilogues) and draws the update apart.
#[test]
fn elementwise_results_of_a_sum_are_drawn_in_its_last_pass() {
    use pixelgrad_core::Tensor;
    // (rows, columns, the input is pending, max instead of sum, epilogue expected)
    for (rows, cols, pending, max, epilogue) in [
        (32, 256, false, false, true),
        (3000, 16, false, false, true),
        (3000, 16, true, false, false),
        (40, 7, false, true, true),
        (32, 256, true, false, false),
    ] {
        let run = |fuse: bool| {
            let b = WebGlBackend::new_headless(WebGlOptions { fuse, self_test: false, ..WebGlOptions::default() }).unwrap();
            let dev = Device::new(b.clone());
            let x = Tensor::from_vec(&dev, &values(rows * cols, 7), [rows, cols]).unwrap();
            let w = Tensor::from_vec(&dev, &values(cols, 8), [cols]).unwrap();
            x.to_vec().unwrap();
            b.set_pass_log(true);
            let x = if pending { x.tanh().unwrap().mul_scalar(2.0).unwrap() } else { x };
            let g = if max { x.max_axis(0, false).unwrap() } else { x.sum_axis(0, false).unwrap() };
            let updated = w.sub(&g.mul_scalar(0.1).unwrap()).unwrap();
            let out = (updated.to_vec().unwrap(), g.to_vec().unwrap());
            (out, b.take_pass_log())
        };
        let ((u1, g1), log) = run(true);
        let ((u0, g0), _) = run(false);
        let what = format!("[{rows}, {cols}] pending {pending} max {max}");
        let epilogues = log.iter().filter(|l| l.starts_with("reduce") && l.contains(" + fused ")).count();
        assert_eq!(epilogues, usize::from(epilogue), "{what}: {log:?}");
        assert_eq!(log.iter().filter(|l| l.starts_with("fused ")).count(), usize::from(!epilogue), "{what}: {log:?}");
        for (got, want) in [(&u1, &u0), (&g1, &g0)] {
            for (j, (g, w)) in got.iter().zip(want.iter()).enumerate() {
                assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{what} element {j}: {g} vs {w}");
            }
        }
    }
}

/// Issue 12's budget (`steps::PASS_BUDGETS`): a replayed training step of the benchmark's mlp
/// and cnn draws at most a third of what it drew before fusion, so a change that splits a
/// fused pass again fails here, not only in the benchmark's table.
#[test]
fn training_steps_stay_within_a_third_of_the_unfused_draws() {
    for &(preset, batch, opt, webgl_before, _) in steps::PASS_BUDGETS {
        let got = steps::bench_passes(&device(true), preset, batch, opt).unwrap();
        eprintln!("{preset:?}/{opt}: {got} draws per replayed step (before fusion {webgl_before})");
        assert!(3 * got <= webgl_before, "{preset:?}/{opt}: {got} draws per step, budget {}", webgl_before / 3);
    }
}
