//! Launchers, one module per op family, each next to the WGSL it runs. [`execute`] matches
//! [`Op`] exhaustively, so a new primitive fails to compile here until it has a kernel.

pub(crate) mod attention;
mod create;
pub(crate) mod elementwise;
mod index;
mod layout;
pub(crate) mod matmul;
mod matmul_cpu;
mod matmul_cpu_src;
pub(crate) mod matmul_i8;
mod matmul_i8_src;
mod matmul_nbits;
mod matmul_tiled_src;
pub(crate) mod programs;
pub(crate) mod reduce;
mod reduce_rendered;
pub(crate) mod widen;
mod window;

use std::rc::Rc;

use pixelgrad_core::{kernel, Error, Op, Result, Shape};

use crate::context::{Gpu, GpuTensor};
use crate::BACKEND;

/// Every kernel the ops launch, for validation tests (`crate::validate` adds the image
/// kernels).
#[cfg(test)]
pub(crate) fn all_kernels() -> Vec<&'static crate::pipelines::Kernel> {
    let files = vec![
        &create::FILL,
        &create::RANDOM,
        &reduce::REDUCE,
        &matmul_i8::MATMUL_I8_PACK_B,
        &matmul_nbits::MATMUL_NBITS,
        &widen::WIDEN,
        &widen::NARROW_F16,
        &window::IM2COL,
        &window::COL2IM,
        &window::DEPTHWISE,
        &layout::COPY,
        &widen::NARROW8,
        &attention::ATTENTION,
    ];
    // Then the programs with loops (windows, gathers, scatters) and the generated matmuls
    // (tiled and register-blocked), every variant. The column programs (im2col, col2im) are run by
    // the hand-written IM2COL and COL2IM above, kept for their measured speed (in the files);
    // `validate::every_program_renders_to_valid_wgsl` checks their rendering.
    use pixelgrad_core::kernel::programs::KernelProgram;
    let programs = KernelProgram::ALL.into_iter().filter(|p| !matches!(p, KernelProgram::Column(_) | KernelProgram::Conv(_))).map(programs::program_kernel);
    files
        .into_iter()
        .chain(programs)
        .chain(matmul::all_tiled())
        .chain(matmul_i8_src::Int8::ALL.map(matmul_i8::kernel))
        .chain(matmul_cpu::all())
        .collect()
}

