//! Fused kernels change no result beyond rounding: the conformance training workloads (MLP
//! and CNN, every optimizer) trained with fusion on and off on WebGPU (lavapipe in CI), as
//! replayed steps, end with the same parameters within `steps::FUSED_VS_UNFUSED`, and the
//! fused steps launch fewer kernels (`steps::fused_matches_unfused`).

use pixelgrad_conformance::steps;
use pixelgrad_core::Device;
use pixelgrad_nn::presets::Preset;
use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};

const STEPS: usize = 6;

fn device(fuse: bool) -> Device {
    Device::new(WgpuBackend::new(WgpuOptions { fuse, ..WgpuOptions::default() }).expect("a WebGPU adapter (Mesa lavapipe in CI)"))
}

fn compare(preset: Preset) {
    let counts = steps::fused_matches_unfused(&device, preset, STEPS).unwrap();
    for (opt, fused, unfused) in counts {
        eprintln!("{preset:?}/{opt}: {fused} passes per step fused, {unfused} unfused");
    }
}

/// Grouped launches (several pending results per launch at the end of a step) against one
/// launch per result, both fused: same parameters, fewer launches.
fn compare_grouping(preset: Preset) {
    let make = |group: bool| {
        let opts = WgpuOptions { group, ..WgpuOptions::default() };
        Device::new(WgpuBackend::new(opts).expect("a WebGPU adapter (Mesa lavapipe in CI)"))
    };
    let counts = steps::fused_matches_unfused(&make, preset, STEPS).unwrap();
    for (opt, grouped, single) in counts {
        eprintln!("{preset:?}/{opt}: {grouped} passes per step grouped, {single} one launch per result");
    }
}

#[test]
fn mlp_grouped_equals_ungrouped_for_every_optimizer() {
    compare_grouping(Preset::Mlp);
}

#[test]
fn cnn_grouped_equals_ungrouped_for_every_optimizer() {
    compare_grouping(Preset::Cnn);
}

#[test]
fn mlp_fused_equals_unfused_for_every_optimizer() {
    compare(Preset::Mlp);
}

#[test]
fn cnn_fused_equals_unfused_for_every_optimizer() {
    compare(Preset::Cnn);
}

/// On register-kernel adapters (lavapipe) a bias add and activation applied to a matmul's
/// result run in the matmul's own launch (an epilogue), which stores the raw product too.
#[test]
fn bias_and_activation_ride_on_the_matmul() {
    let vals = |n: usize, seed: usize| -> Vec<f32> { (0..n).map(|i| (((i * 37 + seed * 11) % 23) as f32 - 11.0) / 7.0).collect() };
    for matmul in [pixelgrad_wgpu::MatmulKernel::Auto, pixelgrad_wgpu::MatmulKernel::Tiled] {
        epilogue_case(matmul, &vals);
    }
}

fn epilogue_case(matmul: pixelgrad_wgpu::MatmulKernel, vals: &dyn Fn(usize, usize) -> Vec<f32>) {
    use pixelgrad_core::Tensor;
    let run = |fuse: bool| {
        let d = Device::new(WgpuBackend::new(WgpuOptions { fuse, matmul, ..WgpuOptions::default() }).expect("a WebGPU adapter"));
        let x = Tensor::from_vec(&d, &vals(6 * 5, 1), [6, 5]).unwrap();
        let w = Tensor::from_vec(&d, &vals(5 * 7, 2), [5, 7]).unwrap();
        let b = Tensor::from_vec(&d, &vals(7, 3), [7]).unwrap();
        let w2 = Tensor::from_vec(&d, &vals(7 * 3, 4), [7, 3]).unwrap();
        d.flush().unwrap();
        let before = d.counters().launches;
        let z = x.matmul(&w).unwrap();
        let h = z.add(&b).unwrap().relu().unwrap();
        let y = h.matmul(&w2).unwrap();
        d.flush().unwrap();
        let launches = d.counters().launches - before;
        (z.to_vec().unwrap(), h.to_vec().unwrap(), y.to_vec().unwrap(), launches)
    };
    let (z1, h1, y1, fused) = run(true);
    let (z0, h0, y0, plain) = run(false);
    for (a, b, what) in [(&z1, &z0, "matmul"), (&h1, &h0, "relu(matmul + bias)"), (&y1, &y0, "next matmul")] {
        let worst = a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0f32, f32::max);
        assert!(worst <= 1e-5, "{matmul:?} {what}: fused and unfused differ by {worst}");
    }
    assert!(h1.contains(&0.0) && h1.iter().any(|&v| v > 0.0), "the ReLU cuts some values");
    assert_eq!(plain, 4, "unfused: matmul, add, relu, matmul (got {plain})");
    assert_eq!(fused, 2, "{matmul:?} fused: the matmul with its epilogue, then the next matmul (got {fused})");
}

