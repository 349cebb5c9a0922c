//! Every elementwise function on edge inputs: ±0, tiny and huge magnitudes, whole numbers and
//! halves, ±inf and NaN ([`EDGE_VALUES`], and [`EDGE_PARAMS`] for the scalar arguments of
//! `powf`, `max_scalar`, ...). Each result must have the class of the f64 reference rounded to
//! f32 (NaN, +inf, -inf or finite) and, when finite, be within the function's edge tolerance
//! ([`crate::tolerance::edge`]). Integer powers with an integer result below 2^24 must be
//! exact. Binary functions run on every pair of edge values, once with equal shapes and once
//! broadcast (`[n, 1]` against `[n]`), so both kernel paths are covered.

use pixelgrad_core::kernel::defs::{EDGE_PARAMS, EDGE_VALUES};
use pixelgrad_core::{BinaryOp, Device, Result, Tensor, UnaryOp};

use crate::harness::{read_f64, reference_device, Read};
use crate::tolerance::edge;

type Outcome = std::result::Result<(), String>;

#[derive(Debug, PartialEq)]
enum Class {
    Nan,
    PosInf,
    NegInf,
    Finite,
}

fn class(v: f64) -> Class {
    if v.is_nan() {
        Class::Nan
    } else if v == f64::INFINITY {
        Class::PosInf
    } else if v == f64::NEG_INFINITY {
        Class::NegInf
    } else {
        Class::Finite
    }
}

/// Checks `got` against the reference at one point; `inputs` are shown in the message.
fn judge(func: &str, inputs: &[f64], got: f64, want: f64, failures: &mut Vec<String>) {
    // Classes are decided in f32, the type every backend stores (exp(100) overflows in f32,
    // not in f64; the f64 reference judged against itself rounds the same way).
    let (got, want32) = (got as f32 as f64, want as f32 as f64);
    let at = || format!("{func}({})", inputs.iter().map(|&v| format!("{:e}", v as f32)).collect::<Vec<_>>().join(", "));
    if class(got) != class(want32) {
        failures.push(format!("{}: got {got:e}, reference {want:e} ({:?} expected, {:?} got)", at(), class(want32), class(got)));
        return;
    }
    if class(got) != Class::Finite {
        return;
    }
    let Some(tol) = edge(func, inputs[0]) else {
        failures.push(format!("{func}: no row in tolerance::edge; add this function's edge tolerance there"));
        return;
    };
    // Exact integer powers: whole base and exponent, |exponent| <= 64, integer result < 2^24.
    let exact_power = func.starts_with("pow")
        && inputs.len() == 2
        && inputs.iter().all(|v| v.fract() == 0.0)
        && inputs[1].abs() <= 64.0
        && want.fract() == 0.0
        && want.abs() < (1u64 << 24) as f64;
    let bounded = !matches!(func, "sin" | "cos") || got.abs() <= 1.0;
    let ok = bounded && if exact_power { got == want } else { tol.accepts(got, want) };
    if !ok {
        let bound = if exact_power { 0.0 } else { tol.bound(want) };
        failures.push(format!("{}: got {got:e}, reference {want:e} (allowed difference {bound:e})", at()));
    }
}

/// Runs `f` on `dev` and on the reference with the same inputs and judges every element;
/// `params` (the op's scalar arguments) are appended to each point's inputs, so `powf(x, p)`
/// is judged like `pow(a, b)`.
async fn run_case(
    dev: &Device,
    read: Read,
    func: &str,
    inputs: &[(Vec<f64>, Vec<usize>)],
    params: &[f64],
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    failures: &mut Vec<String>,
) -> std::result::Result<(), String> {
    let reference = reference_device();
    let make = |d: &Device| -> Result<Vec<Tensor>> { inputs.iter().map(|(v, s)| Tensor::from_f64(d, v, s.clone())).collect() };
    let err = |e: pixelgrad_core::Error| format!("{func}: {e}");
    let got_t = f(&make(dev).map_err(err)?).map_err(err)?;
    let want_t = f(&make(&reference).map_err(err)?).map_err(err)?;
    let got = read_f64(&got_t, read).await.map_err(err)?;
    let want = read_f64(&want_t, read).await.map_err(err)?;
    let out_dims = want_t.dims().to_vec();
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        // The inputs at output position i (inputs broadcast by their own shapes).
        let mut point: Vec<f64> = inputs.iter().map(|(v, s)| v[broadcast_index(i, &out_dims, s)]).collect();
        point.extend_from_slice(params);
        judge(func, &point, g, w, failures);
    }
    Ok(())
}

