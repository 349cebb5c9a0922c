//! Elementwise fusion on the CPU fast path: fused chains give the values of the ops run one
//! by one, bit for bit (the same f32 operations in the same order), in fewer passes; every
//! broadcast pattern and the bounds on a chain's size hold; training with fusion on and off
//! ends with the same parameters.

use pixelgrad_conformance::steps;
use pixelgrad_core::{Device, Result, Tensor};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_nn::presets::Preset;

fn devices() -> (Device, Device) {
    (Device::new(CpuBackend::new()), Device::new(CpuBackend::unfused()))
}

fn passes(d: &Device) -> u64 {
    d.backend().counters().launches
}

/// Deterministic values with both signs and some exact zeros.
fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n).map(|i| ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 17) as f32 * 0.5 - 4.0).collect()
}

/// `f` on fresh tensors of `shapes` on both devices: the fused values equal the unfused ones
/// exactly; returns (fused passes, unfused passes).
fn same(shapes: &[&[usize]], f: impl Fn(&[Tensor]) -> Result<Tensor>) -> (u64, u64) {
    let (fused, plain) = devices();
    let run = |d: &Device| {
        let xs: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| Tensor::from_vec(d, &values(s.iter().product(), i as u32 * 7), s.to_vec()).unwrap())
            .collect();
        let before = passes(d);
        let y = f(&xs).unwrap();
        let v = y.to_vec().unwrap();
        (v, y.dims().to_vec(), passes(d) - before)
    };
    let (a, da, pa) = run(&fused);
    let (b, db, pb) = run(&plain);
    assert_eq!(da, db);
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()), "element {i}: fused {x}, unfused {y}");
    }
    (pa, pb)
}

#[test]
fn a_chain_is_one_pass_with_the_same_bits() {
    // hard-swish, then a bias, a scale and a ReLU6, on a conv-like output.
    let (f, u) = same(&[&[2, 8, 5, 7], &[1, 8, 1, 1]], |x| {
        let hs = x[0].mul(&x[0].add_scalar(3.0)?.max_scalar(0.0)?.min_scalar(6.0)?)?.mul_scalar(1.0 / 6.0)?;
        hs.add(&x[1])?.mul_scalar(1.5)?.max_scalar(0.0)?.min_scalar(6.0)
    });
    assert_eq!(f, 1, "one pass for the whole chain");
    assert!(u >= 6, "unfused runs each op ({u} passes)");
}

#[test]
fn every_broadcast_pattern_gives_the_same_bits() {
    // Flat, long rows, short rows (per-channel scales of small maps), stretched inner axes
    // (nearest upsampling), outer products and scalars.
    let cases: Vec<(Vec<usize>, Vec<usize>)> = vec![
        (vec![4, 300], vec![300]),
        (vec![4, 300], vec![4, 1]),
        (vec![1, 6, 3, 5], vec![1, 6, 1, 1]),
        (vec![2, 3, 1, 4, 1], vec![2, 1, 3, 1, 2]),
        (vec![7, 1], vec![1, 9]),
        (vec![3, 2, 2], vec![1]),
        (vec![1031], vec![1031]),
        (vec![5, 1, 600], vec![1, 3, 1]),
    ];
    for (a, b) in &cases {
        let (f, _) = same(&[a, b], |x| x[0].mul(&x[1])?.add(&x[0])?.add_scalar(-0.25)?.relu());
        assert_eq!(f, 1, "{a:?} with {b:?}");
    }
}

#[test]
fn nearest_upsampling_through_a_broadcast_is_one_pass_into_its_consumer() {
    // [1, 3, 4, 5] repeated 2x along H and 3x along W, then added to a tensor of that size.
    let (f, u) = same(&[&[1, 3, 4, 5], &[1, 3, 8, 15]], |x| {
        let up = x[0].reshape([1, 3, 4, 1, 5, 1])?.broadcast_to([1, 3, 4, 2, 5, 3])?.reshape([1, 3, 8, 15])?;
        up.add(&x[1])?.relu()
    });
    assert!(f <= 2 && f < u, "{f} passes fused, {u} unfused");
}

