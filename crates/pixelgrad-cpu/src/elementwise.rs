//! Elementwise kernels: every unary, binary and `where` op — and every chain of them the fast
//! path fuses (`crate::fusion`) — is a kernel from the one table in
//! `pixelgrad_core::kernel::defs`, evaluated here block by block
//! (`pixelgrad_core::kernel::eval`), with each input broadcast to the output.
//!
//! Three ways through the output, chosen by how the inputs are read:
//! - *flat*: every input has the output's shape or is a single value; blocks of the output
//!   read blocks of the inputs in place;
//! - *rows*: after merging axes contiguous in every operand, the last axis is long and each
//!   input is contiguous or constant along it; each row reads its inputs in place;
//! - *gathered*: anything else (short rows, as in nearest upsampling or a per-channel scale of
//!   a small feature map; odd strides): each block first copies the inputs that need it into
//!   block buffers, a row segment at a time, then evaluates the block as in the flat case.

use pixelgrad_core::kernel::eval;

use crate::block_eval::{self, eval_prepared, Prepared};
use crate::blocks::Src;
use pixelgrad_core::kernel::Launch;
use pixelgrad_core::shape::{broadcast_strides, coalesce, contiguous_strides};
use pixelgrad_core::{Result, Shape};

use crate::element::Element;
use crate::par::{for_chunks, offset_of, FLAT_CHUNK};

/// Inputs a kernel may have for the rows path's fixed-size source arrays (no allocation per
/// row); fused kernels are kept within it (`crate::fusion`). More inputs take the gathered path.
pub(crate) const MAX_INPUTS: usize = 8;

/// Rows at least this long are read in place; shorter ones are gathered into blocks.
const LONG_ROW: usize = 256;

/// Runs `launch` with `ins` (values and shapes, each broadcasting to `out`).
pub fn map<T: Element>(launch: &Launch, ins: &[(&[T], &Shape)], out: &Shape) -> Result<Vec<T>> {
    let k = &launch.kernel;
    eval::check(k, ins.len(), launch.params.len())?;
    let params: Vec<T> = launch.params.iter().map(|&p| T::from_f32(p)).collect();
    let n = out.numel();
    // Every element is written below (each path covers the whole output).
    let mut res = T::output(n);
    if n == 0 {
        return Ok(res);
    }
    let flat = ins.len() <= MAX_INPUTS && ins.iter().all(|(_, s)| *s == out || s.numel() == 1);
    if flat {
        let scalars: Vec<bool> = ins.iter().map(|(_, s)| s.numel() == 1).collect();
        let prepared = Prepared::with_scalars(k, &scalars);
        for_chunks(&mut res, FLAT_CHUNK, |i, dst| {
            let base = i * FLAT_CHUNK;
            T::with_scratch(|scratch| {
                for (j, block) in dst.chunks_mut(block_eval::BLOCK).enumerate() {
                    let start = base + j * block_eval::BLOCK;
                    let mut srcs = [Src::Scalar(T::ZERO); MAX_INPUTS];
                    for ((x, s), src) in ins.iter().zip(srcs.iter_mut()) {
                        *src = if s.numel() == 1 { Src::Scalar(x[0]) } else { Src::Slice(&x[start..start + block.len()]) };
                    }
                    eval_prepared(&prepared, &srcs[..ins.len()], &params, block, scratch);
                }
            })
        });
        return Ok(res);
    }
    // Merge axes contiguous in every operand (the output's own strides included, so merged
    // axes stay contiguous in it too); the last merged axis is then contiguous (stride 1) or
    // broadcast (stride 0) in each input, unless an input is read with other strides.
    let mut all: Vec<Vec<usize>> = ins.iter().map(|(_, s)| broadcast_strides(s, out)).collect();
    all.push(contiguous_strides(out.dims()));
    let (dims, strides) = coalesce(out.dims(), &all);
    let r = dims.len();
    let inner = dims[r - 1];
    let outer = &dims[..r - 1];
    let rows = ins.len() <= MAX_INPUTS && inner >= LONG_ROW && strides[..ins.len()].iter().all(|st| st[r - 1] <= 1);
    if !rows {
        gathered(k, &params, ins, &dims, &strides, &mut res);
        return Ok(res);
    }
    let scalars: Vec<bool> = strides[..ins.len()].iter().map(|st| st[r - 1] == 0).collect();
    let prepared = Prepared::with_scalars(k, &scalars);
    // Rows are grouped into tasks of about FLAT_CHUNK elements.
    let rows_per_task = (FLAT_CHUNK / inner).max(1);
    for_chunks(&mut res, inner * rows_per_task, |task, rows| {
        T::with_scratch(|scratch| {
            for (i, dst) in rows.chunks_mut(inner).enumerate() {
                let row = task * rows_per_task + i;
                let mut srcs = [Src::Scalar(T::ZERO); MAX_INPUTS];
                for (j, ((x, _), src)) in ins.iter().zip(srcs.iter_mut()).enumerate() {
                    let off = offset_of(row, outer, &strides[j][..r - 1]);
                    *src = if strides[j][r - 1] == 0 { Src::Scalar(x[off]) } else { Src::Slice(&x[off..off + inner]) };
                }
                for (b, block) in dst.chunks_mut(block_eval::BLOCK).enumerate() {
                    let start = b * block_eval::BLOCK;
                    let mut part = srcs;
                    for p in part.iter_mut() {
                        if let Src::Slice(v) = *p {
                            *p = Src::Slice(&v[start..start + block.len()]);
                        }
                    }
                    eval_prepared(&prepared, &part[..ins.len()], &params, block, scratch);
                }
            }
        })
    });
    Ok(res)
}

