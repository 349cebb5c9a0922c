//! Reductions along one axis. The input is viewed as `[outer, n, inner]` and the output as
//! `[outer, inner]`. Reducing the last axis (`inner == 1`, the common case: softmax, losses)
//! reads contiguous runs; otherwise each output row accumulates whole input rows, which is
//! also contiguous in the inner loop.
//!
//! These loops stay rather than the reductions' one definition (`pixelgrad_core::kernel::
//! reductions`, which the GPU backends draw): the program interpreter ran 3x (log-sum-exp) to
//! 340-670x (sum, max) slower on one thread over [256, 1000] and [1024, 256]
//! (`examples/reduce_program_bench.rs`;
//! `bench/notes/2026-12-07-reductions-from-one-definition.md`).

use pixelgrad_core::ReduceOp;

use crate::element::Element;
use crate::par::for_chunks;

/// Sum of a contiguous run with 8 independent partial sums: the adds no longer wait on each
/// other (so they vectorise), and the rounding error grows more slowly than one long chain.
fn sum_run<T: Element>(run: &[T]) -> T {
    let mut lanes = [T::ZERO; 8];
    let chunks = run.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l += v;
        }
    }
    let mut acc = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    for &v in tail {
        acc += v;
    }
    acc
}

/// Reduces with `init` on the first element and `step` for each further one.
fn reduce_with<T: Element>(
    x: &[T],
    outer: usize,
    n: usize,
    inner: usize,
    init: impl Fn(T) -> T + Sync + Send,
    step: impl Fn(T, T) -> T + Sync + Send,
) -> Vec<T> {
    let mut out = vec![T::ZERO; outer * inner];
    if inner == 1 {
        // Last axis: one contiguous run of n per output element.
        for_chunks(&mut out, 1, |o, dst| {
            let run = &x[o * n..(o + 1) * n];
            let mut acc = init(run[0]);
            for &v in &run[1..] {
                acc = step(acc, v);
            }
            dst[0] = acc;
        });
    } else {
        for_chunks(&mut out, inner, |o, dst| {
            let base = o * n * inner;
            for (d, &v) in dst.iter_mut().zip(&x[base..base + inner]) {
                *d = init(v);
            }
            for k in 1..n {
                let row = &x[base + k * inner..base + (k + 1) * inner];
                for (d, &v) in dst.iter_mut().zip(row) {
                    *d = step(*d, v);
                }
            }
        });
    }
    out
}

/// Index of the first maximum along the axis, as a float.
fn argmax<T: Element>(x: &[T], outer: usize, n: usize, inner: usize) -> Vec<T> {
    let mut out = vec![T::ZERO; outer * inner];
    for_chunks(&mut out, inner, |o, dst| {
        let base = o * n * inner;
        for (i, d) in dst.iter_mut().enumerate() {
            let (mut best, mut best_k) = (x[base + i], 0);
            for k in 1..n {
                let v = x[base + k * inner + i];
                if v > best {
                    best = v;
                    best_k = k;
                }
            }
            *d = T::from_usize(best_k);
        }
    });
    out
}

/// `log(sum(exp(x)))` along the axis, stably: the maximum `m` first, then
/// `m + ln(sum(exp(x - m)))`, accumulated in f64. NaN anywhere gives NaN; an infinite
/// maximum is the result itself (`+inf`, or `-inf` when every element is `-inf`).
fn logsumexp<T: Element>(x: &[T], outer: usize, n: usize, inner: usize) -> Vec<T> {
    let mut out = vec![T::ZERO; outer * inner];
    for_chunks(&mut out, inner, |o, dst| {
        let base = o * n * inner;
        for (i, d) in dst.iter_mut().enumerate() {
            let at = |k: usize| x[base + k * inner + i].to_f64();
            let mut m = f64::NEG_INFINITY;
            for k in 0..n {
                let v = at(k);
                if v.is_nan() || v > m {
                    m = v;
                }
                if m.is_nan() {
                    break;
                }
            }
            let r = if m.is_nan() || m.is_infinite() { m } else { m + (0..n).map(|k| (at(k) - m).exp()).sum::<f64>().ln() };
            *d = T::from_f64(r);
        }
    });
    out
}

