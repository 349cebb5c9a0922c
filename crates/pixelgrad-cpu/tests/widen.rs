//! f16 storage (`Tensor::from_f16`, two bytes per element) and `Op::Widen` (8-bit or f16
//! storage to f32, exactly) on both CPU modes, compared bit for bit with the host values; and
//! the way back to 8 bits (`Op::Narrow8`'s rounding and saturation).

use pixelgrad_conformance::narrow::{assert_same, halves, i8s, u8s, F32Only, SIZES, SPECIAL_F16};
use pixelgrad_core::half::f16;
use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Backend, Device, Error, Op, Shape, Tensor};
use pixelgrad_cpu::CpuBackend;

fn assert_same_f64(got: &[f64], want: &[f32], what: &str) {
    assert_same(&got.iter().map(|&v| v as f32).collect::<Vec<_>>(), want, what);
    // The doubles hold the f32 values exactly (no rounding on the way).
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(w.is_nan() || *g == *w as f64, "{what}: element {i}: {g} is not exactly {w}");
    }
}

/// Widens `t` and checks the result against `want` in both precisions; the result is f32.
fn check_widen(t: &Tensor, want: &[f32], what: &str) {
    let launches = t.device().counters().launches;
    let y = t.widen().unwrap();
    assert_eq!(t.device().counters().launches, launches + 1, "{what}: one launch");
    assert_eq!(y.storage_dtype(), DType::F32, "{what}");
    assert_eq!(y.dims(), t.dims(), "{what}");
    assert_same(&y.to_vec().unwrap(), want, what);
    assert_same_f64(&y.to_vec_f64().unwrap(), want, what);
}

#[test]
fn widen_is_exact_for_odd_sizes_of_every_type() {
    for backend in [CpuBackend::new(), CpuBackend::reference()] {
        let dev = Device::new(backend);
        for n in SIZES {
            let v = i8s(n);
            let t = Tensor::from_i8(&dev, &v, [n]).unwrap();
            check_widen(&t, &v.iter().map(|&x| x as f32).collect::<Vec<_>>(), &format!("{} i8 x{n}", dev.name()));
            let v = u8s(n);
            let t = Tensor::from_u8(&dev, &v, [n]).unwrap();
            check_widen(&t, &v.iter().map(|&x| x as f32).collect::<Vec<_>>(), &format!("{} u8 x{n}", dev.name()));
            let v = halves(n);
            let t = Tensor::from_f16(&dev, &v, [n]).unwrap();
            assert_eq!(t.storage_dtype(), DType::F16);
            let want: Vec<f32> = v.iter().map(|x| x.to_f32()).collect();
            // The stored halves read back exactly, and widen gives the same values.
            assert_same(&t.to_vec().unwrap(), &want, "f16 read");
            assert_same_f64(&t.to_vec_f64().unwrap(), &want, "f16 read_f64");
            check_widen(&t, &want, &format!("{} f16 x{n}", dev.name()));
        }
    }
}

#[test]
fn f16_special_values_widen_exactly() {
    let dev = Device::new(CpuBackend::new());
    let v: Vec<f16> = SPECIAL_F16.iter().map(|&b| f16::from_bits(b)).collect();
    let y = Tensor::from_f16(&dev, &v, [4, 4]).unwrap().widen().unwrap().to_vec().unwrap();
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
    // ±0 keep their signs; NaNs stay NaN; the rest are ordinary values.
    assert!(y[0].is_sign_positive() && y[1].is_sign_negative());
    assert!(y[11].is_nan() && y[12].is_nan(), "{:?}", &y[11..13]);
    assert_eq!(&y[13..], &[1.0, -2.0, 1365.0 / 4096.0]);
}

