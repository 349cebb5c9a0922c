//! Operators on the device, each written with pixelgrad tensor ops (primitives and core
//! composites), so every backend runs them and autodiff differentiates them. Arguments that
//! shape the computation (`Reshape`'s shape, `Slice`'s starts, `Resize`'s scales, pads...) must
//! be host values: constants, or shape arithmetic the runtime evaluates on the host.

mod conv;
mod einsum;
mod elementwise;
mod linalg;
mod movement;
mod pool;
pub(crate) mod qbinary;
mod quant;
mod resize;
mod rnn;
mod select;

use std::rc::Rc;

use pixelgrad_core::{Device, Param, Tensor};

use crate::graph::Node;
use crate::host::{DType, HostTensor};
use crate::{hostops, OnnxError, Result};

pub mod registry;

/// Every default-domain operator type `run` handles: the names of [`registry::OPS`]' rows
/// (the book's ONNX chapter, `docs/src/guides/onnx.md`, lists their attributes).
pub const SUPPORTED: &[&str] = &ONNX_NAMES;
const ONNX_NAMES: [&str; registry::N_ONNX] = registry::names(registry::Domain::Onnx);

/// The com.microsoft operators pixelgrad runs: the quantised ones onnxruntime's quantiser
/// writes (the `com.microsoft` rows of [`registry::OPS`]).
pub const SUPPORTED_MS: &[&str] = &MS_NAMES;
const MS_NAMES: [&str; registry::N_MS] = registry::names(registry::Domain::Microsoft);

/// The inputs an operator needs on the host because its result's length depends on their
/// values: the session reads them back before the operator runs (asynchronously in
/// [`crate::Session::run_async`]). Empty for every other operator.
pub fn reads_back(op_type: &str) -> &'static [usize] {
    match op_type {
        "NonMaxSuppression" => &[0, 1],
        "NonZero" => &[0],
        "Compress" => &[1],
        _ => &[],
    }
}

/// Whether `op_type` is one of the quantised operators (8-bit values, integer products).
pub fn is_quantized(op_type: &str) -> bool {
    SUPPORTED_MS.contains(&op_type) || SUPPORTED.iter().skip_while(|&&o| o != "QuantizeLinear").any(|&o| o == op_type)
}

/// A value while a graph runs: on the host (constants and shape arithmetic) or on the device.
#[derive(Clone)]
pub enum V {
    /// A host value; `name` is set for the model's constants, whose device copy (a trainable
    /// [`Param`] or a cached upload) the session keeps.
    Host {
        t: Rc<HostTensor>,
        name: Option<Rc<str>>,
    },
    Dev {
        t: Tensor,
        dtype: DType,
    },
}

impl V {
    pub fn host(t: HostTensor) -> V {
        V::Host { t: Rc::new(t), name: None }
    }
    pub fn dev(t: Tensor, dtype: DType) -> V {
        V::Dev { t, dtype }
    }
    pub fn dims(&self) -> &[usize] {
        match self {
            V::Host { t, .. } => &t.shape,
            V::Dev { t, .. } => t.dims(),
        }
    }
    pub fn dtype(&self) -> DType {
        match self {
            V::Host { t, .. } => t.dtype,
            V::Dev { dtype, .. } => *dtype,
        }
    }
    pub fn as_host(&self) -> Option<&HostTensor> {
        match self {
            V::Host { t, .. } => Some(t),
            V::Dev { .. } => None,
        }
    }
}

/// Where device copies of constants come from.
pub trait Consts {
    fn device(&self) -> &Device;
    /// The trainable parameter holding constant `name`, if it is one.
    fn param(&self, name: &str) -> Option<&Param>;
    /// A cached device copy of a non-trainable constant.
    fn cached(&self, name: &str, t: &HostTensor) -> Result<Tensor>;
    /// The cached f16-stored copy of float constant `name`, not widened, for a matrix
    /// product that reads it directly: `Some` only where the constant is kept in f16 and the
    /// backend runs [`pixelgrad_core::Op::MatMul`] on f16 storage
    /// ([`pixelgrad_core::Backend::supports_f16_matmul`]).
    fn cached_f16(&self, _name: &str, _t: &HostTensor) -> Result<Option<Tensor>> {
        Ok(None)
    }
    /// A cached 8-bit device copy of an `int8` / `uint8` constant, reshaped to `[rows, cols]`
    /// (transposed first when `transpose`: a `[cols, rows]` matrix), for
    /// [`Tensor::matmul_i8`]. `None` where the device has no 8-bit storage.
    fn cached_int8(&self, _name: &str, _t: &HostTensor, _transpose: bool) -> Result<Option<Tensor>> {
        Ok(None)
    }
    /// The row sums `Σ_k w[row, k]` of the matrix [`Consts::cached_int8`] gives for the same
    /// arguments, as a cached f32 device vector `[rows]` (exact: at most 255 · cols), and the
    /// largest `Σ_k |w[row, k]|` (bounds for exactness). For the shifted activations of
    /// [`Tensor::matmul_i8_packed`]. `None` where `cached_int8` is `None`.
    fn cached_int8_row_sums(&self, _name: &str, _t: &HostTensor, _transpose: bool) -> Result<Option<(Tensor, u64)>> {
        Ok(None)
    }
    /// Whether quantised results go to 8-bit storage ([`crate::Session::set_int8_activations`]
    /// and the backend's [`pixelgrad_core::Backend::supports_int8`]).
    fn int8_activations(&self) -> bool {
        self.device().backend().supports_int8()
    }
}