/// How the gathered path reads one input.
enum Read {
    /// One value for the whole output.
    Scalar,
    /// The output's own layout: blocks are read in place.
    InPlace,
    /// Copied into block buffer number `.0` through these strides (over the merged `dims`).
    Gather(usize),
}

/// The gathered path of [`map`]: `dims` and `strides` are the merged axes (`strides[j]` for
/// input `j`, the output's own last).
fn gathered<T: Element>(
    kernel: &pixelgrad_core::kernel::ir::Kernel,
    params: &[T],
    ins: &[(&[T], &Shape)],
    dims: &[usize],
    strides: &[Vec<usize>],
    res: &mut [T],
) {
    let own = &strides[ins.len()];
    let mut gathers = 0;
    let reads: Vec<Read> = ins
        .iter()
        .zip(strides)
        .map(|((_, s), st)| {
            if s.numel() == 1 {
                Read::Scalar
            } else if st == own {
                Read::InPlace
            } else {
                gathers += 1;
                Read::Gather(gathers - 1)
            }
        })
        .collect();
    let scalars: Vec<bool> = reads.iter().map(|r| matches!(r, Read::Scalar)).collect();
    let prepared = &Prepared::with_scalars(kernel, &scalars);
    // Each gathered input walks its own merged axes: a per-channel value stays one run per
    // channel even where another input (an upsampled one) keeps the axes apart.
    let layouts: Vec<(Vec<usize>, Vec<usize>)> = reads
        .iter()
        .zip(strides)
        .map(|(read, st)| match read {
            Read::Gather(_) => {
                let (d, s) = coalesce(dims, std::slice::from_ref(st));
                match s.into_iter().next() {
                    Some(s) if !d.is_empty() => (d, s),
                    _ => (vec![1], vec![0]),
                }
            }
            _ => (Vec::new(), Vec::new()),
        })
        .collect();
    for_chunks(res, FLAT_CHUNK, |task, dst| {
        T::with_scratch(|scratch| {
            let base = task * FLAT_CHUNK;
            // One block buffer per gathered input, side by side (the thread's spare buffer,
            // handed back below).
            // Every slot is filled by `gather_block` before it is read: no clearing.
            let mut bufs = std::mem::take(&mut scratch.spare);
            if bufs.len() < gathers * block_eval::BLOCK {
                bufs.resize(gathers * block_eval::BLOCK, T::ZERO);
            }
            for (b, block) in dst.chunks_mut(block_eval::BLOCK).enumerate() {
                let start = base + b * block_eval::BLOCK;
                let len = block.len();
                for (j, read) in reads.iter().enumerate() {
                    if let Read::Gather(g) = *read {
                        let slot = &mut bufs[g * block_eval::BLOCK..g * block_eval::BLOCK + len];
                        gather_block(ins[j].0, &layouts[j].0, &layouts[j].1, start, slot);
                    }
                }
                let bufs = &bufs;
                let src = |j: usize, read: &Read| match *read {
                    Read::Scalar => Src::Scalar(ins[j].0[0]),
                    Read::InPlace => Src::Slice(&ins[j].0[start..start + len]),
                    Read::Gather(g) => Src::Slice(&bufs[g * block_eval::BLOCK..g * block_eval::BLOCK + len]),
                };
                if reads.len() <= MAX_INPUTS {
                    // No allocation per block for the usual few inputs.
                    let mut srcs = [Src::Scalar(T::ZERO); MAX_INPUTS];
                    for (j, read) in reads.iter().enumerate() {
                        srcs[j] = src(j, read);
                    }
                    eval_prepared(prepared, &srcs[..reads.len()], params, block, scratch);
                } else {
                    let srcs: Vec<Src<'_, T>> = reads.iter().enumerate().map(|(j, read)| src(j, read)).collect();
                    eval_prepared(prepared, &srcs, params, block, scratch);
                }
            }
            scratch.spare = bufs;
        })
    });
}

/// A last axis shorter than this is walked together with the axis before it, as one row (a
/// nearest upsampling by 2 has a last merged axis of 2: carrying the outer index every two
/// elements would cost more than the copy).
const SHORT_AXIS: usize = 32;