/// The tiled matmul kernels (what GPUs and browsers run) take epilogues too: training with
/// them fused equals training with fusion off, on every optimizer.
#[test]
fn tiled_matmuls_fused_equal_unfused() {
    let make = |fuse: bool| {
        let opts = WgpuOptions { fuse, matmul: pixelgrad_wgpu::MatmulKernel::Tiled, ..WgpuOptions::default() };
        Device::new(WgpuBackend::new(opts).expect("a WebGPU adapter (Mesa lavapipe in CI)"))
    };
    for preset in [Preset::Mlp, Preset::Cnn] {
        for (opt, fused, unfused) in steps::fused_matches_unfused(&make, preset, STEPS).unwrap() {
            eprintln!("tiled {preset:?}/{opt}: {fused} passes per step fused, {unfused} unfused");
        }
    }
}

/// A convolution's bias and ReLU ride on its matmul even though they are applied to the
/// `[N, O, OH, OW]` reshape of the `[N, O, OH*OW]` product (the chain follows the reshape), and
/// max pooling is one launch: conv + bias + ReLU + pool is im2col, the matmul with its
/// epilogue and the pool, with the values of the unfused run. On both matmul paths.
#[test]
fn convolution_epilogue_and_pool_take_three_launches() {
    use pixelgrad_core::composite::{conv2d, max_pool2d};
    use pixelgrad_core::Tensor;
    let vals = |n: usize, seed: usize| -> Vec<f32> { (0..n).map(|i| (((i * 29 + seed * 13) % 19) as f32 - 9.0) / 5.0).collect() };
    for matmul in [pixelgrad_wgpu::MatmulKernel::Auto, pixelgrad_wgpu::MatmulKernel::Tiled] {
        let run = |fuse: bool| {
            let d = Device::new(WgpuBackend::new(WgpuOptions { fuse, matmul, ..WgpuOptions::default() }).expect("a WebGPU adapter"));
            let x = Tensor::from_vec(&d, &vals(2 * 3 * 9 * 8, 1), [2, 3, 9, 8]).unwrap();
            let w = Tensor::from_vec(&d, &vals(4 * 3 * 3 * 3, 2), [4, 3, 3, 3]).unwrap();
            let b = Tensor::from_vec(&d, &vals(4, 3), [4]).unwrap();
            d.flush().unwrap();
            let before = d.counters().launches;
            let y = max_pool2d(&conv2d(&x, &w, Some(&b), 1, 1).unwrap().relu().unwrap(), 2, 2, 0).unwrap();
            d.flush().unwrap();
            (y.to_vec().unwrap(), d.counters().launches - before)
        };
        let (y1, fused) = run(true);
        let (y0, plain) = run(false);
        let worst = y1.iter().zip(&y0).map(|(p, q)| (p - q).abs()).fold(0f32, f32::max);
        assert!(worst <= 1e-5, "{matmul:?}: fused and unfused differ by {worst}");
        assert!(y1.contains(&0.0) && y1.iter().any(|&v| v > 0.0), "the ReLU cuts some values");
        assert_eq!(plain, 5, "unfused: im2col, matmul, add, relu, pool (got {plain})");
        assert_eq!(fused, 3, "{matmul:?} fused: im2col, the matmul with bias + relu, pool (got {fused})");
    }
}

