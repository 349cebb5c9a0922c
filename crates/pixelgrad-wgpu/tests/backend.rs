//! Backend behaviour: random numbers, pooling, caching, submission, limits, device loss.

mod common;

use common::*;
use pixelgrad_core::{rng, Backend, BinaryOp, Distribution, Error, Op, Shape, UnaryOp};

#[test]
fn philox_uniform_is_bit_exact() {
    let b = backend();
    for seed in [0u64, 42, 0xDEAD_BEEF_1234_5678, u64::MAX] {
        let n = 4099;
        let op = Op::Random { seed, dist: Distribution::Uniform { low: 0.0, high: 1.0 }, shape: Shape::from([n]) };
        let (got, _) = run(&b, &op, &[]);
        for (i, g) in got.iter().enumerate() {
            let want = rng::sample(Distribution::Uniform { low: 0.0, high: 1.0 }, seed, i as u64);
            assert_eq!(g.to_bits(), want.to_bits(), "seed {seed:#x} element {i}");
        }
    }
}

#[test]
fn philox_scaled_uniform_and_normal_match_rng() {
    let b = backend();
    let n = 5000;
    let dists = [Distribution::Uniform { low: -3.0, high: 5.0 }, Distribution::Normal { mean: 0.5, std: 2.0 }];
    for dist in dists {
        let op = Op::Random { seed: 7, dist, shape: Shape::from([n]) };
        let (got, _) = run(&b, &op, &[]);
        let want: Vec<f64> = (0..n).map(|i| rng::sample(dist, 7, i as u64) as f64).collect();
        // f32 Box-Muller on the GPU vs f64 on the host: a few ulps of the result.
        close(&got, &want, 1e-5, 1e-5, &format!("{dist:?}"));
    }
}

#[test]
fn pool_reuses_buffers_for_repeated_ops() {
    // exp(x) * x: one fused launch per step, or two without fusion.
    for (fuse, launches) in [(true, 20), (false, 40)] {
        pool_reuse(fuse, launches);
    }
}

fn pool_reuse(fuse: bool, launches: u64) {
    let b = pixelgrad_wgpu::WgpuBackend::new(pixelgrad_wgpu::WgpuOptions { fuse, ..Default::default() }).unwrap();
    let x = b.upload(&data(1000, 1, -1.0, 1.0)).unwrap();
    let s = Shape::from([1000]);
    let step = |b: &pixelgrad_wgpu::WgpuBackend| {
        let y = b.execute(&Op::Unary(UnaryOp::Exp), &[&x], &[&s], &s).unwrap();
        let z = b.execute(&Op::Binary(BinaryOp::Mul), &[&y, &x], &[&s, &s], &s).unwrap();
        b.read(&z, 1000).unwrap()
    };
    for _ in 0..3 {
        step(&b);
    }
    let before = b.counters();
    for _ in 0..20 {
        step(&b);
    }
    let after = b.counters();
    assert_eq!(after.allocations, before.allocations, "allocations grew: {before:?} -> {after:?}");
    assert_eq!(after.compiles, before.compiles, "pipelines recompiled");
    assert_eq!(after.bytes_in_use, before.bytes_in_use);
    assert_eq!(after.launches - before.launches, launches, "fuse {fuse}");
    assert_eq!(after.readbacks - before.readbacks, 20);
}

#[test]
fn pipelines_do_not_depend_on_shapes() {
    let b = backend();
    let run_sizes = |sizes: [usize; 4]| {
        for n in sizes {
            let x = data(n, 2, -1.0, 1.0);
            run(&b, &Op::Unary(UnaryOp::Neg), &[(&x, &[n])]);
            run(&b, &Op::MatMul { trans_a: false, trans_b: false }, &[(&x, &[1, n]), (&x, &[n, 1])]);
        }
    };
    run_sizes([1, 7, 300, 5000]);
    // One unary pipeline and one matmul pipeline, or two where the matmul kernel reads
    // operands whose contiguous dimension is a multiple of 4 as vec4s (CPU adapters).
    let first = b.counters().compiles;
    assert!((2..=3).contains(&first), "{first} pipelines");
    // New shapes of the same alignment classes compile nothing.
    run_sizes([3, 11, 400, 6000]);
    assert_eq!(b.counters().compiles, first);
}

#[test]
fn ops_are_batched_into_few_submissions() {
    // Unfused: 100 launches; fused: chains cut only where a launch's parameter slot is full.
    for fuse in [false, true] {
        let b = pixelgrad_wgpu::WgpuBackend::new(pixelgrad_wgpu::WgpuOptions { fuse, ..Default::default() }).unwrap();
        let s = Shape::from([64]);
        let mut x = b.upload(&[1.0; 64]).unwrap();
        let before = b.counters();
        for _ in 0..100 {
            x = b.execute(&Op::Unary(UnaryOp::Affine { mul: 1.0, add: 1.0 }), &[&x], &[&s], &s).unwrap();
        }
        let got = b.read(&x, 64).unwrap();
        assert_eq!(got, vec![101.0; 64]);
        let after = b.counters();
        // One submission at the read.
        assert_eq!(after.submissions - before.submissions, 1, "fuse {fuse}");
        let launches = after.launches - before.launches;
        if fuse {
            assert!((2..=10).contains(&launches), "{launches} launches for a fused chain of 100");
        } else {
            assert_eq!(launches, 100);
        }
    }
}