/// Uploads a host tensor as f32. Integers must be exact in f32 (|v| ≤ 2^24).
pub fn upload(dev: &Device, t: &HostTensor, what: &str) -> Result<Tensor> {
    if let crate::host::Data::I64(v) = &t.data {
        if let Some(x) = v.iter().find(|x| x.unsigned_abs() > 1 << 24) {
            return Err(OnnxError::Dtype {
                what: format!("{what}: integer {x} is not exact on the device (f32 holds integers up to 2^24)"),
                dtype: t.dtype.name().into(),
            });
        }
    }
    Ok(Tensor::from_vec(dev, &t.to_f32(), t.shape.clone())?)
}

/// The context an operator runs in.
pub struct Cx<'a> {
    pub consts: &'a dyn Consts,
    pub node: &'a Node,
}

impl Cx<'_> {
    pub fn dev(&self) -> &Device {
        self.consts.device()
    }
    /// Input `i` as an f32 device tensor (uploading or reusing the device copy of a constant;
    /// a quantised value kept in 8-bit storage, see [`Cx::stored`], widened, exactly).
    pub fn t(&self, ins: &[Option<V>], i: usize) -> Result<Tensor> {
        let v = self.v(ins, i)?;
        self.to_dev(v, i)
    }
    /// Input `i` as a device tensor in the storage it has: quantised activations between
    /// integer layers stay 8-bit ([`Tensor::narrow8`], where the backend stores 8-bit
    /// tensors). For ops that only relabel the shape (reshape, flatten, squeeze), which keep
    /// any storage; everything else takes [`Cx::t`].
    pub fn stored(&self, ins: &[Option<V>], i: usize) -> Result<Tensor> {
        self.non_empty(self.v(ins, i)?, i)?;
        match self.v(ins, i)? {
            V::Dev { t, .. } => Ok(t.clone()),
            v => self.to_dev(v, i),
        }
    }
    pub fn to_dev(&self, v: &V, i: usize) -> Result<Tensor> {
        self.non_empty(v, i)?;
        match v {
            V::Dev { t, .. } => Ok(t.widen()?),
            V::Host { t, name: Some(n) } => match self.consts.param(n) {
                Some(p) => Ok(p.tensor()),
                None => self.consts.cached(n, t),
            },
            V::Host { t, name: None } => upload(self.dev(), t, &format!("input {i} of node '{}'", self.node.name)),
        }
    }
    /// Input `i` for a matrix product's weight operand: an f16-stored constant as is (the
    /// product reads the halves, see [`Consts::cached_f16`]), anything else as [`Cx::t`].
    pub fn t_weight(&self, ins: &[Option<V>], i: usize) -> Result<Tensor> {
        self.non_empty(self.v(ins, i)?, i)?;
        if let V::Host { t, name: Some(n) } = self.v(ins, i)? {
            if self.consts.param(n).is_none() {
                if let Some(d) = self.consts.cached_f16(n, t)? {
                    return Ok(d);
                }
            }
        }
        self.t(ins, i)
    }
    /// Device operators never see an empty tensor: a zero-size shape may still have huge
    /// sizes (`[0, 2^31, 4]`), and operators size host vectors (masks, indices, steps) by
    /// them (found by fuzzing: a `Trilu` of such an input asked for 32 GiB).
    fn non_empty(&self, v: &V, i: usize) -> Result<()> {
        if crate::host::checked_numel(v.dims()) == Some(0) {
            return Err(self.err(format!("input {i} of shape {:?} is empty (zero-size tensors are not supported on the device)", v.dims())));
        }
        Ok(())
    }
    pub fn v<'v>(&self, ins: &'v [Option<V>], i: usize) -> Result<&'v V> {
        ins.get(i).and_then(|v| v.as_ref()).ok_or_else(|| self.node.err(format!("input {i} is missing")))
    }
    pub fn opt<'v>(&self, ins: &'v [Option<V>], i: usize) -> Option<&'v V> {
        ins.get(i).and_then(|v| v.as_ref())
    }
    /// Input `i` as a host value (shape-like arguments).
    pub fn h<'v>(&self, ins: &'v [Option<V>], i: usize, what: &str) -> Result<&'v HostTensor> {
        match self.v(ins, i)? {
            V::Host { t, .. } => Ok(t),
            V::Dev { .. } => Err(self
                .node
                .err(format!("{what} (input {i}) is computed on the device; pixelgrad needs it to be a constant or shape arithmetic"))),
        }
    }
    pub fn opt_h<'v>(&self, ins: &'v [Option<V>], i: usize, what: &str) -> Result<Option<&'v HostTensor>> {
        match self.opt(ins, i) {
            None => Ok(None),
            Some(_) => self.h(ins, i, what).map(Some),
        }
    }
    /// Refuses a result shape above the device's element cap
    /// ([`pixelgrad_core::Device::limits`]) before the operator builds anything for it on the
    /// host: the index and weight vectors of Resize, Pad, Einsum... are sized by one axis of
    /// the result, so they are checked here, before the primitives (which the device checks
    /// itself) run.
    pub fn check_size(&self, dims: &[usize]) -> Result<()> {
        let max = self.dev().limits().max_elements;
        match crate::host::checked_numel(dims) {
            Some(n) if n <= max => Ok(()),
            n => Err(hostops::over_cap(self.node, n, max)),
        }
    }
    pub fn err(&self, msg: impl Into<String>) -> OnnxError {
        self.node.err(msg)
    }
    /// The element type of the first input (most ops keep it).
    pub fn dtype0(&self, ins: &[Option<V>]) -> DType {
        ins.first().and_then(|v| v.as_ref()).map(|v| v.dtype()).unwrap_or(DType::F32)
    }
}

