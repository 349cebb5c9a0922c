//! [`Tensor`]: an immutable n-d array of `f32` on a [`Device`], recording the graph of ops that
//! made it when gradients are wanted. [`Param`](crate::Param): a trainable value that accumulates gradients.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::backend::{Backend, BackendKind, Counters, Storage};
use crate::budget::{Budget, Limits, RunLimits, RunScope};
use crate::dtype::DType;
use crate::few::Few;
use crate::op::{BinaryOp, Distribution, NBits, Op, ReduceOp, UnaryOp, Window};
use crate::shape::Shape;
use crate::{Error, Result};

pub(crate) mod kept;
mod narrow;

/// A handle to a backend. Cheap to clone; tensors keep their device alive.
///
/// A device wraps any [`Backend`] (`pixelgrad_cpu::CpuBackend`, `pixelgrad_wgpu::WgpuBackend`,
/// `pixelgrad_webgl::WebGlBackend`) and checks its [`Limits`] before every primitive:
///
/// ```
/// use pixelgrad_core::{Device, Error, Limits, Tensor};
/// # fn main() -> pixelgrad_core::Result<()> {
/// let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
/// dev.set_limits(Limits { max_elements: 1 << 20, ..dev.limits() });
/// let small = Tensor::zeros(&dev, [512, 512])?;
/// let big = Tensor::zeros(&dev, [2048, 2048]); // 4 Mi elements: over the cap
/// assert!(matches!(big, Err(Error::Budget { .. })));
/// assert_eq!(small.dims(), &[512, 512]); // the device stays usable
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Device {
    backend: Rc<dyn Backend>,
    budget: Rc<Budget>,
}

impl Device {
    pub fn new(backend: impl Backend + 'static) -> Self {
        Device::from_rc(Rc::new(backend))
    }
    pub fn from_rc(backend: Rc<dyn Backend>) -> Self {
        Device { backend, budget: Rc::new(Budget::default()) }
    }
    /// The caps every primitive on this device is checked against before it runs.
    pub fn limits(&self) -> Limits {
        self.budget.limits()
    }
    /// Changes the caps for every handle of this device (see [`crate::budget`]).
    pub fn set_limits(&self, limits: Limits) {
        self.budget.set_limits(limits)
    }
    /// Opens a run scope: until the returned guard drops, every primitive on this device adds
    /// its estimated work to the scope and fails with [`Error::Budget`] past
    /// `limits.max_work`, or with [`Error::Cancelled`] once `limits.cancel` is cancelled (see
    /// [`crate::budget`]). Scopes nest.
    pub fn run_scope(&self, limits: RunLimits) -> RunScope {
        let depth = self.budget.open(limits);
        RunScope { device: self.clone(), depth }
    }
    /// Work spent so far in the innermost open run scope (0 outside any).
    pub fn run_work(&self) -> u64 {
        self.budget.used()
    }
    pub(crate) fn budget(&self) -> &Budget {
        &self.budget
    }
    pub fn backend(&self) -> &dyn Backend {
        &*self.backend
    }
    pub fn kind(&self) -> BackendKind {
        self.backend.kind()
    }
    pub fn name(&self) -> String {
        self.backend.name()
    }
    pub fn counters(&self) -> Counters {
        self.backend.counters()
    }
    pub fn flush(&self) -> Result<()> {
        self.backend.flush()
    }
    /// Runs `f` as one step of a repeated computation (see [`Backend::begin_step`]): on the
    /// GPU backends the second and later steps with the same `key` replay a prepared plan.
    /// The step is ended (and submitted) even when `f` fails.
    ///
    /// ```
    /// use pixelgrad_core::{Device, Tensor};
    /// # fn demo(dev: &Device) -> pixelgrad_core::Result<()> {
    /// let w = Tensor::from_vec(dev, &[1.0, 2.0], [2])?;
    /// for _ in 0..3 {
    ///     let y = dev.step(1, || w.mul_scalar(2.0))?;
    ///     assert_eq!(y.dims(), &[2]);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn step<T>(&self, key: u64, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.backend.begin_step(key)?;
        let out = f();
        let end = self.backend.end_step();
        let out = out?;
        end?;
        Ok(out)
    }
    /// Drops the backend's step plans (see [`Backend::drop_plans`]).
    pub fn drop_plans(&self) {
        self.backend.drop_plans()
    }
    /// Releases the pooled device memory nothing uses (see [`Backend::trim`]).
    pub fn trim(&self) -> Result<()> {
        self.backend.trim()
    }
    /// True if both handles drive the same backend instance.
    pub fn same(&self, other: &Device) -> bool {
        std::ptr::addr_eq(Rc::as_ptr(&self.backend), Rc::as_ptr(&other.backend))
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Device({})", self.name())
    }
}

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// While the returned guard lives, ops record no graph (inference, optimizer updates).
pub fn no_grad() -> NoGradGuard {
    let prev = GRAD_ENABLED.with(|g| g.replace(false));
    NoGradGuard { prev }
}

