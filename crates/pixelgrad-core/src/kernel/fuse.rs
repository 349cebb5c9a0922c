//! Fusing elementwise ops. A GPU backend need not run an elementwise op when it is called:
//! it can keep it as a [`Pending`] computation (a kernel over *leaves*, the tensors already in
//! memory it reads), and when the next elementwise op consumes it, [`compose`] the two into
//! one kernel. The chain runs as one kernel (one pass, one draw) when something needs its
//! values: a non-elementwise op, a read, the end of a step. `crate::fusion` keeps such
//! computations as pending storage and decides when they run.
//!
//! Broadcasting composes: a leaf of shape `L` read broadcast to an intermediate shape `S`,
//! itself broadcast to the output `O`, is the leaf read broadcast straight to `O` (every axis
//! where `L` has extent 1 or is missing reads index 0 either way). So a fused kernel only
//! needs each leaf's own shape, whatever the chain of shapes in between.

use super::defs::Launch;
use super::ir::{Builder, DType, E};
use crate::shape::Shape;
use crate::{Error, Result};

/// An elementwise computation not yet run: `launch` over `leaves` (input `i` of the kernel is
/// leaf `i`, read broadcast to `shape`).
#[derive(Clone, Debug)]
pub struct Pending<L> {
    pub launch: Launch,
    pub leaves: Vec<(L, Shape)>,
    pub shape: Shape,
    /// The ops composed so far, first to last (for logs and kernel names).
    pub ops: Vec<&'static str>,
}

/// One input of an elementwise op being fused.
pub enum Arg<'a, L> {
    /// A value in memory, of this shape.
    Leaf(L, Shape),
    /// A computation not yet run, whose shape broadcasts to the op's output.
    Pending(&'a Pending<L>),
}

impl<L> Pending<L> {
    /// Distinct tensors the fused kernel reads.
    pub fn inputs(&self) -> usize {
        self.leaves.len()
    }
    /// Nodes of its kernel (before lowering).
    pub fn nodes(&self) -> usize {
        self.launch.kernel.nodes().len()
    }
    /// This computation read as `shape` (the same number of elements), as a reshape of its
    /// result would read it. Possible when every leaf reshapes along: the two shapes split
    /// into blocks of axes with equal products (see [`reshape_blocks`]), and in every block
    /// a leaf either has the computation's extents or is broadcast (extent 1) throughout, so
    /// element `i` of the result still reads the same element of each leaf.
    pub fn viewed_as(&self, shape: &Shape) -> Option<Pending<L>>
    where
        L: Clone,
    {
        if shape == &self.shape {
            return Some(self.clone());
        }
        if shape.numel() != self.shape.numel() {
            return None;
        }
        let blocks = reshape_blocks(self.shape.dims(), shape.dims())?;
        let leaves = self
            .leaves
            .iter()
            .map(|(l, s)| Some((l.clone(), leaf_reshaped(s, &self.shape, shape, &blocks)?)))
            .collect::<Option<Vec<_>>>()?;
        Some(Pending { launch: self.launch.clone(), leaves, shape: shape.clone(), ops: self.ops.clone() })
    }

    /// The composed ops as one label, e.g. `add+max_scalar` (long chains abbreviated).
    pub fn label(&self) -> String {
        const SHOWN: usize = 6;
        let mut s = self.ops.iter().take(SHOWN).copied().collect::<Vec<_>>().join("+");
        if self.ops.len() > SHOWN {
            s.push_str(&format!("+{} more", self.ops.len() - SHOWN));
        }
        s
    }
}

/// The blocks of a reshape from `from` to `to`: pairs of axis ranges `(from_axes, to_axes)`,
/// in order, whose extents have equal products, each as short as the two shapes allow (so a
/// block is a run of axes merged or split by the reshape). `None` when the element counts
/// differ or are zero.
pub fn reshape_blocks(from: &[usize], to: &[usize]) -> Option<Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>> {
    let n = from.iter().product::<usize>();
    if n == 0 || n != to.iter().product::<usize>() {
        return None;
    }
    let (mut i, mut j) = (0, 0);
    let mut blocks = Vec::new();
    while i < from.len() || j < to.len() {
        let (i0, j0) = (i, j);
        let (mut a, mut b) = (1usize, 1usize);
        // Grow the side with the smaller product (each side takes an axis first, if it has
        // one left) until the products agree.
        loop {
            if i < from.len() && (i == i0 || a < b || j == to.len()) {
                a *= from[i];
                i += 1;
            } else if j < to.len() {
                b *= to[j];
                j += 1;
            } else {
                break;
            }
            if a == b && (i > i0 || i == from.len()) && (j > j0 || j == to.len()) {
                break;
            }
        }
        if a != b {
            return None;
        }
        blocks.push((i0..i, j0..j));
    }
    Some(blocks)
}