#[test]
fn large_launches_fold_into_2d_grids() {
    let b = backend();
    let max = b.report().max_compute_workgroups_per_dimension as usize;
    // More elements than one grid row of 256-wide workgroups can cover.
    let n = max * 256 + 3000;
    let s = Shape::from([n]);
    let full = b.execute(&Op::Fill { value: 3.0, shape: s.clone() }, &[], &[], &s).unwrap();
    let y = b.execute(&Op::Unary(UnaryOp::Neg), &[&full], &[&s], &s).unwrap();
    drop(full);
    // Check around the fold and at the very end without reading 64 MB back.
    for start in [0, max * 256 - 10, n - 1000] {
        let len = 1000.min(n - start);
        let op = Op::Slice { starts: vec![start], ends: vec![start + len] };
        let o = Shape::from([len]);
        let part = b.execute(&op, &[&y], &[&s], &o).unwrap();
        assert_eq!(b.read(&part, len).unwrap(), vec![-3.0; len], "slice at {start}");
    }
}

#[test]
fn oversized_tensor_is_a_limit_error() {
    let b = backend();
    let limit = b.report().max_storage_buffer_binding_size;
    let n = (limit / 4 + 1) as usize;
    let s = Shape::from([n]);
    match b.execute(&Op::Fill { value: 0.0, shape: s.clone() }, &[], &[], &s) {
        Err(Error::Limit { limit_name, .. }) => assert_eq!(limit_name, "maxStorageBufferBindingSize"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a tensor over maxStorageBufferBindingSize was accepted"),
    }
}

#[test]
fn device_loss_is_a_typed_error() {
    let b = backend();
    let x = b.upload(&[1.0, 2.0]).unwrap();
    b.simulate_device_loss();
    let s = Shape::from([2]);
    assert!(matches!(b.read(&x, 2), Err(Error::DeviceLost { .. })));
    assert!(matches!(b.execute(&Op::Unary(UnaryOp::Neg), &[&x], &[&s], &s), Err(Error::DeviceLost { .. })));
    assert!(matches!(b.upload(&[1.0]), Err(Error::DeviceLost { .. })));
}

#[test]
fn report_and_self_test() {
    let b = backend();
    let r = b.report();
    assert!(!r.adapter.is_empty());
    assert!(r.max_compute_workgroups_per_dimension >= 65535);
    assert!(b.name().starts_with("webgpu ("), "{}", b.name());
    let t = b.self_test().unwrap();
    assert_eq!(t.details.len(), 4);
    assert!(t.passes(1e-4), "{t:?}");
}

#[test]
fn async_read_matches_blocking_read() {
    let b = backend();
    let x = b.upload(&[1.0, 2.0, 3.0]).unwrap();
    let v = pollster::block_on(b.read_async(&x, 3)).unwrap();
    assert_eq!(v, vec![1.0, 2.0, 3.0]);
    // Partial reads and flush without pending work are fine.
    assert_eq!(b.read(&x, 2).unwrap(), vec![1.0, 2.0]);
    b.flush().unwrap();
}

#[test]
fn inconsistent_direct_calls_are_errors_not_panics() {
    let b = backend();
    let x = b.upload(&[1.0, 2.0]).unwrap();
    let s2 = Shape::from([2]);
    let s3 = Shape::from([3]);
    // Too few shapes, wrong output shape, storage smaller than its shape.
    assert!(b.execute(&Op::Binary(BinaryOp::Add), &[&x, &x], &[&s2], &s2).is_err());
    assert!(b.execute(&Op::Unary(UnaryOp::Neg), &[&x], &[&s2], &s3).is_err());
    assert!(b.execute(&Op::Unary(UnaryOp::Neg), &[&x], &[&s3], &s3).is_err());
    // A storage from another backend.
    let cpu = pixelgrad_cpu::CpuBackend::new();
    let foreign = cpu.upload(&[1.0, 2.0]).unwrap();
    assert!(matches!(b.execute(&Op::Unary(UnaryOp::Neg), &[&foreign], &[&s2], &s2), Err(Error::BackendMismatch { .. })));
    // Reading more than the tensor holds.
    assert!(b.read(&x, 3).is_err());
    // Bad gather indices are reported at the next read, naming the op, and then cleared.
    let idx = b.upload(&[5.0]).unwrap();
    let s1 = Shape::from([1]);
    let g = b.execute(&Op::Gather { axis: 0 }, &[&x, &idx], &[&s2, &s1], &s1).unwrap();
    let e = b.read(&g, 1).unwrap_err();
    assert!(e.to_string().contains("gather"), "{e}");
    assert_eq!(b.read(&x, 2).unwrap(), vec![1.0, 2.0]);
}

#[test]
fn trim_gives_pooled_memory_back() {
    let b = backend();
    {
        let x = b.upload(&vec![1.0; 100_000]).unwrap();
        let s = Shape::from([100_000]);
        let y = b.execute(&Op::Unary(UnaryOp::Exp), &[&x], &[&s], &s).unwrap();
        b.read(&y, 1).unwrap();
    }
    // The read completed every submission, so both buffers are free now.
    b.flush().unwrap();
    let before = b.counters().bytes_in_use;
    let freed = b.trim_pool().unwrap();
    assert!(freed >= 2 * 400_000, "freed {freed}");
    assert_eq!(b.counters().bytes_in_use, before - freed);
    assert_eq!(b.counters().pooled_bytes, 0);
    assert_eq!(b.pending_buffers(), 0);
}
