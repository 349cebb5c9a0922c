//! Backend-level behaviour: names, counters, precision of the two modes, foreign storage.

use pixelgrad_core::{Backend, BackendKind, Device, Error, Op, Shape, Tensor};
use pixelgrad_cpu::CpuBackend;

#[test]
fn names_and_kind() {
    assert_eq!(CpuBackend::new().name(), "cpu");
    assert_eq!(CpuBackend::reference().name(), "cpu-f64-reference");
    assert_eq!(CpuBackend::new().kind(), BackendKind::Cpu);
    assert!(CpuBackend::reference().is_reference());
}

#[test]
fn counters_count_launches_and_reads() {
    // Fused (the default): a + a and exp are one pass, with one result allocated.
    let dev = Device::new(CpuBackend::new());
    let a = Tensor::from_vec(&dev, &[1.0, 2.0], [2]).unwrap();
    let b = a.add(&a).unwrap().exp().unwrap();
    assert_eq!(dev.counters().launches, 0, "pending until read");
    b.to_vec().unwrap();
    let c = dev.counters();
    assert_eq!((c.launches, c.readbacks, c.allocations, c.bytes_in_use), (1, 1, 2, 8 + 8));
    drop((a, b));
    assert_eq!(dev.counters().bytes_in_use, 0);

    let dev = Device::new(CpuBackend::unfused());
    let a = Tensor::from_vec(&dev, &[1.0, 2.0], [2]).unwrap();
    let b = a.add(&a).unwrap().exp().unwrap();
    // Reshape shares storage: no launch.
    let _ = b.reshape([1, 2]).unwrap();
    b.to_vec().unwrap();
    let c = dev.counters();
    assert_eq!(c.launches, 2);
    assert_eq!(c.readbacks, 1);
    assert_eq!(c.allocations, 3);
    // a and b are alive (8 bytes each); the temporary a + a is already gone.
    assert_eq!(c.bytes_in_use, 8 + 8);
    drop(b);
    drop(a);
    assert_eq!(dev.counters().bytes_in_use, 0);
    let r = Device::new(CpuBackend::reference());
    let x = Tensor::zeros(&r, [10]).unwrap();
    assert_eq!(r.counters().bytes_in_use, 80);
    drop(x);
    assert_eq!(r.counters().bytes_in_use, 0);
}

#[test]
fn reference_keeps_f64_and_fast_rounds_to_f32() {
    let third = 1.0f64 / 3.0;
    let r = Device::new(CpuBackend::reference());
    let x = Tensor::from_f64(&r, &[third], [1]).unwrap();
    assert_eq!(x.mul(&x).unwrap().to_vec_f64().unwrap(), vec![third * third]);
    let f = Device::new(CpuBackend::new());
    let y = Tensor::from_f64(&f, &[third], [1]).unwrap();
    assert_eq!(y.to_vec_f64().unwrap(), vec![third as f32 as f64]);
}

#[test]
fn foreign_or_mismatched_storage_is_an_error() {
    let fast = CpuBackend::new();
    let reference = CpuBackend::reference();
    let s = reference.upload(&[1.0, 2.0]).unwrap();
    let shape = Shape::from([2]);
    let Err(e) = fast.execute(&Op::Unary(pixelgrad_core::UnaryOp::Neg), &[&s], &[&shape], &shape) else { panic!("expected an error") };
    assert!(matches!(e, Error::Backend { op: "unary", .. }), "{e}");
    // Too few elements for the declared shape.
    let big = Shape::from([3]);
    assert!(fast.execute(&Op::Unary(pixelgrad_core::UnaryOp::Neg), &[&fast.upload(&[1.0]).unwrap()], &[&big], &big).is_err());
    assert!(fast.read(&fast.upload(&[1.0]).unwrap(), 2).is_err());
    // Shapes that never passed `infer_shape`, or a wrong output shape.
    let two = fast.upload(&[1.0, 2.0]).unwrap();
    let (s2, s3) = (Shape::from([2]), Shape::from([3]));
    assert!(fast.execute(&Op::Binary(pixelgrad_core::BinaryOp::Add), &[&two, &two], &[&s2, &s3], &s3).is_err());
    assert!(fast.execute(&Op::Permute(vec![1, 0]), &[&two], &[&s2], &s2).is_err());
    assert!(fast.execute(&Op::Unary(pixelgrad_core::UnaryOp::Neg), &[&two], &[&s2], &s3).is_err());
    assert!(fast.execute(&Op::Concat { axis: 0 }, &[&two], &[], &s2).is_err());
}

/// The threaded paths (large tensors) give the same numbers as the reference.
#[test]
fn large_tensors_take_the_parallel_paths_correctly() {
    let f = Device::new(CpuBackend::new());
    let r = Device::new(CpuBackend::reference());
    let run = |d: &Device| -> Vec<f64> {
        let x = Tensor::rand_uniform(d, [64, 3, 40, 40], -1.0, 1.0, 5).unwrap();
        let cols = x.im2col(pixelgrad_core::Window::square(3, 1, 1)).unwrap();
        let s = cols.sum_axis(1, false).unwrap().add(&Tensor::full(d, [1600], 0.5).unwrap()).unwrap();
        s.max_axis(-1, false).unwrap().to_vec_f64().unwrap()
    };
    let (a, b) = (run(&f), run(&r));
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() < 1e-4, "{x} vs {y}");
    }
}
