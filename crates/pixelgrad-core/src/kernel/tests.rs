//! The lowering checked on the host: every definition, lowered to device primitives and
//! evaluated in f32 (raw built-ins as Rust's functions), against the unlowered definition
//! evaluated in f64, on the edge inputs. This tests the edge-case tables of `lower` without a
//! GPU; the conformance suite's `edges` family then runs the same inputs on every backend.

use super::defs::{self, EDGE_PARAMS, EDGE_VALUES};
use super::eval::eval_one;
use super::ir::Kernel;
use super::lower::{is_lowered, lower};
use crate::{BinaryOp, UnaryOp};

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

/// Checks the lowered kernel (f32) against the definition (f64) at one point.
fn check_point(name: &str, k: &Kernel, low: &Kernel, xs: &[f32], ps: &[f32], failures: &mut Vec<String>) {
    let x64: Vec<f64> = xs.iter().map(|&v| v as f64).collect();
    let p64: Vec<f64> = ps.iter().map(|&v| v as f64).collect();
    let want = eval_one::<f64>(k, &x64, &p64).unwrap();
    // The reference rounded to f32 decides the class (exp(89) overflows in f32, not in f64).
    let want32 = want as f32 as f64;
    let got = eval_one::<f32>(low, xs, ps).unwrap() as f64;
    let direct = eval_one::<f32>(k, xs, ps).unwrap() as f64;
    let mut bad = |what: &str, v: f64| {
        if class(v) != class(want32) {
            failures.push(format!("{name}{xs:?} params {ps:?}: {what} {v:e}, reference {want:e}"));
            return;
        }
        if class(v) != Class::Finite {
            return;
        }
        let large_trig = (name.contains("sin") || name.contains("cos")) && xs[0].abs() > 102_900.0;
        // pow multiplies roundings: squaring for whole parts up to 64 (up to 63 ulp), or
        // 2^(y log2|x|) beyond (|y log2|x|| ulp, at most ~150).
        let rel = if name.starts_with("pow") { 2e-5 } else { 2e-6 };
        let ok = if large_trig { v.abs() <= 1.0 } else { (v - want).abs() <= 1e-37 + rel * want.abs() };
        if !ok {
            failures.push(format!("{name}{xs:?} params {ps:?}: {what} {v:e}, reference {want:e}"));
        }
    };
    bad("lowered", got);
    bad("host f32", direct);
}

fn check_unary(op: UnaryOp, failures: &mut Vec<String>) {
    let k = op.kernel().unwrap();
    let low = lower(&k).unwrap();
    assert!(is_lowered(&low), "{op:?}");
    let name = op.name().to_string();
    let param_sets: Vec<Vec<f32>> = match op.params().len() {
        0 => vec![vec![]],
        1 => EDGE_PARAMS.iter().map(|&p| vec![p]).collect(),
        _ => vec![vec![2.0, 0.5], vec![-1.0, 0.0], vec![0.0, 1.0]],
    };
    for ps in &param_sets {
        for &x in EDGE_VALUES {
            check_point(&name, &k, &low, &[x], ps, failures);
        }
    }
}

