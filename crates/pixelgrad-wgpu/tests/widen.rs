//! f16 storage (two halves per u32 word) and `Op::Widen` (8-bit or f16 storage to f32) on
//! WebGPU (Mesa lavapipe in CI), compared bit for bit with the host values and the CPU
//! backend, eagerly and inside step plans.

mod common;

use common::backend;
use pixelgrad_conformance::narrow::{assert_same, halves, i8s, u8s, SIZES, SPECIAL_F16};
use pixelgrad_core::half::f16;
use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Backend, Device, Error, Op, Shape, Tensor};
use pixelgrad_wgpu::pool::size_class;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Widens `t`, checks the result against `want` and returns it.
fn widened(t: &Tensor, want: &[f32], what: &str) -> Vec<f32> {
    let y = t.widen().unwrap();
    assert_eq!(y.storage_dtype(), DType::F32, "{what}");
    assert_eq!(y.dims(), t.dims(), "{what}");
    let got = y.to_vec().unwrap();
    assert_same(&got, want, what);
    got
}

#[test]
fn widen_is_exact_for_odd_sizes_of_every_type() {
    let b = backend();
    assert!(b.caps().f16_storage && b.caps().int8);
    let dev = Device::new(b);
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    for n in SIZES {
        let v = i8s(n);
        let want: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        let gpu = widened(&Tensor::from_i8(&dev, &v, [n]).unwrap(), &want, &format!("i8 x{n}"));
        let host = widened(&Tensor::from_i8(&cpu, &v, [n]).unwrap(), &want, &format!("cpu i8 x{n}"));
        assert_eq!(bits(&gpu), bits(&host));
        let v = u8s(n);
        let want: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        widened(&Tensor::from_u8(&dev, &v, [n]).unwrap(), &want, &format!("u8 x{n}"));
        let v = halves(n);
        let want: Vec<f32> = v.iter().map(|x| x.to_f32()).collect();
        let t = Tensor::from_f16(&dev, &v, [n]).unwrap();
        assert_eq!(t.storage_dtype(), DType::F16);
        // The stored halves read back exactly (unpacked on the host) ...
        assert_same(&t.to_vec().unwrap(), &want, &format!("f16 read x{n}"));
        // ... and the kernel widens them to the same bits as the CPU backend, NaNs included.
        let gpu = widened(&t, &want, &format!("f16 x{n}"));
        let host = widened(&Tensor::from_f16(&cpu, &v, [n]).unwrap(), &want, &format!("cpu f16 x{n}"));
        assert_eq!(bits(&gpu), bits(&host), "f16 x{n}: webgpu and cpu differ");
    }
}