#[test]
fn f16_storage_is_two_bytes_per_element() {
    for backend in [CpuBackend::new(), CpuBackend::reference()] {
        let dev = Device::new(backend);
        assert!(dev.backend().caps().f16_storage);
        let mut held = Vec::new();
        for n in SIZES {
            let before = dev.counters().bytes_in_use;
            let t = Tensor::from_f16(&dev, &halves(n), [n]).unwrap();
            assert_eq!(dev.counters().bytes_in_use - before, 2 * n as u64, "{} x{n}", dev.name());
            // A reshape moves no data and keeps the type; its widen reads the same values.
            let r = t.reshape([1, n]).unwrap();
            assert_eq!(r.storage_dtype(), DType::F16);
            assert_eq!(dev.counters().bytes_in_use - before, 2 * n as u64);
            let want: Vec<f32> = halves(n).iter().map(|x| x.to_f32()).collect();
            assert_same(&r.widen().unwrap().to_vec().unwrap(), &want, "reshaped");
            held.push((t, r));
        }
        let layout = dev.backend().describe_storage(held[1].0.storage(), 3).unwrap();
        assert_eq!((layout.format.as_str(), layout.bytes), ("f16", 6));
        let total: u64 = SIZES.iter().map(|&n| 2 * n as u64).sum();
        assert_eq!(dev.counters().bytes_in_use, total);
        drop(held);
        assert_eq!(dev.counters().bytes_in_use, 0);
    }
}

#[test]
fn widened_tensors_feed_f32_ops() {
    let dev = Device::new(CpuBackend::new());
    let h: Vec<f16> = [1.5f32, -2.0, 0.25, 1000.0].iter().map(|&v| f16::from_f32(v)).collect();
    let w = Tensor::from_f16(&dev, &h, [2, 2]).unwrap().widen().unwrap();
    let x = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0, 4.0], [2, 2]).unwrap();
    assert_eq!(w.add(&x).unwrap().to_vec().unwrap(), vec![2.5, 0.0, 3.25, 1004.0]);
    assert_eq!(w.matmul(&x).unwrap().to_vec().unwrap(), vec![-4.5, -5.0, 3000.25, 4000.5]);
    let q = Tensor::from_i8(&dev, &[-128, 127], [2]).unwrap().widen().unwrap();
    assert_eq!(q.mul_scalar(0.5).unwrap().to_vec().unwrap(), vec![-64.0, 63.5]);
    // On an f32 tensor widen is a clone: the same tensor, no launch.
    let launches = dev.counters().launches;
    let same = x.widen().unwrap();
    assert_eq!((same.id(), dev.counters().launches), (x.id(), launches));
}

#[test]
fn f16_inputs_and_bad_calls_are_typed_errors() {
    let dev = Device::new(CpuBackend::new());
    let h = Tensor::from_f16(&dev, &halves(6), [2, 3]).unwrap();
    let f = Tensor::from_vec(&dev, &[1.0; 6], [2, 3]).unwrap();
    let b = Tensor::from_vec(&dev, &[1.0; 12], [3, 4]).unwrap();
    let a8 = Tensor::from_i8(&dev, &[1; 6], [2, 3]).unwrap();
    // Every op but reshape and widen refuses f16 storage (the central check), never a panic.
    for r in [h.add(&f), f.add(&h), h.matmul(&b), h.exp(), h.sum_axis(0, false), h.transpose(0, 1), h.matmul_i8(&b), a8.matmul_i8(&h)] {
        assert!(matches!(r, Err(Error::Shape { .. })), "{r:?}");
    }
    let Err(e) = h.add(&f) else { panic!() };
    assert!(e.to_string().contains("f16"), "{e}");
    assert!(matches!(Tensor::from_f16(&dev, &halves(2), [3]), Err(Error::Shape { op: "from_f16", .. })));
    // Op::Widen applied to f32 storage directly (Tensor::widen clones instead) is refused.
    let Err(e) = Tensor::apply(&dev, Op::Widen, &[&f]) else { panic!("widen of f32 storage accepted") };
    assert!(matches!(&e, Error::Shape { op: "widen", .. }) && e.to_string().contains("input 0 has f32 storage"), "{e}");
    // Direct backend calls: widen of f32 storage, f16 storage into another op, wrong shapes.
    let cpu = CpuBackend::new();
    let sh = cpu.upload_f16(&[0x3c00, 0xc000, 0x0001, 0x7c00]).unwrap();
    let sf = cpu.upload(&[1.0; 4]).unwrap();
    let (s22, s4) = (Shape::from([2, 2]), Shape::from([4]));
    assert!(matches!(cpu.execute(&Op::Widen, &[&sf], &[&s4], &s4), Err(Error::Shape { op: "widen", .. })));
    assert!(cpu.execute(&Op::Unary(pixelgrad_core::UnaryOp::Neg), &[&sh], &[&s4], &s4).is_err());
    assert!(cpu.execute(&Op::MatMulI8 { b_i8: false }, &[&sh, &sf], &[&s22, &s22], &s22).is_err());
    assert!(cpu.execute(&Op::Widen, &[&sh], &[&s4], &s22).is_err());
    assert!(cpu.execute(&Op::Widen, &[&sh, &sh], &[&s4, &s4], &s4).is_err());
    let r = cpu.execute(&Op::Widen, &[&sh], &[&s4], &s4).unwrap();
    assert_eq!(cpu.read(&r, 4).unwrap(), vec![1.0, -2.0, 2f32.powi(-24), f32::INFINITY]);
    // The widen kernel is not in the generic table (its input is not f32).
    assert!(pixelgrad_cpu::kernels::run::<f32>("cpu", &Op::Widen, &[&[1.0]], &[&Shape::from([1])], &Shape::from([1])).is_err());
}

