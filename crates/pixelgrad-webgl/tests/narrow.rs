//! Narrow storage on WebGL2 (Mesa llvmpipe natively): 8-bit weights in RGBA8I / RGBA8UI
//! textures, f16 bit patterns in RGBA16UI textures, `Op::Widen` and the exact integer matmul
//! (`Op::MatMulI8`), compared bit for bit with the host values, the shared i64 reference and
//! the CPU backend, eagerly, inside step plans and with pending fused inputs. The same data
//! and references as the CPU and WebGPU backends' tests (`pixelgrad_conformance::narrow`).

use pixelgrad_conformance::narrow::{assert_same, halves, i8s, matmul_i8_reference, u8s, Rng, SIZES, SPECIAL_F16};
use pixelgrad_core::half::f16;
use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Backend, Device, Error, Op, Shape, Tensor, UnaryOp};
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

fn backend() -> WebGlBackend {
    WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).expect("headless WebGL (EGL) context")
}

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
        let t = Tensor::from_i8(&dev, &v, [n]).unwrap();
        assert_eq!(t.storage_dtype(), DType::I8);
        assert_same(&t.to_vec().unwrap(), &want, &format!("i8 read x{n}"));
        let gl = widened(&t, &want, &format!("i8 x{n}"));
        let host = widened(&Tensor::from_i8(&cpu, &v, [n]).unwrap(), &want, &format!("cpu i8 x{n}"));
        assert_eq!(bits(&gl), bits(&host));
        let v = u8s(n);
        let want: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        let t = Tensor::from_u8(&dev, &v, [n]).unwrap();
        assert_eq!(t.storage_dtype(), DType::U8);
        assert_same(&t.to_vec().unwrap(), &want, &format!("u8 read x{n}"));
        widened(&t, &want, &format!("u8 x{n}"));
        let v = halves(n);
        let want: Vec<f32> = v.iter().map(|x| x.to_f32()).collect();
        let t = Tensor::from_f16(&dev, &v, [n]).unwrap();
        assert_eq!(t.storage_dtype(), DType::F16);
        assert_same(&t.to_vec().unwrap(), &want, &format!("f16 read x{n}"));
        let gl = widened(&t, &want, &format!("f16 x{n}"));
        let host = widened(&Tensor::from_f16(&cpu, &v, [n]).unwrap(), &want, &format!("cpu f16 x{n}"));
        assert_eq!(bits(&gl), bits(&host), "f16 x{n}: webgl and cpu differ");
    }
}

#[test]
fn f16_special_values_widen_exactly() {
    let dev = Device::new(backend());
    let v: Vec<f16> = SPECIAL_F16.iter().map(|&b| f16::from_bits(b)).collect();
    // Odd offsets into the texels too: a [4, 4] tensor and its 15-element tail.
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
    // Every one of the 65536 half bit patterns, bit for bit as the host conversion (NaNs
    // included: sign and payload kept, made quiet).
    let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    let got = Tensor::from_f16(&dev, &all, [all.len()]).unwrap().widen().unwrap().to_vec().unwrap();
    let want: Vec<f32> = all.iter().map(|x| x.to_f32()).collect();
    assert_eq!(bits(&got), bits(&want), "all halves");
}

#[test]
fn narrow_storage_takes_one_or_two_bytes_per_element() {
    let dev = Device::new(backend());
    let n = 4096;
    let f = Tensor::from_vec(&dev, &vec![1.0; n], [n]).unwrap();
    let f32_bytes = dev.backend().describe_storage(f.storage(), n).unwrap().bytes;
    let before = dev.counters().bytes_in_use;
    let t8 = Tensor::from_i8(&dev, &vec![1; n], [n]).unwrap();
    let l8 = dev.backend().describe_storage(t8.storage(), n).unwrap();
    assert_eq!(l8.format, "RGBA8I (i8)");
    assert_eq!(l8.bytes * 4, f32_bytes, "{l8:?}");
    let u8t = Tensor::from_u8(&dev, &vec![1; n], [n]).unwrap();
    assert_eq!(dev.backend().describe_storage(u8t.storage(), n).unwrap().format, "RGBA8UI (u8)");
    let h = Tensor::from_f16(&dev, &vec![f16::ONE; n], [n]).unwrap();
    let lh = dev.backend().describe_storage(h.storage(), n).unwrap();
    assert_eq!(lh.format, "RGBA16UI (f16 bits)");
    assert_eq!(lh.bytes * 2, f32_bytes, "{lh:?}");
    assert_eq!(dev.counters().bytes_in_use - before, 2 * l8.bytes + lh.bytes);
    // A reshape shares the texture and keeps the type.
    let r = h.reshape([64, 64]).unwrap();
    assert_eq!(r.storage_dtype(), DType::F16);
    assert_eq!(r.widen().unwrap().to_vec().unwrap(), vec![1.0; n]);
    // Dropped narrow textures return to the pool and are reused by the next upload of the kind.
    drop((t8, r, h));
    let allocs = dev.counters().allocations;
    let again = Tensor::from_i8(&dev, &vec![-3; n], [n]).unwrap();
    assert_eq!(dev.counters().allocations, allocs);
    assert_eq!(again.to_vec().unwrap(), vec![-3.0; n]);
    drop(u8t);
}