/// A broadcast bias's gradient, the sum of a pending `[N, O, P]` computation over `N` and `P`,
/// is one launch (the two sums merge), and sums that cannot merge (the middle axis, or one read
/// on its own) still give the CPU's values.
#[test]
fn sums_over_both_ends_of_an_axis_run_as_one_launch() {
    use pixelgrad_core::Tensor;
    let vals = |n: usize| -> Vec<f32> { (0..n).map(|i| ((i * 13) % 17) as f32 - 8.0).collect() };
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    let gpu = device(true);
    let (n, o, p) = (5, 3, 70);
    let run = |d: &Device| {
        let x = Tensor::from_vec(d, &vals(n * o * p), [n, o, p]).unwrap();
        let m = Tensor::from_vec(d, &vals(o), [1, o, 1]).unwrap();
        d.flush().unwrap();
        let before = d.counters().launches;
        // relu'(x) * m, summed to [1, O, 1] the way sum_to_shape does (innermost first).
        let g = x.gt_scalar(0.0).unwrap().mul(&m).unwrap();
        let bias = g.sum_axis(2, true).unwrap().sum_axis(0, true).unwrap();
        let got = bias.to_vec().unwrap();
        let launches = d.counters().launches - before;
        // Not mergeable: the middle axis then the first, and a sum read by itself.
        let g = x.mul(&m).unwrap();
        let mid = g.sum_axis(1, true).unwrap().sum_axis(0, true).unwrap().to_vec().unwrap();
        let alone = x.mul(&m).unwrap().sum_axis(2, true).unwrap().to_vec().unwrap();
        (got, launches, mid, alone)
    };
    let (want, _, want_mid, want_alone) = run(&cpu);
    let (got, launches, mid, alone) = run(&gpu);
    assert_eq!(got, want, "bias gradient");
    assert_eq!(mid, want_mid, "middle then first axis");
    assert_eq!(alone, want_alone, "one sum");
    assert_eq!(launches, 1, "the two sums of the bias gradient merge into one launch");
}

/// A batched matmul summed over its batch (a convolution's weight gradient, as autodiff
/// computes it: the product per image, then `sum_to_shape`) is one launch on both matmul
/// paths and every register-kernel shape class (plain, transposed, the split-K kernel of
/// long-K small outputs), with the CPU's values.
#[test]
fn batched_products_summed_over_the_batch_are_one_launch() {
    use pixelgrad_core::Tensor;
    let vals = |n: usize, seed: usize| -> Vec<f32> { (0..n).map(|i| (((i * 7 + seed * 5) % 13) as f32 - 6.0) / 8.0).collect() };
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    // (a dims, b dims, trans_a, trans_b); the batch is the first axis.
    type Case = ([usize; 3], [usize; 3], bool, bool);
    let cases: [Case; 4] = [
        ([3, 5, 7], [3, 7, 6], false, false),
        ([4, 8, 676], [4, 9, 676], false, true), // split-K on subgroup adapters
        ([2, 9, 5], [2, 9, 4], true, false),
        ([5, 16, 20], [5, 12, 20], false, true),
    ];
    for matmul in [pixelgrad_wgpu::MatmulKernel::Auto, pixelgrad_wgpu::MatmulKernel::Tiled] {
        let gpu = Device::new(WgpuBackend::new(WgpuOptions { matmul, ..WgpuOptions::default() }).expect("a WebGPU adapter"));
        for (i, &(ad, bd, ta, tb)) in cases.iter().enumerate() {
            let run = |d: &Device| {
                let a = Tensor::from_vec(d, &vals(ad.iter().product(), i), ad).unwrap();
                let b = Tensor::from_vec(d, &vals(bd.iter().product(), i + 9), bd).unwrap();
                d.flush().unwrap();
                let before = d.counters().launches;
                let prod = a.matmul_t(&b, ta, tb).unwrap();
                let dims = prod.dims().to_vec();
                // sum_to_shape's form: the batch, then the rest as one axis.
                let s = prod.reshape([dims[0], dims[1] * dims[2]]).unwrap().sum_axis(0, false).unwrap();
                let got = s.to_vec().unwrap();
                (got, d.counters().launches - before)
            };
            let (want, _) = run(&cpu);
            let (got, launches) = run(&gpu);
            let worst = got.iter().zip(&want).map(|(p, q)| (p - q).abs()).fold(0f32, f32::max);
            assert!(worst <= 1e-4, "{matmul:?} case {i}: differs from the CPU by {worst}");
            assert_eq!(launches, 1, "{matmul:?} case {i}: the product and its batch sum are one launch");
        }
    }
}

/// Issue 12's budget (`steps::PASS_BUDGETS`): a replayed training step of the benchmark's mlp
/// and cnn launches at most a third of what it launched before fusion.
#[test]
fn training_steps_stay_within_a_third_of_the_unfused_launches() {
    for &(preset, batch, opt, _, webgpu_before) in steps::PASS_BUDGETS {
        let got = steps::bench_passes(&device(true), preset, batch, opt).unwrap();
        eprintln!("{preset:?}/{opt}: {got} launches per replayed step (before fusion {webgpu_before})");
        assert!(3 * got <= webgpu_before, "{preset:?}/{opt}: {got} launches per step, budget {}", webgpu_before / 3);
    }
}
