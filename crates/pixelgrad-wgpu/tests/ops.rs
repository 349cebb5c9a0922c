//! Every primitive against plain f64 loops on the host (the conformance suite adds forward
//! and backward checks through the whole engine once it exists).

mod common;

use common::*;
use pixelgrad_core::kernel::eval::eval_one;
use pixelgrad_core::{BinaryOp, Op, ReduceOp, Shape, UnaryOp, Window};
use pixelgrad_wgpu::{MatmulKernel, WgpuBackend, WgpuOptions};

/// The op's one definition (`pixelgrad_core::kernel::defs`) evaluated on the host in f64.
fn unary_ref(op: UnaryOp, x: f64) -> f64 {
    let p: Vec<f64> = op.params().iter().map(|&v| v as f64).collect();
    eval_one::<f64>(&op.kernel().unwrap(), &[x], &p).unwrap()
}

#[test]
fn unary_ops() {
    let b = backend();
    let x = data(1000, 1, -4.0, 4.0);
    let pos = data(1000, 2, 0.01, 50.0);
    let more = [
        UnaryOp::Affine { mul: 1.5, add: -0.25 },
        UnaryOp::Powf(3.0),
        UnaryOp::Powf(-1.5),
        UnaryOp::MaxScalar(0.5),
        UnaryOp::MinScalar(0.5),
    ];
    for op in UnaryOp::ALL.into_iter().chain(more) {
        let input = match op {
            UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Powf(-1.5) => &pos,
            _ => &x,
        };
        let (got, _) = run(&b, &Op::Unary(op), &[(input, &[10, 100])]);
        let want: Vec<f64> = input.iter().map(|&v| unary_ref(op, v as f64)).collect();
        close(&got, &want, 2e-5, 2e-6, &format!("{op:?}"));
    }
    // Negative bases with whole exponents keep the sign rules of powf.
    let (got, _) = run(&b, &Op::Unary(UnaryOp::Powf(3.0)), &[(&[-2.0, 0.0, 2.0], &[3])]);
    close(&got, &[-8.0, 0.0, 8.0], 1e-6, 0.0, "powf negative base");
    // Large arguments stay finite.
    let (got, _) = run(&b, &Op::Unary(UnaryOp::Tanh), &[(&[-100.0, 100.0], &[2])]);
    assert_eq!(got, vec![-1.0, 1.0]);
}

/// The op's one definition evaluated on the host in f64.
fn binary_ref(op: BinaryOp, a: f64, b: f64) -> f64 {
    eval_one::<f64>(&op.kernel().unwrap(), &[a, b], &[]).unwrap()
}

/// Broadcast reference: out[c] = f(a[c mod a's dims], b[...]).
fn broadcast_ref(ins: &[(&[f32], &[usize])], out: &[usize], f: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    let n: usize = out.iter().product();
    (0..n)
        .map(|i| {
            let c = coords(i, out);
            let vals: Vec<f64> = ins
                .iter()
                .map(|(d, s)| {
                    let off = out.len() - s.len();
                    let st = strides(s);
                    let idx: usize = (0..s.len()).map(|k| if s[k] == 1 { 0 } else { c[off + k] * st[k] }).sum();
                    d[idx] as f64
                })
                .collect();
            f(&vals)
        })
        .collect()
}

#[test]
fn binary_ops_with_broadcasting() {
    let b = backend();
    let cases: [(&[usize], &[usize]); 5] = [
        (&[4, 5, 6], &[4, 5, 6]),
        (&[4, 1, 6], &[5, 1]),
        (&[6], &[3, 4, 6]),
        (&[], &[2, 3]),
        (&[2, 1, 3, 1, 2, 1, 2], &[1, 2, 1, 3, 1, 2, 1]),
    ];
    for (sa, sb) in cases {
        let na: usize = sa.iter().product();
        let nb: usize = sb.iter().product();
        // Rounded values so Eq / Ge see ties.
        let a: Vec<f32> = data(na, 3, 0.5, 3.0).iter().map(|v| (v * 4.0).round() / 4.0).collect();
        let bb: Vec<f32> = data(nb, 4, 0.5, 3.0).iter().map(|v| (v * 4.0).round() / 4.0).collect();
        for op in BinaryOp::ALL {
            let (got, out) = run(&b, &Op::Binary(op), &[(&a, sa), (&bb, sb)]);
            let want = broadcast_ref(&[(&a, sa), (&bb, sb)], &out, |v| binary_ref(op, v[0], v[1]));
            close(&got, &want, 2e-5, 1e-6, &format!("{op:?} {sa:?} {sb:?}"));
        }
    }
}

