//! What [`crate::block_eval::eval_prepared`] decides for every block, decided once per kernel and
//! per set of single-value inputs: which nodes are one value per block (parameters,
//! constants, single-value inputs and what is computed from them alone), which scalar
//! operations pair up, and where each vector operation reads and writes. A block then runs
//! the list of vector loops without looking at the nodes again.
//!
//! The CPU backend evaluates a fused kernel block by block, and on small feature maps a block
//! is one row of a few hundred values: walking the nodes per block (pairing tests, buffer
//! bookkeeping) cost about as much as the loops themselves. The operations and their order
//! are those of the walk, so the results are the same bits.

use pixelgrad_core::kernel::eval::{apply1, apply2, truth, Float};
use pixelgrad_core::kernel::ir::{Kernel, Lit, Node, Op1, Op2};

use crate::blocks::{map1, map2, map_pair, pairs_with, select_into, take, Operand, Scratch, Src};

/// A vector value: an input's elements, or a node's block buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Vec_ {
    In(usize),
    Buf(usize),
}

/// An operand: a vector value or a node's value for the whole block.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Arg {
    V(Vec_),
    S(usize),
}

/// Where a vector operation writes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Dst {
    Out,
    Buf(usize),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    /// `dst = op2(op1(x, s1), s2)` in one pass.
    Pair {
        x: Vec_,
        op1: Op2,
        s1: usize,
        op2: Op2,
        s2: usize,
        dst: Dst,
    },
    Map1 {
        op: Op1,
        a: Vec_,
        dst: Dst,
    },
    Map2 {
        op: Op2,
        a: Arg,
        b: Arg,
        dst: Dst,
    },
    Select {
        c: Vec_,
        a: Arg,
        b: Arg,
        dst: Dst,
    },
}

/// What a node is while the schedule is made.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Scalar,
    Vector(Vec_),
    /// Computed inside a pair with its one reader: never read on its own.
    Paired,
}

/// How the result gets into the output once the steps have run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Result_ {
    Written,
    Copy(Vec_),
    Fill(usize),
}

/// A kernel's schedule for one set of single-value inputs.
#[derive(Debug)]
pub struct Schedule {
    /// Per input: one value per block (`true`) or a slice.
    scalar_inputs: Vec<bool>,
    /// Nodes of one value per block, in order: computed first in every block.
    scalars: Vec<usize>,
    steps: Vec<Step>,
    result: Result_,
}

