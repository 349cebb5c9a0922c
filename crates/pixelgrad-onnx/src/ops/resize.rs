//! `Resize` (nearest, linear and cubic, every coordinate transformation except
//! `tf_crop_and_resize`) and the older `Upsample`. Source indices and interpolation weights are
//! computed on the host per axis; the device runs one gather per axis (two and a weighted sum
//! for linear, four for cubic).

use pixelgrad_core::Tensor;

use super::context::{take, Cx, V};
use crate::shapes::norm_axis;
use crate::Result;

/// `Resize`.
pub(super) fn resize_op(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let dt = cx.dtype0(ins);
    Ok(vec![V::dev(resize(cx, ins)?, dt)])
}

/// `Upsample`.
pub(super) fn upsample_op(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let dt = cx.dtype0(ins);
    Ok(vec![V::dev(upsample(cx, ins)?, dt)])
}

/// `GridSample`.
pub(super) fn grid_sample_op(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let dt = cx.dtype0(ins);
    Ok(vec![V::dev(grid_sample(cx, ins)?, dt)])
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Nearest,
    Linear,
    /// Keys' cubic convolution with coefficient `a`; `exclude_outside` drops the taps beyond
    /// the edges and renormalises the rest.
    Cubic {
        a: f64,
        exclude_outside: bool,
    },
}

/// How an output coordinate maps back to the input, and how nearest rounds.
struct Plan<'a> {
    mode: Mode,
    transform: &'a str,
    nearest: &'a str,
}

fn resize(cx: &Cx, ins: &[Option<V>]) -> Result<Tensor> {
    let node = cx.node;
    node.only_attrs(&[
        "antialias",
        "axes",
        "coordinate_transformation_mode",
        "cubic_coeff_a",
        "exclude_outside",
        "extrapolation_value",
        "keep_aspect_ratio_policy",
        "mode",
        "nearest_mode",
    ])?;
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    let r = d.len();
    let mode = match node.string("mode", "nearest")?.as_str() {
        "nearest" => Mode::Nearest,
        "linear" | "bilinear" => Mode::Linear,
        "cubic" => Mode::Cubic { a: node.float("cubic_coeff_a", -0.75)? as f64, exclude_outside: node.int("exclude_outside", 0)? != 0 },
        other => return Err(cx.err(format!("mode '{other}' is not supported (nearest, linear, cubic)"))),
    };
    if node.int("antialias", 0)? != 0 {
        return Err(cx.err("antialias = 1 is not supported"));
    }
    if node.int("exclude_outside", 0)? != 0 && mode == Mode::Linear {
        return Err(cx.err("exclude_outside = 1 is not supported with linear"));
    }
    let policy = node.string("keep_aspect_ratio_policy", "stretch")?;
    if policy != "stretch" {
        return Err(cx.err(format!("keep_aspect_ratio_policy '{policy}' is not supported")));
    }
    let (default_tf, default_nearest) = if node.opset < 11 { ("asymmetric", "simple") } else { ("half_pixel", "round_prefer_floor") };
    let transform = node.string("coordinate_transformation_mode", default_tf)?;
    let nearest = node.string("nearest_mode", default_nearest)?;
    if transform == "tf_crop_and_resize" {
        return Err(cx.err("coordinate_transformation_mode 'tf_crop_and_resize' is not supported"));
    }
    let axes: Vec<usize> = match node.ints("axes")? {
        Some(a) => a.iter().map(|&v| norm_axis(node, v, r)).collect::<Result<_>>()?,
        None => (0..r).collect(),
    };
    // Inputs: opset 10 (X, scales); opset 11+ (X, roi, scales, sizes).
    let (scales_i, sizes_i) = if node.opset < 11 { (1, usize::MAX) } else { (2, 3) };
    let scales = cx.opt_h(ins, scales_i, "scales")?.filter(|t| t.numel() > 0).map(|t| t.to_f32());
    let sizes = if sizes_i < ins.len() {
        cx.opt_h(ins, sizes_i, "sizes")?.filter(|t| t.numel() > 0).map(|t| t.to_i64("sizes")).transpose()?
    } else {
        None
    };
    let mut out_sizes = d.clone();
    let mut scale_of = vec![1.0f32; r];
    match (scales, sizes) {
        (Some(s), None) => {
            if s.len() != axes.len() {
                return Err(cx.err(format!("{} scales for {} axes", s.len(), axes.len())));
            }
            for (k, &a) in axes.iter().enumerate() {
                if s[k] <= 0.0 {
                    return Err(cx.err(format!("scale {} must be positive", s[k])));
                }
                scale_of[a] = s[k];
                out_sizes[a] = (d[a] as f32 * s[k]).floor() as usize;
            }
        }
        (None, Some(sz)) => {
            if sz.len() != axes.len() {
                return Err(cx.err(format!("{} sizes for {} axes", sz.len(), axes.len())));
            }
            for (k, &a) in axes.iter().enumerate() {
                if sz[k] <= 0 {
                    return Err(cx.err(format!("size {} must be positive", sz[k])));
                }
                out_sizes[a] = sz[k] as usize;
                scale_of[a] = sz[k] as f32 / d[a] as f32;
            }
        }
        (Some(_), Some(_)) => return Err(cx.err("both scales and sizes are given")),
        (None, None) => return Err(cx.err("needs scales or sizes")),
    }
    let plan = Plan { mode, transform: &transform, nearest: &nearest };
    apply(cx, &x, &out_sizes, &scale_of, &plan)
}

