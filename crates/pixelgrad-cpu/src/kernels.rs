//! Dispatch of every primitive [`Op`] to its forward kernel, generic over the element type.
//! The match is exhaustive on purpose: a new primitive fails to compile here.

use pixelgrad_core::kernel::defs::where_launch;
use pixelgrad_core::kernel::windows::window_params;
use pixelgrad_core::{check_execute, Error, Op, Result, Shape};

use crate::element::Element;
use crate::{attention, elementwise, index, matmul, movement, random, reduce, window};

/// Runs `op` on host slices. Shapes passed `Op::infer_shape`, and `out` is its result.
pub fn run<T: Element>(backend: &str, op: &Op, x: &[&[T]], shapes: &[&Shape], out: &Shape) -> Result<Vec<T>> {
    // `execute` is public: a caller that skipped `infer_shape` (or passed an inconsistent
    // `out`) gets the shared typed error, not an index panic. Shape math only: cheap.
    let lens: Vec<usize> = x.iter().map(|d| d.len()).collect();
    check_execute(op, &lens, shapes, out, backend)?;
    Ok(match op {
        Op::Fill { value, shape } => random::fill(*value, shape.numel()),
        Op::Random { seed, dist, shape } => random::random(*seed, *dist, shape.numel()),
        Op::Unary(u) => elementwise::map(&u.launch()?, &[(x[0], shapes[0])], out)?,
        Op::Binary(b) => elementwise::map(&b.launch()?, &[(x[0], shapes[0]), (x[1], shapes[1])], out)?,
        Op::Where => elementwise::map(&where_launch()?, &[(x[0], shapes[0]), (x[1], shapes[1]), (x[2], shapes[2])], out)?,
        Op::Reduce { op, axis } => reduce::reduce(*op, x[0], &shapes[0].0, *axis),
        Op::MatMul { trans_a, trans_b } => matmul::matmul(x[0], &shapes[0].0, x[1], &shapes[1].0, *trans_a, *trans_b)?,
        Op::Im2Col(w) => {
            let (oh, ow) =
                w.out_hw(shapes[0].0[2], shapes[0].0[3]).ok_or_else(|| Error::backend("im2col", backend, "window does not fit"))?;
            window::im2col(x[0], &shapes[0].0, w, oh, ow)
        }
        Op::Col2Im { window: w, h, w: wd } => {
            let (oh, ow) = w.out_hw(*h, *wd).ok_or_else(|| Error::backend("col2im", backend, "window does not fit"))?;
            window::col2im(x[0], &shapes[0].0, w, *h, *wd, oh, ow)
        }
        Op::DepthwiseConv(w) => {
            let d = &shapes[0].0;
            let (oh, ow) = w.out_hw(d[2], d[3]).ok_or_else(|| Error::backend("depthwise_conv", backend, "window does not fit"))?;
            T::depthwise(x[0], d, x[1], w, oh, ow)?
        }
        Op::Conv2d(w) => {
            let d = &shapes[0].0;
            let (oh, ow) = w.out_hw(d[2], d[3]).ok_or_else(|| Error::backend("conv2d", backend, "window does not fit"))?;
            T::conv(x[0], d, x[1], shapes[1].0[0], w, oh, ow)?
        }
        Op::MaxPool(w) | Op::MaxPoolGrad(w) => {
            let d = &shapes[0].0;
            let (oh, ow) = w.out_hw(d[2], d[3]).ok_or_else(|| Error::backend(op.name(), backend, "window does not fit"))?;
            match op {
                Op::MaxPool(_) => window::max_pool(x[0], d, w, oh, ow),
                _ => window::max_pool_grad(x[0], d, x[1], w, oh, ow),
            }
        }
        // Window programs without a kernel of their own here: evaluated from their definition.
        Op::Window { program, window: w } => {
            let d = &shapes[0].0;
            let p = window_params(d[2], d[3], w).ok_or_else(|| Error::backend(program.name(), backend, "window does not fit"))?;
            let p: Vec<i64> = p.iter().map(|&v| v as i64).collect();
            pixelgrad_core::kernel::program_eval::eval(&program.program(), x, &p, out.numel())?
        }
        Op::Attention { opts, masked } => {
            let d = attention::Dims::of(&shapes[0].0, &shapes[1].0, &shapes[2].0);
            let mask = if *masked { Some((x[3], shapes[3].0.as_slice())) } else { None };
            attention::attention(opts, d, x[0], x[1], x[2], mask)?
        }
        Op::Gather { axis } => index::gather(backend, x[0], &shapes[0].0, x[1], &shapes[1].0, *axis)?,
        Op::ScatterAdd { axis, size } => index::scatter_add(backend, x[0], &shapes[0].0, x[1], *axis, *size)?,
        // Reshape moves no data; `execute` shares the storage before getting here, but a copy
        // is the correct meaning too.
        Op::Reshape(_) => x[0][..out.numel()].to_vec(),
        Op::Permute(p) => movement::permute(x[0], &shapes[0].0, p, out),
        Op::Expand(_) => movement::expand(x[0], shapes[0], out),
        Op::Slice { starts, .. } => movement::slice(x[0], &shapes[0].0, starts, out),
        Op::Pad { before, .. } => movement::pad(x[0], &shapes[0].0, before, out),
        Op::Concat { axis } => movement::concat(x, shapes, *axis, out),
        // Its weights are 8-bit, not `T`: `CpuBackend::execute` runs it (module `int8`).
        Op::MatMulI8 { .. } => {
            return Err(Error::backend("matmul_i8", backend, "takes 8-bit weights; run it through CpuBackend::execute"));
        }
        // Its input is 8-bit or f16, not `T`: `CpuBackend::execute` runs it.
        Op::Widen => {
            return Err(Error::backend("widen", backend, "takes 8-bit or f16 storage; run it through CpuBackend::execute"));
        }
        // Its result is f16, not `T`: `CpuBackend::execute` runs it.
        Op::NarrowF16 => {
            return Err(Error::backend("narrow_f16", backend, "stores f16; run it through CpuBackend::execute"));
        }
        // Its result is 8-bit, not `T`: `CpuBackend::execute` runs it.
        Op::Narrow8 { .. } => {
            return Err(Error::backend("narrow8", backend, "stores 8-bit values; run it through CpuBackend::execute"));
        }
        // Its weights are packed bytes, not `T`: `CpuBackend::execute` runs it (module `nbits`).
        Op::MatMulNBits { .. } => {
            return Err(Error::backend("matmul_nbits", backend, "takes packed weights; run it through CpuBackend::execute"));
        }
    })
}