/// Restores the previous grad mode on drop; see [`no_grad`].
pub struct NoGradGuard {
    prev: bool,
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.prev));
    }
}

/// True unless inside a [`no_grad`] scope.
pub fn grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

pub(crate) fn next_id() -> u64 {
    NEXT_ID.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    })
}

pub(crate) type GradSink = Rc<RefCell<Option<Tensor>>>;

pub(crate) struct Node {
    pub op: Op,
    pub inputs: Vec<Tensor>,
}

pub(crate) struct Inner {
    pub id: u64,
    pub shape: Shape,
    pub storage: Storage,
    /// Element type of `storage`: [`DType::F32`], 8-bit weights ([`Tensor::from_i8`]) or
    /// half-precision values ([`Tensor::from_f16`]).
    pub dtype: DType,
    pub device: Device,
    pub node: Option<Node>,
    /// Where gradients accumulate for leaves that want them (parameters, inputs under test).
    pub sink: Option<GradSink>,
}

/// An immutable n-d array of `f32`. Cloning is cheap (shared handle).
///
/// Every op returns a new tensor on the same [`Device`] and, when an input wants gradients,
/// records itself for [`Tensor::backward`]:
///
/// ```
/// use pixelgrad_core::{Device, Tensor};
/// # fn main() -> pixelgrad_core::Result<()> {
/// let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
/// let x = Tensor::from_vec(&dev, &[1.0, -2.0, 3.0], [3])?.with_grad();
/// let y = x.relu()?.mul_scalar(2.0)?.sum_all()?; // 2 * (1 + 0 + 3)
/// assert_eq!(y.item()?, 8.0);
/// y.backward()?;
/// assert_eq!(x.grad().unwrap().to_vec()?, vec![2.0, 0.0, 2.0]);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Tensor(pub(crate) Rc<Inner>);

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor(shape={}, device={})", self.0.shape, self.0.device.name())
    }
}

impl Tensor {
    fn wrap(storage: Storage, shape: Shape, device: Device, node: Option<Node>, sink: Option<GradSink>) -> Tensor {
        Tensor::wrap_typed(storage, DType::F32, shape, device, node, sink)
    }

    pub(crate) fn wrap_typed(
        storage: Storage,
        dtype: DType,
        shape: Shape,
        device: Device,
        node: Option<Node>,
        sink: Option<GradSink>,
    ) -> Tensor {
        Tensor(Rc::new(Inner { id: next_id(), shape, storage, dtype, device, node, sink }))
    }

    /// The one storage-type rule of [`Tensor::apply`]: every input of every op is f32, except
    /// the weights (input 0) of [`Op::MatMulI8`], which must be 8-bit, the input of
    /// [`Op::Widen`], which must not be f32 (8-bit or f16), a reshape, which moves no data
    /// and keeps any type, and one f16 operand of [`Op::MatMul`] that needs no gradient, on
    /// backends with [`Caps::f16_matmul`](crate::Caps::f16_matmul). A typed [`Error::Shape`] otherwise, so 8-bit or f16 storage can
    /// never reach a kernel that would read its bytes as f32.
    fn check_dtypes(device: &Device, op: &Op, inputs: &[&Tensor]) -> Result<()> {
        for (i, t) in inputs.iter().enumerate() {
            let d = t.0.dtype;
            let eight = matches!(d, DType::I8 | DType::U8);
            let (ok, want) = match op {
                Op::Reshape(_) => (true, ""),
                Op::MatMulI8 { .. } if i == 0 => (eight, "8-bit (i8 or u8) weights"),
                // Packed block-quantised weights: bytes (u8), or f32 whole numbers where the
                // backend has no 8-bit storage (what `from_u8` makes there).
                Op::MatMulNBits { .. } if i == 1 => (matches!(d, DType::U8 | DType::F32), "packed u8 weights"),
                Op::Widen => (matches!(d, DType::I8 | DType::U8 | DType::F16), "i8, u8 or f16 storage"),
                // One f16 operand (stored weights, never differentiated) where the backend
                // reads halves directly; the other stays f32.
                Op::MatMul { .. } if d == DType::F16 => {
                    let other_f32 = inputs.iter().enumerate().all(|(j, o)| j == i || o.0.dtype == DType::F32);
                    if !device.backend.caps().f16_matmul {
                        (false, "f32 (this backend has no matmul on f16 storage; widen it first)")
                    } else if t.requires_grad() {
                        (false, "f32 when it requires a gradient (f16 operands are constants; widen it first)")
                    } else {
                        (other_f32, "f32 (at most one matmul operand may be f16)")
                    }
                }
                _ => (d == DType::F32, "f32"),
            };
            if !ok {
                return Err(Error::Shape {
                    op: op.name(),
                    shapes: inputs.iter().map(|t| t.dims().to_vec()).collect(),
                    backend: device.name(),
                    msg: format!("input {i} has {d} storage; this input takes {want}"),
                });
            }
        }
        Ok(())
    }