#[test]
fn narrow_inputs_and_bad_calls_are_typed_errors() {
    let dev = Device::new(backend());
    let h = Tensor::from_f16(&dev, &halves(6), [2, 3]).unwrap();
    let f = Tensor::from_vec(&dev, &[1.0; 6], [2, 3]).unwrap();
    let b = Tensor::from_vec(&dev, &[1.0; 12], [3, 4]).unwrap();
    let a8 = Tensor::from_i8(&dev, &[1; 6], [2, 3]).unwrap();
    for r in [
        h.add(&f),
        f.mul(&h),
        h.matmul(&b),
        h.exp(),
        h.sum_axis(0, false),
        h.matmul_i8(&b),
        a8.matmul_i8(&h),
        a8.add(&f),
        a8.matmul(&b),
        a8.exp(),
        b.matmul_i8(&b),
    ] {
        assert!(matches!(r, Err(Error::Shape { .. })), "{r:?}");
    }
    // Direct backend calls: widen of f32 storage (also pending fused f32 work), narrow
    // storage into another op or as matmul_i8's activations, wrong shapes.
    let be = dev.backend();
    let sh = be.upload_f16(&[0x3c00, 0xc000, 0x0001, 0x7c00]).unwrap();
    let s8 = be.upload_int8(&[1, 2, 3, 4], DType::I8).unwrap();
    let sf = be.upload(&[1.0; 4]).unwrap();
    let (s22, s4) = (Shape::from([2, 2]), Shape::from([4]));
    assert!(matches!(be.execute(&Op::Widen, &[&sf], &[&s4], &s4), Err(Error::Shape { op: "widen", .. })));
    let pending = be.execute(&Op::Unary(UnaryOp::Neg), &[&sf], &[&s4], &s4).unwrap();
    assert!(matches!(be.execute(&Op::Widen, &[&pending], &[&s4], &s4), Err(Error::Shape { op: "widen", .. })));
    assert!(matches!(be.execute(&Op::Unary(UnaryOp::Neg), &[&sh], &[&s4], &s4), Err(Error::Shape { .. })));
    assert!(matches!(be.execute(&Op::Unary(UnaryOp::Neg), &[&s8], &[&s4], &s4), Err(Error::Shape { .. })));
    let mm = Op::MatMul { trans_a: false, trans_b: false };
    assert!(matches!(be.execute(&mm, &[&s8, &sf], &[&s22, &s22], &s22), Err(Error::Shape { .. })));
    assert!(matches!(
        be.execute(&Op::Reduce { op: pixelgrad_core::ReduceOp::Sum, axis: 0 }, &[&sh], &[&s4], &Shape::from([1])),
        Err(Error::Shape { .. })
    ));
    assert!(be.execute(&Op::MatMulI8 { b_i8: false }, &[&sh, &sf], &[&s22, &s22], &s22).is_err());
    assert!(be.execute(&Op::MatMulI8 { b_i8: false }, &[&sf, &sf], &[&s22, &s22], &s22).is_err());
    assert!(be.execute(&Op::MatMulI8 { b_i8: false }, &[&s8, &sh], &[&s22, &s22], &s22).is_err());
    assert!(be.execute(&Op::MatMulI8 { b_i8: false }, &[&s8, &s8], &[&s22, &s22], &s22).is_err());
    assert!(be.execute(&Op::MatMulI8 { b_i8: false }, &[&s8, &sf], &[&s22, &s22], &s4).is_err());
    assert!(be.execute(&Op::Widen, &[&sh], &[&s4], &s22).is_err());
    assert!(be.upload_int8(&[1], DType::F32).is_err());
    let r = be.execute(&Op::Widen, &[&sh], &[&s4], &s4).unwrap();
    assert_eq!(be.read(&r, 4).unwrap(), vec![1.0, -2.0, 2f32.powi(-24), f32::INFINITY]);
    let r = be.execute(&Op::Widen, &[&s8], &[&s22], &s22).unwrap();
    assert_eq!(be.read(&r, 4).unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    let r = be.execute(&Op::MatMulI8 { b_i8: false }, &[&s8, &sf], &[&s22, &s22], &s22).unwrap();
    assert_eq!(be.read(&r, 4).unwrap(), vec![3.0, 3.0, 7.0, 7.0]);
    // Widened results are ordinary f32 tensors, fused with what follows.
    let w = h.widen().unwrap();
    let want: Vec<f32> = halves(6).iter().map(|x| x.to_f32() + 1.0).collect();
    assert_same(&w.add(&f).unwrap().to_vec().unwrap(), &want, "widen then add");
    let q = a8.widen().unwrap().matmul(&b).unwrap().to_vec().unwrap();
    assert_eq!(q, vec![3.0; 8]);
    // On an f32 tensor widen is a clone.
    assert_eq!(f.widen().unwrap().id(), f.id());
    // The device still works after all of that.
    assert_eq!(f.add(&f).unwrap().to_vec().unwrap(), vec![2.0; 6]);
}

/// Random weights of `dims` (i8 when `signed`, else u8): the tensor and its values.
fn weights(dev: &Device, rng: &mut Rng, signed: bool, dims: &[usize]) -> (Tensor, Vec<i64>) {
    let n: usize = dims.iter().product();
    if signed {
        let v: Vec<i8> = (0..n).map(|_| rng.int(-128, 127) as i8).collect();
        (Tensor::from_i8(dev, &v, dims.to_vec()).unwrap(), v.iter().map(|&x| x as i64).collect())
    } else {
        let v: Vec<u8> = (0..n).map(|_| rng.int(0, 255) as u8).collect();
        (Tensor::from_u8(dev, &v, dims.to_vec()).unwrap(), v.iter().map(|&x| x as i64).collect())
    }
}

/// One random case on `dev`, checked exactly against the reference; returns the result.
fn check_case(dev: &Device, rng: &mut Rng, signed: bool, a_dims: &[usize], b_dims: &[usize], b_max: i64) -> Vec<f32> {
    let (a, av) = weights(dev, rng, signed, a_dims);
    assert_eq!(a.storage_dtype(), if signed { DType::I8 } else { DType::U8 });
    let bv: Vec<i64> = (0..b_dims.iter().product::<usize>()).map(|_| rng.int(-b_max, b_max)).collect();
    let b = Tensor::from_vec(dev, &bv.iter().map(|&x| x as f32).collect::<Vec<_>>(), b_dims.to_vec()).unwrap();
    let y = a.matmul_i8(&b).unwrap();
    assert_eq!(y.storage_dtype(), DType::F32);
    let (dims, want) = matmul_i8_reference(&av, a_dims, &bv, b_dims);
    assert_eq!(y.dims(), &dims[..]);
    let got = y.to_vec().unwrap();
    assert_eq!(bits(&got), bits(&want), "{a_dims:?} x {b_dims:?} signed {signed}");
    got
}

/// (a dims, b dims): M, N, K off and on multiples of 4 (the shader's whole-texel path for N),
/// ranks 2 and 3, batched and broadcast either way.
const CASES: &[(&[usize], &[usize])] = &[
    (&[1, 1], &[1, 1]),
    (&[3, 5], &[5, 7]),
    (&[17, 9], &[9, 33]),
    (&[64, 50], &[50, 147]),
    (&[33, 65], &[65, 31]),
    (&[2, 5, 30], &[2, 30, 3]),
    (&[4, 13], &[3, 13, 6]),
    (&[3, 4, 13], &[13, 6]),
    (&[1, 4, 13], &[3, 13, 6]),
    (&[3, 4, 13], &[1, 13, 6]),
    (&[33, 64], &[64, 20]),
    (&[1, 4], &[4, 4]),
    (&[3, 9, 28], &[3, 28, 12]),
    (&[6, 16], &[3, 16, 8]),
    (&[3, 5, 16], &[16, 36]),
    (&[70, 200], &[200, 68]),
];

#[test]
fn matmul_i8_equals_the_reference_and_the_cpu_bit_for_bit() {
    let dev = Device::new(backend());
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for &(ad, bd) in CASES {
        for signed in [true, false] {
            // The same random draw on both backends.
            let seed = rng.next_u64();
            let gl = check_case(&dev, &mut Rng(seed), signed, ad, bd, 255);
            let host = check_case(&cpu, &mut Rng(seed), signed, ad, bd, 255);
            assert_eq!(bits(&gl), bits(&host), "{ad:?} x {bd:?}: webgl and cpu differ");
        }
    }
}

/// Sums past 2^24 are not exact in f32: the result is the i32 sum rounded once, as `as f32`.
#[test]
fn large_sums_round_once_from_i32() {
    let dev = Device::new(backend());
    let k = 2048;
    let a: Vec<i8> = (0..k).map(|i| if i % 3 == 0 { 127 } else { -7 + (i % 5) as i8 }).collect();
    let b: Vec<f32> = (0..k).map(|i| (8191 - (i as i64 * 37) % 1000) as f32).collect();
    let want: i64 = a.iter().zip(&b).map(|(&x, &y)| x as i64 * y as i64).sum();
    assert!(want.abs() > 1 << 24 && want.abs() < i32::MAX as i64, "{want}");
    assert_ne!(want as i32 as f32 as i64, want, "the case must not be exact in f32");
    let at = Tensor::from_i8(&dev, &a, [1, k]).unwrap();
    let bt = Tensor::from_vec(&dev, &b, [k, 1]).unwrap();
    let got = at.matmul_i8(&bt).unwrap().to_vec().unwrap();
    assert_eq!(got[0].to_bits(), (want as i32 as f32).to_bits(), "got {} want {want}", got[0]);
    let mut rng = Rng(3);
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    for (signed, n) in [(true, 6), (false, 6), (true, 8)] {
        let seed = rng.next_u64();
        let gl = check_case(&dev, &mut Rng(seed), signed, &[5, 3000], &[3000, n], 65536);
        let host = check_case(&cpu, &mut Rng(seed), signed, &[5, 3000], &[3000, n], 65536);
        assert_eq!(bits(&gl), bits(&host));
    }
}

/// Sums past i32 wrap (two's complement), as documented, the same on every backend; `b`
/// values that are not whole or out of i32's range convert as Rust's `as i32`.
#[test]
fn overflow_wraps_in_i32_and_b_converts_like_as_i32() {
    let dev = Device::new(backend());
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    // 127 * 2^24 twice: 4_261_412_864, which wraps to -33_554_432; a u8 row too.
    let a = [127i8, 127, -128, -128, 1, -1, 127, 127];
    let u = [255u8, 255, 0, 255, 255, 255, 1, 1];
    let big = (1u32 << 24) as f32;
    let b = [big; 8];
    let wrap = |x: i64| (x as i32) as f32;
    let t = 1i64 << 24;
    let row = |p: i64, q: i64| vec![wrap(p * t + q * t); 4];
    let want_a: Vec<f32> = [row(127, 127), row(-128, -128), row(1, -1), row(127, 127)].concat();
    let want_u: Vec<f32> = [row(255, 255), row(0, 255), row(255, 255), row(1, 1)].concat();
    assert_eq!(want_a[0], -33_554_432.0);
    let run = |d: &Device, bv: &[f32], bd: [usize; 2]| {
        let bt = Tensor::from_vec(d, bv, bd).unwrap();
        let ya = Tensor::from_i8(d, &a, [4, 2]).unwrap().matmul_i8(&bt).unwrap().to_vec().unwrap();
        let yu = Tensor::from_u8(d, &u, [4, 2]).unwrap().matmul_i8(&bt).unwrap().to_vec().unwrap();
        (ya, yu)
    };
    let (ya, yu) = run(&dev, &b, [2, 4]);
    assert_eq!(bits(&ya), bits(&want_a));
    assert_eq!(bits(&yu), bits(&want_u));
    // Fractions truncate toward zero, NaN is 0, huge values and infinities saturate.
    let odd = [2.9f32, -2.9, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3e9, -3e9, -0.5, 1.0, -1.0];
    let (ga, gu) = run(&dev, &odd, [2, 5]);
    let (ca, cu) = run(&cpu, &odd, [2, 5]);
    assert_eq!(bits(&ga), bits(&ca), "i8: {ga:?} vs {ca:?}");
    assert_eq!(bits(&gu), bits(&cu), "u8: {gu:?} vs {cu:?}");
}

/// `b` computed by pending work (a fused elementwise chain, a matmul) is drawn first; the
/// integer product reads its values, and its result feeds fused f32 ops.
#[test]
fn pending_fused_inputs_are_settled_first() {
    let dev = Device::new(backend());
    let mut rng = Rng(11);
    let (a, av) = weights(&dev, &mut rng, true, &[9, 6]);
    let xv: Vec<i64> = (0..6 * 10).map(|_| rng.int(-100, 100)).collect();
    let x = Tensor::from_vec(&dev, &xv.iter().map(|&v| v as f32).collect::<Vec<_>>(), [6, 10]).unwrap();
    let chain = x.affine(2.0, 1.0).unwrap().max_scalar(-50.0).unwrap();
    let cv: Vec<i64> = xv.iter().map(|&v| (2 * v + 1).max(-50)).collect();
    let got = a.matmul_i8(&chain).unwrap().to_vec().unwrap();
    assert_eq!(bits(&got), bits(&matmul_i8_reference(&av, &[9, 6], &cv, &[6, 10]).1), "fused chain input");
    let eye: Vec<f32> = (0..36).map(|i| if i % 7 == 0 { 1.0 } else { 0.0 }).collect();
    let mm = Tensor::from_vec(&dev, &eye, [6, 6]).unwrap().matmul(&x).unwrap();
    let got = a.matmul_i8(&mm).unwrap().to_vec().unwrap();
    assert_eq!(bits(&got), bits(&matmul_i8_reference(&av, &[9, 6], &xv, &[6, 10]).1), "matmul input");
    let y = a.matmul_i8(&x).unwrap().mul_scalar(0.5).unwrap().to_vec().unwrap();
    let want: Vec<f32> = matmul_i8_reference(&av, &[9, 6], &xv, &[6, 10]).1.iter().map(|v| v * 0.5).collect();
    assert_eq!(bits(&y), bits(&want), "f32 op after matmul_i8");
}

/// Inside repeated steps the narrow uploads and draws are planned and replayed like every
/// other: same numbers, and from the fifth step no allocations or new framebuffer bindings.
#[test]
fn works_inside_step_plans() {
    let dev = Device::new(backend());
    let mut rng = Rng(5);
    let (a, av) = weights(&dev, &mut rng, false, &[2, 7, 19]);
    let n = 1023;
    let w8 = Tensor::from_i8(&dev, &i8s(n), [n]).unwrap();
    let hv: Vec<f16> = (0..n).map(|i| f16::from_f32((i % 97) as f32 * 0.125 - 6.0)).collect();
    for step in 0..6i64 {
        let xv: Vec<i64> = (0..2 * 19 * 5).map(|i| ((i as i64 * 31 + step * 17) % 511) - 255).collect();
        let zv: Vec<f32> = (0..n).map(|i| ((i as i64 * 31 + step * 17) % 101) as f32 - 50.0).collect();
        let before = dev.counters();
        let (y, z) = dev
            .step(42, || {
                let x = Tensor::from_vec(&dev, &xv.iter().map(|&v| v as f32).collect::<Vec<_>>(), [2, 19, 5])?;
                let y = a.matmul_i8(&x.add_scalar(1.0)?)?.mul_scalar(2.0)?;
                let zt = Tensor::from_vec(&dev, &zv, [n])?;
                let h = Tensor::from_f16(&dev, &hv, [n])?;
                let z = w8.widen()?.mul(&zt)?.add(&h.widen()?)?;
                Ok((y, z))
            })
            .unwrap();
        let after = dev.counters();
        let bx: Vec<i64> = xv.iter().map(|v| v + 1).collect();
        let want: Vec<f32> = matmul_i8_reference(&av, &[2, 7, 19], &bx, &[2, 19, 5]).1.iter().map(|v| v * 2.0).collect();
        assert_eq!(bits(&y.to_vec().unwrap()), bits(&want), "step {step}");
        let wz: Vec<f32> = (0..n).map(|i| i8s(n)[i] as f32 * zv[i] + hv[i].to_f32()).collect();
        assert_eq!(bits(&z.to_vec().unwrap()), bits(&wz), "step {step}");
        if step >= 4 {
            assert_eq!(after.allocations, before.allocations, "step {step} allocated");
            assert!(after.replayed - before.replayed >= 3, "step {step}: {before:?} -> {after:?}");
            assert_eq!(after.bindings, before.bindings, "step {step} bound");
        }
        drop((y, z));
    }
}

/// With the RGBA16F fallback format every f32 tensor (so every widen and matmul_i8 result) is
/// rounded to f16; the narrow textures themselves are unchanged, and values f16 holds exactly
/// (every i8 and u8, small products) still come out exact.
#[test]
fn half_float_fallback_keeps_narrow_inputs_exact() {
    let b = WebGlBackend::new_headless(WebGlOptions { self_test: false, force_half_float: true, ..Default::default() }).unwrap();
    assert!(b.caps().int8 && b.caps().f16_storage);
    let dev = Device::new(b);
    let v = i8s(1023);
    let want: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    widened(&Tensor::from_i8(&dev, &v, [1023]).unwrap(), &want, "i8 under RGBA16F");
    let u = u8s(1023);
    let want: Vec<f32> = u.iter().map(|&x| x as f32).collect();
    widened(&Tensor::from_u8(&dev, &u, [1023]).unwrap(), &want, "u8 under RGBA16F");
    let h: Vec<f16> = (0..100).map(|i| f16::from_f32(i as f32 * 0.375 - 9.0)).collect();
    let want: Vec<f32> = h.iter().map(|x| x.to_f32()).collect();
    widened(&Tensor::from_f16(&dev, &h, [100]).unwrap(), &want, "f16 under RGBA16F");
    let mut rng = Rng(7);
    // |sums| <= 128 * 2 * 6 = 1536: whole numbers f16 holds exactly.
    check_case(&dev, &mut rng, true, &[5, 6], &[6, 8], 2);
}

/// The heatmap of 8-bit or f16 weights is the heatmap of their values (drawn from the widened
/// texture, never the integer one through a float sampler).
#[test]
fn heatmaps_of_narrow_tensors_equal_those_of_their_values() {
    let b = backend();
    let dev = Device::new(b.clone());
    let opts = pixelgrad_webgl::HeatmapOptions { pixel_size: 2, border: 1, columns: None };
    let v: Vec<i8> = (0..24).map(|i| (i * 11 % 256) as u8 as i8).collect();
    let f = Tensor::from_vec(&dev, &v.iter().map(|&x| x as f32).collect::<Vec<_>>(), [4, 6]).unwrap();
    let want = b.render_heatmap_tensor(&f, opts).unwrap();
    let got = b.render_heatmap_tensor(&Tensor::from_i8(&dev, &v, [4, 6]).unwrap(), opts).unwrap();
    assert_eq!(got.pixels, want.pixels);
    let h: Vec<f16> = v.iter().map(|&x| f16::from_f32(x as f32 / 8.0)).collect();
    let f = Tensor::from_vec(&dev, &h.iter().map(|x| x.to_f32()).collect::<Vec<_>>(), [4, 6]).unwrap();
    let want = b.render_heatmap_tensor(&f, opts).unwrap();
    let got = b.render_heatmap_tensor(&Tensor::from_f16(&dev, &h, [4, 6]).unwrap(), opts).unwrap();
    assert_eq!(got.pixels, want.pixels);
}

/// Timing, for comparisons (`cargo test --release -p pixelgrad-webgl --test narrow --
/// --ignored --nocapture`): matmul_i8 against the f32 matmul of the same shape.
#[test]
#[ignore]
fn timing() {
    let dev = Device::new(backend());
    for (m, k, n) in [(256usize, 256usize, 196usize), (64, 147, 784), (768, 768, 64)] {
        let w: Vec<i8> = (0..m * k).map(|i| (i * 7 % 255) as u8 as i8).collect();
        let a8 = Tensor::from_i8(&dev, &w, [m, k]).unwrap();
        let af = Tensor::from_vec(&dev, &w.iter().map(|&v| v as f32).collect::<Vec<_>>(), [m, k]).unwrap();
        let b = Tensor::from_vec(&dev, &(0..k * n).map(|i| (i % 511) as f32 - 255.0).collect::<Vec<_>>(), [k, n]).unwrap();
        type Run<'a> = Box<dyn Fn() -> pixelgrad_core::Result<Tensor> + 'a>;
        let runs: [(&str, Run); 2] = [("matmul_i8", Box::new(|| a8.matmul_i8(&b))), ("matmul f32", Box::new(|| af.matmul(&b)))];
        for (name, f) in runs {
            f().unwrap().to_vec().unwrap();
            let t = std::time::Instant::now();
            let reps = 5;
            for _ in 0..reps {
                f().unwrap().to_vec().unwrap();
            }
            let s = t.elapsed().as_secs_f64() / reps as f64;
            eprintln!("{m}x{k}x{n} {name}: {:.2} ms, {:.2} GOP/s", s * 1e3, 2.0 * (m * k * n) as f64 / s / 1e9);
        }
    }
}

// ---- Op::NarrowF16: f32 -> f16 results drawn into RGBA16UI ----

/// f32 values worth narrowing one by one: ±0, the f16 range's edges (65504, the last value
/// rounding down to it, the first rounding to inf), ties to even at 1 and among the f16
/// subnormals, the smallest subnormal and half of it (a tie to 0), f32 subnormals (to ±0),
/// ±inf, quiet and signalling NaNs of both signs with payloads.
const SPECIAL_F32: [u32; 24] = [
    0x0000_0000,
    0x8000_0000,
    0x477f_e000,
    0x477f_efff,
    0x477f_f000,
    0xc77f_f000,
    0x3f80_1000,
    0x3f80_3000,
    0x3380_0000,
    0x3300_0000,
    0x3300_0001,
    0xb3c0_0000,
    0x3420_0000,
    0x387f_c000,
    0x387f_e000,
    0x0000_0001,
    0x807f_ffff,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0xffc0_0001,
    0x7f80_0001,
    0x7fbf_e000,
    0x3eaa_aaab,
];

/// `n` f32 values: the specials first, then bit patterns spread over every exponent and both
/// signs (an odd multiplier), each also checked against the host's conversion.
fn floats(n: usize) -> Vec<f32> {
    (0..n).map(|i| f32::from_bits(SPECIAL_F32.get(i).copied().unwrap_or((i as u32).wrapping_mul(0x9e37_79b1)))).collect()
}

/// What `narrow_f16` then `widen` must give: the host's f32 -> f16 -> f32, bit for bit (NaNs
/// too: both sides make them quiet and keep the payload's top bits).
fn narrowed(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| f16::from_f32(x).to_f32()).collect()
}

