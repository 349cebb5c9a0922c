//! Fill, random, and every elementwise function (unary, binary, where) as a program rendered
//! from its one definition in the kernel IR: one element per output position, broadcasting by
//! stride-0 axes.

use std::rc::Rc;

use pixelgrad_core::kernel::Launch;
use pixelgrad_core::shape::coalesce;
use pixelgrad_core::{Distribution, Result, Shape};

use crate::context::Shared;
use crate::dialect::{map_config, ProgramSpec, MAP_INPUTS, MAP_MAX_INPUTS, MAP_MAX_PARAMS, MAP_PARAMS, MAP_STRIDES, MAP_TEXEL_RUNS};
use crate::launch::Pass;
use crate::texture::GlTensor;

pub(crate) fn fill(sh: &Rc<Shared>, value: f32, n: usize) -> Result<GlTensor> {
    sh.run(Pass::new("fill", "fill", 0).float("u_value", value), n)
}

pub(crate) fn random(sh: &Rc<Shared>, seed: u64, dist: Distribution, n: usize) -> Result<GlTensor> {
    if !sh.features.unsigned_integers {
        // GLSL ES 1.00 has no unsigned integers for Philox: the same words, drawn on the host.
        let data: Vec<f32> = (0..n).map(|i| pixelgrad_core::rng::sample(dist, seed, i as u64)).collect();
        return sh.upload(&data);
    }
    let (config, p0, p1) = match dist {
        // (high - low) on the host in f32, exactly as pixelgrad_core::rng::sample computes it.
        Distribution::Uniform { low, high } => (0, low, high - low),
        Distribution::Normal { mean, std } => (1, mean, std),
    };
    let pass = Pass::new("random", "random", config)
        .uvec2("u_key", [seed as u32, (seed >> 32) as u32])
        .uint("u_ctr_hi", 0)
        .float("u_p0", p0)
        .float("u_p1", p1);
    sh.run(pass, n)
}

/// Strides of `input` seen through the (right-aligned) output shape: 0 on broadcast axes.
pub(crate) fn broadcast_strides(input: &Shape, out: &Shape) -> Vec<i64> {
    pixelgrad_core::shape::broadcast_strides(input, out).into_iter().map(|s| s as i64).collect()
}

/// Runs `launch` (an elementwise kernel from the kernel IR; `op.name` labels it in logs, e.g.
/// `unary.tanh`) over `ts` of shapes `shapes`, each broadcast to `out`.
pub(crate) fn map(
    sh: &Rc<Shared>,
    op: &'static str,
    name: &'static str,
    launch: &Launch,
    ts: &[&GlTensor],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<GlTensor> {
    map_labelled(sh, op, launch, ts, shapes, out, || if name.is_empty() { op.to_string() } else { format!("{op}.{name}") })
}

/// [`map`], with the label (for logs, on first registration of the kernel) from `label()`.
pub(crate) fn map_labelled(
    sh: &Rc<Shared>,
    op: &'static str,
    launch: &Launch,
    ts: &[&GlTensor],
    shapes: &[&Shape],
    out: &Shape,
    label: impl FnOnce() -> String,
) -> Result<GlTensor> {
    let read = FusedRead::new(sh, op, launch, ts, shapes, out, label)?;
    let pass = read.uniforms(Pass::with_spec(op, ProgramSpec::map(read.kernel, read.config)));
    sh.run(pass, out.numel())
}

/// A fused read of a kernel (from the registry) over textures broadcast to a shape, ready to
/// set its uniforms on a pass: the elementwise programs' whole body, and a reduction pass's
/// input (`REDUCE_FUSED`).
pub(crate) struct FusedRead<'a> {
    /// Registry number of the kernel.
    pub kernel: u32,
    /// Its `map_config`.
    pub config: u32,
    ts: Vec<&'a GlTensor>,
    /// `u_shape` and each input's strides, when the read needs index arithmetic.
    broadcast: Option<(Vec<i64>, Vec<Vec<i64>>)>,
    params: Vec<f32>,
}

impl<'a> FusedRead<'a> {
    pub(crate) fn new(
        sh: &Rc<Shared>,
        op: &'static str,
        launch: &Launch,
        ts: &[&'a GlTensor],
        shapes: &[&Shape],
        out: &Shape,
        label: impl FnOnce() -> String,
    ) -> Result<Self> {
        if ts.len() > MAP_MAX_INPUTS || launch.params.len() > MAP_MAX_PARAMS {
            return Err(sh.err(
                op,
                format!(
                    "{} inputs and {} parameters; programs take at most {MAP_MAX_INPUTS} and {MAP_MAX_PARAMS}",
                    ts.len(),
                    launch.params.len()
                ),
            ));
        }
        let kernel = sh.map_kernel(op, &launch.kernel, label)?;
        let (fast, scalars) = pixelgrad_core::kernel::fuse::read_mode(shapes, out);
        let broadcast = (!fast).then(|| {
            // Axes contiguous in every operand merge (fewer index-loop iterations).
            let mut all: Vec<Vec<usize>> = shapes.iter().map(|s| pixelgrad_core::shape::broadcast_strides(s, out)).collect();
            all.push(pixelgrad_core::shape::contiguous_strides(out.dims()));
            let (dims, strides) = coalesce(out.dims(), &all);
            let wide = |v: &[usize]| v.iter().map(|&x| x as i64).collect::<Vec<i64>>();
            (wide(&dims), strides.iter().take(ts.len()).map(|st| wide(st)).collect())
        });
        // Broadcast reads mark the inputs that have the output's shape (read at its index).
        let full = shapes.iter().enumerate().filter(|(_, s)| **s == out).fold(0u32, |m, (i, _)| m | 1 << i);
        let runs = broadcast.as_ref().is_some_and(|(dims, _)| dims.last().is_some_and(|&d| d % 4 == 0));
        let config = if fast { map_config(true, scalars) } else { map_config(false, full) | if runs { MAP_TEXEL_RUNS } else { 0 } };
        Ok(FusedRead { kernel, config, ts: ts.to_vec(), broadcast, params: launch.params.clone() })
    }

    /// `pass` with the read's samplers and uniforms added.
    pub(crate) fn uniforms<'p>(&self, mut pass: Pass<'p>) -> Pass<'p>
    where
        'a: 'p,
    {
        for (i, t) in self.ts.iter().enumerate() {
            pass = pass.input(MAP_INPUTS[i], t);
        }
        if let Some((dims, strides)) = &self.broadcast {
            pass = pass.ranked("u_shape", dims, 1);
            for (i, st) in strides.iter().enumerate() {
                pass = pass.ranked(MAP_STRIDES[i], st, 0);
            }
        }
        for (i, &p) in self.params.iter().enumerate() {
            pass = pass.float(MAP_PARAMS[i], p);
        }
        pass
    }
}
