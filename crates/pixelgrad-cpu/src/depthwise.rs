//! The fast path's depthwise convolution (`Op::DepthwiseConv`). Each input plane is copied
//! once into a zero-padded, de-interleaved form (row `y`, phase `q` holds padded columns
//! `q, q + s, q + 2s, ...` for the horizontal stride `s`), so that every tap of every output
//! row reads a contiguous run; outputs are then computed sixteen (or eight) at a time, each summing its taps
//! in (i, j) order like the reference loops in `window::depthwise`. The padding contributes
//! `0 * tap` terms where the reference skips the tap: the same values for finite weights (up
//! to the sign of a zero result).

use std::cell::RefCell;

use pixelgrad_core::Window;

use pixelgrad_core::Result;

use crate::par::for_chunks;
use crate::simd::F4;

/// Outputs per group (two 4-lane vectors of f32 in wasm SIMD).
const LANES: usize = 8;

thread_local! {
    /// The padded plane, one output row, and the plane geometry the padded plane was zeroed
    /// for: reused from plane to plane and call to call.
    static SCRATCH: RefCell<(Vec<f32>, Vec<f32>, [usize; 8])> = const { RefCell::new((Vec::new(), Vec::new(), [0; 8])) };
}

/// `x [N, C, H, W]` * `k [C, 1, kh, kw]` → `[N, C, OH, OW]`. The slices are checked against
/// the shapes once (`crate::bounds`): too short is a typed error. Windows far
/// larger than the image (whose padded copy would be mostly zeros, and whose rows would sum
/// mostly zero products) run the reference loops of `window::depthwise` instead, which visit
/// only the taps inside the image.
pub(crate) fn depthwise_f32(x: &[f32], dims: &[usize], k: &[f32], w: &Window, oh: usize, ow: usize) -> Result<Vec<f32>> {
    crate::bounds::check_window("depthwise_conv", x.len(), dims, w, oh, ow)?;
    crate::bounds::check_weights("depthwise_conv", k.len(), dims[1], 1, w)?;
    let (n, c, h, wd) = (dims[0], dims[1], dims[2], dims[3]);
    let Some(geo) = Geometry::new(w, h, wd, oh, ow) else {
        return crate::window::depthwise(x, dims, k, w, oh, ow);
    };
    let Geometry { hp, plen, stride_row, reach, .. } = geo;
    let (kh, kw) = (w.kh, w.kw);
    let kk = kh * kw;
    let s = w.stride_w.max(1);
    // Every output row is copied in below.
    let mut out = crate::pool::take(n * c * oh * ow);
    if out.is_empty() {
        return Ok(out);
    }
    let ow4 = geo.ow4;
    // Offset in the padded copy of tap (i, j) from the start of output row oy's first input
    // row: row i, phase j % s, position j / s.
    let offs: Vec<usize> = (0..kk).map(|t| (t / kw) * stride_row + (t % kw % s) * plen + (t % kw) / s).collect();
    for_chunks(&mut out, oh * ow, |plane, dst| {
        let ch = plane % c;
        let src = &x[plane * h * wd..(plane + 1) * h * wd];
        let taps = &k[ch * kk..(ch + 1) * kk];
        SCRATCH.with(|cell| {
            let mut scratch = cell.borrow_mut();
            let (pp, line, zeroed_for) = &mut *scratch;
            // Padded, de-interleaved copy: padded column u = x + pad_w of padded row
            // v = y + pad_h goes to row v, phase u % s, position u / s. The copy below writes
            // the same positions for every plane of one geometry, so the padding, zeroed once
            // for that geometry, stays zero: no clearing per plane.
            let geometry = [hp, stride_row, plen, s, w.pad_h, w.pad_w, h, wd];
            if *zeroed_for != geometry || pp.len() != hp * stride_row {
                pp.clear();
                pp.resize(hp * stride_row, 0.0);
                *zeroed_for = geometry;
            }
            for v in w.pad_h..(h + w.pad_h).min(hp) {
                let row = &src[(v - w.pad_h) * wd..(v - w.pad_h + 1) * wd];
                let prow = &mut pp[v * stride_row..(v + 1) * stride_row];
                if s == 2 {
                    // The common strided case: shifts instead of divisions.
                    for (xc, &val) in row.iter().enumerate() {
                        let u = xc + w.pad_w;
                        prow[(u & 1) * plen + (u >> 1)] = val;
                    }
                    continue;
                }
                for q in 0..s {
                    // The first padded column u >= pad_w with u % s == q.
                    let u0 = w.pad_w + (q + s - w.pad_w % s) % s;
                    if u0 - w.pad_w >= wd {
                        continue;
                    }
                    let phase = &mut prow[q * plen + u0 / s..(q + 1) * plen];
                    if s == 1 {
                        phase[..wd].copy_from_slice(row);
                        continue;
                    }
                    for (d, &v) in phase.iter_mut().zip(row[u0 - w.pad_w..].iter().step_by(s)) {
                        *d = v;
                    }
                }
            }
            // Every lane of the row is stored below before it is read.
            line.resize(ow4, 0.0);
            for oy in 0..oh {
                // Every load below reads window[off + g .. off + g + LANES] with
                // off + g + LANES <= reach = window.len() (`Geometry::new` checked that the
                // last row's window ends inside the padded plane, so this slice never fails).
                let window = &pp[oy * w.stride_h * stride_row..][..reach];
                // Window rows that fall in the vertical padding hold zeros only: their taps are
                // skipped, as the reference skips them (on the short, wide feature maps of text
                // models a 5x5 window on a 2-row image has 3 of its 5 rows in the padding).
                let top = oy * w.stride_h;
                let lo = w.pad_h.saturating_sub(top).min(kh);
                let hi = (h + w.pad_h).saturating_sub(top).clamp(lo, kh);
                let (offs, taps) = (&offs[lo * kw..hi * kw], &taps[lo * kw..hi * kw]);
                // Sixteen outputs at a time (one tap's broadcast serves four vectors), then a
                // last group of eight where the row has one.
                let mut g = 0;
                while g + 2 * LANES <= ow4 {
                    // SAFETY: off + g + 2 * LANES <= reach = window.len() for every offset
                    // (`Geometry::new`), and g + 2 * LANES <= ow4 = line.len().
                    unsafe { group::<4>(window.as_ptr(), offs, taps, g, line.as_mut_ptr()) };
                    g += 2 * LANES;
                }
                if g < ow4 {
                    // SAFETY: as above, with g + LANES <= ow4.
                    unsafe { group::<2>(window.as_ptr(), offs, taps, g, line.as_mut_ptr()) };
                }
                dst[oy * ow..(oy + 1) * ow].copy_from_slice(&line[..ow]);
            }
        });
    });
    Ok(out)
}

