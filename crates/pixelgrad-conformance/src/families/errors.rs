//! Bad input gives typed errors, never a panic, on every backend. GPU backends may report an
//! error when the op is queued or when it is read back; both count. Shape errors are caught by
//! core before any backend runs; bad index *values* (gather / scatter-add) are a typed error on
//! the CPU backends and must at least not panic elsewhere.

use pixelgrad_core::{BackendKind, Device, Error, Result, Tensor, MAX_RANK};

use crate::harness::{read_f64, Read};

type Outcome = std::result::Result<(), String>;

/// The op and a read of its result, so lazily-executing backends get to report too.
async fn run_and_read(read: Read, f: impl FnOnce() -> Result<Tensor>) -> Result<Vec<f64>> {
    read_f64(&f()?, read).await
}

fn expect_err(name: &str, dev: &Device, want_op: &str, shape_error: bool, r: Result<Vec<f64>>) -> std::result::Result<(), String> {
    match r {
        Ok(v) => Err(format!("errors/{name}: expected an error on {}, got {} values", dev.name(), v.len())),
        Err(e) => {
            if shape_error && !matches!(e, Error::Shape { .. }) {
                return Err(format!("errors/{name}: expected Error::Shape, got {e:?}"));
            }
            if !e.to_string().contains(want_op) {
                return Err(format!("errors/{name}: message does not name `{want_op}`: {e}"));
            }
            Ok(())
        }
    }
}

