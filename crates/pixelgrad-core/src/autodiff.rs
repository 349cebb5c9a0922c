//! Reverse-mode autodiff. [`Tensor::backward`] walks the recorded graph once in reverse
//! topological order; [`grad_rule`] holds the one gradient rule of every primitive, in one
//! place. Rules are written with tensor ops themselves, so they run on whatever backend holds
//! the tensors.

use std::collections::{HashMap, HashSet};

use crate::dtype::DType;
use crate::op::{BinaryOp, Op, ReduceOp, UnaryOp};
use crate::shape::Shape;
use crate::tensor::{no_grad, Tensor};
use crate::{Error, Result};

impl Tensor {
    /// Back-propagates from this scalar: every parameter (and [`Tensor::with_grad`] leaf) that
    /// contributed gets `d self / d leaf` added to its accumulated gradient.
    pub fn backward(&self) -> Result<()> {
        if self.numel() != 1 {
            return Err(Error::Autodiff(format!("backward() needs a scalar (one element), got shape {}", self.shape())));
        }
        if !self.requires_grad() {
            return Err(Error::Autodiff("backward(): nothing in this graph requires a gradient".into()));
        }
        let _guard = no_grad();
        let order = topo_order(self);
        let mut grads: HashMap<u64, Tensor> = HashMap::new();
        grads.insert(self.id(), Tensor::ones(self.device(), self.shape().clone())?);
        for t in order.iter().rev() {
            let Some(g) = grads.remove(&t.id()) else { continue };
            if let Some(sink) = &t.0.sink {
                let mut s = sink.borrow_mut();
                *s = Some(match s.take() {
                    Some(prev) => prev.add(&g)?,
                    None => g.clone(),
                });
            }
            let Some(node) = &t.0.node else { continue };
            // Values kept in f16 by a mixed-precision scope are read back to f32 for the rule.
            let input_grads = if node.inputs.iter().chain([t]).any(|x| x.storage_dtype() == DType::F16) {
                let xs = node.inputs.iter().map(crate::tensor::kept::as_f32).collect::<Result<Vec<_>>>()?;
                grad_rule(&node.op, &xs, &crate::tensor::kept::as_f32(t)?, &g)?
            } else {
                grad_rule(&node.op, &node.inputs, t, &g)?
            };
            for (x, gx) in node.inputs.iter().zip(input_grads) {
                let Some(gx) = gx else { continue };
                if !x.requires_grad() {
                    continue;
                }
                let gx = if gx.shape() != x.shape() { gx.reshape(x.shape().clone())? } else { gx };
                let gx = crate::tensor::kept::round_gradient(gx)?;
                let acc = match grads.remove(&x.id()) {
                    Some(prev) => prev.add(&gx)?,
                    None => gx,
                };
                grads.insert(x.id(), acc);
            }
        }
        Ok(())
    }
}

/// Nodes reachable from `root` that require grad, each after all of its inputs.
fn topo_order(root: &Tensor) -> Vec<Tensor> {
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    // Iterative DFS: (tensor, inputs already pushed?)
    let mut stack = vec![(root.clone(), false)];
    while let Some((t, expanded)) = stack.pop() {
        if expanded {
            order.push(t);
            continue;
        }
        if !seen.insert(t.id()) {
            continue;
        }
        stack.push((t.clone(), true));
        if let Some(node) = &t.0.node {
            for x in &node.inputs {
                if x.requires_grad() && !seen.contains(&x.id()) {
                    stack.push((x.clone(), false));
                }
            }
        }
    }
    order
}

/// Sums `g` down to `shape` (the inverse of broadcasting): leading extra axes and axes where
/// `shape` has size 1 are summed. Neighbouring axes that are all summed (or all kept) are
/// merged first, so each run of summed axes is one reduction (a conv bias gradient, `[N, C,
/// H, W]` down to `[1, C, 1, 1]`, is two instead of three).
pub fn sum_to_shape(g: &Tensor, shape: &Shape) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let r = g.rank();
    let off = r.saturating_sub(shape.rank());
    let dims = g.dims();
    // Runs of axes with the same fate: (extent, summed?).
    let mut runs: Vec<(usize, bool)> = Vec::new();
    for (i, &d) in dims.iter().enumerate() {
        let summed = i < off || (shape.dims()[i - off] == 1 && d != 1);
        match runs.last_mut() {
            Some((n, s)) if *s == summed => *n *= d,
            _ => runs.push((d, summed)),
        }
    }
    let mut t = g.reshape(runs.iter().map(|&(n, _)| n).collect::<Vec<_>>())?;
    // Innermost first, so the axis numbers of the runs still to do stay valid.
    for (i, &(_, summed)) in runs.iter().enumerate().rev() {
        if summed {
            t = t.sum_axis(i as isize, true)?;
        }
    }
    t.reshape(shape.clone())
}

