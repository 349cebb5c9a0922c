//! reduce, matmul (and matmul_nbits, in `nbits`), im2col, col2im, depthwise_conv, conv2d, max_pool (and its gradient).

use pixelgrad_core::kernel::windows::WindowProgram;
use pixelgrad_core::{Device, Op, ReduceOp, Tensor, Window};

use crate::harness::{check_all_with, Case, Gen, Read};
use crate::tolerance::{accumulate, ELEMENTWISE, EXACT, GRAD_FACTOR};

type Outcome = std::result::Result<(), String>;

pub async fn reduce(dev: &Device, read: Read) -> Outcome {
    let sym = Gen::Uniform(-1.0, 1.0);
    let shapes: &[&[usize]] = &[&[6, 17], &[3, 4, 5], &[1, 9], &[300, 131]];
    let mut cases = Vec::new();
    for dims in shapes {
        for axis in 0..dims.len() {
            let k = dims[axis];
            for (name, op) in [
                ("sum", ReduceOp::Sum),
                ("max", ReduceOp::Max),
                ("min", ReduceOp::Min),
                ("argmax", ReduceOp::ArgMax),
                ("logsumexp", ReduceOp::LogSumExp),
            ] {
                let case = Case::new("reduce", format!("{name}_{dims:?}_axis{axis}"), move |d, x| {
                    Tensor::apply(d, Op::Reduce { op, axis }, &[&x[0]])
                })
                .input(dims.to_vec(), sym.clone());
                cases.push(match op {
                    ReduceOp::Sum => case.tol(accumulate(k)).grad_tol(ELEMENTWISE),
                    // The extreme is one of the inputs: exact.
                    ReduceOp::Max | ReduceOp::Min => case.tol(EXACT).grad_tol(ELEMENTWISE),
                    ReduceOp::ArgMax => case.tol(EXACT).forward_only(),
                    ReduceOp::LogSumExp => case.tol(accumulate(k)).grad_tol(ELEMENTWISE),
                });
            }
        }
    }
    cases.push(Case::new("reduce", "sum_all_large", |_, x| x[0].sum_all()).input([300, 257], sym.clone()).tol(accumulate(300 * 257)));
    cases.push(
        Case::new("reduce", "sum_long_axis", |_, x| x[0].sum_axis(1, true)).input([2, 100_003], sym.clone()).tol(accumulate(100_003)),
    );
    cases.push(
        Case::new("reduce", "max_long_axis", |_, x| x[0].max_axis(0, true)).input([70_001], sym.clone()).tol(EXACT).grad_tol(ELEMENTWISE),
    );
    // Large magnitudes (exp would overflow without the running maximum) and long axes (tree
    // passes / workgroup trees combine partial log-sum-exps).
    cases.push(
        Case::new("reduce", "logsumexp_large_values", |_, x| x[0].logsumexp(1, true))
            .input([5, 40], Gen::Uniform(-300.0, 300.0))
            .tol(accumulate(40))
            .grad_tol(ELEMENTWISE),
    );
    cases.push(
        Case::new("reduce", "logsumexp_long_axis", |_, x| x[0].logsumexp(1, false)).input([3, 5_000], sym.clone()).tol(accumulate(5_000)),
    );
    cases.push(Case::new("reduce", "mean_axis", |_, x| x[0].mean_axis(-1, false)).input([7, 33], sym.clone()).tol(accumulate(33)));
    // Ties: max gradients go to every tied position on all backends.
    cases.push(
        Case::new("reduce", "max_with_ties", |_, x| x[0].max_axis(1, true)).input([8, 6], Gen::Indices(3)).tol(EXACT).grad_tol(ELEMENTWISE),
    );
    check_all_with(dev, &cases, read).await
}

/// (batch of a, or None for rank 2; batch of b, or None; m; k; n)
type Geom = (Option<usize>, Option<usize>, usize, usize, usize);

