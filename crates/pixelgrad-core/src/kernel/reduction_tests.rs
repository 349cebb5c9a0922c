//! The reduction programs evaluated on the CPU, as single passes and as multi-pass trees,
//! against direct loops written from [`crate::ReduceOp`]'s docs.

use super::program::{Acc, Fx, Ix, Program, Stmt};
use super::program_eval::eval;
use super::reductions::{reduce_params, ReduceProgram, Scan, NO_INDEX};
use crate::ReduceOp;

/// `x` viewed as `[outer, n, inner]` reduced over the middle axis, written from the docs:
/// sum in ascending order from 0; max / min: the first element, replaced by a later one only
/// if strictly greater / smaller; argmax: the index of that first maximum; log-sum-exp:
/// `m + ln(sum(exp(x - m)))` with `m` the maximum, NaN if any is NaN, the maximum itself when
/// infinite.
fn direct(op: ReduceOp, x: &[f32], outer: usize, n: usize, inner: usize) -> Vec<f32> {
    let mut out = Vec::new();
    for o in 0..outer {
        for r in 0..inner {
            let col: Vec<f32> = (0..n).map(|k| x[(o * n + k) * inner + r]).collect();
            let first_best = |better: fn(f32, f32) -> bool| {
                let mut at = 0;
                for k in 1..n {
                    if better(col[k], col[at]) {
                        at = k;
                    }
                }
                at
            };
            out.push(match op {
                ReduceOp::Sum => col.iter().fold(0.0f32, |a, &v| a + v),
                ReduceOp::Max => col[first_best(|v, b| v > b)],
                ReduceOp::Min => col[first_best(|v, b| v < b)],
                ReduceOp::ArgMax => first_best(|v, b| v > b) as f32,
                ReduceOp::LogSumExp => {
                    let c: Vec<f64> = col.iter().map(|&v| v as f64).collect();
                    if c.iter().any(|v| v.is_nan()) {
                        f32::NAN
                    } else {
                        let m = c.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                        if m.is_infinite() {
                            m as f32
                        } else {
                            (m + c.iter().map(|v| (v - m).exp()).sum::<f64>().ln()) as f32
                        }
                    }
                }
            });
        }
    }
    out
}

/// One pass of `which` with `group`: the partials `[outer, m, inner]` and `m`.
fn pass(which: ReduceProgram, ins: &[&[f32]], outer: usize, n: usize, inner: usize, group: usize) -> (Vec<f32>, usize) {
    let params = reduce_params(n, inner, group);
    let p: Vec<i64> = params.iter().map(|&v| v as i64).collect();
    (eval(&which.program(), ins, &p, outer * params[1] * inner).unwrap(), params[1])
}

/// `op` as the WebGL backend draws it: passes of `group` until one element is left; argmax
/// over several groups as a max tree, the first-equal pass and a min tree.
fn tree(op: ReduceOp, x: &[f32], outer: usize, n: usize, inner: usize, group: usize) -> Vec<f32> {
    let run = |which: ReduceProgram, x: &[f32]| {
        let (mut cur, mut len) = (x.to_vec(), n);
        loop {
            let (next, m) = pass(which, &[&cur], outer, len, inner, group);
            cur = next;
            len = m;
            if m == 1 {
                return cur;
            }
        }
    };
    match op {
        ReduceOp::ArgMax if n <= group => pass(ReduceProgram::ArgMax, &[x], outer, n, inner, group).0,
        ReduceOp::ArgMax => {
            let best = run(ReduceProgram::Max, x);
            let (cand, m) = pass(ReduceProgram::FirstEqual, &[x, &best], outer, n, inner, group);
            if m == 1 {
                return cand;
            }
            let (mut cur, mut len) = (cand, m);
            loop {
                let (next, m) = pass(ReduceProgram::Min, &[&cur], outer, len, inner, group);
                cur = next;
                len = m;
                if m == 1 {
                    return cur;
                }
            }
        }
        op => run(ReduceProgram::of(op), x),
    }
}

