//! Elementwise kernels: every unary, binary and `where` op is a kernel from the one table in
//! `pixelgrad_core::kernel::defs`, evaluated here block by block
//! (`pixelgrad_core::kernel::eval`), with each input broadcast to the output.
//!
//! When every input has the output's shape or is a single value, the output is walked flat;
//! otherwise axes are merged where all operands allow it and the output is walked row by row
//! (rows of its last merged axis), each input read through its broadcast strides.

use pixelgrad_core::kernel::eval::{self, eval_block, Scratch, Src};
use pixelgrad_core::kernel::Launch;
use pixelgrad_core::shape::{broadcast_strides, coalesce, contiguous_strides};
use pixelgrad_core::{Result, Shape};

use crate::element::Element;
use crate::par::{for_chunks, offset_of, FLAT_CHUNK};

/// Inputs of the largest elementwise kernel (`where`).
const MAX_INPUTS: usize = 3;

/// Runs `launch` with `ins` (values and shapes, each broadcasting to `out`).
pub fn map<T: Element>(launch: &Launch, ins: &[(&[T], &Shape)], out: &Shape) -> Result<Vec<T>> {
    let k = &launch.kernel;
    eval::check(k, ins.len(), launch.params.len())?;
    let params: Vec<T> = launch.params.iter().map(|&p| T::from_f32(p)).collect();
    let n = out.numel();
    let mut res = vec![T::ZERO; n];
    if n == 0 {
        return Ok(res);
    }
    let flat = ins.iter().all(|(_, s)| *s == out || s.numel() == 1);
    if flat {
        for_chunks(&mut res, FLAT_CHUNK, |i, dst| {
            let base = i * FLAT_CHUNK;
            let mut scratch = Scratch::default();
            for (j, block) in dst.chunks_mut(eval::BLOCK).enumerate() {
                let start = base + j * eval::BLOCK;
                let srcs: Vec<Src<'_, T>> = ins
                    .iter()
                    .map(|(x, s)| if s.numel() == 1 { Src::Scalar(x[0]) } else { Src::Slice(&x[start..start + block.len()]) })
                    .collect();
                eval_block(k, &srcs, &params, block, &mut scratch);
            }
        });
        return Ok(res);
    }
    // Merge axes contiguous in every operand (the output's own strides included, so merged
    // axes stay contiguous in it too); the last merged axis is then contiguous (stride 1) or
    // broadcast (stride 0) in each input.
    let mut all: Vec<Vec<usize>> = ins.iter().map(|(_, s)| broadcast_strides(s, out)).collect();
    all.push(contiguous_strides(out.dims()));
    let (dims, strides) = coalesce(out.dims(), &all);
    let r = dims.len();
    let inner = dims[r - 1];
    let outer = &dims[..r - 1];
    // Rows are grouped into tasks of about FLAT_CHUNK elements: short rows (a bias or scale
    // per channel over a small feature map) share one scratch instead of allocating per row.
    let rows_per_task = (FLAT_CHUNK / inner.max(1)).max(1);
    // The usual case (every input contiguous or broadcast along the row, at most three
    // inputs) builds its sources in fixed arrays: no allocation per row.
    let simple = ins.len() <= MAX_INPUTS && strides[..ins.len()].iter().all(|st| st[r - 1] <= 1);
    for_chunks(&mut res, inner * rows_per_task, |task, rows| {
        let mut scratch = Scratch::default();
        for (i, dst) in rows.chunks_mut(inner).enumerate() {
            let row = task * rows_per_task + i;
            if simple {
                let mut srcs = [Src::Scalar(T::ZERO); MAX_INPUTS];
                for (j, ((x, _), src)) in ins.iter().zip(srcs.iter_mut()).enumerate() {
                    let off = offset_of(row, outer, &strides[j][..r - 1]);
                    *src = if strides[j][r - 1] == 0 { Src::Scalar(x[off]) } else { Src::Slice(&x[off..off + inner]) };
                }
                for (b, block) in dst.chunks_mut(eval::BLOCK).enumerate() {
                    let start = b * eval::BLOCK;
                    let mut part = srcs;
                    for p in part.iter_mut() {
                        if let Src::Slice(v) = *p {
                            *p = Src::Slice(&v[start..start + block.len()]);
                        }
                    }
                    eval_block(k, &part[..ins.len()], &params, block, &mut scratch);
                }
                continue;
            }
            let offs: Vec<usize> = strides[..ins.len()].iter().map(|st| offset_of(row, outer, &st[..r - 1])).collect();
            // After merging, the innermost stride of an input is 1 (contiguous) or 0 (broadcast);
            // any other stride is gathered, to be safe.
            let gathered: Vec<Option<Vec<T>>> = ins
                .iter()
                .enumerate()
                .map(|(j, (x, _))| {
                    let st = strides[j][r - 1];
                    (st > 1).then(|| (0..inner).map(|c| x[offs[j] + c * st]).collect())
                })
                .collect();
            let srcs: Vec<Src<'_, T>> = ins
                .iter()
                .enumerate()
                .map(|(j, (x, _))| match (strides[j][r - 1], &gathered[j]) {
                    (_, Some(g)) => Src::Slice(g.as_slice()),
                    (0, None) => Src::Scalar(x[offs[j]]),
                    _ => Src::Slice(&x[offs[j]..offs[j] + inner]),
                })
                .collect();
            for (b, block) in dst.chunks_mut(eval::BLOCK).enumerate() {
                let start = b * eval::BLOCK;
                let part: Vec<Src<'_, T>> = srcs
                    .iter()
                    .map(|s| match *s {
                        Src::Slice(v) => Src::Slice(&v[start..start + block.len()]),
                        Src::Scalar(v) => Src::Scalar(v),
                    })
                    .collect();
                eval_block(k, &part, &params, block, &mut scratch);
            }
        }
    });
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad_core::kernel::defs::where_launch;
    use pixelgrad_core::{BinaryOp, UnaryOp};

    fn s(d: &[usize]) -> Shape {
        Shape::from(d)
    }

    fn binary(op: BinaryOp, a: &[f64], sa: &Shape, b: &[f64], sb: &Shape, out: &Shape) -> Vec<f64> {
        map(&op.launch().unwrap(), &[(a, sa), (b, sb)], out).unwrap()
    }

    #[test]
    fn broadcast_paths_agree() {
        let a: Vec<f64> = (0..6).map(|i| i as f64).collect(); // [2, 3]
        let row = [10.0, 20.0, 30.0]; // [3]
        let col = [100.0, 200.0]; // [2, 1]
        assert_eq!(binary(BinaryOp::Add, &a, &s(&[2, 3]), &row, &s(&[3]), &s(&[2, 3])), vec![10., 21., 32., 13., 24., 35.]);
        assert_eq!(binary(BinaryOp::Sub, &col, &s(&[2, 1]), &a, &s(&[2, 3]), &s(&[2, 3])), vec![100., 99., 98., 197., 196., 195.]);
        assert_eq!(binary(BinaryOp::Mul, &a, &s(&[2, 3]), &[2.0], &s(&[]), &s(&[2, 3])), vec![0., 2., 4., 6., 8., 10.]);
        // Outer product through two stretched axes.
        assert_eq!(binary(BinaryOp::Mul, &col, &s(&[2, 1]), &row, &s(&[1, 3]), &s(&[2, 3])), vec![1e3, 2e3, 3e3, 2e3, 4e3, 6e3]);
    }

    #[test]
    fn comparisons_and_where() {
        let a = [1.0f32, 2.0, 3.0];
        let ge = map(&BinaryOp::Ge.launch().unwrap(), &[(&a, &s(&[3])), (&[2.0], &s(&[1]))], &s(&[3])).unwrap();
        assert_eq!(ge, vec![0.0, 1.0, 1.0]);
        let gt = map(&UnaryOp::GtScalar(1.5).launch().unwrap(), &[(&a, &s(&[3]))], &s(&[3])).unwrap();
        assert_eq!(gt, vec![0.0, 1.0, 1.0]);
        let c = [1.0f32, 0.0, f32::NAN];
        let w = map(&where_launch().unwrap(), &[(&c, &s(&[3])), (&a, &s(&[3])), (&[9.0], &s(&[]))], &s(&[3])).unwrap();
        assert_eq!(w, vec![1.0, 9.0, 3.0], "a NaN condition is nonzero");
    }

    #[test]
    fn long_outputs_cross_blocks_and_threads() {
        let n = 100_003;
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let y = map(&UnaryOp::Affine { mul: 2.0, add: 1.0 }.launch().unwrap(), &[(&x, &s(&[n]))], &s(&[n])).unwrap();
        assert!(y.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32 + 1.0));
        // Broadcast rows longer than a block.
        let row: Vec<f32> = (0..3000).map(|i| i as f32).collect();
        let z = map(&BinaryOp::Add.launch().unwrap(), &[(&x[..6000], &s(&[2, 3000])), (&row, &s(&[3000]))], &s(&[2, 3000])).unwrap();
        assert_eq!(z[2999], 2999.0 * 2.0);
        assert_eq!(z[5999], 5999.0 + 2999.0);
    }

    #[test]
    fn sigmoid_saturates_cleanly() {
        let y = map(&UnaryOp::Sigmoid.launch().unwrap(), &[(&[-1000.0f32, 0.0, 1000.0], &s(&[3]))], &s(&[3])).unwrap();
        assert_eq!(y, vec![0.0, 0.5, 1.0]);
    }
}
