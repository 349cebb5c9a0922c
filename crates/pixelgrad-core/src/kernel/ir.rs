//! The kernel IR: a kernel is a list of typed nodes in SSA form (each node reads only earlier
//! nodes), computing one output element from one element of each input plus scalar
//! parameters. Kernels know nothing about shapes or indexing: the backend that runs a kernel
//! reads input `i` at the output element's (broadcast) position and passes parameters as
//! uniforms, so one compiled kernel serves every shape and every parameter value.
//!
//! Kernels are written with a [`Builder`] whose values ([`E`]) support ordinary arithmetic
//! operators; identical nodes are shared (hash-consing), so writing `x.abs()` twice makes one
//! node. A finished [`Kernel`] is a plain value with `Eq + Hash`: backends cache compiled code
//! by it.

use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::fmt;
use std::ops;

pub use crate::dtype::DType;
use crate::{Error, Result};

/// Index of a node inside its kernel.
pub type V = u16;

/// A literal. Floats are kept as their bits so that nodes hash and compare exactly (NaN and
/// -0.0 included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lit {
    F32(u32),
    I32(i32),
    Bool(bool),
}

impl Lit {
    pub fn dtype(self) -> DType {
        match self {
            Lit::F32(_) => DType::F32,
            Lit::I32(_) => DType::I32,
            Lit::Bool(_) => DType::Bool,
        }
    }
}

/// Functions of one value.
///
/// The first group has exact IEEE-754 meaning on every input (what the CPU computes); GPU
/// renderers never see them directly: [`super::lower`](mod@super::lower) rewrites each into device primitives
/// with its edge cases spelled out. The `Raw` group are the device built-ins themselves,
/// trusted only on the domain given in their comment; they appear in lowered kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op1 {
    /// `-x` (flips the sign bit; exact everywhere).
    Neg,
    /// `|x|` (clears the sign bit; exact everywhere).
    Abs,
    /// Largest whole number `<= x`; NaN and infinities pass through.
    Floor,
    /// Nearest whole number, ties to even (IEEE roundTiesToEven); NaN, infinities, zeros
    /// (with their sign) and `|x| >= 2^23` (already whole) pass through.
    RoundEven,
    /// `e^x`; `+inf` on overflow, `0` for `-inf`.
    Exp,
    /// Natural log: `-inf` at `±0`, NaN below 0, `+inf` at `+inf`.
    Log,
    /// Square root: keeps `-0`, NaN below 0.
    Sqrt,
    /// Hyperbolic tangent, `±1` at `±inf`.
    Tanh,
    /// Sine; NaN at `±inf`.
    Sin,
    /// Cosine; NaN at `±inf`.
    Cos,
    /// `x` is NaN (bool).
    IsNan,
    /// `x` is `±inf` (bool).
    IsInf,
    /// The sign bit of `x` is set (`-0.0`, negative numbers, negative NaNs) (bool).
    SignBit,
    /// Logical not of a bool.
    Not,
    /// Device `exp`, for finite `x` in `[-104, 88.7]`.
    ExpRaw,
    /// Device `log`, for finite `x > 0`.
    LogRaw,
    /// Device `exp2`, for finite `x` in `[-150, 128]`.
    Exp2Raw,
    /// Device `log2`, for finite `x > 0`.
    Log2Raw,
    /// Device `sqrt`, for finite `x > 0`.
    SqrtRaw,
    /// Device `floor`, for finite `x`.
    FloorRaw,
}

