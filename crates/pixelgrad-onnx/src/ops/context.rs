//! What an operator runs with: the values of a running graph ([`V`], on the host or the
//! device), where device copies of constants come from ([`Consts`]), and the node's context
//! ([`Cx`]) with its input accessors.

use std::rc::Rc;

use pixelgrad_core::{Device, Param, Tensor};

use crate::graph::Node;
use crate::host::{DType, HostTensor};
use crate::hostops::{self, Cap};
use crate::{OnnxError, Result};

/// Runs an operator on the device (some input is a device value).
pub(crate) type Run = fn(&Cx, &[Option<V>]) -> Result<Vec<V>>;

/// Evaluates an operator on host values; `Ok(None)` leaves it to the device (too large to
/// fold, or a case only the device implementation handles).
pub(crate) type HostEval = fn(&Node, &[Option<&HostTensor>], Cap) -> Result<Option<Vec<HostTensor>>>;

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
    /// A cached f32 device copy of a tensor derived from constants (a dequantised weight),
    /// keyed by `key`: `make` runs only when there is none yet. Without a cache, every call
    /// makes and uploads it.
    fn cached_derived(&self, key: &str, make: &dyn Fn() -> Result<HostTensor>) -> Result<Tensor> {
        upload(self.device(), &make()?, key)
    }
    /// A cached device tensor derived from constants in whatever storage `make` gives it (a
    /// packed 8-bit weight, say), keyed by `key`: `make` runs only when there is none yet.
    /// Without a cache, every call makes it.
    fn cached_tensor(&self, key: &str, make: &dyn Fn() -> Result<Tensor>) -> Result<Tensor> {
        let _ = key;
        make()
    }
    /// The cached f16-stored copy of float constant `name`, not widened, for a matrix
    /// product that reads it directly: `Some` only where the constant is kept in f16 and the
    /// backend runs [`pixelgrad_core::Op::MatMul`] on f16 storage
    /// ([`Caps::f16_matmul`](pixelgrad_core::Caps::f16_matmul)).
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
    /// and the backend's [`Caps::int8`](pixelgrad_core::Caps::int8)).
    fn int8_activations(&self) -> bool {
        self.device().backend().caps().int8
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
    /// Input `i` as an f32 device tensor with at least one spatial axis (`[N, C, D1, ...]`, as
    /// the normalisations and global pools take it), and its dims.
    pub fn spatial(&self, ins: &[Option<V>], i: usize) -> Result<(Tensor, Vec<usize>)> {
        let x = self.t(ins, i)?;
        let d = x.dims().to_vec();
        if d.len() < 3 {
            return Err(self.err(format!("expects [N, C, D1, ...], got {d:?}")));
        }
        Ok((x, d))
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
    /// The error for an operator no device implementation handles.
    pub fn unsupported(&self) -> OnnxError {
        OnnxError::UnsupportedOp {
            op_type: self.node.op_type.clone(),
            node: self.node.name.clone(),
            domain: self.node.domain.clone(),
            opset: self.node.opset,
        }
    }
    /// The element type of the first input (most ops keep it).
    pub fn dtype0(&self, ins: &[Option<V>]) -> DType {
        ins.first().and_then(|v| v.as_ref()).map(|v| v.dtype()).unwrap_or(DType::F32)
    }
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
