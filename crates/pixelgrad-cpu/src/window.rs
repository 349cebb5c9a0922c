//! Sliding windows (NCHW): im2col and its adjoint col2im, the depthwise convolution, and max
//! pooling and its gradient. Each is split into independent output rows or planes (im2col:
//! one column-matrix row per (n, c, i, j); the others one image plane per (n, c)), so they
//! parallelise without write conflicts.
//!
//! im2col and col2im are also programs of the kernel IR (`pixelgrad_core::kernel::columns`,
//! what WebGL1 renders); these loops are kept for a measured speed: evaluating the programs
//! with `program_eval::eval` took 356 ms (im2col) and 168 ms (col2im) for the cnn's second
//! convolution ([32, 8, 13, 13], 3x3) where these loops take 0.66 and 0.88 ms, and 211 / 107 ms
//! against 0.26 / 0.31 ms for its first ([32, 1, 28, 28]) (test profile, 20 reps, 2026-12-07;
//! bench/notes/2026-12-07-im2col-col2im-from-one-definition.md).

use pixelgrad_core::{Result, Window};

use crate::element::Element;
use crate::par::for_chunks;

/// Input coordinate of output position `o` at kernel offset `k`, or `None` in the padding.
#[inline]
pub(crate) fn src_coord(o: usize, stride: usize, k: usize, pad: usize, size: usize) -> Option<usize> {
    let p = o * stride + k;
    if p < pad || p - pad >= size {
        None
    } else {
        Some(p - pad)
    }
}

/// The output positions `lo..hi` (out of `n`) whose input coordinate `o * stride + k - pad`
/// falls inside `0..size`, so inner loops run without bounds tests.
#[inline]
pub(crate) fn valid_range(n: usize, stride: usize, k: usize, pad: usize, size: usize) -> (usize, usize) {
    // o * stride + k >= pad  <=>  o >= ceil((pad - k) / stride)
    let lo = if k >= pad { 0 } else { (pad - k).div_ceil(stride) };
    // o * stride + k - pad < size  <=>  o * stride < size + pad - k
    let hi = if size + pad <= k { 0 } else { (size + pad - k).div_ceil(stride) };
    (lo.min(n), hi.min(n).max(lo.min(n)))
}

/// The kernel offsets `lo..hi` (out of `k`) of output position `o` whose input coordinate
/// `o * stride + t - pad` lies inside `0..size`: at most `min(k, size)` of them, so a window
/// loop over them is bounded by the image, however large the window or its padding.
#[inline]
pub(crate) fn tap_range(o: usize, stride: usize, k: usize, pad: usize, size: usize) -> (usize, usize) {
    // o * stride <= padded size (`Window::out_hw`), so nothing here overflows.
    let start = o * stride;
    // pad <= start + t < pad + size
    let lo = pad.saturating_sub(start).min(k);
    let hi = (pad + size).saturating_sub(start).clamp(lo, k);
    (lo, hi)
}

/// The input coordinate of tap `lo` of output position `o` (the first of [`tap_range`]'s),
/// clamped to `0..=size` so that an empty range still slices an image row in bounds.
#[inline]
pub(crate) fn first_coord(o: usize, stride: usize, lo: usize, pad: usize, size: usize) -> usize {
    (o * stride + lo).saturating_sub(pad).min(size)
}