/// Functions of two values.
///
/// As for [`Op1`]: the first group is exact IEEE-754 (comparisons are false when either side
/// is NaN), the `Raw` group are device built-ins for the domain in their comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op2 {
    Add,
    Sub,
    Mul,
    /// IEEE division: `±inf` for a nonzero over `±0`, NaN for `0/0` and `inf/inf`.
    Div,
    /// Larger of the two; NaN if either is NaN.
    Max,
    /// Smaller of the two; NaN if either is NaN.
    Min,
    /// `a^b` with C99/IEEE `pow` semantics (see [`super::lower`](mod@super::lower) for the table).
    Pow,
    /// `a < b` (bool).
    Lt,
    /// `a <= b` (bool).
    Le,
    /// `a == b` (bool; `-0 == 0`).
    Eq,
    /// Logical and of two bools.
    And,
    /// Logical or of two bools.
    Or,
    /// Device division, for finite `a` and finite nonzero `b` with `|b| < 2^126`.
    DivRaw,
    /// Device `max`, for non-NaN operands.
    MaxRaw,
    /// Device `min`, for non-NaN operands.
    MinRaw,
    /// Device `<`, for non-NaN operands.
    LtRaw,
    /// Device `<=`, for non-NaN operands.
    LeRaw,
    /// Device `==`, for non-NaN operands.
    EqRaw,
}

/// One node. Operands are indices of earlier nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// The element of input `i` at the position being computed.
    Input(u8),
    /// Scalar parameter `i` (an `f32` uniform).
    Param(u8),
    Const(Lit),
    Op1(Op1, V),
    Op2(Op2, V, V),
    /// `cond ? a : b` (`cond` is a bool). Both sides are computed; no branch.
    Select(V, V, V),
    /// Conversion to the given type (`bool` → `1.0` / `0.0`).
    Cast(DType, V),
}

/// A finished kernel: nodes, the type of each, the input types, the number of parameters and
/// the node that is the result.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    inputs: Vec<DType>,
    params: u8,
    nodes: Vec<Node>,
    types: Vec<DType>,
    out: V,
}

impl Kernel {
    pub fn inputs(&self) -> &[DType] {
        &self.inputs
    }
    /// Number of scalar parameters.
    pub fn params(&self) -> usize {
        self.params as usize
    }
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }
    /// Type of node `v`.
    pub fn dtype(&self, v: V) -> DType {
        self.types[v as usize]
    }
    /// The result node.
    pub fn out(&self) -> V {
        self.out
    }
    /// Type of the result.
    pub fn out_dtype(&self) -> DType {
        self.types[self.out as usize]
    }
    /// True if no node is a `Raw` device built-in.
    pub fn is_semantic(&self) -> bool {
        self.nodes.iter().all(|n| match n {
            Node::Op1(o, _) => !o.is_raw(),
            Node::Op2(o, _, _) => !o.is_raw(),
            _ => true,
        })
    }
}

impl Kernel {
    /// Adds this kernel's nodes to `b`, reading `inputs[i]` wherever it reads input `i` and
    /// parameter `param_base + j` wherever it reads parameter `j`; returns its result in `b`.
    /// This is how kernels compose: the result can feed another kernel's input.
    pub fn inline_into<'a>(&self, b: &'a Builder, inputs: &[E<'a>], param_base: usize) -> E<'a> {
        let mut map: Vec<E<'a>> = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let v = |i: V| map[i as usize].v;
            let e = match *node {
                Node::Input(i) => match inputs.get(i as usize) {
                    Some(&e) => e,
                    None => {
                        b.fail(format!("inlining needs input {i}, given {}", inputs.len()));
                        b.f32(0.0)
                    }
                },
                Node::Param(j) => b.param(param_base + j as usize),
                Node::Const(l) => b.push(Node::Const(l)),
                Node::Op1(op, a) => b.push(Node::Op1(op, v(a))),
                Node::Op2(op, x, y) => b.push(Node::Op2(op, v(x), v(y))),
                Node::Select(c, x, y) => b.push(Node::Select(v(c), v(x), v(y))),
                Node::Cast(t, a) => b.push(Node::Cast(t, v(a))),
            };
            map.push(e);
        }
        map[self.out as usize]
    }
}

impl fmt::Display for Kernel {
    /// One node per line, e.g. `v2: f32 = Mul(v0, v1)`: the form logged at trace level and
    /// printed by tests that fail.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.nodes.iter().enumerate() {
            writeln!(f, "v{i}: {} = {n:?}", self.types[i])?;
        }
        write!(f, "out v{}", self.out)
    }
}

