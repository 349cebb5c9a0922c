//! Pooling on im2col: every window becomes a column of `[N*C, kh*kw, L]`, reduced along the
//! window axis. Max pooling with symmetric padding, no dilation and no `ceil_mode` rows is one
//! `max_pool` pass instead. Padding (asymmetric, `auto_pad`, the extra end rows of `ceil_mode`) is an
//! explicit pad first: `-3e38` for max pooling (never selected), zeros for averages, whose
//! divisors (with or without `count_include_pad`) are computed on the host from the geometry.

use pixelgrad_core::{Tensor, Window};

use super::context::{take, Cx, V};
use crate::host::DType;
use crate::shapes::{window2, Window2};
use crate::Result;

/// The fill value of max-pooling padding (finite, so `0 * pad` stays 0 in the fill trick).
const NEG: f32 = -3.0e38;

/// `GlobalAveragePool`, `GlobalMaxPool`.
pub(super) fn global_pool(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    let (x, d) = cx.spatial(ins, 0)?;
    let h = x.reshape([d[0], d[1], d[2..].iter().product::<usize>()])?;
    let r = if op == "GlobalAveragePool" { h.mean_axis(2, true)? } else { h.max_axis(2, true)? };
    let mut od = vec![d[0], d[1]];
    od.extend(std::iter::repeat_n(1, d.len() - 2));
    out(r.reshape(od)?)
}

/// `MaxPool`.
pub(super) fn max_pool(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    if cx.v(ins, 0)?.dims().len() == 3 {
        return super::one_d::one_d_as_two_d(cx, ins, max_pool);
    }
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"])?;
    let full = cx.t(ins, 0)?;
    let (x, win) = geometry(cx, &full)?;
    if node.outputs.get(1).is_some_and(|o| !o.is_empty()) {
        return max_pool_with_indices(cx, &x, &win, [full.dims()[2], full.dims()[3]], node.int("storage_order", 0)? != 0, dt);
    }
    let symmetric = win.pad_begin == win.pad_end && win.ceil_extra == [0, 0];
    if symmetric && win.dilation == [1, 1] && win.pad_begin[0] < win.k[0] && win.pad_begin[1] < win.k[1] {
        // One pass, reading the image directly (padding never selected).
        let [kh, kw] = win.k;
        let [sh, sw] = win.stride;
        let w = Window { kh, kw, stride_h: sh, stride_w: sw, pad_h: win.pad_begin[0], pad_w: win.pad_begin[1] };
        return out(x.max_pool(w)?);
    }
    let (cols, shape) = windows(&x, &win, Some(NEG))?;
    out(cols.max_axis(1, true)?.reshape(shape)?)
}

/// `AveragePool`.
pub(super) fn average_pool(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    if cx.v(ins, 0)?.dims().len() == 3 {
        return super::one_d::one_d_as_two_d(cx, ins, average_pool);
    }
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    node.only_attrs(&["auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides", "dilations"])?;
    let (x, win) = geometry(cx, &cx.t(ins, 0)?)?;
    let (cols, shape) = windows(&x, &win, None)?;
    let div = divisors(&win, [x.dims()[2], x.dims()[3]], node.int("count_include_pad", 0)? != 0);
    let sums = cols.sum_axis(1, true)?; // [N*C, 1, L]
    let y = if div.iter().all(|&d| d == div[0]) {
        sums.mul_scalar(1.0 / div[0])?
    } else {
        let inv: Vec<f32> = div.iter().map(|d| 1.0 / d).collect();
        let l = inv.len();
        sums.mul(&Tensor::from_vec(x.device(), &inv, [1, 1, l])?)?
    };
    out(y.reshape(shape)?)
}