/// The padded, de-interleaved plane of one call (see [`depthwise_f32`]), computed with checked
/// arithmetic.
struct Geometry {
    /// Rows of the padded plane that outputs read: oy * stride_h + i < hp.
    hp: usize,
    /// Values per phase of a padded row.
    plen: usize,
    /// Values per padded row (`stride_w` phases).
    stride_row: usize,
    /// Outputs per row rounded up to whole groups.
    ow4: usize,
    /// Values one output row's window reads: the largest tap offset plus a group row.
    reach: usize,
}

impl Geometry {
    /// `None` when a size overflows, or when the window is so much larger than the image that
    /// the padded plane would dwarf the input and output (a 2^15 window on a 2x3 image) or a
    /// row would sum mostly padding: those run the reference loops.
    fn new(w: &Window, h: usize, wd: usize, oh: usize, ow: usize) -> Option<Geometry> {
        let (kh, kw) = (w.kh, w.kw);
        let s = w.stride_w.max(1);
        if oh == 0 || ow == 0 || kh == 0 || kw == 0 {
            return None;
        }
        let hp = (oh - 1).checked_mul(w.stride_h)?.checked_add(kh)?;
        let wp = w.pad_w.checked_mul(2)?.checked_add(wd)?;
        // A phase must hold every column a group reads: ox + j / s for ox < ow4, j < kw.
        let ow4 = ow.checked_next_multiple_of(LANES)?;
        let plen = wp.div_ceil(s).max(ow4.checked_add((kw - 1) / s)?);
        let stride_row = s.checked_mul(plen)?;
        let plane = hp.checked_mul(stride_row)?;
        // The largest tap offset (tap (kh - 1, j) for the j whose phase and position are last).
        let last_tap = (0..kw.min(s)).map(|q| (kw - 1 - q) % s * plen + (kw - 1 - q) / s).max()?;
        let reach = (kh - 1).checked_mul(stride_row)?.checked_add(last_tap)?.checked_add(ow4)?;
        // The last output row's window must end inside the plane.
        if (oh - 1).checked_mul(w.stride_h)?.checked_mul(stride_row)?.checked_add(reach)? > plane {
            return None;
        }
        // Worth it: the copy is at most a few times the input and output, and a row's taps
        // are not mostly beside the image.
        let io = h.checked_mul(wd)?.checked_add(oh.checked_mul(ow)?)?;
        if plane > io.checked_mul(4)?.checked_add(1 << 16)? || kw > wd.checked_mul(4)?.checked_add(16)? {
            return None;
        }
        Some(Geometry { hp, plen, stride_row, ow4, reach })
    }
}