impl Op1 {
    /// A device built-in with a restricted domain (appears only in lowered kernels).
    pub fn is_raw(self) -> bool {
        matches!(self, Op1::ExpRaw | Op1::LogRaw | Op1::Exp2Raw | Op1::Log2Raw | Op1::SqrtRaw | Op1::FloorRaw)
    }
}

impl Op2 {
    /// A device built-in with a restricted domain (appears only in lowered kernels).
    pub fn is_raw(self) -> bool {
        matches!(self, Op2::DivRaw | Op2::MaxRaw | Op2::MinRaw | Op2::LtRaw | Op2::LeRaw | Op2::EqRaw)
    }
}

struct State {
    inputs: Vec<DType>,
    params: u8,
    nodes: Vec<Node>,
    types: Vec<DType>,
    /// Hash-consing of nodes (FxHash: kernels are rebuilt for every fused op, where the
    /// default SipHash showed up in profiles).
    memo: FxHashMap<Node, V>,
    error: Option<String>,
}

/// Builds a [`Kernel`]. Values are [`E`] handles borrowed from the builder; type errors are
/// recorded and reported by [`Builder::finish`].
pub struct Builder {
    st: RefCell<State>,
}

/// A value being built: a node of a [`Builder`].
#[derive(Clone, Copy)]
pub struct E<'a> {
    b: &'a Builder,
    v: V,
}

impl fmt::Debug for E<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.v)
    }
}

/// Most nodes a kernel may have (node indices are `u16`).
pub const MAX_NODES: usize = u16::MAX as usize;

impl Builder {
    /// A builder for a kernel of inputs of the given types and `params` scalar parameters.
    pub fn new(inputs: &[DType], params: usize) -> Self {
        Self::with_capacity(inputs, params, 0)
    }

    /// [`Builder::new`] with room for `nodes` nodes before anything grows (fusion composes a
    /// kernel per deferred op and knows about how many nodes it will push).
    pub fn with_capacity(inputs: &[DType], params: usize, nodes: usize) -> Self {
        let mut memo = FxHashMap::default();
        memo.reserve(nodes);
        let st = State {
            inputs: inputs.to_vec(),
            params: params.min(u8::MAX as usize) as u8,
            nodes: Vec::with_capacity(nodes),
            types: Vec::with_capacity(nodes),
            memo,
            error: (params > u8::MAX as usize || inputs.len() > u8::MAX as usize)
                .then(|| format!("{} inputs and {params} parameters: at most 255 of each", inputs.len())),
        };
        Builder { st: RefCell::new(st) }
    }

    fn fail(&self, msg: String) {
        let mut st = self.st.borrow_mut();
        if st.error.is_none() {
            st.error = Some(msg);
        }
    }

    fn ty(&self, v: V) -> DType {
        self.st.borrow().types[v as usize]
    }

