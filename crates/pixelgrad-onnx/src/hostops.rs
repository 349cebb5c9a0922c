//! Operators evaluated on the host when all their inputs are host tensors: constant folding at
//! load time, and the shape arithmetic that depends on input sizes at run time (`Shape` →
//! `Gather` → `Concat` → `Reshape`). The device never sees these.

use crate::graph::Node;
use crate::host::{checked_numel, wrap_int, DType, Data, HostTensor};
use crate::shapes::{
    broadcast, flatten_axis, norm_axis, reshape_target, slice_plan, squeeze_dims, strides, transpose_perm, unsqueeze_dims,
};
use crate::{OnnxError, Result};

/// Largest result (elements) an elementwise or broadcasting host op may produce (and
/// `ConstantOfShape` may fill); larger ones are left to the device, where the device's element
/// cap applies. Results no larger than their inputs (Cast, Identity, Reshape, Slice...) fold
/// at any size.
const FOLD_LIMIT: usize = 1 << 16;

/// How large a result host evaluation may make: the device's element cap at run time, what
/// is left of the folding budget at load. A result that can be larger than the node's inputs
/// (`Concat` of one input many times, `Range`) is sized, with checked arithmetic, and compared
/// with it before anything is allocated.
#[derive(Clone, Copy, Debug)]
pub struct Cap {
    pub max_elements: usize,
    /// Folding constants at load: a result over the cap leaves the node to run time
    /// (`Ok(None)`); at run time it is an [`pixelgrad_core::Error::Budget`].
    pub folding: bool,
}

impl Cap {
    pub fn folding(max_elements: usize) -> Cap {
        Cap { max_elements, folding: true }
    }
    pub fn run(max_elements: usize) -> Cap {
        Cap { max_elements, folding: false }
    }
    /// Whether a result of `n` elements (`None`: more than `usize` holds) may be made.
    fn admit(&self, node: &Node, n: Option<usize>) -> Result<bool> {
        match n {
            Some(n) if n <= self.max_elements => Ok(true),
            _ if self.folding => Ok(false),
            _ => Err(over_cap(node, n, self.max_elements)),
        }
    }
}

/// The budget error of a host result of `n` elements over `limit`.
pub fn over_cap(node: &Node, n: Option<usize>, limit: usize) -> OnnxError {
    OnnxError::Engine {
        context: node.context(),
        source: pixelgrad_core::Error::Budget {
            op: "host evaluation",
            backend: "host".into(),
            what: "elements in one result",
            requested: n.map_or(u64::MAX, |n| n as u64),
            limit: limit as u64,
            raise: "Device::set_limits (max_elements); in JS, init({ limits: { maxElements } })",
        },
    }
}

/// Evaluates `node` on host inputs (`None` for absent optional inputs). `Ok(None)`: this
/// operator is not evaluated on the host (it runs on the device), or, while folding, its
/// result would not fit `cap`.
/// Elementwise and reduction folding only on small tensors (shape arithmetic, scalars).
fn small(ins: &[Option<&HostTensor>]) -> bool {
    ins.iter().flatten().all(|t| t.numel() <= FOLD_LIMIT)
}

/// `Constant` on host values.
pub(crate) fn host_constant(node: &Node, _ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let one = |t: HostTensor| Ok(Some(vec![t]));
    one(constant(node)?)
}

/// `Identity`, `Dropout` on host values.
pub(crate) fn host_identity(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    if !(node.outputs.iter().skip(1).all(|o| o.is_empty())) {
        return Ok(None);
    }
    one(get(0)?.clone())
}

/// `Cast` on host values.
pub(crate) fn host_cast(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    let to = DType::from_onnx(node.int("to", 0)? as i32, &format!("Cast node '{}'", node.name))?;
    one(get(0)?.cast(to))
}

/// `CastLike` on host values.
pub(crate) fn host_cast_like(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    one(get(0)?.cast(get(1)?.dtype))
}