/// Narrows `t`, checks storage, shape and the widened bits against the host, and returns them.
fn narrow_checked(t: &Tensor, want: &[f32], what: &str) -> Vec<f32> {
    let h = t.narrow_f16().unwrap();
    assert_eq!(h.storage_dtype(), DType::F16, "{what}");
    assert_eq!(h.dims(), t.dims(), "{what}");
    let got = h.widen().unwrap().to_vec().unwrap();
    assert_eq!(bits(&got), bits(want), "{what}");
    // Reading the f16 tensor directly widens it the same way.
    assert_eq!(bits(&h.to_vec().unwrap()), bits(want), "{what}: read");
    got
}

#[test]
fn narrow_f16_is_bit_exact_for_odd_sizes() {
    let b = backend();
    assert!(b.caps().narrow_f16 && b.caps().f16_storage);
    assert!(pixelgrad_core::mixed_precision_available(&Device::new(b.clone())));
    let dev = Device::new(b);
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    for n in SIZES.into_iter().chain([2, 4, 7, 8, 9]) {
        let v = floats(n);
        let want = narrowed(&v);
        let got = narrow_checked(&Tensor::from_vec(&dev, &v, [n]).unwrap(), &want, &format!("x{n}"));
        let host = Tensor::from_vec(&cpu, &v, [n]).unwrap().narrow_f16().unwrap().widen().unwrap().to_vec().unwrap();
        assert_eq!(bits(&got), bits(&host), "x{n}: webgl and cpu differ");
    }
    // Every exponent densely: 2^16 bit patterns with the low mantissa bits swept too.
    let v: Vec<f32> = (0..65536u32).map(|i| f32::from_bits(i.wrapping_mul(0x0001_0001) ^ (i << 9))).collect();
    narrow_checked(&Tensor::from_vec(&dev, &v, [256, 256]).unwrap(), &narrowed(&v), "sweep");
}

