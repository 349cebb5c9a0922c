//! 8-bit weight storage and the exact integer matmul (`Op::MatMulI8`) on both CPU modes,
//! compared bit for bit with an i64 reference computed here.

use pixelgrad_conformance::narrow::{matmul_i8_reference, F32Only, Rng};
use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Backend, Device, Error, Op, Shape, Tensor};
use pixelgrad_cpu::CpuBackend;

/// Weights of either signedness, as the values they stand for.
enum Weights {
    I8(Vec<i8>),
    U8(Vec<u8>),
}

impl Weights {
    fn random(rng: &mut Rng, signed: bool, n: usize) -> Weights {
        if signed {
            Weights::I8((0..n).map(|_| rng.int(-128, 127) as i8).collect())
        } else {
            Weights::U8((0..n).map(|_| rng.int(0, 255) as u8).collect())
        }
    }
    fn values(&self) -> Vec<i64> {
        match self {
            Weights::I8(v) => v.iter().map(|&x| x as i64).collect(),
            Weights::U8(v) => v.iter().map(|&x| x as i64).collect(),
        }
    }
    fn tensor(&self, dev: &Device, dims: &[usize]) -> Tensor {
        match self {
            Weights::I8(v) => Tensor::from_i8(dev, v, dims.to_vec()).unwrap(),
            Weights::U8(v) => Tensor::from_u8(dev, v, dims.to_vec()).unwrap(),
        }
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Runs one case on `dev`: random weights of `a_dims`, random whole numbers in
/// `-b_max..=b_max` of `b_dims`, compared exactly.
fn check_case(dev: &Device, rng: &mut Rng, signed: bool, a_dims: &[usize], b_dims: &[usize], b_max: i64) {
    let w = Weights::random(rng, signed, a_dims.iter().product());
    let bv: Vec<i64> = (0..b_dims.iter().product::<usize>()).map(|_| rng.int(-b_max, b_max)).collect();
    let a = w.tensor(dev, a_dims);
    assert_eq!(a.storage_dtype(), if signed { DType::I8 } else { DType::U8 });
    let bf: Vec<f32> = bv.iter().map(|&x| x as f32).collect();
    let b = Tensor::from_vec(dev, &bf, b_dims.to_vec()).unwrap();
    let y = a.matmul_i8(&b).unwrap();
    let (dims, want) = matmul_i8_reference(&w.values(), a_dims, &bv, b_dims);
    assert_eq!(y.dims(), &dims[..], "{a_dims:?} x {b_dims:?}");
    assert_eq!(y.storage_dtype(), DType::F32);
    let got = y.to_vec().unwrap();
    assert_eq!(bits(&got), bits(&want), "{} {a_dims:?} x {b_dims:?} signed {signed}", dev.name());
}

/// (a dims, b dims): M, N, K off every multiple of 4/8/16, batched and broadcast.
const CASES: &[(&[usize], &[usize])] = &[
    (&[1, 1], &[1, 1]),
    (&[3, 5], &[5, 7]),
    (&[17, 9], &[9, 33]),
    (&[64, 50], &[50, 147]),
    (&[2, 5, 300], &[2, 300, 3]),
    // Weights broadcast over a batch of activations, and the other way round.
    (&[4, 13], &[3, 13, 6]),
    (&[3, 4, 13], &[13, 6]),
    (&[1, 4, 13], &[3, 13, 6]),
    (&[3, 4, 13], &[1, 13, 6]),
];

#[test]
fn matmul_i8_is_exact_for_every_shape_and_signedness() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for dev in [Device::new(CpuBackend::new()), Device::new(CpuBackend::reference())] {
        for &(ad, bd) in CASES {
            for signed in [true, false] {
                check_case(&dev, &mut rng, signed, ad, bd, 255);
            }
        }
    }
}

/// Both fast-path algorithms on large inputs: f32 GEMM in exact blocks (8-bit activations;
/// K = 700 is two blocks of at most 513, and 300 rows two panels) and the direct i32 loops
/// (activations up to 2^16 allow no useful exact block) on enough rows to use threads.
#[test]
fn matmul_i8_large_takes_both_paths_exactly() {
    let mut rng = Rng(7);
    let dev = Device::new(CpuBackend::new());
    check_case(&dev, &mut rng, true, &[300, 700], &[700, 130], 255);
    check_case(&dev, &mut rng, false, &[2, 129, 257], &[2, 257, 129], 255);
    check_case(&dev, &mut rng, false, &[3, 40, 600], &[600, 16], 255);
    check_case(&dev, &mut rng, true, &[300, 300], &[300, 130], 65536);
    check_case(&dev, &mut rng, false, &[2, 70, 300], &[1, 300, 260], 65536);
}

/// The shapes of the int8 bench models' convolutions (few output channels, short K, long N)
/// and panel remainders around the integer GEMM's 8-column panels (AVX2 takes two at a time
/// where the CPU has it, one otherwise; every kernel gives the definition's bits).
#[test]
fn matmul_i8_is_exact_for_convolution_shapes() {
    let mut rng = Rng(0x51ed_270b);
    let dev = Device::new(CpuBackend::new());
    for (m, k, n) in [(8, 27, 2304), (8, 72, 1152), (24, 8, 577), (16, 1, 9), (200, 32, 144), (50, 200, 1), (9, 300, 15), (88, 16, 24)] {
        check_case(&dev, &mut rng, true, &[m, k], &[k, n], 255);
        check_case(&dev, &mut rng, false, &[m, k], &[k, n], 255);
    }
}

/// Activations at the ends of i16, fractions (truncated toward zero, as `as i32` does) and NaN
/// (0): the fast mode's integer GEMM converts them as the reference's direct loops do, and
/// values just past i16 send the fast mode to its other paths with the same result.
#[test]
fn activations_convert_alike_at_the_ends_of_i16() {
    let edges = [32767.0f32, -32768.0, 32767.9, -32768.9, 2.7, -2.7, 0.5, -0.99, f32::NAN, 255.0, -255.0, 1.0];
    let past = [32768.0f32, -32769.0, f32::INFINITY, 1e9];
    let (m, k, n) = (5, 6, 21);
    let w: Vec<i8> = (0..m * k).map(|i| (i as i32 * 37 % 255 - 127) as i8).collect();
    for extra in std::iter::once(None).chain(past.iter().map(Some)) {
        let mut b: Vec<f32> = (0..k * n).map(|i| edges[i % edges.len()]).collect();
        if let Some(&v) = extra {
            b[k * n / 2] = v;
        }
        let run = |dev: &Device| -> Vec<f32> {
            let a = Tensor::from_i8(dev, &w, [m, k]).unwrap();
            let bt = Tensor::from_vec(dev, &b, [k, n]).unwrap();
            a.matmul_i8(&bt).unwrap().to_vec().unwrap()
        };
        let fast = run(&Device::new(CpuBackend::new()));
        let reference = run(&Device::new(CpuBackend::reference()));
        assert_eq!(bits(&fast), bits(&reference), "with {extra:?}");
    }
}

/// Sums past 2^24 are not exact in f32: the result is the i32 sum rounded as `as f32` does,
/// not an f32 accumulation.
#[test]
fn large_sums_round_once_from_i32() {
    // The reference too: its f64 output holds the f32-rounded value, not the exact sum.
    for dev in [Device::new(CpuBackend::new()), Device::new(CpuBackend::reference())] {
        large_sums_on(&dev);
    }
}

fn large_sums_on(dev: &Device) {
    let k = 2048;
    // 127 * 65535 * 2048 ≈ 1.7e10 would wrap i32; 127 * 65000 * 2000 ≈ 1.65e10 too. Use
    // values that stay inside i32 but pass 2^24 by far, with odd low bits.
    let a: Vec<i8> = (0..k).map(|i| if i % 3 == 0 { 127 } else { -7 + (i % 5) as i8 }).collect();
    let b: Vec<f32> = (0..k).map(|i| (8191 - (i as i64 * 37) % 1000) as f32).collect();
    let want: i64 = a.iter().zip(&b).map(|(&x, &y)| x as i64 * y as i64).sum();
    assert!(want.abs() > 1 << 24 && want.abs() < i32::MAX as i64, "{want}");
    assert_ne!(want as i32 as f32 as i64, want, "the case must not be exact in f32");
    let at = Tensor::from_i8(dev, &a, [1, k]).unwrap();
    let bt = Tensor::from_vec(dev, &b, [k, 1]).unwrap();
    let y = at.matmul_i8(&bt).unwrap();
    let got = y.to_vec().unwrap();
    assert_eq!(got[0].to_bits(), (want as i32 as f32).to_bits(), "got {} want {want}", got[0]);
    assert_eq!(y.to_vec_f64().unwrap()[0], want as i32 as f32 as f64, "{}", dev.name());
    // An f32 matmul of the same values accumulates with rounding at every step and may
    // differ; the integer path must not depend on that.
    let mut rng = Rng(3);
    check_case(dev, &mut rng, true, &[5, 4000], &[4000, 3], 65536);
}

#[test]
fn storage_is_one_byte_per_element_and_reads_back_exactly() {
    for backend in [CpuBackend::new(), CpuBackend::reference()] {
        let dev = Device::new(backend);
        assert!(dev.backend().caps().int8);
        let before = dev.counters().bytes_in_use;
        let v: Vec<i8> = (0..1000).map(|i| (i % 256) as u8 as i8).collect();
        let t = Tensor::from_i8(&dev, &v, [10, 100]).unwrap();
        assert_eq!(t.storage_dtype(), DType::I8);
        assert_eq!(dev.counters().bytes_in_use - before, 1000);
        assert_eq!(t.to_vec().unwrap(), v.iter().map(|&x| x as f32).collect::<Vec<_>>());
        assert_eq!(t.to_vec_f64().unwrap(), v.iter().map(|&x| x as f64).collect::<Vec<_>>());
        let u: Vec<u8> = (0..=255).collect();
        let ut = Tensor::from_u8(&dev, &u, [256]).unwrap();
        assert_eq!(ut.storage_dtype(), DType::U8);
        assert_eq!(dev.counters().bytes_in_use - before, 1256);
        assert_eq!(ut.to_vec().unwrap(), u.iter().map(|&x| x as f32).collect::<Vec<_>>());
        // A reshape moves no data and keeps the type.
        let r = t.reshape([100, 10]).unwrap();
        assert_eq!(r.storage_dtype(), DType::I8);
        assert_eq!(dev.counters().bytes_in_use - before, 1256);
        drop((t, ut, r));
        assert_eq!(dev.counters().bytes_in_use, before);
        let layout = dev.backend().describe_storage(Tensor::from_u8(&dev, &[1, 2], [2]).unwrap().storage(), 2).unwrap();
        assert_eq!((layout.format.as_str(), layout.bytes), ("u8", 2));
    }
}

#[test]
fn eight_bit_inputs_and_bad_shapes_are_typed_errors() {
    let dev = Device::new(CpuBackend::new());
    let a = Tensor::from_i8(&dev, &[1, 2, 3, 4, 5, 6], [2, 3]).unwrap();
    let f = Tensor::from_vec(&dev, &[1.0; 6], [2, 3]).unwrap();
    let b = Tensor::from_vec(&dev, &[1.0; 12], [3, 4]).unwrap();
    // Every other op refuses an 8-bit input (one central check), never reading bytes as floats.
    for r in [a.add(&f), f.add(&a), a.matmul(&b), a.exp(), a.sum_axis(0, false), a.transpose(0, 1), b.matmul_i8(&b)] {
        assert!(matches!(r, Err(Error::Shape { .. })), "{r:?}");
    }
    // `a` must be 8-bit, `b` f32.
    let a8 = Tensor::from_i8(&dev, &[1; 12], [3, 4]).unwrap();
    let Err(e) = a.matmul_i8(&a8) else { panic!("b as i8 accepted") };
    assert!(matches!(&e, Error::Shape { op: "matmul_i8", .. }), "{e}");
    assert!(e.to_string().contains("input 1"), "{e}");
    // Shapes.
    let wrong_k = Tensor::from_vec(&dev, &[1.0; 8], [4, 2]).unwrap();
    assert!(matches!(a.matmul_i8(&wrong_k), Err(Error::Shape { op: "matmul_i8", .. })));
    let rank1 = Tensor::from_vec(&dev, &[1.0; 3], [3]).unwrap();
    assert!(matches!(a.matmul_i8(&rank1), Err(Error::Shape { .. })));
    let ga = Tensor::from_i8(&dev, &[1; 12], [2, 2, 3]).unwrap();
    let gb = Tensor::from_vec(&dev, &[1.0; 36], [3, 3, 4]).unwrap();
    assert!(matches!(ga.matmul_i8(&gb), Err(Error::Shape { .. })));
    assert!(matches!(Tensor::from_i8(&dev, &[1, 2], [3]), Err(Error::Shape { op: "from_i8", .. })));
    // Direct backend calls with wrong storage types are errors too, not panics.
    let cpu = CpuBackend::new();
    let s8 = cpu.upload_int8(&[1, 2, 3, 4], DType::I8).unwrap();
    let sf = cpu.upload(&[1.0; 4]).unwrap();
    let (s22, s4) = (Shape::from([2, 2]), Shape::from([4]));
    assert!(cpu.execute(&Op::Unary(pixelgrad_core::UnaryOp::Neg), &[&s8], &[&s4], &s4).is_err());
    assert!(cpu.execute(&Op::MatMulI8 { b_i8: false }, &[&sf, &sf], &[&s22, &s22], &s22).is_err());
    assert!(cpu.execute(&Op::MatMulI8 { b_i8: false }, &[&s8, &s8], &[&s22, &s22], &s22).is_err());
    assert!(cpu.execute(&Op::MatMulI8 { b_i8: false }, &[&s8, &sf], &[&s22, &s22], &s4).is_err());
    assert!(cpu.upload_int8(&[1], DType::F32).is_err());
    let r = cpu.execute(&Op::MatMulI8 { b_i8: false }, &[&s8, &sf], &[&s22, &s22], &s22).unwrap();
    assert_eq!(cpu.read(&r, 4).unwrap(), vec![3.0, 3.0, 7.0, 7.0]);
}

/// No gradient flows through matmul_i8: its result is a constant even when `b` wants one.
#[test]
fn matmul_i8_records_no_gradient() {
    let dev = Device::new(CpuBackend::new());
    let a = Tensor::from_i8(&dev, &[1, -1], [1, 2]).unwrap();
    let b = Tensor::from_vec(&dev, &[3.0, 4.0], [2, 1]).unwrap().with_grad();
    let y = a.matmul_i8(&b).unwrap();
    assert!(!y.requires_grad());
    assert_eq!(y.to_vec().unwrap(), vec![-1.0]);
    assert!(matches!(y.sum_all().unwrap().backward(), Err(Error::Autodiff(_))));
}

/// A backend without 8-bit storage: `from_i8` gives f32 tensors of the same values, and the
/// default `upload_int8` is a typed error.
#[test]
fn without_int8_support_from_i8_falls_back_to_f32() {
    let b = F32Only(CpuBackend::new());
    assert!(!b.caps().int8);
    let Err(e) = b.upload_int8(&[1], DType::I8) else { panic!("default upload_int8 accepted") };
    assert!(matches!(&e, Error::Backend { op: "upload_int8", .. }) && e.to_string().contains("f32-only"), "{e}");
    let dev = Device::new(b);
    let t = Tensor::from_i8(&dev, &[-3, 4], [2]).unwrap();
    assert_eq!(t.storage_dtype(), DType::F32);
    assert_eq!(t.add(&t).unwrap().to_vec().unwrap(), vec![-6.0, 8.0]);
    let u = Tensor::from_u8(&dev, &[200, 4], [1, 2]).unwrap();
    assert_eq!(u.storage_dtype(), DType::F32);
    let x = Tensor::from_vec(&dev, &[1.0, 1.0], [2, 1]).unwrap();
    assert!(matches!(u.matmul_i8(&x), Err(Error::Shape { .. })));
}

/// Timing, for comparisons (`cargo test -p pixelgrad-cpu --test int8 -- --ignored
/// --nocapture`): matmul_i8 against the f32 matmul of the same shape.
#[test]
#[ignore]
fn timing() {
    let dev = Device::new(CpuBackend::new());
    for (m, k, n) in [(768usize, 768usize, 196usize), (3072, 768, 64), (64, 147, 3136), (768, 768, 1)] {
        let w: Vec<i8> = (0..m * k).map(|i| (i * 7 % 255) as u8 as i8).collect();
        let a8 = Tensor::from_i8(&dev, &w, [m, k]).unwrap();
        let af = Tensor::from_vec(&dev, &w.iter().map(|&v| v as f32).collect::<Vec<_>>(), [m, k]).unwrap();
        let b = Tensor::from_vec(&dev, &(0..k * n).map(|i| (i % 511) as f32 - 255.0).collect::<Vec<_>>(), [k, n]).unwrap();
        type Run<'a> = Box<dyn Fn() -> pixelgrad_core::Result<Tensor> + 'a>;
        let runs: [(&str, Run); 2] = [("matmul_i8", Box::new(|| a8.matmul_i8(&b))), ("matmul f32", Box::new(|| af.matmul(&b)))];
        for (name, f) in runs {
            f().unwrap();
            let t = std::time::Instant::now();
            let reps = 5;
            for _ in 0..reps {
                f().unwrap();
            }
            let s = t.elapsed().as_secs_f64() / reps as f64;
            eprintln!("{m}x{k}x{n} {name}: {:.2} ms, {:.2} GOP/s", s * 1e3, 2.0 * (m * k * n) as f64 / s / 1e9);
        }
    }
}

/// Sums past i32 wrap (two's complement), as documented, the same on every backend.
#[test]
fn overflow_wraps_in_i32() {
    for dev in [Device::new(CpuBackend::new()), Device::new(CpuBackend::reference())] {
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

/// `matmul_i8_packed` takes whole numbers in [-128, 127] only: the ends of the range give the
/// same product as `matmul_i8`; fractions, values just outside and NaN are typed errors.
#[test]
fn packed_activations_are_checked() {
    for dev in [Device::new(CpuBackend::new()), Device::new(CpuBackend::reference())] {
        let a = Tensor::from_i8(&dev, &[3, -7, 127, -128], [2, 2]).unwrap();
        let good = Tensor::from_vec(&dev, &[-128.0, 127.0, 0.0, -1.0], [2, 2]).unwrap();
        let want = a.matmul_i8(&good).unwrap().to_vec().unwrap();
        assert_eq!(a.matmul_i8_packed(&good).unwrap().to_vec().unwrap(), want);
        for bad in [0.5f32, -0.5, 127.5, 128.0, -129.0, f32::NAN, f32::INFINITY] {
            let b = Tensor::from_vec(&dev, &[1.0, bad, 0.0, 2.0], [2, 2]).unwrap();
            let e = a.matmul_i8_packed(&b).and_then(|y| y.to_vec().map(|_| y)).unwrap_err();
            assert!(matches!(e, Error::Shape { op: "matmul_i8", .. }), "{bad}: {e}");
        }
        // In a long input (the fast mode checks it a chunk at a time, vectorised): every whole
        // value in range passes, one bad value anywhere fails.
        let whole: Vec<f32> = (0..2 * 600).map(|k| (k % 256) as f32 - 128.0).collect();
        let long = Tensor::from_vec(&dev, &whole, [2, 600]).unwrap();
        assert!(a.matmul_i8_packed(&long).and_then(|y| y.to_vec()).is_ok(), "{}", dev.name());
        for bad in [0.5f32, 126.99999, -127.99999, 1.0000001, 127.5, 128.0, -128.00002, f32::NAN, f32::NEG_INFINITY] {
            for at in [0, 517, 1199] {
                let mut v = whole.clone();
                v[at] = bad;
                let b = Tensor::from_vec(&dev, &v, [2, 600]).unwrap();
                let e = a.matmul_i8_packed(&b).and_then(|y| y.to_vec().map(|_| y)).unwrap_err();
                assert!(matches!(e, Error::Shape { op: "matmul_i8", .. }), "{bad} at {at}: {e}");
            }
        }
    }
}