/// Bit-equal, NaN matching NaN (any payload); `close`: within `tol` relative for the
/// accumulating ones.
fn same(got: &[f32], want: &[f32], tol: f32) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).all(|(&g, &w)| {
            (g.is_nan() && w.is_nan())
                || g.to_bits() == w.to_bits()
                || (tol > 0.0 && g.is_finite() && (g - w).abs() <= tol * w.abs().max(1.0))
        })
}

/// Values with ties, signed zeros, NaN and infinities, by position.
fn edgy(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| match (i * 7 + seed * 3) % 11 {
            0 => -0.0,
            1 => 0.0,
            2 => 2.5,
            3 => -1.0,
            4 => 2.5,
            5 => 0.75,
            6 => -3.0,
            7 => 1.25,
            8 => 2.5,
            9 => 0.5,
            _ => -0.5,
        })
        .collect()
}

#[test]
fn every_pass_and_tree_is_the_op_from_its_doc() {
    let ops = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::LogSumExp];
    // (outer, n, inner, group): one pass, several passes, a ragged last group, inner > 1.
    // Consecutive groups starting off a multiple of 4 (head, 4-lane runs and tail), and
    // groups shorter than a run.
    let shapes = [
        (2, 5, 1, 16),
        (1, 37, 1, 4),
        (3, 10, 2, 3),
        (2, 1, 3, 16),
        (1, 64, 1, 8),
        (2, 17, 3, 16),
        (3, 23, 1, 1024),
        (2, 30, 1, 7),
        (5, 9, 1, 16),
        (3, 3, 1, 2),
    ];
    for (case, &(outer, n, inner, group)) in shapes.iter().enumerate() {
        let mut x = edgy(outer * n * inner, case);
        let variants: Vec<(&str, Vec<f32>)> = vec![
            ("plain", x.clone()),
            ("nan first", {
                x[0] = f32::NAN;
                x.clone()
            }),
            ("nan inside", {
                x[0] = 1.0;
                let k = x.len() / 2;
                x[k] = f32::NAN;
                x.clone()
            }),
            ("+inf", {
                let k = x.len() / 2;
                x[k] = f32::INFINITY;
                x.clone()
            }),
            ("-inf", x.iter().map(|_| f32::NEG_INFINITY).collect()),
            ("zeros", x.iter().enumerate().map(|(i, _)| if i % 3 == 0 { 0.0 } else { -0.0 }).collect()),
        ];
        for (what, x) in &variants {
            for op in ops {
                let want = direct(op, x, outer, n, inner);
                let got = tree(op, x, outer, n, inner, group);
                let tol = match op {
                    ReduceOp::Sum | ReduceOp::LogSumExp => 1e-6,
                    _ => 0.0,
                };
                // A tree sums partials, so only a one-pass sum must keep -0 as the serial
                // sum does; every other case must match to the bit.
                assert!(same(&got, &want, tol), "{op:?} {what} [{outer}, {n}, {inner}] group {group}: {got:?} != {want:?}");
            }
        }
    }
}

#[test]
fn first_equal_misses_give_no_index() {
    let x = [1.0f32, 2.0, 3.0, 4.0];
    let best = [9.0f32];
    let (got, m) = pass(ReduceProgram::FirstEqual, &[&x, &best], 1, 4, 1, 2);
    assert_eq!((got, m), (vec![NO_INDEX, NO_INDEX], 2));
    let best = [3.0f32];
    let (got, _) = pass(ReduceProgram::FirstEqual, &[&x, &best], 1, 4, 1, 2);
    assert_eq!(got, vec![NO_INDEX, 2.0]);
}