/// The gradient rule of every primitive: given the op, its inputs `x`, its output `y` and the
/// gradient `g` of the loss with respect to `y`, returns the gradient for each input (`None`
/// where the input is not differentiable).
pub fn grad_rule(op: &Op, x: &[Tensor], y: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    let one = |t: Tensor| Ok(vec![Some(t)]);
    match op {
        Op::Fill { .. } | Op::Random { .. } => Ok(vec![]),
        Op::Unary(u) => {
            let a = &x[0];
            match *u {
                UnaryOp::Neg => one(g.neg()?),
                // d exp(a) = exp(a)
                UnaryOp::Exp => one(g.mul(y)?),
                // d ln(a) = 1/a
                UnaryOp::Log => one(g.div(a)?),
                // d sqrt(a) = 1 / (2 sqrt(a))
                UnaryOp::Sqrt => one(g.div(y)?.mul_scalar(0.5)?),
                // d (1/a) = -1/a^2 = -y^2
                UnaryOp::Recip => one(g.mul(&y.square()?)?.neg()?),
                // d tanh(a) = 1 - tanh^2
                UnaryOp::Tanh => one(g.mul(&y.square()?.affine(-1.0, 1.0)?)?),
                // d sigmoid(a) = s (1 - s)
                UnaryOp::Sigmoid => one(g.mul(&y.mul(&y.affine(-1.0, 1.0)?)?)?),
                // d |a| = sign(a)
                UnaryOp::Abs => one(g.mul(&a.gt_scalar(0.0)?.sub(&a.neg()?.gt_scalar(0.0)?)?)?),
                // d a^2 = 2a
                UnaryOp::Square => one(g.mul(a)?.mul_scalar(2.0)?),
                UnaryOp::Sin => one(g.mul(&a.cos()?)?),
                UnaryOp::Cos => one(g.mul(&a.sin()?)?.neg()?),
                UnaryOp::Affine { mul, .. } => one(g.mul_scalar(mul)?),
                // d a^p = p a^(p-1)
                UnaryOp::Powf(p) => one(g.mul(&a.powf(p - 1.0)?)?.mul_scalar(p)?),
                // passes where a > c (ties get 0, so relu'(0) = 0). Read from the output
                // (y > c exactly where a > c, NaN in neither): a ReLU's saved activation, not
                // its input, which a fused backward would otherwise recompute (a matmul
                // product plus a broadcast bias).
                UnaryOp::MaxScalar(c) => one(g.mul(&y.gt_scalar(c)?)?),
                // passes where a < c (y < c exactly there)
                UnaryOp::MinScalar(c) => one(g.mul(&y.neg()?.gt_scalar(-c)?)?),
                UnaryOp::DivScalar(c) => one(g.div_scalar(c)?),
                UnaryOp::GtScalar(_) | UnaryOp::Floor | UnaryOp::RoundEven => Ok(vec![None]),
            }
        }
        Op::Binary(b) => {
            let (a, bb) = (&x[0], &x[1]);
            let (na, nb) = (a.requires_grad(), bb.requires_grad());
            // Gradients nobody needs (constant inputs) are not computed at all.
            let when = |need: bool, f: &dyn Fn() -> Result<Tensor>| -> Result<Option<Tensor>> {
                if need {
                    f().map(Some)
                } else {
                    Ok(None)
                }
            };
            let (ga, gb) = match b {
                BinaryOp::Add => (when(na, &|| Ok(g.clone()))?, when(nb, &|| Ok(g.clone()))?),
                BinaryOp::Sub => (when(na, &|| Ok(g.clone()))?, when(nb, &|| g.neg())?),
                BinaryOp::Mul => (when(na, &|| g.mul(bb))?, when(nb, &|| g.mul(a))?),
                // d(a/b)/db = -a/b^2 = -y/b
                BinaryOp::Div => (when(na, &|| g.div(bb))?, when(nb, &|| g.mul(y)?.div(bb)?.neg())?),
                // the larger input takes the gradient; a wins ties
                BinaryOp::Max => {
                    let m = a.ge(bb)?;
                    (when(na, &|| g.mul(&m))?, when(nb, &|| g.mul(&m.affine(-1.0, 1.0)?))?)
                }
                BinaryOp::Min => {
                    let m = bb.ge(a)?;
                    (when(na, &|| g.mul(&m))?, when(nb, &|| g.mul(&m.affine(-1.0, 1.0)?))?)
                }
                // d a^b / da = b a^(b-1); d a^b / db = a^b ln a
                BinaryOp::Pow => (when(na, &|| g.mul(bb)?.mul(&a.pow(&bb.add_scalar(-1.0)?)?))?, when(nb, &|| g.mul(y)?.mul(&a.log()?))?),
                BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq => (None, None),
            };
            Ok(vec![ga.map(|t| sum_to_shape(&t, a.shape())).transpose()?, gb.map(|t| sum_to_shape(&t, bb.shape())).transpose()?])
        }
        Op::Where => {
            let (c, a, b) = (&x[0], &x[1], &x[2]);
            let zero = Tensor::scalar(g.device(), 0.0)?;
            // As for binary ops, a constant branch gets no gradient: summing one for a scalar
            // `0` (a mask's other branch) would be a whole reduction per step.
            let ga = if a.requires_grad() { Some(sum_to_shape(&Tensor::select(c, g, &zero)?, a.shape())?) } else { None };
            let gb = if b.requires_grad() { Some(sum_to_shape(&Tensor::select(c, &zero, g)?, b.shape())?) } else { None };
            Ok(vec![None, ga, gb])
        }
        Op::Reduce { op, axis } => {
            let a = &x[0];
            match op {
                ReduceOp::Sum => one(g.broadcast_to(a.shape().clone())?),
                // positions equal to the extreme split the gradient evenly, so it stays a
                // subgradient (entries sum to g) when there are ties
                ReduceOp::Max | ReduceOp::Min => {
                    let m = a.eq(y)?;
                    let share = m.div(&m.sum_axis(*axis as isize, true)?)?;
                    one(g.mul(&share)?)
                }
                ReduceOp::ArgMax => Ok(vec![None]),
                // d lse / dx = exp(x - lse) = softmax(x)
                ReduceOp::LogSumExp => one(g.mul(&a.sub(y)?.exp()?)?),
            }
        }
        Op::MatMul { trans_a, trans_b } => {
            let (a, b) = (&x[0], &x[1]);
            // C = op(A) op(B); with G = dL/dC the four cases follow from dA = G op(B)^T and
            // dB = op(A)^T G, transposed back where A or B was used transposed. Only the
            // gradients some input needs are computed (data into a first layer needs none).
            let ga = if a.requires_grad() {
                let t = match (trans_a, trans_b) {
                    (false, false) => g.matmul_t(b, false, true)?,
                    (false, true) => g.matmul_t(b, false, false)?,
                    (true, false) => b.matmul_t(g, false, true)?,
                    (true, true) => b.matmul_t(g, true, true)?,
                };
                Some(sum_to_shape(&t, a.shape())?)
            } else {
                None
            };
            let gb = if b.requires_grad() {
                let t = match (trans_a, trans_b) {
                    (false, false) => a.matmul_t(g, true, false)?,
                    (false, true) => g.matmul_t(a, true, false)?,
                    (true, false) => a.matmul_t(g, false, false)?,
                    (true, true) => g.matmul_t(a, true, true)?,
                };
                Some(sum_to_shape(&t, b.shape())?)
            } else {
                None
            };
            Ok(vec![ga, gb])
        }
        // `Tensor::apply` never records it (its result is a constant); a hand-built graph
        // that does gets an error rather than a wrong gradient.
        Op::MatMulI8 { .. } => Err(Error::Autodiff("matmul_i8 is not differentiable (its result records no gradient)".into())),
        Op::Attention { opts, .. } => attention_grad(opts, x, y, g),
        Op::MatMulNBits { bits, block, k, trans } => {
            // out = a W (or a W^T) with W [k, N] the dequantised weight: dA = G W^T (or G W),
            // the same primitive transposed, read from the packed weight (never an f32 copy).
            // The weight, scales and zero points are frozen.
            if x[1..].iter().any(|t| t.requires_grad()) {
                return Err(Error::Autodiff("matmul_nbits: the packed weight, scales and zero points are frozen (no gradient)".into()));
            }
            let op = Op::MatMulNBits { bits: *bits, block: *block, k: *k, trans: !*trans };
            let ga = Tensor::apply(g.device(), op, &[g, &x[1], &x[2], &x[3]])?;
            Ok(vec![Some(ga), None, None, None])
        }
        Op::Widen => Err(Error::Autodiff("widen is not differentiable (its result records no gradient)".into())),
        Op::NarrowF16 => Err(Error::Autodiff("narrow_f16 is not differentiable (its result records no gradient)".into())),
        Op::Narrow8 { .. } => Err(Error::Autodiff("narrow8 is not differentiable (its result records no gradient)".into())),
        Op::Im2Col(w) => {
            let d = x[0].dims();
            one(g.col2im(*w, d[2], d[3])?)
        }
        Op::Col2Im { window, .. } => one(g.im2col(*window)?),
        Op::MaxPool(w) => one(x[0].max_pool_grad(g, *w)?),
        Op::MaxPoolGrad(_) => Err(Error::Autodiff("max_pool_grad is not differentiable (train through max_pool2d once)".into())),
        // Every window program names the program of its gradient (`WindowProgram::grad`).
        Op::Window { program, window } => match program.grad() {
            Some(grad) => one(Tensor::apply(x[0].device(), Op::Window { program: grad, window: *window }, &[&x[0], g])?),
            None => Err(Error::Autodiff(format!("{} is not differentiable", program.name()))),
        },
        Op::Conv2d(win) => {
            let (a, k) = (&x[0], &x[1]);
            let (d, kd) = (a.dims(), k.dims());
            let (n, m, ckk) = (d[0], kd[0], kd[1] * kd[2] * kd[3]);
            let l = g.dims()[2] * g.dims()[3];
            // The pair it means: y = W [M, C*kk] x cols [N, C*kk, L], cols = im2col(x).
            let g3 = g.reshape([n, m, l])?;
            let w2 = k.reshape([m, ckk])?;
            let ga = if a.requires_grad() {
                let dcols = w2.reshape([1, m, ckk])?.matmul_t(&g3, true, false)?; // [N, C*kk, L]
                Some(dcols.col2im(*win, d[2], d[3])?)
            } else {
                None
            };
            let gk = if k.requires_grad() {
                let cols = a.im2col(*win)?; // [N, C*kk, L]
                let per = g3.matmul_t(&cols, false, true)?; // [N, M, C*kk]
                Some(per.sum_axis(0, false)?.reshape(k.shape().clone())?)
            } else {
                None
            };
            Ok(vec![ga, gk])
        }
        Op::DepthwiseConv(win) => {
            let (a, k) = (&x[0], &x[1]);
            let d = a.dims();
            let (n, c, kk) = (d[0], d[1], win.kh * win.kw);
            let l = g.dims()[2] * g.dims()[3];
            // out[n,c,p] = Σ_r cols[n, c*kk + r, p] w[c, r] with cols = im2col(x), so
            // dcols[n, c*kk + r, p] = w[c, r] g[n, c, p] (dx = col2im(dcols)) and
            // dw[c, r] = Σ_n Σ_p cols[n, c*kk + r, p] g[n, c, p]. Both materialise the columns,
            // which the forward pass avoids; training a depthwise layer is the rarer case.
            let g4 = g.reshape([n, c, 1, l])?;
            let ga = if a.requires_grad() {
                let dcols = g4.mul(&k.reshape([1, c, kk, 1])?)?.reshape([n, c * kk, l])?;
                Some(dcols.col2im(*win, d[2], d[3])?)
            } else {
                None
            };
            let gk = if k.requires_grad() {
                let prod = a.im2col(*win)?.reshape([n, c, kk, l])?.mul(&g4)?;
                Some(prod.sum_axis(3, false)?.sum_axis(0, false)?.reshape(k.shape().clone())?)
            } else {
                None
            };
            Ok(vec![ga, gk])
        }
        Op::Gather { axis } => {
            let size = x[0].dims()[*axis];
            Ok(vec![Some(g.scatter_add(*axis, size, &x[1])?), None])
        }
        Op::ScatterAdd { axis, .. } => Ok(vec![Some(g.gather(*axis, &x[1])?), None]),
        Op::Reshape(_) => one(g.reshape(x[0].shape().clone())?),
        Op::Permute(p) => {
            let mut inv = vec![0; p.len()];
            for (i, &a) in p.iter().enumerate() {
                inv[a] = i;
            }
            one(g.permute(&inv)?)
        }
        Op::Expand(_) => one(sum_to_shape(g, x[0].shape())?),
        Op::Slice { starts, ends } => {
            let d = x[0].dims();
            let after: Vec<usize> = (0..d.len()).map(|i| d[i] - ends[i]).collect();
            one(g.pad(starts, &after)?)
        }
        Op::Pad { before, .. } => {
            let d = x[0].dims();
            let ends: Vec<usize> = (0..d.len()).map(|i| before[i] + d[i]).collect();
            one(Tensor::apply(g.device(), Op::Slice { starts: before.clone(), ends }, &[g])?)
        }
        Op::Concat { axis } => {
            let mut start = 0;
            let mut out = Vec::with_capacity(x.len());
            for t in x {
                let n = t.dims()[*axis];
                out.push(Some(g.slice(*axis, start, start + n)?));
                start += n;
            }
            Ok(out)
        }
    }
}