#[test]
fn narrow_f16_special_values() {
    let dev = Device::new(backend());
    let v: Vec<f32> = SPECIAL_F32.iter().map(|&b| f32::from_bits(b)).collect();
    let got = narrow_checked(&Tensor::from_vec(&dev, &v, [4, 6]).unwrap(), &narrowed(&v), "specials");
    let h: Vec<u16> = got.iter().map(|&x| f16::from_f32(x).to_bits()).collect();
    assert_eq!(&h[..2], &[0x0000, 0x8000], "signed zeros");
    assert_eq!(&h[2..6], &[0x7bff, 0x7bff, 0x7c00, 0xfc00], "65504 stays, 65519.99 rounds down, 65520 to ±inf");
    assert_eq!(&h[6..8], &[0x3c00, 0x3c02], "ties to even at 1");
    assert_eq!(&h[8..12], &[0x0001, 0x0000, 0x0001, 0x8002], "2^-24, the tie 2^-25 to 0, just above it, -1.5 * 2^-23");
    assert_eq!(h[12], 0x0002, "a tie among subnormals: 2.5 * 2^-24 to 2 (even)");
    assert_eq!(&h[13..15], &[0x03ff, 0x0400], "largest subnormal; a tie rounding up to the smallest normal");
    assert_eq!(&h[15..17], &[0x0000, 0x8000], "f32 subnormals to ±0");
    assert_eq!(&h[17..19], &[0x7c00, 0xfc00], "±inf");
    for (i, x) in got[19..23].iter().enumerate() {
        assert!(x.is_nan(), "NaN {i} stays NaN: {x}");
    }
    assert!(got[20].is_sign_negative(), "the NaN's sign is kept");
    assert_eq!(h[23], 0x3555, "1/3");
    // Odd offsets into the texels: the 23-element tail narrows to the same values.
    let tail = narrow_checked(&Tensor::from_vec(&dev, &v[1..], [23]).unwrap(), &narrowed(&v[1..]), "tail");
    assert_eq!(bits(&tail), bits(&got[1..]));
}

