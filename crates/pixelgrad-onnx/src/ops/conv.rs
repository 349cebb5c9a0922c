//! `Conv` and `ConvTranspose` on im2col / col2im.
//!
//! - `group = 1`: one matmul of the weights `[M, C*kh*kw]` with the columns (for a 1×1
//!   kernel with stride 1 and no padding, the image itself reshaped: no im2col pass).
//! - Depthwise with one filter per channel (`C/group = 1`, `M = C`): the depthwise primitive,
//!   one pass over the windows without materialising columns.
//! - Depthwise with a channel multiplier (`M = k·C`): columns `[N, C, 1, kh*kw, L]` times the
//!   weights broadcast as `[1, C, k, kh*kw, 1]`, summed over the window axis (no per-channel
//!   matmul).
//! - Other groups: one batched matmul with the group as the batch axis.
//! - Dilations: the kernel is spread out with zeros (pad + reshape on the weights), so the same
//!   im2col runs with the dilated kernel size.
//! - Asymmetric pads: an explicit `Pad` first; symmetric pads go into the im2col window.

use pixelgrad_core::composite::{crop_conv_output, widen_conv_input};
use pixelgrad_core::{Tensor, Window};

use super::context::{Cx, V};
use crate::shapes::window2;
use crate::Result;

/// `Conv`.
pub(super) fn conv_op(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    if cx.v(ins, 0)?.dims().len() == 3 {
        return super::one_d::one_d_as_two_d(cx, ins, conv_op);
    }
    let dt = cx.dtype0(ins);
    Ok(vec![V::dev(conv(cx, ins)?, dt)])
}

/// `ConvTranspose`.
pub(super) fn conv_transpose_op(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    if cx.v(ins, 0)?.dims().len() == 3 {
        return super::one_d::one_d_as_two_d(cx, ins, conv_transpose_op);
    }
    let dt = cx.dtype0(ins);
    Ok(vec![V::dev(conv_transpose(cx, ins)?, dt)])
}

/// Weights `[A, B, kh, kw]` with `d - 1` zeros between taps: `[A, B, (kh-1)dh+1, (kw-1)dw+1]`.
fn dilate(w: &Tensor, d: [usize; 2]) -> Result<Tensor> {
    if d == [1, 1] {
        return Ok(w.clone());
    }
    let s = w.dims().to_vec();
    let (kh, kw) = (s[2], s[3]);
    let spread = w.reshape([s[0], s[1], kh, 1, kw, 1])?.pad(&[0; 6], &[0, 0, 0, d[0] - 1, 0, d[1] - 1])?.reshape([
        s[0],
        s[1],
        kh * d[0],
        kw * d[1],
    ])?;
    let (eh, ew) = ((kh - 1) * d[0] + 1, (kw - 1) * d[1] + 1);
    Ok(spread.slice(2, 0, eh)?.slice(3, 0, ew)?)
}

fn conv(cx: &Cx, ins: &[Option<V>]) -> Result<Tensor> {
    let bias = match cx.opt(ins, 2) {
        Some(_) => Some(cx.t(ins, 2)?),
        None => None,
    };
    conv_tensors(cx, cx.t(ins, 0)?, cx.t_weight(ins, 1)?, bias.as_ref())
}