    /// Adds `node` (or finds the identical node already there).
    fn push(&self, node: Node) -> E<'_> {
        let t = match self.type_of(&node) {
            Ok(t) => t,
            Err(msg) => {
                self.fail(format!("{node:?}: {msg}"));
                DType::F32
            }
        };
        let mut st = self.st.borrow_mut();
        if let Some(&v) = st.memo.get(&node) {
            return E { b: self, v };
        }
        if st.nodes.len() >= MAX_NODES {
            drop(st);
            self.fail(format!("more than {MAX_NODES} nodes"));
            return E { b: self, v: 0 };
        }
        let v = st.nodes.len() as V;
        st.nodes.push(node);
        st.types.push(t);
        st.memo.insert(node, v);
        E { b: self, v }
    }

    fn type_of(&self, node: &Node) -> std::result::Result<DType, String> {
        let st = self.st.borrow();
        let ty = |v: V| st.types[v as usize];
        match *node {
            Node::Input(i) => st.inputs.get(i as usize).copied().ok_or_else(|| format!("no input {i}")),
            Node::Param(i) => {
                if i < st.params {
                    Ok(DType::F32)
                } else {
                    Err(format!("no parameter {i}"))
                }
            }
            Node::Const(l) => Ok(l.dtype()),
            // Exhaustive on purpose: a new function must say what it takes and gives.
            Node::Op1(op, a) => {
                let t = ty(a);
                let ok = match op {
                    Op1::Not => t == DType::Bool,
                    Op1::Neg | Op1::Abs => t.is_float() || t == DType::I32,
                    Op1::IsNan
                    | Op1::IsInf
                    | Op1::SignBit
                    | Op1::Floor
                    | Op1::RoundEven
                    | Op1::Exp
                    | Op1::Log
                    | Op1::Sqrt
                    | Op1::Tanh
                    | Op1::Sin
                    | Op1::Cos
                    | Op1::ExpRaw
                    | Op1::LogRaw
                    | Op1::Exp2Raw
                    | Op1::Log2Raw
                    | Op1::SqrtRaw
                    | Op1::FloorRaw => t.is_float(),
                };
                if !ok {
                    return Err(format!("{op:?} of a {t}"));
                }
                Ok(match op {
                    Op1::IsNan | Op1::IsInf | Op1::SignBit => DType::Bool,
                    _ => t,
                })
            }
            Node::Op2(op, a, b) => {
                let (ta, tb) = (ty(a), ty(b));
                if ta != tb {
                    return Err(format!("{op:?} of a {ta} and a {tb}"));
                }
                let numeric = ta.is_float() || ta == DType::I32;
                let (ok, out) = match op {
                    Op2::And | Op2::Or => (ta == DType::Bool, DType::Bool),
                    Op2::Lt | Op2::Le | Op2::Eq | Op2::LtRaw | Op2::LeRaw | Op2::EqRaw => (numeric, DType::Bool),
                    Op2::Add | Op2::Sub | Op2::Mul | Op2::Max | Op2::Min | Op2::MaxRaw | Op2::MinRaw => (numeric, ta),
                    Op2::Div | Op2::Pow | Op2::DivRaw => (ta.is_float(), ta),
                };
                if ok {
                    Ok(out)
                } else {
                    Err(format!("{op:?} of {ta}s"))
                }
            }
            Node::Select(c, a, b) => {
                if ty(c) != DType::Bool {
                    Err(format!("select on a {} condition", ty(c)))
                } else if ty(a) != ty(b) {
                    Err(format!("select between a {} and a {}", ty(a), ty(b)))
                } else {
                    Ok(ty(a))
                }
            }
            Node::Cast(t, a) => match (ty(a), t) {
                (DType::I8 | DType::U8, _) => Err(format!("cast from storage type {}", ty(a))),
                (_, DType::I8 | DType::U8 | DType::Bool) => Err(format!("cast to {t}")),
                _ => Ok(t),
            },
        }
    }

    /// Input `i` (its type is the one given to [`Builder::new`]).
    pub fn input(&self, i: usize) -> E<'_> {
        self.push(Node::Input(i.min(u8::MAX as usize) as u8))
    }
    /// Scalar parameter `i`.
    pub fn param(&self, i: usize) -> E<'_> {
        self.push(Node::Param(i.min(u8::MAX as usize) as u8))
    }
    /// An `f32` constant (any value, NaN and infinities included).
    pub fn f32(&self, v: f32) -> E<'_> {
        self.push(Node::Const(Lit::F32(v.to_bits())))
    }
    pub fn bool(&self, v: bool) -> E<'_> {
        self.push(Node::Const(Lit::Bool(v)))
    }

    /// The kernel whose result is `out`, or the first type error met while building it.
    /// The builder is left empty.
    pub fn finish(&self, out: E<'_>) -> Result<Kernel> {
        let out = out.v;
        let mut st = self.st.borrow_mut();
        if let Some(msg) = st.error.take() {
            return Err(Error::invalid("kernel", msg));
        }
        if st.nodes.is_empty() {
            return Err(Error::invalid("kernel", "no nodes"));
        }
        st.memo.clear();
        Ok(Kernel {
            inputs: std::mem::take(&mut st.inputs),
            params: st.params,
            nodes: std::mem::take(&mut st.nodes),
            types: std::mem::take(&mut st.types),
            out,
        })
    }
}