/// Runs one node. Host inputs everywhere → the host evaluator where it knows the op; otherwise
/// the device implementation.
pub fn run(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    let all_host = ins.iter().all(|v| !matches!(v, Some(V::Dev { .. })));
    if all_host {
        let hs: Vec<Option<&HostTensor>> = ins.iter().map(|v| v.as_ref().and_then(|v| v.as_host())).collect();
        if let Some(outs) = hostops::eval(node, &hs, hostops::Cap::run(cx.dev().limits().max_elements))? {
            return Ok(outs.into_iter().map(V::host).collect());
        }
    }
    let one = |t: Tensor, dtype: DType| Ok(vec![V::dev(t, dtype)]);
    match node.op_type.as_str() {
        // Metadata of device values, computed on the host.
        "Shape" => Ok(vec![V::host(hostops::shape_of(node, cx.v(ins, 0)?.dims())?)]),
        "Size" => Ok(vec![V::host(HostTensor::i64(vec![], vec![cx.v(ins, 0)?.dims().iter().product::<usize>() as i64]))]),
        "Identity" => Ok(vec![cx.v(ins, 0)?.clone()]),
        "Dropout" => {
            if let Some(t) = cx.opt_h(ins, 2, "training_mode")? {
                if t.to_f64().first().copied().unwrap_or(0.0) != 0.0 {
                    return Err(cx.err("training_mode = true is not supported (imported graphs run in inference mode)"));
                }
            }
            let x = cx.v(ins, 0)?;
            let mut outs = vec![x.clone()];
            if node.output(1).is_some() {
                // In inference every element is kept: the mask is all true.
                outs.push(V::dev(Tensor::ones(cx.dev(), x.dims().to_vec())?, DType::Bool));
            }
            Ok(outs)
        }
        "Cast" | "CastLike" => {
            let to = if node.op_type == "Cast" {
                DType::from_onnx(node.int("to", 0)? as i32, &format!("Cast node '{}'", node.name))?
            } else {
                cx.v(ins, 1)?.dtype()
            };
            let x = cx.t(ins, 0)?;
            let from = cx.dtype0(ins);
            let y = if to.is_float() || !from.is_float() {
                x
            } else if to == DType::Bool {
                x.abs()?.gt_scalar(0.0)?
            } else {
                // float → integer truncates toward zero: sign(x) * floor(|x|), floor as x - frac
                elementwise::trunc(&x)?
            };
            one(y, to)
        }
        "Conv" | "ConvTranspose" | "MaxPool" | "AveragePool" | "LpPool" if cx.v(ins, 0)?.dims().len() == 3 => one_d_as_two_d(cx, ins),
        _ => {
            let outs = dispatch(cx, ins)?;
            Ok(outs)
        }
    }
}