/// `body` with every [`Stmt::Load4`] replaced by zeros in its four variables.
fn zero_lanes(body: &[Stmt]) -> Vec<Stmt> {
    body.iter()
        .flat_map(|s| match s {
            Stmt::Load4 { first, .. } => (0..4).map(|l| Stmt::LetF(first + l, Fx::lit(0.0))).collect(),
            Stmt::For { var, lo, hi, bound, body } => {
                vec![Stmt::For { var: *var, lo: lo.clone(), hi: hi.clone(), bound: *bound, body: zero_lanes(body) }]
            }
            Stmt::If { cond, body } => vec![Stmt::If { cond: cond.clone(), body: zero_lanes(body) }],
            s => vec![s.clone()],
        })
        .collect()
}

#[test]
fn consecutive_groups_are_read_four_lanes_at_a_time() {
    // [3, 23] over the last axis, one group per row: rows start at flat 0, 23 and 46, off a
    // multiple of 4 but the first. With the 4-lane loads read as zeros, nothing is left of
    // any sum: every element of a consecutive group, head and tail included, is a lane of a
    // texel (masked lanes fold nothing).
    let x: Vec<f32> = (0..69).map(|i| (1u64 << (i % 20)) as f32).collect();
    let params = [23, 1, 1, 1024];
    for which in [ReduceProgram::Sum, ReduceProgram::Max, ReduceProgram::LogSumExp] {
        let p = which.program();
        let lanes_zeroed = Program { body: zero_lanes(&p.body), ..p.clone() };
        let got = eval(&lanes_zeroed, &[&x], &params, 3).unwrap();
        let want = eval(&p, &[&vec![0.0; 69][..]], &params, 3).unwrap();
        assert_eq!(got, want, "{which:?}");
    }
    // The whole program reads every element once, in order: the serial sums to the bit.
    let sum = ReduceProgram::Sum.program();
    let all = eval(&sum, &[&x], &params, 3).unwrap();
    let rows: Vec<f32> = (0..3).map(|r| x[r * 23..(r + 1) * 23].iter().fold(0.0f32, |a, &v| a + v)).collect();
    assert_eq!(all, rows);
    // Along a first axis (inner > 1) nothing is consecutive: no lane is loaded.
    let singles = Program { body: zero_lanes(&sum.body), ..sum.clone() };
    let params = [23, 1, 3, 1024];
    assert_eq!(eval(&singles, &[&x[..69]], &params, 3).unwrap(), eval(&sum, &[&x[..69]], &params, 3).unwrap());
}

/// The statements of `body` and of every loop and branch in it.
fn all_stmts(body: &[Stmt]) -> Vec<&Stmt> {
    body.iter()
        .flat_map(|s| {
            let mut v = vec![s];
            if let Stmt::For { body, .. } | Stmt::If { body, .. } = s {
                v.extend(all_stmts(body));
            }
            v
        })
        .collect()
}

#[test]
fn every_pass_scans_its_group_once_without_branches() {
    // What llvmpipe's compiler needs to finish quickly (bench/notes/2026-12-07-reductions-
    // texel-loop.md): one scan of the group, as two loops under one uniform `If` each
    // (texels / elements, one of them runs), never nested, every fold in them a straight-line
    // `FoldLane` and no `If` inside them.
    for which in ReduceProgram::ALL {
        let p = which.program();
        let stmts = all_stmts(&p.body);
        let loops: Vec<&Stmt> = stmts.iter().copied().filter(|s| matches!(s, Stmt::For { .. })).collect();
        assert_eq!(loops.len(), 2, "{which:?}");
        for l in loops {
            let Stmt::For { body, .. } = l else { unreachable!() };
            let inner = all_stmts(body);
            assert!(!inner.iter().any(|s| matches!(s, Stmt::For { .. } | Stmt::If { .. } | Stmt::Fold { .. })), "{which:?}: {body:?}");
        }
    }
}