#[test]
fn narrow_f16_results_take_two_bytes_per_element_and_feed_widen() {
    let dev = Device::new(backend());
    let n = 4096;
    let x = Tensor::from_vec(&dev, &floats(n), [64, 64]).unwrap();
    let f32_bytes = dev.backend().describe_storage(x.storage(), n).unwrap().bytes;
    let h = x.narrow_f16().unwrap();
    let l = dev.backend().describe_storage(h.storage(), n).unwrap();
    assert_eq!(l.format, "RGBA16UI (f16 bits)");
    assert_eq!(l.bytes * 2, f32_bytes, "{l:?}");
    // A narrowed tensor is f16 storage like an uploaded one: reshape keeps it, widen reads
    // it, other ops refuse it.
    let flat = h.reshape([4096]).unwrap();
    assert_eq!(flat.storage_dtype(), DType::F16);
    assert_eq!(bits(&flat.widen().unwrap().to_vec().unwrap()), bits(&narrowed(&floats(n))));
    assert!(matches!(h.exp(), Err(Error::Shape { .. })));
    // Narrowing f16 storage again is a typed error, in core and called directly.
    assert!(h.narrow_f16().is_err());
    let be = dev.backend();
    let s = Shape::from([4]);
    let sh = be.upload_f16(&[0x3c00, 0xc000, 0x0001, 0x7c00]).unwrap();
    assert!(matches!(be.execute(&Op::NarrowF16, &[&sh], &[&s], &s), Err(Error::Shape { .. })));
    let sf = be.upload(&[1.0, -2.0, 1e-7, 1e6]).unwrap();
    assert!(be.execute(&Op::NarrowF16, &[&sf], &[&s], &Shape::from([2, 3])).is_err());
    let r = be.execute(&Op::NarrowF16, &[&sf], &[&s], &s).unwrap();
    let got = be.read(&r, 4).unwrap();
    assert_eq!(bits(&got), bits(&narrowed(&[1.0, -2.0, 1e-7, 1e6])));
    // Dropped narrowed textures go back to the pool: the next narrow of the size reuses one.
    drop((h, flat, r));
    let allocs = dev.counters().allocations;
    let again = x.narrow_f16().unwrap();
    assert_eq!(dev.counters().allocations, allocs);
    drop(again);
}