/// Reduces `axis` of a tensor with dimensions `dims` (the axis is non-empty: checked by
/// `infer_shape`).
pub fn reduce<T: Element>(op: ReduceOp, x: &[T], dims: &[usize], axis: usize) -> Vec<T> {
    let outer: usize = dims[..axis].iter().product();
    let n = dims[axis];
    let inner: usize = dims[axis + 1..].iter().product();
    match op {
        ReduceOp::Sum if inner == 1 => {
            let mut out = vec![T::ZERO; outer];
            for_chunks(&mut out, 1, |o, dst| dst[0] = sum_run(&x[o * n..(o + 1) * n]));
            out
        }
        ReduceOp::Sum => reduce_with(x, outer, n, inner, |v| v, |a, v| a + v),
        ReduceOp::Max => reduce_with(x, outer, n, inner, |v| v, |a, v| if v > a { v } else { a }),
        ReduceOp::Min => reduce_with(x, outer, n, inner, |v| v, |a, v| if v < a { v } else { a }),
        ReduceOp::ArgMax => argmax(x, outer, n, inner),
        ReduceOp::LogSumExp => logsumexp(x, outer, n, inner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_axis_of_a_3d_tensor() {
        let x: Vec<f64> = (0..24).map(|i| i as f64).collect(); // [2, 3, 4]
        assert_eq!(reduce(ReduceOp::Sum, &x, &[2, 3, 4], 2), vec![6., 22., 38., 54., 70., 86.]);
        assert_eq!(reduce(ReduceOp::Sum, &x, &[1, 24], 1), vec![276.0]);
        assert_eq!(reduce(ReduceOp::Sum, &x[..11], &[11], 0), vec![55.0]);
        assert_eq!(reduce(ReduceOp::Sum, &x, &[2, 3, 4], 0), (0..12).map(|i| (2 * i + 12) as f64).collect::<Vec<_>>());
        assert_eq!(reduce(ReduceOp::Max, &x, &[2, 3, 4], 1), vec![8., 9., 10., 11., 20., 21., 22., 23.]);
        assert_eq!(reduce(ReduceOp::Min, &x, &[2, 3, 4], 1), vec![0., 1., 2., 3., 12., 13., 14., 15.]);
    }

    #[test]
    fn logsumexp_is_stable_and_keeps_its_edges() {
        let inf = f32::INFINITY;
        let x = [1000.0f32, 1000.0, -inf, -inf, 0.0, inf, 1.0, f32::NAN, 2.0, 3.0];
        let r = reduce(ReduceOp::LogSumExp, &x, &[5, 2], 1);
        assert!((r[0] - (1000.0 + 2f32.ln())).abs() < 1e-3, "no overflow: {}", r[0]);
        assert_eq!(r[1], -inf, "every element -inf");
        assert_eq!(r[2], inf, "an element +inf");
        assert!(r[3].is_nan(), "NaN in, NaN out");
        let want = (2f64.exp() + 3f64.exp()).ln() as f32;
        assert!((r[4] - want).abs() < 1e-6);
        // Along a non-last axis.
        let r = reduce(ReduceOp::LogSumExp, &[0.0f32, 1.0, 0.0, 1.0], &[2, 2], 0);
        assert!((r[0] - 2f32.ln()).abs() < 1e-6 && (r[1] - (1.0 + 2f32.ln())).abs() < 1e-6);
    }

    #[test]
    fn argmax_takes_the_first_maximum() {
        let x = [1.0f32, 5.0, 5.0, 0.0, -1.0, -1.0];
        assert_eq!(reduce(ReduceOp::ArgMax, &x, &[2, 3], 1), vec![1.0, 0.0]);
        assert_eq!(reduce(ReduceOp::ArgMax, &x, &[2, 3], 0), vec![0.0, 0.0, 0.0]);
    }
}