    /// Runs a primitive op on `inputs` (all on `device`), recording it for autodiff when
    /// gradients are enabled and an input wants them. This is the one entry point every op
    /// method goes through.
    pub fn apply(device: &Device, op: Op, inputs: &[&Tensor]) -> Result<Tensor> {
        for t in inputs {
            if !t.0.device.same(device) {
                return Err(Error::BackendMismatch { op: op.name(), a: device.name(), b: t.0.device.name() });
            }
        }
        Tensor::check_dtypes(device, &op, inputs)?;
        let shapes = Few::of(inputs, |t: &&Tensor| &t.0.shape);
        let shapes = shapes.as_slice();
        let out = op.infer_shape_any_size(shapes).map_err(|e| e.with_backend(&device.name()))?;
        device.budget.admit(&op, shapes, &out, || device.name())?;
        // Within the element cap, so the count fits a usize: `out` passes Op::infer_shape.
        debug_assert!(out.try_numel().is_some());
        let (storage, dtype) = if let Op::Reshape(_) = op {
            (inputs[0].0.storage.clone(), inputs[0].0.dtype)
        } else {
            let stores = Few::of(inputs, |t: &&Tensor| &t.0.storage);
            let stores = stores.as_slice();
            let dtype = match op {
                Op::NarrowF16 => DType::F16,
                Op::Narrow8 { signed: true } => DType::I8,
                Op::Narrow8 { signed: false } => DType::U8,
                _ => DType::F32,
            };
            (device.backend.execute(&op, stores, shapes, &out)?, dtype)
        };
        // MatMulI8, Widen and NarrowF16 are not differentiable: their results are constants
        // (stored weights, or the copies mixed-precision training keeps).
        let differentiable = !matches!(op, Op::MatMulI8 { .. } | Op::Widen | Op::NarrowF16 | Op::Narrow8 { .. });
        let node = if differentiable && grad_enabled() && inputs.iter().any(|t| t.requires_grad()) {
            // What the node keeps of each input: the input, or its f16 copy in a
            // mixed-precision scope (crate::mixed, kept).
            let kept = inputs.iter().enumerate().map(|(i, &t)| kept::saved(&op, i, t)).collect::<Result<Vec<_>>>()?;
            Some(Node { op, inputs: kept })
        } else {
            None
        };
        Ok(Tensor::wrap_typed(storage, dtype, out, device.clone(), node, None))
    }

    fn op1(&self, op: Op) -> Result<Tensor> {
        Tensor::apply(&self.0.device, op, &[self])
    }
    fn op2(&self, op: Op, other: &Tensor) -> Result<Tensor> {
        Tensor::apply(&self.0.device, op, &[self, other])
    }

    // ---- creation ----

    /// A tensor from host data; `data.len()` must equal the shape's element count.
    pub fn from_vec(device: &Device, data: &[f32], shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        if data.len() != shape.numel() {
            return Err(count_mismatch("from_vec", &shape, device, data.len()));
        }
        let storage = device.backend.upload(data)?;
        Ok(Tensor::wrap(storage, shape, device.clone(), None, None))
    }

    /// Like [`Tensor::from_vec`] in double precision (exact on the f64 reference backend).
    pub fn from_f64(device: &Device, data: &[f64], shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        if data.len() != shape.numel() {
            return Err(count_mismatch("from_f64", &shape, device, data.len()));
        }
        let storage = device.backend.upload_f64(data)?;
        Ok(Tensor::wrap(storage, shape, device.clone(), None, None))
    }

    /// 8-bit weights from host data (`data.len()` must equal the shape's element count): one
    /// byte per element, [`Tensor::storage_dtype`] [`DType::I8`], on backends whose
    /// [`Caps::int8`](crate::Caps::int8) is true; elsewhere an ordinary f32 tensor of the same values
    /// (storage type [`DType::F32`]), usable with every op. Only a reshape and
    /// [`Tensor::matmul_i8`] (as its weights) take an 8-bit tensor; `to_vec` reads its values.
    pub fn from_i8(device: &Device, data: &[i8], shape: impl Into<Shape>) -> Result<Tensor> {
        let bytes: Vec<u8> = data.iter().map(|&v| v as u8).collect();
        Tensor::from_8bit(device, "from_i8", &bytes, DType::I8, shape.into(), || data.iter().map(|&v| v as f32).collect())
    }

    /// As [`Tensor::from_i8`] for unsigned bytes ([`DType::U8`]).
    pub fn from_u8(device: &Device, data: &[u8], shape: impl Into<Shape>) -> Result<Tensor> {
        Tensor::from_8bit(device, "from_u8", data, DType::U8, shape.into(), || data.iter().map(|&v| v as f32).collect())
    }