#[test]
fn a_four_lane_load_off_a_multiple_of_4_is_an_error() {
    let load_at = |at: i32| Program {
        name: "load4",
        inputs: vec!["x"],
        params: vec![],
        accs: vec![Acc::Sum],
        body: vec![
            Stmt::Load4 { first: 0, input: 0, at: Ix::Lit(at) },
            Stmt::Reset(0),
            Stmt::Fold { acc: 0, value: Fx::Var(0) },
            Stmt::Fold { acc: 0, value: Fx::Var(3) },
        ],
        out: Fx::Acc(0),
    };
    let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
    assert_eq!(eval(&load_at(4), &[&x], &[], 1).unwrap(), vec![4.0 + 7.0]);
    let e = eval(&load_at(2), &[&x], &[], 1).unwrap_err();
    assert!(format!("{e}").contains("multiple of 4"), "{e}");
    // Past the end: an error, not a panic.
    assert!(eval(&load_at(12), &[&x], &[], 1).is_err());
}

#[test]
fn the_element_scan_gives_the_same_bits() {
    // `Scan::Elements` (a fused read without pg_load4 on WebGL) drops the texel loop: the
    // same results to the bit, consecutive groups (aligned or not, with a tail) and columns,
    // NaN, infinities and signed zeros included.
    let mut x: Vec<f32> = (0..92).map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.37).collect();
    x[5] = f32::NAN;
    x[40] = f32::INFINITY;
    x[41] = f32::NEG_INFINITY;
    x[60] = -0.0;
    x[61] = 0.0;
    let best: Vec<f32> = x.iter().step_by(23).copied().collect();
    for (outer, n, inner, group) in [(4, 23, 1, 1024), (4, 23, 1, 5), (1, 92, 1, 16), (2, 23, 2, 7), (1, 46, 2, 1024)] {
        let params: Vec<i64> = reduce_params(n, inner, group).iter().map(|&v| v as i64).collect();
        let len = outer * params[1] as usize * inner;
        for which in ReduceProgram::ALL {
            let ins: Vec<&[f32]> = if which == ReduceProgram::FirstEqual { vec![&x, &best] } else { vec![&x] };
            let both = eval(&which.program(), &ins, &params, len).unwrap();
            let elements = eval(&which.program_with(Scan::Elements), &ins, &params, len).unwrap();
            assert!(same(&elements, &both, 0.0), "{which:?} [{outer}, {n}, {inner}] group {group}: {elements:?} != {both:?}");
        }
    }
}

/// The loads of input 0 (element and four-lane) in `body`, loops and branches included.
fn loads(body: &[Stmt]) -> usize {
    fn fx(e: &Fx) -> usize {
        match e {
            Fx::Load { input: 0, .. } => 1,
            Fx::Bin(_, a, b) => fx(a) + fx(b),
            _ => 0,
        }
    }
    all_stmts(body)
        .iter()
        .map(|s| match s {
            Stmt::LetF(_, e) | Stmt::Fold { value: e, .. } | Stmt::FoldLane { value: e, .. } => fx(e),
            Stmt::Load4 { input: 0, .. } => 1,
            _ => 0,
        })
        .sum()
}

#[test]
fn each_scan_loads_an_element_once() {
    // A fused read is written out where it is loaded (the prologue's code once per load), so
    // each loop loads once: one texel, or one element into a variable (argmax compares and
    // keeps it, which used to load it twice). `Scan::Elements` has one loop and no branch.
    for which in ReduceProgram::ALL {
        for form in [Scan::Both, Scan::Elements] {
            let p = which.program_with(form);
            let loops: Vec<&Stmt> = all_stmts(&p.body).into_iter().filter(|s| matches!(s, Stmt::For { .. })).collect();
            assert_eq!(loops.len(), if form == Scan::Both { 2 } else { 1 }, "{which:?} {form:?}");
            for l in loops {
                let Stmt::For { body, .. } = l else { unreachable!() };
                assert_eq!(loads(body), 1, "{which:?} {form:?}: {body:?}");
            }
            if form == Scan::Elements {
                assert!(!p.body.iter().any(|s| matches!(s, Stmt::If { body, .. } if body.iter().any(|s| matches!(s, Stmt::For { .. })))));
            }
        }
    }
}