/// `Shape` on host values.
pub(crate) fn host_shape(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    let x = get(0)?;
    one(shape_of(node, &x.shape)?)
}

/// `Size` on host values.
pub(crate) fn host_size(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    one(HostTensor::i64(vec![], vec![get(0)?.numel() as i64]))
}

/// `ConstantOfShape` on host values.
pub(crate) fn host_constant_of_shape(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    let dims = to_dims(node, get(0)?)?;
    let Some(n) = checked_numel(&dims).filter(|&n| n <= FOLD_LIMIT) else {
        // Large: made on the device, under the device's element cap.
        return Ok(None);
    };
    let t = match node.tensor_attr("value")? {
        None => HostTensor::f32(dims, vec![0.0; n]),
        Some(v) => {
            if v.numel() != 1 {
                return Err(node.err("attribute 'value' must hold one element"));
            }
            match &v.data {
                Data::F32(x) => HostTensor { dtype: v.dtype, shape: dims, data: Data::F32(vec![x.first().copied().unwrap_or(0.0); n]) },
                Data::I64(x) => HostTensor { dtype: v.dtype, shape: dims, data: Data::I64(vec![x.first().copied().unwrap_or(0); n]) },
            }
        }
    };
    one(t)
}

/// `Reshape` on host values.
pub(crate) fn host_reshape(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    let x = get(0)?;
    let target = get(1)?.to_i64("Reshape shape")?;
    let dims = reshape_target(node, &x.shape, &target, node.int("allowzero", 0)? != 0)?;
    one(HostTensor { shape: dims, ..x.clone() })
}

/// `Flatten` on host values.
pub(crate) fn host_flatten(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    let x = get(0)?;
    let a = flatten_axis(node, node.int("axis", 1)?, x.rank())?;
    let outer: usize = x.shape[..a].iter().product();
    one(HostTensor { shape: vec![outer, x.numel() / outer.max(1)], ..x.clone() })
}

/// `Unsqueeze` on host values.
pub(crate) fn host_unsqueeze(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    let x = get(0)?;
    let axes = axes_arg(node, ins, 1)?.ok_or_else(|| node.err("needs axes"))?;
    one(HostTensor { shape: unsqueeze_dims(node, &x.shape, &axes)?, ..x.clone() })
}

/// `Squeeze` on host values.
pub(crate) fn host_squeeze(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    let x = get(0)?;
    let axes = axes_arg(node, ins, 1)?;
    one(HostTensor { shape: squeeze_dims(node, &x.shape, axes.as_deref())?, ..x.clone() })
}

/// `Concat` on host values.
pub(crate) fn host_concat(node: &Node, ins: &[Option<&HostTensor>], cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let one = |t: HostTensor| Ok(Some(vec![t]));
    let parts: Vec<&HostTensor> = ins.iter().flatten().copied().collect();
    // one input named many times makes a result many times its size
    let n = parts.iter().try_fold(0usize, |a, p| a.checked_add(p.numel()));
    if !cap.admit(node, n)? {
        return Ok(None);
    }
    one(concat(node, &parts)?)
}

/// `Gather` on host values.
pub(crate) fn host_gather(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    let (x, idx) = (get(0)?, get(1)?);
    let axis = norm_axis(node, node.int("axis", 0)?, x.rank())?;
    let rest: usize = x.shape.iter().enumerate().filter(|&(a, _)| a != axis).map(|(_, &d)| d).product();
    if idx.numel().saturating_mul(rest) > FOLD_LIMIT.max(x.numel()) {
        return Ok(None);
    }
    let mut shape = x.shape.get(..axis).unwrap_or_default().to_vec();
    shape.extend_from_slice(&idx.shape);
    shape.extend_from_slice(x.shape.get(axis + 1..).unwrap_or_default());
    if checked_numel(&shape).is_none() {
        return Err(node.err(format!("result shape {shape:?} is too large")));
    }
    one(gather(node, x, idx)?)
}

