//! pixelgrad-cpu: the CPU backend, in two modes sharing one set of kernels.
//!
//! - [`CpuBackend::new`]: the fast path. `f32` storage, matmul through `matrixmultiply`
//!   natively (SIMD, cache-blocked) and through pixelgrad's own wasm SIMD GEMM in the browser
//!   (`sgemm`: packed 4x8 tiles on `v128` lanes), depthwise convolution on 4-lane vectors
//!   (`depthwise`), large elementwise / window / reduction kernels split across rayon threads
//!   natively and on Web Workers in a wasm build with atomics (`threads`); single-threaded in
//!   a wasm build without them.
//! - [`CpuBackend::reference`]: the numerical reference. `f64` storage, plain loops, no
//!   threads; [`Backend::upload_f64`] and [`Backend::read_f64`] are exact. Conformance tests
//!   compare every backend with it and check gradients by finite differences on it.
//!
//! Kernels are written once, generic over [`Element`] (`f32` / `f64`), one file per op family:
//! `elementwise`, `reduce`, `matmul`, `window` (im2col / col2im), `index` (gather /
//! scatter-add), `movement` (permute / expand / slice / pad / concat), `random`, `int8`,
//! `winograd` (the dense convolution, [`Op::Conv2d`]); `narrow` dispatches the ops on 8-bit
//! and f16 storage.
//!
//! Both modes store 8-bit weights ([`Caps::int8`](pixelgrad_core::Caps::int8) is true): [`CpuStorage::I8`] /
//! [`CpuStorage::U8`], one byte per element (`bytes_in_use` counts one byte each), read back
//! as exact f32 (or f64 on the reference), and run [`Op::MatMulI8`] with `i32` accumulation
//! (`int8`; on the reference too, whose f64 output holds the same f32-rounded values).
//!
//! Both modes store half-precision values too ([`Caps::f16_storage`](pixelgrad_core::Caps::f16_storage) is true):
//! [`CpuStorage::F16`], two bytes per element, read back exactly as f32 / f64. [`Op::Widen`]
//! converts 8-bit or f16 storage to this mode's precision, exactly.
//!
//! ```
//! use pixelgrad_core::{Device, Tensor};
//! use pixelgrad_cpu::CpuBackend;
//!
//! # fn main() -> pixelgrad_core::Result<()> {
//! let dev = Device::new(CpuBackend::new());
//! let a = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0, 4.0], [2, 2])?;
//! let b = Tensor::from_vec(&dev, &[1.0, 0.0, 0.0, 1.0], [2, 2])?;
//! assert_eq!(a.matmul(&b)?.to_vec()?, vec![1.0, 2.0, 3.0, 4.0]);
//!
//! // The f64 reference keeps double precision end to end.
//! let r = Device::new(CpuBackend::reference());
//! let x = Tensor::from_f64(&r, &[0.1, 0.2], [2])?;
//! assert_eq!(x.sum_all()?.to_vec_f64()?, vec![0.1 + 0.2]);
//! # Ok(())
//! # }
//! ```
//!
//! 8-bit weights and the exact integer matmul ([`Tensor::matmul_i8`](pixelgrad_core::Tensor::matmul_i8)):
//!
//! ```
//! use pixelgrad_core::{kernel::DType, Backend, Device, Tensor};
//! use pixelgrad_cpu::CpuBackend;
//!
//! # fn main() -> pixelgrad_core::Result<()> {
//! let dev = Device::new(CpuBackend::new());
//! assert!(dev.backend().caps().int8);
//! // Weights [2, 3], one byte each.
//! let w = Tensor::from_i8(&dev, &[1, -2, 3, -128, 127, 0], [2, 3])?;
//! assert_eq!(w.storage_dtype(), DType::I8);
//! assert_eq!(w.to_vec()?, vec![1.0, -2.0, 3.0, -128.0, 127.0, 0.0]);
//! // Whole-number activations [3, 1] (stored as f32).
//! let x = Tensor::from_vec(&dev, &[10.0, -20.0, 255.0], [3, 1])?;
//! // 1*10 - 2*(-20) + 3*255 = 815 and -128*10 + 127*(-20) + 0 = -3820, summed in i32.
//! assert_eq!(w.matmul_i8(&x)?.to_vec()?, vec![815.0, -3820.0]);
//! // Other ops refuse 8-bit inputs with a typed error.
//! assert!(w.add(&w).is_err());
//! # Ok(())
//! # }
//! ```
//!
//! Half-precision storage, widened exactly to f32 for ordinary ops
//! ([`Tensor::widen`](pixelgrad_core::Tensor::widen)):
//!
//! ```
//! use pixelgrad_core::half::f16;
//! use pixelgrad_core::{kernel::DType, Backend, Device, Tensor};
//! use pixelgrad_cpu::CpuBackend;
//!
//! # fn main() -> pixelgrad_core::Result<()> {
//! let dev = Device::new(CpuBackend::new());
//! assert!(dev.backend().caps().f16_storage);
//! let h: Vec<f16> = [1.5f32, -0.0, 65504.0].iter().map(|&v| f16::from_f32(v)).collect();
//! let w = Tensor::from_f16(&dev, &h, [3])?; // two bytes per element
//! assert_eq!(w.storage_dtype(), DType::F16);
//! assert!(w.add(&w).is_err()); // only reshape and widen take f16 storage
//! let x = w.widen()?; // f32, the same values
//! assert_eq!(x.storage_dtype(), DType::F32);
//! assert_eq!(x.add(&x)?.to_vec()?, vec![3.0, -0.0, 131008.0]);
//! // 8-bit weights widen the same way.
//! assert_eq!(Tensor::from_i8(&dev, &[-128, 127], [2])?.widen()?.to_vec()?, vec![-128.0, 127.0]);
//! # Ok(())
//! # }
//! ```

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use pixelgrad_core::fusion::{self as corefusion, FusionState};
use pixelgrad_core::kernel::fuse::{self, Pending};
use pixelgrad_core::kernel::{DType, Launch};
use pixelgrad_core::{Backend, BackendKind, Caps, Counters, Error, Op, Result, Shape, Storage, Trace};