/// Outputs `g .. g + 4V` of one row: each sums `tap * window[off + k]` over the taps in order.
///
/// # Safety
/// `window + off + g + 4V` must stay inside the padded plane for every offset in `offs`, and
/// `line + g + 4V` inside the output row.
#[inline(always)]
unsafe fn group<const V: usize>(window: *const f32, offs: &[usize], taps: &[f32], g: usize, line: *mut f32) {
    let mut acc = [F4::zero(); V];
    for (&off, &tap) in offs.iter().zip(taps) {
        let t = F4::splat(tap);
        let p = window.add(off + g);
        for (v, a) in acc.iter_mut().enumerate() {
            *a = a.mul_add(F4::load(p.add(4 * v)), t);
        }
    }
    for (v, a) in acc.iter().enumerate() {
        a.store(line.add(g + 4 * v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::src_coord;

    /// The row kernel equals the reference loops exactly (same products, same order) for
    /// strides 1 to 3, padding, windows wider than the image, and images shorter than the window.
    #[test]
    fn matches_the_reference_loops() {
        for &(kh, kw, sh, sw, ph, pw, h, wd) in &[
            (3, 3, 1, 1, 1, 1, 7, 9),
            (3, 3, 2, 2, 1, 1, 8, 8),
            (3, 3, 1, 1, 1, 1, 5, 40),
            (3, 3, 2, 2, 1, 1, 9, 7),
            (5, 5, 2, 2, 2, 2, 11, 6),
            (3, 2, 2, 3, 1, 0, 5, 10),
            (1, 1, 1, 1, 0, 0, 3, 3),
            (3, 3, 1, 1, 2, 2, 2, 2),
            // Short, wide maps (text models): most window rows in the vertical padding.
            (5, 5, 1, 1, 2, 2, 2, 19),
            (5, 5, 2, 1, 2, 2, 3, 20),
            (5, 5, 1, 1, 4, 2, 1, 8),
        ] {
            let win = Window { kh, kw, stride_h: sh, stride_w: sw, pad_h: ph, pad_w: pw };
            let Some((oh, ow)) = win.out_hw(h, wd) else { panic!("window does not fit") };
            let (n, c) = (2, 3);
            let x: Vec<f32> = (0..n * c * h * wd).map(|i| (i as f32 * 0.37).sin()).collect();
            let k: Vec<f32> = (0..c * kh * kw).map(|i| (i as f32 * 0.71).cos()).collect();
            let got = depthwise_f32(&x, &[n, c, h, wd], &k, &win, oh, ow).unwrap();
            // Same products in the same order in f32 (plus exact zeros from the padding).
            let want = reference_f32(&x, &[n, c, h, wd], &k, &win, oh, ow);
            assert_eq!(got, want, "{win:?} on {h}x{wd}");
        }
    }

    /// Windows far larger than the image (no padded copy of 2^15 rows is made) and large
    /// strides and paddings run the reference loops; either way the sums are the reference's.
    #[test]
    fn huge_windows_take_the_bounded_loops() {
        let big = 1 << 15;
        // (window, image, whether the SIMD path takes it): a tall window at stride 1 has as
        // many output rows as padded rows, so its padded copy is in proportion.
        for &(kh, kw, sh, sw, ph, pw, h, wd, simd) in &[
            (big, 2, 1, 1, big - 1, 1, 2, 3, true),
            (big, 3, big, 1, big - 1, 2, 3, 2, false),
            (4, 64, 1, 1, 3, 63, 2, 2, false),
            (1, 1, 1 << 14, 1 << 14, 1 << 14, 1 << 14, 2, 2, false),
        ] {
            let win = Window { kh, kw, stride_h: sh, stride_w: sw, pad_h: ph, pad_w: pw };
            let (oh, ow) = win.out_hw(h, wd).unwrap();
            assert_eq!(Geometry::new(&win, h, wd, oh, ow).is_some(), simd, "{win:?}");
            let (n, c) = (1, 2);
            let x: Vec<f32> = (0..n * c * h * wd).map(|i| (i as f32 * 0.37).sin()).collect();
            let k: Vec<f32> = (0..c * kh * kw).map(|i| (i as f32 * 0.71).cos()).collect();
            let got = depthwise_f32(&x, &[n, c, h, wd], &k, &win, oh, ow).unwrap();
            let want = crate::window::depthwise(&x, &[n, c, h, wd], &k, &win, oh, ow).unwrap();
            assert_eq!(got, want, "{win:?}");
        }
    }

    /// Inputs or weights shorter than their shapes are typed errors.
    #[test]
    fn short_slices_are_errors() {
        let win = Window::square(3, 1, 1);
        let x = vec![1.0f32; 2 * 5 * 5];
        let k = vec![1.0f32; 2 * 9];
        assert!(depthwise_f32(&x, &[1, 2, 5, 5], &k, &win, 5, 5).is_ok());
        assert!(depthwise_f32(&x[..49], &[1, 2, 5, 5], &k, &win, 5, 5).is_err());
        assert!(depthwise_f32(&x, &[1, 2, 5, 5], &k[..17], &win, 5, 5).is_err());
        assert!(depthwise_f32(&x, &[1, 2, 5, 5], &k, &win, 5, 6).is_err());
        assert!(depthwise_f32(&x, &[usize::MAX, 2, 5, 5], &k, &win, 5, 5).is_err());
    }

    /// One f32 sum per output over its taps in (i, j) order, padding skipped: the definition
    /// the reference backend's loops follow.
    fn reference_f32(x: &[f32], dims: &[usize], k: &[f32], w: &Window, oh: usize, ow: usize) -> Vec<f32> {
        let (n, c, h, wd) = (dims[0], dims[1], dims[2], dims[3]);
        let mut out = vec![0.0f32; n * c * oh * ow];
        for plane in 0..n * c {
            let ch = plane % c;
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = 0.0f32;
                    for i in 0..w.kh {
                        for j in 0..w.kw {
                            let (Some(y), Some(xx)) = (src_coord(oy, w.stride_h, i, w.pad_h, h), src_coord(ox, w.stride_w, j, w.pad_w, wd))
                            else {
                                continue;
                            };
                            acc += x[plane * h * wd + y * wd + xx] * k[ch * w.kh * w.kw + i * w.kw + j];
                        }
                    }
                    out[plane * oh * ow + oy * ow + ox] = acc;
                }
            }
        }
        out
    }
}
