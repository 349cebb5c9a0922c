//! The fast path's dense convolution ([`pixelgrad_core::Op::Conv2d`]).
//!
//! 3x3 windows with stride 1 run as Winograd F(2x2, 3x3) (Lavin and Gray, 2016): every 4x4
//! input tile `d` (2x2 outputs, stride 2) and every 3x3 filter `g` are taken to a 4x4
//! transform domain, `V = Bᵀ d B` and `U = G g Gᵀ`; there a convolution is an elementwise
//! product, so the channel sum becomes sixteen independent matrix products
//! `M_ξ [M, T] = U_ξ [M, C] · V_ξ [C, T]` over all `T` tiles of an image, and the outputs
//! are `Y = Aᵀ M A`. That is 16 multiply-adds per 2x2 outputs and channel pair where im2col +
//! GEMM does 36, and the `[C·9, OH·OW]` columns are never written (the transformed tiles are
//! `[C, 16, T]`, about 4/9 of their size). The transforms are additions and halvings.
//!
//! Other windows run as im2col followed by the GEMM, the pair the op means.
//!
//! The results differ from the pair's by rounding only: the transforms add and subtract
//! inputs before they are multiplied. With the matrices below (the points 0, ±1 and ∞) the
//! error stays within a few ulps of the sum's magnitude, well inside the tolerances every
//! test and the ONNX oracle use.

use pixelgrad_core::{Result, Window};

use crate::bounds::{check_weights, check_window};
use crate::element::Element;
use crate::matmul::gemm_f32;
use crate::par::for_chunks;
use crate::window::{first_coord, im2col, tap_range};

/// `x [N, C, H, W]` * `k [M, C, kh, kw]` → `[N, M, OH, OW]`: im2col, then one GEMM per image.
/// The reference (and every window the Winograd path does not take). Slices shorter than
/// their shapes are a typed error; windows far larger than the image run [`conv_direct`].
pub(crate) fn conv_im2col<T: Element>(x: &[T], dims: &[usize], k: &[T], m: usize, w: &Window, oh: usize, ow: usize) -> Result<Vec<T>> {
    check_window("conv2d", x.len(), dims, w, oh, ow)?;
    check_weights("conv2d", k.len(), m, dims[1], w)?;
    if mostly_padding(dims, w, oh, ow) {
        return Ok(conv_direct(x, dims, k, m, w, oh, ow));
    }
    let (n, c) = (dims[0], dims[1]);
    let (ckk, l) = (c * w.kh * w.kw, oh * ow);
    let cols = im2col(x, dims, w, oh, ow); // [N, C*kk, L]
    let out = crate::matmul::matmul(k, &[m, ckk], &cols, &[n, ckk, l], false, false);
    T::recycle(cols);
    out
}

/// The f32 fast path: Winograd F(2x2, 3x3) for 3x3 stride-1 windows, im2col + GEMM otherwise.
pub(crate) fn conv_f32(x: &[f32], dims: &[usize], k: &[f32], m: usize, w: &Window, oh: usize, ow: usize) -> Result<Vec<f32>> {
    check_window("conv2d", x.len(), dims, w, oh, ow)?;
    check_weights("conv2d", k.len(), m, dims[1], w)?;
    if w.kh == 3 && w.kw == 3 && w.stride_h == 1 && w.stride_w == 1 && dims[1] > 0 && oh * ow > 0 {
        winograd_3x3(x, dims, k, m, w, oh, ow)
    } else {
        conv_im2col(x, dims, k, m, w, oh, ow)
    }
}

/// Whether im2col's columns would be large (over 2^22 values) and at least 16 times the taps
/// that lie inside the image (a 2^12 window on a 2x3 image): those convolutions run
/// [`conv_direct`], whose work is the taps inside the image, instead of materialising
/// columns of zeros. Ordinary windows (3x3 on a 1x1 map included) keep im2col + GEMM.
fn mostly_padding(dims: &[usize], w: &Window, oh: usize, ow: usize) -> bool {
    let (h, wd) = (dims[2], dims[3]);
    let cols = [dims[0], dims[1], w.kh, w.kw, oh, ow].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let inside = w.kh.min(h) * w.kw.min(wd);
    match cols {
        None => true,
        Some(cols) => cols > 1 << 22 && w.kh.saturating_mul(w.kw) >= inside.saturating_mul(16),
    }
}

