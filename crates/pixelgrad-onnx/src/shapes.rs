//! Shape rules shared by the host evaluator and the device operators: axis normalisation,
//! broadcasting, `Reshape` targets, `Squeeze`/`Unsqueeze`, `Slice` ranges, convolution and
//! pooling geometry (`pads`, `auto_pad`, `ceil_mode`).

use crate::graph::Node;
use crate::host::{checked_numel, HostTensor};
use crate::Result;

/// Row-major strides.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Resolves a possibly negative axis against `rank`: an axis that exists (so a scalar has
/// none; indexing its sizes with one would panic).
pub fn norm_axis(node: &Node, axis: i64, rank: usize) -> Result<usize> {
    let a = if axis < 0 { axis.saturating_add(rank as i64) } else { axis };
    if a < 0 || a >= rank as i64 {
        return Err(node.err(format!("axis {axis} is out of range for rank {rank}")));
    }
    Ok(a as usize)
}

/// `Transpose`'s `perm` (default: the axes reversed), which must be a permutation of the
/// input's `rank` axes.
pub fn transpose_perm(node: &Node, rank: usize) -> Result<Vec<usize>> {
    let perm: Vec<usize> = match node.ints("perm")? {
        Some(p) => p.iter().map(|&a| norm_axis(node, a, rank)).collect::<Result<_>>()?,
        None => (0..rank).rev().collect(),
    };
    let mut seen = vec![false; rank];
    for &a in &perm {
        match seen.get_mut(a) {
            Some(s) if !*s => *s = true,
            _ => return Err(node.err(format!("perm {perm:?} is not a permutation of {rank} axes"))),
        }
    }
    if perm.len() != rank {
        return Err(node.err(format!("perm {perm:?} is not a permutation of {rank} axes")));
    }
    Ok(perm)
}

/// `Flatten`'s axis: in `[-rank, rank]`, negative counting from the end.
pub fn flatten_axis(node: &Node, axis: i64, rank: usize) -> Result<usize> {
    let a = if axis < 0 { axis + rank as i64 } else { axis };
    if a < 0 || a > rank as i64 {
        return Err(node.err(format!("axis {axis} is out of range for rank {rank}")));
    }
    Ok(a as usize)
}

/// NumPy broadcasting of several shapes.
pub fn broadcast(node: &Node, shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        let off = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[off + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                let all: Vec<&[usize]> = shapes.to_vec();
                return Err(node.err(format!("shapes {all:?} do not broadcast")));
            }
        }
    }
    Ok(out)
}

/// `Reshape`'s target: `0` copies the input size (unless `allowzero`), one `-1` is inferred.
pub fn reshape_target(node: &Node, input: &[usize], target: &[i64], allowzero: bool) -> Result<Vec<usize>> {
    let n: usize = input.iter().product();
    let mut dims = Vec::with_capacity(target.len());
    let mut infer = None;
    for (i, &t) in target.iter().enumerate() {
        match t {
            -1 if infer.is_none() => {
                infer = Some(i);
                dims.push(1);
            }
            0 if !allowzero => {
                dims.push(*input.get(i).ok_or_else(|| node.err(format!("shape {target:?}: 0 at axis {i} has no input axis to copy")))?)
            }
            t if t >= 0 => dims.push(t as usize),
            _ => return Err(node.err(format!("shape {target:?} is not a valid target"))),
        }
    }
    // the target comes from the file: its product may overflow (found by fuzzing), also
    // where a 0 makes it 0 (the other sizes' product is a stride)
    let Some(known) = checked_numel(&dims) else {
        return Err(node.err(format!("cannot reshape {input:?} ({n} elements) to {target:?}: the target is too large")));
    };
    if let Some(i) = infer {
        if known == 0 || !n.is_multiple_of(known) {
            return Err(node.err(format!("cannot reshape {input:?} to {target:?}")));
        }
        dims[i] = n / known;
    } else if known != n {
        return Err(node.err(format!("cannot reshape {input:?} ({n} elements) to {target:?}")));
    }
    Ok(dims)
}

pub fn unsqueeze_dims(node: &Node, shape: &[usize], axes: &[i64]) -> Result<Vec<usize>> {
    let r = shape.len() + axes.len();
    let mut ax: Vec<usize> = axes.iter().map(|&a| norm_axis(node, a, r)).collect::<Result<_>>()?;
    ax.sort_unstable();
    if ax.windows(2).any(|w| w[0] == w[1]) {
        return Err(node.err(format!("axes {axes:?} repeat")));
    }
    let mut out = Vec::with_capacity(r);
    let mut src = shape.iter();
    for i in 0..r {
        if ax.binary_search(&i).is_ok() {
            out.push(1);
        } else {
            out.push(*src.next().ok_or_else(|| node.err("axes out of range"))?);
        }
    }
    Ok(out)
}