#[test]
fn narrow_f16_settles_pending_fused_inputs() {
    let dev = Device::new(backend());
    let n = 1023;
    let v = floats(n);
    let x = Tensor::from_vec(&dev, &v, [n]).unwrap();
    // A pending elementwise chain (drawn by the narrow pass's input fetch, not fused into it).
    let chain = x.mul_scalar(3.0).unwrap().add_scalar(0.5).unwrap();
    let cv: Vec<f32> = chain.to_vec().unwrap();
    let chain = x.mul_scalar(3.0).unwrap().add_scalar(0.5).unwrap();
    narrow_checked(&chain, &narrowed(&cv), "fused chain");
    // A matmul result, a permuted view and a reduction.
    let m = Tensor::from_vec(&dev, &v[..31 * 33], [31, 33]).unwrap();
    let eye: Vec<f32> = (0..33 * 33).map(|i| if i % 34 == 0 { 1.0 } else { 0.0 }).collect();
    let mm = m.matmul(&Tensor::from_vec(&dev, &eye, [33, 33]).unwrap()).unwrap();
    narrow_checked(&mm, &narrowed(&mm.to_vec().unwrap()), "matmul");
    let p = m.permute(&[1, 0]).unwrap();
    narrow_checked(&p, &narrowed(&p.to_vec().unwrap()), "permute");
    let s = m.sum_axis(1, false).unwrap();
    narrow_checked(&s, &narrowed(&s.to_vec().unwrap()), "sum");
    // And what follows the widened copy fuses as usual: as after widening uploaded halves.
    let y = x.narrow_f16().unwrap().widen().unwrap().mul_scalar(2.0).unwrap().to_vec().unwrap();
    let halves: Vec<f16> = v.iter().map(|&x| f16::from_f32(x)).collect();
    let want = Tensor::from_f16(&dev, &halves, [n]).unwrap().widen().unwrap().mul_scalar(2.0).unwrap().to_vec().unwrap();
    assert_same(&y, &want, "widen then mul");
}