/// The gradient of [`Op::Attention`], the composition's: the weights `P` are recomputed
/// ([`Tensor::attention_scores`]; the forward pass kept no scores), then with `G = dL/dY`:
/// `dV = Pᵀ G`, `dP = G Vᵀ`, `dZ = P ⊙ (dP - rowsum(G ⊙ Y))` for the final scores `Z` (the
/// softmax's adjoint, the smooth softmax's too, since `rowsum(dP ⊙ P) = rowsum(G ⊙ Y)` for
/// both), through the softcap `c · tanh(x / c)` by its slope `1 - tanh²` (before or after the
/// masks, as the options say), `dQ = scale · dS K`, `dK = scale · dSᵀ Q` for `dS` the gradient
/// of `scale · Q Kᵀ`, `dM` the gradient of the masked scores summed to the mask's shape (the
/// causal exclusions are constants). Key/value heads shared by a group of query heads sum the
/// group's gradients. This materialises `[B, N, S, T]`, as the composition's backward does.
fn attention_grad(opts: &crate::AttentionOpts, x: &[Tensor], y: &Tensor, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    let (q, k, v) = (&x[0], &x[1], &x[2]);
    let (qd, kd, vd) = (q.dims().to_vec(), k.dims().to_vec(), v.dims().to_vec());
    let (b, n, s, h) = (qd[0], qd[1], qd[2], qd[3]);
    let (nkv, t, hv) = (kd[1], kd[2], vd[3]);
    let group = n / nkv;
    // [B·N, T, d] -> [B, Nkv, T, d], the group's gradients summed
    let gather = |x: Tensor, d: usize| -> Result<Tensor> {
        if group == 1 {
            return x.reshape([b, nkv, t, d]);
        }
        x.reshape([b, nkv, group, t, d])?.sum_axis(2, false)
    };
    let scores = q.attention_scores(k, x.get(3), *opts)?;
    let p = scores.weights.reshape([b * n, s, t])?;
    let g3 = g.reshape([b * n, s, hv])?;
    let gv = if v.requires_grad() { Some(gather(p.matmul_t(&g3, true, false)?, hv)?) } else { None };
    let need_s = q.requires_grad() || k.requires_grad() || x.get(3).is_some_and(|m| m.requires_grad());
    if !need_s {
        return Ok(vec![None, None, gv, None].into_iter().take(x.len()).collect());
    }
    let dp = g3.matmul_t(&v.attention_spread(n)?, false, true)?;
    let rows = g.mul(y)?.sum_axis(-1, true)?.reshape([b * n, s, 1])?;
    let dz = p.mul(&dp.sub(&rows)?)?.reshape([b, n, s, t])?;
    // the softcap's slope at the capped value: 1 - (capped / c)²
    let slope = |capped: &Tensor, c: f32| -> Result<Tensor> { capped.mul_scalar(1.0 / c)?.square()?.affine(-1.0, 1.0) };
    let (dmasked, dscaled) = match opts.softcap {
        None => (dz.clone(), dz),
        Some(c) if opts.softcap_after_masks => {
            let d = dz.mul(&slope(&scores.capped, c)?)?;
            (d.clone(), d)
        }
        Some(c) => {
            let before = scores.scaled.mul_scalar(1.0 / c)?.tanh()?.mul_scalar(c)?;
            let d = dz.mul(&slope(&before, c)?)?;
            (dz, d)
        }
    };
    let ds = dscaled.reshape([b * n, s, t])?;
    let scale = opts.scale;
    let gq =
        if q.requires_grad() { Some(ds.matmul(&k.attention_spread(n)?)?.mul_scalar(scale)?.reshape(q.shape().clone())?) } else { None };
    let gk = if k.requires_grad() {
        let q3 = q.reshape([b * n, s, h])?;
        Some(gather(ds.matmul_t(&q3, true, false)?.mul_scalar(scale)?, h)?)
    } else {
        None
    };
    let gm = match x.get(3) {
        Some(m) if m.requires_grad() => Some(sum_to_shape(&dmasked, m.shape())?),
        _ => None,
    };
    Ok(vec![gq, gk, gv, gm].into_iter().take(x.len()).collect())
}