mod attention;
mod block_eval;
mod blocks;
mod bounds;
mod byte;
mod depthwise;
pub mod element;
mod element_impls;
mod elementwise;
mod f16;
mod fusion;
mod igemm;
#[cfg(target_arch = "x86_64")]
mod igemm_avx2;
mod index;
mod int8;
pub mod kernels;
mod matmul;
mod movement;
mod narrow;
mod nbits;
mod par;
mod pool;
mod random;
mod reduce;
mod schedule;
pub mod threads;
// Natively only its tests call it (the backend uses matrixmultiply there).
#[cfg_attr(not(all(target_arch = "wasm32", target_feature = "simd128")), allow(dead_code))]
mod sgemm;
mod simd;
mod simd_int;
mod trace;
mod window;
mod winograd;

pub use element::Element;

/// Host memory of one tensor: `f32` on the fast path, `f64` on the reference, and 8-bit
/// weights ([`pixelgrad_core::Tensor::from_i8`], one byte per element) and half-precision
/// values ([`pixelgrad_core::Tensor::from_f16`], two bytes per element) on both.
#[derive(Debug)]
pub enum CpuStorage {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    F16(Vec<half::f16>),
}

impl CpuStorage {
    fn bytes(&self) -> u64 {
        match self {
            CpuStorage::F32(v) => (v.len() * 4) as u64,
            CpuStorage::F64(v) => (v.len() * 8) as u64,
            CpuStorage::I8(v) => v.len() as u64,
            CpuStorage::U8(v) => v.len() as u64,
            CpuStorage::F16(v) => (v.len() * 2) as u64,
        }
    }

    /// Elements held.
    fn len(&self) -> usize {
        match self {
            CpuStorage::F32(v) => v.len(),
            CpuStorage::F64(v) => v.len(),
            CpuStorage::I8(v) => v.len(),
            CpuStorage::U8(v) => v.len(),
            CpuStorage::F16(v) => v.len(),
        }
    }

    /// The element type, as core names it.
    pub fn dtype(&self) -> DType {
        match self {
            CpuStorage::F32(_) => DType::F32,
            // The reference's doubles stand for f32 tensors.
            CpuStorage::F64(_) => DType::F32,
            CpuStorage::I8(_) => DType::I8,
            CpuStorage::U8(_) => DType::U8,
            CpuStorage::F16(_) => DType::F16,
        }
    }