pub async fn matmul(dev: &Device, read: Read) -> Outcome {
    let sym = Gen::Uniform(-1.0, 1.0);
    let geoms: &[Geom] = &[
        (None, None, 7, 13, 5),
        (None, None, 1, 1, 1),
        // Square operands: a kernel that ignores a transpose still gets the shapes right.
        (None, None, 6, 6, 6),
        (Some(2), Some(2), 5, 5, 5),
        (Some(3), Some(3), 4, 6, 5),
        (Some(1), Some(3), 4, 6, 5),
        (Some(3), Some(1), 4, 6, 5),
        (Some(3), None, 4, 6, 5),
        (None, Some(3), 4, 6, 5),
        (None, None, 130, 70, 90),
        // Long inner dimension and thin outputs (a GEMV-like shape).
        (None, None, 3, 1025, 2),
        (Some(4), Some(4), 33, 65, 17),
    ];
    let mut cases = Vec::new();
    for &(ba, bb, m, k, n) in geoms {
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let mut da = if ta { vec![k, m] } else { vec![m, k] };
            let mut db = if tb { vec![n, k] } else { vec![k, n] };
            if let Some(b) = ba {
                da.insert(0, b);
            }
            if let Some(b) = bb {
                db.insert(0, b);
            }
            let batch = ba.unwrap_or(1).max(bb.unwrap_or(1));
            cases.push(
                Case::new("matmul", format!("{da:?}{}x{db:?}{}", if ta { "^T" } else { "" }, if tb { "^T" } else { "" }), move |_, x| {
                    x[0].matmul_t(&x[1], ta, tb)
                })
                .input(da, sym.clone())
                .input(db, sym.clone())
                .tol(accumulate(k))
                .grad_tol(accumulate(m.max(n).max(k) * batch).scaled(GRAD_FACTOR)),
            );
        }
    }
    let results = [
        check_all_with(dev, &cases, read).await,
        matmul_i8(dev, read).await,
        widen(dev, read).await,
        narrow_f16(dev, read).await,
        narrow8(dev, read).await,
        quantized(dev, read).await,
        super::nbits::matmul_nbits(dev, read).await,
    ];
    let errors: Vec<String> = results.into_iter().filter_map(|r| r.err()).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

/// [`Op::Widen`] of stored weights, exactly: every i8 and u8 value and a sweep of f16 bit
/// patterns (subnormals, ±0, ±inf, NaN, the extremes), then the widened tensor used by a
/// matmul. On backends without 8-bit / f16 storage `from_i8` / `from_f16` make f32 tensors
/// and `widen` is a clone: the same values are checked.
async fn widen(dev: &Device, read: Read) -> Outcome {
    let check = async |tag: &str, t: pixelgrad_core::Result<Tensor>, want: Vec<f64>| -> Outcome {
        let err = |e: pixelgrad_core::Error| format!("widen {tag}: {e}");
        let y = t.and_then(|t| t.widen()).map_err(err)?;
        if y.storage_dtype() != pixelgrad_core::kernel::DType::F32 {
            return Err(format!("widen {tag}: result has {} storage", y.storage_dtype()));
        }
        let got = crate::harness::read_f64(&y, read).await.map_err(err)?;
        crate::harness::compare(&format!("widen {tag}"), "output", &got, &want, EXACT)
    };
    let i8s: Vec<i8> = (0..=255u8).map(|v| v as i8).collect();
    check("i8", Tensor::from_i8(dev, &i8s, [16, 16]), i8s.iter().map(|&v| v as f64).collect()).await?;
    let u8s: Vec<u8> = (0..=254u8).collect();
    check("u8", Tensor::from_u8(dev, &u8s, [5, 51]), u8s.iter().map(|&v| v as f64).collect()).await?;
    // Every 7th bit pattern (all exponents, both signs) and the special values.
    let mut bits: Vec<u16> = (0..=u16::MAX).step_by(7).collect();
    bits.extend([0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe01]);
    let f16s: Vec<half::f16> = bits.iter().map(|&b| half::f16::from_bits(b)).collect();
    let n = f16s.len();
    check("f16", Tensor::from_f16(dev, &f16s, [n]), f16s.iter().map(|v| v.to_f64()).collect()).await?;
    // A widened weight feeds an f32 op: [2, 3] x [3, 1].
    let w = Tensor::from_i8(dev, &[1, -2, 3, -128, 127, 0], [2, 3]).and_then(|w| w.widen());
    let x = Tensor::from_vec(dev, &[0.5, -0.25, 2.0], [3, 1]);
    let y = w.and_then(|w| w.matmul(&x?)).map_err(|e| format!("widen then matmul: {e}"))?;
    let got = crate::harness::read_f64(&y, read).await.map_err(|e| format!("widen then matmul: {e}"))?;
    crate::harness::compare("widen then matmul", "output", &got, &[7.0, -95.75], EXACT)
}