/// `Slice` on host values.
pub(crate) fn host_slice(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let one = |t: HostTensor| Ok(Some(vec![t]));
    one(slice(node, ins)?)
}

/// `Transpose` on host values.
pub(crate) fn host_transpose(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    if !small(ins) {
        return Ok(None);
    }
    one(transpose(node, get(0)?)?)
}

/// `Expand` on host values.
pub(crate) fn host_expand(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    if !small(ins) {
        return Ok(None);
    }
    let x = get(0)?;
    let target = to_dims_i(node, get(1)?)?;
    let Some(out) = small_broadcast(node, &[&x.shape, &target])? else { return Ok(None) };
    one(map_broadcast(x, &out, x.dtype))
}

/// `Range` on host values.
pub(crate) fn host_range(node: &Node, ins: &[Option<&HostTensor>], cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    if !small(ins) {
        return Ok(None);
    }
    let (s, l, d) = (get(0)?, get(1)?, get(2)?);
    if [s, l, d].iter().any(|t| t.numel() != 1) {
        return Err(node.err("start, limit and delta must be scalars (one element each)"));
    }
    let first = |t: &HostTensor| t.to_f64().first().copied().unwrap_or(0.0);
    let (s0, l0, d0) = (first(s), first(l), first(d));
    if d0 == 0.0 {
        return Err(node.err("delta is 0"));
    }
    let count = ((l0 - s0) / d0).ceil().max(0.0);
    if !count.is_finite() {
        return Err(node.err(format!("start {s0}, limit {l0} and delta {d0} give no finite length")));
    }
    // Range runs on the host only: a large one is refused here, before allocating
    let n = (count < usize::MAX as f64).then_some(count as usize);
    if cap.folding && n.is_none_or(|n| n > FOLD_LIMIT) || !cap.admit(node, n)? {
        return Ok(None);
    }
    let n = n.unwrap_or(0);
    let v: Vec<f64> = (0..n).map(|i| s0 + i as f64 * d0).collect();
    one(from_f64(s.dtype, vec![n], v))
}

/// `Add`, `Sub`, `Mul`, `Div`, `Pow`, `Max`, `Min`, `Equal`, `Less`, `Greater`, `LessOrEqual`, `GreaterOrEqual`, `And`, `Or`, `Mod` on host values.
pub(crate) fn host_binary(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    let op = node.op_type.as_str();
    if !small(ins) {
        return Ok(None);
    }
    if (op == "Max" || op == "Min") && ins.len() != 2 {
        return Ok(None);
    }
    let (a, b) = (get(0)?, get(1)?);
    if small_broadcast(node, &[&a.shape, &b.shape])?.is_none() {
        return Ok(None);
    }
    one(binary(node, a, b)?)
}

/// `Neg`, `Abs`, `Floor`, `Ceil`, `Sqrt`, `Not`, `Reciprocal`, `Relu`, `Sign`, `Round` on host values.
pub(crate) fn host_unary(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    if !small(ins) {
        return Ok(None);
    }
    one(unary(node, get(0)?)?)
}

/// `Where` on host values.
pub(crate) fn host_where(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let get = |i: usize| -> Result<&HostTensor> { ins.get(i).copied().flatten().ok_or_else(|| node.err(format!("input {i} is missing"))) };
    let one = |t: HostTensor| Ok(Some(vec![t]));
    if !small(ins) {
        return Ok(None);
    }
    let (c, a, b) = (get(0)?, get(1)?, get(2)?);
    let Some(out) = small_broadcast(node, &[&c.shape, &a.shape, &b.shape])? else { return Ok(None) };
    let (cv, av, bv) = (expand_f64(c, &out), expand_f64(a, &out), expand_f64(b, &out));
    let v = (0..cv.len()).map(|i| if cv[i] != 0.0 { av[i] } else { bv[i] }).collect();
    one(from_f64(a.dtype, out, v))
}