    /// The first `len` values as f64 (exact for every variant), or `None` if fewer are held.
    fn values_f64(&self, len: usize) -> Option<Vec<f64>> {
        if self.len() < len {
            return None;
        }
        Some(match self {
            CpuStorage::F32(v) => v[..len].iter().map(|&x| x as f64).collect(),
            CpuStorage::F64(v) => v[..len].to_vec(),
            CpuStorage::I8(v) => v[..len].iter().map(|&x| x as f64).collect(),
            CpuStorage::U8(v) => v[..len].iter().map(|&x| x as f64).collect(),
            CpuStorage::F16(v) => v[..len].iter().map(|x| x.to_f64()).collect(),
        })
    }
}

/// What a CPU [`Storage`] holds: the data plus a handle on the backend's counters, so that
/// dropping the last tensor using it is reflected in `bytes_in_use`.
#[derive(Debug)]
pub struct CpuBuffer {
    data: CpuStorage,
    counters: Rc<Cell<Counters>>,
}

impl CpuBuffer {
    /// The elements.
    pub fn data(&self) -> &CpuStorage {
        &self.data
    }
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        let mut c = self.counters.get();
        c.bytes_in_use = c.bytes_in_use.saturating_sub(self.data.bytes());
        self.counters.set(c);
        // The next output of this length reuses the memory (`pool`).
        if let CpuStorage::F32(v) = &mut self.data {
            pool::give(std::mem::take(v));
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Fast,
    Reference,
}

/// The CPU backend; see the crate docs for its two modes.
#[derive(Debug)]
pub struct CpuBackend {
    mode: Mode,
    counters: Rc<Cell<Counters>>,
    /// Elementwise chains fuse into one pass (`fusion`); the fast path only.
    fuse: bool,
    /// The fusion layer's state: its generation is bumped at every read, flush and step
    /// boundary (see `fusion`); the CPU never settles, so nothing is remembered.
    fusion: FusionState,
    /// The kernel trace being recorded, if one is (`trace`).
    recorder: RefCell<Option<trace::Recorder>>,
}

impl Default for CpuBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuBackend {
    /// The fast `f32` backend (multi-threaded natively), fusing chains of elementwise ops
    /// into one pass over memory (see [`CpuBackend::unfused`]).
    pub fn new() -> Self {
        Self::with_mode(Mode::Fast, true)
    }

    /// The fast `f32` backend running every elementwise op as its own pass: the same values
    /// as [`CpuBackend::new`] (fusion evaluates the same `f32` operations in the same order),
    /// for comparisons and benchmarks.
    ///
    /// ```
    /// use pixelgrad_core::{Backend, Device, Tensor};
    /// use pixelgrad_cpu::CpuBackend;
    ///
    /// # fn main() -> pixelgrad_core::Result<()> {
    /// let run = |b: CpuBackend| -> pixelgrad_core::Result<(Vec<f32>, u64)> {
    ///     let dev = Device::new(b);
    ///     let x = Tensor::from_vec(&dev, &[-4.0, -1.0, 0.5, 5.0], [4])?;
    ///     // hard-swish as ONNX graphs spell it: x * clip(x + 3, 0, 6) / 6
    ///     let y = x.mul(&x.add_scalar(3.0)?.max_scalar(0.0)?.min_scalar(6.0)?)?.mul_scalar(1.0 / 6.0)?;
    ///     Ok((y.to_vec()?, dev.backend().counters().launches))
    /// };
    /// let (fused, fused_passes) = run(CpuBackend::new())?;
    /// let (plain, plain_passes) = run(CpuBackend::unfused())?;
    /// assert_eq!(fused, plain);
    /// assert_eq!(fused_passes, 1);
    /// assert!(plain_passes > 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn unfused() -> Self {
        Self::with_mode(Mode::Fast, false)
    }

    /// The `f64` plain-loop reference backend (never fuses).
    pub fn reference() -> Self {
        Self::with_mode(Mode::Reference, false)
    }

    fn with_mode(mode: Mode, fuse: bool) -> Self {
        CpuBackend {
            mode,
            counters: Rc::new(Cell::new(Counters::default())),
            fuse,
            fusion: FusionState::unsettled(),
            recorder: RefCell::new(None),
        }
    }