/// `MaxUnpool`.
pub(super) fn max_unpool(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    // values scattered back to the positions MaxPool's Indices name
    node.only_attrs(&["kernel_shape", "pads", "strides"])?;
    let (x, idx) = (cx.t(ins, 0)?, cx.t(ins, 1)?);
    let d = x.dims().to_vec();
    if d.len() != 4 || idx.dims() != d.as_slice() {
        return Err(cx.err(format!("expects X [N, C, H, W] and indices of its shape, got {d:?} and {:?}", idx.dims())));
    }
    // indices are flat positions in the output: the window's default shape, or
    // output_shape (as onnxruntime reads them; the reference pads the default instead)
    let k = node.ints("kernel_shape")?.ok_or_else(|| cx.err("needs kernel_shape"))?;
    let st = node.ints("strides")?.unwrap_or_else(|| vec![1, 1]);
    let p = node.ints("pads")?.unwrap_or_else(|| vec![0; 4]);
    if k.len() != 2 || st.len() != 2 || p.len() != 4 {
        return Err(cx.err("only 2-D unpooling is supported (kernel_shape, strides: 2 values; pads: 4)"));
    }
    // bounded as window2 bounds pooling's, so that the sizes below cannot overflow
    // (found by fuzzing)
    let fits = |v: &[i64], lo: i64, hi: i64| v.iter().all(|x| (lo..=hi).contains(x));
    if !fits(&k, 1, 1 << 15) || !fits(&st, 1, 1 << 15) || !fits(&p, 0, 1 << 20) {
        return Err(cx.err(format!("kernel_shape {k:?}, strides {st:?} or pads {p:?} out of range")));
    }
    let size = |a: usize| (d[2 + a] as i64 - 1) * st[a] + k[a] - p[a] - p[a + 2];
    let (oh, ow) = (size(0), size(1));
    if oh < 1 || ow < 1 {
        return Err(cx.err(format!("the window gives an empty output ({oh}x{ow})")));
    }
    let out_dims = vec![d[0], d[1], oh as usize, ow as usize];
    let target: Vec<usize> = match cx.opt(ins, 2) {
        Some(_) => cx.h(ins, 2, "output_shape")?.to_i64("output_shape")?.iter().map(|&v| v.max(0) as usize).collect(),
        None => out_dims,
    };
    if target.len() != 4 || target[..2] != d[..2] || target.contains(&0) {
        return Err(cx.err(format!("output_shape {target:?} must be [N, C, H, W] of X {d:?}")));
    }
    cx.check_size(&target)?;
    let total: usize = target.iter().product();
    let n = x.numel();
    out(x.reshape([n])?.scatter_add(0, total, &idx.reshape([n])?)?.reshape(target)?)
}

/// `LpPool`.
pub(super) fn lp_pool(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    if cx.v(ins, 0)?.dims().len() == 3 {
        return super::one_d::one_d_as_two_d(cx, ins, lp_pool);
    }
    let node = cx.node;
    let dt = cx.dtype0(ins);
    let out = |t: Tensor| Ok(vec![V::dev(t, dt)]);
    // (sum over the window of |x|^p)^(1/p); padding adds zeros
    node.only_attrs(&["auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides"])?;
    let p = node.int("p", 2)?;
    if p < 1 {
        return Err(cx.err(format!("p = {p} must be at least 1")));
    }
    let (x, win) = geometry(cx, &cx.t(ins, 0)?)?;
    let (cols, shape) = windows(&x, &win, None)?;
    let y = match p {
        1 => cols.abs()?.sum_axis(1, true)?,
        2 => cols.square()?.sum_axis(1, true)?.sqrt()?,
        _ => cols.abs()?.powf(p as f32)?.sum_axis(1, true)?.powf(1.0 / p as f32)?,
    };
    out(y.reshape(shape)?)
}

/// The pooling geometry of `x`, and `x` without the leading rows and columns no window reads
/// ([`Window2::crop_begin`]): the window applies to the tensor returned.
fn geometry(cx: &Cx, x: &Tensor) -> Result<(Tensor, Window2)> {
    if x.rank() != 4 {
        return Err(cx.err(format!("only 2-D pooling (NCHW input) is supported; got {:?}", x.dims())));
    }
    let win = window2(cx.node, [x.dims()[2], x.dims()[3]], None, true)?;
    let mut x = x.clone();
    for a in 0..2 {
        if win.crop_begin[a] > 0 {
            x = x.slice(2 + a, win.crop_begin[a], x.dims()[2 + a])?;
        }
    }
    Ok((x, win))
}