/// `ReduceProd`, `ReduceSum`, `ReduceMax`, `ReduceMin`, `ReduceMean` on host values.
pub(crate) fn host_reduce(node: &Node, ins: &[Option<&HostTensor>], _cap: Cap) -> Result<Option<Vec<HostTensor>>> {
    let one = |t: HostTensor| Ok(Some(vec![t]));
    if !small(ins) {
        return Ok(None);
    }
    match reduce(node, ins)? {
        Some(t) => one(t),
        None => Ok(None),
    }
}

/// The broadcast of `shapes` when folding it on the host stays small (at most `FOLD_LIMIT`
/// elements, as small inputs can broadcast to a huge result); `None` sends the node to the
/// device, where the device's element cap applies.
fn small_broadcast(node: &Node, shapes: &[&[usize]]) -> Result<Option<Vec<usize>>> {
    let out = broadcast(node, shapes)?;
    Ok(checked_numel(&out).filter(|&n| n <= FOLD_LIMIT).map(|_| out))
}

/// The value of a `Constant` node.
pub fn constant(node: &Node) -> Result<HostTensor> {
    if let Some(t) = node.tensor_attr("value")? {
        return Ok(t.clone());
    }
    if node.has("value_float") {
        return Ok(HostTensor::f32(vec![], vec![node.float("value_float", 0.0)?]));
    }
    if let Some(v) = node.floats("value_floats")? {
        return Ok(HostTensor::f32(vec![v.len()], v));
    }
    if node.has("value_int") {
        return Ok(HostTensor::i64(vec![], vec![node.int("value_int", 0)?]));
    }
    if let Some(v) = node.ints("value_ints")? {
        return Ok(HostTensor::i64(vec![v.len()], v));
    }
    Err(node.err("only tensor, float(s) and int(s) values are supported (sparse and string constants are not)"))
}

/// `Shape` with the opset-15 `start`/`end` attributes.
pub fn shape_of(node: &Node, dims: &[usize]) -> Result<HostTensor> {
    let r = dims.len() as i64;
    let clamp = |v: i64| if v < 0 { (v + r).max(0) } else { v.min(r) } as usize;
    let s = clamp(node.int("start", 0)?);
    let e = clamp(node.int("end", r)?);
    let v: Vec<i64> = if s < e { dims[s..e].iter().map(|&d| d as i64).collect() } else { vec![] };
    Ok(HostTensor::i64(vec![v.len()], v))
}

/// Axes given as an attribute (older opsets) or as input `i` (opset 13+ for Squeeze/Unsqueeze,
/// 18+ for reductions).
pub fn axes_arg(node: &Node, ins: &[Option<&HostTensor>], i: usize) -> Result<Option<Vec<i64>>> {
    if let Some(a) = node.ints("axes")? {
        return Ok(Some(a));
    }
    match ins.get(i).copied().flatten() {
        Some(t) => Ok(Some(t.to_i64("axes")?)),
        None => Ok(None),
    }
}

/// A shape tensor's values as sizes: no negatives, none that `usize` cannot hold (wasm32).
pub fn to_dims(node: &Node, t: &HostTensor) -> Result<Vec<usize>> {
    t.to_i64("shape")?
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| node.err(format!("size {d} in a shape is negative or too large"))))
        .collect()
}

fn to_dims_i(node: &Node, t: &HostTensor) -> Result<Vec<usize>> {
    to_dims(node, t)
}

pub(crate) fn from_f64(dtype: DType, shape: Vec<usize>, v: Vec<f64>) -> HostTensor {
    if dtype.is_float() {
        HostTensor { dtype, shape, data: Data::F32(v.into_iter().map(|x| x as f32).collect()) }
    } else {
        HostTensor { dtype, shape, data: Data::I64(v.into_iter().map(|x| wrap_int(x as i64, dtype)).collect()) }
    }
}