/// [`Op::NarrowF16`] on backends that have it, exactly against the `half` crate's rounding
/// (nearest, ties to even): a sweep of f32 bit patterns over every exponent, the ties, the
/// edges of the f16 range and of its subnormals, ±inf and NaN; odd and even lengths (two
/// halves per word on the GPU). Read back through [`Op::Widen`].
async fn narrow_f16(dev: &Device, read: Read) -> Outcome {
    if !dev.backend().caps().narrow_f16 {
        return Ok(());
    }
    let mut xs: Vec<f32> = (0..3001u32).map(|i| f32::from_bits(i.wrapping_mul(0x0015_5557))).filter(|v| !v.is_nan()).collect();
    let ulp = 2f32.powi(-11);
    xs.extend([0.0, -0.0, 1.0 + ulp, 1.0 + 3.0 * ulp, 65504.0, 65519.0, 65520.0, -65520.0, 6.0e-8, 2.98e-8, 2.9802322e-8, 1e-30]);
    xs.extend([f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, -6.1e-5, 6.1035156e-5, 3.0517578e-5 * 1.5]);
    for len in [xs.len(), xs.len() - 1] {
        let tag = format!("narrow_f16 [{len}]");
        let err = |e: pixelgrad_core::Error| format!("{tag}: {e}");
        let t = Tensor::from_vec(dev, &xs[..len], [len]).map_err(err)?;
        let h = t.narrow_f16().map_err(err)?;
        if h.storage_dtype() != pixelgrad_core::kernel::DType::F16 {
            return Err(format!("{tag}: result has {} storage", h.storage_dtype()));
        }
        let got = crate::harness::read_f64(&h.widen().map_err(err)?, read).await.map_err(err)?;
        let want: Vec<f64> = xs[..len].iter().map(|&x| half::f16::from_f32(x).to_f64()).collect();
        crate::harness::compare(&tag, "output", &got, &want, EXACT)?;
    }
    // NaN stays NaN.
    let nan = Tensor::from_vec(dev, &[f32::NAN, 1.0, -f32::NAN], [3]).and_then(|t| t.narrow_f16()).and_then(|h| h.widen());
    let got = crate::harness::read_f64(&nan.map_err(|e| format!("narrow_f16 NaN: {e}"))?, read)
        .await
        .map_err(|e| format!("narrow_f16 NaN: {e}"))?;
    if !(got[0].is_nan() && got[1] == 1.0 && got[2].is_nan()) {
        return Err(format!("narrow_f16 NaN: got {got:?}"));
    }
    Ok(())
}