#[test]
fn where_with_broadcasting() {
    let b = backend();
    let cond = [1.0, 0.0, 1.0];
    let a = data(2 * 3, 5, -1.0, 1.0);
    let bb = [7.0];
    let ins: [(&[f32], &[usize]); 3] = [(&cond, &[3]), (&a, &[2, 3]), (&bb, &[1])];
    let (got, out) = run(&b, &Op::Where, &ins);
    let want = broadcast_ref(&ins, &out, |v| if v[0] != 0.0 { v[1] } else { v[2] });
    close(&got, &want, 0.0, 0.0, "where");
    let same: [(&[f32], &[usize]); 3] = [(&[0.0, 2.0], &[2]), (&[1.0, 2.0], &[2]), (&[3.0, 4.0], &[2])];
    assert_eq!(run(&b, &Op::Where, &same).0, vec![3.0, 2.0]);
}

fn reduce_ref(op: ReduceOp, x: &[f32], d: &[usize], axis: usize) -> Vec<f64> {
    let outer: usize = d[..axis].iter().product();
    let len = d[axis];
    let inner: usize = d[axis + 1..].iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        for r in 0..inner {
            let vals: Vec<f64> = (0..len).map(|j| x[(o * len + j) * inner + r] as f64).collect();
            out.push(match op {
                ReduceOp::Sum => vals.iter().sum(),
                ReduceOp::Max => vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                ReduceOp::Min => vals.iter().cloned().fold(f64::INFINITY, f64::min),
                ReduceOp::ArgMax => {
                    let mut best = 0;
                    for j in 1..len {
                        if vals[j] > vals[best] {
                            best = j;
                        }
                    }
                    best as f64
                }
                ReduceOp::LogSumExp => {
                    let m = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    m + vals.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
                }
            });
        }
    }
    out
}

#[test]
fn reductions_short_and_long_axes() {
    let b = backend();
    // Short axes take the serial kernel, long ones the workgroup tree; on CPU adapters the
    // serial kernel folds up to 4096 values in chunks of 64 (4096 and 4097 sit either side).
    let cases: [(&[usize], usize); 8] = [
        (&[3, 4, 5], 0),
        (&[3, 4, 5], 1),
        (&[3, 4, 5], 2),
        (&[2, 1000, 3], 1),
        (&[5000], 0),
        (&[7, 300], 1),
        (&[2, 4096], 1),
        (&[4097, 2], 0),
    ];
    for (d, axis) in cases {
        let n: usize = d.iter().product();
        // Coarse values produce ties for argmax (the first maximum wins).
        let x: Vec<f32> = data(n, 6, -2.0, 2.0).iter().map(|v| v.round()).collect();
        for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::LogSumExp] {
            let (got, _) = run(&b, &Op::Reduce { op, axis }, &[(&x, d)]);
            close(&got, &reduce_ref(op, &x, d, axis), 1e-5, 1e-4, &format!("{op:?} {d:?} axis {axis}"));
        }
    }
}

/// Host matmul in f64 with the same transpose and batch-broadcast rules as `Op::MatMul`.
fn matmul_ref(a: &[f32], sa: &[usize], b: &[f32], sb: &[usize], ta: bool, tb: bool) -> Vec<f64> {
    let ad = &sa[sa.len() - 2..];
    let bd = &sb[sb.len() - 2..];
    let (m, k) = if ta { (ad[1], ad[0]) } else { (ad[0], ad[1]) };
    let n = if tb { bd[0] } else { bd[1] };
    let ba = if sa.len() == 3 { sa[0] } else { 1 };
    let bb = if sb.len() == 3 { sb[0] } else { 1 };
    let batch = ba.max(bb);
    let mut out = vec![0f64; batch * m * n];
    for z in 0..batch {
        let ao = if ba == 1 { 0 } else { z * m * k };
        let bo = if bb == 1 { 0 } else { z * k * n };
        for i in 0..m {
            for j in 0..n {
                let mut s = 0f64;
                for p in 0..k {
                    let av = if ta { a[ao + p * m + i] } else { a[ao + i * k + p] };
                    let bv = if tb { b[bo + j * k + p] } else { b[bo + p * n + j] };
                    s += av as f64 * bv as f64;
                }
                out[z * m * n + i * n + j] = s;
            }
        }
    }
    out
}