/// A 1-D convolution or pooling (`[N, C, L]` input) as the 2-D one over `[N, C, 1, L]`: the
/// window attributes gain a leading unit axis, the input and rank-3 weights a unit height,
/// and the result loses it again.
fn one_d_as_two_d(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    use crate::graph::Attr;
    let mut node = cx.node.clone();
    for (name, lead) in [("kernel_shape", 1), ("strides", 1), ("dilations", 1), ("output_padding", 0), ("output_shape", 1)] {
        if let Some(Attr::Ints(v)) = node.attrs.get(name) {
            if v.len() != 1 {
                return Err(cx.err(format!("{name} {v:?}: a 1-D window takes one value")));
            }
            let v = vec![lead, v[0]];
            node.attrs.insert(name.into(), Attr::Ints(v));
        }
    }
    if let Some(Attr::Ints(p)) = node.attrs.get("pads") {
        if p.len() != 2 {
            return Err(cx.err(format!("pads {p:?}: a 1-D window takes two values")));
        }
        let p = vec![0, p[0], 0, p[1]];
        node.attrs.insert("pads".into(), Attr::Ints(p));
    }
    let unit_height = |v: &V, i: usize| -> Result<Option<V>> {
        let t = cx.to_dev(v, i)?;
        let mut d = t.dims().to_vec();
        d.insert(2, 1);
        Ok(Some(V::dev(t.reshape(d)?, v.dtype())))
    };
    // the input and the weights (rank 3) gain the unit height; the bias stays
    let mut ins2 = ins.to_vec();
    for (i, slot) in ins2.iter_mut().enumerate().take(2) {
        if let Some(v) = cx.opt(ins, i).filter(|v| v.dims().len() == 3) {
            *slot = unit_height(v, i)?;
        }
    }
    let cx2 = Cx { consts: cx.consts, node: &node };
    let mut outs = dispatch(&cx2, &ins2)?;
    // every result (MaxPool's indices too) loses the unit height again
    for out in outs.iter_mut() {
        if let V::Dev { t, dtype } = out {
            if t.rank() == 4 && t.dims().get(2) == Some(&1) {
                let mut d = t.dims().to_vec();
                d.remove(2);
                *out = V::dev(t.reshape(d)?, *dtype);
            }
        }
    }
    Ok(outs)
}

fn dispatch(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let op = cx.node.op_type.as_str();
    if op == "Einsum" {
        return einsum::run(cx, ins);
    }
    if let Some(r) = elementwise::run(cx, ins, op)? {
        return Ok(r);
    }
    if let Some(r) = linalg::run(cx, ins, op)? {
        return Ok(r);
    }
    if let Some(r) = conv::run(cx, ins, op)? {
        return Ok(r);
    }
    if let Some(r) = pool::run(cx, ins, op)? {
        return Ok(r);
    }
    if let Some(r) = movement::run(cx, ins, op)? {
        return Ok(r);
    }
    if let Some(r) = resize::run(cx, ins, op)? {
        return Ok(r);
    }
    if let Some(r) = rnn::run(cx, ins, op)? {
        return Ok(r);
    }
    if let Some(r) = select::run(cx, ins, op)? {
        return Ok(r);
    }
    if let Some(r) = quant::run(cx, ins, op)? {
        return Ok(r);
    }
    Err(OnnxError::UnsupportedOp {
        op_type: op.to_string(),
        node: cx.node.name.clone(),
        domain: cx.node.domain.clone(),
        opset: cx.node.opset,
    })
}

/// `x` gathered along `axis` at host-computed `idx` (one entry per output position): the
/// indices are uploaded once as `[1.., k, ..1]` and broadcast on the device, as the core
/// `Gather` primitive wants an index per output element. Contiguous runs become a slice.
pub fn take(x: &Tensor, axis: usize, idx: &[usize]) -> Result<Tensor> {
    let d = x.dims().to_vec();
    if !idx.is_empty() && idx.windows(2).all(|w| w[1] == w[0] + 1) {
        if idx.len() == d[axis] {
            return Ok(x.clone());
        }
        return Ok(x.slice(axis, idx[0], idx[0] + idx.len())?);
    }
    let mut ishape = vec![1usize; d.len()];
    ishape[axis] = idx.len();
    let iv: Vec<f32> = idx.iter().map(|&i| i as f32).collect();
    let it = Tensor::from_vec(x.device(), &iv, ishape)?;
    let mut full = d.clone();
    full[axis] = idx.len();
    Ok(x.gather(axis, &it.broadcast_to(full)?)?)
}