pub async fn errors(dev: &Device, read: Read) -> Outcome {
    let t = |data: &[f32], s: &[usize]| Tensor::from_vec(dev, data, s.to_vec()).map_err(|e| e.to_string());
    let a = t(&[1.0; 6], &[2, 3])?;
    let b = t(&[1.0; 8], &[2, 4])?;
    let m = t(&[1.0; 12], &[4, 3])?;
    let x = t(&[0.5; 10], &[2, 5])?;
    let mut errs = Vec::new();
    let mut check = |r: std::result::Result<(), String>| {
        if let Err(e) = r {
            errs.push(e);
        }
    };
    check(expect_err("binary_shape_mismatch", dev, "binary", true, run_and_read(read, || a.add(&b)).await));
    check(expect_err("matmul_inner_mismatch", dev, "matmul", true, run_and_read(read, || a.matmul(&m)).await));
    check(expect_err("matmul_rank1", dev, "matmul", true, run_and_read(read, || a.reshape([6])?.matmul(&m)).await));
    check(expect_err("reduce_bad_axis", dev, "reduce", true, run_and_read(read, || a.sum_axis(2, false)).await));
    check(expect_err("reduce_bad_negative_axis", dev, "reduce", true, run_and_read(read, || a.sum_axis(-3, false)).await));
    check(expect_err("permute_repeated_axis", dev, "permute", true, run_and_read(read, || a.permute(&[0, 0])).await));
    check(expect_err("permute_wrong_length", dev, "permute", true, run_and_read(read, || a.permute(&[1, 0, 2])).await));
    check(expect_err("slice_out_of_bounds", dev, "slice", true, run_and_read(read, || a.slice(1, 2, 5)).await));
    check(expect_err("concat_mismatch", dev, "concat", true, run_and_read(read, || Tensor::concat(&[&a, &m], 1)).await));
    check(expect_err("expand_bad", dev, "expand", true, run_and_read(read, || a.broadcast_to([4, 3])).await));
    check(expect_err(
        "im2col_too_big",
        dev,
        "im2col",
        true,
        run_and_read(read, || x.reshape([1, 1, 2, 5])?.im2col(pixelgrad_core::Window::square(3, 1, 0))).await,
    ));
    check(expect_err("where_mismatch", dev, "where", true, run_and_read(read, || Tensor::select(&a, &b, &a)).await));
    check(expect_err("reshape_count", dev, "reshape", true, run_and_read(read, || a.reshape([4, 2])).await));
    // The rank limit is the engine's (pixelgrad_core::MAX_RANK), the same on every backend:
    // MAX_RANK axes work (with broadcasting on each), one more is a shape error.
    let full: Vec<usize> = (0..MAX_RANK).map(|i| 1 + i % 2).collect();
    let n: usize = full.iter().product();
    let deep = t(&vec![1.5; n], &full)?;
    let mut half = full.clone();
    half[MAX_RANK - 2] = 1;
    let shallow = t(&vec![2.0; n / full[MAX_RANK - 2]], &half)?;
    match run_and_read(read, || deep.mul(&shallow)).await {
        Ok(v) if v.len() == n && v.iter().all(|&x| x == 3.0) => {}
        Ok(v) => check(Err(format!("errors/max_rank: {MAX_RANK} axes gave wrong values {:?}", &v[..v.len().min(4)]))),
        Err(e) => check(Err(format!("errors/max_rank: {MAX_RANK} axes must work: {e}"))),
    }
    check(expect_err("rank_above_max", dev, "reshape", true, run_and_read(read, || deep.reshape([vec![1], full.clone()].concat())).await));
    check(expect_err("rank_above_max_fill", dev, "fill", true, run_and_read(read, || Tensor::zeros(dev, vec![1; MAX_RANK + 1])).await));
    // cross_entropy picks classes with a one-hot mask: a class outside 0..C, or fractional,
    // must make the loss NaN on every backend (never silently pick nothing).
    let logits = t(&[0.5, -1.0, 2.0, 0.0, 1.0, -0.5], &[2, 3])?;
    for bad in [3.0, -1.0, 1.5] {
        let y = t(&[0.0, bad], &[2])?;
        match run_and_read(read, || pixelgrad_core::composite::cross_entropy(&logits, &y)).await {
            Ok(v) if v.len() == 1 && v[0].is_nan() => {}
            other => check(Err(format!("errors/cross_entropy_bad_class {bad}: expected a NaN loss, got {other:?}"))),
        }
    }
    // Masked classes (logits of -inf outside the target) are a valid input: a finite loss,
    // and a gradient of exactly 0 at the masked logits, never NaN.
    let masked = t(&[f32::NEG_INFINITY, 1.0, 2.0, 0.5, f32::NEG_INFINITY, f32::NEG_INFINITY], &[2, 3])?.with_grad();
    let y = t(&[2.0, 0.0], &[2])?;
    let want = (1.0f64.exp() + 2.0f64.exp()).ln() / 2.0 - 1.0;
    let loss = pixelgrad_core::composite::cross_entropy(&masked, &y);
    match run_and_read(read, || loss.clone()).await {
        Ok(v) if v.len() == 1 && (v[0] - want).abs() < 1e-5 => {}
        other => check(Err(format!("errors/cross_entropy_masked: expected {want}, got {other:?}"))),
    }
    let grad =
        loss.and_then(|l| l.backward()).and_then(|_| masked.grad().ok_or_else(|| Error::Autodiff("no gradient for the logits".into())));
    match run_and_read(read, || grad).await {
        Ok(g) if g.len() == 6 && [0, 4, 5].iter().all(|&i| g[i] == 0.0) && g.iter().all(|x| x.is_finite()) => {}
        other => check(Err(format!("errors/cross_entropy_masked: expected 0 gradients at masked logits, got {other:?}"))),
    }
    // Index values are only known at run time. The CPU backends check them and must return a
    // typed error; a GPU backend cannot without a blocking readback of every index tensor, so
    // there any result is accepted as long as nothing panics and the device stays usable.
    let strict = dev.kind() == BackendKind::Cpu;
    let mut check_index = |name: &str, op: &str, r: Result<Vec<f64>>| {
        if strict {
            check(expect_err(name, dev, op, false, r));
        }
    };
    let bad_idx = [
        ("gather_out_of_range", vec![0.0, 5.0]),
        ("gather_negative", vec![-1.0, 0.0]),
        ("gather_fractional", vec![1.5, 0.0]),
        ("gather_nan", vec![f32::NAN, 0.0]),
    ];
    for (name, v) in bad_idx {
        let idx = t(&v, &[2, 1])?;
        check_index(name, "gather", run_and_read(read, || x.gather(1, &idx)).await);
    }
    let idx = t(&[0.0, 1.0, 2.0, 3.0, 9.0, 0.0, 1.0, 2.0, 3.0, 4.0], &[2, 5])?;
    check_index("scatter_add_out_of_range", "scatter_add", run_and_read(read, || x.scatter_add(1, 5, &idx)).await);
    // Mixing devices is an error, not a silent copy.
    let other = Device::new(pixelgrad_cpu::CpuBackend::reference());
    let y = t(&[1.0; 6], &[2, 3])?;
    let z = Tensor::from_vec(&other, &[1.0; 6], [2, 3]).map_err(|e| e.to_string())?;
    match y.add(&z) {
        Err(Error::BackendMismatch { .. }) => {}
        r => errs.push(format!("errors/backend_mismatch: expected Error::BackendMismatch, got {:?}", r.map(|_| ()))),
    }
    // And a backward from a non-scalar is an autodiff error.
    let g = y.with_grad().mul_scalar(2.0).map_err(|e| e.to_string())?;
    if !matches!(g.backward(), Err(Error::Autodiff(_))) {
        errs.push("errors/backward_non_scalar: expected Error::Autodiff".into());
    }
    // The backend is still usable after all of that.
    let ok = run_and_read(read, || a.add(&a)).await.map_err(|e| format!("errors/still_usable: {e}"))?;
    if ok != vec![2.0; 6] {
        errs.push(format!("errors/still_usable: 1+1 gave {ok:?}"));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("\n  "))
    }
}