    /// Starts a new fusion generation (see the `fusion` module).
    fn new_generation(&self) {
        self.fusion.new_generation();
    }

    /// True for [`CpuBackend::reference`].
    pub fn is_reference(&self) -> bool {
        self.mode == Mode::Reference
    }

    fn bump(&self, f: impl FnOnce(&mut Counters)) {
        let mut c = self.counters.get();
        f(&mut c);
        self.counters.set(c);
    }

    /// Our data inside `s`, computing it first if it is a pending fused result.
    fn mine<'a>(&self, op: &'static str, s: &'a Storage) -> Result<&'a CpuStorage> {
        corefusion::realise(&fusion::Fuser(self), op, s).map(|b| &b.data)
    }

    /// `s` itself, or the storage a pending `s` computed to (computing it if it was not).
    fn resolved(&self, s: &Storage) -> Result<Storage> {
        match s {
            Storage::Pending(v) => Ok(corefusion::realise::force(&fusion::Fuser(self), v)?.clone()),
            Storage::Memory(_) => Ok(s.clone()),
        }
    }

    /// Adds a kernel that read `inputs` and wrote `out` to the open recording, if one is open.
    fn note(&self, kind: impl FnOnce() -> trace::Kind, out_shape: &Shape, inputs: &[&Storage], out: &Storage) -> Result<()> {
        if self.recorder.borrow().is_none() {
            return Ok(());
        }
        // Inputs were computed by the kernel already: resolving them runs nothing.
        let ins = inputs.iter().map(|s| self.resolved(s)).collect::<Result<Vec<_>>>()?;
        if let Some(rec) = self.recorder.borrow_mut().as_mut() {
            rec.step(kind(), out_shape, &ins, out);
        }
        Ok(())
    }

    /// Marks the open recording, if any, as one that cannot be replayed.
    fn break_trace(&self, why: &'static str) {
        if let Some(rec) = self.recorder.borrow_mut().as_mut() {
            rec.set_broken(why);
        }
    }

    /// Elements `s` holds (a pending result: its shape's), without computing it.
    fn len_of(&self, op: &'static str, s: &Storage) -> Result<usize> {
        corefusion::len_of(&fusion::Fuser(self), op, s)
    }

    /// The error for an input whose storage `op` cannot take.
    fn wrong_storage(&self, op: &'static str, data: &CpuStorage) -> Error {
        let msg = match data {
            CpuStorage::I8(_) | CpuStorage::U8(_) => "an input has 8-bit storage, which only matmul_i8 (as its weights) and widen take",
            CpuStorage::F16(_) => "an input has f16 storage, which only widen takes",
            _ => "storage has the other precision (fast vs reference)",
        };
        Error::backend(op, self.name(), msg)
    }

    /// An elementwise op returned pending (see the `fusion` module).
    #[allow(clippy::too_many_arguments)]
    fn defer(
        &self,
        op: &Op,
        launch: &pixelgrad_core::kernel::Launch,
        name: &'static str,
        inputs: &[&Storage],
        shapes: &[&Shape],
        out: &Shape,
    ) -> Result<Storage> {
        let lens = inputs.iter().map(|s| self.len_of(op.name(), s)).collect::<Result<Vec<_>>>()?;
        pixelgrad_core::check_execute(op, &lens, shapes, out, &self.name())?;
        // Only f32 storage is read by elementwise kernels: refuse the rest now, as running the
        // op at once would.
        for s in inputs {
            if let Ok(b) = pixelgrad_core::fusion::FusionDevice::memory(&fusion::Fuser(self), op.name(), s) {
                if !matches!(b.data, CpuStorage::F32(_)) {
                    return Err(self.wrong_storage(op.name(), &b.data));
                }
            }
        }
        // Inputs still pending but not inlined are computed now (`Limits::leaves_in_memory`): a
        // pending result's inputs are always in memory, so forcing it never recurses.
        corefusion::defer_map(&fusion::Fuser(self), &self.fusion, op, launch, name, inputs, shapes, out)
    }