#[test]
fn lowered_unary_definitions_match_ieee() {
    let mut failures = Vec::new();
    for op in UnaryOp::ALL {
        check_unary(op, &mut failures);
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn lowered_binary_definitions_match_ieee() {
    let mut failures = Vec::new();
    for op in BinaryOp::ALL {
        let k = op.kernel().unwrap();
        let low = lower(&k).unwrap();
        for &a in EDGE_VALUES {
            for &b in EDGE_VALUES {
                check_point(op.name(), &k, &low, &[a, b], &[], &mut failures);
            }
        }
    }
    let k = defs::where_kernel().unwrap();
    let low = lower(&k).unwrap();
    for &c in EDGE_VALUES {
        check_point("where", &k, &low, &[c, 1.0, 2.0], &[], &mut failures);
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn ieee_cases_the_issue_names() {
    let un = |op: UnaryOp, x: f32| {
        let low = lower(&op.kernel().unwrap()).unwrap();
        eval_one::<f32>(&low, &[x], &op.params()).unwrap()
    };
    assert!(un(UnaryOp::Powf(2.0), f32::NAN).is_nan());
    assert!(un(UnaryOp::Powf(3.0), f32::NAN).is_nan());
    assert!(un(UnaryOp::Powf(0.5), f32::NAN).is_nan());
    assert_eq!(un(UnaryOp::Powf(0.0), f32::NAN), 1.0);
    assert_eq!(un(UnaryOp::Powf(3.0), -2.0), -8.0);
    assert_eq!(un(UnaryOp::Powf(10.0), 2.0), 1024.0);
    assert_eq!(un(UnaryOp::Powf(-2.0), 10.0), 0.01);
    assert!(un(UnaryOp::Powf(0.5), -4.0).is_nan());
    assert_eq!(un(UnaryOp::Tanh, 1e-20), 1e-20);
    assert!((un(UnaryOp::Tanh, 1e-6) - 1e-6).abs() < 1e-12);
    assert_eq!(un(UnaryOp::Tanh, f32::INFINITY), 1.0);
    assert_eq!(un(UnaryOp::Recip, -0.0), f32::NEG_INFINITY);
    assert_eq!(un(UnaryOp::Log, -0.0), f32::NEG_INFINITY);
    assert!(un(UnaryOp::Log, -1.0).is_nan());
    assert!(un(UnaryOp::Sqrt, -1e-20).is_nan());
    assert!(un(UnaryOp::Sqrt, -0.0).is_sign_negative());
    assert!(un(UnaryOp::MaxScalar(0.0), f32::NAN).is_nan(), "relu(NaN) is NaN");
    assert_eq!(un(UnaryOp::GtScalar(0.0), f32::NAN), 0.0);
    assert_eq!(un(UnaryOp::Exp, 89.0), f32::INFINITY);
    assert_eq!(un(UnaryOp::Sigmoid, -1e10), 0.0);
}

#[test]
fn lowering_is_idempotent_and_shares_nodes() {
    for (name, k) in defs::all().unwrap() {
        let low = lower(&k).unwrap();
        assert_eq!(lower(&low).unwrap(), low, "{name}");
    }
    // pow is the largest definition; keep an eye on its size.
    let pow = lower(&BinaryOp::Pow.kernel().unwrap()).unwrap();
    assert!(pow.nodes().len() < 160, "pow lowers to {} nodes", pow.nodes().len());
}

/// Inputs where rounding ties to even is easy to get wrong: exact halves, their f32
/// neighbours (`0.49999997 + 0.5` rounds up to 1 in f32), zeros, the 2^23 boundary and beyond.
fn round_even_inputs() -> Vec<f32> {
    let mut xs = vec![0.0, -0.0, 1e-20, -1e-20, 0.499_999_97, 2.499_999_8, 8_388_607.5, 8_388_608.0, 8_388_609.0, 1e9];
    xs.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN_POSITIVE]);
    for i in -4000..=4000 {
        let h = i as f32 * 0.25;
        xs.extend([h, h.next_up(), h.next_down()]);
    }
    for e in 0..30 {
        let p = (1u32 << e) as f32;
        xs.extend([p + 0.5, p - 0.5, (p + 0.5).next_up(), (p + 0.5).next_down()]);
    }
    let neg: Vec<f32> = xs.iter().map(|&x| -x).collect();
    xs.extend(neg);
    xs
}

#[test]
fn lowered_round_even_is_exact() {
    let k = UnaryOp::RoundEven.kernel().unwrap();
    let low = lower(&k).unwrap();
    let mut failures = Vec::new();
    for x in round_even_inputs() {
        let want = x.round_ties_even();
        for (what, kernel) in [("definition", &k), ("lowered", &low)] {
            let got = eval_one::<f32>(kernel, &[x], &[]).unwrap();
            let same = if want.is_nan() { got.is_nan() } else { got.to_bits() == want.to_bits() };
            if !same {
                failures.push(format!("{what} round_even({x:e}) = {got:e}, want {want:e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(20)].join("\n"));
    let un = |x: f32| eval_one::<f32>(&low, &[x], &[]).unwrap();
    assert_eq!(un(2.5), 2.0);
    assert_eq!(un(-1.5), -2.0);
    assert!(un(-0.5).is_sign_negative());
}
