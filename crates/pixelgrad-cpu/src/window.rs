//! Sliding windows: im2col and its adjoint col2im (NCHW). Both are split into independent
//! output rows (im2col: one column-matrix row per (n, c, i, j); col2im: one image plane per
//! (n, c)), so they parallelise without write conflicts.

use pixelgrad_core::Window;

use crate::element::Element;
use crate::par::for_chunks;

/// Input coordinate of output position `o` at kernel offset `k`, or `None` in the padding.
#[inline]
fn src_coord(o: usize, stride: usize, k: usize, pad: usize, size: usize) -> Option<usize> {
    let p = o * stride + k;
    if p < pad || p - pad >= size {
        None
    } else {
        Some(p - pad)
    }
}

/// `[N, C, H, W]` → `[N, C*kh*kw, OH*OW]`, row `c*kh*kw + i*kw + j`, padding reads 0.
pub fn im2col<T: Element>(x: &[T], dims: &[usize], w: &Window, oh: usize, ow: usize) -> Vec<T> {
    let (n, c, h, wd) = (dims[0], dims[1], dims[2], dims[3]);
    let kk = w.kh * w.kw;
    let mut out = vec![T::ZERO; n * c * kk * oh * ow];
    for_chunks(&mut out, oh * ow, |row, dst| {
        let (img, r) = (row / (c * kk), row % (c * kk));
        let (ch, i, j) = (r / kk, (r % kk) / w.kw, r % w.kw);
        let plane = &x[(img * c + ch) * h * wd..(img * c + ch + 1) * h * wd];
        for oy in 0..oh {
            let Some(y) = src_coord(oy, w.stride_h, i, w.pad_h, h) else { continue };
            let src = &plane[y * wd..(y + 1) * wd];
            let line = &mut dst[oy * ow..(oy + 1) * ow];
            for (ox, d) in line.iter_mut().enumerate() {
                if let Some(xx) = src_coord(ox, w.stride_w, j, w.pad_w, wd) {
                    *d = src[xx];
                }
            }
        }
    });
    out
}

/// `[N, C*kh*kw, OH*OW]` → `[N, C, h, w]`, summing overlapping window positions.
pub fn col2im<T: Element>(cols: &[T], dims: &[usize], w: &Window, h: usize, wd: usize, oh: usize, ow: usize) -> Vec<T> {
    let n = dims[0];
    let kk = w.kh * w.kw;
    let c = dims[1] / kk;
    let mut out = vec![T::ZERO; n * c * h * wd];
    for_chunks(&mut out, h * wd, |plane, dst| {
        let (img, ch) = (plane / c, plane % c);
        for i in 0..w.kh {
            for j in 0..w.kw {
                let row = img * c * kk + ch * kk + i * w.kw + j;
                let src = &cols[row * oh * ow..(row + 1) * oh * ow];
                for oy in 0..oh {
                    let Some(y) = src_coord(oy, w.stride_h, i, w.pad_h, h) else { continue };
                    for ox in 0..ow {
                        if let Some(xx) = src_coord(ox, w.stride_w, j, w.pad_w, wd) {
                            dst[y * wd + xx] += src[oy * ow + ox];
                        }
                    }
                }
            }
        }
    });
    out
}
