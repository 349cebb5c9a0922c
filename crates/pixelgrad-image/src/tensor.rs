//! Image tensors: resampling, the whole `fromPixels` preprocessing, and Y'CbCr to RGB, as
//! tensor ops (every backend, with gradients). The resampling filter and the fit geometry are
//! defined once in [`crate`]; here an axis' filter becomes an interpolation matrix
//! ([`Axis::matrix`]), so resampling is two matmuls.

use pixelgrad_core::{Error, Result, Tensor};

use crate::yuv::YuvMatrix;
use crate::{Antialias, Axis, Fit, Geometry, Layout, PixelSpec, LUMA};

fn shape_err(op: &'static str, x: &Tensor, msg: String) -> Error {
    Error::Shape { op, shapes: vec![x.dims().to_vec()], backend: x.device().name(), msg }
}

/// True if the axis maps every output pixel onto the source pixel of the same index.
fn is_identity(a: &Axis) -> bool {
    a.len == a.src && a.scale == 1.0 && a.offset == 0.0 && a.support == 1.0
}

/// Resamples `x [N, C, H, W]` onto the content box of `g`: `[N, C, g.y.len, g.x.len]`.
fn resample(x: &Tensor, g: &Geometry) -> Result<Tensor> {
    let d = x.dims().to_vec();
    let (n, c, h, w) = (d[0], d[1], d[2], d[3]);
    let dev = x.device();
    let mut t = x.reshape([n * c, h, w])?;
    if !is_identity(&g.y) {
        // [1, len_y, H] x [N*C, H, W] -> [N*C, len_y, W]
        let my = Tensor::from_f64(dev, &g.y.matrix(), [1, g.y.len, h])?;
        t = my.matmul(&t)?;
    }
    if !is_identity(&g.x) {
        // [N*C, len_y, W] x [1, len_x, W]^T -> [N*C, len_y, len_x]
        let mx = Tensor::from_f64(dev, &g.x.matrix(), [1, g.x.len, w])?;
        t = t.matmul_t(&mx, false, true)?;
    }
    t.reshape([n, c, g.y.len, g.x.len])
}

/// Resamples `x [N, C, H, W]` to `[N, C, out_h, out_w]` with half-pixel centres: bilinear, with
/// the filter stretched when shrinking as `antialias` says (see [`crate`]). Bilinear
/// upsampling of heatmaps and masks is `resize(mask, H, W, Antialias::Never)`.
pub fn resize(x: &Tensor, out_h: usize, out_w: usize, antialias: Antialias) -> Result<Tensor> {
    if x.rank() != 4 {
        return Err(shape_err("resize", x, "expects [N, C, H, W]".into()));
    }
    let spec = PixelSpec { size: Some((out_h, out_w)), antialias, ..PixelSpec::default() };
    let d = x.dims();
    let g = Geometry::new(d[3], d[2], &spec, "resize")?;
    resample(x, &g)
}

/// A per-channel `[1, C, 1, 1]` constant.
fn per_channel(x: &Tensor, v: &[f32]) -> Result<Tensor> {
    Tensor::from_vec(x.device(), v, [1, v.len(), 1, 1])
}