impl Schedule {
    /// The schedule of `kernel` (`uses`: readers per node, the result counting one) when
    /// input `j` is one value per block exactly where `scalar_inputs[j]`; `None` for a kernel
    /// whose blocks take different paths (a `select` on a single value between vectors picks
    /// one of them per block).
    pub fn new(kernel: &Kernel, uses: &[u32], scalar_inputs: &[bool]) -> Option<Schedule> {
        let nodes = kernel.nodes();
        if kernel.inputs().len() != scalar_inputs.len() || nodes.is_empty() {
            return None;
        }
        let last = nodes.len() - 1;
        let direct = kernel.out() as usize == last;
        let mut kinds: Vec<Kind> = Vec::with_capacity(nodes.len());
        let mut scalars = Vec::new();
        let mut steps = Vec::new();
        let mut written = false;
        // The reader of a pair and its value, once the pair is scheduled.
        let mut paired: Option<(usize, Kind)> = None;
        for (i, node) in nodes.iter().enumerate() {
            if let Some((j, k)) = paired {
                if j == i {
                    paired = None;
                    kinds.push(k);
                    if direct && i == last {
                        written = true;
                        break;
                    }
                    continue;
                }
            }
            let dst = if direct && i == last { Dst::Out } else { Dst::Buf(i) };
            let value = match dst {
                Dst::Out => Kind::Paired,
                Dst::Buf(b) => Kind::Vector(Vec_::Buf(b)),
            };
            if paired.is_none() {
                if let Some((x, op1, s1, op2, s2, j)) = pair(kernel, uses, &kinds, i, scalar_inputs) {
                    let (dst, value) =
                        if direct && j == last { (Dst::Out, Kind::Paired) } else { (Dst::Buf(j), Kind::Vector(Vec_::Buf(j))) };
                    steps.push(Step::Pair { x, op1, s1, op2, s2, dst });
                    kinds.push(Kind::Paired);
                    paired = Some((j, value));
                    continue;
                }
            }
            let arg = |k: Kind, n: usize| match k {
                Kind::Scalar => Some(Arg::S(n)),
                Kind::Vector(v) => Some(Arg::V(v)),
                Kind::Paired => None,
            };
            let kind = match *node {
                Node::Input(j) if scalar_inputs[j as usize] => Kind::Scalar,
                Node::Input(j) => Kind::Vector(Vec_::In(j as usize)),
                Node::Param(_) | Node::Const(_) => Kind::Scalar,
                Node::Op1(op, a) => match kinds[a as usize] {
                    Kind::Scalar => Kind::Scalar,
                    Kind::Vector(a) => {
                        steps.push(Step::Map1 { op, a, dst });
                        value
                    }
                    Kind::Paired => return None,
                },
                Node::Op2(op, a, b) => match (kinds[a as usize], kinds[b as usize]) {
                    (Kind::Scalar, Kind::Scalar) => Kind::Scalar,
                    (ka, kb) => {
                        steps.push(Step::Map2 { op, a: arg(ka, a as usize)?, b: arg(kb, b as usize)?, dst });
                        value
                    }
                },
                Node::Select(c, a, b) => match (kinds[c as usize], kinds[a as usize], kinds[b as usize]) {
                    (Kind::Scalar, Kind::Scalar, Kind::Scalar) => Kind::Scalar,
                    (Kind::Vector(c), ka, kb) => {
                        steps.push(Step::Select { c, a: arg(ka, a as usize)?, b: arg(kb, b as usize)?, dst });
                        value
                    }
                    _ => return None,
                },
                // Every value is held in the float type already (bools as 1 / 0).
                Node::Cast(_, a) => kinds[a as usize],
            };
            if kind == Kind::Scalar {
                scalars.push(i);
            }
            if dst == Dst::Out && kind == Kind::Paired {
                written = true;
                kinds.push(kind);
                break;
            }
            kinds.push(kind);
        }
        let out = kernel.out() as usize;
        let result = if written {
            Result_::Written
        } else {
            match kinds.get(out)? {
                Kind::Scalar => Result_::Fill(out),
                Kind::Vector(v) => Result_::Copy(*v),
                Kind::Paired => return None,
            }
        };
        Some(Schedule { scalar_inputs: scalar_inputs.to_vec(), scalars, steps, result })
    }