    /// Half-precision values from host data (`data.len()` must equal the shape's element
    /// count): two bytes per element, [`Tensor::storage_dtype`] [`DType::F16`], on backends
    /// whose [`Caps::f16_storage`](crate::Caps::f16_storage) is true; elsewhere an ordinary f32 tensor of
    /// the same values, widened exactly (storage type [`DType::F32`]), usable with every op.
    /// Only a reshape and [`Tensor::widen`] take an f16 tensor; `to_vec` reads its values (as
    /// exact f32).
    pub fn from_f16(device: &Device, data: &[half::f16], shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        if data.len() != shape.numel() {
            return Err(count_mismatch("from_f16", &shape, device, data.len()));
        }
        if device.backend.caps().f16_storage {
            let bits: Vec<u16> = data.iter().map(|v| v.to_bits()).collect();
            let storage = device.backend.upload_f16(&bits)?;
            Ok(Tensor::wrap_typed(storage, DType::F16, shape, device.clone(), None, None))
        } else {
            let floats: Vec<f32> = data.iter().map(|v| v.to_f32()).collect();
            let storage = device.backend.upload(&floats)?;
            Ok(Tensor::wrap(storage, shape, device.clone(), None, None))
        }
    }

    fn from_8bit(
        device: &Device,
        op: &'static str,
        bytes: &[u8],
        dtype: DType,
        shape: Shape,
        floats: impl FnOnce() -> Vec<f32>,
    ) -> Result<Tensor> {
        if bytes.len() != shape.numel() {
            return Err(count_mismatch(op, &shape, device, bytes.len()));
        }
        if device.backend.caps().int8_storage {
            let storage = device.backend.upload_int8(bytes, dtype)?;
            Ok(Tensor::wrap_typed(storage, dtype, shape, device.clone(), None, None))
        } else {
            let storage = device.backend.upload(&floats())?;
            Ok(Tensor::wrap(storage, shape, device.clone(), None, None))
        }
    }

    /// A tensor over storage that `device`'s backend made outside [`Backend::execute`] (an
    /// image decoded by a kernel of its own, say). The storage must belong to that backend
    /// (ops on it fail with [`Error::BackendMismatch`] otherwise) and hold at least the shape's
    /// element count.
    pub fn from_storage(device: &Device, storage: Storage, shape: impl Into<Shape>) -> Tensor {
        Tensor::wrap(storage, shape.into(), device.clone(), None, None)
    }

    /// [`Tensor::from_storage`] for storage of element type `dtype` that the backend made itself
    /// (an image converted to 8-bit or f16 storage by a kernel of its own): the storage must
    /// hold the shape's element count in that backend's layout for `dtype` (the one
    /// [`crate::Backend::upload_int8`] / [`crate::Backend::upload_f16`] write). Like those tensors, only a
    /// reshape, [`Tensor::widen`] and reads take it.
    pub fn from_storage_typed(device: &Device, storage: Storage, dtype: DType, shape: impl Into<Shape>) -> Tensor {
        Tensor::wrap_typed(storage, dtype, shape.into(), device.clone(), None, None)
    }

    /// A scalar (rank-0) tensor.
    pub fn scalar(device: &Device, v: f32) -> Result<Tensor> {
        Tensor::full(device, Shape::scalar(), v)
    }

    pub fn full(device: &Device, shape: impl Into<Shape>, value: f32) -> Result<Tensor> {
        Tensor::apply(device, Op::Fill { value, shape: shape.into() }, &[])
    }
    pub fn zeros(device: &Device, shape: impl Into<Shape>) -> Result<Tensor> {
        Tensor::full(device, shape, 0.0)
    }
    pub fn ones(device: &Device, shape: impl Into<Shape>) -> Result<Tensor> {
        Tensor::full(device, shape, 1.0)
    }
    /// Uniform in `[low, high)`, element `i` a pure function of `(seed, i)` on every backend.
    pub fn rand_uniform(device: &Device, shape: impl Into<Shape>, low: f32, high: f32, seed: u64) -> Result<Tensor> {
        Tensor::apply(device, Op::Random { seed, dist: Distribution::Uniform { low, high }, shape: shape.into() }, &[])
    }
    /// Normal samples, element `i` a pure function of `(seed, i)` on every backend.
    pub fn rand_normal(device: &Device, shape: impl Into<Shape>, mean: f32, std: f32, seed: u64) -> Result<Tensor> {
        Tensor::apply(device, Op::Random { seed, dist: Distribution::Normal { mean, std }, shape: shape.into() }, &[])
    }
    /// `0, 1, .., n-1` as f32.
    pub fn arange(device: &Device, n: usize) -> Result<Tensor> {
        let v: Vec<f32> = (0..n).map(|i| i as f32).collect();
        Tensor::from_vec(device, &v, [n])
    }

    // ---- inspection ----