/// The shape of a leaf read broadcast to `from` when the computation is read as `to` instead,
/// or `None` if some block of the reshape is neither full nor broadcast in the leaf.
fn leaf_reshaped(leaf: &Shape, from: &Shape, to: &Shape, blocks: &[(std::ops::Range<usize>, std::ops::Range<usize>)]) -> Option<Shape> {
    if leaf == from {
        return Some(to.clone());
    }
    if leaf.numel() == 1 {
        // One element broadcasts to anything; keep its rank within the new shape's.
        return Some(Shape(vec![1; leaf.rank().min(to.rank())]));
    }
    // The leaf's extents aligned to `from` (missing leading axes are broadcast).
    let pad = from.rank().checked_sub(leaf.rank())?;
    let ext = |k: usize| if k < pad { 1 } else { leaf.dims()[k - pad] };
    let mut out = Vec::with_capacity(to.rank());
    for (fa, ta) in blocks {
        let full = fa.clone().all(|k| ext(k) == from.dims()[k]);
        let one = fa.clone().all(|k| ext(k) == 1);
        if full {
            out.extend_from_slice(&to.dims()[ta.clone()]);
        } else if one {
            out.extend(std::iter::repeat_n(1, ta.len()));
        } else {
            return None;
        }
    }
    Some(Shape(out))
}