/// Something that becomes a value of a builder: an [`E`] or an `f32` constant.
pub trait IntoE<'a> {
    fn into_e(self, b: &'a Builder) -> E<'a>;
}

impl<'a> IntoE<'a> for E<'a> {
    fn into_e(self, _: &'a Builder) -> E<'a> {
        self
    }
}

impl<'a> IntoE<'a> for f32 {
    fn into_e(self, b: &'a Builder) -> E<'a> {
        b.f32(self)
    }
}

impl<'a> E<'a> {
    /// The node index of this value.
    pub fn id(self) -> V {
        self.v
    }
    pub fn dtype(self) -> DType {
        self.b.ty(self.v)
    }
    /// An `f32` constant of the same builder.
    pub fn lit(self, v: f32) -> E<'a> {
        self.b.f32(v)
    }
    fn op1(self, op: Op1) -> E<'a> {
        self.b.push(Node::Op1(op, self.v))
    }
    fn op2(self, op: Op2, o: impl IntoE<'a>) -> E<'a> {
        let o = o.into_e(self.b);
        self.b.push(Node::Op2(op, self.v, o.v))
    }

    pub fn abs(self) -> E<'a> {
        self.op1(Op1::Abs)
    }
    pub fn floor(self) -> E<'a> {
        self.op1(Op1::Floor)
    }
    pub fn round_even(self) -> E<'a> {
        self.op1(Op1::RoundEven)
    }
    pub fn exp(self) -> E<'a> {
        self.op1(Op1::Exp)
    }
    pub fn log(self) -> E<'a> {
        self.op1(Op1::Log)
    }
    pub fn sqrt(self) -> E<'a> {
        self.op1(Op1::Sqrt)
    }
    pub fn tanh(self) -> E<'a> {
        self.op1(Op1::Tanh)
    }
    pub fn sin(self) -> E<'a> {
        self.op1(Op1::Sin)
    }
    pub fn cos(self) -> E<'a> {
        self.op1(Op1::Cos)
    }
    pub fn is_nan(self) -> E<'a> {
        self.op1(Op1::IsNan)
    }
    pub fn is_inf(self) -> E<'a> {
        self.op1(Op1::IsInf)
    }
    pub fn sign_bit(self) -> E<'a> {
        self.op1(Op1::SignBit)
    }
    #[allow(clippy::should_implement_trait)] // on bools only; `!` would suggest any type
    pub fn not(self) -> E<'a> {
        self.op1(Op1::Not)
    }
    pub fn exp_raw(self) -> E<'a> {
        self.op1(Op1::ExpRaw)
    }
    pub fn log_raw(self) -> E<'a> {
        self.op1(Op1::LogRaw)
    }
    pub fn exp2_raw(self) -> E<'a> {
        self.op1(Op1::Exp2Raw)
    }
    pub fn log2_raw(self) -> E<'a> {
        self.op1(Op1::Log2Raw)
    }
    pub fn sqrt_raw(self) -> E<'a> {
        self.op1(Op1::SqrtRaw)
    }
    pub fn floor_raw(self) -> E<'a> {
        self.op1(Op1::FloorRaw)
    }

    pub fn max(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::Max, o)
    }
    pub fn min(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::Min, o)
    }
    pub fn pow(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::Pow, o)
    }
    pub fn lt(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::Lt, o)
    }
    pub fn le(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::Le, o)
    }
    /// `self > o`, written as `o < self`.
    pub fn gt(self, o: impl IntoE<'a>) -> E<'a> {
        let o = o.into_e(self.b);
        o.lt(self)
    }
    /// `self >= o`, written as `o <= self`.
    pub fn ge(self, o: impl IntoE<'a>) -> E<'a> {
        let o = o.into_e(self.b);
        o.le(self)
    }
    pub fn eq(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::Eq, o)
    }
    pub fn and(self, o: E<'a>) -> E<'a> {
        self.op2(Op2::And, o)
    }
    pub fn or(self, o: E<'a>) -> E<'a> {
        self.op2(Op2::Or, o)
    }
    pub fn div_raw(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::DivRaw, o)
    }
    pub fn max_raw(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::MaxRaw, o)
    }
    pub fn min_raw(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::MinRaw, o)
    }
    pub fn lt_raw(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::LtRaw, o)
    }
    pub fn le_raw(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::LeRaw, o)
    }
    /// `self > o` on the device, for non-NaN operands.
    pub fn gt_raw(self, o: impl IntoE<'a>) -> E<'a> {
        let o = o.into_e(self.b);
        o.lt_raw(self)
    }
    /// `self >= o` on the device, for non-NaN operands.
    pub fn ge_raw(self, o: impl IntoE<'a>) -> E<'a> {
        let o = o.into_e(self.b);
        o.le_raw(self)
    }
    pub fn eq_raw(self, o: impl IntoE<'a>) -> E<'a> {
        self.op2(Op2::EqRaw, o)
    }

    /// `self ? a : b` for a bool `self`.
    pub fn select(self, a: impl IntoE<'a>, b: impl IntoE<'a>) -> E<'a> {
        let (a, b) = (a.into_e(self.b), b.into_e(self.b));
        self.b.push(Node::Select(self.v, a.v, b.v))
    }
    /// Conversion to `t` (a bool becomes `1.0` or `0.0`).
    pub fn cast(self, t: DType) -> E<'a> {
        self.b.push(Node::Cast(t, self.v))
    }
}