pub fn squeeze_dims(node: &Node, shape: &[usize], axes: Option<&[i64]>) -> Result<Vec<usize>> {
    match axes {
        None => Ok(shape.iter().copied().filter(|&d| d != 1).collect()),
        Some(axes) => {
            let ax: Vec<usize> = axes.iter().map(|&a| norm_axis(node, a, shape.len())).collect::<Result<_>>()?;
            for &a in &ax {
                if shape[a] != 1 {
                    return Err(node.err(format!("cannot squeeze axis {a} of size {}", shape[a])));
                }
            }
            Ok(shape.iter().enumerate().filter(|(i, _)| !ax.contains(i)).map(|(_, &d)| d).collect())
        }
    }
}

/// One sliced axis: `len` elements from `start`, `step` apart (step may be negative).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisSlice {
    pub axis: usize,
    pub start: usize,
    pub step: i64,
    pub len: usize,
}

impl AxisSlice {
    pub fn indices(&self) -> Vec<usize> {
        (0..self.len).map(|k| (self.start as i64 + k as i64 * self.step) as usize).collect()
    }
}

/// The axes a `Slice` node changes, with ONNX's clamping rules. Arguments come from attributes
/// (opset < 10) or inputs 1..4 (`starts`, `ends`, `axes`, `steps`), which must be host values.
pub fn slice_plan_args(
    node: &Node,
    shape: &[usize],
    starts: &[i64],
    ends: &[i64],
    axes: Option<Vec<i64>>,
    steps: Option<Vec<i64>>,
) -> Result<Vec<AxisSlice>> {
    let r = shape.len();
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(node.err("starts, ends, axes and steps differ in length"));
    }
    let mut plan = Vec::new();
    let mut seen = vec![false; r];
    for k in 0..starts.len() {
        let axis = norm_axis(node, axes[k], r)?;
        if std::mem::replace(&mut seen[axis], true) {
            return Err(node.err(format!("axis {axis} is sliced twice")));
        }
        let d = shape[axis] as i64;
        let step = steps[k];
        if step == 0 {
            return Err(node.err("step 0"));
        }
        let norm = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
        let (s, e) = if step > 0 {
            (norm(starts[k]).clamp(0, d), norm(ends[k]).clamp(0, d))
        } else {
            (norm(starts[k]).clamp(0, (d - 1).max(0)), norm(ends[k]).clamp(-1, d - 1))
        };
        let len = if d == 0 {
            0
        } else if step > 0 {
            if e > s {
                (e - s + step - 1) / step
            } else {
                0
            }
        } else if s > e {
            (s - e + (-step) - 1) / (-step)
        } else {
            0
        };
        if len == d && step == 1 {
            continue;
        }
        plan.push(AxisSlice { axis, start: if len == 0 { 0 } else { s as usize }, step, len: len as usize });
    }
    Ok(plan)
}

/// [`slice_plan_args`] with the arguments read from `node` and host inputs.
pub fn slice_plan_from(node: &Node, shape: &[usize], args: &[Option<&HostTensor>]) -> Result<Vec<AxisSlice>> {
    if node.opset < 10 {
        let starts = node.ints("starts")?.ok_or_else(|| node.err("needs starts"))?;
        let ends = node.ints("ends")?.ok_or_else(|| node.err("needs ends"))?;
        return slice_plan_args(node, shape, &starts, &ends, node.ints("axes")?, None);
    }
    let get = |i: usize| args.get(i).copied().flatten();
    let starts = get(1).ok_or_else(|| node.err("needs starts"))?.to_i64("starts")?;
    let ends = get(2).ok_or_else(|| node.err("needs ends"))?.to_i64("ends")?;
    let axes = get(3).map(|t| t.to_i64("axes")).transpose()?;
    let steps = get(4).map(|t| t.to_i64("steps")).transpose()?;
    slice_plan_args(node, shape, &starts, &ends, axes, steps)
}

/// Host form of [`slice_plan_from`]: per changed axis, the indices kept.
pub fn slice_plan(node: &Node, shape: &[usize], ins: &[Option<&HostTensor>]) -> Result<Vec<(usize, Vec<usize>)>> {
    Ok(slice_plan_from(node, shape, ins)?.into_iter().map(|a| (a.axis, a.indices())).collect())
}

/// Geometry of a 2-D window op after resolving `pads` / `auto_pad` / `ceil_mode`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window2 {
    pub k: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    /// Padding before and after, per spatial axis: `[top, left]`, `[bottom, right]`.
    pub pad_begin: [usize; 2],
    pub pad_end: [usize; 2],
    /// Extra rows/columns at the end that `ceil_mode` adds beyond the padding (pooling only).
    pub ceil_extra: [usize; 2],
    /// Leading rows/columns no window reads (pooling only): `auto_pad` SAME with a stride
    /// longer than the window asks for a negative padding, which onnxruntime's pooling applies
    /// by starting the windows that far into the input. Pads are then 0.
    pub crop_begin: [usize; 2],
    pub out: [usize; 2],
}

