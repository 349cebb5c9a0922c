//! Elementwise ops — every unary, binary and `where` — as kernels rendered from their one
//! definition (`pixelgrad_core::kernel::defs`) into WGSL ([`crate::wgsl`]), with broadcasting
//! through strides. One shader module per distinct kernel, cached by the kernel's structure;
//! parameters (`affine`'s scalars, `powf`'s exponent) are uniforms.

use std::borrow::Cow;
use std::rc::Rc;

use pixelgrad_core::kernel::{self, Launch};
use pixelgrad_core::shape::broadcast_strides;
use pixelgrad_core::{Error, Result, Shape};

use super::{f, u};
use crate::context::{Gpu, GpuTensor};
use crate::pipelines::Kernel;
use crate::pipelines::PARAM_WORDS;
use crate::strides::{check_rank, coalesce, contiguous};
use crate::wgsl::{map_source, MapLayout};
use crate::BACKEND;

/// The compiled-kernel description of `k`: rendered on first use (named after `label()`),
/// then cached per device.
pub(crate) fn map_kernel(gpu: &Gpu, op: &'static str, k: &kernel::Kernel, label: impl FnOnce() -> String) -> Result<Rc<Kernel>> {
    if let Some(found) = gpu.map_kernels.borrow().get(k) {
        return Ok(found.clone());
    }
    let most = gpu.max_inputs();
    if k.inputs().len() > most {
        return Err(Error::backend(op, BACKEND, format!("{} inputs; elementwise kernels bind at most {most} here", k.inputs().len())));
    }
    let source = map_source(k).map_err(|e| Error::backend(op, BACKEND, e.to_string()))?;
    let id = gpu.map_kernels.borrow().len();
    let made = Rc::new(Kernel {
        name: Cow::Owned(format!("map{id}_{}", label())),
        source: Cow::Owned(source),
        inputs: k.inputs().len(),
        outputs: 1,
        overrides: &["FAST", "SCALARS"],
        status: false,
    });
    gpu.map_kernels.borrow_mut().insert(k.clone(), made.clone());
    Ok(made)
}

/// Runs `launch` over `ins` (each of shape `shapes[i]`, broadcast to `out`) into `res`;
/// `label()` names its kernel the first time it is compiled.
#[allow(clippy::too_many_arguments)]
pub(crate) fn map(
    gpu: &Gpu,
    op: &'static str,
    launch: &Launch,
    ins: &[&GpuTensor],
    shapes: &[&Shape],
    out: &Shape,
    res: &GpuTensor,
    label: impl FnOnce() -> String,
) -> Result<()> {
    let k = map_kernel(gpu, op, &launch.kernel, label)?;
    let grid = gpu.grid_elems(op, res.len)?;
    let mut p = vec![u(op, out.numel())?];
    let (fast, scalars) = fill_fused(op, launch, shapes, out, &MapLayout::map(launch.params.len()), &mut p)?;
    let bufs: Vec<&wgpu::Buffer> = ins.iter().map(|t| t.buffer()).collect();
    gpu.launch(op, &k, &[u32::from(fast), scalars], &bufs, res.buffer(), &p, grid)
}

/// Writes the words of a fused read of `launch` (laid out by `lay`) over inputs of `shapes`
/// broadcast to `out` into `p` (grown as needed; words before the layout's are the caller's)
/// and returns the `FAST` and `SCALARS` pipeline constants: FAST when every input has the
/// read's shape or is one element, so no index arithmetic runs (a one-element read reads
/// index 0 of everything anyway).
pub(crate) fn fill_fused(
    op: &'static str,
    launch: &Launch,
    shapes: &[&Shape],
    out: &Shape,
    lay: &MapLayout,
    p: &mut Vec<u32>,
) -> Result<(bool, u32)> {
    p.resize(p.len().max(lay.params + launch.params.len()), 0);
    for (i, &v) in launch.params.iter().enumerate() {
        p[lay.params + i] = f(v);
    }
    let (fast, scalars) = pixelgrad_core::kernel::fuse::read_mode(shapes, out);
    if fast {
        return Ok((true, scalars));
    }
    // Merge axes contiguous in every operand (the output's strides included, so merged axes
    // stay contiguous in it too).
    let mut all: Vec<Vec<usize>> = shapes.iter().map(|s| broadcast_strides(s, out)).collect();
    all.push(contiguous(out.dims()));
    let (dims, strides) = coalesce(out.dims(), &all);
    check_rank(op, dims.len())?;
    let r = dims.len();
    let words = lay.words(shapes.len(), r);
    if words > PARAM_WORDS {
        return Err(Error::backend(
            op,
            BACKEND,
            format!("a fused read of {} inputs over {r} axes needs {words} parameter words, the slot has {PARAM_WORDS}", shapes.len()),
        ));
    }
    p.resize(p.len().max(words), 0);
    p[lay.rank] = r as u32;
    for (i, &d) in dims.iter().enumerate() {
        p[lay.dims + i] = u(op, d)?;
    }
    for (k, s) in strides.iter().take(shapes.len()).enumerate() {
        for (i, &v) in s.iter().enumerate() {
            p[lay.dims + r * (k + 1) + i] = u(op, v)?;
        }
    }
    Ok((false, 0))
}