fn upsample(cx: &Cx, ins: &[Option<V>]) -> Result<Tensor> {
    let node = cx.node;
    let x = cx.t(ins, 0)?;
    let d = x.dims().to_vec();
    let scales = match node.floats("scales")? {
        Some(s) => s,
        None => cx.h(ins, 1, "scales")?.to_f32(),
    };
    if scales.len() != d.len() || scales.iter().any(|&s| s <= 0.0) {
        return Err(cx.err(format!("scales {scales:?} do not fit input {d:?}")));
    }
    let mode = match node.string("mode", "nearest")?.as_str() {
        "nearest" => Mode::Nearest,
        "linear" | "bilinear" => Mode::Linear,
        other => return Err(cx.err(format!("mode '{other}' is not supported"))),
    };
    let out: Vec<usize> = d.iter().zip(&scales).map(|(&n, &s)| (n as f32 * s).floor() as usize).collect();
    apply(cx, &x, &out, &scales, &Plan { mode, transform: "asymmetric", nearest: "simple" })
}

fn apply(cx: &Cx, x: &Tensor, out: &[usize], scales: &[f32], plan: &Plan) -> Result<Tensor> {
    cx.check_size(out)?;
    let mut y = x.clone();
    // Nearest upsampling by a whole factor (output `o` reads input `o / r`) repeats each
    // element: one broadcast for all such axes, after the other axes' gathers.
    let mut reps = vec![1usize; out.len()];
    for a in 0..out.len() {
        let (n, m) = (x.dims()[a], out[a]);
        if m == 0 {
            return Err(cx.err(format!("axis {a} would be resized to 0")));
        }
        if n == 0 {
            return Err(cx.err(format!("axis {a} of the input is empty; it cannot be resized to {m}")));
        }
        let coords: Vec<f64> = (0..m)
            .map(|o| source_coord(plan.transform, o, n, m, scales[a]))
            .collect::<std::result::Result<Vec<_>, String>>()
            .map_err(|e| cx.err(e))?;
        match plan.mode {
            Mode::Nearest => {
                let down = scales[a] < 1.0;
                let idx: Vec<usize> = coords
                    .iter()
                    .map(|&c| nearest_index(plan.nearest, c, down).map(|i| i.clamp(0, n as i64 - 1) as usize))
                    .collect::<std::result::Result<Vec<_>, String>>()
                    .map_err(|e| cx.err(e))?;
                if idx.len() == n && idx.iter().enumerate().all(|(i, &j)| i == j) {
                    continue;
                }
                let r = m / n;
                if m % n == 0 && idx.iter().enumerate().all(|(o, &j)| j == o / r) {
                    reps[a] = r;
                    continue;
                }
                y = take(&y, a, &idx)?;
            }
            Mode::Linear => {
                let mut i0 = Vec::with_capacity(m);
                let mut i1 = Vec::with_capacity(m);
                let mut w1 = Vec::with_capacity(m);
                for &c in &coords {
                    let c = c.clamp(0.0, (n - 1) as f64);
                    let f = c.floor();
                    let lo = f as usize;
                    i0.push(lo);
                    i1.push((lo + 1).min(n - 1));
                    w1.push((c - f) as f32);
                }
                if w1.iter().all(|&w| w == 0.0) {
                    if !(i0.len() == n && i0.iter().enumerate().all(|(i, &j)| i == j)) {
                        y = take(&y, a, &i0)?;
                    }
                    continue;
                }
                let mut wshape = vec![1usize; out.len()];
                wshape[a] = m;
                let w1t = Tensor::from_vec(x.device(), &w1, wshape.clone())?;
                let w0: Vec<f32> = w1.iter().map(|w| 1.0 - w).collect();
                let w0t = Tensor::from_vec(x.device(), &w0, wshape)?;
                y = take(&y, a, &i0)?.mul(&w0t)?.add(&take(&y, a, &i1)?.mul(&w1t)?)?;
            }
            Mode::Cubic { a: coeff, exclude_outside } => {
                if scales[a] == 1.0 && m == n && coords.iter().enumerate().all(|(i, &c)| c == i as f64) {
                    continue;
                }
                // four taps per output: floor(c) - 1 ..= floor(c) + 2, edge-clamped
                let mut idx: [Vec<usize>; 4] = std::array::from_fn(|_| Vec::with_capacity(m));
                let mut wts: [Vec<f32>; 4] = std::array::from_fn(|_| Vec::with_capacity(m));
                for &c in &coords {
                    let f = c.floor();
                    let w = cubic_weights(coeff, c - f);
                    let inside: Vec<bool> = (0..4).map(|k| (0.0..n as f64).contains(&(f + k as f64 - 1.0))).collect();
                    let norm: f64 = if exclude_outside { (0..4).filter(|&k| inside[k]).map(|k| w[k]).sum() } else { 1.0 };
                    for k in 0..4 {
                        let i = (f as i64 + k as i64 - 1).clamp(0, n as i64 - 1) as usize;
                        idx[k].push(i);
                        let wk = if exclude_outside && !inside[k] { 0.0 } else { w[k] / norm };
                        wts[k].push(wk as f32);
                    }
                }
                let mut wshape = vec![1usize; out.len()];
                wshape[a] = m;
                let mut acc: Option<Tensor> = None;
                for k in 0..4 {
                    if wts[k].iter().all(|&w| w == 0.0) {
                        continue;
                    }
                    let term = take(&y, a, &idx[k])?.mul(&Tensor::from_vec(x.device(), &wts[k], wshape.clone())?)?;
                    acc = Some(match acc {
                        Some(t) => t.add(&term)?,
                        None => term,
                    });
                }
                y = match acc {
                    Some(t) => t,
                    None => return Err(cx.err("cubic weights are all zero")),
                };
            }
        }
    }
    if reps.iter().any(|&r| r > 1) {
        y = repeat_each(&y, &reps)?;
    }
    Ok(y)
}

