//! Permute, expand, slice and pad through one strided "view" program; concat in passes of up
//! to 4 inputs.

use std::rc::Rc;

use pixelgrad_core::{Result, Shape};

use super::elementwise::broadcast_strides;
use super::{split_axis, strides};
use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

const INPUTS_PER_PASS: usize = 4;

/// One axis of a view: (size, stride, first and end coordinates that read the input).
type Axis = (i64, i64, i64, i64);

/// The view's axes, outermost first, with neighbours merged where no element's source
/// changes: both unbounded (every coordinate reads) and the outer stride the inner one's times
/// its size. Size-1 axes that read are dropped. A slice or pad of the last axis of a
/// contiguous tensor comes out as rows; so does a broadcast of one row.
fn coalesce(dims: &[i64], st: &[i64], lo: &[i64], hi: &[i64]) -> Vec<Axis> {
    let mut axes: Vec<Axis> = Vec::new();
    for d in 0..dims.len() {
        let (n, s, l, h) = (dims[d], st[d], lo[d].max(0), hi[d].min(dims[d]));
        let free = l == 0 && h == n;
        if n == 1 && free {
            continue;
        }
        match axes.last_mut() {
            Some(last) if free && last.2 == 0 && last.3 == last.0 && last.1 == s * n => {
                let size = last.0 * n;
                *last = (size, s, 0, size);
            }
            _ => axes.push((n, s, l, h)),
        }
    }
    axes
}

#[allow(clippy::too_many_arguments)]
fn view(sh: &Rc<Shared>, op: &'static str, x: &GlTensor, out: &Shape, st: &[i64], lo: &[i64], hi: &[i64], off: i64) -> Result<GlTensor> {
    let dims: Vec<i64> = out.0.iter().map(|&d| d as i64).collect();
    let axes = coalesce(&dims, st, lo, hi);
    if sh.features.texel_programs && axes.len() <= 2 {
        // Rows (`CONFIG 1` of view.glsl): one division per texel instead of one per axis and
        // element.
        let one: Axis = (1, 0, 0, 1);
        let (rows, cols) = match axes[..] {
            [r, c] => (r, c),
            [c] => (one, c),
            _ => (one, one),
        };
        let pass = Pass::new(op, "view", 1)
            .input("u_x", x)
            .sint("u_off", off)
            .sint("u_n", cols.0)
            .sint("u_st0", rows.1)
            .sint("u_st1", cols.1)
            .sint("u_lo0", rows.2)
            .sint("u_hi0", rows.3)
            .sint("u_lo1", cols.2)
            .sint("u_hi1", cols.3);
        return sh.run(pass, out.numel());
    }
    let pass = Pass::new(op, "view", 0)
        .input("u_x", x)
        .ranked("u_shape", &dims, 1)
        .ranked("u_st", st, 0)
        .ranked("u_lo", lo, 0)
        .ranked("u_hi", hi, i32::MAX as i64)
        .sint("u_off", off)
        .int("u_rank", out.rank());
    sh.run(pass, out.numel())
}

fn unbounded(rank: usize) -> (Vec<i64>, Vec<i64>) {
    (vec![0; rank], vec![i32::MAX as i64; rank])
}

pub(crate) fn permute(sh: &Rc<Shared>, x: &GlTensor, s: &Shape, perm: &[usize], out: &Shape) -> Result<GlTensor> {
    let st = strides(&s.0);
    let pst: Vec<i64> = perm.iter().map(|&p| st[p]).collect();
    let (lo, hi) = unbounded(out.rank());
    view(sh, "permute", x, out, &pst, &lo, &hi, 0)
}

pub(crate) fn expand(sh: &Rc<Shared>, x: &GlTensor, s: &Shape, out: &Shape) -> Result<GlTensor> {
    let (lo, hi) = unbounded(out.rank());
    view(sh, "expand", x, out, &broadcast_strides(s, out), &lo, &hi, 0)
}

pub(crate) fn slice(sh: &Rc<Shared>, x: &GlTensor, s: &Shape, starts: &[usize], out: &Shape) -> Result<GlTensor> {
    let st = strides(&s.0);
    let off: i64 = starts.iter().zip(&st).map(|(&a, &b)| a as i64 * b).sum();
    let (lo, hi) = unbounded(out.rank());
    view(sh, "slice", x, out, &st, &lo, &hi, off)
}

pub(crate) fn pad(sh: &Rc<Shared>, x: &GlTensor, s: &Shape, before: &[usize], out: &Shape) -> Result<GlTensor> {
    let st = strides(&s.0);
    let off: i64 = -before.iter().zip(&st).map(|(&a, &b)| a as i64 * b).sum::<i64>();
    let lo: Vec<i64> = before.iter().map(|&b| b as i64).collect();
    let hi: Vec<i64> = before.iter().zip(&s.0).map(|(&b, &d)| (b + d) as i64).collect();
    view(sh, "pad", x, out, &st, &lo, &hi, off)
}

/// Joins any number of inputs: groups of up to 4 per pass, then the group results, until one
/// remains.
pub(crate) fn concat(sh: &Rc<Shared>, ts: &[&GlTensor], shapes: &[&Shape], axis: usize, out: &Shape) -> Result<GlTensor> {
    if ts.len() <= INPUTS_PER_PASS {
        return concat_pass(sh, ts, shapes, axis, out);
    }
    let mut parts: Vec<(GlTensor, Shape)> = Vec::new();
    for (tc, sc) in ts.chunks(INPUTS_PER_PASS).zip(shapes.chunks(INPUTS_PER_PASS)) {
        let mut d = sc[0].0.clone();
        d[axis] = sc.iter().map(|s| s.0[axis]).sum();
        let s = Shape(d);
        parts.push((concat_pass(sh, tc, sc, axis, &s)?, s));
    }
    let pt: Vec<&GlTensor> = parts.iter().map(|p| &p.0).collect();
    let ps: Vec<&Shape> = parts.iter().map(|p| &p.1).collect();
    concat(sh, &pt, &ps, axis, out)
}

fn concat_pass(sh: &Rc<Shared>, ts: &[&GlTensor], shapes: &[&Shape], axis: usize, out: &Shape) -> Result<GlTensor> {
    let (_, total, inner) = split_axis(&out.0, axis);
    let mut off = vec![0i64; INPUTS_PER_PASS + 1];
    for j in 0..INPUTS_PER_PASS {
        let size = shapes.get(j).map_or(0, |s| s.0[axis]) as i64;
        off[j + 1] = off[j] + size;
    }
    // Unused sampler slots still need a valid texture: they get input 0 (never read).
    let names = ["u_x0", "u_x1", "u_x2", "u_x3"];
    let mut pass = Pass::new("concat", "concat", 0);
    for (j, name) in names.iter().enumerate() {
        pass = pass.input(name, ts.get(j).copied().unwrap_or(ts[0]));
    }
    let pass = pass.ints("u_off", &off).int("u_inner", inner.max(1)).int("u_total", total.max(1));
    sh.run(pass, out.numel())
}
