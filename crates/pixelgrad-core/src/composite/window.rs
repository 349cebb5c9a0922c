//! Convolution and average pooling via im2col: a window op turns each receptive field into a
//! column, then a matmul (convolution) or a reduction (pooling) finishes the job. Their
//! gradients come from im2col's adjoint, col2im. Max pooling is its own primitive, read
//! straight from the image.

use crate::op::Window;
use crate::tensor::Tensor;
use crate::{Error, Result};

fn rank4(op: &'static str, x: &Tensor) -> Result<[usize; 4]> {
    if x.rank() != 4 {
        return Err(Error::Shape {
            op,
            shapes: vec![x.dims().to_vec()],
            backend: x.device().name(),
            msg: "expects an NCHW input of rank 4".into(),
        });
    }
    let d = x.dims();
    Ok([d[0], d[1], d[2], d[3]])
}

/// 2-D convolution (cross-correlation), NCHW input `x`, weights `[O, C, kh, kw]`, optional bias
/// `[O]`. Output `[N, O, OH, OW]`.
pub fn conv2d(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, stride: usize, padding: usize) -> Result<Tensor> {
    let [n, c, h, w] = rank4("conv2d", x)?;
    let wd = weight.dims();
    if weight.rank() != 4 || wd[1] != c {
        return Err(Error::Shape {
            op: "conv2d",
            shapes: vec![x.dims().to_vec(), wd.to_vec()],
            backend: x.device().name(),
            msg: format!("weights must be [O, {c}, kh, kw] for {c} input channels"),
        });
    }
    let win = Window { kh: wd[2], kw: wd[3], stride_h: stride, stride_w: stride, pad_h: padding, pad_w: padding };
    let (oh, ow) = win.out_hw(h, w).ok_or_else(|| Error::Shape {
        op: "conv2d",
        shapes: vec![x.dims().to_vec(), wd.to_vec()],
        backend: x.device().name(),
        msg: format!("a {}x{} kernel with stride {stride} and padding {padding} does not fit", wd[2], wd[3]),
    })?;
    let k = c * wd[2] * wd[3];
    let (xp, ow_p) = widen_conv_input(x, win, wd[0], k, oh, ow)?;
    let cols = xp.im2col(win)?; // [N, C*kh*kw, OH*OW']
    let wm = weight.reshape([wd[0], k])?; // [O, C*kh*kw]
    let mut y = wm.matmul(&cols)?; // [N, O, OH*OW']
    if let Some(b) = bias {
        // Added before the reshape, so a GPU backend applies it as the product's epilogue.
        y = y.add(&b.reshape([1, wd[0], 1])?)?;
    }
    crop_conv_output(&y.reshape([n, wd[0], oh, ow_p])?, ow)
}

/// The input of a convolution (`x [N, C, H, W]`, `win`, `out_ch` filters of `k` = C·kh·kw
/// taps, output `oh` x `ow`) as its product `[O, K] x [N, K, OH·OW]` is best laid out on this
/// backend ([`Backend::im2col_align`](crate::Backend::im2col_align)), and the output width
/// that gives: `x` itself and `ow`, or, where the backend wants rows of a multiple of `align`
/// columns and `OH·OW` is not one, `x` with `extra · stride` zero columns on the right and
/// `ow + extra` (the smallest width whose rows fill). The extra output columns read only the
/// image's last columns and the zeros; [`crop_conv_output`] cuts them off, and their gradient
/// is zero.
pub fn widen_conv_input(x: &Tensor, win: Window, out_ch: usize, k: usize, oh: usize, ow: usize) -> Result<(Tensor, usize)> {
    let n = x.dims().first().copied().unwrap_or(1);
    let align = x.device().backend().im2col_align(n, out_ch, k, oh * ow).max(1);
    let ow_p = (ow..ow + align).find(|&v| (oh * v).is_multiple_of(align)).unwrap_or(ow);
    if ow_p == ow || x.rank() != 4 {
        return Ok((x.clone(), ow));
    }
    Ok((x.pad(&[0; 4], &[0, 0, 0, (ow_p - ow) * win.stride_w])?, ow_p))
}

/// A convolution output `[N, O, OH, OW']` made on a [`widen_conv_input`] input, cut back to
/// its `ow` columns (no copy when there is nothing to cut).
pub fn crop_conv_output(y: &Tensor, ow: usize) -> Result<Tensor> {
    if y.rank() == 4 && y.dims()[3] > ow {
        y.slice(3, 0, ow)
    } else {
        Ok(y.clone())
    }
}

/// The `k`x`k` windows of `x` as columns `[N*C, k*k, OH*OW]` (padding reads 0) and the pooled
/// shape.
fn pool_cols(op: &'static str, x: &Tensor, k: usize, stride: usize, padding: usize) -> Result<(Tensor, [usize; 4], usize)> {
    let [n, c, h, w] = rank4(op, x)?;
    let win = Window::square(k, stride, padding);
    let (oh, ow) = win.out_hw(h, w).ok_or_else(|| Error::Shape {
        op,
        shapes: vec![x.dims().to_vec()],
        backend: x.device().name(),
        msg: format!("a {k}x{k} window with stride {stride} does not fit"),
    })?;
    Ok((x.reshape([n * c, 1, h, w])?.im2col(win)?, [n, c, oh, ow], k * k))
}

/// Max pooling over `k`x`k` windows ([`Op::MaxPool`](crate::Op::MaxPool): one pass, no
/// im2col columns). Padding is never selected and must be smaller than `k`.
pub fn max_pool2d(x: &Tensor, k: usize, stride: usize, padding: usize) -> Result<Tensor> {
    let [_, _, h, w] = rank4("max_pool2d", x)?;
    let win = Window::square(k, stride, padding);
    let bad = |msg: String| Error::Shape { op: "max_pool2d", shapes: vec![x.dims().to_vec()], backend: x.device().name(), msg };
    if padding >= k {
        return Err(bad(format!("padding {padding} must be smaller than the {k}x{k} window")));
    }
    if win.out_hw(h, w).is_none() {
        return Err(bad(format!("a {k}x{k} window with stride {stride} does not fit")));
    }
    x.max_pool(win)
}

/// Average pooling over `k`x`k` windows; padded positions count as zeros in the average.
pub fn avg_pool2d(x: &Tensor, k: usize, stride: usize, padding: usize) -> Result<Tensor> {
    let (cols, [n, c, oh, ow], kk) = pool_cols("avg_pool2d", x, k, stride, padding)?;
    cols.sum_axis(1, true)?.mul_scalar(1.0 / kk as f32)?.reshape([n, c, oh, ow])
}