/// `[N, C, H, W]` → `[N, C*kh*kw, OH*OW]`, row `c*kh*kw + i*kw + j`, padding reads 0.
pub fn im2col<T: Element>(x: &[T], dims: &[usize], w: &Window, oh: usize, ow: usize) -> Vec<T> {
    let (n, c, h, wd) = (dims[0], dims[1], dims[2], dims[3]);
    let kk = w.kh * w.kw;
    // Every element is written below, padding as zeros (a recycled buffer holds old values).
    let mut out = T::output(n * c * kk * oh * ow);
    for_chunks(&mut out, oh * ow, |row, dst| {
        let (img, r) = (row / (c * kk), row % (c * kk));
        let (ch, i, j) = (r / kk, (r % kk) / w.kw, r % w.kw);
        let plane = &x[(img * c + ch) * h * wd..(img * c + ch + 1) * h * wd];
        let (lo, hi) = valid_range(ow, w.stride_w, j, w.pad_w, wd);
        for oy in 0..oh {
            let line = &mut dst[oy * ow..(oy + 1) * ow];
            let Some(y) = src_coord(oy, w.stride_h, i, w.pad_h, h) else {
                line.fill(T::ZERO);
                continue;
            };
            let src = &plane[y * wd..(y + 1) * wd];
            // x = ox * stride + j - pad, valid for ox in lo..hi; the rest is padding.
            line[..lo].fill(T::ZERO);
            line[hi.max(lo)..].fill(T::ZERO);
            if lo >= hi {
                continue;
            }
            let x0 = lo * w.stride_w + j - w.pad_w;
            if w.stride_w == 1 {
                line[lo..hi].copy_from_slice(&src[x0..x0 + (hi - lo)]);
            } else {
                for (t, d) in line[lo..hi].iter_mut().enumerate() {
                    *d = src[x0 + t * w.stride_w];
                }
            }
        }
    });
    out
}

/// `[N, C*kh*kw, OH*OW]` → `[N, C, h, w]`, summing overlapping window positions. Each tap
/// `(i, j)` visits only the window rows and columns where it lies inside the image
/// ([`valid_range`]), never the rows in the padding.
pub fn col2im<T: Element>(cols: &[T], dims: &[usize], w: &Window, h: usize, wd: usize, oh: usize, ow: usize) -> Vec<T> {
    let n = dims[0];
    let kk = w.kh * w.kw;
    let c = dims[1] / kk;
    let mut out = vec![T::ZERO; n * c * h * wd];
    for_chunks(&mut out, h * wd, |plane, dst| {
        let (img, ch) = (plane / c, plane % c);
        for i in 0..w.kh {
            let (y_lo, y_hi) = valid_range(oh, w.stride_h, i, w.pad_h, h);
            if y_lo == y_hi {
                continue;
            }
            for j in 0..w.kw {
                let (lo, hi) = valid_range(ow, w.stride_w, j, w.pad_w, wd);
                if lo == hi {
                    continue;
                }
                let row = img * c * kk + ch * kk + i * w.kw + j;
                let src = &cols[row * oh * ow..(row + 1) * oh * ow];
                for oy in y_lo..y_hi {
                    let y = oy * w.stride_h + i - w.pad_h;
                    let x0 = lo * w.stride_w + j - w.pad_w;
                    let from = &src[oy * ow + lo..oy * ow + hi];
                    let line = &mut dst[y * wd..(y + 1) * wd];
                    if w.stride_w == 1 {
                        for (d, &v) in line[x0..x0 + (hi - lo)].iter_mut().zip(from) {
                            *d += v;
                        }
                    } else {
                        for (t, &v) in from.iter().enumerate() {
                            line[x0 + t * w.stride_w] += v;
                        }
                    }
                }
            }
        }
    });
    out
}

/// Depthwise convolution `x [N, C, H, W]` * `k [C, 1, kh, kw]` → `[N, C, OH, OW]`
/// ([`pixelgrad_core::Op::DepthwiseConv`]): one output plane per (n, c), each output summed
/// over its taps inside the image in (i, j) order (the padding skipped: the loops run over
/// [`tap_range`], at most `min(kh, H) x min(kw, W)` taps however large the window).
/// The f32 fast path computes the same sums with SIMD instead (`Element::depthwise`,
/// src/depthwise.rs), and falls back to this for windows far larger than the image.
pub fn depthwise<T: Element>(x: &[T], dims: &[usize], k: &[T], w: &Window, oh: usize, ow: usize) -> Result<Vec<T>> {
    crate::bounds::check_window("depthwise_conv", x.len(), dims, w, oh, ow)?;
    crate::bounds::check_weights("depthwise_conv", k.len(), dims[1], 1, w)?;
    let (c, h, wd) = (dims[1], dims[2], dims[3]);
    let kk = w.kh * w.kw;
    let mut out = vec![T::ZERO; dims[0] * c * oh * ow];
    for_chunks(&mut out, oh * ow, |plane, dst| {
        let ch = plane % c;
        let src = &x[plane * h * wd..(plane + 1) * h * wd];
        let taps = &k[ch * kk..(ch + 1) * kk];
        for oy in 0..oh {
            let (i0, i1) = tap_range(oy, w.stride_h, w.kh, w.pad_h, h);
            for ox in 0..ow {
                let (j0, j1) = tap_range(ox, w.stride_w, w.kw, w.pad_w, wd);
                let x0 = first_coord(ox, w.stride_w, j0, w.pad_w, wd);
                let mut acc = T::ZERO;
                for i in i0..i1 {
                    let y = oy * w.stride_h + i - w.pad_h;
                    let row = &src[y * wd + x0..y * wd + x0 + (j1 - j0)];
                    for (&v, &tap) in row.iter().zip(&taps[i * w.kw + j0..i * w.kw + j1]) {
                        acc += v * tap;
                    }
                }
                dst[oy * ow + ox] = acc;
            }
        }
    });
    Ok(out)
}