/// The convolution as plain loops over each output's taps inside the image ([`tap_range`]):
/// channels, then window rows and columns, ascending (im2col's row order, without its zero
/// terms). Work per output is `C x min(kh, H) x min(kw, W)` however large the window.
fn conv_direct<T: Element>(x: &[T], dims: &[usize], k: &[T], m: usize, w: &Window, oh: usize, ow: usize) -> Vec<T> {
    let (c, h, wd) = (dims[1], dims[2], dims[3]);
    let kk = w.kh * w.kw;
    let mut out = vec![T::ZERO; dims[0] * m * oh * ow];
    for_chunks(&mut out, oh * ow, |plane, dst| {
        let (img, mo) = (plane / m.max(1), plane % m.max(1));
        for oy in 0..oh {
            let (i0, i1) = tap_range(oy, w.stride_h, w.kh, w.pad_h, h);
            for ox in 0..ow {
                let (j0, j1) = tap_range(ox, w.stride_w, w.kw, w.pad_w, wd);
                let x0 = first_coord(ox, w.stride_w, j0, w.pad_w, wd);
                let mut acc = T::ZERO;
                for ch in 0..c {
                    let src = &x[(img * c + ch) * h * wd..(img * c + ch + 1) * h * wd];
                    let taps = &k[(mo * c + ch) * kk..(mo * c + ch + 1) * kk];
                    for i in i0..i1 {
                        let y = oy * w.stride_h + i - w.pad_h;
                        let row = &src[y * wd + x0..y * wd + x0 + (j1 - j0)];
                        for (&v, &tap) in row.iter().zip(&taps[i * w.kw + j0..i * w.kw + j1]) {
                            acc += v * tap;
                        }
                    }
                }
                dst[oy * ow + ox] = acc;
            }
        }
    });
    out
}

/// `U = G g Gᵀ` for every filter: `[16, M, C]` (transform position major), so each `U_ξ` is
/// a row-major `[M, C]` matrix.
fn transform_filters(k: &[f32], m: usize, c: usize) -> Vec<f32> {
    let mut u = crate::pool::take(16 * m * c);
    let plane = m * c;
    for (mc, g) in k.chunks_exact(9).enumerate().take(plane) {
        // G g: rows g0, (g0 + g1 + g2) / 2, (g0 - g1 + g2) / 2, g2 (rows of three).
        let mut t = [[0.0f32; 3]; 4];
        for j in 0..3 {
            let (g0, g1, g2) = (g[j], g[3 + j], g[6 + j]);
            t[0][j] = g0;
            t[1][j] = 0.5 * (g0 + g1 + g2);
            t[2][j] = 0.5 * (g0 - g1 + g2);
            t[3][j] = g2;
        }
        // (G g) Gᵀ: the same combination along each row.
        for (i, r) in t.iter().enumerate() {
            let vals = [r[0], 0.5 * (r[0] + r[1] + r[2]), 0.5 * (r[0] - r[1] + r[2]), r[2]];
            for (j, v) in vals.into_iter().enumerate() {
                u[(i * 4 + j) * plane + mc] = v;
            }
        }
    }
    u
}

/// Winograd F(2x2, 3x3) for a 3x3, stride-1 window with any padding.
///
/// Every loop below runs along a row of tiles over contiguous slices, so it vectorises: the
/// padded input plane is kept as its even and its odd columns (a tile at `tx` reads columns
/// `2tx .. 2tx + 4`, i.e. even and odd columns `tx` and `tx + 1`), and each of the sixteen
/// transformed values of a row of tiles is its own contiguous run. Natively the input
/// transform (per channel), the sixteen products and the output transform (per output
/// channel) each run on the thread pool.
fn winograd_3x3(x: &[f32], dims: &[usize], k: &[f32], m: usize, w: &Window, oh: usize, ow: usize) -> Result<Vec<f32>> {
    let (n, c, h, wd) = (dims[0], dims[1], dims[2], dims[3]);
    let t = oh.div_ceil(2) * ow.div_ceil(2);
    let u = transform_filters(k, m, c);
    let mut out = crate::pool::take(n * m * oh * ow);
    // V: [C, 16, T] (a channel's transformed tiles together, so channels fill disjoint runs);
    // products: [16, M, T].
    let mut v = crate::pool::take(16 * c * t);
    let mut prod = crate::pool::take(16 * m * t);
    for img in 0..n {
        let planes = &x[img * c * h * wd..(img + 1) * c * h * wd];
        for_chunks(&mut v, 16 * t, |ch, dst| {
            transform_input(&planes[ch * h * wd..(ch + 1) * h * wd], h, wd, w, oh, ow, dst);
        });
        // Sixteen products M_ξ [M, T] = U_ξ [M, C] · V_ξ [C, T] (V_ξ's rows 16 T apart).
        let product = |xi: usize, dst: &mut [f32]| gemm_f32(m, c, t, &u[xi * m * c..(xi + 1) * m * c], c, 1, &v[xi * t..], 16 * t, 1, dst);
        #[cfg(any(not(target_arch = "wasm32"), target_feature = "atomics"))]
        if crate::par::threaded() && m * c * t >= 1 << 14 {
            crate::par::try_chunks(&mut prod, m * t, product)?;
        } else {
            prod.chunks_mut(m * t).enumerate().try_for_each(|(xi, dst)| product(xi, dst))?;
        }
        #[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
        prod.chunks_mut(m * t).enumerate().try_for_each(|(xi, dst)| product(xi, dst))?;
        let prod = &prod;
        for_chunks(&mut out[img * m * oh * ow..(img + 1) * m * oh * ow], oh * ow, |mo, plane| {
            transform_output(prod, m, mo, t, oh, ow, plane);
        });
    }
    crate::pool::give(u);
    crate::pool::give(v);
    crate::pool::give(prod);
    Ok(out)
}

