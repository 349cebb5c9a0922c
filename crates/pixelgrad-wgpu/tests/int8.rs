//! 8-bit weight storage (four elements per u32 word) and the exact integer matmul
//! (`Op::MatMulI8`) on WebGPU (Mesa lavapipe in CI), compared bit for bit with an i64
//! reference computed here, eagerly, inside step plans and with pending fused inputs.

mod common;

use common::backend;
use pixelgrad_conformance::narrow::{matmul_i8_reference, Rng};
use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Backend, Device, Error, Op, Shape, Tensor};
use pixelgrad_wgpu::pool::size_class;

/// Random weights of `n` elements (i8 when `signed`, else u8): the tensor and its values.
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

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// One random case on `dev`, checked exactly; returns the result for further comparison.
fn check_case(dev: &Device, rng: &mut Rng, signed: bool, a_dims: &[usize], b_dims: &[usize], b_max: i64) -> Vec<f32> {
    let (a, av) = weights(dev, rng, signed, a_dims);
    assert_eq!(a.storage_dtype(), if signed { DType::I8 } else { DType::U8 });
    let bv: Vec<i64> = (0..b_dims.iter().product::<usize>()).map(|_| rng.int(-b_max, b_max)).collect();
    let b = Tensor::from_vec(dev, &bv.iter().map(|&x| x as f32).collect::<Vec<_>>(), b_dims.to_vec()).unwrap();
    let y = a.matmul_i8(&b).unwrap();
    assert_eq!(y.storage_dtype(), DType::F32);
    let got = y.to_vec().unwrap();
    let want = matmul_i8_reference(&av, a_dims, &bv, b_dims).1;
    assert_eq!(bits(&got), bits(&want), "{a_dims:?} x {b_dims:?} signed {signed}");
    got
}

/// (a dims, b dims): M, N, K off every multiple of 4/8/16/32 (the kernel's 4x4 blocks and
/// 32x32 tiles), batched and broadcast either way.
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
    // K and N multiples of 4 (the vec4 kernel), rows off 4, batched and broadcast.
    (&[33, 64], &[64, 20]),
    (&[1, 4], &[4, 4]),
    (&[3, 9, 28], &[3, 28, 12]),
    (&[6, 16], &[3, 16, 8]),
    (&[3, 5, 16], &[16, 36]),
    (&[70, 200], &[200, 68]),
];