#[test]
fn matmul_odd_sizes_transposes_and_batches() {
    // Both kernels on whatever adapter runs the tests: the tiled one (GPUs) and the
    // register-blocked one (CPU adapters), each with aligned (vec4) and unaligned operands;
    // the register one with and without subgroups (on lavapipe, products of 2^16 and more
    // then share A's loads across the lanes, in blocks of 8 to 64 rows chosen by M).
    for (matmul, subgroups) in [(MatmulKernel::Tiled, true), (MatmulKernel::Registers, false), (MatmulKernel::Registers, true)] {
        let b = WgpuBackend::new(WgpuOptions { matmul, subgroups, ..Default::default() }).expect("a WebGPU adapter");
        let cases: [(&[usize], &[usize], bool, bool); 30] = [
            (&[1, 1], &[1, 1], false, false),
            (&[17, 33], &[33, 65], false, false),
            (&[33, 17], &[33, 65], true, false),
            (&[17, 33], &[65, 33], false, true),
            (&[33, 17], &[65, 33], true, true),
            (&[3, 17, 33], &[3, 33, 65], false, false),
            (&[1, 17, 33], &[4, 33, 20], false, false),
            (&[5, 70, 9], &[9, 130], false, false),
            // Large enough for the 128x128 kernel, with partial edge tiles.
            (&[300, 37], &[37, 260], false, false),
            (&[37, 300], &[260, 37], true, true),
            (&[2, 37, 300], &[1, 37, 260], true, false),
            (&[300, 37], &[260, 37], false, true),
            // Contiguous dimensions that are multiples of 4 (aligned vec4 reads), with
            // partial register blocks, K % 4 leftovers and batch broadcasting.
            (&[20, 36], &[36, 140], false, false),
            (&[36, 20], &[36, 140], true, false),
            (&[20, 36], &[140, 36], false, true),
            (&[36, 20], &[140, 36], true, true),
            (&[8, 6], &[6, 12], false, false),
            (&[6, 8], &[12, 6], true, true),
            (&[3, 4, 8], &[1, 8, 4], false, false),
            (&[2, 12, 4], &[2, 12, 8], true, false),
            // Shared-A blocks: the convolution shapes of a small CNN (M = 8 or 16 filters,
            // K = 9 or 72, N = 676 or 121 positions, the weights broadcast over the batch),
            // their gradients, and each block height with edges in M, N and K.
            (&[8, 9], &[6, 9, 676], false, false),
            (&[16, 72], &[4, 72, 121], false, false),
            (&[4, 8, 676], &[4, 9, 676], false, true),
            (&[8, 9], &[4, 8, 676], true, false),
            (&[103, 64], &[103, 40], true, false),
            (&[103, 24], &[103, 44], true, false),
            (&[70, 130], &[130, 33], false, false),
            (&[2, 100, 31], &[2, 45, 100], true, true),
            // Split-K (outputs up to 16x16, K contiguous in both): K not a multiple of the
            // lanes' stride, a broadcast B, a 3x5 block.
            (&[2, 16, 100], &[1, 16, 100], false, true),
            (&[3, 256], &[5, 256], false, true),
        ];
        for (sa, sb, ta, tb) in cases {
            let a = data(sa.iter().product(), 7, -1.0, 1.0);
            let bv = data(sb.iter().product(), 8, -1.0, 1.0);
            let op = Op::MatMul { trans_a: ta, trans_b: tb };
            let (got, _) = run(&b, &op, &[(&a, sa), (&bv, sb)]);
            let what = format!("{matmul:?} (subgroups {subgroups}) matmul {sa:?} {sb:?} {ta} {tb}");
            close(&got, &matmul_ref(&a, sa, &bv, sb, ta, tb), 1e-5, 1e-5, &what);
        }
        // K = 0 gives zeros.
        let (got, _) = run(&b, &Op::MatMul { trans_a: false, trans_b: false }, &[(&[], &[2, 0]), (&[], &[0, 3])]);
        assert_eq!(got, vec![0.0; 6]);
    }
}