/// The maximum of window `(oy, ox)` of one image plane and how many taps equal it: taps in
/// `(i, j)` order, padding skipped, a later tap replacing the maximum only if greater
/// (`Op::MaxPool`). The padding is smaller than the window, so some tap is inside. Only the
/// taps inside the image are visited ([`tap_range`]).
#[inline]
fn window_max<T: Element>(plane: &[T], h: usize, wd: usize, w: &Window, oy: usize, ox: usize) -> (T, usize) {
    let (i0, i1) = tap_range(oy, w.stride_h, w.kh, w.pad_h, h);
    let (j0, j1) = tap_range(ox, w.stride_w, w.kw, w.pad_w, wd);
    let x0 = first_coord(ox, w.stride_w, j0, w.pad_w, wd);
    let mut best: Option<(T, usize)> = None;
    for i in i0..i1 {
        let y = oy * w.stride_h + i - w.pad_h;
        for &v in &plane[y * wd + x0..y * wd + x0 + (j1 - j0)] {
            best = match best {
                None => Some((v, 1)),
                Some((m, _)) if v > m => Some((v, 1)),
                Some((m, n)) if v == m => Some((m, n + 1)),
                keep => keep,
            };
        }
    }
    best.unwrap_or((T::ZERO, 1))
}

/// Max pooling `[N, C, H, W]` → `[N, C, OH, OW]` (`Op::MaxPool`), one output plane per (n, c).
pub fn max_pool<T: Element>(x: &[T], dims: &[usize], w: &Window, oh: usize, ow: usize) -> Vec<T> {
    let (h, wd) = (dims[2], dims[3]);
    // Every output is written below.
    let mut out = T::output(dims[0] * dims[1] * oh * ow);
    // Outputs whose whole window is inside the plane (rows r0..r1, columns c0..c1) run tap by
    // tap over a row segment, the same comparisons in the same order as `window_max`; the
    // border ones, whose windows reach into the padding, run `window_max` itself.
    let span = |n: usize, stride: usize, k: usize, pad: usize, size: usize| {
        if k == 0 {
            return (0, 0);
        }
        let (lo, _) = valid_range(n, stride, 0, pad, size);
        let (_, hi) = valid_range(n, stride, k - 1, pad, size);
        (lo, hi.max(lo))
    };
    let (r0, r1) = span(oh, w.stride_h, w.kh, w.pad_h, h);
    let (c0, c1) = span(ow, w.stride_w, w.kw, w.pad_w, wd);
    for_chunks(&mut out, oh * ow, |plane, dst| {
        let src = &x[plane * h * wd..(plane + 1) * h * wd];
        for oy in 0..oh {
            let line = &mut dst[oy * ow..(oy + 1) * ow];
            let inner = if (r0..r1).contains(&oy) { c0..c1 } else { 0..0 };
            for ox in (0..ow).filter(|ox| !inner.contains(ox)) {
                line[ox] = window_max(src, h, wd, w, oy, ox).0;
            }
            if inner.is_empty() {
                continue;
            }
            let y0 = oy * w.stride_h - w.pad_h;
            let seg = &mut line[c0..c1];
            for i in 0..w.kh {
                let row = &src[(y0 + i) * wd..(y0 + i + 1) * wd];
                for j in 0..w.kw {
                    let x0 = c0 * w.stride_w + j - w.pad_w;
                    let taps = row[x0..].iter().step_by(w.stride_w);
                    if i == 0 && j == 0 {
                        for (d, &v) in seg.iter_mut().zip(taps) {
                            *d = v;
                        }
                    } else {
                        // Replaced only by a greater tap: a NaN first tap stays, later NaNs
                        // do not win (as in `window_max`).
                        for (d, &v) in seg.iter_mut().zip(taps) {
                            if v > *d {
                                *d = v;
                            }
                        }
                    }
                }
            }
        }
    });
    out
}