/// `launch` (the op named `op`) applied to `args`, producing `out`, as one computation:
/// pending arguments are inlined (their kernels become part of this one), leaves that are the
/// same tensor with the same shape (`same`) are read once, and parameters are concatenated.
pub fn compose<L: Clone>(
    launch: &Launch,
    op: &'static str,
    args: &[Arg<'_, L>],
    out: &Shape,
    same: impl Fn(&L, &L) -> bool,
) -> Result<Pending<L>> {
    if args.len() != launch.kernel.inputs().len() {
        return Err(Error::invalid("fuse", format!("the kernel takes {} inputs, given {}", launch.kernel.inputs().len(), args.len())));
    }
    let mut leaves: Vec<(L, Shape)> = Vec::new();
    let mut leaf = |l: &L, s: &Shape| -> usize {
        if let Some(i) = leaves.iter().position(|(m, t)| t == s && same(m, l)) {
            return i;
        }
        leaves.push((l.clone(), s.clone()));
        leaves.len() - 1
    };
    // Where each argument's values come from: a leaf, or a pending kernel with its leaves
    // renumbered and its parameters moved to `base`.
    enum Source<'p, L> {
        Leaf(usize),
        Inline(&'p Pending<L>, Vec<usize>, usize),
    }
    let mut params: Vec<f32> = Vec::new();
    let mut ops: Vec<&'static str> = Vec::new();
    let mut sources = Vec::with_capacity(args.len());
    for a in args {
        sources.push(match a {
            Arg::Leaf(l, s) => Source::Leaf(leaf(l, s)),
            Arg::Pending(p) => {
                let idx: Vec<usize> = p.leaves.iter().map(|(l, s)| leaf(l, s)).collect();
                let base = params.len();
                params.extend_from_slice(&p.launch.params);
                ops.extend_from_slice(&p.ops);
                Source::Inline(p, idx, base)
            }
        });
    }
    let own_base = params.len();
    params.extend_from_slice(&launch.params);
    // At most every inlined node, the op's own and one per input.
    let room = launch.kernel.nodes().len()
        + leaves.len()
        + sources.iter().map(|s| if let Source::Inline(p, ..) = s { p.launch.kernel.nodes().len() } else { 0 }).sum::<usize>();
    let b = Builder::with_capacity(&vec![DType::F32; leaves.len()], params.len(), room);
    let inputs: Vec<E<'_>> = sources
        .iter()
        .map(|s| match s {
            Source::Leaf(i) => b.input(*i),
            Source::Inline(p, idx, base) => {
                let ins: Vec<E<'_>> = idx.iter().map(|&i| b.input(i)).collect();
                p.launch.kernel.inline_into(&b, &ins, *base)
            }
        })
        .collect();
    let result = launch.kernel.inline_into(&b, &inputs, own_base);
    let kernel = b.finish(result)?;
    ops.push(op);
    Ok(Pending { launch: Launch { kernel, params }, leaves, shape: out.clone(), ops })
}

/// The kernel of an elementwise op and its name, or `None` for any other op: what a fusing
/// backend defers instead of running.
pub fn elementwise(op: &crate::Op) -> Result<Option<(Launch, &'static str)>> {
    use super::defs::{fill_launch, identity_launch, where_launch};
    use crate::Op;
    Ok(match op {
        Op::Unary(u) => Some((u.launch()?, u.name())),
        Op::Binary(b) => Some((b.launch()?, b.name())),
        Op::Where => Some((where_launch()?, "where")),
        // Broadcasting is how every fused kernel reads its inputs: expand is the identity.
        Op::Expand(_) => Some((identity_launch()?, "expand")),
        // A constant: inlined into whatever reads it.
        Op::Fill { value, .. } => Some((fill_launch(*value)?, "fill")),
        _ => None,
    })
}

/// How a fused kernel reads inputs of `shapes` for an output of shape `out`: `(fast,
/// scalars)`, `fast` when every input has the output's shape or is one element (no index
/// arithmetic needed), bit `i` of `scalars` set when input `i` is one element. A one-element
/// output reads index 0 of everything anyway (fast, no scalar bits).
pub fn read_mode(shapes: &[&Shape], out: &Shape) -> (bool, u32) {
    let mut scalars = 0u32;
    let mut fast = true;
    if out.numel() == 1 {
        return (true, 0);
    }
    for (i, s) in shapes.iter().enumerate() {
        if s.numel() == 1 {
            scalars |= 1 << i;
        } else if *s != out {
            fast = false;
        }
    }
    (fast, scalars)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::eval::eval_one;
    use crate::{BinaryOp, UnaryOp};

    fn s(d: &[usize]) -> Shape {
        Shape::from(d)
    }

    #[test]
    fn reshape_blocks_pair_merged_and_split_axes() {
        let b = |f: &[usize], t: &[usize]| reshape_blocks(f, t);
        assert_eq!(b(&[2, 3, 20], &[2, 3, 4, 5]), Some(vec![(0..1, 0..1), (1..2, 1..2), (2..3, 2..4)]));
        assert_eq!(b(&[6, 4], &[2, 3, 4]), Some(vec![(0..1, 0..2), (1..2, 2..3)]));
        assert_eq!(b(&[2, 1, 3], &[2, 3]), Some(vec![(0..1, 0..1), (1..3, 1..2)]));
        assert_eq!(b(&[6], &[6, 1]), Some(vec![(0..1, 0..1), (1..1, 1..2)]));
        // 4 * 6 as 3 * 8: one block of everything.
        assert_eq!(b(&[4, 6], &[3, 8]), Some(vec![(0..2, 0..2)]));
        assert_eq!(b(&[4, 6], &[5, 5]), None);
        assert_eq!(b(&[0, 3], &[3, 0]), None);
    }

    #[test]
    fn broadcast_leaves_follow_a_reshape_that_keeps_their_axes() {
        // (x [2, 3, 20] + bias [1, 3, 1]) read as [2, 3, 4, 5]: the bias becomes [1, 3, 1, 1].
        let add = BinaryOp::Add.launch().unwrap();
        let p =
            compose(&add, "add", &[Arg::Leaf("x", s(&[2, 3, 20])), Arg::Leaf("b", s(&[1, 3, 1]))], &s(&[2, 3, 20]), |a, b| a == b).unwrap();
        let v = p.viewed_as(&s(&[2, 3, 4, 5])).unwrap();
        assert_eq!(v.leaves, vec![("x", s(&[2, 3, 4, 5])), ("b", s(&[1, 3, 1, 1]))]);
        // And back, and with a missing leading axis ([3, 1] read as [2, 3, 20]).
        let back = v.viewed_as(&s(&[2, 3, 20])).unwrap();
        assert_eq!(back.leaves, p.leaves);
        let q =
            compose(&add, "add", &[Arg::Leaf("x", s(&[2, 3, 20])), Arg::Leaf("c", s(&[3, 1]))], &s(&[2, 3, 20]), |a, b| a == b).unwrap();
        assert!(q.viewed_as(&s(&[6, 20])).is_none(), "merging the batch and channel axes splits the leaf's block");
        assert_eq!(q.viewed_as(&s(&[2, 3, 2, 10])).unwrap().leaves[1], ("c", s(&[1, 3, 1, 1])));
        // A one-element leaf of a higher rank than the new shape drops its extra axes.
        let one =
            compose(&add, "add", &[Arg::Leaf("x", s(&[2, 3, 20])), Arg::Leaf("k", s(&[1, 1, 1]))], &s(&[2, 3, 20]), |a, b| a == b).unwrap();
        assert_eq!(one.viewed_as(&s(&[120])).unwrap().leaves[1], ("k", s(&[1])));
        // A leaf that is neither full nor broadcast over a block cannot follow.
        let r = compose(&add, "add", &[Arg::Leaf("x", s(&[4, 6])), Arg::Leaf("d", s(&[1, 6]))], &s(&[4, 6]), |a, b| a == b).unwrap();
        assert!(r.viewed_as(&s(&[3, 8])).is_none());
        assert_eq!(r.viewed_as(&s(&[4, 2, 3])).unwrap().leaves[1], ("d", s(&[1, 2, 3])));
    }

    #[test]
    fn chains_compose_into_one_kernel() {
        // relu(x + b) * 2, with x read twice (once through the pending add): one leaf each.
        let add = BinaryOp::Add.launch().unwrap();
        let p1 = compose(&add, "add", &[Arg::Leaf("x", s(&[4, 3])), Arg::Leaf("b", s(&[3]))], &s(&[4, 3]), |a, b| a == b).unwrap();
        let relu = UnaryOp::MaxScalar(0.0).launch().unwrap();
        let p2 = compose(&relu, "relu", &[Arg::Pending(&p1)], &s(&[4, 3]), |a, b| a == b).unwrap();
        let twice = UnaryOp::Affine { mul: 2.0, add: 0.0 }.launch().unwrap();
        let p3 = compose(&twice, "twice", &[Arg::Pending(&p2)], &s(&[4, 3]), |a, b| a == b).unwrap();
        assert_eq!(p3.leaves.iter().map(|(l, _)| *l).collect::<Vec<_>>(), vec!["x", "b"]);
        assert_eq!(p3.launch.params, vec![0.0, 2.0, 0.0]);
        assert_eq!(p3.label(), "add+relu+twice");
        let y: f32 = eval_one(&p3.launch.kernel, &[-1.0, 0.25], &p3.launch.params).unwrap();
        assert_eq!(y, 0.0);
        let y: f32 = eval_one(&p3.launch.kernel, &[1.0, 0.25], &p3.launch.params).unwrap();
        assert_eq!(y, 2.5);
        // x * x + x: the leaf is read once.
        let mul = BinaryOp::Mul.launch().unwrap();
        let sq = compose(&mul, "mul", &[Arg::Leaf("x", s(&[2])), Arg::Leaf("x", s(&[2]))], &s(&[2]), |a, b| a == b).unwrap();
        let sum = compose(&add, "add", &[Arg::Pending(&sq), Arg::Leaf("x", s(&[2]))], &s(&[2]), |a, b| a == b).unwrap();
        assert_eq!(sum.inputs(), 1);
        assert_eq!(eval_one::<f32>(&sum.launch.kernel, &[3.0], &[]).unwrap(), 12.0);
    }

    #[test]
    fn the_same_tensor_under_two_shapes_is_two_leaves() {
        let add = BinaryOp::Add.launch().unwrap();
        let p = compose(&add, "add", &[Arg::Leaf(1, s(&[2, 3])), Arg::Leaf(1, s(&[6]))], &s(&[2, 6]), |a, b| a == b);
        // [2, 3] does not broadcast to [2, 6]; composition does not check shapes (core's
        // infer_shape did), but it must keep the two readings apart.
        assert_eq!(p.unwrap().inputs(), 2);
    }
}