/// Inside repeated steps the narrow pass is planned and replayed like every other draw: same
/// bits, and from the fifth step no allocations or new framebuffer bindings.
#[test]
fn narrow_f16_inside_step_plans() {
    let dev = Device::new(backend());
    let n = 1021;
    for step in 0..6u32 {
        let v: Vec<f32> = floats(n + 8).into_iter().skip(step as usize).take(n).collect();
        let before = dev.counters();
        let (c, h, y) = dev
            .step(7, || {
                let x = Tensor::from_vec(&dev, &v, [n])?;
                // A pending input: the narrow pass draws it first (its f32 result is checked
                // as computed on the GPU, which flushes f32 subnormals in arithmetic).
                let c = x.mul_scalar(4.0)?;
                let h = c.narrow_f16()?;
                let y = h.widen()?.add_scalar(1.0)?;
                Ok((c, h, y))
            })
            .unwrap();
        let after = dev.counters();
        let want = narrowed(&c.to_vec().unwrap());
        assert_eq!(h.storage_dtype(), DType::F16);
        assert_eq!(bits(&h.to_vec().unwrap()), bits(&want), "step {step}");
        let plus: Vec<f32> = want.iter().map(|x| x + 1.0).collect();
        assert_same(&y.to_vec().unwrap(), &plus, &format!("step {step}"));
        if step >= 4 {
            assert_eq!(after.allocations, before.allocations, "step {step} allocated");
            assert!(after.replayed - before.replayed >= 2, "step {step}: {before:?} -> {after:?}");
            assert_eq!(after.bindings, before.bindings, "step {step} bound");
        }
        drop((c, h, y));
    }
}