/// The gradient of max pooling (`Op::MaxPoolGrad`): every window passes `dy / ties` to each tap
/// equal to its maximum; one input plane per (n, c), windows in (oy, ox) order, each visiting
/// only its taps inside the image.
pub fn max_pool_grad<T: Element>(x: &[T], dims: &[usize], dy: &[T], w: &Window, oh: usize, ow: usize) -> Vec<T> {
    let (h, wd) = (dims[2], dims[3]);
    let mut out = vec![T::ZERO; x.len()];
    for_chunks(&mut out, h * wd, |plane, dst| {
        let src = &x[plane * h * wd..(plane + 1) * h * wd];
        let g = &dy[plane * oh * ow..(plane + 1) * oh * ow];
        for oy in 0..oh {
            for ox in 0..ow {
                let (m, ties) = window_max(src, h, wd, w, oy, ox);
                let share = g[oy * ow + ox] / T::from_usize(ties);
                let (i0, i1) = tap_range(oy, w.stride_h, w.kh, w.pad_h, h);
                let (j0, j1) = tap_range(ox, w.stride_w, w.kw, w.pad_w, wd);
                let x0 = first_coord(ox, w.stride_w, j0, w.pad_w, wd);
                for i in i0..i1 {
                    let at = (oy * w.stride_h + i - w.pad_h) * wd + x0;
                    let (row, grads) = (&src[at..at + (j1 - j0)], &mut dst[at..at + (j1 - j0)]);
                    for (&v, d) in row.iter().zip(grads) {
                        if v == m {
                            *d += share;
                        }
                    }
                }
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_range_matches_the_per_element_test() {
        for n in 0..6 {
            for stride in 1..4 {
                for k in 0..4 {
                    for pad in 0..3 {
                        for size in 1..7 {
                            let want: Vec<usize> = (0..n).filter(|&o| src_coord(o, stride, k, pad, size).is_some()).collect();
                            let (lo, hi) = valid_range(n, stride, k, pad, size);
                            assert_eq!((lo..hi).collect::<Vec<_>>(), want, "n{n} s{stride} k{k} p{pad} size{size}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn tap_range_and_first_coord_match_the_per_tap_test() {
        for o in 0..6 {
            for stride in 1..4 {
                for k in 1..9 {
                    for pad in 0..9 {
                        for size in 1..7 {
                            let want: Vec<usize> = (0..k).filter(|&t| src_coord(o, stride, t, pad, size).is_some()).collect();
                            let (lo, hi) = tap_range(o, stride, k, pad, size);
                            assert_eq!((lo..hi).collect::<Vec<_>>(), want, "o{o} s{stride} k{k} p{pad} size{size}");
                            assert!(hi - lo <= k.min(size));
                            let first = first_coord(o, stride, lo, pad, size);
                            assert!(first <= size);
                            if lo < hi {
                                assert_eq!(Some(first), src_coord(o, stride, lo, pad, size));
                            }
                        }
                    }
                }
            }
        }
    }

    /// Every window op of the reference on a 2^15 window with padding just below it, on a
    /// 2x3 image: the loops visit only the taps inside the image (the old ones ran 2^15 rows
    /// and 2^15 columns per output), and the results are those of the definition.
    #[test]
    fn huge_windows_visit_only_the_image() {
        let k = 1 << 15;
        let w = Window { kh: k, kw: k, stride_h: 1, stride_w: k, pad_h: k - 1, pad_w: k - 1 };
        let (h, wd) = (2, 3);
        let (oh, ow) = w.out_hw(h, wd).unwrap();
        assert_eq!((oh, ow), (k + 1, 2));
        let x: Vec<f64> = vec![3.0, -1.0, 7.0, 2.0, 9.0, -4.0];
        let pooled = max_pool(&x, &[1, 1, h, wd], &w, oh, ow);
        // Window (oy, 0) covers rows oy - (k - 1) ..= oy and column 0; window (oy, 1) columns
        // 1 and 2.
        for oy in 0..oh {
            let rows: Vec<usize> = (0..h).filter(|&y| oy < y + k && y <= oy).collect();
            let m0 = rows.iter().map(|&y| x[y * wd]).fold(f64::MIN, f64::max);
            let m1 = rows.iter().flat_map(|&y| [x[y * wd + 1], x[y * wd + 2]]).fold(f64::MIN, f64::max);
            assert_eq!((pooled[oy * ow], pooled[oy * ow + 1]), (m0, m1), "row {oy}");
        }
        let dy: Vec<f64> = (0..oh * ow).map(|i| (i % 5) as f64).collect();
        let dx = max_pool_grad(&x, &[1, 1, h, wd], &dy, &w, oh, ow);
        let mut want = vec![0.0; h * wd];
        for oy in 0..oh {
            for ox in 0..ow {
                let taps: Vec<usize> = (0..h)
                    .filter(|&y| oy < y + k && y <= oy)
                    .flat_map(|y| if ox == 0 { vec![y * wd] } else { vec![y * wd + 1, y * wd + 2] })
                    .collect();
                let m = taps.iter().map(|&t| x[t]).fold(f64::MIN, f64::max);
                let ties = taps.iter().filter(|&&t| x[t] == m).count() as f64;
                for &t in taps.iter().filter(|&&t| x[t] == m) {
                    want[t] += dy[oy * ow + ox] / ties;
                }
            }
        }
        assert_eq!(dx, want);
        // Depthwise with a 2^15 x 2 window (its weights are the window's size), against the
        // definition's loops over every tap.
        let w2 = Window { kh: k, kw: 2, stride_h: k, stride_w: 1, pad_h: k - 1, pad_w: 1 };
        let (oh2, ow2) = w2.out_hw(h, wd).unwrap();
        let taps: Vec<f64> = (0..2 * k).map(|t| (t % 7) as f64 - 3.0).collect();
        let got = depthwise(&x, &[1, 1, h, wd], &taps, &w2, oh2, ow2).unwrap();
        let mut want = vec![0.0; oh2 * ow2];
        for oy in 0..oh2 {
            for ox in 0..ow2 {
                for i in 0..k {
                    for j in 0..2 {
                        if let (Some(y), Some(xx)) = (src_coord(oy, w2.stride_h, i, w2.pad_h, h), src_coord(ox, 1, j, 1, wd)) {
                            want[oy * ow2 + ox] += x[y * wd + xx] * taps[i * 2 + j];
                        }
                    }
                }
            }
        }
        assert_eq!(got, want);
    }

    /// Max pooling equals `window_max` at every output (the interior's row segments and the
    /// border's per-window path), NaNs and ties included.
    #[test]
    fn max_pool_matches_window_max_everywhere() {
        for &(kh, kw, sh, sw, ph, pw, h, wd) in &[
            (3, 3, 2, 2, 1, 1, 9, 11),
            (2, 2, 2, 2, 0, 0, 8, 8),
            (3, 2, 1, 3, 1, 0, 5, 10),
            (5, 5, 1, 1, 2, 2, 4, 3),
            (1, 1, 1, 1, 0, 0, 3, 3),
        ] {
            let w = Window { kh, kw, stride_h: sh, stride_w: sw, pad_h: ph, pad_w: pw };
            let (oh, ow) = w.out_hw(h, wd).unwrap();
            let (n, c) = (2, 2);
            let mut x: Vec<f32> = (0..n * c * h * wd).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.5).collect();
            for i in (0..x.len()).step_by(5) {
                x[i] = f32::NAN;
            }
            let got = max_pool(&x, &[n, c, h, wd], &w, oh, ow);
            for plane in 0..n * c {
                let src = &x[plane * h * wd..(plane + 1) * h * wd];
                for oy in 0..oh {
                    for ox in 0..ow {
                        let want = window_max(src, h, wd, &w, oy, ox).0;
                        let g = got[plane * oh * ow + oy * ow + ox];
                        assert!(g.to_bits() == want.to_bits(), "{w:?} plane {plane} ({oy}, {ox}): {g} vs {want}");
                    }
                }
            }
        }
    }

    /// The depthwise kernel equals im2col followed by the per-channel weighted sum of rows.
    #[test]
    fn depthwise_matches_im2col_then_weighted_sum() {
        let w = Window { kh: 3, kw: 2, stride_h: 2, stride_w: 1, pad_h: 1, pad_w: 1 };
        let (n, c, h, wd) = (2, 3, 5, 4);
        let (oh, ow) = w.out_hw(h, wd).unwrap();
        let x: Vec<f64> = (0..n * c * h * wd).map(|i| (i as f64 * 0.37).sin()).collect();
        let k: Vec<f64> = (0..c * 6).map(|i| (i as f64 * 0.71).cos()).collect();
        let got = depthwise(&x, &[n, c, h, wd], &k, &w, oh, ow).unwrap();
        let cols = im2col(&x, &[n, c, h, wd], &w, oh, ow);
        let l = oh * ow;
        for img in 0..n {
            for ch in 0..c {
                for p in 0..l {
                    let want: f64 = (0..6).map(|r| cols[((img * c + ch) * 6 + r) * l + p] * k[ch * 6 + r]).sum();
                    let g = got[(img * c + ch) * l + p];
                    assert!((g - want).abs() < 1e-12, "n{img} c{ch} p{p}: {g} vs {want}");
                }
            }
        }
    }

    #[test]
    fn im2col_of_a_3x3_image_with_padding() {
        let x: Vec<f64> = (1..=9).map(|i| i as f64).collect(); // [1, 1, 3, 3]
        let w = Window::square(2, 2, 1);
        let (oh, ow) = w.out_hw(3, 3).unwrap();
        assert_eq!((oh, ow), (2, 2));
        let cols = im2col(&x, &[1, 1, 3, 3], &w, oh, ow);
        // Rows are kernel offsets (0,0) (0,1) (1,0) (1,1); columns the 4 output positions.
        assert_eq!(cols, vec![0., 0., 0., 5., 0., 0., 4., 6., 0., 2., 0., 8., 1., 3., 7., 9.]);
    }

    /// im2col writes its padding zeros itself: a recycled output buffer full of NaN leaves
    /// no trace (the f64 reference always starts from zeros).
    #[test]
    fn im2col_overwrites_a_recycled_buffer() {
        let w = Window { kh: 3, kw: 3, stride_h: 2, stride_w: 2, pad_h: 1, pad_w: 2 };
        let (h, wd) = (5, 6);
        let (oh, ow) = w.out_hw(h, wd).unwrap();
        let x: Vec<f32> = (0..2 * h * wd).map(|i| i as f32 + 1.0).collect();
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let want = im2col(&x64, &[1, 2, h, wd], &w, oh, ow);
        crate::pool::give(vec![f32::NAN; want.len()]);
        let got = im2col(&x, &[1, 2, h, wd], &w, oh, ow);
        assert_eq!(got.iter().map(|&v| v as f64).collect::<Vec<_>>(), want);
    }

    /// col2im is the adjoint of im2col: <im2col(x), c> = <x, col2im(c)>.
    #[test]
    fn col2im_is_the_adjoint() {
        let w = Window { kh: 3, kw: 2, stride_h: 2, stride_w: 1, pad_h: 1, pad_w: 0 };
        let (h, wd) = (5, 4);
        let (oh, ow) = w.out_hw(h, wd).unwrap();
        let x: Vec<f64> = (0..2 * h * wd).map(|i| (i as f64 * 0.37).sin()).collect();
        let c: Vec<f64> = (0..2 * 6 * oh * ow).map(|i| (i as f64 * 0.11).cos()).collect();
        let ix = im2col(&x, &[1, 2, h, wd], &w, oh, ow);
        let cc = col2im(&c, &[1, 12, oh * ow], &w, h, wd, oh, ow);
        let lhs: f64 = ix.iter().zip(&c).map(|(a, b)| a * b).sum();
        let rhs: f64 = x.iter().zip(&cc).map(|(a, b)| a * b).sum();
        assert!((lhs - rhs).abs() < 1e-12, "{lhs} vs {rhs}");
    }
}
