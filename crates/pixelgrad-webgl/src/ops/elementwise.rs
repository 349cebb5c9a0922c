//! Fill, random, unary, binary and where: one element per output position, broadcasting by
//! stride-0 axes.

use std::rc::Rc;

use pixelgrad_core::{BinaryOp, Distribution, Result, Shape, UnaryOp};

use super::strides;
use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

pub(crate) fn fill(sh: &Rc<Shared>, value: f32, n: usize) -> Result<GlTensor> {
    sh.run(Pass::new("fill", "fill", 0).float("u_value", value), n)
}

pub(crate) fn random(sh: &Rc<Shared>, seed: u64, dist: Distribution, n: usize) -> Result<GlTensor> {
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

pub(crate) fn unary(sh: &Rc<Shared>, u: UnaryOp, x: &GlTensor, n: usize) -> Result<GlTensor> {
    let (code, p0, p1) = u.code();
    sh.run(Pass::new("unary", "unary", code).input("u_x", x).float("u_p0", p0).float("u_p1", p1), n)
}

/// Strides of `input` seen through the (right-aligned) output shape: 0 on broadcast axes.
pub(crate) fn broadcast_strides(input: &Shape, out: &Shape) -> Vec<i64> {
    let st = strides(&input.0);
    let off = out.rank() - input.rank();
    (0..out.rank())
        .map(|d| if d < off || input.0[d - off] == 1 { 0 } else { st[d - off] })
        .collect()
}

fn out_dims(out: &Shape) -> Vec<i64> {
    out.0.iter().map(|&d| d as i64).collect()
}

pub(crate) fn binary(
    sh: &Rc<Shared>,
    b: BinaryOp,
    x: &GlTensor,
    y: &GlTensor,
    sx: &Shape,
    sy: &Shape,
    out: &Shape,
) -> Result<GlTensor> {
    let pass = Pass::new("binary", "binary", b.code())
        .input("u_a", x)
        .input("u_b", y)
        .ranked("u_shape", &out_dims(out), 1)
        .ranked("u_sa", &broadcast_strides(sx, out), 0)
        .ranked("u_sb", &broadcast_strides(sy, out), 0);
    sh.run(pass, out.numel())
}

pub(crate) fn select(sh: &Rc<Shared>, ts: &[&GlTensor], shapes: &[&Shape], out: &Shape) -> Result<GlTensor> {
    let pass = Pass::new("where", "where", 0)
        .input("u_c", ts[0])
        .input("u_a", ts[1])
        .input("u_b", ts[2])
        .ranked("u_shape", &out_dims(out), 1)
        .ranked("u_sc", &broadcast_strides(shapes[0], out), 0)
        .ranked("u_sa", &broadcast_strides(shapes[1], out), 0)
        .ranked("u_sb", &broadcast_strides(shapes[2], out), 0);
    sh.run(pass, out.numel())
}