/// Values of `t` broadcast to `out`, as f64.
fn expand_f64(t: &HostTensor, out: &[usize]) -> Vec<f64> {
    let v = t.to_f64();
    let st = bstrides(&t.shape, out);
    let n: usize = out.iter().product();
    let mut res = Vec::with_capacity(n);
    let mut idx = vec![0usize; out.len()];
    for _ in 0..n {
        let off: usize = idx.iter().zip(&st).map(|(i, s)| i * s).sum();
        res.push(v[off]);
        for a in (0..out.len()).rev() {
            idx[a] += 1;
            if idx[a] < out[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    res
}

fn map_broadcast(x: &HostTensor, out: &[usize], dtype: DType) -> HostTensor {
    match &x.data {
        Data::I64(v) => {
            let st = bstrides(&x.shape, out);
            let n: usize = out.iter().product();
            let mut res = Vec::with_capacity(n);
            let mut idx = vec![0usize; out.len()];
            for _ in 0..n {
                let off: usize = idx.iter().zip(&st).map(|(i, s)| i * s).sum();
                res.push(v[off]);
                for a in (0..out.len()).rev() {
                    idx[a] += 1;
                    if idx[a] < out[a] {
                        break;
                    }
                    idx[a] = 0;
                }
            }
            HostTensor { dtype, shape: out.to_vec(), data: Data::I64(res) }
        }
        Data::F32(_) => from_f64(dtype, out.to_vec(), expand_f64(x, out)),
    }
}

/// Strides to read `shape` broadcast to `out` (0 on stretched axes).
fn bstrides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let s = strides(shape);
    let off = out.len() - shape.len();
    (0..out.len()).map(|i| if i < off || shape[i - off] == 1 { 0 } else { s[i - off] }).collect()
}

fn binary(node: &Node, a: &HostTensor, b: &HostTensor) -> Result<HostTensor> {
    let out = broadcast(node, &[&a.shape, &b.shape])?;
    let op = node.op_type.as_str();
    let cmp = matches!(op, "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or");
    let dtype = if cmp { DType::Bool } else { a.dtype };
    // Integer arithmetic stays exact in i64.
    if let (Data::I64(_), Data::I64(_)) = (&a.data, &b.data) {
        // Mod's fmod = 1: the remainder takes the dividend's sign (C's fmod, Rust's `%`).
        let fmod = op == "Mod" && node.int("fmod", 0)? == 1;
        let (av, bv) = (map_broadcast(a, &out, a.dtype), map_broadcast(b, &out, b.dtype));
        let (Data::I64(av), Data::I64(bv)) = (av.data, bv.data) else { unreachable!("integer tensors broadcast to integers") };
        let mut v = Vec::with_capacity(av.len());
        for (&x, &y) in av.iter().zip(&bv) {
            v.push(match op {
                "Add" => x.wrapping_add(y),
                "Sub" => x.wrapping_sub(y),
                "Mul" => x.wrapping_mul(y),
                "Div" | "Mod" if y == 0 => return Err(node.err("integer division by zero")),
                // wrapping: i64::MIN / -1 overflows (and would panic)
                "Div" => x.wrapping_div(y),
                "Mod" if fmod => x.wrapping_rem(y),
                "Mod" => {
                    // ONNX Mod with fmod=0 takes the sign of the divisor, like Python.
                    let r = x.wrapping_rem(y);
                    if r != 0 && (r < 0) != (y < 0) {
                        r + y
                    } else {
                        r
                    }
                }
                "Pow" => (x as f64).powf(y as f64) as i64,
                "Max" => x.max(y),
                "Min" => x.min(y),
                "Equal" => (x == y) as i64,
                "Less" => (x < y) as i64,
                "Greater" => (x > y) as i64,
                "LessOrEqual" => (x <= y) as i64,
                "GreaterOrEqual" => (x >= y) as i64,
                "And" => (x != 0 && y != 0) as i64,
                "Or" => (x != 0 || y != 0) as i64,
                _ => unreachable!("binary ops are listed in eval"),
            });
        }
        return Ok(HostTensor { dtype, shape: out, data: Data::I64(v.into_iter().map(|x| wrap_int(x, dtype)).collect()) });
    }
    let (av, bv) = (expand_f64(a, &out), expand_f64(b, &out));
    let v = av
        .iter()
        .zip(&bv)
        .map(|(&x, &y)| {
            let (x32, y32) = (x as f32, y as f32);
            (match op {
                "Add" => x32 + y32,
                "Sub" => x32 - y32,
                "Mul" => x32 * y32,
                "Div" => x32 / y32,
                "Mod" => x32 % y32,
                "Pow" => x32.powf(y32),
                "Max" => x32.max(y32),
                "Min" => x32.min(y32),
                "Equal" => (x == y) as i32 as f32,
                "Less" => (x < y) as i32 as f32,
                "Greater" => (x > y) as i32 as f32,
                "LessOrEqual" => (x <= y) as i32 as f32,
                "GreaterOrEqual" => (x >= y) as i32 as f32,
                "And" => (x != 0.0 && y != 0.0) as i32 as f32,
                _ => (x != 0.0 || y != 0.0) as i32 as f32,
            }) as f64
        })
        .collect();
    Ok(from_f64(dtype, out, v))
}

fn unary(node: &Node, x: &HostTensor) -> Result<HostTensor> {
    let op = node.op_type.as_str();
    if let Data::I64(v) = &x.data {
        let r = v
            .iter()
            .map(|&a| match op {
                "Neg" => -a,
                "Abs" => a.abs(),
                "Not" => (a == 0) as i64,
                "Relu" => a.max(0),
                "Sign" => a.signum(),
                _ => a, // Floor, Ceil, Round of integers
            })
            .collect();
        if matches!(op, "Sqrt" | "Reciprocal") {
            return Err(node.err(format!("{op} of an integer tensor")));
        }
        return Ok(HostTensor { dtype: x.dtype, shape: x.shape.clone(), data: Data::I64(r) });
    }
    let v = x
        .to_f32()
        .iter()
        .map(|&a| match op {
            "Neg" => -a,
            "Abs" => a.abs(),
            "Floor" => a.floor(),
            "Ceil" => a.ceil(),
            "Sqrt" => a.sqrt(),
            "Reciprocal" => 1.0 / a,
            "Relu" => a.max(0.0),
            "Sign" => {
                if a > 0.0 {
                    1.0
                } else if a < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            "Round" => a.round_ties_even(),
            _ => (a == 0.0) as i32 as f32,
        })
        .collect();
    Ok(HostTensor { dtype: x.dtype, shape: x.shape.clone(), data: Data::F32(v) })
}

fn concat(node: &Node, parts: &[&HostTensor]) -> Result<HostTensor> {
    let first = parts.first().ok_or_else(|| node.err("no inputs"))?;
    let r = first.rank();
    if r == 0 {
        return Err(node.err("scalars do not concatenate (inputs need rank 1 or more)"));
    }
    let axis = norm_axis(node, node.int("axis", 0)?, r)?;
    let mut out = first.shape.clone();
    out[axis] = 0;
    for p in parts {
        if p.rank() != r || (0..r).any(|i| i != axis && p.shape[i] != first.shape[i]) {
            return Err(node.err(format!("input shapes {:?} and {:?} do not concatenate on axis {axis}", first.shape, p.shape)));
        }
        out[axis] = out[axis].checked_add(p.shape[axis]).ok_or_else(|| node.err("the concatenated axis is too long"))?;
    }
    if checked_numel(&out).is_none() {
        return Err(node.err(format!("result shape {out:?} is too large")));
    }
    let outer: usize = first.shape[..axis].iter().product();
    let inner_of = |p: &HostTensor| p.shape[axis..].iter().product::<usize>();
    let ints = parts.iter().all(|p| matches!(p.data, Data::I64(_)));
    if ints {
        let mut v = Vec::with_capacity(checked_numel(&out).unwrap_or(0));
        for o in 0..outer {
            for p in parts {
                if let Data::I64(d) = &p.data {
                    let n = inner_of(p);
                    v.extend_from_slice(d.get(o * n..(o + 1) * n).unwrap_or_default());
                }
            }
        }
        return Ok(HostTensor { dtype: first.dtype, shape: out, data: Data::I64(v) });
    }
    // read in place (no copy of each part: one input may be named many times)
    let mut v = Vec::with_capacity(checked_numel(&out).unwrap_or(0));
    for o in 0..outer {
        for p in parts {
            let n = inner_of(p);
            match &p.data {
                Data::F32(d) => v.extend_from_slice(d.get(o * n..(o + 1) * n).unwrap_or_default()),
                Data::I64(d) => v.extend(d.get(o * n..(o + 1) * n).unwrap_or_default().iter().map(|&x| x as f32)),
            }
        }
    }
    Ok(HostTensor { dtype: first.dtype, shape: out, data: Data::F32(v) })
}

/// Element `i` of each output position along `axis` taken from `src` (`idx` per output
/// position along that axis).
fn take<T: Copy>(src: &[T], shape: &[usize], axis: usize, idx: &[usize]) -> Vec<T> {
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let n = shape[axis];
    let mut v = Vec::with_capacity(outer * idx.len() * inner);
    for o in 0..outer {
        for &i in idx {
            let base = (o * n + i) * inner;
            v.extend_from_slice(&src[base..base + inner]);
        }
    }
    v
}

fn take_tensor(x: &HostTensor, axis: usize, idx: &[usize], mut out_shape: Vec<usize>) -> HostTensor {
    if out_shape.is_empty() && x.rank() > 0 {
        out_shape = x.shape.clone();
        out_shape[axis] = idx.len();
    }
    let data = match &x.data {
        Data::F32(v) => Data::F32(take(v, &x.shape, axis, idx)),
        Data::I64(v) => Data::I64(take(v, &x.shape, axis, idx)),
    };
    HostTensor { dtype: x.dtype, shape: out_shape, data }
}

/// Resolves ONNX `Gather` indices (negative counts from the end) against an axis of size `n`.
pub fn gather_indices(node: &Node, idx: &HostTensor, n: usize) -> Result<Vec<usize>> {
    idx.to_i64("Gather indices")?
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + n as i64 } else { i };
            if j < 0 || j >= n as i64 {
                Err(node.err(format!("index {i} is out of range for an axis of size {n}")))
            } else {
                Ok(j as usize)
            }
        })
        .collect()
}

