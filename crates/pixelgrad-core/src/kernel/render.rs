//! Rendering kernels as shader code. [`render`] lowers a kernel ([`super::lower`](mod@super::lower)) and writes
//! one statement per node; a [`Dialect`] supplies the spelling of every device primitive, type
//! and literal. The dialects live with their backends (WGSL in `pixelgrad-wgpu`, GLSL in
//! `pixelgrad-webgl`'s dialect module), and each is a table with one arm per primitive: a
//! missing primitive does not compile.

use super::ir::{DType, Kernel, Lit, Node};
use super::lower::{is_lowered, lower, Prim1, Prim2};
use crate::{Error, Result};

/// How one shading language spells the device primitives.
pub trait Dialect {
    /// The language's name, for errors.
    fn name(&self) -> &'static str;
    /// The type name of `t`, or `None` if the dialect has no such type (yet).
    fn ty(&self, t: DType) -> Option<&'static str>;
    /// A finite `f32` literal (negative values already in parentheses).
    fn float(&self, v: f32) -> String {
        let s = format!("{v:?}");
        if v.is_sign_negative() {
            format!("({s})")
        } else {
            s
        }
    }
    /// The `f32` with these bits when it is NaN or infinite (languages have no literal for
    /// them; WGSL even rejects them as constants, so this must be a run-time value).
    fn special_float(&self, bits: u32) -> String;
    fn boolean(&self, b: bool) -> String {
        b.to_string()
    }
    /// The value of input `i` at the current element.
    fn input(&self, i: usize) -> String;
    /// Scalar parameter `i`.
    fn param(&self, i: usize) -> String;
    fn prim1(&self, op: Prim1, a: &str) -> String;
    fn prim2(&self, op: Prim2, a: &str, b: &str) -> String;
    fn select(&self, c: &str, a: &str, b: &str) -> String;
    /// `a` (of type `from`) converted to `to`, or `None` if the dialect cannot.
    fn cast(&self, to: DType, from: DType, a: &str) -> Option<String>;
    /// A statement declaring `name` of type `ty` with `value`.
    fn declare(&self, ty: &str, name: &str, value: &str) -> String;
    /// The statement returning `value` from a function.
    fn ret(&self, value: &str) -> String {
        format!("    return {value};\n")
    }
    /// A function definition: `name` with parameters `args` (type, name), returning `ret`.
    fn function(&self, name: &str, args: &[(&str, String)], ret: &str, body: &str) -> String;
}

/// A rendered kernel body: statements, then the expression holding the result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    pub statements: String,
    pub result: String,
}

/// Renders `kernel` (lowering it first unless it is already lowered) in dialect `d`. Values
/// are named `v0`, `v1`, ... after their nodes; constants are written in place.
pub fn render(kernel: &Kernel, d: &dyn Dialect) -> Result<Body> {
    let lowered;
    let k = if is_lowered(kernel) {
        kernel
    } else {
        lowered = lower(kernel)?;
        &lowered
    };
    let unsupported = |what: String| Error::invalid(format!("{} kernel", d.name()), what);
    let mut names: Vec<String> = Vec::with_capacity(k.nodes().len());
    let mut statements = String::new();
    for (i, node) in k.nodes().iter().enumerate() {
        let name = |v: u16| names[v as usize].as_str();
        let value = match *node {
            Node::Const(Lit::F32(bits)) => {
                let v = f32::from_bits(bits);
                names.push(if v.is_finite() { d.float(v) } else { d.special_float(bits) });
                continue;
            }
            Node::Const(Lit::Bool(b)) => {
                names.push(d.boolean(b));
                continue;
            }
            Node::Const(Lit::I32(_)) => return Err(unsupported("i32 constants".into())),
            Node::Input(j) => d.input(j as usize),
            Node::Param(j) => d.param(j as usize),
            Node::Op1(op, a) => {
                let p = op.prim().ok_or_else(|| unsupported(format!("{op:?} was not lowered")))?;
                d.prim1(p, name(a))
            }
            Node::Op2(op, a, b) => {
                let p = op.prim().ok_or_else(|| unsupported(format!("{op:?} was not lowered")))?;
                d.prim2(p, name(a), name(b))
            }
            Node::Select(c, a, b) => d.select(name(c), name(a), name(b)),
            Node::Cast(t, a) => {
                let from = k.dtype(a);
                d.cast(t, from, name(a)).ok_or_else(|| unsupported(format!("conversion from {from} to {t}")))?
            }
        };
        let t = k.dtype(i as u16);
        let ty = d.ty(t).ok_or_else(|| unsupported(format!("type {t}")))?;
        let var = format!("v{i}");
        statements.push_str(&d.declare(ty, &var, &value));
        statements.push('\n');
        names.push(var);
    }
    Ok(Body { statements, result: names[k.out() as usize].clone() })
}

/// `kernel` as a function `name(a0, a1, ..)` of its inputs (see [`Dialect::input`]),
/// returning its result.
pub fn render_function(kernel: &Kernel, d: &dyn Dialect, name: &str) -> Result<String> {
    let body = render(kernel, d)?;
    let ty = |t: DType| d.ty(t).ok_or_else(|| Error::invalid(format!("{} kernel", d.name()), format!("type {t}")));
    let args = kernel.inputs().iter().enumerate().map(|(i, &t)| Ok((ty(t)?, d.input(i)))).collect::<Result<Vec<_>>>()?;
    let ret = ty(kernel.out_dtype())?;
    let code = format!("{}{}", body.statements, d.ret(&body.result));
    Ok(d.function(name, &args, ret, &code))
}