/// [`Op::Narrow8`] on backends with 8-bit storage, exactly: ties (to even), both ends of the
/// i8 and u8 ranges and beyond, ±inf and NaN (0), lengths that fill the last 4-element word
/// or texel partly; read back directly and through [`Op::Widen`].
async fn narrow8(dev: &Device, read: Read) -> Outcome {
    if !dev.backend().caps().int8 {
        return Ok(());
    }
    let mut xs: Vec<f32> = (0..613).map(|i| (i as f32 - 300.0) * 0.75).collect();
    xs.extend([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, -127.5, -128.5, 254.5, 255.5, 0.49999997, -0.0]);
    xs.extend([1e9, -1e9, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, 3.0e-39, 99.99]);
    for signed in [true, false] {
        let (lo, hi) = if signed { (-128.0, 127.0) } else { (0.0, 255.0) };
        for len in [xs.len(), xs.len() - 1, xs.len() - 2, xs.len() - 3, 1] {
            let tag = format!("narrow8 {} [{len}]", if signed { "i8" } else { "u8" });
            let err = |e: pixelgrad_core::Error| format!("{tag}: {e}");
            let t = Tensor::from_vec(dev, &xs[..len], [len]).map_err(err)?;
            let q = t.narrow8(signed).map_err(err)?;
            let want_dtype = if signed { pixelgrad_core::kernel::DType::I8 } else { pixelgrad_core::kernel::DType::U8 };
            if q.storage_dtype() != want_dtype {
                return Err(format!("{tag}: result has {} storage", q.storage_dtype()));
            }
            let want: Vec<f64> =
                xs[..len].iter().map(|&x| if x.is_nan() { 0.0 } else { (x as f64).round_ties_even().clamp(lo, hi) }).collect();
            let got = crate::harness::read_f64(&q, read).await.map_err(err)?;
            crate::harness::compare(&tag, "output", &got, &want, EXACT)?;
            let wide = crate::harness::read_f64(&q.widen().map_err(err)?, read).await.map_err(err)?;
            crate::harness::compare(&format!("{tag} widened"), "output", &wide, &want, EXACT)?;
        }
    }
    Ok(())
}