    pub fn shape(&self) -> &Shape {
        &self.0.shape
    }
    pub fn dims(&self) -> &[usize] {
        &self.0.shape.0
    }
    pub fn rank(&self) -> usize {
        self.0.shape.rank()
    }
    pub fn numel(&self) -> usize {
        self.0.shape.numel()
    }
    pub fn device(&self) -> &Device {
        &self.0.device
    }
    /// Unique id of this tensor value.
    pub fn id(&self) -> u64 {
        self.0.id
    }
    /// Element type of the storage: [`DType::F32`] for every tensor except 8-bit weights made
    /// by [`Tensor::from_i8`] / [`Tensor::from_u8`] on a backend that stores them
    /// ([`DType::I8`] / [`DType::U8`]), half-precision values made by [`Tensor::from_f16`]
    /// on a backend that stores them ([`DType::F16`]), and reshapes of those.
    pub fn storage_dtype(&self) -> DType {
        self.0.dtype
    }
    /// The backend storage (for backends and tools that render tensors directly).
    pub fn storage(&self) -> &Storage {
        &self.0.storage
    }
    /// True if gradients flow back through this tensor.
    pub fn requires_grad(&self) -> bool {
        self.0.node.is_some() || self.0.sink.is_some()
    }

    /// Copies the values to the host (blocks on GPU backends; use [`Tensor::to_vec_async`] in wasm).
    pub fn to_vec(&self) -> Result<Vec<f32>> {
        self.0.device.backend.read(&self.0.storage, self.numel())
    }
    /// Copies the values to the host without blocking the thread.
    pub async fn to_vec_async(&self) -> Result<Vec<f32>> {
        self.0.device.backend.read_async(&self.0.storage, self.numel()).await
    }
    /// Copies the values to the host in double precision.
    pub fn to_vec_f64(&self) -> Result<Vec<f64>> {
        self.0.device.backend.read_f64(&self.0.storage, self.numel())
    }
    /// The single value of a one-element tensor.
    pub fn item(&self) -> Result<f32> {
        if self.numel() != 1 {
            return Err(Error::Shape {
                op: "item",
                shapes: vec![self.dims().to_vec()],
                backend: self.0.device.name(),
                msg: "item() needs exactly one element".into(),
            });
        }
        Ok(self.to_vec()?[0])
    }

    // ---- autodiff handles ----

    /// The same values with no graph behind them.
    pub fn detach(&self) -> Tensor {
        Tensor::wrap_typed(self.0.storage.clone(), self.0.dtype, self.0.shape.clone(), self.0.device.clone(), None, None)
    }
    /// A leaf copy of this tensor whose gradient is kept (read it with [`Tensor::grad`]).
    pub fn with_grad(&self) -> Tensor {
        let sink: GradSink = Rc::new(RefCell::new(None));
        Tensor::wrap_typed(self.0.storage.clone(), self.0.dtype, self.0.shape.clone(), self.0.device.clone(), None, Some(sink))
    }
    /// Accumulated gradient of a leaf made by [`Tensor::with_grad`] or a [`Param`](crate::Param).
    pub fn grad(&self) -> Option<Tensor> {
        self.0.sink.as_ref().and_then(|s| s.borrow().clone())
    }