/// The windows of `x` as columns `[N*C, kh*kw, OH*OW]` and the output shape; `fill` is the
/// padding value (`None`: zeros).
fn windows(x: &Tensor, win: &Window2, fill: Option<f32>) -> Result<(Tensor, Vec<usize>)> {
    let [n, c, h, w] = [x.dims()[0], x.dims()[1], x.dims()[2], x.dims()[3]];
    let mut src = x.reshape([n * c, 1, h, w])?;
    let b = [0, 0, win.pad_begin[0], win.pad_begin[1]];
    let e = [0, 0, win.pad_end[0] + win.ceil_extra[0], win.pad_end[1] + win.ceil_extra[1]];
    if b != [0; 4] || e != [0; 4] {
        src = src.pad(&b, &e)?;
        if let Some(v) = fill {
            // pad(x) + (pad(1) * -v + v): the inside is untouched, the border becomes v.
            let inside = Tensor::ones(x.device(), [1, 1, h, w])?.pad(&b, &e)?;
            src = src.add(&inside.affine(-v, v)?)?;
        }
    }
    let [dh, dw] = win.dilation;
    let (eh, ew) = ((win.k[0] - 1) * dh + 1, (win.k[1] - 1) * dw + 1);
    let window = Window { kh: eh, kw: ew, stride_h: win.stride[0], stride_w: win.stride[1], pad_h: 0, pad_w: 0 };
    let mut cols = src.im2col(window)?;
    if win.dilation != [1, 1] {
        // keep only the dilated taps of the spread-out window
        let rows: Vec<usize> = (0..win.k[0]).flat_map(|i| (0..win.k[1]).map(move |j| i * dh * ew + j * dw)).collect();
        cols = take(&cols, 1, &rows)?;
    }
    Ok((cols, vec![n, c, win.out[0], win.out[1]]))
}

/// `MaxPool` with its `Indices` output: the first largest tap of each window (as onnxruntime
/// picks it) and its position in the flattened input, `((n·C + c)·H + h)·W + w`, or with
/// `storage_order` 1 (column major within each image) `(n·C + c)·H·W + w·H + h`. `x` is the
/// input after [`geometry`]'s crop; `[h, w]` the uncropped input's sides.
fn max_pool_with_indices(cx: &Cx, x: &Tensor, win: &Window2, [h, w]: [usize; 2], column_major: bool, dt: DType) -> Result<Vec<V>> {
    let [n, c] = [x.dims()[0], x.dims()[1]];
    if n * c * h * w > 1 << 24 {
        return Err(cx.err(format!("input {:?} has more elements than f32 indices hold exactly (2^24)", [n, c, h, w])));
    }
    let (cols, shape) = windows(x, win, Some(NEG))?;
    let [ch, cw] = win.crop_begin;
    let (k, l) = (win.k[0] * win.k[1], win.out[0] * win.out[1]);
    // the input position of every tap of every window (padding taps are never the maximum)
    let mut table = Vec::with_capacity(k * l);
    for tap in 0..k {
        for o in 0..l {
            let y = (ch + o / win.out[1] * win.stride[0] + tap / win.k[1] * win.dilation[0]) as i64 - win.pad_begin[0] as i64;
            let xx = (cw + o % win.out[1] * win.stride[1] + tap % win.k[1] * win.dilation[1]) as i64 - win.pad_begin[1] as i64;
            let (y, xx) = (y.clamp(0, h as i64 - 1), xx.clamp(0, w as i64 - 1));
            table.push(if column_major { xx * h as i64 + y } else { y * w as i64 + xx } as f32);
        }
    }
    let first = cols.argmax(1, true)?; // [N·C, 1, L]
    let pos = Tensor::from_vec(x.device(), &table, [1, k, l])?.broadcast_to([n * c, k, l])?.gather(1, &first)?;
    let base = Tensor::arange(x.device(), n * c)?.mul_scalar((h * w) as f32)?.reshape([n * c, 1, 1])?;
    let values = cols.max_axis(1, true)?.reshape(shape.clone())?;
    Ok(vec![V::dev(values, dt), V::dev(pos.add(&base)?.reshape(shape)?, DType::I64)])
}

/// Per output position, how many elements the average divides by: the taps inside the input,
/// or with `count_include_pad` the whole kernel (as onnxruntime does, also for windows that
/// `ceil_mode` extends past the padding).
fn divisors(win: &Window2, hw: [usize; 2], include_pad: bool) -> Vec<f32> {
    if include_pad {
        return vec![(win.k[0] * win.k[1]) as f32; win.out[0] * win.out[1]];
    }
    let count = |a: usize| -> Vec<f32> {
        (0..win.out[a])
            .map(|o| {
                let start = (o * win.stride[a]) as i64 - win.pad_begin[a] as i64;
                let (lo, hi) = if include_pad { (-(win.pad_begin[a] as i64), (hw[a] + win.pad_end[a]) as i64) } else { (0, hw[a] as i64) };
                (0..win.k[a]).filter(|&t| (lo..hi).contains(&(start + (t * win.dilation[a]) as i64))).count() as f32
            })
            .collect()
    };
    let (ch, cw) = (count(0), count(1));
    ch.iter().flat_map(|&a| cw.iter().map(move |&b| a * b)).collect()
}