#[test]
fn chains_past_the_size_bounds_still_match() {
    // More inputs than one fused kernel reads, and a chain far longer than one kernel's
    // node budget: computed in parts, same bits.
    let shapes: Vec<Vec<usize>> = (0..12).map(|i| [vec![3, 4, 10], vec![3, 1, 10], vec![1, 4, 1]][i % 3].clone()).collect();
    let refs: Vec<&[usize]> = shapes.iter().map(|s| s.as_slice()).collect();
    let (f, u) = same(&refs, |x| {
        let mut acc = x[0].clone();
        for t in &x[1..] {
            acc = acc.add(t)?.mul_scalar(0.5)?;
        }
        Ok(acc)
    });
    assert!(f > 1 && f < u, "{f} passes fused, {u} unfused");
    let (f, u) = same(&[&[64]], |x| {
        let mut y = x[0].clone();
        for i in 0..400 {
            y = y.mul_scalar(1.001)?.add_scalar(if i % 2 == 0 { 0.5 } else { -0.5 })?;
        }
        Ok(y)
    });
    assert!(f > 1 && f < u / 10, "{f} passes fused, {u} unfused");
}

#[test]
fn a_long_eager_loop_without_reads_neither_recurses_nor_drifts() {
    // 20,000 updates never read until the end: pending inputs are computed as the chain is
    // cut, so forcing the result is shallow.
    let (f, u) = same(&[&[16], &[16]], |x| {
        let mut acc = x[0].clone();
        for _ in 0..20_000 {
            acc = acc.add(&x[1])?.mul_scalar(0.999)?;
        }
        Ok(acc)
    });
    assert!(f < u, "{f} passes fused, {u} unfused");
}

#[test]
fn pending_results_read_twice_or_through_a_reshape_are_right() {
    let (f, _) = same(&[&[6, 4]], |x| {
        let h = x[0].add_scalar(1.0)?.relu()?; // pending
        let a = h.mul(&h)?; // reads it twice
        let b = h.reshape([2, 3, 4])?.sum_axis(2, true)?; // a reduction forces it
        let c = h.reshape([24])?.mul_scalar(2.0)?.reshape([6, 4])?;
        a.add(&c)?.add(&b.reshape([6, 1])?)
    });
    assert!(f >= 2);
}

#[test]
fn errors_come_at_the_call_not_later() {
    let (fused, _) = devices();
    let a = Tensor::from_vec(&fused, &[1.0, 2.0, 3.0], [3]).unwrap();
    let w = Tensor::from_i8(&fused, &[1, 2, 3], [3]).unwrap();
    let e = a.add(&w).unwrap_err().to_string();
    assert!(e.contains("i8"), "{e}");
    // A direct execute with inconsistent shapes is refused when called.
    let p = a.add_scalar(1.0).unwrap();
    let s = pixelgrad_core::Shape::from([4]);
    let r = fused.backend().execute(&pixelgrad_core::Op::Binary(pixelgrad_core::BinaryOp::Add), &[p.storage(), p.storage()], &[&s, &s], &s);
    assert!(r.is_err());
}

#[test]
fn mlp_fused_equals_unfused_for_every_optimizer() {
    let make = |fuse: bool| Device::new(if fuse { CpuBackend::new() } else { CpuBackend::unfused() });
    for (opt, f, u) in steps::fused_matches_unfused(&make, Preset::Mlp, 4).unwrap() {
        eprintln!("mlp/{opt}: {f} passes per step fused, {u} unfused");
    }
}

#[test]
fn cnn_fused_equals_unfused_for_every_optimizer() {
    let make = |fuse: bool| Device::new(if fuse { CpuBackend::new() } else { CpuBackend::unfused() });
    for (opt, f, u) in steps::fused_matches_unfused(&make, Preset::Cnn, 3).unwrap() {
        eprintln!("cnn/{opt}: {f} passes per step fused, {u} unfused");
    }
}