/// [`pixelgrad_core::quant::QTensor`] on every backend, exactly against host arithmetic:
/// quantisation per tensor and per channel, i8 and u8, with power-of-two scales (so the
/// device's division is exact and only the rounding rule is tested: ties to even, saturation),
/// dequantisation, the integer product's accumulator and its scaled result; the values are
/// 8-bit storage where the backend has 8-bit arithmetic. Parameters that cannot be valid are
/// typed errors.
async fn quantized(dev: &Device, read: Read) -> Outcome {
    use pixelgrad_core::kernel::DType;
    use pixelgrad_core::quant::{QTensor, QuantParams};
    fn err(tag: &str) -> impl Fn(pixelgrad_core::Error) -> String + '_ {
        move |e| format!("quant {tag}: {e}")
    }
    // Bad parameters.
    let bad = [
        QuantParams::per_tensor(DType::F32, 1.0, 0).is_err(),
        QuantParams::per_tensor(DType::U8, 0.0, 0).is_err(),
        QuantParams::per_tensor(DType::U8, f32::NAN, 0).is_err(),
        QuantParams::per_tensor(DType::I8, 1.0, 128).is_err(),
        QuantParams::per_channel(DType::U8, 0, vec![1.0, 2.0], vec![0]).is_err(),
        QuantParams::from_range(DType::U8, 2.0, 1.0, false).is_err(),
    ];
    if bad.iter().any(|b| !b) {
        return Err(format!("quant: invalid parameters accepted: {bad:?}"));
    }
    let x: Vec<f32> = (0..4 * 9).map(|i| ((i * 37) % 29) as f32 * 0.375 - 5.0 + if i % 5 == 0 { 0.0625 } else { 0.0 }).collect();
    let xt = Tensor::from_vec(dev, &x, [4, 9]).map_err(err("upload"))?;
    let per_channel = QuantParams::per_channel(DType::I8, 0, vec![0.25, 0.5, 0.125, 0.0625], vec![0, -3, 5, 127]);
    if QTensor::quantize(&xt, QuantParams::per_channel(DType::I8, 1, vec![0.25; 4], vec![0; 4]).unwrap()).is_ok() {
        return Err("quant: 4 scales along an axis of 9 accepted".into());
    }
    let cases = [
        ("u8 per tensor", QuantParams::per_tensor(DType::U8, 0.125, 37).unwrap()),
        ("i8 per tensor", QuantParams::per_tensor(DType::I8, 0.0625, -10).unwrap()),
        ("i8 per channel", per_channel.map_err(err("params"))?),
    ];
    for (tag, p) in cases {
        let q = QTensor::quantize(&xt, p.clone()).map_err(err(tag))?;
        let want_storage = if dev.backend().caps().int8 { p.dtype } else { DType::F32 };
        if q.values().storage_dtype() != want_storage {
            return Err(format!("quant {tag}: values in {} storage, want {want_storage}", q.values().storage_dtype()));
        }
        let (lo, hi) = if p.dtype == DType::I8 { (-128.0, 127.0) } else { (0.0, 255.0) };
        let k = |i: usize| if p.axis.is_some() { i / 9 } else { 0 };
        let want: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, &v)| ((v as f64 / p.scale[k(i)] as f64).round_ties_even() + p.zero_point[k(i)] as f64).clamp(lo, hi))
            .collect();
        let got = crate::harness::read_f64(q.values(), read).await.map_err(err(tag))?;
        crate::harness::compare(&format!("quant {tag}"), "values", &got, &want, EXACT)?;
        let deq: Vec<f64> = want.iter().enumerate().map(|(i, &q)| (q - p.zero_point[k(i)] as f64) * p.scale[k(i)] as f64).collect();
        let got = crate::harness::read_f64(&q.dequantize().map_err(err(tag))?, read).await.map_err(err(tag))?;
        crate::harness::compare(&format!("quant {tag} dequantised"), "output", &got, &deq, EXACT)?;
    }
    // The integer product: activations [2, 3, 4] u8 per tensor, weights [4, 5] i8 per channel.
    let av: Vec<u8> = (0..24).map(|i| ((i * 53 + 7) % 256) as u8).collect();
    let wv: Vec<i8> = (0..20i32).map(|i| ((i * 71 + 3) % 256 - 128) as i8).collect();
    let (za, zw) = (200i32, [0i32, 3, -7, 127, -128]);
    let a = Tensor::from_u8(dev, &av, [2, 3, 4]).and_then(|t| QTensor::from_parts(t, QuantParams::per_tensor(DType::U8, 0.5, za)?));
    let w = Tensor::from_i8(dev, &wv, [4, 5])
        .and_then(|t| QTensor::from_parts(t, QuantParams::per_channel(DType::I8, 1, vec![0.25, 0.5, 1.0, 2.0, 0.125], zw.to_vec())?));
    let (a, w) = (a.map_err(err("matmul inputs"))?, w.map_err(err("matmul inputs"))?);
    let mut acc = Vec::new();
    for b in 0..2 {
        for m in 0..3 {
            for n in 0..5 {
                let s: i64 = (0..4).map(|k| (av[b * 12 + m * 4 + k] as i64 - za as i64) * (wv[k * 5 + n] as i64 - zw[n] as i64)).sum();
                acc.push(s as f64);
            }
        }
    }
    let got = crate::harness::read_f64(&a.matmul_acc(&w).map_err(err("matmul_acc"))?, read).await.map_err(err("matmul_acc"))?;
    crate::harness::compare("quant matmul_acc", "output", &got, &acc, EXACT)?;
    let scale = [0.25f64, 0.5, 1.0, 2.0, 0.125];
    let want: Vec<f64> = acc.iter().enumerate().map(|(i, &v)| v * 0.5 * scale[i % 5]).collect();
    let got = crate::harness::read_f64(&a.matmul(&w).map_err(err("matmul"))?, read).await.map_err(err("matmul"))?;
    crate::harness::compare("quant matmul", "output", &got, &want, EXACT)?;
    if a.matmul_acc(&a).is_ok() {
        return Err("quant: a [2, 3, 4] x [2, 3, 4] product accepted".into());
    }
    // Calibrated parameters bring every value back within half a step.
    let p = QuantParams::calibrate_async(&xt, DType::U8, None, false).await.map_err(err("calibrate"))?;
    let back = QTensor::quantize(&xt, p.clone()).and_then(|q| q.dequantize()).map_err(err("calibrate"))?;
    let got = crate::harness::read_f64(&back, read).await.map_err(err("calibrate"))?;
    let worst = got.iter().zip(&x).map(|(g, &v)| (g - v as f64).abs()).fold(0.0, f64::max);
    if worst > p.scale[0] as f64 * 0.5 + 1e-6 {
        return Err(format!("quant calibrate: a value came back {worst} away with scale {}", p.scale[0]));
    }
    Ok(())
}