/// `V = Bᵀ d B` for every tile of one `h x wd` input plane: `dst` is `[16, T]`.
fn transform_input(plane: &[f32], h: usize, wd: usize, w: &Window, oh: usize, ow: usize, dst: &mut [f32]) {
    let (th, tw) = (oh.div_ceil(2), ow.div_ceil(2));
    let t = th * tw;
    // Even and odd columns of the padded plane, `tw + 1` of each per row; tiles read rows
    // 2ty .. 2ty + 4.
    let cols = tw + 1;
    let ph = 2 * th + 2;
    let mut even = vec![0.0f32; ph * cols];
    let mut odd = vec![0.0f32; ph * cols];
    split_plane(plane, h, wd, w.pad_h, w.pad_w, &mut even, &mut odd, cols);
    // Bᵀ d of a row of tiles: four rows, even and odd columns.
    let mut ue = vec![0.0f32; 4 * cols];
    let mut uo = vec![0.0f32; 4 * cols];
    for ty in 0..th {
        // Bᵀ d down the columns: u0 = d0 - d2, u1 = d1 + d2, u2 = d2 - d1, u3 = d1 - d3.
        for (src, rows) in [(&even, &mut ue), (&odd, &mut uo)] {
            let r = |i: usize| &src[(2 * ty + i) * cols..(2 * ty + i + 1) * cols];
            let (d0, d1, d2, d3) = (r(0), r(1), r(2), r(3));
            let (u0, rest) = rows.split_at_mut(cols);
            let (u1, rest) = rest.split_at_mut(cols);
            let (u2, u3) = rest.split_at_mut(cols);
            combine(u0, d0, d2, |a, b| a - b);
            combine(u1, d1, d2, |a, b| a + b);
            combine(u2, d2, d1, |a, b| a - b);
            combine(u3, d1, d3, |a, b| a - b);
        }
        // (Bᵀ d) B along each tile's row: columns e0 - e1, o0 + e1, e1 - o0, o0 - o1
        // (e0, o0, e1, o1 = the tile's columns 0..4).
        for i in 0..4 {
            let e = &ue[i * cols..(i + 1) * cols];
            let o = &uo[i * cols..(i + 1) * cols];
            let (e0, e1, o0, o1) = (&e[..tw], &e[1..], &o[..tw], &o[1..]);
            let at = |j: usize| (i * 4 + j) * t + ty * tw;
            combine(&mut dst[at(0)..at(0) + tw], e0, e1, |a, b| a - b);
            combine(&mut dst[at(1)..at(1) + tw], o0, e1, |a, b| a + b);
            combine(&mut dst[at(2)..at(2) + tw], e1, o0, |a, b| a - b);
            combine(&mut dst[at(3)..at(3) + tw], o0, o1, |a, b| a - b);
        }
    }
}