fn gather(node: &Node, x: &HostTensor, idx: &HostTensor) -> Result<HostTensor> {
    let axis = norm_axis(node, node.int("axis", 0)?, x.rank())?;
    let ii = gather_indices(node, idx, x.shape[axis])?;
    let mut shape = x.shape[..axis].to_vec();
    shape.extend_from_slice(&idx.shape);
    shape.extend_from_slice(&x.shape[axis + 1..]);
    let mut t = take_tensor(x, axis, &ii, vec![]);
    t.shape = shape;
    Ok(t)
}

fn slice(node: &Node, ins: &[Option<&HostTensor>]) -> Result<HostTensor> {
    let x = ins.first().copied().flatten().ok_or_else(|| node.err("input 0 is missing"))?;
    let plan = slice_plan(node, &x.shape, ins)?;
    let mut t = x.clone();
    for (axis, idx) in plan {
        t = take_tensor(&t, axis, &idx, vec![]);
    }
    Ok(t)
}

fn transpose(node: &Node, x: &HostTensor) -> Result<HostTensor> {
    let r = x.rank();
    let perm = transpose_perm(node, r)?;
    let out: Vec<usize> = perm.iter().map(|&a| x.shape[a]).collect();
    let st = strides(&x.shape);
    let n = x.numel();
    let mut order = Vec::with_capacity(n);
    let mut idx = vec![0usize; r];
    for _ in 0..n {
        order.push(idx.iter().zip(&perm).map(|(i, &p)| i * st[p]).sum::<usize>());
        for a in (0..r).rev() {
            idx[a] += 1;
            if idx[a] < out[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    let data = match &x.data {
        Data::F32(v) => Data::F32(order.iter().map(|&o| v[o]).collect()),
        Data::I64(v) => Data::I64(order.iter().map(|&o| v[o]).collect()),
    };
    Ok(HostTensor { dtype: x.dtype, shape: out, data })
}

/// `None` where the result would be larger than [`FOLD_LIMIT`]: reducing an empty axis of a
/// zero-size input leaves the other axes, whatever their sizes (found by fuzzing: a
/// `[1, 0, 2^31, 4]` input asked for a 64 GiB result).
fn reduce(node: &Node, ins: &[Option<&HostTensor>]) -> Result<Option<HostTensor>> {
    let x = ins.first().copied().flatten().ok_or_else(|| node.err("input 0 is missing"))?;
    let r = x.rank();
    let axes =
        if node.opset >= 18 || (node.op_type == "ReduceSum" && node.opset >= 13) { axes_arg(node, ins, 1)? } else { node.ints("axes")? };
    let axes: Vec<usize> = match axes {
        Some(a) if !a.is_empty() => a.iter().map(|&v| norm_axis(node, v, r)).collect::<Result<_>>()?,
        _ if node.int("noop_with_empty_axes", 0)? != 0 => {
            if node.op_type != "ReduceSumSquare" {
                return Ok(Some(x.clone()));
            }
            // ReduceSumSquare over no axes squares each element (the ONNX reference's reading).
            let data = match &x.data {
                Data::F32(v) => Data::F32(v.iter().map(|a| a * a).collect()),
                Data::I64(v) => Data::I64(v.iter().map(|a| a.wrapping_mul(*a)).collect()),
            };
            return Ok(Some(HostTensor { dtype: x.dtype, shape: x.shape.clone(), data }));
        }
        _ => (0..r).collect(),
    };
    let kept: Vec<usize> = x.shape.iter().enumerate().map(|(a, &d)| if axes.contains(&a) { 1 } else { d }).collect();
    if checked_numel(&kept).is_none_or(|n| n > FOLD_LIMIT) {
        return Ok(None);
    }
    let keep = node.int("keepdims", 1)? != 0;
    let out: Vec<usize> =
        if keep { kept.clone() } else { kept.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect() };
    if x.numel() == 0 {
        // every output element reduces nothing: the operation's identity (reducing one axis
        // at a time below would make intermediates as large as the other axes)
        let id = match node.op_type.as_str() {
            "ReduceProd" => 1.0,
            "ReduceSum" => 0.0,
            "ReduceMax" => f64::NEG_INFINITY,
            "ReduceMin" => f64::INFINITY,
            _ => f64::NAN,
        };
        let n = checked_numel(&out).unwrap_or(0);
        return Ok(Some(from_f64(x.dtype, out, vec![id; n])));
    }
    let mut v = x.to_f64();
    let mut shape = x.shape.clone();
    for &a in &axes {
        let outer: usize = shape[..a].iter().product();
        let inner: usize = shape[a + 1..].iter().product();
        let n = shape[a];
        let mut res = Vec::with_capacity(outer * inner);
        for o in 0..outer {
            for i in 0..inner {
                let it = (0..n).map(|k| v[(o * n + k) * inner + i]);
                res.push(match node.op_type.as_str() {
                    "ReduceProd" => it.product(),
                    "ReduceSum" => it.sum(),
                    "ReduceMean" => it.sum::<f64>() / n as f64,
                    "ReduceMax" => it.fold(f64::NEG_INFINITY, f64::max),
                    _ => it.fold(f64::INFINITY, f64::min),
                });
            }
        }
        v = res;
        shape[a] = 1;
    }
    Ok(Some(from_f64(x.dtype, out, v)))
}