/// [`Op::MatMulI8`] on backends with 8-bit storage (`caps.int8`), exactly against an
/// integer product computed here: i8 and u8 weights, a batch, weights broadcast over a batch
/// of activations; `matmul_i8_packed` (activations in `[-128, 127]`, WebGPU's `dot4I8Packed`
/// where the adapter has it) on the same shapes. Backends without 8-bit storage skip it.
async fn matmul_i8(dev: &Device, read: Read) -> Outcome {
    if !dev.backend().caps().int8 {
        return Ok(());
    }
    let run = async |a_dims: &[usize], b_dims: &[usize], signed: bool, packed: bool| -> Outcome {
        let name = if packed { "matmul_i8_packed" } else { "matmul_i8" };
        let tag = format!("{name} {a_dims:?}x{b_dims:?} {}", if signed { "i8" } else { "u8" });
        let err = |e: pixelgrad_core::Error| format!("{tag}: {e}");
        let na: usize = a_dims.iter().product();
        let nb: usize = b_dims.iter().product();
        // Deterministic values over the whole 8-bit range and whole numbers in -255..=255
        // (-128..=127 for the packed product).
        let av: Vec<i64> = (0..na).map(|i| ((i * 37 + 11) % 256) as i64 - if signed { 128 } else { 0 }).collect();
        let (span, off) = if packed { (256, 128) } else { (511, 255) };
        let bv: Vec<i64> = (0..nb).map(|i| ((i * 101 + 7) % span) as i64 - off).collect();
        let a = if signed {
            Tensor::from_i8(dev, &av.iter().map(|&v| v as i8).collect::<Vec<_>>(), a_dims.to_vec())
        } else {
            Tensor::from_u8(dev, &av.iter().map(|&v| v as u8).collect::<Vec<_>>(), a_dims.to_vec())
        }
        .map_err(err)?;
        let b = Tensor::from_vec(dev, &bv.iter().map(|&v| v as f32).collect::<Vec<_>>(), b_dims.to_vec()).map_err(err)?;
        let y = if packed { a.matmul_i8_packed(&b) } else { a.matmul_i8(&b) }.map_err(err)?;
        let got = crate::harness::read_f64(&y, read).await.map_err(err)?;
        let (m, k) = (a_dims[a_dims.len() - 2], a_dims[a_dims.len() - 1]);
        let n = b_dims[b_dims.len() - 1];
        let ga = if a_dims.len() == 3 { a_dims[0] } else { 1 };
        let gb = if b_dims.len() == 3 { b_dims[0] } else { 1 };
        let mut want = Vec::new();
        for g in 0..ga.max(gb) {
            let (ao, bo) = (if ga > 1 { g * m * k } else { 0 }, if gb > 1 { g * k * n } else { 0 });
            for i in 0..m {
                for j in 0..n {
                    let acc: i64 = (0..k).map(|p| av[ao + i * k + p] * bv[bo + p * n + j]).sum();
                    want.push(acc as i32 as f32 as f64);
                }
            }
        }
        crate::harness::compare(&tag, "output", &got, &want, EXACT)
    };
    for packed in [false, true] {
        run(&[3, 7], &[7, 5], true, packed).await?;
        run(&[17, 9], &[9, 33], false, packed).await?;
        run(&[2, 5, 6], &[2, 6, 3], true, packed).await?;
        run(&[4, 13], &[3, 13, 6], false, packed).await?;
    }
    Ok(())
}

fn windows() -> Vec<(&'static str, Vec<usize>, Window)> {
    vec![
        ("k3s1p0", vec![2, 3, 7, 6], Window::square(3, 1, 0)),
        ("k3s2p1", vec![2, 3, 7, 6], Window::square(3, 2, 1)),
        ("k2x3_s1x2_p1x0", vec![1, 2, 5, 8], Window { kh: 2, kw: 3, stride_h: 1, stride_w: 2, pad_h: 1, pad_w: 0 }),
        ("k1", vec![2, 2, 4, 4], Window::square(1, 1, 0)),
        ("k5s1p2_large", vec![4, 8, 20, 20], Window::square(5, 1, 2)),
    ]
}