/// Keys' cubic convolution weights of the taps at offsets -1, 0, 1, 2 from `floor(c)`, for
/// the fraction `t = c - floor(c)` (they sum to 1).
fn cubic_weights(a: f64, t: f64) -> [f64; 4] {
    // |d| <= 1: (a + 2)|d|^3 - (a + 3)|d|^2 + 1; 1 < |d| < 2: a|d|^3 - 5a|d|^2 + 8a|d| - 4a
    let near = |d: f64| ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
    let far = |d: f64| ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

/// `x` with every element repeated `reps[a]` times along each axis `a`, as one broadcast:
/// `[.., n, ..]` read as `[.., n, 1, ..]`, stretched to `[.., n, r, ..]`, merged to `n·r`.
fn repeat_each(x: &Tensor, reps: &[usize]) -> Result<Tensor> {
    let (mut split, mut wide, mut out) = (Vec::new(), Vec::new(), Vec::new());
    for (&n, &r) in x.dims().iter().zip(reps) {
        split.push(n);
        wide.push(n);
        if r > 1 {
            split.push(1);
            wide.push(r);
        }
        out.push(n * r);
    }
    Ok(x.reshape(split)?.broadcast_to(wide)?.reshape(out)?)
}

/// The input coordinate of output index `o` (ONNX `coordinate_transformation_mode`), computed
/// in f32 as onnxruntime does: where the exact coordinate sits a hair off a half (4 / 1.6f),
/// f32 lands on the half and `nearest_mode` decides, as it does there.
fn source_coord(transform: &str, o: usize, n: usize, m: usize, scale: f32) -> std::result::Result<f64, String> {
    let o = o as f32;
    let c = match transform {
        "half_pixel" => (o + 0.5) / scale - 0.5,
        "pytorch_half_pixel" => {
            if m > 1 {
                (o + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        "align_corners" => {
            if m == 1 {
                0.0
            } else {
                o * (n as f32 - 1.0) / (m as f32 - 1.0)
            }
        }
        "asymmetric" => o / scale,
        "tf_half_pixel_for_nearest" => (o + 0.5) / scale,
        "half_pixel_symmetric" => {
            let adj = m as f32 / (n as f32 * scale);
            let center = n as f32 / 2.0;
            let offset = center * (1.0 - adj);
            offset + (o + 0.5) / scale - 0.5
        }
        other => return Err(format!("coordinate_transformation_mode '{other}' is not supported")),
    };
    Ok(c as f64)
}

fn nearest_index(mode: &str, c: f64, downsample: bool) -> std::result::Result<i64, String> {
    let f = c.floor();
    let frac = c - f;
    Ok(match mode {
        "round_prefer_floor" => {
            if frac == 0.5 {
                f as i64
            } else {
                c.round() as i64
            }
        }
        "round_prefer_ceil" => {
            if frac == 0.5 {
                f as i64 + 1
            } else {
                c.round() as i64
            }
        }
        "floor" => f as i64,
        "ceil" => c.ceil() as i64,
        // Upsample and Resize-10: truncate when enlarging, ceil when shrinking.
        "simple" => {
            if downsample {
                c.ceil() as i64
            } else {
                c as i64
            }
        }
        other => return Err(format!("nearest_mode '{other}' is not supported")),
    })
}

/// `GridSample` on 2-D inputs: `x [N, C, H, W]` read at the normalised `(x, y)` positions of
/// `grid [N, Ho, Wo, 2]` (-1 and 1 the edges; pixel centres or corners with `align_corners`),
/// bilinear or nearest (halves to even), zeros or border padding. Each tap is one gather over
/// the flattened image with indices computed on the device.
fn grid_sample(cx: &Cx, ins: &[Option<V>]) -> Result<Tensor> {
    let node = cx.node;
    node.only_attrs(&["align_corners", "mode", "padding_mode"])?;
    let (x, grid) = (cx.t(ins, 0)?, cx.t(ins, 1)?);
    let (xd, gd) = (x.dims().to_vec(), grid.dims().to_vec());
    if xd.len() != 4 || gd.len() != 4 || gd[0] != xd[0] || gd[3] != 2 {
        return Err(cx.err(format!("expects X [N, C, H, W] and grid [N, Ho, Wo, 2] (2-D sampling), got {xd:?} and {gd:?}")));
    }
    let nearest = match node.string("mode", "linear")?.as_str() {
        "linear" | "bilinear" => false,
        "nearest" => true,
        other => return Err(cx.err(format!("mode '{other}' is not supported (linear, nearest)"))),
    };
    let border = match node.string("padding_mode", "zeros")?.as_str() {
        "zeros" => false,
        "border" => true,
        other => return Err(cx.err(format!("padding_mode '{other}' is not supported (zeros, border)"))),
    };
    let align = node.int("align_corners", 0)? != 0;
    let [n, c, h, w] = [xd[0], xd[1], xd[2], xd[3]];
    let l = gd[1] * gd[2];
    let g = grid.reshape([n, l, 2])?;
    // pixel coordinates: corners map -1 / 1 to 0 / size - 1, otherwise to -0.5 / size - 0.5
    let pix = |k: usize, size: usize| -> Result<Tensor> {
        let v = g.slice(2, k, k + 1)?.reshape([n, 1, l])?;
        let s = size as f32;
        let p = if align { v.affine((s - 1.0) / 2.0, (s - 1.0) / 2.0)? } else { v.affine(s / 2.0, (s - 1.0) / 2.0)? };
        Ok(if border { p.max_scalar(0.0)?.min_scalar(s - 1.0)? } else { p })
    };
    let (px, py) = (pix(0, w)?, pix(1, h)?);
    let flat = x.reshape([n, c, h * w])?;
    let zero = Tensor::scalar(cx.dev(), 0.0)?;
    // the value at integer position (ix, iy), zero outside the image
    let tap = |ix: &Tensor, iy: &Tensor| -> Result<Tensor> {
        let inside = ix
            .gt_scalar(-1.0)?
            .mul(&ix.affine(-1.0, w as f32)?.gt_scalar(0.0)?)?
            .mul(&iy.gt_scalar(-1.0)?)?
            .mul(&iy.affine(-1.0, h as f32)?.gt_scalar(0.0)?)?;
        let cx_ = ix.max_scalar(0.0)?.min_scalar(w as f32 - 1.0)?;
        let cy = iy.max_scalar(0.0)?.min_scalar(h as f32 - 1.0)?;
        let at = cy.mul_scalar(w as f32)?.add(&cx_)?.broadcast_to([n, c, l])?;
        Ok(Tensor::select(&inside, &flat.gather(2, &at)?, &zero)?)
    };
    let y = if nearest {
        tap(&px.round_even()?, &py.round_even()?)?
    } else {
        let (x0, y0) = (px.floor()?, py.floor()?);
        let (fx, fy) = (px.sub(&x0)?, py.sub(&y0)?);
        let (x1, y1) = (x0.add_scalar(1.0)?, y0.add_scalar(1.0)?);
        let (gx, gy) = (fx.affine(-1.0, 1.0)?, fy.affine(-1.0, 1.0)?);
        let top = tap(&x0, &y0)?.mul(&gx)?.add(&tap(&x1, &y0)?.mul(&fx)?)?;
        let bottom = tap(&x0, &y1)?.mul(&gx)?.add(&tap(&x1, &y1)?.mul(&fx)?)?;
        top.mul(&gy)?.add(&bottom.mul(&fy)?)?
    };
    Ok(y.reshape([n, c, gd[1], gd[2]])?)
}