/// Copies output elements `start..start + dst.len()` of an input read through `strides` over
/// `dims` (row-major) into `dst`, one row segment at a time; the row's offset is carried
/// from row to row (no division per row). A row is the last axis, or the last two when the
/// last is short.
fn gather_block<T: Copy>(x: &[T], dims: &[usize], strides: &[usize], start: usize, dst: &mut [T]) {
    let r = dims.len();
    let t = if r >= 2 && dims[r - 1] < SHORT_AXIS { 2 } else { 1 };
    let (outer, ost) = (&dims[..r - t], &strides[..r - t]);
    let (d0, s0) = (dims[r - 1], strides[r - 1]);
    let (d1, s1) = if t == 2 { (dims[r - 2], strides[r - 2]) } else { (1, 0) };
    let inner = d1 * d0;
    let (row, mut col) = (start / inner, start % inner);
    // The row's index along each outer axis, and its offset.
    // (No allocation for the usual ranks.)
    let (mut small, mut large) = ([0usize; 8], Vec::new());
    let idx: &mut [usize] = if outer.len() <= small.len() {
        &mut small[..outer.len()]
    } else {
        large.resize(outer.len(), 0);
        &mut large
    };
    let mut rem = row;
    for a in (0..outer.len()).rev() {
        idx[a] = rem % outer[a];
        rem /= outer[a];
    }
    let mut off: usize = idx.iter().zip(ost).map(|(i, s)| i * s).sum();
    let mut k = 0;
    while k < dst.len() {
        let n = (inner - col).min(dst.len() - k);
        let seg = &mut dst[k..k + n];
        if t == 1 {
            run(x, off + col * s0, s0, seg);
        } else {
            // Runs along the last axis, the one before it stepping between them.
            let (mut i1, mut i0) = (col / d0, col % d0);
            let mut j = 0;
            if s0 == 0 && i0 == 0 {
                // Each value repeated d0 times (nearest upsampling): whole runs at once.
                let whole = n / d0;
                for (k, run) in seg[..whole * d0].chunks_exact_mut(d0).enumerate() {
                    run.fill(x[off + (i1 + k) * s1]);
                }
                j = whole * d0;
                i1 += whole;
            }
            while j < n {
                let m = (d0 - i0).min(n - j);
                short_run(x, off + i1 * s1 + i0 * s0, s0, &mut seg[j..j + m]);
                j += m;
                i0 = 0;
                i1 += 1;
            }
        }
        k += n;
        col = 0;
        // Next row: carry through the outer axes.
        for a in (0..outer.len()).rev() {
            idx[a] += 1;
            off += ost[a];
            if idx[a] < outer[a] {
                break;
            }
            off -= ost[a] * outer[a];
            idx[a] = 0;
        }
    }
}

/// `seg[i] = x[at + i * step]`.
fn run<T: Copy>(x: &[T], at: usize, step: usize, seg: &mut [T]) {
    match step {
        0 => seg.fill(x[at]),
        1 => seg.copy_from_slice(&x[at..at + seg.len()]),
        s => {
            for (i, v) in seg.iter_mut().enumerate() {
                *v = x[at + i * s];
            }
        }
    }
}

/// [`run`] for a few elements: plain loops, no call to `memcpy` or `memset`.
#[inline(always)]
fn short_run<T: Copy>(x: &[T], at: usize, step: usize, seg: &mut [T]) {
    if step == 0 {
        let v = x[at];
        for e in seg.iter_mut() {
            *e = v;
        }
    } else {
        for (i, e) in seg.iter_mut().enumerate() {
            *e = x[at + i * step];
        }
    }
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

    /// Every way of walking rows (one axis, or the last two when the last is short; steps of
    /// 0, 1 and more) reads what per-element indexing reads, from any start.
    #[test]
    fn gather_block_matches_per_element_reads() {
        let x: Vec<u32> = (0..4096).collect();
        let cases: &[(&[usize], &[usize])] = &[
            (&[6, 2, 5, 2], &[5, 0, 1, 0]),   // nearest upsampling by 2
            (&[3, 4, 6, 4], &[12, 0, 2, 0]),  // by 4, of every other column
            (&[3, 4, 3], &[12, 3, 1]),        // short contiguous rows
            (&[2, 7, 3], &[1, 2, 40]),        // odd strides
            (&[5, 40], &[40, 1]),             // long rows
            (&[4, 33], &[1, 0]),              // broadcast along a long axis
            (&[9, 3], &[0, 7]),               // two axes only
            (&[30], &[2]),                    // one axis
            (&[2, 3, 4, 1], &[100, 0, 3, 0]), // a last axis of 1
        ];
        for (dims, strides) in cases {
            let total: usize = dims.iter().product();
            let at = |mut i: usize| {
                let mut off = 0;
                for a in (0..dims.len()).rev() {
                    off += (i % dims[a]) * strides[a];
                    i /= dims[a];
                }
                x[off]
            };
            for start in [0, 1, 3, total / 2, total - 1] {
                for len in [1, 2, 7, total - start] {
                    let len = len.min(total - start);
                    let mut got = vec![u32::MAX; len];
                    gather_block(&x, dims, strides, start, &mut got);
                    let want: Vec<u32> = (start..start + len).map(at).collect();
                    assert_eq!(got, want, "dims {dims:?} strides {strides:?} start {start} len {len}");
                }
            }
        }
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
