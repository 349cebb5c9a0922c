//! The window programs evaluated on the CPU against direct loops written from the ops' docs.

use super::program_eval::eval;
use super::windows::WindowProgram;
use crate::Window;

fn params(h: usize, w: usize, win: &Window) -> Vec<i64> {
    let (oh, ow) = win.out_hw(h, w).unwrap();
    [h, w, win.kh, win.kw, win.stride_h, win.stride_w, win.pad_h, win.pad_w, oh, ow].iter().map(|&v| v as i64).collect()
}

/// Max and tie count of window (oy, ox) of plane `p`, taps inside the image in (i, j) order.
fn window_max(x: &[f32], p: usize, h: usize, w: usize, win: &Window, oy: usize, ox: usize) -> (f32, f32) {
    let mut best: Option<(f32, f32)> = None;
    for i in 0..win.kh {
        for j in 0..win.kw {
            let (y, xx) = ((oy * win.stride_h + i) as i64 - win.pad_h as i64, (ox * win.stride_w + j) as i64 - win.pad_w as i64);
            if y < 0 || xx < 0 || y >= h as i64 || xx >= w as i64 {
                continue;
            }
            let v = x[p * h * w + y as usize * w + xx as usize];
            best = Some(match best {
                None => (v, 1.0),
                Some((m, _)) if v > m => (v, 1.0),
                Some((m, t)) if v == m => (m, t + 1.0),
                Some(b) => b,
            });
        }
    }
    best.unwrap()
}

fn cases() -> Vec<(usize, usize, usize, Window)> {
    let odd = Window { kh: 3, kw: 2, stride_h: 2, stride_w: 1, pad_h: 1, pad_w: 1 };
    vec![(2, 5, 6, Window::square(2, 2, 0)), (3, 5, 4, odd), (1, 4, 4, Window::square(3, 1, 1)), (1, 2, 3, Window::square(5, 1, 2))]
}

/// Inputs with ties (values from a small set) so the tie split is exercised.
fn input(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7) % 5) as f32 - 2.0).collect()
}

#[test]
fn max_pool_program_is_the_op() {
    for (planes, h, w, win) in cases() {
        let x = input(planes * h * w);
        let (oh, ow) = win.out_hw(h, w).unwrap();
        let got = eval(&WindowProgram::MaxPool.program(), &[&x], &params(h, w, &win), planes * oh * ow).unwrap();
        let mut want = Vec::new();
        for p in 0..planes {
            for oy in 0..oh {
                for ox in 0..ow {
                    want.push(window_max(&x, p, h, w, &win, oy, ox).0);
                }
            }
        }
        assert_eq!(got, want, "{win:?}");
    }
}

#[test]
fn max_pool_grad_program_is_the_op() {
    for (planes, h, w, win) in cases() {
        let x = input(planes * h * w);
        let (oh, ow) = win.out_hw(h, w).unwrap();
        let dy: Vec<f32> = (0..planes * oh * ow).map(|i| 1.0 + i as f32 * 0.25).collect();
        let got = eval(&WindowProgram::MaxPoolGrad.program(), &[&x, &dy], &params(h, w, &win), planes * h * w).unwrap();
        // Scatter form: each window passes dy / ties to its taps equal to the maximum.
        let mut want = vec![0.0f32; planes * h * w];
        for p in 0..planes {
            for oy in 0..oh {
                for ox in 0..ow {
                    let (m, t) = window_max(&x, p, h, w, &win, oy, ox);
                    for i in 0..win.kh {
                        for j in 0..win.kw {
                            let (y, xx) =
                                ((oy * win.stride_h + i) as i64 - win.pad_h as i64, (ox * win.stride_w + j) as i64 - win.pad_w as i64);
                            if y >= 0 && xx >= 0 && y < h as i64 && xx < w as i64 {
                                let e = p * h * w + y as usize * w + xx as usize;
                                if x[e] == m {
                                    want[e] += dy[(p * oh + oy) * ow + ox] / t;
                                }
                            }
                        }
                    }
                }
            }
        }
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "{win:?}: {got:?} vs {want:?}");
        }
    }
}