macro_rules! binary_operator {
    ($trait:ident, $method:ident, $op:expr) => {
        impl<'a> ops::$trait<E<'a>> for E<'a> {
            type Output = E<'a>;
            fn $method(self, o: E<'a>) -> E<'a> {
                self.op2($op, o)
            }
        }
        impl<'a> ops::$trait<f32> for E<'a> {
            type Output = E<'a>;
            fn $method(self, o: f32) -> E<'a> {
                self.op2($op, o)
            }
        }
        impl<'a> ops::$trait<E<'a>> for f32 {
            type Output = E<'a>;
            fn $method(self, o: E<'a>) -> E<'a> {
                o.b.f32(self).op2($op, o)
            }
        }
    };
}

binary_operator!(Add, add, Op2::Add);
binary_operator!(Sub, sub, Op2::Sub);
binary_operator!(Mul, mul, Op2::Mul);
binary_operator!(Div, div, Op2::Div);

impl<'a> ops::Neg for E<'a> {
    type Output = E<'a>;
    fn neg(self) -> E<'a> {
        self.op1(Op1::Neg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_nodes_are_shared() {
        let b = Builder::new(&[DType::F32], 0);
        let x = b.input(0);
        let y = x.abs() + x.abs();
        let k = b.finish(y).unwrap();
        // input, abs, add
        assert_eq!(k.nodes().len(), 3);
        assert_eq!(k.out_dtype(), DType::F32);
    }

    #[test]
    fn type_errors_are_reported() {
        let b = Builder::new(&[DType::F32], 1);
        let x = b.input(0);
        let bad = x.lt(1.0) + x; // bool + f32
        let e = b.finish(bad).unwrap_err();
        assert!(e.to_string().contains("Add of a bool and a f32"), "{e}");

        let b = Builder::new(&[DType::F32], 0);
        let p = b.param(0);
        assert!(b.finish(p).unwrap_err().to_string().contains("no parameter 0"));
    }

    #[test]
    fn kernels_compare_by_structure() {
        let make = |c: f32| {
            let b = Builder::new(&[DType::F32], 1);
            let x = b.input(0);
            b.finish(x * b.param(0) + c).unwrap()
        };
        assert_eq!(make(1.0), make(1.0));
        assert_ne!(make(1.0), make(2.0));
        assert!(make(1.0).is_semantic());
    }
}
