//! The CPU backend's kernel evaluator: what it runs for every elementwise kernel (in `f32`, and
//! in `f64` for the reference), with the meaning `pixelgrad_core::kernel::eval` defines.
//!
//! Evaluation goes node by node over a block of elements (not element by element), so each
//! node is one tight loop the compiler can vectorise and the interpretation cost is paid once
//! per block. Booleans are held as `1` / `0` of the float type.

use pixelgrad_core::kernel::eval::{apply1, apply2, flag, truth, Float};
use pixelgrad_core::kernel::ir::{Kernel, Lit, Node, Op2};

use crate::blocks::{map1, map2, map_pair, operand, pairs_with, put, read, select_into, take, Scratch, Src, Val};
use crate::schedule::Schedule;

/// A kernel with what [`eval_prepared`] needs to know of it once rather than per block: how
/// many readers each node has (the result counts as one), which decides what pairs.
pub struct Prepared<'k> {
    kernel: &'k Kernel,
    uses: Vec<u32>,
    /// The blocks' steps, decided once, for blocks whose single-value inputs are the ones
    /// given to [`Prepared::with_scalars`].
    schedule: Option<Schedule>,
}

impl<'k> Prepared<'k> {
    pub fn new(kernel: &'k Kernel) -> Self {
        let mut uses = Vec::new();
        count_uses(kernel, &mut uses);
        Prepared { kernel, uses, schedule: None }
    }

    /// [`Prepared::new`] for blocks whose input `j` is one value exactly where
    /// `scalar_inputs[j]` (a caller that reads an input through a stride of 0 along the
    /// block): what each block does is decided here, once. Blocks given other inputs are
    /// still evaluated right, node by node.
    pub fn with_scalars(kernel: &'k Kernel, scalar_inputs: &[bool]) -> Self {
        let mut p = Prepared::new(kernel);
        p.schedule = Schedule::new(kernel, &p.uses, scalar_inputs);
        p
    }

    /// True if blocks with the inputs given to [`Prepared::with_scalars`] run a schedule.
    #[cfg(test)]
    pub fn scheduled(&self) -> bool {
        self.schedule.is_some()
    }
}

/// Elements per block when [`eval`] walks a long output.
pub const BLOCK: usize = 1024;