#[test]
fn f16_special_values_widen_exactly() {
    let dev = Device::new(backend());
    let v: Vec<f16> = SPECIAL_F16.iter().map(|&b| f16::from_bits(b)).collect();
    // Odd offsets into the packed words too: a [4, 4] tensor and its 15-element tail.
    let y = Tensor::from_f16(&dev, &v, [4, 4]).unwrap().widen().unwrap().to_vec().unwrap();
    let tail = Tensor::from_f16(&dev, &v[1..], [15]).unwrap().widen().unwrap().to_vec().unwrap();
    assert_same(&tail, &y[1..], "tail");
    let want = [
        0.0f32,
        -0.0,
        2f32.powi(-24),
        -(2f32.powi(-24)),
        1023.0 * 2f32.powi(-24),
        -1023.0 * 2f32.powi(-24),
        2f32.powi(-14),
        65504.0,
        -65504.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    assert_same(&y[..want.len()], &want, "specials");
    assert!(y[0].is_sign_positive() && y[1].is_sign_negative());
    assert!(y[11].is_nan() && y[12].is_nan() && y[12].is_sign_negative(), "{:?}", &y[11..13]);
    assert_eq!(&y[13..], &[1.0, -2.0, 1365.0 / 4096.0]);
}

#[test]
fn f16_storage_is_packed_two_per_word() {
    let dev = Device::new(backend());
    // Every tensor stays alive, so each one needs a new buffer (none is recycled).
    let mut held = Vec::new();
    for n in SIZES {
        let before = dev.counters().bytes_in_use;
        let t = Tensor::from_f16(&dev, &halves(n), [n]).unwrap();
        let grew = dev.counters().bytes_in_use - before;
        assert_eq!(grew, size_class(n.div_ceil(2) as u64 * 4, u64::MAX), "{n} elements");
        // A reshape shares the buffer and keeps the type.
        let r = t.reshape([n, 1]).unwrap();
        assert_eq!(r.storage_dtype(), DType::F16);
        assert_eq!(dev.counters().bytes_in_use - before, grew);
        held.push((t, r));
    }
    // Widened after the byte counts (their dropped results would be recycled by the uploads).
    for (n, (_, r)) in SIZES.iter().zip(&held) {
        let want: Vec<f32> = halves(*n).iter().map(|x| x.to_f32()).collect();
        widened(r, &want, &format!("reshaped x{n}"));
    }
    let fresh = Device::new(backend());
    let t = Tensor::from_f16(&fresh, &vec![f16::ONE; 4096], [4096]).unwrap();
    assert_eq!(fresh.counters().bytes_in_use, 8192);
    let layout = fresh.backend().describe_storage(t.storage(), 4096).unwrap();
    assert_eq!((layout.format.as_str(), layout.bytes, layout.allocated), ("f16", 8192, 4096));
    let w = t.widen().unwrap();
    assert_eq!(fresh.counters().bytes_in_use, 8192 + 16384);
    assert_eq!(w.to_vec().unwrap(), vec![1.0; 4096]);
}

#[test]
fn f16_inputs_and_bad_calls_are_typed_errors() {
    let dev = Device::new(backend());
    let h = Tensor::from_f16(&dev, &halves(6), [2, 3]).unwrap();
    let f = Tensor::from_vec(&dev, &[1.0; 6], [2, 3]).unwrap();
    let b = Tensor::from_vec(&dev, &[1.0; 12], [3, 4]).unwrap();
    let a8 = Tensor::from_i8(&dev, &[1; 6], [2, 3]).unwrap();
    for r in [h.add(&f), f.mul(&h), h.matmul(&b), h.exp(), h.sum_axis(0, false), h.matmul_i8(&b), a8.matmul_i8(&h)] {
        assert!(matches!(r, Err(Error::Shape { .. })), "{r:?}");
    }
    // Direct backend calls: widen of f32 storage (also pending fused f32 work), packed
    // storage into another op or as matmul_i8's activations, wrong shapes.
    let be = dev.backend();
    let sh = be.upload_f16(&[0x3c00, 0xc000, 0x0001, 0x7c00]).unwrap();
    let s8 = be.upload_int8(&[1, 2, 3, 4], DType::I8).unwrap();
    let sf = be.upload(&[1.0; 4]).unwrap();
    let (s22, s4) = (Shape::from([2, 2]), Shape::from([4]));
    assert!(matches!(be.execute(&Op::Widen, &[&sf], &[&s4], &s4), Err(Error::Shape { op: "widen", .. })));
    let pending = be.execute(&Op::Unary(pixelgrad_core::UnaryOp::Neg), &[&sf], &[&s4], &s4).unwrap();
    assert!(matches!(be.execute(&Op::Widen, &[&pending], &[&s4], &s4), Err(Error::Shape { op: "widen", .. })));
    assert!(matches!(be.execute(&Op::Unary(pixelgrad_core::UnaryOp::Neg), &[&sh], &[&s4], &s4), Err(Error::Shape { .. })));
    assert!(be.execute(&Op::MatMulI8 { b_i8: false }, &[&sh, &sf], &[&s22, &s22], &s22).is_err());
    assert!(be.execute(&Op::MatMulI8 { b_i8: false }, &[&s8, &sh], &[&s22, &s22], &s22).is_err());
    assert!(be.execute(&Op::Widen, &[&sh], &[&s4], &s22).is_err());
    let r = be.execute(&Op::Widen, &[&sh], &[&s4], &s4).unwrap();
    assert_eq!(be.read(&r, 4).unwrap(), vec![1.0, -2.0, 2f32.powi(-24), f32::INFINITY]);
    let r = be.execute(&Op::Widen, &[&s8], &[&s22], &s22).unwrap();
    assert_eq!(be.read(&r, 4).unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    // Widened results are ordinary f32 tensors, fused with what follows.
    let w = h.widen().unwrap();
    let want: Vec<f32> = halves(6).iter().map(|x| x.to_f32() + 1.0).collect();
    assert_same(&w.add(&f).unwrap().to_vec().unwrap(), &want, "widen then add");
    let q = a8.widen().unwrap().matmul(&b).unwrap().to_vec().unwrap();
    assert_eq!(q, vec![3.0; 8]);
    // On an f32 tensor widen is a clone.
    assert_eq!(f.widen().unwrap().id(), f.id());
}

/// Inside repeated steps, widen's launch is recorded and replayed like every other op: stored
/// weights (uploaded before the steps) and an f16 upload inside the step, widened and fed to
/// fused f32 ops, allocate nothing from the fifth step on and give the same numbers.
#[test]
fn works_inside_step_plans() {
    let dev = Device::new(backend());
    let n = 1023;
    let w8 = Tensor::from_i8(&dev, &i8s(n), [n]).unwrap();
    let w16 = Tensor::from_u8(&dev, &u8s(n), [n]).unwrap();
    let hv: Vec<f16> = (0..n).map(|i| f16::from_f32((i % 97) as f32 * 0.125 - 6.0)).collect();
    for step in 0..6u64 {
        let xv: Vec<f32> = (0..n).map(|i| ((i as u64 * 31 + step * 17) % 101) as f32 - 50.0).collect();
        let before = dev.counters();
        let y = dev
            .step(42, || {
                let x = Tensor::from_vec(&dev, &xv, [n])?;
                let h = Tensor::from_f16(&dev, &hv, [n])?;
                w8.widen()?.mul(&x)?.add(&w16.widen()?)?.add(&h.widen()?)
            })
            .unwrap();
        let after = dev.counters();
        let got = y.to_vec().unwrap();
        let want: Vec<f32> = (0..n).map(|i| i8s(n)[i] as f32 * xv[i] + u8s(n)[i] as f32 + hv[i].to_f32()).collect();
        assert_eq!(bits(&got), bits(&want), "step {step}");
        if step >= 4 {
            assert_eq!(after.allocations, before.allocations, "step {step} allocated");
            assert!(after.replayed - before.replayed >= 3, "step {step}: {before:?} -> {after:?}");
            assert_eq!(after.bindings, before.bindings, "step {step} bound");
        }
        drop(y);
    }
}