#[test]
fn a_load_outside_the_input_is_an_error() {
    let win = Window::square(2, 2, 0);
    // Claims a 4x4 image over 3 elements.
    let e = eval(&WindowProgram::MaxPool.program(), &[&[1.0, 2.0, 3.0]], &params(4, 4, &win), 4);
    assert!(e.is_err());
}

#[test]
fn avg_pool_programs_are_the_mean_and_its_gradient() {
    for (planes, h, w, win) in cases() {
        let x = input(planes * h * w);
        let (oh, ow) = win.out_hw(h, w).unwrap();
        let kk = (win.kh * win.kw) as f64;
        let inside = |oy: usize, ox: usize, i: usize, j: usize| {
            let (y, xx) = ((oy * win.stride_h + i) as i64 - win.pad_h as i64, (ox * win.stride_w + j) as i64 - win.pad_w as i64);
            (y >= 0 && xx >= 0 && y < h as i64 && xx < w as i64).then(|| y as usize * w + xx as usize)
        };
        let xs: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let got = eval(&WindowProgram::AvgPool.program(), &[&xs], &params(h, w, &win), planes * oh * ow).unwrap();
        let dy: Vec<f64> = (0..planes * oh * ow).map(|i| 1.0 + i as f64 * 0.25).collect();
        let dx = eval(&WindowProgram::AvgPoolGrad.program(), &[&xs, &dy], &params(h, w, &win), planes * h * w).unwrap();
        let mut want_dx = vec![0.0f64; planes * h * w];
        for p in 0..planes {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut sum = 0.0;
                    for i in 0..win.kh {
                        for j in 0..win.kw {
                            if let Some(e) = inside(oy, ox, i, j) {
                                sum += xs[p * h * w + e];
                                want_dx[p * h * w + e] += dy[(p * oh + oy) * ow + ox] / kk;
                            }
                        }
                    }
                    let o = (p * oh + oy) * ow + ox;
                    assert!((got[o] - sum / kk).abs() < 1e-12, "{win:?} at {o}: {} vs {}", got[o], sum / kk);
                }
            }
        }
        for (g, w) in dx.iter().zip(&want_dx) {
            assert!((g - w).abs() < 1e-12, "{win:?}: {dx:?} vs {want_dx:?}");
        }
    }
}

/// `[outer, len, inner]` sizes of `dims` around `axis`.
fn split(dims: &[usize], axis: usize) -> (usize, usize, usize) {
    (dims[..axis].iter().product(), dims[axis], dims[axis + 1..].iter().product())
}

#[test]
fn gather_and_scatter_add_programs_are_the_ops() {
    use super::indexing::{gather_params, scatter_add_params, IndexProgram};
    let p = |v: [usize; 3]| v.map(|x| x as i64).to_vec();
    // x [2, 3, 2]; idx [2, 4, 2] along axis 1 (indices 0..3), -0.0 kept as a copy.
    let (dx, di) = ([2usize, 3, 2], [2usize, 4, 2]);
    let x: Vec<f32> = (0..12).map(|i| if i == 4 { -0.0 } else { i as f32 * 1.5 - 3.0 }).collect();
    let idx: Vec<f32> = (0..16).map(|i| ((i * 7 + 1) % 3) as f32).collect();
    let got = eval(&IndexProgram::Gather.program(), &[&x, &idx], &p(gather_params(&dx, &di, 1)), 16).unwrap();
    let (outer, j, inner) = split(&di, 1);
    for o in 0..outer {
        for jj in 0..j {
            for r in 0..inner {
                let e = (o * j + jj) * inner + r;
                let want = x[(o * dx[1] + idx[e] as usize) * inner + r];
                assert_eq!(got[e].to_bits(), want.to_bits(), "gather at {e}");
            }
        }
    }
    // Scatter the gathered values back into a size-5 axis (indices 0..3: rows 3, 4 stay 0).
    let src: Vec<f32> = (0..16).map(|i| i as f32 + 0.5).collect();
    let got = eval(&IndexProgram::ScatterAdd.program(), &[&src, &idx], &p(scatter_add_params(&di, 1, 5)), 20).unwrap();
    let mut want = vec![0.0f32; 20];
    for o in 0..outer {
        for jj in 0..j {
            for r in 0..inner {
                let e = (o * j + jj) * inner + r;
                want[(o * 5 + idx[e] as usize) * inner + r] += src[e];
            }
        }
    }
    assert_eq!(got, want);
}