    /// Computes a pending fused result: one elementwise pass over its inputs.
    fn run_fused(&self, p: &Pending<Storage>) -> Result<Storage> {
        let leaves: Vec<(&Storage, &Shape)> = p.leaves.iter().map(|(s, sh)| (s, sh)).collect();
        let res = self.fused_pass(&p.launch, &leaves, &p.shape)?;
        let kind = || trace::Kind::Fused { launch: p.launch.clone(), shapes: p.leaves.iter().map(|l| l.1.clone()).collect() };
        let ins: Vec<&Storage> = p.leaves.iter().map(|l| &l.0).collect();
        self.note(kind, &p.shape, &ins, &res)?;
        Ok(res)
    }

    /// One elementwise pass of `launch` over `leaves` (storages and the views read of them).
    fn fused_pass(&self, launch: &Launch, leaves: &[(&Storage, &Shape)], out: &Shape) -> Result<Storage> {
        let mut ins: Vec<(&[f32], &Shape)> = Vec::with_capacity(leaves.len());
        for &(leaf, shape) in leaves {
            match self.mine("fused", leaf)? {
                CpuStorage::F32(v) => ins.push((v.as_slice(), shape)),
                other => return Err(self.wrong_storage("fused", other)),
            }
        }
        let res = elementwise::map(launch, &ins, out)?;
        self.bump(|c| c.launches += 1);
        Ok(self.wrap(CpuStorage::F32(res)))
    }

    /// Runs `op` now, unfused: what `execute` does with every op it does not defer.
    fn compute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        let res = match op {
            Op::MatMulI8 { b_i8 } => self.matmul_i8(*b_i8, inputs, shapes, out)?,
            Op::Widen => self.widen(inputs, shapes, out)?,
            Op::NarrowF16 => self.narrow_f16(inputs, shapes, out)?,
            Op::Narrow8 { signed } => self.narrow8(*signed, inputs, shapes, out)?,
            Op::MatMulNBits { .. } => self.matmul_nbits(op, inputs, shapes, out)?,
            _ => match self.mode {
                Mode::Fast => CpuStorage::F32(self.run_typed(op, inputs, shapes, out, as_f32)?),
                Mode::Reference => CpuStorage::F64(self.run_typed(op, inputs, shapes, out, as_f64)?),
            },
        };
        self.bump(|c| c.launches += 1);
        Ok(self.wrap(res))
    }

    fn wrap(&self, data: CpuStorage) -> Storage {
        let bytes = data.bytes();
        self.bump(|c| {
            c.allocations += 1;
            c.bytes_in_use += bytes;
        });
        Storage::new(CpuBuffer { data, counters: self.counters.clone() })
    }

    /// Runs `op` on storages of element type `T`, pulled out by `get`.
    fn run_typed<T: Element>(
        &self,
        op: &Op,
        inputs: &[&Storage],
        shapes: &[&Shape],
        out: &Shape,
        get: impl Fn(&CpuStorage) -> Option<&Vec<T>>,
    ) -> Result<Vec<T>> {
        let name = self.name();
        let mut xs = Vec::with_capacity(inputs.len());
        for s in inputs {
            let data = self.mine(op.name(), s)?;
            let v = get(data).ok_or_else(|| self.wrong_storage(op.name(), data))?;
            xs.push(v.as_slice());
        }
        kernels::run::<T>(&name, op, &xs, shapes, out)
    }
}

fn as_f32(s: &CpuStorage) -> Option<&Vec<f32>> {
    match s {
        CpuStorage::F32(v) => Some(v),
        _ => None,
    }
}

fn as_f64(s: &CpuStorage) -> Option<&Vec<f64>> {
    match s {
        CpuStorage::F64(v) => Some(v),
        _ => None,
    }
}