/// `Y = Aᵀ M A` for every tile of output channel `mo` (`prod` is `[16, M, T]`), written to
/// its `oh x ow` plane, clipped at odd output sizes.
fn transform_output(prod: &[f32], m: usize, mo: usize, t: usize, oh: usize, ow: usize, plane: &mut [f32]) {
    let (th, tw) = (oh.div_ceil(2), ow.div_ceil(2));
    // Aᵀ M of a row of tiles (two rows of four), then the two output rows' even and odd pixels.
    let mut s = vec![0.0f32; 8 * tw];
    let mut y = vec![0.0f32; 4 * tw];
    for ty in 0..th {
        let g = |xi: usize| &prod[(xi * m + mo) * t + ty * tw..(xi * m + mo) * t + (ty + 1) * tw];
        // Aᵀ M: rows M0 + M1 + M2 and M1 - M2 - M3, for each of the four columns.
        for j in 0..4 {
            let (m0, m1, m2, m3) = (g(j), g(4 + j), g(8 + j), g(12 + j));
            let (s0, s1) = s[j * 2 * tw..(j + 1) * 2 * tw].split_at_mut(tw);
            for (q, (a, b)) in s0.iter_mut().zip(s1.iter_mut()).enumerate() {
                *a = m0[q] + m1[q] + m2[q];
                *b = m1[q] - m2[q] - m3[q];
            }
        }
        // (Aᵀ M) A: columns S0 + S1 + S2 and S1 - S2 - S3, for both rows.
        for a in 0..2 {
            let sc = |j: usize| &s[j * 2 * tw + a * tw..j * 2 * tw + (a + 1) * tw];
            let (s0, s1, s2, s3) = (sc(0), sc(1), sc(2), sc(3));
            let (y0, y1) = y[a * 2 * tw..(a + 1) * 2 * tw].split_at_mut(tw);
            for (q, (p0, p1)) in y0.iter_mut().zip(y1.iter_mut()).enumerate() {
                *p0 = s0[q] + s1[q] + s2[q];
                *p1 = s1[q] - s2[q] - s3[q];
            }
        }
        for a in 0..2 {
            let oy = 2 * ty + a;
            if oy >= oh {
                break;
            }
            let (y0, y1) = y[a * 2 * tw..(a + 1) * 2 * tw].split_at(tw);
            let row = &mut plane[oy * ow..(oy + 1) * ow];
            for (px, (&p0, &p1)) in row.chunks_mut(2).zip(y0.iter().zip(y1)) {
                px[0] = p0;
                if let Some(p) = px.get_mut(1) {
                    *p = p1;
                }
            }
        }
    }
}

/// `dst[q] = f(a[q], b[q])` over `dst`'s length (`a` and `b` at least as long).
#[inline(always)]
fn combine(dst: &mut [f32], a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) {
    for (d, (&x, &y)) in dst.iter_mut().zip(a.iter().zip(b)) {
        *d = f(x, y);
    }
}