/// `Conv` of `x` with `w` under the node's attributes (shared with the integer convolutions,
/// which pass zero-point-corrected inputs: padding with zeros is then padding with the zero
/// point, as ONNX wants).
pub fn conv_tensors(cx: &Cx, x: Tensor, w: Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let node = cx.node;
    node.only_attrs(&["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"])?;
    if x.rank() != 4 || w.rank() != 4 {
        return Err(cx.err(format!(
            "only 2-D convolutions (NCHW input, rank-4 weights) are supported; got input {:?}, weights {:?}",
            x.dims(),
            w.dims()
        )));
    }
    let [n, c, h, wd] = [x.dims()[0], x.dims()[1], x.dims()[2], x.dims()[3]];
    let wdims = w.dims().to_vec();
    let (m, cg) = (wdims[0], wdims[1]);
    let g = node.int("group", 1)?;
    if g < 1 || c % g as usize != 0 || m % g as usize != 0 || c / g as usize != cg {
        return Err(cx.err(format!("group {g} does not fit input channels {c}, weights {wdims:?}")));
    }
    let g = g as usize;
    let win = window2(node, [h, wd], Some([wdims[2], wdims[3]]), false)?;
    // f16-stored weights (Cx::t_weight) stay f16 only into the matmuls below (group 1, or
    // groups of more than one channel) and undilated; dilation, depthwise and the per-channel
    // product widen them.
    let matmul_path = cg != 1 || (m != c && g == 1);
    let w =
        if w.storage_dtype() == pixelgrad_core::kernel::DType::F16 && !(matmul_path && win.dilation == [1, 1]) { w.widen()? } else { w };
    let w = dilate(&w, win.dilation)?;
    let (kh, kw) = (w.dims()[2], w.dims()[3]);
    let kk = kh * kw;
    let (x, pad) = if win.pad_begin == win.pad_end {
        (x, win.pad_begin)
    } else {
        let b = [0, 0, win.pad_begin[0], win.pad_begin[1]];
        let e = [0, 0, win.pad_end[0], win.pad_end[1]];
        (x.pad(&b, &e)?, [0, 0])
    };
    let window = Window { kh, kw, stride_h: win.stride[0], stride_w: win.stride[1], pad_h: pad[0], pad_w: pad[1] };
    let [oh, ow] = win.out;
    let l = oh * ow;
    let stride_1 = window.stride_h == 1 && window.stride_w == 1;
    let y = if cg == 1 && m == c {
        // Depthwise with one filter per channel: its own kernel, no columns.
        x.depthwise_conv(&w, window)?
    } else if g == 1 && kh == 3 && kw == 3 && stride_1 && x.device().backend().caps().conv {
        // A dense 3x3 stride-1 convolution as one op where the backend has it (the CPU runs it
        // as Winograd F(2x2, 3x3): 16 multiply-adds per 2x2 outputs instead of 36, no columns).
        x.conv(&w.widen()?, window)?
    } else if g == 1 {
        // Rows of columns widened to what the backend reads best (WebGL: whole texels), cut
        // back after the bias, which a GPU backend draws with the product.
        let (x, ow_p) = widen_conv_input(&x, window, m, c * kk, oh, ow)?;
        // A pointwise convolution's columns are the image itself: no im2col pass.
        let cols = if kk == 1 && stride_1 && pad == [0, 0] {
            x.reshape([n, c, oh * ow_p])?
        } else {
            x.im2col(window)? // [N, C*kk, OH*OW']
        };
        let y = w.reshape([m, c * kk])?.matmul(&cols)?; // [N, M, OH*OW']
        let y = match bias {
            Some(b) => y.add(&b.reshape([1, m, 1])?)?,
            None => y,
        };
        return Ok(crop_conv_output(&y.reshape([n, m, oh, ow_p])?, ow)?);
    } else {
        let cols = if kk == 1 && stride_1 && pad == [0, 0] {
            x.reshape([n, c, l])?
        } else {
            x.im2col(window)? // [N, C*kk, L]
        };
        let y = if cg == 1 {
            let mult = m / c;
            cols.reshape([n, c, 1, kk, l])?.mul(&w.reshape([1, c, mult, kk, 1])?)?.sum_axis(3, true)?
        } else {
            let (mg, ck) = (m / g, cg * kk);
            let w3 = w.reshape([g, mg, ck])?;
            if n == 1 {
                w3.matmul(&cols.reshape([g, ck, l])?)?
            } else {
                let c3 = cols.reshape([n, g, ck, l])?.permute(&[1, 2, 0, 3])?.reshape([g, ck, n * l])?;
                w3.matmul(&c3)?.reshape([g, mg, n, l])?.permute(&[2, 0, 1, 3])?
            }
        };
        y.reshape([n, m, oh, ow])?
    };
    let y = match bias {
        Some(b) => y.add(&b.reshape([1, m, 1, 1])?)?,
        None => y,
    };
    Ok(y)
}