#[test]
fn a_bad_index_reaches_the_fault() {
    use super::indexing::{gather_params, scatter_add_params, IndexProgram};
    let x = [1.0f32, 2.0];
    for bad in [2.0, -1.0, 0.5, f32::NAN, f32::INFINITY] {
        let p = gather_params(&[2], &[1], 0).map(|v| v as i64);
        let e = eval(&IndexProgram::Gather.program(), &[&x, &[bad]], &p, 1).unwrap_err();
        assert!(e.to_string().contains("fault"), "{e}");
        let p = scatter_add_params(&[1], 0, 2).map(|v| v as i64);
        assert!(eval(&IndexProgram::ScatterAdd.program(), &[&x[..1], &[bad]], &p, 2).is_err());
    }
    assert!(IndexProgram::ALL.iter().all(|p| p.program().faults()));
}

#[test]
fn im2col_and_col2im_programs_are_the_ops() {
    use super::columns::ColumnProgram;
    // With a window larger than the image and one whose stride skips pixels.
    let mut all = cases();
    all.push((2, 3, 2, Window { kh: 4, kw: 5, stride_h: 3, stride_w: 4, pad_h: 2, pad_w: 3 }));
    all.push((1, 7, 5, Window::square(2, 3, 0)));
    for (planes, h, w, win) in all {
        let x = input(planes * h * w);
        let (oh, ow) = win.out_hw(h, w).unwrap();
        let (kk, l) = (win.kh * win.kw, oh * ow);
        let at = |oy: usize, ox: usize, i: usize, j: usize| {
            let (y, xx) = ((oy * win.stride_h + i) as i64 - win.pad_h as i64, (ox * win.stride_w + j) as i64 - win.pad_w as i64);
            (y >= 0 && xx >= 0 && y < h as i64 && xx < w as i64).then(|| y as usize * w + xx as usize)
        };
        let cols = eval(&ColumnProgram::Im2Col.program(), &[&x], &params(h, w, &win), planes * kk * l).unwrap();
        let dy: Vec<f32> = (0..planes * kk * l).map(|i| 0.1 + (i % 13) as f32 * 0.37).collect();
        let dx = eval(&ColumnProgram::Col2Im.program(), &[&dy], &params(h, w, &win), planes * h * w).unwrap();
        // col2im in the CPU's order: taps (i, j) ascending, each scattering its windows.
        let mut want = vec![0.0f32; planes * h * w];
        for p in 0..planes {
            for i in 0..win.kh {
                for j in 0..win.kw {
                    for oy in 0..oh {
                        for ox in 0..ow {
                            let c = (p * kk + i * win.kw + j) * l + oy * ow + ox;
                            match at(oy, ox, i, j) {
                                Some(e) => {
                                    assert_eq!(cols[c].to_bits(), x[p * h * w + e].to_bits(), "{win:?} im2col at {c}");
                                    want[p * h * w + e] += dy[c];
                                }
                                None => assert_eq!(cols[c].to_bits(), 0, "{win:?} im2col padding at {c}"),
                            }
                        }
                    }
                }
            }
        }
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&dx), bits(&want), "{win:?} col2im: {dx:?} vs {want:?}");
    }
}