/// Evaluates a prepared kernel for `out.len()` consecutive elements: input `i` comes from
/// `inputs[i]` (a slice at least as long as `out`, or one value), parameters from `params`. The
/// caller has checked the arity (`pixelgrad_core::kernel::eval::check`).
pub fn eval_prepared<T: Float>(prepared: &Prepared<'_>, inputs: &[Src<'_, T>], params: &[T], out: &mut [T], scratch: &mut Scratch<T>) {
    let kernel = prepared.kernel;
    if let Some(s) = prepared.schedule.as_ref().filter(|s| s.fits(inputs)) {
        s.run(kernel, inputs, params, out, scratch);
        return;
    }
    let n = out.len();
    let nodes = kernel.nodes();
    if scratch.bufs.len() < nodes.len() {
        scratch.bufs.resize_with(nodes.len(), Vec::new);
    }
    // The result node is normally the last one: it is computed straight into `out`.
    let last = nodes.len() - 1;
    let direct = kernel.out() as usize == last;
    let mut wrote = false;
    let mut vals = std::mem::take(&mut scratch.vals);
    vals.clear();
    // A node's value computed early, together with the node it reads (see `pairable`).
    let mut paired: Option<(usize, Val<T>)> = None;
    for (i, node) in nodes.iter().enumerate() {
        if let Some((j, v)) = paired {
            if j == i {
                paired = None;
                vals.push(v);
                if direct && i == last {
                    wrote = true;
                    break;
                }
                continue;
            }
        }
        let into_out = direct && i == last;
        // `x op1 s1`, then `_ op2 s2` in its one reader `j`: one pass, the value kept in a
        // register between the two (the same operations in the same order: the same bits).
        // Node i's own value is never read afterwards.
        if paired.is_none() {
            if let Some(p) = pairable(kernel, &prepared.uses, &vals, i, inputs, params) {
                if direct && p.j == last {
                    map_pair(p.op1, p.s1, p.op2, p.s2, read(p.x, inputs, scratch, n), out);
                    vals.push(Val::Scalar(T::ZERO));
                    paired = Some((p.j, Val::Scalar(T::ZERO)));
                    continue;
                }
                let mut buf = take(scratch, p.j, n);
                map_pair(p.op1, p.s1, p.op2, p.s2, read(p.x, inputs, scratch, n), &mut buf);
                vals.push(Val::Scalar(T::ZERO));
                paired = Some((p.j, put(scratch, p.j, buf)));
                continue;
            }
        }
        let v = match *node {
            Node::Input(j) => match inputs[j as usize] {
                Src::Slice(_) => Val::In(j as usize),
                Src::Scalar(x) => Val::Scalar(x),
            },
            Node::Param(j) => Val::Scalar(params[j as usize]),
            Node::Const(l) => Val::Scalar(match l {
                Lit::F32(bits) => T::from_f32(f32::from_bits(bits)),
                Lit::Bool(b) => flag(b),
                Lit::I32(x) => T::from_f32(x as f32),
            }),
            Node::Op1(op, a) => match vals[a as usize] {
                Val::Scalar(x) => Val::Scalar(apply1(op, x)),
                va if into_out => {
                    map1(op, read(va, inputs, scratch, n), out);
                    wrote = true;
                    break;
                }
                va => {
                    let mut buf = take(scratch, i, n);
                    map1(op, read(va, inputs, scratch, n), &mut buf);
                    put(scratch, i, buf)
                }
            },
            Node::Op2(op, a, b) => match (vals[a as usize], vals[b as usize]) {
                (Val::Scalar(x), Val::Scalar(y)) => Val::Scalar(apply2(op, x, y)),
                (va, vb) if into_out => {
                    map2(op, operand(va, inputs, scratch, n), operand(vb, inputs, scratch, n), out);
                    wrote = true;
                    break;
                }
                (va, vb) => {
                    let mut buf = take(scratch, i, n);
                    map2(op, operand(va, inputs, scratch, n), operand(vb, inputs, scratch, n), &mut buf);
                    put(scratch, i, buf)
                }
            },
            Node::Select(c, a, b) => match (vals[c as usize], vals[a as usize], vals[b as usize]) {
                (Val::Scalar(c), va, vb) => {
                    if truth(c) {
                        va
                    } else {
                        vb
                    }
                }
                (vc, va, vb) if into_out => {
                    select_into(read(vc, inputs, scratch, n), operand(va, inputs, scratch, n), operand(vb, inputs, scratch, n), out);
                    wrote = true;
                    break;
                }
                (vc, va, vb) => {
                    let mut buf = take(scratch, i, n);
                    select_into(read(vc, inputs, scratch, n), operand(va, inputs, scratch, n), operand(vb, inputs, scratch, n), &mut buf);
                    put(scratch, i, buf)
                }
            },
            // Every value is held in the float type already (bools as 1 / 0).
            Node::Cast(_, a) => vals[a as usize],
        };
        vals.push(v);
    }
    if !wrote {
        match vals[kernel.out() as usize] {
            Val::Scalar(x) => out.fill(x),
            v => out.copy_from_slice(&read(v, inputs, scratch, n)[..n]),
        }
    }
    scratch.vals = vals;
}

/// Counts the readers of every node of `kernel` into `uses` (the result is one more).
fn count_uses(kernel: &Kernel, uses: &mut Vec<u32>) {
    uses.clear();
    uses.resize(kernel.nodes().len(), 0);
    for node in kernel.nodes() {
        match *node {
            Node::Op1(_, a) | Node::Cast(_, a) => uses[a as usize] += 1,
            Node::Op2(_, a, b) => {
                uses[a as usize] += 1;
                uses[b as usize] += 1;
            }
            Node::Select(c, a, b) => {
                uses[c as usize] += 1;
                uses[a as usize] += 1;
                uses[b as usize] += 1;
            }
            Node::Input(_) | Node::Param(_) | Node::Const(_) => {}
        }
    }
    uses[kernel.out() as usize] += 1;
}