/// Widen is not differentiable: even from a leaf that wants a gradient, the result records none.
#[test]
fn widen_records_no_gradient() {
    let dev = Device::new(CpuBackend::new());
    let w = Tensor::from_f16(&dev, &halves(3), [3]).unwrap().with_grad();
    assert_eq!(w.storage_dtype(), DType::F16);
    let y = w.widen().unwrap();
    assert!(!y.requires_grad());
    let x = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0], [3]).unwrap().with_grad();
    let loss = y.mul(&x).unwrap().sum_all().unwrap();
    loss.backward().unwrap();
    assert!(w.grad().is_none());
    assert!(x.grad().is_some());
}

/// A backend without f16 storage: `from_f16` gives an f32 tensor of the same values, widen is
/// a clone, and the default `upload_f16` is a typed error naming the backend.
#[test]
fn without_f16_support_from_f16_falls_back_to_f32() {
    let b = F32Only(CpuBackend::new());
    assert!(!b.caps().f16_storage);
    let Err(e) = b.upload_f16(&[0x3c00]) else { panic!("default upload_f16 accepted") };
    assert!(matches!(&e, Error::Backend { op: "upload_f16", .. }), "{e}");
    assert!(e.to_string().contains("f32-only") && e.to_string().contains("f16 storage"), "{e}");
    let dev = Device::new(b);
    let v = halves(20);
    let t = Tensor::from_f16(&dev, &v, [4, 5]).unwrap();
    assert_eq!(t.storage_dtype(), DType::F32);
    assert_eq!(dev.counters().bytes_in_use, 0, "the wrapper keeps no counters");
    let w = t.widen().unwrap();
    assert_eq!(w.id(), t.id());
    assert_same(&w.to_vec().unwrap(), &v.iter().map(|x| x.to_f32()).collect::<Vec<_>>(), "fallback");
}

/// `Op::Narrow8` rounds half to even and saturates (NaN as 0) exactly as the definition says,
/// on both CPU modes: ties on both sides of zero, the bounds and values just past them, huge
/// values and the specials (the fast mode clamps before rounding, without libm).
#[test]
fn narrow8_rounds_ties_to_even_and_saturates() {
    let xs = [
        0.5f32,
        1.5,
        2.5,
        -0.5,
        -1.5,
        -2.5,
        0.49999997,
        126.5,
        127.5,
        128.5,
        254.5,
        255.5,
        256.0,
        -127.5,
        -128.5,
        -129.0,
        1e30,
        -1e30,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -0.0,
        8388609.0,
        3.4999998,
    ];
    // Every quarter and the neighbours of every half from -300 to 300, so that the fast
    // mode's vector loop (not only its remainder) sees ties, bounds and NaN.
    let mut xs = xs.to_vec();
    for k in -1200..=1200 {
        let x = k as f32 * 0.25;
        xs.extend([x, f32::from_bits(x.to_bits() + 1), f32::from_bits(x.to_bits().saturating_sub(1))]);
        if k % 97 == 0 {
            xs.push(f32::NAN);
        }
    }
    for backend in [CpuBackend::new(), CpuBackend::reference()] {
        let dev = Device::new(backend);
        let t = Tensor::from_vec(&dev, &xs, [xs.len()]).unwrap();
        for signed in [false, true] {
            let (lo, hi) = if signed { (-128.0f32, 127.0f32) } else { (0.0, 255.0) };
            let want: Vec<f32> = xs.iter().map(|&x| if x.is_nan() { 0.0 } else { x.round_ties_even().clamp(lo, hi) }).collect();
            let got = t.narrow8(signed).unwrap().widen().unwrap().to_vec().unwrap();
            assert_eq!(got, want, "{} signed={signed}", dev.name());
        }
    }
}
