//! Forward kernels of every primitive op, as passes. `execute` matches [`Op`] exhaustively.

pub(crate) mod elementwise;
mod gl1;
mod index;
mod layout;
pub(crate) mod matmul;
mod matmul_block;
mod matmul_io;
mod matmul_nbits;
mod matmul_rendered;
mod narrow;
pub(crate) mod reduce;
mod window;

use std::rc::Rc;

use pixelgrad_core::{Op, Result, Shape, Storage};

use crate::context::Shared;
use crate::texture::GlTensor;

pub(crate) use narrow::{narrow_f16_available, widen};
pub(crate) use reduce::reduce_axis;

/// Whether a convolution's product `[O, K] x [N, K, L]` takes the block kernel (WebGL2 only).
pub(crate) fn conv_block_path(sh: &Shared, batch: usize, out_ch: usize, k: usize, cols: usize) -> bool {
    sh.features.multiple_render_targets && matmul_block::worth_it(sh, batch, out_ch, cols, k)
}

/// Row-major strides as i64 (uniform-friendly).
pub(crate) fn strides(dims: &[usize]) -> Vec<i64> {
    let mut s = vec![0i64; dims.len()];
    let mut acc = 1i64;
    for i in (0..dims.len()).rev() {
        s[i] = acc;
        acc *= dims[i] as i64;
    }
    s
}

/// `(outer, axis size, inner)` of a shape around `axis`.
pub(crate) fn split_axis(dims: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = dims[..axis].iter().product();
    let inner = dims[axis + 1..].iter().product();
    (outer, dims[axis], inner)
}

/// Runs `op` on the textures `ts` of `inputs` (settled by the fusion layer: ops never see a
/// pending value).
pub(crate) fn execute(sh: &Rc<Shared>, op: &Op, inputs: &[&Storage], ts: &[&GlTensor], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
    let name = op.name();
    // The Backend contract says shapes passed `infer_shape` (which also bounds the rank to
    // MAX_RANK, the length of the shape uniforms); check anyway, with the shared check, since
    // `execute` is public and a wrong call must be an error, not an out-of-bounds panic.
    let lens: Vec<usize> = ts.iter().map(|t| t.len).collect();
    pixelgrad_core::check_execute(op, &lens, shapes, out, &sh.name)?;
    let n = out.numel();
    let t = match op {
        Op::Fill { value, .. } => elementwise::fill(sh, *value, n)?,
        Op::Random { seed, dist, .. } => elementwise::random(sh, *seed, *dist, n)?,
        Op::Unary(u) => elementwise::map(sh, "unary", u.name(), &u.launch()?, ts, shapes, out)?,
        Op::Binary(b) => elementwise::map(sh, "binary", b.name(), &b.launch()?, ts, shapes, out)?,
        Op::Where => elementwise::map(sh, "where", "", &pixelgrad_core::kernel::defs::where_launch()?, ts, shapes, out)?,
        Op::Reduce { op: r, axis } => reduce::reduce(sh, *r, reduce::Input::Texture(ts[0]), shapes[0], *axis)?,
        Op::MatMul { trans_a, trans_b } => matmul::matmul(sh, ts[0], ts[1], shapes[0], shapes[1], *trans_a, *trans_b, out)?,
        Op::Im2Col(w) => window::im2col(sh, ts[0], shapes[0], *w, out)?,
        Op::Col2Im { window: w, h, w: wd } => window::col2im(sh, ts[0], *w, *h, *wd, out)?,
        Op::DepthwiseConv(w) => window::depthwise(sh, ts[0], ts[1], shapes[0], *w, out)?,
        // `supports_conv` is false here: callers run im2col + matmul, which it means.
        Op::Conv2d(_) => {
            return Err(pixelgrad_core::Error::backend(
                name,
                &sh.name,
                "no single-op convolution on WebGL (supports_conv is false); use im2col + matmul",
            ))
        }
        Op::MaxPool(w) => window::max_pool(sh, ts[0], shapes[0], *w, out)?,
        Op::MaxPoolGrad(w) => window::max_pool_grad(sh, ts[0], ts[1], shapes[0], *w)?,
        Op::Window { program, window: w } => window::window_program(sh, *program, ts, shapes[0], *w, out)?,
        Op::Gather { axis } => index::gather(sh, ts[0], ts[1], shapes[0], shapes[1], *axis)?,
        Op::ScatterAdd { axis, size } => index::scatter_add(sh, ts[0], ts[1], shapes[0], *axis, *size)?,
        // No data moves: the output shares the input's texture.
        Op::Reshape(_) => return Ok(inputs[0].clone()),
        Op::Permute(p) => layout::permute(sh, ts[0], shapes[0], p, out)?,
        Op::Expand(s) => layout::expand(sh, ts[0], shapes[0], s)?,
        Op::Slice { starts, .. } => layout::slice(sh, ts[0], shapes[0], starts, out)?,
        Op::Pad { before, .. } => layout::pad(sh, ts[0], shapes[0], before, out)?,
        Op::Concat { axis } => layout::concat(sh, ts, shapes, *axis, out)?,
        // Narrow storage (WebGL2; the `webgl1` mode has none and these fail naming why).
        // `b_i8` (b in [-128, 127]) changes nothing here: the same exact product.
        Op::MatMulI8 { .. } => narrow::matmul_i8(sh, ts[0], ts[1], shapes, out)?,
        Op::Widen => narrow::widen_op(sh, ts[0], shapes, out)?,
        // f32 -> f16 results (mixed-precision training's saved activations).
        Op::NarrowF16 => narrow::narrow_f16(sh, ts[0], shapes, out)?,
        // f32 -> 8-bit (quantised activations between integer layers).
        Op::Narrow8 { signed } => narrow::narrow8(sh, *signed, ts[0], shapes, out)?,
        // Packed block-quantised weights, dequantised in the shader (WebGL2; `webgl1` refuses).
        Op::MatMulNBits { .. } => matmul_nbits::matmul_nbits(sh, op, ts, shapes, out)?,
        // `fused_attention` is false here: `Tensor::attention` composes the op (batched
        // products and a softmax), which means the same.
        Op::Attention { .. } => {
            return Err(pixelgrad_core::Error::backend(
                name,
                &sh.name,
                "no fused attention on WebGL (fused_attention is false); Tensor::attention composes it from products and a softmax",
            ))
        }
    };
    Ok(Storage::new(t))
}