pub async fn im2col(dev: &Device, read: Read) -> Outcome {
    let cases: Vec<Case> = windows()
        .into_iter()
        .map(|(name, dims, w)| {
            Case::new("im2col", name, move |_, x| x[0].im2col(w))
                .input(dims, Gen::Uniform(-1.0, 1.0))
                .tol(EXACT)
                .grad_tol(accumulate(w.kh * w.kw))
        })
        .collect();
    check_all_with(dev, &cases, read).await
}

pub async fn col2im(dev: &Device, read: Read) -> Outcome {
    let cases: Vec<Case> = windows()
        .into_iter()
        .map(|(name, dims, w)| {
            let (oh, ow) = w.out_hw(dims[2], dims[3]).unwrap_or((1, 1));
            let (h, wd) = (dims[2], dims[3]);
            Case::new("col2im", name, move |_, x| x[0].col2im(w, h, wd))
                .input(vec![dims[0], dims[1] * w.kh * w.kw, oh * ow], Gen::Uniform(-1.0, 1.0))
                .tol(accumulate(w.kh * w.kw))
                .grad_tol(EXACT)
        })
        .collect();
    check_all_with(dev, &cases, read).await
}

/// Depthwise convolution on the im2col windows (plus a 7x7 stride-2 case and a 1x1 one), weights
/// `[C, 1, kh, kw]`; the gradients run through im2col / col2im.
pub async fn depthwise(dev: &Device, read: Read) -> Outcome {
    let mut ws = windows();
    ws.push(("k7s2p3", vec![1, 4, 11, 9], Window::square(7, 2, 3)));
    let cases: Vec<Case> = ws
        .into_iter()
        .map(|(name, dims, w)| {
            let c = dims[1];
            Case::new("depthwise_conv", name, move |_, x| x[0].depthwise_conv(&x[1], w))
                .input(dims.clone(), Gen::Uniform(-1.0, 1.0))
                .input(vec![c, 1, w.kh, w.kw], Gen::Uniform(-1.0, 1.0))
                .tol(accumulate(w.kh * w.kw))
                .grad_tol(accumulate(w.kh * w.kw * dims[0] * dims[2] * dims[3]).scaled(GRAD_FACTOR))
        })
        .collect();
    check_all_with(dev, &cases, read).await
}

/// Dense convolution in one op (`Tensor::conv`) on the im2col windows, plus 3x3 stride-1
/// windows of every padding with odd and even output sizes, more channels, and an image
/// smaller than one 2x2 output tile (the CPU runs those as Winograd F(2x2, 3x3)); weights
/// `[M, C, kh, kw]`. Backends without `caps.conv` have nothing to check here (callers use
/// im2col + matmul there, covered above).
pub async fn conv(dev: &Device, read: Read) -> Outcome {
    if !dev.backend().caps().conv {
        return Ok(());
    }
    let mut ws: Vec<_> = windows().into_iter().map(|(name, dims, w)| (name, dims, w, 4)).collect();
    ws.push(("k3s1p1_c16", vec![2, 16, 9, 13], Window::square(3, 1, 1), 8));
    ws.push(("k3s1p2_odd", vec![1, 5, 5, 7], Window::square(3, 1, 2), 3));
    ws.push(("k3s1p1_1x1_image", vec![1, 2, 1, 1], Window::square(3, 1, 1), 2));
    ws.push(("k3x3_s1_p0x1", vec![1, 3, 6, 4], Window { kh: 3, kw: 3, stride_h: 1, stride_w: 1, pad_h: 0, pad_w: 1 }, 5));
    let cases: Vec<Case> = ws
        .into_iter()
        .map(|(name, dims, w, m)| {
            let terms = dims[1] * w.kh * w.kw;
            // Winograd adds up to four inputs before each product and four products after.
            Case::new("conv2d", name, move |_, x| x[0].conv(&x[1], w))
                .input(dims.clone(), Gen::Uniform(-1.0, 1.0))
                .input(vec![m, dims[1], w.kh, w.kw], Gen::Uniform(-1.0, 1.0))
                .tol(accumulate(terms * 16))
                .grad_tol(accumulate(terms * 16 * dims[0] * dims[2] * dims[3]).scaled(GRAD_FACTOR))
        })
        .collect();
    check_all_with(dev, &cases, read).await
}