/// Reads `kernel_shape` (or `k` from the weights), `strides`, `dilations`, `pads`, `auto_pad`
/// and `ceil_mode` for a 2-D window over an `[h, w]` input. `pooling` allows `ceil_mode` and
/// gives SAME's negative padding as [`Window2::crop_begin`] (onnxruntime's pooling); for
/// convolutions a negative SAME padding is 0, as onnxruntime's Conv has it.
pub fn window2(node: &Node, hw: [usize; 2], kernel: Option<[usize; 2]>, pooling: bool) -> Result<Window2> {
    // Sizes from the file are bounded before any arithmetic, so that no window size, stride,
    // dilation or pad overflows what follows, on 32-bit targets too (found by fuzzing).
    const MAX_WINDOW: i64 = 1 << 15;
    const MAX_PAD: i64 = 1 << 20;
    let fits = |v: &[i64], max: i64| v.len() == 2 && v.iter().all(|&x| (1..=max).contains(&x));
    let two = |name: &str, default: usize| -> Result<[usize; 2]> {
        match node.ints(name)? {
            None => Ok([default, default]),
            Some(v) if fits(&v, MAX_WINDOW) => Ok([v[0] as usize, v[1] as usize]),
            Some(v) => Err(node.err(format!("{name} {v:?}: only 2-D windows with sizes from 1 to {MAX_WINDOW} are supported"))),
        }
    };
    let k = match (node.ints("kernel_shape")?, kernel) {
        (Some(v), _) if fits(&v, MAX_WINDOW) => [v[0] as usize, v[1] as usize],
        (Some(v), _) => {
            return Err(node.err(format!("kernel_shape {v:?}: only 2-D windows with sizes from 1 to {MAX_WINDOW} are supported")))
        }
        (None, Some(k)) => k,
        (None, None) => return Err(node.err("needs kernel_shape")),
    };
    if hw.contains(&0) || k.iter().any(|&x| x == 0 || x as i64 > MAX_WINDOW) {
        return Err(node.err(format!("a {}x{} window over a {}x{} input is not supported", k[0], k[1], hw[0], hw[1])));
    }
    let stride = two("strides", 1)?;
    let dilation = two("dilations", 1)?;
    let ceil = node.int("ceil_mode", 0)? != 0;
    if ceil && !pooling {
        return Err(node.err("ceil_mode is not supported here"));
    }
    let auto_pad = node.string("auto_pad", "NOTSET")?;
    let ke = [(k[0] - 1) * dilation[0] + 1, (k[1] - 1) * dilation[1] + 1];
    let (mut pb, mut pe, mut crop) = ([0usize; 2], [0usize; 2], [0usize; 2]);
    match auto_pad.as_str() {
        "NOTSET" => {
            if let Some(p) = node.ints("pads")? {
                if p.len() != 4 || p.iter().any(|&x| !(0..=MAX_PAD).contains(&x)) {
                    return Err(node.err(format!("pads {p:?}: expected 4 values from 0 to {MAX_PAD} for a 2-D window")));
                }
                pb = [p[0] as usize, p[1] as usize];
                pe = [p[2] as usize, p[3] as usize];
            }
        }
        "VALID" => {}
        "SAME_UPPER" | "SAME_LOWER" => {
            for a in 0..2 {
                let out = hw[a].div_ceil(stride[a]);
                let total = ((out - 1) * stride[a] + ke[a]) as i64 - hw[a] as i64;
                if total < 0 {
                    // The windows leave rows over: pooling starts them -head rows in (head
                    // rounded toward zero, as onnxruntime does), convolutions at 0.
                    let head = if auto_pad == "SAME_UPPER" { total / 2 } else { (total + 1) / 2 };
                    if pooling {
                        crop[a] = (-head) as usize;
                    }
                    continue;
                }
                let total = total as usize;
                let small = total / 2;
                let big = total - small;
                if auto_pad == "SAME_UPPER" {
                    pb[a] = small;
                    pe[a] = big;
                } else {
                    pb[a] = big;
                    pe[a] = small;
                }
            }
        }
        other => return Err(node.err(format!("auto_pad '{other}' is not supported"))),
    }
    let mut out = [0usize; 2];
    let mut extra = [0usize; 2];
    for a in 0..2 {
        let padded = (hw[a] - crop[a] + pb[a] + pe[a]) as i64;
        let span = padded - ke[a] as i64;
        let s = stride[a] as i64;
        // With ceil_mode a window may reach past the padded input (even one longer than it),
        // as long as it starts inside: onnxruntime and PyTorch count it.
        let n = if ceil { span.div_euclid(s) + i64::from(span.rem_euclid(s) != 0) + 1 } else { span.div_euclid(s) + 1 };
        let mut n = n.max(0) as usize;
        if ceil && n > 0 && (n - 1) * stride[a] >= hw[a] - crop[a] + pb[a] {
            // The last window would start in the end padding only: ONNX drops it.
            n -= 1;
        }
        if n == 0 {
            return Err(node.err(format!(
                "a {}x{} window does not fit the padded {}x{} input",
                ke[0],
                ke[1],
                hw[0] + pb[0] + pe[0],
                hw[1] + pb[1] + pe[1]
            )));
        }
        out[a] = n;
        let need = (out[a] - 1) * stride[a] + ke[a];
        extra[a] = need.saturating_sub(padded as usize);
    }
    Ok(Window2 { k, stride, dilation, pad_begin: pb, pad_end: pe, ceil_extra: extra, crop_begin: crop, out })
}