/// The mediump mode (fragment floats in mediump) leaves the narrow pass exact: it reads the
/// f32 bits straight from the highp sampler and computes in integers.
#[test]
fn narrow_f16_is_exact_in_the_mediump_mode() {
    let b = WebGlBackend::new_headless(WebGlOptions { self_test: false, mediump: true, ..Default::default() }).unwrap();
    assert!(b.caps().narrow_f16);
    let dev = Device::new(b);
    let v = floats(1023);
    narrow_checked(&Tensor::from_vec(&dev, &v, [1023]).unwrap(), &narrowed(&v), "mediump");
}

/// With the RGBA16F fallback f32 tensors already hold halves, in as many bytes as an f16
/// copy: narrow_f16 is not offered (mixed precision keeps its f32 path) and a direct call is
/// a typed error, never a silently different result.
#[test]
fn half_float_fallback_does_not_offer_narrow_f16() {
    let b = WebGlBackend::new_headless(WebGlOptions { self_test: false, force_half_float: true, ..Default::default() }).unwrap();
    assert!(!b.caps().narrow_f16 && b.caps().f16_storage);
    let dev = Device::new(b.clone());
    assert!(!pixelgrad_core::mixed_precision_available(&dev));
    let x = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0], [3]).unwrap();
    assert!(matches!(x.narrow_f16(), Err(Error::Backend { op: "narrow_f16", .. })));
    let s = Shape::from([3]);
    let sf = b.upload(&[1.0, 2.0, 3.0]).unwrap();
    match b.execute(&Op::NarrowF16, &[&sf], &[&s], &s) {
        Err(e @ Error::Backend { op: "narrow_f16", .. }) => assert!(e.to_string().contains("RGBA16F"), "{e}"),
        r => panic!("expected a typed narrow_f16 error, got {:?}", r.err()),
    }
    assert_eq!(x.add(&x).unwrap().to_vec().unwrap(), vec![2.0, 4.0, 6.0]);
}