/// Max pooling on the im2col windows whose padding is smaller than the window (plus 2x2
/// stride 2, a 3x3 stride 1 with overlapping windows, and a window as large as the image),
/// once on random values and once on whole numbers in 0..3, so that most windows hold ties and
/// the gradient splits between them. The gradient is `max_pool_grad`. Also max pooling as the
/// generic `Op::Window`, and average pooling (`Tensor::avg_pool`, a window program), with gradients.
pub async fn max_pool(dev: &Device, read: Read) -> Outcome {
    let mut ws: Vec<_> = windows().into_iter().filter(|(_, _, w)| w.pad_h < w.kh && w.pad_w < w.kw).collect();
    ws.push(("k2s2", vec![2, 3, 8, 6], Window::square(2, 2, 0)));
    // Rows of even length (WebGL's texel-at-a-time gradient: 14 straddles texels), H odd.
    ws.push(("k2s2_w8", vec![2, 3, 7, 8], Window::square(2, 2, 0)));
    ws.push(("k2s2_w14", vec![1, 3, 5, 14], Window::square(2, 2, 0)));
    // Odd rows (the cnn's 11x11 maps; WebGL's per-pixel four-tap gradient): the last column
    // and row lie in no window.
    ws.push(("k2s2_w11", vec![2, 3, 11, 11], Window::square(2, 2, 0)));
    ws.push(("k2s2_w7", vec![1, 2, 6, 7], Window::square(2, 2, 0)));
    ws.push(("k3s1_overlap", vec![1, 2, 6, 7], Window::square(3, 1, 0)));
    ws.push(("whole_image", vec![2, 2, 5, 4], Window { kh: 5, kw: 4, stride_h: 1, stride_w: 1, pad_h: 0, pad_w: 0 }));
    let mut cases = Vec::new();
    for (name, dims, w) in ws {
        // Each pixel receives from at most ceil(kh / sh) * ceil(kw / sw) windows.
        let fan = w.kh.div_ceil(w.stride_h) * w.kw.div_ceil(w.stride_w);
        for (suffix, gen) in [("", Gen::Uniform(-1.0, 1.0)), ("_ties", Gen::Indices(3))] {
            cases.push(
                Case::new("max_pool", format!("{name}{suffix}"), move |_, x| x[0].max_pool(w))
                    .input(dims.clone(), gen)
                    .tol(EXACT)
                    .grad_tol(accumulate(fan)),
            );
        }
        // The same pooling as the generic window op (Op::Window), its gradient the program
        // WindowProgram::grad names.
        cases.push(
            Case::new("max_pool", format!("{name}_program"), move |_, x| x[0].window_program(WindowProgram::MaxPool, w, &[]))
                .input(dims.clone(), Gen::Indices(3))
                .tol(EXACT)
                .grad_tol(accumulate(fan)),
        );
    }
    // Average pooling, one pass (Op::Window, WindowProgram::AvgPool), and its gradient.
    for (name, dims, w) in [
        ("avg_k2s2", vec![2, 3, 8, 6], Window::square(2, 2, 0)),
        ("avg_k3s1p1", vec![1, 2, 6, 7], Window::square(3, 1, 1)),
        ("avg_k3s2p1_odd", vec![2, 2, 7, 5], Window { kh: 3, kw: 2, stride_h: 2, stride_w: 1, pad_h: 1, pad_w: 1 }),
    ] {
        let fan = w.kh.div_ceil(w.stride_h) * w.kw.div_ceil(w.stride_w);
        cases.push(
            Case::new("max_pool", name, move |_, x| x[0].avg_pool(w))
                .input(dims, Gen::Uniform(-1.0, 1.0))
                .tol(accumulate(w.kh * w.kw))
                .grad_tol(accumulate(fan)),
        );
    }
    check_all_with(dev, &cases, read).await
}