    // ---- elementwise ----

    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        self.op1(Op::Unary(op))
    }
    pub fn binary(&self, op: BinaryOp, other: &Tensor) -> Result<Tensor> {
        self.op2(Op::Binary(op), other)
    }
    pub fn neg(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Neg)
    }
    pub fn exp(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Exp)
    }
    pub fn log(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Log)
    }
    pub fn sqrt(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Sqrt)
    }
    pub fn recip(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Recip)
    }
    pub fn tanh(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Tanh)
    }
    pub fn sigmoid(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Sigmoid)
    }
    pub fn abs(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Abs)
    }
    pub fn sin(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Sin)
    }
    pub fn cos(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Cos)
    }
    /// `self * mul + add`.
    pub fn affine(&self, mul: f32, add: f32) -> Result<Tensor> {
        self.unary(UnaryOp::Affine { mul, add })
    }
    pub fn add_scalar(&self, c: f32) -> Result<Tensor> {
        self.affine(1.0, c)
    }
    pub fn mul_scalar(&self, c: f32) -> Result<Tensor> {
        self.affine(c, 0.0)
    }
    /// `self / c`, rounded as the quotient (not `self * (1 / c)`).
    pub fn div_scalar(&self, c: f32) -> Result<Tensor> {
        self.unary(UnaryOp::DivScalar(c))
    }
    pub fn powf(&self, p: f32) -> Result<Tensor> {
        self.unary(UnaryOp::Powf(p))
    }
    /// Largest whole number `<= self` (no gradient).
    pub fn floor(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Floor)
    }
    /// Nearest whole number, ties to even (`0.5 -> 0`, `1.5 -> 2`, `-2.5 -> -2`; no gradient).
    pub fn round_even(&self) -> Result<Tensor> {
        self.unary(UnaryOp::RoundEven)
    }
    /// `self * self` (cheaper than `powf(2.0)`, whose kernel handles every exponent).
    pub fn square(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Square)
    }
    pub fn max_scalar(&self, c: f32) -> Result<Tensor> {
        self.unary(UnaryOp::MaxScalar(c))
    }
    pub fn min_scalar(&self, c: f32) -> Result<Tensor> {
        self.unary(UnaryOp::MinScalar(c))
    }
    /// `1.0` where `self > c`, else `0.0`.
    pub fn gt_scalar(&self, c: f32) -> Result<Tensor> {
        self.unary(UnaryOp::GtScalar(c))
    }
    pub fn add(&self, o: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Add, o)
    }
    pub fn sub(&self, o: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Sub, o)
    }
    pub fn mul(&self, o: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Mul, o)
    }
    pub fn div(&self, o: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Div, o)
    }
    pub fn maximum(&self, o: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Max, o)
    }
    pub fn minimum(&self, o: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Min, o)
    }
    pub fn pow(&self, o: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Pow, o)
    }
    pub fn gt(&self, o: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Gt, o)
    }
    pub fn ge(&self, o: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Ge, o)
    }
    pub fn eq(&self, o: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Eq, o)
    }
    /// `cond != 0 ? a : b`, broadcasting all three.
    pub fn select(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        Tensor::apply(&cond.0.device, Op::Where, &[cond, a, b])
    }

    // ---- reductions ----

    fn reduce(&self, op: ReduceOp, axis: isize, keepdim: bool) -> Result<Tensor> {
        let a = self.shape().axis("reduce", axis).map_err(|e| e.with_backend(&self.0.device.name()))?;
        let r = self.op1(Op::Reduce { op, axis: a })?;
        if keepdim {
            Ok(r)
        } else {
            let mut d = self.dims().to_vec();
            d.remove(a);
            r.reshape(d)
        }
    }
    pub fn sum_axis(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Sum, axis, keepdim)
    }
    pub fn max_axis(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Max, axis, keepdim)
    }
    pub fn min_axis(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Min, axis, keepdim)
    }
    /// Index of the first maximum along `axis`, as f32.
    pub fn argmax(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::ArgMax, axis, keepdim)
    }
    /// `log(sum(exp(x)))` along `axis`, stable for large values, in one reduction
    /// ([`ReduceOp::LogSumExp`]).
    pub fn logsumexp(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::LogSumExp, axis, keepdim)
    }
    pub fn mean_axis(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        let a = self.shape().axis("mean", axis).map_err(|e| e.with_backend(&self.0.device.name()))?;
        let n = self.dims()[a] as f32;
        self.sum_axis(axis, keepdim)?.mul_scalar(1.0 / n)
    }
    /// Sum of all elements, as a scalar tensor.
    pub fn sum_all(&self) -> Result<Tensor> {
        self.reshape([self.numel()])?.sum_axis(0, false)
    }
    /// Mean of all elements, as a scalar tensor.
    pub fn mean_all(&self) -> Result<Tensor> {
        let n = self.numel().max(1) as f32;
        self.sum_all()?.mul_scalar(1.0 / n)
    }

    // ---- linear algebra and windows ----

    /// Matrix product of rank-2 or rank-3 (batched) tensors.
    pub fn matmul(&self, o: &Tensor) -> Result<Tensor> {
        self.matmul_t(o, false, false)
    }
    /// Matrix product with either side transposed on the fly.
    pub fn matmul_t(&self, o: &Tensor, trans_a: bool, trans_b: bool) -> Result<Tensor> {
        self.op2(Op::MatMul { trans_a, trans_b }, o)
    }
    /// Exact integer matrix product ([`Op::MatMulI8`]): `self` is 8-bit weights `[M, K]` or
    /// `[G, M, K]` (storage [`DType::I8`] or [`DType::U8`], from [`Tensor::from_i8`] /
    /// [`Tensor::from_u8`]), `b` an f32 tensor of whole numbers `[K, N]`, `[G, K, N]` or
    /// `[B, K, N]` (rank-2 weights broadcast over B). Each output element is
    /// `(Σ_k a[m, k] * (b[k, n] as i32)) as f32`, accumulated in `i32` (wrapping on overflow).
    ///
    /// Errors ([`Error::Shape`], naming the op, shapes and backend): `self` not 8-bit
    /// (including the f32 tensors `from_i8` makes where [`Caps::int8`](crate::Caps::int8) is false,
    /// so check that first), `b` not f32, ranks other than 2 or 3, inner sizes or batches
    /// that differ. The result records no gradient (it is a constant, even when `b`
    /// requires one). An example on the CPU backend is in `pixelgrad_cpu`'s crate docs.
    pub fn matmul_i8(&self, b: &Tensor) -> Result<Tensor> {
        self.op2(Op::MatMulI8 { b_i8: false }, b)
    }
    /// [`Tensor::matmul_i8`] for a `b` whose values are whole numbers in `[-128, 127]` (the
    /// contract of [`Op::MatMulI8`]'s `b_i8`): the same exact result, but a backend may pack
    /// `b` to bytes too and use packed 8-bit dot products (WebGPU's `dot4I8Packed` where the
    /// adapter's WGSL has `packed_4x8_integer_dot_product`; see `WgpuBackend::int8_path`).
    /// Activations quantised to `int8` fit as they are; `uint8` ones `x` with zero point `z`
    /// as `x - 128`, adding `(128 - z) · Σ_k a[m, k]` to the result.
    ///
    /// Errors as [`Tensor::matmul_i8`]; a `b` value outside the contract (fractional, NaN or
    /// outside `[-128, 127]`) is an error too, never a wrong number: [`Error::Shape`] from the
    /// CPU backend, an [`Error::Backend`] naming `matmul_i8` at the next read on WebGPU's
    /// packed path (its unpacked fallback computes the exact product of what it was given).
    pub fn matmul_i8_packed(&self, b: &Tensor) -> Result<Tensor> {
        self.op2(Op::MatMulI8 { b_i8: true }, b)
    }
    /// [`Op::MatMulNBits`]: `self [M, k]` times the block-quantised weight `W [k, N]` that
    /// `q` (packed `[N, k_blocks * blob]`, from [`Tensor::from_u8`]), `scales` and `zeros`
    /// (f32 `[N, k_blocks]`) describe, or with `trans` `self [M, N]` times `W^T` (`[M, k]`).
    /// The weight stays packed on the device; the result records a gradient for `self`
    /// only (the weights are frozen: a backward pass that needs one for them is an error).
    pub fn matmul_nbits(&self, q: &Tensor, scales: &Tensor, zeros: &Tensor, nbits: NBits, trans: bool) -> Result<Tensor> {
        let op = Op::MatMulNBits { bits: nbits.bits, block: nbits.block, k: nbits.k, trans };
        Tensor::apply(&self.0.device, op, &[self, q, scales, zeros])
    }
    /// [`Op::Attention`] of `self` as the queries `[B, N, S, H]`, keys `k [B, Nkv, T, H]`,
    /// values `v [B, Nkv, T, Hv]` and an optional additive `mask` broadcastable (rank 4) to
    /// `[B, N, S, T]`, with the options `opts` ([`crate::AttentionOpts`]): one op, without the
    /// `S × T` scores, on any backend. Backends that do not run it
    /// ([`crate::Backend::fused_attention`] false: WebGL; WebGPU with options beyond the
    /// scale) answer a typed [`Error::Backend`]; [`Tensor::attention`] picks this or the
    /// composition.
    pub fn attention_fused(&self, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, opts: crate::AttentionOpts) -> Result<Tensor> {
        let op = Op::Attention { opts, masked: mask.is_some() };
        let mut inputs = vec![self, k, v];
        inputs.extend(mask);
        Tensor::apply(&self.0.device, op, &inputs)
    }
    pub fn im2col(&self, w: Window) -> Result<Tensor> {
        self.op1(Op::Im2Col(w))
    }
    pub fn col2im(&self, window: Window, h: usize, w: usize) -> Result<Tensor> {
        self.op1(Op::Col2Im { window, h, w })
    }
    /// Depthwise convolution of `self [N, C, H, W]` with one filter per channel,
    /// `weights [C, 1, kh, kw]` ([`Op::DepthwiseConv`]).
    pub fn depthwise_conv(&self, weights: &Tensor, window: Window) -> Result<Tensor> {
        self.op2(Op::DepthwiseConv(window), weights)
    }
    /// Dense convolution of `self [N, C, H, W]` with `weights [M, C, kh, kw]` as one op
    /// ([`Op::Conv2d`]) where [`Caps::conv`](crate::Caps::conv); elsewhere an [`Error::Backend`]
    /// (compose [`Tensor::im2col`] and [`Tensor::matmul`], which mean the same).
    pub fn conv(&self, weights: &Tensor, window: Window) -> Result<Tensor> {
        if !self.0.device.backend().caps().conv {
            return Err(Error::backend("conv2d", self.0.device.name(), "no single-op convolution here (caps.conv is false)"));
        }
        self.op2(Op::Conv2d(window), weights)
    }
    /// Max pooling of `self [N, C, H, W]` over `window` ([`Op::MaxPool`]); its gradient is
    /// [`Tensor::max_pool_grad`].
    pub fn max_pool(&self, window: Window) -> Result<Tensor> {
        self.op1(Op::MaxPool(window))
    }
    /// The gradient of [`Tensor::max_pool`] of `self` for the output gradient `dy`
    /// ([`Op::MaxPoolGrad`]).
    pub fn max_pool_grad(&self, dy: &Tensor, window: Window) -> Result<Tensor> {
        self.op2(Op::MaxPoolGrad(window), dy)
    }
    /// Average pooling of `self [N, C, H, W]` over `window` in one pass, taps in the padding
    /// counting as 0 (the program [`crate::window_program::WindowProgram::AvgPool`]; the
    /// padding must be smaller than the window).
    pub fn avg_pool(&self, window: Window) -> Result<Tensor> {
        self.window_program(crate::window_program::WindowProgram::AvgPool, window, &[])
    }
    /// Window program `program` over `window` ([`Op::Window`]) of `self` and, for a gradient
    /// program, `others = [dy]`.
    pub fn window_program(&self, program: crate::window_program::WindowProgram, window: Window, others: &[&Tensor]) -> Result<Tensor> {
        let mut inputs = vec![self];
        inputs.extend_from_slice(others);
        Tensor::apply(&self.0.device, Op::Window { program, window }, &inputs)
    }
    /// `out[.., j, ..] = self[.., idx[.., j, ..], ..]` along `axis` (indices stored as f32).
    pub fn gather(&self, axis: usize, idx: &Tensor) -> Result<Tensor> {
        self.op2(Op::Gather { axis }, idx)
    }
    /// Zeros of `self`'s shape with `axis` resized to `size`, then `out[idx] += self`.
    pub fn scatter_add(&self, axis: usize, size: usize, idx: &Tensor) -> Result<Tensor> {
        self.op2(Op::ScatterAdd { axis, size }, idx)
    }

    // ---- movement ----

    pub fn reshape(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        if shape == self.0.shape {
            return Ok(self.clone());
        }
        self.op1(Op::Reshape(shape))
    }
    /// Reorders axes: output axis `i` is input axis `perm[i]` ([`Op::Permute`]). When only
    /// size-1 axes move (NHWC to NCHW with one channel, say), the elements keep their order
    /// and this is a [`Tensor::reshape`]: no copy on any backend.
    pub fn permute(&self, perm: &[usize]) -> Result<Tensor> {
        match self.0.shape.permuted_in_place(perm) {
            Some(dims) => self.reshape(dims),
            None => self.op1(Op::Permute(perm.to_vec())),
        }
    }
    /// Swaps two axes.
    pub fn transpose(&self, a: usize, b: usize) -> Result<Tensor> {
        let mut p: Vec<usize> = (0..self.rank()).collect();
        if a >= p.len() || b >= p.len() {
            return Err(Error::Shape {
                op: "transpose",
                shapes: vec![self.dims().to_vec()],
                backend: self.0.device.name(),
                msg: format!("axes {a} and {b} out of range"),
            });
        }
        p.swap(a, b);
        self.permute(&p)
    }
    /// Stretches size-1 axes (and adds leading axes) to `shape`.
    pub fn broadcast_to(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        if shape == self.0.shape {
            return Ok(self.clone());
        }
        self.op1(Op::Expand(shape))
    }
    /// `start..end` along one axis.
    pub fn slice(&self, axis: usize, start: usize, end: usize) -> Result<Tensor> {
        let mut starts = vec![0; self.rank()];
        let mut ends = self.dims().to_vec();
        if axis >= self.rank() {
            return Err(Error::Shape {
                op: "slice",
                shapes: vec![self.dims().to_vec()],
                backend: self.0.device.name(),
                msg: format!("axis {axis} out of range"),
            });
        }
        starts[axis] = start;
        ends[axis] = end;
        self.op1(Op::Slice { starts, ends })
    }
    pub fn pad(&self, before: &[usize], after: &[usize]) -> Result<Tensor> {
        self.op1(Op::Pad { before: before.to_vec(), after: after.to_vec() })
    }
    /// Joins tensors along `axis`.
    pub fn concat(tensors: &[&Tensor], axis: usize) -> Result<Tensor> {
        let first = tensors.first().ok_or_else(|| Error::invalid("concat", "no tensors given"))?;
        Tensor::apply(&first.0.device, Op::Concat { axis }, tensors)
    }
    /// Merges axes `from..` into one.
    pub fn flatten_from(&self, from: usize) -> Result<Tensor> {
        let d = self.dims();
        let from = from.min(d.len());
        let mut nd = d[..from].to_vec();
        nd.push(d[from..].iter().product());
        self.reshape(nd)
    }
    /// Inserts a size-1 axis at `axis`.
    pub fn unsqueeze(&self, axis: usize) -> Result<Tensor> {
        let mut d = self.dims().to_vec();
        d.insert(axis.min(d.len()), 1);
        self.reshape(d)
    }
}

/// The error for `given` values offered for a tensor of `shape`.
fn count_mismatch(op: &'static str, shape: &Shape, device: &Device, given: usize) -> Error {
    let msg = format!("{given} values given for {} elements", shape.numel());
    Error::Shape { op, shapes: vec![shape.0.clone()], backend: device.name(), msg }
}