/// Flat index into an input of shape `dims` broadcast to `out` at output index `i`.
fn broadcast_index(mut i: usize, out: &[usize], dims: &[usize]) -> usize {
    let off = out.len() - dims.len();
    let mut idx = 0;
    let mut stride = 1;
    for a in (0..out.len()).rev() {
        let c = i % out[a];
        i /= out[a];
        if a >= off {
            let d = dims[a - off];
            if d != 1 {
                idx += c * stride;
            }
            stride *= d;
        }
    }
    idx
}

fn values() -> Vec<f64> {
    EDGE_VALUES.iter().map(|&v| v as f64).collect()
}

/// Parameter sets each unary function is run with.
fn param_sets(op: UnaryOp) -> Vec<UnaryOp> {
    match op {
        UnaryOp::Powf(_) => EDGE_PARAMS.iter().map(|&p| UnaryOp::Powf(p)).collect(),
        UnaryOp::MaxScalar(_) => EDGE_PARAMS.iter().map(|&p| UnaryOp::MaxScalar(p)).collect(),
        UnaryOp::MinScalar(_) => EDGE_PARAMS.iter().map(|&p| UnaryOp::MinScalar(p)).collect(),
        UnaryOp::GtScalar(_) => EDGE_PARAMS.iter().map(|&p| UnaryOp::GtScalar(p)).collect(),
        UnaryOp::DivScalar(_) => EDGE_PARAMS.iter().map(|&p| UnaryOp::DivScalar(p)).collect(),
        UnaryOp::Affine { .. } => vec![
            UnaryOp::Affine { mul: 2.0, add: 0.5 },
            UnaryOp::Affine { mul: -1.0, add: 0.0 },
            UnaryOp::Affine { mul: 0.0, add: 1.0 },
            UnaryOp::Affine { mul: f32::INFINITY, add: 0.0 },
        ],
        other => vec![other],
    }
}

pub async fn edges(dev: &Device, read: Read) -> Outcome {
    let xs = values();
    let n = xs.len();
    let mut failures = Vec::new();
    for op in UnaryOp::ALL {
        for op in param_sets(op) {
            let params: Vec<f64> = op.params().iter().map(|&p| p as f64).collect();
            let inputs = vec![(xs.clone(), vec![n])];
            run_case(dev, read, op.name(), &inputs, &params, &|t| t[0].unary(op), &mut failures).await?;
        }
    }
    // Every pair, equal shapes: a[i * n + j] = x[i], b[i * n + j] = x[j].
    let a: Vec<f64> = (0..n * n).map(|k| xs[k / n]).collect();
    let b: Vec<f64> = (0..n * n).map(|k| xs[k % n]).collect();
    for op in BinaryOp::ALL {
        let equal = vec![(a.clone(), vec![n * n]), (b.clone(), vec![n * n])];
        run_case(dev, read, op.name(), &equal, &[], &|t| t[0].binary(op, &t[1]), &mut failures).await?;
        let broadcast = vec![(xs.clone(), vec![n, 1]), (xs.clone(), vec![n])];
        run_case(dev, read, op.name(), &broadcast, &[], &|t| t[0].binary(op, &t[1]), &mut failures).await?;
    }
    // where: the condition takes every edge value (NaN counts as nonzero).
    let cond = vec![(xs.clone(), vec![n]), (vec![1.0], vec![]), (vec![2.0], vec![1])];
    run_case(dev, read, "where", &cond, &[], &|t| Tensor::select(&t[0], &t[1], &t[2]), &mut failures).await?;
    if failures.is_empty() {
        Ok(())
    } else {
        let total = failures.len();
        failures.truncate(60);
        Err(format!("{total} edge cases differ from the f64 reference:\n  {}", failures.join("\n  ")))
    }
}