#[test]
fn depthwise_conv_program_is_the_op() {
    use super::convolutions::{conv_params, ConvProgram, CONV_PARAMS};
    use super::windows::WINDOW_PARAMS;
    // The window helpers index the geometry by WINDOW_PARAMS: it must lead CONV_PARAMS.
    assert_eq!(CONV_PARAMS[..WINDOW_PARAMS.len()], WINDOW_PARAMS);
    let mut all: Vec<(usize, usize, usize, usize, Window)> = cases().into_iter().map(|(p, h, w, win)| (2, p, h, w, win)).collect();
    all.push((2, 3, 3, 2, Window { kh: 4, kw: 5, stride_h: 3, stride_w: 4, pad_h: 2, pad_w: 3 }));
    all.push((1, 3, 7, 5, Window::square(2, 3, 0)));
    for (n, c, h, w, win) in all {
        let x: Vec<f32> = (0..n * c * h * w).map(|i| ((i * 7) % 11) as f32 * 0.37 - 1.6).collect();
        let k: Vec<f32> = (0..c * win.kh * win.kw).map(|i| ((i * 5) % 9) as f32 * 0.29 - 1.1).collect();
        let (oh, ow) = win.out_hw(h, w).unwrap();
        let params: Vec<i64> = conv_params(&[n, c, h, w], &win).unwrap().iter().map(|&v| v as i64).collect();
        let got = eval(&ConvProgram::Depthwise.program(), &[&x, &k], &params, n * c * oh * ow).unwrap();
        // Op::DepthwiseConv's doc: out[n, c, oy, ox] = Σ_i Σ_j x[n, c, oy*sh + i - ph,
        // ox*sw + j - pw] * w[c, 0, i, j], taps in the padding skipped, i then j ascending.
        let mut want = Vec::new();
        for b in 0..n {
            for ch in 0..c {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let mut acc = 0.0f32;
                        for i in 0..win.kh {
                            for j in 0..win.kw {
                                let y = (oy * win.stride_h + i) as i64 - win.pad_h as i64;
                                let xx = (ox * win.stride_w + j) as i64 - win.pad_w as i64;
                                if y >= 0 && xx >= 0 && y < h as i64 && xx < w as i64 {
                                    acc += x[((b * c + ch) * h + y as usize) * w + xx as usize] * k[(ch * win.kh + i) * win.kw + j];
                                }
                            }
                        }
                        want.push(acc);
                    }
                }
            }
        }
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{win:?} [{n}, {c}, {h}, {w}]: {got:?} vs {want:?}");
    }
}

/// The product program against the plain loop `s += a * b` from 0 in `k` order (Op::MatMul's
/// doc), bit for bit, on every transpose combination, batched, broadcast over the batch, with
/// K = 0 and with a NaN and signed zeros in the operands.
#[test]
fn product_program_is_the_plain_loop() {
    use super::products::{product_params, ProductProgram, Strides};
    // (batch of A, batch of B, m, k, n)
    let shapes = [(1, 1, 3, 5, 4), (2, 2, 4, 7, 3), (1, 3, 5, 2, 6), (3, 1, 2, 9, 5), (1, 1, 1, 33, 1), (2, 2, 3, 0, 2), (1, 1, 6, 1, 7)];
    for (ba, bb, m, k, n) in shapes {
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let mut a: Vec<f32> = (0..ba * m * k).map(|i| ((i * 7) % 13) as f32 * 0.31 - 1.7).collect();
            let mut b: Vec<f32> = (0..bb * k * n).map(|i| ((i * 5) % 11) as f32 * 0.43 - 2.1).collect();
            if let Some(x) = a.get_mut(1) {
                *x = -0.0;
            }
            if let Some(x) = b.get_mut(2) {
                *x = f32::NAN;
            }
            let (sa, sb) = (Strides::of(ba, m, k, ta), Strides::of(bb, k, n, tb));
            let batch = ba.max(bb);
            let params = product_params(m, n, k, sa, sb);
            let got = eval(&ProductProgram::MatMul.program(), &[&a, &b], &params, batch * m * n).unwrap();
            // Element (r, c) of batch entry e of a row-major operand (transposed: stored
            // [cols, rows]); a single matrix serves every entry.
            let at = |x: &[f32], e: usize, count: usize, rows: usize, cols: usize, t: bool, r: usize, c: usize| {
                let e = if count == 1 { 0 } else { e };
                x[e * rows * cols + if t { c * rows + r } else { r * cols + c }]
            };
            let mut want = Vec::new();
            for e in 0..batch {
                for r in 0..m {
                    for c in 0..n {
                        let mut s = 0.0f32;
                        for kk in 0..k {
                            s += at(&a, e, ba, m, k, ta, r, kk) * at(&b, e, bb, k, n, tb, kk, c);
                        }
                        want.push(s);
                    }
                }
            }
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "[{ba}] {m}x{k} ({ta}) times [{bb}] {k}x{n} ({tb}): {got:?} vs {want:?}");
        }
    }
}