/// Writes the `h x wd` plane, placed at (`pad_h`, `pad_w`) in a zero plane of `cols * 2`
/// columns, as its even and its odd columns (`cols` each per row). What lies outside the
/// image (padding, and what a last tile reads past the output) is zero.
#[allow(clippy::too_many_arguments)]
fn split_plane(plane: &[f32], h: usize, wd: usize, pad_h: usize, pad_w: usize, even: &mut [f32], odd: &mut [f32], cols: usize) {
    even.fill(0.0);
    odd.fill(0.0);
    let rows = even.len() / cols;
    for yy in 0..h.min(rows.saturating_sub(pad_h)) {
        let src = &plane[yy * wd..(yy + 1) * wd];
        let (e, o) = (&mut even[(yy + pad_h) * cols..(yy + pad_h + 1) * cols], &mut odd[(yy + pad_h) * cols..(yy + pad_h + 1) * cols]);
        // Source column xx lands in padded column xx + pad_w: even source columns go to `a`
        // from `off_a` on, odd ones to `b` from `off_b` on.
        let (a, b, off_a, off_b) = if pad_w.is_multiple_of(2) { (e, o, pad_w / 2, pad_w / 2) } else { (o, e, pad_w / 2, pad_w / 2 + 1) };
        for (d, &val) in a.iter_mut().skip(off_a).zip(src.iter().step_by(2)) {
            *d = val;
        }
        for (d, &val) in b.iter_mut().skip(off_b).zip(src.iter().skip(1).step_by(2)) {
            *d = val;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: usize, seed: usize) -> Vec<f32> {
        (0..len).map(|i| (((i * 7919 + seed * 104729) % 2003) as f32 / 1001.0) - 1.0).collect()
    }

    /// Winograd equals im2col + GEMM (in f64) for every padding, odd and even output sizes,
    /// several images, and images smaller than a tile.
    #[test]
    fn winograd_matches_the_reference_pair() {
        for &(n, c, h, wd, m, pad) in
            &[(1, 3, 8, 8, 4, 1), (2, 5, 7, 9, 3, 0), (1, 1, 3, 3, 2, 0), (1, 4, 5, 6, 6, 2), (1, 2, 1, 1, 3, 1), (3, 16, 6, 11, 8, 1)]
        {
            let w = Window::square(3, 1, pad);
            let (oh, ow) = w.out_hw(h, wd).unwrap();
            let x = data(n * c * h * wd, 1);
            let k = data(m * c * 9, 2);
            let got = conv_f32(&x, &[n, c, h, wd], &k, m, &w, oh, ow).unwrap();
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let k64: Vec<f64> = k.iter().map(|&v| v as f64).collect();
            let want = conv_im2col(&x64, &[n, c, h, wd], &k64, m, &w, oh, ow).unwrap();
            assert_eq!(got.len(), want.len());
            let scale = want.iter().fold(1.0f64, |a, &b| a.max(b.abs()));
            for (i, (g, r)) in got.iter().zip(&want).enumerate() {
                assert!((*g as f64 - r).abs() <= 1e-5 * scale, "{n} {c} {h}x{wd} m{m} p{pad} at {i}: {g} vs {r}");
            }
        }
    }

    /// A recycled output buffer full of NaN is overwritten everywhere, padding rows included.
    #[test]
    fn winograd_overwrites_recycled_buffers() {
        let (n, c, h, wd, m) = (1, 2, 5, 5, 3);
        let w = Window::square(3, 1, 1);
        for len in [n * m * 25, 16 * c * 9, 16 * m * 9, 16 * m * c] {
            crate::pool::give(vec![f32::NAN; len]);
        }
        let x = data(n * c * h * wd, 3);
        let k = data(m * c * 9, 4);
        let got = conv_f32(&x, &[n, c, h, wd], &k, m, &w, 5, 5).unwrap();
        assert!(got.iter().all(|v| v.is_finite()));
    }

    /// A window far larger than the image runs the direct loops (no 2^30-value columns), with
    /// im2col's sums; an ordinary one keeps im2col + GEMM.
    #[test]
    fn huge_windows_run_the_direct_loops() {
        let big = Window { kh: 1 << 10, kw: 1 << 10, stride_h: 1 << 10, stride_w: 1 << 10, pad_h: (1 << 10) - 1, pad_w: (1 << 10) - 1 };
        let (oh, ow) = big.out_hw(2, 3).unwrap();
        assert!(mostly_padding(&[1, 2, 2, 3], &big, oh, ow));
        assert!(!mostly_padding(&[1, 64, 1, 1], &Window::square(3, 1, 1), 1, 1));
        assert!(!mostly_padding(&[8, 256, 7, 7], &Window::square(7, 1, 3), 7, 7));
        let (m, c) = (1, 2);
        let x = data(c * 6, 5);
        let k = data(m * c * (1 << 20), 6);
        let got = conv_f32(&x, &[1, c, 2, 3], &k, m, &big, oh, ow).unwrap();
        // Against the direct loops in f64.
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let k64: Vec<f64> = k.iter().map(|&v| v as f64).collect();
        let want = conv_direct(&x64, &[1, c, 2, 3], &k64, m, &big, oh, ow);
        for (g, w) in got.iter().zip(&want) {
            assert!((*g as f64 - w).abs() < 1e-5, "{g} vs {w}");
        }
        // The direct loops equal im2col + GEMM where both run.
        let w = Window { kh: 4, kw: 5, stride_h: 2, stride_w: 3, pad_h: 3, pad_w: 4 };
        let (oh, ow) = w.out_hw(3, 2).unwrap();
        let x = data(2 * c * 6, 7);
        let k = data(m * c * 20, 8);
        let via_cols = conv_im2col(&x, &[2, c, 3, 2], &k, m, &w, oh, ow).unwrap();
        let direct = conv_direct(&x, &[2, c, 3, 2], &k, m, &w, oh, ow);
        assert_eq!(via_cols.len(), direct.len());
        for (a, b) in via_cols.iter().zip(&direct) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }

    /// Inputs or weights shorter than their shapes are typed errors on both paths.
    #[test]
    fn short_slices_are_errors() {
        for w in [Window::square(3, 1, 1), Window::square(2, 2, 0)] {
            let (oh, ow) = w.out_hw(4, 4).unwrap();
            let x = data(2 * 16, 1);
            let k = data(3 * 2 * w.kh * w.kw, 2);
            assert!(conv_f32(&x, &[1, 2, 4, 4], &k, 3, &w, oh, ow).is_ok());
            assert!(conv_f32(&x[..31], &[1, 2, 4, 4], &k, 3, &w, oh, ow).is_err());
            assert!(conv_f32(&x, &[1, 2, 4, 4], &k[..k.len() - 1], 3, &w, oh, ow).is_err());
            assert!(conv_f32(&x, &[1, 2, 4, 4], &k, 3, &w, oh + 1, ow).is_err());
            assert!(conv_im2col(&x, &[1, 2, 4, 4], &k, usize::MAX, &w, oh, ow).is_err());
        }
    }
}