/// What the CPU backend can do, in both modes (constants: nothing to measure). Convolution as
/// one op: Winograd for 3x3 stride-1 windows on the fast path, im2col + GEMM on the reference
/// (`winograd`). 8-bit and f16 storage, narrowing to f16: the reference reads them as exact
/// f64 too. f16 matmul operands are widened first (no direct f16 product). Full f32 storage
/// and arithmetic, no textures, tensors up to the largest allocation: training is reliable.
pub static CAPS: Caps = Caps {
    conv: true,
    int8: true,
    int8_storage: true,
    int8_kernel: Some("cpu-i32"),
    f16_storage: true,
    shader_f16: None,
    f16_matmul: false,
    f16_matmul_arithmetic: None,
    narrow_f16: true,
    reduced_precision: None,
    ..Caps::F32_ONLY
};

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn name(&self) -> String {
        match self.mode {
            Mode::Fast => "cpu".into(),
            Mode::Reference => "cpu-f64-reference".into(),
        }
    }

    fn upload(&self, data: &[f32]) -> Result<Storage> {
        Ok(match self.mode {
            Mode::Fast => {
                // A recycled buffer of this length where one waits (an input uploaded run
                // after run), every element overwritten.
                let mut v = pool::take(data.len());
                v.copy_from_slice(data);
                self.wrap(CpuStorage::F32(v))
            }
            Mode::Reference => self.wrap(CpuStorage::F64(data.iter().map(|&v| v as f64).collect())),
        })
    }

    fn upload_f64(&self, data: &[f64]) -> Result<Storage> {
        Ok(match self.mode {
            Mode::Fast => self.wrap(CpuStorage::F32(data.iter().map(|&v| v as f32).collect())),
            Mode::Reference => self.wrap(CpuStorage::F64(data.to_vec())),
        })
    }

    /// [`CAPS`], the same in both modes.
    fn caps(&self) -> &Caps {
        &CAPS
    }

    /// Any head sizes and options, in both modes (`attention`: blocked, online softmax).
    fn fused_attention(&self, _head: usize, _value_head: usize, _opts: &pixelgrad_core::AttentionOpts) -> bool {
        true
    }

    fn upload_int8(&self, data: &[u8], dtype: DType) -> Result<Storage> {
        Ok(match dtype {
            DType::I8 => self.wrap(CpuStorage::I8(data.iter().map(|&v| v as i8).collect())),
            DType::U8 => self.wrap(CpuStorage::U8(data.to_vec())),
            other => return Err(Error::backend("upload_int8", self.name(), format!("{other} is not an 8-bit type (i8 or u8)"))),
        })
    }

    fn upload_f16(&self, bits: &[u16]) -> Result<Storage> {
        Ok(self.wrap(CpuStorage::F16(bits.iter().map(|&b| half::f16::from_bits(b)).collect())))
    }

    fn execute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        if let Op::Reshape(_) = op {
            if let Some(s) = inputs.first() {
                return Ok((*s).clone());
            }
        }
        if self.fuse {
            if let Some((launch, name)) = fuse::elementwise(op)? {
                return self.defer(op, &launch, name, inputs, shapes, out);
            }
        }
        let res = self.compute(op, inputs, shapes, out)?;
        if let Op::Random { .. } = op {
            // A replay would draw the same numbers again.
            self.break_trace("random numbers were drawn");
        }
        let kind = || trace::Kind::Op { op: op.clone(), shapes: shapes.iter().map(|&s| s.clone()).collect() };
        self.note(kind, out, inputs, &res)?;
        Ok(res)
    }

    fn read(&self, storage: &Storage, len: usize) -> Result<Vec<f32>> {
        // A read ends an iteration of eager code: later ops start a new fusion generation.
        self.new_generation();
        // What runs after a read may depend on the values read.
        self.break_trace("a value was read back");
        self.bump(|c| c.readbacks += 1);
        let v: Vec<f32> = match self.mine("read", storage)? {
            CpuStorage::F32(v) => v.iter().take(len).copied().collect(),
            CpuStorage::F64(v) => v.iter().take(len).map(|&x| x as f32).collect(),
            CpuStorage::I8(v) => v.iter().take(len).map(|&x| x as f32).collect(),
            CpuStorage::U8(v) => v.iter().take(len).map(|&x| x as f32).collect(),
            CpuStorage::F16(v) => v.iter().take(len).map(|x| x.to_f32()).collect(),
        };
        if v.len() != len {
            return Err(Error::backend("read", self.name(), format!("asked for {len} elements, storage holds {}", v.len())));
        }
        Ok(v)
    }

    fn read_f64(&self, storage: &Storage, len: usize) -> Result<Vec<f64>> {
        self.new_generation();
        self.break_trace("a value was read back");
        self.bump(|c| c.readbacks += 1);
        let data = self.mine("read", storage)?;
        let v: Vec<f64> = data.values_f64(len.min(data.len())).unwrap_or_default();
        if v.len() != len {
            return Err(Error::backend("read", self.name(), format!("asked for {len} elements, storage holds {}", v.len())));
        }
        Ok(v)
    }

    fn counters(&self) -> Counters {
        self.counters.get()
    }

    fn flush(&self) -> Result<()> {
        self.new_generation();
        Ok(())
    }

    fn begin_step(&self, _key: u64) -> Result<()> {
        self.new_generation();
        Ok(())
    }

    fn end_step(&self) -> Result<()> {
        self.new_generation();
        Ok(())
    }

    /// Records on the fast path only: the reference's loops stay the plain definition.
    fn trace_begin(&self, inputs: &[&Storage]) -> bool {
        if self.mode != Mode::Fast || self.recorder.borrow().is_some() {
            return false;
        }
        let mut ins = Vec::with_capacity(inputs.len());
        for s in inputs {
            let Ok(r) = self.resolved(s) else { return false };
            let Ok(len) = self.len_of("trace_begin", &r) else { return false };
            ins.push((r, len));
        }
        let rec = trace::Recorder::new(&ins);
        let started = rec.is_some();
        *self.recorder.borrow_mut() = rec;
        started
    }

    fn trace_end(&self, outputs: &[&Storage]) -> Option<Trace> {
        self.recorder.borrow().as_ref()?;
        let outs: Result<Vec<Storage>> = outputs.iter().map(|s| self.resolved(s)).collect();
        let rec = self.recorder.borrow_mut().take()?;
        rec.finish(&outs.ok()?)
    }

    fn trace_abort(&self) {
        self.recorder.borrow_mut().take();
    }

    fn trace_replay(&self, trace: &Trace, inputs: &[&Storage]) -> Result<Vec<Storage>> {
        let t = trace
            .get::<trace::CpuTrace>()
            .ok_or_else(|| Error::backend("trace_replay", self.name(), "the trace was recorded by another backend"))?;
        let mut vals: Vec<Option<Storage>> = vec![None; t.slots];
        let mut lens = Vec::with_capacity(inputs.len());
        for (i, s) in inputs.iter().enumerate() {
            let r = self.resolved(s)?;
            lens.push(self.len_of("trace_replay", &r)?);
            if i < t.slots {
                vals[i] = Some(r);
            }
        }
        trace.check_inputs(&self.name(), &lens)?;
        for (slot, c) in &t.constants {
            vals[*slot] = Some(c.clone());
        }
        let missing = || Error::backend("trace_replay", self.name(), "a kernel reads a value no earlier kernel kept");
        for step in &t.steps {
            let res = {
                let ins = step.ins.iter().map(|&i| vals[i].as_ref().ok_or_else(missing)).collect::<Result<Vec<&Storage>>>()?;
                match &step.kind {
                    trace::Kind::Op { op, shapes } => {
                        let shapes: Vec<&Shape> = shapes.iter().collect();
                        self.compute(op, &ins, &shapes, &step.out_shape)?
                    }
                    trace::Kind::Fused { launch, shapes } => {
                        let leaves: Vec<(&Storage, &Shape)> = ins.iter().copied().zip(shapes).collect();
                        self.fused_pass(launch, &leaves, &step.out_shape)?
                    }
                }
            };
            self.bump(|c| c.replayed += 1);
            vals[step.out] = Some(res);
            for &f in &step.frees {
                vals[f] = None;
            }
        }
        t.outputs.iter().map(|&o| vals[o].clone().ok_or_else(missing)).collect()
    }

    fn describe_storage(&self, storage: &Storage, len: usize) -> Option<pixelgrad_core::StorageLayout> {
        let data = self.mine("describe_storage", storage).ok()?;
        let n = data.len() as u64;
        let format = match data {
            CpuStorage::F32(_) => "f32",
            CpuStorage::F64(_) => "f64",
            CpuStorage::I8(_) => "i8",
            CpuStorage::U8(_) => "u8",
            CpuStorage::F16(_) => "f16",
        };
        Some(pixelgrad_core::StorageLayout {
            container: "host",
            width: n,
            height: 1,
            format: format.into(),
            used: (len as u64).min(n),
            allocated: n,
            layout: "row-major, contiguous".into(),
            bytes: data.bytes(),
        })
    }
}