/// An integer convolution on 8-bit weights ([`Tensor::matmul_i8`]): `x` zero-point corrected
/// (f32 whole numbers), `w8` the weights as an 8-bit `[M, C·kh·kw]` matrix of the node's
/// `[M, C, kh, kw]` weights `wdims`, `wz` their zero points (`[M]` or one) when not all zero.
/// Returns the exact `int32` accumulator as f32, `[N, M, OH, OW]`; `None` for the shapes this
/// path does not take (groups, dilations), which run on the f32 path.
///
/// `shift` (`delta` `[1, 1, 1, 1]`, the weights' row sums `[M]`) runs the product on
/// [`Tensor::matmul_i8_packed`]: `x + delta` is in `[-128, 127]` (the caller knows it by
/// construction, see `quant::packed_shift`), padding included, so the input is padded
/// explicitly (zeros of the centred `x`) before the shift, and `delta · Σ_k w` is subtracted
/// from the product.
pub fn conv_i8(
    cx: &Cx,
    x: &Tensor,
    w8: &Tensor,
    wdims: &[usize],
    wz: Option<&Tensor>,
    shift: Option<(&Tensor, &Tensor)>,
) -> Result<Option<Tensor>> {
    let node = cx.node;
    if x.rank() != 4 || wdims.len() != 4 || node.int("group", 1)? != 1 || x.dims()[1] != wdims[1] {
        return Ok(None);
    }
    let [n, c, h, wd] = [x.dims()[0], x.dims()[1], x.dims()[2], x.dims()[3]];
    let win = window2(node, [h, wd], Some([wdims[2], wdims[3]]), false)?;
    if win.dilation != [1, 1] {
        return Ok(None);
    }
    let (kh, kw, m) = (wdims[2], wdims[3], wdims[0]);
    let unpadded = win.pad_begin == [0, 0] && win.pad_end == [0, 0];
    let (x, pad) = if win.pad_begin == win.pad_end && (shift.is_none() || unpadded) {
        (x.clone(), win.pad_begin)
    } else {
        (x.pad(&[0, 0, win.pad_begin[0], win.pad_begin[1]], &[0, 0, win.pad_end[0], win.pad_end[1]])?, [0, 0])
    };
    let x = match shift {
        Some((delta, _)) => x.add(delta)?,
        None => x,
    };
    let window = Window { kh, kw, stride_h: win.stride[0], stride_w: win.stride[1], pad_h: pad[0], pad_w: pad[1] };
    let [oh, ow] = win.out;
    let l = oh * ow;
    let cols = if kh * kw == 1 && window.stride_h == 1 && window.stride_w == 1 && pad == [0, 0] {
        x.reshape([n, c, l])?
    } else {
        x.im2col(window)?
    };
    let mut acc = match shift {
        Some((delta, sums)) => {
            // Σ w·x = Σ w·(x + delta) - delta·Σ_k w
            let d = delta.reshape([1, 1, 1])?;
            w8.matmul_i8_packed(&cols)?.sub(&sums.reshape([1, m, 1])?.mul(&d)?)?
            // [N, M, L]
        }
        None => w8.matmul_i8(&cols)?, // [N, M, L]
    };
    if let Some(z) = wz {
        // Σ (w - z)·x = Σ w·x - z·Σ x (the columns hold x + delta when shifted)
        let zs = z.reshape([1, z.numel(), 1])?;
        let mut sum = cols.sum_axis(1, true)?;
        if let Some((delta, _)) = shift {
            sum = sum.sub(&delta.reshape([1, 1, 1])?.mul_scalar((c * kh * kw) as f32)?)?;
        }
        acc = acc.sub(&sum.mul(&zs)?)?;
    }
    Ok(Some(acc.reshape([n, m, oh, ow])?))
}