/// Two scalar operations evaluated in one pass: node `j = op2(op1(x, s1), s2)`.
struct Pair<T> {
    op1: Op2,
    x: Val<T>,
    s1: T,
    op2: Op2,
    s2: T,
    j: usize,
}

/// The value of node `v` if it is one value for the whole block, evaluated or not yet
/// (parameters, constants and single-value inputs).
fn scalar_at<T: Float>(kernel: &Kernel, vals: &[Val<T>], v: usize, inputs: &[Src<'_, T>], params: &[T]) -> Option<T> {
    if let Some(val) = vals.get(v) {
        return match *val {
            Val::Scalar(x) => Some(x),
            _ => None,
        };
    }
    match kernel.nodes()[v] {
        Node::Param(j) => Some(params[j as usize]),
        Node::Const(Lit::F32(bits)) => Some(T::from_f32(f32::from_bits(bits))),
        Node::Input(j) => match inputs[j as usize] {
            Src::Scalar(x) => Some(x),
            Src::Slice(_) => None,
        },
        _ => None,
    }
}

/// Node `i` and its one reader as a [`Pair`], when node `i` is `x op1 s` (or `s op1 x` for
/// `+` and `*`, which are commutative in every bit but a NaN's payload) on a block of values, its reader `j` is
/// `_ op2 s'` (the same way round), and only parameters, constants or inputs lie between.
fn pairable<T: Float>(kernel: &Kernel, uses: &[u32], vals: &[Val<T>], i: usize, inputs: &[Src<'_, T>], params: &[T]) -> Option<Pair<T>> {
    let nodes = kernel.nodes();
    let Node::Op2(op1, a, b) = nodes[i] else { return None };
    if uses[i] != 1 || !pairs_with(op1) {
        return None;
    }
    let commutes = |op: Op2| matches!(op, Op2::Add | Op2::Mul);
    let (x, s1) = match (vals[a as usize], vals[b as usize]) {
        (Val::Scalar(_), Val::Scalar(_)) => return None,
        (x, Val::Scalar(s)) => (x, s),
        (Val::Scalar(s), x) if commutes(op1) => (x, s),
        _ => return None,
    };
    let mut j = i + 1;
    while j < nodes.len() && matches!(nodes[j], Node::Param(_) | Node::Const(_) | Node::Input(_)) {
        j += 1;
    }
    let Some(&Node::Op2(op2, c, d)) = nodes.get(j) else { return None };
    if !pairs_with(op2) {
        return None;
    }
    let s2 = if c as usize == i {
        scalar_at(kernel, vals, d as usize, inputs, params)?
    } else if d as usize == i && commutes(op2) {
        scalar_at(kernel, vals, c as usize, inputs, params)?
    } else {
        return None;
    };
    Some(Pair { op1, x, s1, op2, s2, j })
}

/// Evaluates `kernel` over a whole output whose inputs are all full-length slices or single
/// values, block by block (the tests' entry point; the backend walks its own blocks).
#[cfg(test)]
pub fn eval<T: Float>(kernel: &Kernel, inputs: &[Src<'_, T>], params: &[T], out: &mut [T]) -> pixelgrad_core::Result<()> {
    use pixelgrad_core::Error;
    pixelgrad_core::kernel::eval::check(kernel, inputs.len(), params.len())?;
    for (i, s) in inputs.iter().enumerate() {
        if let Src::Slice(s) = s {
            if s.len() < out.len() {
                return Err(Error::invalid("kernel", format!("input {i} has {} elements for {} outputs", s.len(), out.len())));
            }
        }
    }
    let mut scratch = Scratch::default();
    let scalars: Vec<bool> = inputs.iter().map(|s| matches!(s, Src::Scalar(_))).collect();
    let prepared = Prepared::with_scalars(kernel, &scalars);
    let mut start = 0;
    for chunk in out.chunks_mut(BLOCK) {
        let ins: Vec<Src<'_, T>> = inputs
            .iter()
            .map(|s| match *s {
                Src::Slice(x) => Src::Slice(&x[start..start + chunk.len()]),
                Src::Scalar(v) => Src::Scalar(v),
            })
            .collect();
        eval_prepared(&prepared, &ins, params, chunk, &mut scratch);
        start += chunk.len();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad_core::kernel::eval::eval_one;
    use pixelgrad_core::kernel::ir::{Builder, DType, E};

    /// Values where operation order and signed zeros show: NaN, infinities, ±0, ties.
    const EDGES: [f32; 12] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 6.0, 1e-30, -7.5];

    /// A block evaluation (where scalar operations pair up, see `pairable`) gives the same
    /// bits as evaluating each element alone (every operand a single value: nothing pairs),
    /// NaN payloads aside.
    fn same_bits_as_one_by_one(k: &Kernel, params: &[f32], rows: &[Vec<f32>]) {
        let n = rows[0].len();
        let srcs: Vec<Src<'_, f32>> = rows.iter().map(|r| Src::Slice(r)).collect();
        let mut out = vec![0.0f32; n];
        eval(k, &srcs, params, &mut out).unwrap();
        for e in 0..n {
            let one: Vec<f32> = rows.iter().map(|r| r[e]).collect();
            let want = eval_one(k, &one, params).unwrap();
            // NaN is NaN: which operand's payload and sign an operation passes on is the
            // hardware's choice (wasm leaves it open), and `a + b` may pair as `b + a`.
            let same = out[e].to_bits() == want.to_bits() || (out[e].is_nan() && want.is_nan());
            assert!(same, "element {e} {one:?} params {params:?}: {} vs {want} one by one:\n{k}", out[e]);
        }
    }

    #[test]
    fn paired_scalar_operations_keep_every_bit() {
        let xs: Vec<f32> = EDGES.iter().flat_map(|&a| EDGES.iter().map(move |&b| a * 0.5 + b)).collect();
        let bias: Vec<f32> = (0..xs.len()).map(|i| EDGES[i % EDGES.len()]).collect();
        // Hard-swish after a bias, as ONNX exports it: x * clip(x * 1 + 3, 0, 6) * (1/6) + 0.
        let b = Builder::new(&[DType::F32, DType::F32], 6);
        let t = b.input(0) + b.input(1);
        let c = (t * b.param(0) + b.param(1)).max(b.param(2)).min(b.param(3));
        let k = b.finish(t * c * b.param(4) + b.param(5)).unwrap();
        for params in [[1.0, 3.0, 0.0, 6.0, 1.0 / 6.0, 0.0], [1.0, 3.0, -0.0, 6.0, 0.2, -0.0], [f32::NAN, 0.0, 0.0, 0.0, 1.0, 1.0]] {
            same_bits_as_one_by_one(&k, &params, &[xs.clone(), bias.clone()]);
        }
        // Every pair of the paired operations, either way round, with scalars from
        // parameters, constants and single-value inputs.
        type Op = for<'a> fn(E<'a>, E<'a>) -> E<'a>;
        let ops: [(&str, Op); 6] = [
            ("add", |a, b| a + b),
            ("sub", |a, b| a - b),
            ("mul", |a, b| a * b),
            ("div", |a, b| a / b),
            ("max", |a, b| a.max(b)),
            ("min", |a, b| a.min(b)),
        ];
        for (_, f) in &ops {
            for (_, g) in &ops {
                for flip in [false, true] {
                    let b = Builder::new(&[DType::F32], 1);
                    let x = b.input(0);
                    let y = if flip { f(b.param(0), x) } else { f(x, b.param(0)) };
                    let z = if flip { g(b.f32(-0.0), y) } else { g(y, b.f32(2.5)) };
                    let k = b.finish(z).unwrap();
                    for p in EDGES {
                        same_bits_as_one_by_one(&k, &[p], std::slice::from_ref(&xs));
                    }
                }
            }
        }
        // A value read twice does not pair away: (x + 1) * (x + 1) - 2.
        let b = Builder::new(&[DType::F32], 0);
        let u = b.input(0) + 1.0;
        let k = b.finish(u * u - 2.0).unwrap();
        same_bits_as_one_by_one(&k, &[], std::slice::from_ref(&xs));
    }
}