/// Runs one primitive; `ins` and `shapes` passed `Op::infer_shape`, `out` is its result.
pub(crate) fn execute(gpu: &Rc<Gpu>, op: &Op, ins: &[&GpuTensor], shapes: &[&Shape], out: &Shape) -> Result<GpuTensor> {
    if let Op::NarrowF16 = op {
        // Packed output: its own allocation.
        let x = ins.first().copied().ok_or_else(|| Error::backend(op.name(), BACKEND, "missing input 0"))?;
        return narrow_f16(gpu, x, out.numel());
    }
    if let Op::Narrow8 { signed } = op {
        let x = ins.first().copied().ok_or_else(|| Error::backend(op.name(), BACKEND, "missing input 0"))?;
        let dtype = if *signed { kernel::DType::I8 } else { kernel::DType::U8 };
        let res = GpuTensor::new_packed(gpu, "narrow8", out.numel(), dtype)?;
        if out.numel() > 0 {
            widen::narrow8(gpu, x, &res, out.numel())?;
        }
        return Ok(res);
    }
    let res = GpuTensor::new(gpu, op.name(), out.numel())?;
    if out.numel() == 0 {
        return Ok(res);
    }
    let input = |i: usize| -> Result<&GpuTensor> {
        ins.get(i).copied().ok_or_else(|| Error::backend(op.name(), BACKEND, format!("missing input {i}")))
    };
    match op {
        Op::Fill { value, .. } => create::fill(gpu, &res, *value)?,
        Op::Random { seed, dist, .. } => create::random(gpu, &res, *seed, *dist)?,
        Op::Unary(u) => elementwise::map(gpu, "unary", &u.launch()?, &[input(0)?], shapes, out, &res, || u.name().into())?,
        Op::Binary(b) => elementwise::map(gpu, "binary", &b.launch()?, &[input(0)?, input(1)?], shapes, out, &res, || b.name().into())?,
        Op::Where => {
            let ins = [input(0)?, input(1)?, input(2)?];
            elementwise::map(gpu, "where", &kernel::defs::where_launch()?, &ins, shapes, out, &res, || "where".into())?
        }
        Op::Reduce { op: r, axis } => reduce::reduce(gpu, *r, *axis, reduce::ReduceInput::Buffer(input(0)?), shapes[0], &res)?,
        Op::MatMul { trans_a, trans_b } => {
            let (a, b) = (input(0)?, input(1)?);
            if a.dtype == kernel::DType::F16 || b.dtype == kernel::DType::F16 {
                matmul::matmul_f16(gpu, *trans_a, *trans_b, a, b, shapes, out, &res)?
            } else {
                matmul::matmul(gpu, *trans_a, *trans_b, a, b, shapes, out, &res)?
            }
        }
        Op::Im2Col(w) => window::im2col(gpu, w, input(0)?, shapes[0], out, &res)?,
        Op::Col2Im { window: w, h, w: wd } => window::col2im(gpu, w, *h, *wd, input(0)?, out, &res)?,
        Op::DepthwiseConv(w) => window::depthwise(gpu, w, input(0)?, input(1)?, shapes[0], out, &res)?,
        // `caps.conv` is false here: callers run im2col + matmul, which it means.
        Op::Conv2d(_) => {
            let msg = "no single-op convolution on WebGPU (caps.conv is false); use im2col + matmul";
            return Err(Error::backend(op.name(), BACKEND, msg));
        }
        Op::MaxPool(w) => window::max_pool(gpu, w, input(0)?, shapes[0], out, &res)?,
        Op::MaxPoolGrad(w) => window::max_pool_grad(gpu, w, input(0)?, input(1)?, shapes[0], &res)?,
        Op::Window { program, window: w } => {
            let ins = (0..program.form().arity()).map(&input).collect::<Result<Vec<_>>>()?;
            window::window_program(gpu, *program, w, &ins, shapes, out, &res)?
        }
        Op::Gather { axis } => index::gather(gpu, *axis, input(0)?, input(1)?, shapes, out, &res)?,
        Op::ScatterAdd { axis, size } => index::scatter_add(gpu, *axis, *size, input(0)?, input(1)?, shapes, &res)?,
        // Core shares storage for reshape and never sends it; the backend handles it before
        // allocating (see `WgpuBackend::execute`), so reaching here means a plain copy.
        Op::Reshape(_) => layout::copy_all(gpu, input(0)?, out.numel(), &res)?,
        Op::Permute(p) => layout::permute(gpu, p, input(0)?, shapes[0], out, &res)?,
        Op::Expand(_) => layout::expand(gpu, input(0)?, shapes[0], out, &res)?,
        Op::Slice { starts, .. } => layout::slice(gpu, starts, input(0)?, shapes[0], out, &res)?,
        Op::Pad { before, .. } => layout::pad(gpu, before, input(0)?, shapes[0], out, &res)?,
        Op::Concat { axis } => layout::concat(gpu, *axis, ins, shapes, out, &res)?,
        Op::MatMulI8 { b_i8 } => matmul_i8::matmul_i8(gpu, *b_i8, input(0)?, input(1)?, shapes, out, &res)?,
        Op::MatMulNBits { bits, block, k, trans } => {
            let ins = [input(0)?, input(1)?, input(2)?, input(3)?];
            matmul_nbits::matmul_nbits(gpu, (*bits, *block, *k, *trans), ins, shapes, out, &res)?
        }
        Op::Attention { scale, masked } => {
            let ins = (0..3 + usize::from(*masked)).map(&input).collect::<Result<Vec<_>>>()?;
            attention::attention(gpu, *scale, *masked, &ins, shapes, out, &res)?
        }
        Op::Widen => widen::widen(gpu, input(0)?, &res)?,
        Op::NarrowF16 | Op::Narrow8 { .. } => {
            return Err(Error::backend(op.name(), BACKEND, "internal: narrowing runs before the f32 allocation"))
        }
    }
    Ok(res)
}

/// [`Op::NarrowF16`] into a new packed f16 tensor of `n` elements.
fn narrow_f16(gpu: &Rc<Gpu>, x: &GpuTensor, n: usize) -> Result<GpuTensor> {
    let res = GpuTensor::new_packed(gpu, "narrow_f16", n, pixelgrad_core::kernel::DType::F16)?;
    if n > 0 {
        widen::narrow_f16(gpu, x, &res, n)?;
    }
    Ok(res)
}

/// f32 bits for a parameter slot.
pub(crate) fn f(v: f32) -> u32 {
    v.to_bits()
}

/// A size as a u32 parameter, or a limit error (kernels index with u32).
pub(crate) fn u(op: &'static str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::Limit {
        op,
        backend: BACKEND.into(),
        limit_name: "u32 element index",
        limit: u32::MAX as u64,
        requested: v as u64,
    })
}