fn conv_transpose(cx: &Cx, ins: &[Option<V>]) -> Result<Tensor> {
    let node = cx.node;
    node.only_attrs(&["auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"])?;
    let x = cx.t(ins, 0)?;
    let w = cx.t(ins, 1)?;
    if x.rank() != 4 || w.rank() != 4 {
        return Err(cx.err(format!("only 2-D transposed convolutions are supported; got input {:?}, weights {:?}", x.dims(), w.dims())));
    }
    let [n, c, h, wd] = [x.dims()[0], x.dims()[1], x.dims()[2], x.dims()[3]];
    let wdims = w.dims().to_vec();
    let g = node.int("group", 1)?;
    if g < 1 || wdims[0] != c || c % g as usize != 0 {
        return Err(cx.err(format!("weights {wdims:?} do not fit input channels {c} with group {g}")));
    }
    let g = g as usize;
    let (cg, mg) = (c / g, wdims[1]);
    let m = mg * g;
    let two = |name: &str, d: i64| -> Result<[usize; 2]> {
        match node.ints(name)? {
            None => Ok([d as usize; 2]),
            // bounded so that no size computed from them overflows (found by fuzzing)
            Some(v) if v.len() == 2 && v.iter().all(|&x| (0..=1 << 15).contains(&x)) => Ok([v[0] as usize, v[1] as usize]),
            Some(v) => Err(cx.err(format!("{name} {v:?}: expected two values from 0 to 32768"))),
        }
    };
    let stride = two("strides", 1)?;
    let dil = two("dilations", 1)?;
    let opad = two("output_padding", 0)?;
    if let Some(k) = node.ints("kernel_shape")? {
        if k != [wdims[2] as i64, wdims[3] as i64] {
            return Err(cx.err(format!("kernel_shape {k:?} differs from the weights {wdims:?}")));
        }
    }
    if stride.contains(&0) || dil.contains(&0) || opad[0] >= stride[0].max(dil[0]) || opad[1] >= stride[1].max(dil[1]) {
        return Err(cx.err(format!("strides {stride:?}, dilations {dil:?}, output_padding {opad:?} are not valid")));
    }
    if h == 0 || wd == 0 {
        return Err(cx.err(format!("input of {h}x{wd} (zero-size tensors are not supported)")));
    }
    let w = dilate(&w, dil)?;
    let (kh, kw) = (w.dims()[2], w.dims()[3]);
    let kk = kh * kw;
    // col2im draws every window into `base`; output_padding adds rows and columns past it that
    // no window reaches (zeros, then the bias), and the pads cut the result. Pads that follow
    // from a requested size may be negative: those rows lie outside `full` and are zeros too.
    let base = [(h - 1) * stride[0] + kh, (wd - 1) * stride[1] + kw];
    let full = [base[0] + opad[0], base[1] + opad[1]];
    let auto_pad = node.string("auto_pad", "NOTSET")?;
    let output_shape = node.ints("output_shape")?;
    let same = matches!(auto_pad.as_str(), "SAME_UPPER" | "SAME_LOWER");
    let (pb, pe): ([i64; 2], [i64; 2]) = if output_shape.is_some() || same {
        // Pads follow from the requested output size; the total splits as in ONNX's spec
        // (SAME_UPPER puts the larger half at the end, otherwise at the beginning).
        let target = match &output_shape {
            Some(os) if os.len() >= 2 && os.iter().all(|&v| (1..=1 << 31).contains(&v)) => [os[os.len() - 2], os[os.len() - 1]],
            Some(os) => return Err(cx.err(format!("output_shape {os:?} is not valid"))),
            None => [(h * stride[0]) as i64, (wd * stride[1]) as i64],
        };
        let (mut pb, mut pe) = ([0i64; 2], [0i64; 2]);
        for a in 0..2 {
            let total = full[a] as i64 - target[a];
            let (small, large) = (total / 2, total - total / 2);
            (pb[a], pe[a]) = if total < 0 {
                // As onnxruntime does: an output_shape past the full output adds zeros at the
                // end; SAME never makes the output larger than the full one.
                if output_shape.is_some() {
                    (0, total)
                } else {
                    (0, 0)
                }
            } else if auto_pad == "SAME_UPPER" {
                (small, large)
            } else {
                (large, small)
            };
        }
        (pb, pe)
    } else {
        match (auto_pad.as_str(), node.ints("pads")?) {
            ("VALID", _) | ("NOTSET", None) => ([0, 0], [0, 0]),
            ("NOTSET", Some(p)) if p.len() == 4 && p.iter().all(|&v| (0..=1 << 20).contains(&v)) => ([p[0], p[1]], [p[2], p[3]]),
            ("NOTSET", Some(p)) => return Err(cx.err(format!("pads {p:?}: expected 4 values from 0 to 1048576"))),
            (other, _) => return Err(cx.err(format!("auto_pad '{other}' is not supported"))),
        }
    };
    // The output's rows and columns as a range of `full`'s.
    let lo = [pb[0], pb[1]];
    let hi = [full[0] as i64 - pe[0], full[1] as i64 - pe[1]];
    if hi[0] <= lo[0] || hi[1] <= lo[1] {
        return Err(cx.err(format!("pads {pb:?}/{pe:?} remove the whole {full:?} output")));
    }
    cx.check_size(&[n, m, (hi[0] - lo[0]) as usize, (hi[1] - lo[1]) as usize])?;
    let hw = h * wd;
    let cols = if g == 1 {
        // [C, M*kk]^T x [N, C, HW] = [N, M*kk, HW]
        w.reshape([c, m * kk])?.matmul_t(&x.reshape([n, c, hw])?, true, false)?
    } else {
        let w3 = w.reshape([g, cg, mg * kk])?;
        let x3 =
            if n == 1 { x.reshape([g, cg, hw])? } else { x.reshape([n, g, cg, hw])?.permute(&[1, 2, 0, 3])?.reshape([g, cg, n * hw])? };
        let y = w3.matmul_t(&x3, true, false)?; // [g, mg*kk, N*HW]
        if n == 1 {
            y.reshape([1, m * kk, hw])?
        } else {
            y.reshape([g, mg * kk, n, hw])?.permute(&[2, 0, 1, 3])?.reshape([n, m * kk, hw])?
        }
    };
    let window = Window { kh, kw, stride_h: stride[0], stride_w: stride[1], pad_h: 0, pad_w: 0 };
    let mut y = cols.col2im(window, base[0], base[1])?;
    // Keep what lies inside both `base` and the output range, then zeros for the rest; where no
    // window reaches the output on some axis, it is zeros throughout (and the bias).
    let inside: Vec<(usize, usize)> =
        (0..2).map(|a| (lo[a].clamp(0, base[a] as i64) as usize, hi[a].clamp(0, base[a] as i64) as usize)).collect();
    if inside.iter().any(|&(from, to)| to <= from) {
        y = Tensor::zeros(y.device(), [n, m, (hi[0] - lo[0]) as usize, (hi[1] - lo[1]) as usize])?;
    } else {
        let (mut before, mut after) = ([0usize; 4], [0usize; 4]);
        for (a, &(from, to)) in inside.iter().enumerate() {
            if (from, to) != (0, base[a]) {
                y = y.slice(2 + a, from, to)?;
            }
            before[2 + a] = (-lo[a]).max(0) as usize;
            after[2 + a] = (hi[a] - base[a] as i64).max(0) as usize;
        }
        if before != [0; 4] || after != [0; 4] {
            y = y.pad(&before, &after)?;
        }
    }
    if cx.opt(ins, 2).is_some() {
        y = y.add(&cx.t(ins, 2)?.reshape([1, m, 1, 1])?)?;
    }
    Ok(y)
}