    /// True if `inputs` are single values exactly where this schedule was made for.
    pub fn fits<T>(&self, inputs: &[Src<'_, T>]) -> bool {
        inputs.len() == self.scalar_inputs.len()
            && inputs.iter().zip(&self.scalar_inputs).all(|(s, &one)| matches!(s, Src::Scalar(_)) == one)
    }

    /// Evaluates one block (the caller checked [`Schedule::fits`]).
    pub fn run<T: Float>(&self, kernel: &Kernel, inputs: &[Src<'_, T>], params: &[T], out: &mut [T], scratch: &mut Scratch<T>) {
        let n = out.len();
        let nodes = kernel.nodes();
        if scratch.bufs.len() < nodes.len() {
            scratch.bufs.resize_with(nodes.len(), Vec::new);
        }
        let mut sv = std::mem::take(&mut scratch.scalars);
        sv.resize(nodes.len(), T::ZERO);
        for &i in &self.scalars {
            sv[i] = match nodes[i] {
                Node::Input(j) => match inputs[j as usize] {
                    Src::Scalar(x) => x,
                    Src::Slice(_) => T::NAN,
                },
                Node::Param(j) => params[j as usize],
                Node::Const(l) => match l {
                    Lit::F32(bits) => T::from_f32(f32::from_bits(bits)),
                    Lit::Bool(b) => {
                        if b {
                            T::ONE
                        } else {
                            T::ZERO
                        }
                    }
                    Lit::I32(x) => T::from_f32(x as f32),
                },
                Node::Op1(op, a) => apply1(op, sv[a as usize]),
                Node::Op2(op, a, b) => apply2(op, sv[a as usize], sv[b as usize]),
                Node::Select(c, a, b) => {
                    if truth(sv[c as usize]) {
                        sv[a as usize]
                    } else {
                        sv[b as usize]
                    }
                }
                Node::Cast(_, a) => sv[a as usize],
            };
        }
        for step in &self.steps {
            let dst = match step {
                Step::Pair { dst, .. } | Step::Map1 { dst, .. } | Step::Map2 { dst, .. } | Step::Select { dst, .. } => *dst,
            };
            // The destination buffer is moved out of the scratch while the step reads the
            // others (a step never reads its own destination).
            let mut buf = match dst {
                Dst::Buf(b) => take(scratch, b, n),
                Dst::Out => Vec::new(),
            };
            {
                let target: &mut [T] = match dst {
                    Dst::Buf(_) => &mut buf,
                    Dst::Out => &mut *out,
                };
                let s: &Scratch<T> = scratch;
                let get = |v: Vec_| read(v, inputs, s, n);
                let opnd = |a: Arg| match a {
                    Arg::S(i) => Operand::One(sv[i]),
                    Arg::V(v) => Operand::Many(get(v)),
                };
                match *step {
                    Step::Pair { x, op1, s1, op2, s2, .. } => map_pair(op1, sv[s1], op2, sv[s2], get(x), target),
                    Step::Map1 { op, a, .. } => map1(op, get(a), target),
                    Step::Map2 { op, a, b, .. } => map2(op, opnd(a), opnd(b), target),
                    Step::Select { c, a, b, .. } => select_into(get(c), opnd(a), opnd(b), target),
                }
            }
            if let Dst::Buf(b) = dst {
                scratch.bufs[b] = buf;
            }
        }
        match self.result {
            Result_::Written => {}
            Result_::Fill(i) => out.fill(sv[i]),
            Result_::Copy(v) => out.copy_from_slice(read(v, inputs, scratch, n)),
        }
        scratch.scalars = sv;
    }
}

/// The `n` elements of a vector value.
fn read<'a, T: Float>(v: Vec_, inputs: &[Src<'a, T>], s: &'a Scratch<T>, n: usize) -> &'a [T] {
    match v {
        Vec_::In(j) => match inputs[j] {
            Src::Slice(x) => &x[..n],
            Src::Scalar(_) => &[],
        },
        Vec_::Buf(b) => &s.bufs[b][..n],
    }
}

/// Node `i` and its one reader `j` as a pair `(x, op1, s1, op2, s2, j)`, on the same
/// conditions as the walk's `pairable`: node `i` is `x op1 s` (or `s op1 x` for `+` and `*`)
/// on a vector, read once; its reader, past only leaves, is `_ op2 s'` the same way round.
fn pair(kernel: &Kernel, uses: &[u32], kinds: &[Kind], i: usize, scalar_inputs: &[bool]) -> Option<(Vec_, Op2, usize, Op2, usize, usize)> {
    let nodes = kernel.nodes();
    let Node::Op2(op1, a, b) = nodes[i] else { return None };
    if uses[i] != 1 || !pairs_with(op1) {
        return None;
    }
    let commutes = |op: Op2| matches!(op, Op2::Add | Op2::Mul);
    let (x, s1) = match (kinds[a as usize], kinds[b as usize]) {
        (Kind::Vector(x), Kind::Scalar) => (x, b as usize),
        (Kind::Scalar, Kind::Vector(x)) if commutes(op1) => (x, a as usize),
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
    // A value known for the whole block: computed before node i, or a leaf between i and j.
    let scalar = |v: usize| -> Option<usize> {
        let one = match kinds.get(v) {
            Some(k) => *k == Kind::Scalar,
            None => match nodes[v] {
                Node::Param(_) | Node::Const(Lit::F32(_)) => true,
                Node::Input(jj) => scalar_inputs[jj as usize],
                _ => false,
            },
        };
        one.then_some(v)
    };
    let s2 = if c as usize == i {
        scalar(d as usize)?
    } else if d as usize == i && commutes(op2) {
        scalar(c as usize)?
    } else {
        return None;
    };
    Some((x, op1, s1, op2, s2, j))
}

#[cfg(test)]
mod tests {
    use crate::block_eval::{eval_prepared, Prepared};
    use crate::blocks::{Scratch, Src};
    use pixelgrad_core::kernel::ir::{Builder, DType, Kernel};

    fn values(n: usize, k: f32) -> Vec<f32> {
        let edges = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 3.0, -3.0, 6.0];
        (0..n).map(|i| if i % 7 == 3 { edges[i % edges.len()] } else { ((i as f32 + 1.0) * k).sin() * 8.0 }).collect()
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect()
    }

    /// Every input as a slice or as one value, in every combination: the scheduled blocks give
    /// the node-by-node walk's bits (twice in a row, the scratch reused).
    fn same_as_the_walk(k: &Kernel, params: &[f32]) -> usize {
        let n_in = k.inputs().len();
        let rows: Vec<Vec<f32>> = (0..n_in).map(|j| values(37, 0.3 + j as f32)).collect();
        let mut scheduled = 0;
        for mask in 0..1u32 << n_in {
            let scalars: Vec<bool> = (0..n_in).map(|j| mask >> j & 1 == 1).collect();
            let srcs: Vec<Src<'_, f32>> =
                rows.iter().zip(&scalars).map(|(r, &one)| if one { Src::Scalar(r[5]) } else { Src::Slice(r) }).collect();
            let walk = Prepared::new(k);
            let fast = Prepared::with_scalars(k, &scalars);
            scheduled += fast.scheduled() as usize;
            let (mut a, mut b) = (vec![1.0f32; 37], vec![2.0f32; 37]);
            let (mut sa, mut sb) = (Scratch::default(), Scratch::default());
            for _ in 0..2 {
                eval_prepared(&walk, &srcs, params, &mut a, &mut sa);
                eval_prepared(&fast, &srcs, params, &mut b, &mut sb);
                assert_eq!(bits(&a), bits(&b), "inputs {scalars:?}:\n{k}");
            }
        }
        scheduled
    }

    #[test]
    fn scheduled_blocks_match_the_walk() {
        // bias + hard-swish, as the CPU runs it after a convolution
        let b = Builder::new(&[DType::F32, DType::F32], 6);
        let t = b.input(0) + b.input(1);
        let c = (t * b.param(0) + b.param(1)).max(b.param(2)).min(b.param(3));
        let k = b.finish(t * c * b.param(4) + b.param(5)).unwrap();
        assert_eq!(same_as_the_walk(&k, &[1.0, 3.0, 0.0, 6.0, 1.0 / 6.0, 0.0]), 4);

        // a comparison selecting between vectors, a cast, unary functions, a constant
        let b = Builder::new(&[DType::F32, DType::F32, DType::F32], 1);
        let (x, y, z) = (b.input(0), b.input(1), b.input(2));
        let m = x.lt(y);
        let k = b.finish(m.select(x.exp(), y.abs() - z) + m.cast(DType::F32) * b.param(0) + 2.5).unwrap();
        assert!(same_as_the_walk(&k, &[0.75]) > 0);

        // the result is an input, a single value, or not the last node
        for k in [
            {
                let b = Builder::new(&[DType::F32], 0);
                b.finish(b.input(0)).unwrap()
            },
            {
                let b = Builder::new(&[DType::F32], 1);
                b.finish(b.param(0) * 2.0).unwrap()
            },
            {
                let b = Builder::new(&[DType::F32], 1);
                let u = b.input(0) * b.param(0);
                let _unused = u + 1.0;
                b.finish(u).unwrap()
            },
        ] {
            same_as_the_walk(&k, &[-1.5]);
        }

        // a single-value condition between vectors picks per block: walked, never scheduled
        let b = Builder::new(&[DType::F32, DType::F32], 0);
        let (x, y) = (b.input(0), b.input(1));
        let k = b.finish(x.gt(0.0).select(y, y * 2.0)).unwrap();
        same_as_the_walk(&k, &[]);
        assert!(!Prepared::with_scalars(&k, &[true, false]).scheduled());
    }
}