#[test]
fn matmul_i8_is_exact_for_every_shape_and_signedness() {
    let b = backend();
    assert!(b.caps().int8);
    assert_eq!(b.int8_path(), if b.wgsl_packed_4x8_integer_dot_product() { "dot4I8Packed" } else { "unpacked-i32" });
    eprintln!("packed_4x8_integer_dot_product in WGSL: {}", b.wgsl_packed_4x8_integer_dot_product());
    let dev = Device::new(b);
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for &(ad, bd) in CASES {
        for signed in [true, false] {
            // The same random draw on both backends: bit-identical results.
            let seed = rng.next_u64();
            let gpu = check_case(&dev, &mut Rng(seed), signed, ad, bd, 255);
            let host = check_case(&cpu, &mut Rng(seed), signed, ad, bd, 255);
            assert_eq!(bits(&gpu), bits(&host), "{ad:?} x {bd:?}: webgpu and cpu differ");
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
    check_case(&dev, &mut rng, true, &[5, 3000], &[3000, 6], 65536);
    check_case(&dev, &mut rng, false, &[5, 3000], &[3000, 6], 65536);
    check_case(&dev, &mut rng, true, &[5, 3000], &[3000, 8], 65536);
}

#[test]
fn storage_is_packed_four_per_word_and_reads_back_exactly() {
    let dev = Device::new(backend());
    // 4096 elements: 4096 bytes packed (a size class of its own) instead of 16 KiB as f32.
    // Every tensor stays alive, so each one needs a new buffer (none is recycled).
    let mut held = Vec::new();
    for n in [4096usize, 5, 1, 1003] {
        let before = dev.counters().bytes_in_use;
        let v: Vec<i8> = (0..n).map(|i| (i * 7 % 256) as u8 as i8).collect();
        let t = Tensor::from_i8(&dev, &v, [n]).unwrap();
        assert_eq!(t.storage_dtype(), DType::I8);
        let grew = dev.counters().bytes_in_use - before;
        assert_eq!(grew, size_class(n.div_ceil(4) as u64 * 4, u64::MAX), "{n} elements");
        assert_eq!(t.to_vec().unwrap(), v.iter().map(|&x| x as f32).collect::<Vec<_>>(), "{n} elements");
        let u: Vec<u8> = (0..n).map(|i| (i * 13 % 256) as u8).collect();
        let ut = Tensor::from_u8(&dev, &u, [n]).unwrap();
        assert_eq!(ut.storage_dtype(), DType::U8);
        assert_eq!(ut.to_vec().unwrap(), u.iter().map(|&x| x as f32).collect::<Vec<_>>());
        // A reshape shares the buffer and keeps the type.
        let r = t.reshape([1, n]).unwrap();
        assert_eq!(r.storage_dtype(), DType::I8);
        assert_eq!(r.to_vec().unwrap(), v.iter().map(|&x| x as f32).collect::<Vec<_>>());
        held.push((t, ut, r));
    }
    let fresh = Device::new(backend());
    let t = Tensor::from_i8(&fresh, &vec![1; 4096], [4096]).unwrap();
    assert_eq!(fresh.counters().bytes_in_use, 4096);
    let f = Tensor::from_vec(&fresh, &vec![1.0; 4096], [4096]).unwrap();
    assert_eq!(fresh.counters().bytes_in_use, 4096 + 16384);
    let layout = fresh.backend().describe_storage(t.storage(), 4096).unwrap();
    assert_eq!((layout.format.as_str(), layout.bytes), ("i8", 4096));
    drop(f);
}

#[test]
fn eight_bit_inputs_and_bad_shapes_are_typed_errors() {
    let dev = Device::new(backend());
    let a = Tensor::from_i8(&dev, &[1, 2, 3, 4, 5, 6], [2, 3]).unwrap();
    let f = Tensor::from_vec(&dev, &[1.0; 6], [2, 3]).unwrap();
    let b = Tensor::from_vec(&dev, &[1.0; 12], [3, 4]).unwrap();
    for r in [a.add(&f), f.mul(&a), a.matmul(&b), a.exp(), a.sum_axis(0, false), b.matmul_i8(&b)] {
        assert!(matches!(r, Err(Error::Shape { .. })), "{r:?}");
    }
    let a8 = Tensor::from_u8(&dev, &[1; 12], [3, 4]).unwrap();
    let Err(e) = a.matmul_i8(&a8) else { panic!("b as u8 accepted") };
    assert!(matches!(&e, Error::Shape { op: "matmul_i8", .. }) && e.to_string().contains("input 1"), "{e}");
    let wrong_k = Tensor::from_vec(&dev, &[1.0; 8], [4, 2]).unwrap();
    assert!(matches!(a.matmul_i8(&wrong_k), Err(Error::Shape { op: "matmul_i8", .. })));
    let ga = Tensor::from_i8(&dev, &[1; 12], [2, 2, 3]).unwrap();
    let gb = Tensor::from_vec(&dev, &[1.0; 36], [3, 3, 4]).unwrap();
    assert!(matches!(ga.matmul_i8(&gb), Err(Error::Shape { .. })));
    // Direct backend calls: 8-bit storage into another op, or the wrong types into
    // matmul_i8, are errors, not bytes read as floats.
    let be = dev.backend();
    let s8 = be.upload_int8(&[1, 2, 3, 4], DType::I8).unwrap();
    let sf = be.upload(&[1.0; 4]).unwrap();
    let (s22, s4) = (Shape::from([2, 2]), Shape::from([4]));
    assert!(matches!(be.execute(&Op::Unary(pixelgrad_core::UnaryOp::Neg), &[&s8], &[&s4], &s4), Err(Error::Shape { .. })));
    assert!(be.execute(&Op::MatMul { trans_a: false, trans_b: false }, &[&s8, &sf], &[&s22, &s22], &s22).is_err());
    assert!(be.execute(&Op::MatMulI8 { b_i8: false }, &[&sf, &sf], &[&s22, &s22], &s22).is_err());
    assert!(be.execute(&Op::MatMulI8 { b_i8: false }, &[&s8, &s8], &[&s22, &s22], &s22).is_err());
    assert!(be.execute(&Op::MatMulI8 { b_i8: false }, &[&s8, &sf], &[&s22, &s22], &s4).is_err());
    assert!(be.upload_int8(&[1], DType::F32).is_err());
    let r = be.execute(&Op::MatMulI8 { b_i8: false }, &[&s8, &sf], &[&s22, &s22], &s22).unwrap();
    assert_eq!(be.read(&r, 4).unwrap(), vec![3.0, 3.0, 7.0, 7.0]);
    // The device still works after all of that.
    assert_eq!(f.add(&f).unwrap().to_vec().unwrap(), vec![2.0; 6]);
}

/// `b` computed by pending work (a fused elementwise chain, a deferred matmul) is computed
/// first; the integer product reads its values.
#[test]
fn pending_fused_inputs_are_settled_first() {
    let dev = Device::new(backend());
    let mut rng = Rng(11);
    let (a, av) = weights(&dev, &mut rng, true, &[9, 6]);
    let xv: Vec<i64> = (0..6 * 10).map(|_| rng.int(-100, 100)).collect();
    let x = Tensor::from_vec(&dev, &xv.iter().map(|&v| v as f32).collect::<Vec<_>>(), [6, 10]).unwrap();
    // A fused chain: 2x + 1, then max with -50.
    let chain = x.affine(2.0, 1.0).unwrap().max_scalar(-50.0).unwrap();
    let cv: Vec<i64> = xv.iter().map(|&v| (2 * v + 1).max(-50)).collect();
    let got = a.matmul_i8(&chain).unwrap().to_vec().unwrap();
    assert_eq!(bits(&got), bits(&matmul_i8_reference(&av, &[9, 6], &cv, &[6, 10]).1), "fused chain input");
    // A matmul's result (deferred on CPU adapters), of whole numbers: I [6, 6] * x.
    let eye: Vec<f32> = (0..36).map(|i| if i % 7 == 0 { 1.0 } else { 0.0 }).collect();
    let mm = Tensor::from_vec(&dev, &eye, [6, 6]).unwrap().matmul(&x).unwrap();
    let got = a.matmul_i8(&mm).unwrap().to_vec().unwrap();
    assert_eq!(bits(&got), bits(&matmul_i8_reference(&av, &[9, 6], &xv, &[6, 10]).1), "matmul input");
    // And its result feeds ordinary f32 ops (fused after it).
    let y = a.matmul_i8(&x).unwrap().mul_scalar(0.5).unwrap().to_vec().unwrap();
    let want: Vec<f32> = matmul_i8_reference(&av, &[9, 6], &xv, &[6, 10]).1.iter().map(|v| v * 0.5).collect();
    assert_eq!(bits(&y), bits(&want), "f32 op after matmul_i8");
}

/// Inside repeated steps the launch is recorded and replayed like every other op, with the
/// same numbers.
#[test]
fn works_inside_step_plans() {
    let dev = Device::new(backend());
    let mut rng = Rng(5);
    let (a, av) = weights(&dev, &mut rng, false, &[2, 7, 19]);
    let mut outs = Vec::new();
    for step in 0..6 {
        let xv: Vec<i64> = (0..2 * 19 * 5).map(|i| ((i as i64 * 31 + step * 17) % 511) - 255).collect();
        let before = dev.counters();
        let y = dev
            .step(42, || {
                let x = Tensor::from_vec(&dev, &xv.iter().map(|&v| v as f32).collect::<Vec<_>>(), [2, 19, 5])?;
                a.matmul_i8(&x.add_scalar(1.0)?)?.mul_scalar(2.0)
            })
            .unwrap();
        let after = dev.counters();
        let got = y.to_vec().unwrap();
        let bx: Vec<i64> = xv.iter().map(|v| v + 1).collect();
        let want: Vec<f32> = matmul_i8_reference(&av, &[2, 7, 19], &bx, &[2, 19, 5]).1.iter().map(|v| v * 2.0).collect();
        assert_eq!(bits(&got), bits(&want), "step {step}");
        if step >= 4 {
            assert_eq!(after.allocations, before.allocations, "step {step} allocated");
            assert!(after.replayed - before.replayed >= 2, "step {step}: {before:?} -> {after:?}");
            assert_eq!(after.bindings, before.bindings, "step {step} bound");
        }
        outs.push(got);
        drop(y);
    }
}

/// Timing, for comparisons (`cargo test --release -p pixelgrad-wgpu --test int8 -- --ignored
/// --nocapture`): matmul_i8 against the f32 matmul of the same shape.
#[test]
#[ignore]
fn timing() {
    let dev = Device::new(backend());
    for (m, k, n) in [(768usize, 768usize, 196usize), (3072, 768, 64), (64, 147, 3136)] {
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

/// Sums past i32 wrap (two's complement), as documented, the same on every backend.
#[test]
fn overflow_wraps_in_i32() {
    {
        let dev = Device::new(backend());
        // 127 * 2^24 twice: 4_261_412_864, which wraps to -33_554_432; a u8 row too.
        let a = Tensor::from_i8(&dev, &[127, 127, -128, -128, 1, -1, 127, 127], [4, 2]).unwrap();
        let u = Tensor::from_u8(&dev, &[255, 255, 0, 255, 255, 255, 1, 1], [4, 2]).unwrap();
        let big = (1u32 << 24) as f32;
        let b = Tensor::from_vec(&dev, &[big, big, big, big, big, big, big, big], [2, 4]).unwrap();
        let wrap = |x: i64| (x as i32) as f32;
        let t = 1i64 << 24;
        let row = |p: i64, q: i64| vec![wrap(p * t + q * t); 4];
        let want_a: Vec<f32> = [row(127, 127), row(-128, -128), row(1, -1), row(127, 127)].concat();
        let want_u: Vec<f32> = [row(255, 255), row(0, 255), row(255, 255), row(1, 1)].concat();
        assert_eq!(want_a[0], -33_554_432.0);
        assert_eq!(bits(&a.matmul_i8(&b).unwrap().to_vec().unwrap()), bits(&want_a), "{}", dev.name());
        assert_eq!(bits(&u.matmul_i8(&b).unwrap().to_vec().unwrap()), bits(&want_u), "{}", dev.name());
    }
}