/// The model input for an image tensor `x [N, C, H, W]` with values in `[0, 1]` (`C` = 3 for
/// RGB or 4 for RGBA) under `spec`: exactly what `pg.fromPixels` computes from pixels (see
/// [`crate`]), as tensor ops. Also returns the geometry (the letterbox of
/// [`Fit::Contain`], the crop of [`Fit::Cover`]).
pub fn preprocess(x: &Tensor, spec: &PixelSpec) -> Result<(Tensor, Geometry)> {
    let op = "preprocess";
    if x.rank() != 4 {
        return Err(shape_err(op, x, "expects an image tensor [N, C, H, W] (C = 3 for RGB, 4 for RGBA)".into()));
    }
    let d = x.dims().to_vec();
    let cin = d[1];
    if !(cin == 3 || cin == 4) {
        return Err(shape_err(op, x, format!("expects 3 (RGB) or 4 (RGBA) channels, got {cin}")));
    }
    let g = Geometry::new(d[3], d[2], spec, op)?;
    let ch = spec.channels;
    let picked = match ch {
        1 => x.slice(1, 0, 3)?.mul(&per_channel(x, &LUMA)?)?.sum_axis(1, true)?,
        3 => x.slice(1, 0, 3)?,
        _ if cin == 4 => x.clone(),
        _ => return Err(shape_err(op, x, "channels: 4 needs an RGBA input (4 channels)".into())),
    };
    let y = resample(&picked, &g)?;
    let aff = spec.affine();
    let mul: Vec<f32> = aff[..ch].iter().map(|a| a.0).collect();
    let add: Vec<f32> = aff[..ch].iter().map(|a| a.1).collect();
    let mut y = y.mul(&per_channel(x, &mul)?)?.add(&per_channel(x, &add)?)?;
    if spec.fit == Fit::Contain && (g.x.len < g.x.out || g.y.len < g.y.out) {
        // Zeros padded around `y - p`, then `+ p`: the padding is the normalised pad value.
        let p: Vec<f32> = (0..ch).map(|c| spec.pad[c] * mul[c] + add[c]).collect();
        let pt = per_channel(x, &p)?;
        let before = [0, 0, g.y.start, g.x.start];
        let after = [0, 0, g.y.out - g.y.start - g.y.len, g.x.out - g.x.start - g.x.len];
        y = y.sub(&pt)?.pad(&before, &after)?.add(&pt)?;
    }
    if spec.layout == Layout::Nhwc {
        y = y.permute(&[0, 2, 3, 1])?;
    }
    Ok((y, g))
}

/// Chroma `[h2, w2]` repeated over 2x2 blocks and cut to `[h, w]`.
fn upsample2(t: &Tensor, h: usize, w: usize) -> Result<Tensor> {
    let d = t.dims().to_vec();
    let (h2, w2) = (d[0], d[1]);
    let up = t.reshape([h2, 1, w2, 1])?.broadcast_to([h2, 2, w2, 2])?.reshape([2 * h2, 2 * w2])?;
    let up = if 2 * h2 != h { up.slice(0, 0, h)? } else { up };
    if 2 * w2 != w {
        up.slice(1, 0, w)
    } else {
        Ok(up)
    }
}

/// RGB `[3, H, W]` in `[0, 1]` of a 4:2:0 frame given as tensors of 8-bit sample values:
/// luma `y [H, W]`, chroma `u, v [ceil(H/2), ceil(W/2)]` (split an NV12 chroma plane
/// `[h2, w2, 2]` into its two channels first). The same conversion as
/// [`crate::yuv::YuvPlanes::to_rgba8`], before rounding.
pub fn yuv_to_rgb(y: &Tensor, u: &Tensor, v: &Tensor, m: &YuvMatrix) -> Result<Tensor> {
    let op = "yuv_to_rgb";
    if y.rank() != 2 {
        return Err(shape_err(op, y, "expects the luma plane as [H, W]".into()));
    }
    let (h, w) = (y.dims()[0], y.dims()[1]);
    let want = [h.div_ceil(2), w.div_ceil(2)];
    for p in [u, v] {
        if p.dims() != want {
            return Err(Error::Shape {
                op,
                shapes: vec![y.dims().to_vec(), u.dims().to_vec(), v.dims().to_vec()],
                backend: y.device().name(),
                msg: format!("chroma planes must be {want:?} for a {h}x{w} luma plane"),
            });
        }
    }
    let (a, b, c) = m.range();
    let yp = y.affine(a as f32, b as f32)?;
    let cb = upsample2(&u.affine(c as f32, (-128.0 * c) as f32)?, h, w)?;
    let cr = upsample2(&v.affine(c as f32, (-128.0 * c) as f32)?, h, w)?;
    let r = yp.add(&cr.mul_scalar((2.0 * (1.0 - m.kr)) as f32)?)?;
    let bl = yp.add(&cb.mul_scalar((2.0 * (1.0 - m.kb)) as f32)?)?;
    let g = yp.sub(&r.mul_scalar(m.kr as f32)?)?.sub(&bl.mul_scalar(m.kb as f32)?)?.mul_scalar((1.0 / (1.0 - m.kr - m.kb)) as f32)?;
    let clamp = |t: Tensor| -> Result<Tensor> { t.max_scalar(0.0)?.min_scalar(1.0)?.unsqueeze(0) };
    Tensor::concat(&[&clamp(r)?, &clamp(g)?, &clamp(bl)?], 0)
}