fn im2col_ref(x: &[f32], d: &[usize], w: &Window) -> Vec<f64> {
    let (n, c, h, wd) = (d[0], d[1], d[2], d[3]);
    let (oh, ow) = w.out_hw(h, wd).unwrap();
    let mut out = vec![0f64; n * c * w.kh * w.kw * oh * ow];
    for b in 0..n {
        for ch in 0..c {
            for i in 0..w.kh {
                for j in 0..w.kw {
                    let row = ch * w.kh * w.kw + i * w.kw + j;
                    for oy in 0..oh {
                        for ox in 0..ow {
                            let y = (oy * w.stride_h + i) as isize - w.pad_h as isize;
                            let xx = (ox * w.stride_w + j) as isize - w.pad_w as isize;
                            if y >= 0 && (y as usize) < h && xx >= 0 && (xx as usize) < wd {
                                out[((b * c * w.kh * w.kw + row) * oh + oy) * ow + ox] =
                                    x[((b * c + ch) * h + y as usize) * wd + xx as usize] as f64;
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// col2im is im2col's adjoint: <im2col(x), y> == <x, col2im(y)>, and col2im scatters exactly
/// where im2col gathers.
fn col2im_ref(col: &[f32], n: usize, c: usize, h: usize, wd: usize, w: &Window) -> Vec<f64> {
    let (oh, ow) = w.out_hw(h, wd).unwrap();
    let mut out = vec![0f64; n * c * h * wd];
    for b in 0..n {
        for ch in 0..c {
            for i in 0..w.kh {
                for j in 0..w.kw {
                    let row = ch * w.kh * w.kw + i * w.kw + j;
                    for oy in 0..oh {
                        for ox in 0..ow {
                            let y = (oy * w.stride_h + i) as isize - w.pad_h as isize;
                            let xx = (ox * w.stride_w + j) as isize - w.pad_w as isize;
                            if y >= 0 && (y as usize) < h && xx >= 0 && (xx as usize) < wd {
                                out[((b * c + ch) * h + y as usize) * wd + xx as usize] +=
                                    col[((b * c * w.kh * w.kw + row) * oh + oy) * ow + ox] as f64;
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn im2col_and_col2im() {
    let b = backend();
    let windows = [Window::square(3, 1, 1), Window::square(2, 2, 0), Window { kh: 3, kw: 2, stride_h: 2, stride_w: 1, pad_h: 1, pad_w: 0 }];
    for w in windows {
        let d = [2usize, 3, 7, 6];
        let x = data(d.iter().product(), 9, -1.0, 1.0);
        let (got, out) = run(&b, &Op::Im2Col(w), &[(&x, &d)]);
        close(&got, &im2col_ref(&x, &d, &w), 0.0, 0.0, &format!("im2col {w:?}"));
        let col = data(out.iter().product(), 10, -1.0, 1.0);
        let (got, _) = run(&b, &Op::Col2Im { window: w, h: 7, w: 6 }, &[(&col, &out)]);
        close(&got, &col2im_ref(&col, 2, 3, 7, 6, &w), 1e-6, 1e-6, &format!("col2im {w:?}"));
    }
}

#[test]
fn gather_and_scatter_add() {
    let b = backend();
    // x [2, 4, 3], gather along axis 1 with idx [2, 5, 3].
    let x = data(24, 11, -1.0, 1.0);
    let idx: Vec<f32> = (0..30).map(|i| ((i * 7) % 4) as f32).collect();
    let (got, _) = run(&b, &Op::Gather { axis: 1 }, &[(&x, &[2, 4, 3]), (&idx, &[2, 5, 3])]);
    let want: Vec<f64> = (0..30)
        .map(|i| {
            let c = coords(i, &[2, 5, 3]);
            x[(c[0] * 4 + idx[i] as usize) * 3 + c[2]] as f64
        })
        .collect();
    close(&got, &want, 0.0, 0.0, "gather");
    // scatter_add of src [2, 5, 3] into axis size 4, repeated indices accumulate.
    let src = data(30, 12, -1.0, 1.0);
    let (got, _) = run(&b, &Op::ScatterAdd { axis: 1, size: 4 }, &[(&src, &[2, 5, 3]), (&idx, &[2, 5, 3])]);
    let mut want = vec![0f64; 24];
    for i in 0..30 {
        let c = coords(i, &[2, 5, 3]);
        want[(c[0] * 4 + idx[i] as usize) * 3 + c[2]] += src[i] as f64;
    }
    close(&got, &want, 1e-6, 1e-6, "scatter_add");
    // Axis 0 and a last-axis gather (embedding lookups, cross-entropy picks).
    let (got, _) = run(&b, &Op::Gather { axis: 1 }, &[(&[1.0, 2.0, 3.0, 4.0], &[2, 2]), (&[1.0, 0.0], &[2, 1])]);
    assert_eq!(got, vec![2.0, 3.0]);
}

#[test]
fn layout_ops() {
    let b = backend();
    let d = [2usize, 3, 4];
    let x: Vec<f32> = (0..24).map(|i| i as f32).collect();
    // permute [2, 0, 1] → out [4, 2, 3]
    let (got, out) = run(&b, &Op::Permute(vec![2, 0, 1]), &[(&x, &d)]);
    assert_eq!(out, vec![4, 2, 3]);
    let want: Vec<f32> = (0..24)
        .map(|i| {
            let c = coords(i, &out);
            x[c[1] * 12 + c[2] * 4 + c[0]]
        })
        .collect();
    assert_eq!(got, want);
    // expand [3, 1] → [2, 3, 4]
    let (got, _) = run(&b, &Op::Expand(Shape::from([2, 3, 4])), &[(&[1.0, 2.0, 3.0], &[3, 1])]);
    let want: Vec<f32> = (0..24).map(|i| [1.0, 2.0, 3.0][(i / 4) % 3]).collect();
    assert_eq!(got, want);
    // slice
    let (got, _) = run(&b, &Op::Slice { starts: vec![1, 1, 0], ends: vec![2, 3, 3] }, &[(&x, &d)]);
    assert_eq!(got, vec![16.0, 17.0, 18.0, 20.0, 21.0, 22.0]);
    // pad
    let (got, out) = run(&b, &Op::Pad { before: vec![0, 1], after: vec![1, 0] }, &[(&[1.0, 2.0, 3.0, 4.0], &[2, 2])]);
    assert_eq!(out, vec![3, 3]);
    assert_eq!(got, vec![0.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 0.0, 0.0]);
    // concat along the middle axis, including an empty input
    let a = [1.0, 2.0, 3.0, 4.0];
    let c = [5.0, 6.0];
    let (got, out) = run(&b, &Op::Concat { axis: 1 }, &[(&a, &[2, 2]), (&[], &[2, 0]), (&c, &[2, 1])]);
    assert_eq!(out, vec![2, 3]);
    assert_eq!(got, vec![1.0, 2.0, 5.0, 3.0, 4.0, 6.0]);
    // rank 7 permute that merges down to fewer axes
    let d7 = [2usize, 1, 2, 1, 2, 1, 2];
    let x7: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let (got, out) = run(&b, &Op::Permute(vec![6, 5, 4, 3, 2, 1, 0]), &[(&x7, &d7)]);
    let want: Vec<f32> = (0..16)
        .map(|i| {
            let c = coords(i, &out);
            let st = strides(&d7);
            (0..7).map(|k| c[k] * st[6 - k]).sum::<usize>() as f32
        })
        .collect();
    assert_eq!(got, want);
    // reshape shares storage
    let s = b_upload(&b, &x);
    let r = pixelgrad_core::Backend::execute(&b, &Op::Reshape(Shape::from([24])), &[&s], &[&Shape::from(d)], &Shape::from([24])).unwrap();
    assert!(r.ptr_eq(&s));
}

fn b_upload(b: &pixelgrad_wgpu::WgpuBackend, x: &[f32]) -> pixelgrad_core::Storage {
    pixelgrad_core::Backend::upload(b, x).unwrap()
}

#[test]
fn fill_and_empty() {
    let b = backend();
    let (got, _) = run(&b, &Op::Fill { value: 2.5, shape: Shape::from([3, 3]) }, &[]);
    assert_eq!(got, vec![2.5; 9]);
    let (got, _) = run(&b, &Op::Fill { value: 1.0, shape: Shape::from([0, 3]) }, &[]);
    assert!(got.is_empty());
    let (got, _) = run(&b, &Op::Fill { value: -1.0, shape: Shape::scalar() }, &[]);
    assert_eq!(got, vec![-1.0]);
}
