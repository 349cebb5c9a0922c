//! [`WgpuBackend`]: construction (async everywhere, blocking natively) and the
//! [`Backend`] implementation.

use std::rc::Rc;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Backend, BackendKind, Caps, Counters, Error, LocalFuture, Op, Result, Shape, Storage, Trace};

use crate::context::{Gpu, GpuTensor};
use crate::{fusion, ops, readback, replay, BACKEND};

/// Which matmul kernel the backend runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MatmulKernel {
    /// [`MatmulKernel::Registers`] on CPU adapters (Mesa lavapipe, SwiftShader: adapter
    /// device type `Cpu`), [`MatmulKernel::Tiled`] on everything else.
    #[default]
    Auto,
    /// Tiles staged through workgroup memory, with barriers: the usual GPU kernel.
    Tiled,
    /// Register blocks read straight from storage, no workgroup memory or barriers: ~4x
    /// faster on lavapipe, whose workgroup-memory loads and barriers are expensive.
    Registers,
}

/// Which kernel reduces a tensor along an axis, stored or a fused elementwise input (the
/// rendered first pass reads it through the fused read). The bias gradient's two-axis sum
/// always runs the hand-written kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReduceKernel {
    /// [`ReduceKernel::Rendered`] where it measured faster: on SwiftShader (a browser's CPU
    /// adapter, or by name) for every kind from 2^16 input elements up; on other CPU adapters (lavapipe) for sums,
    /// log-sum-exp and an argmax of one group (an axis of up to 1024);
    /// [`ReduceKernel::HandWritten`] for max, min and a longer argmax there, and on every GPU
    /// adapter (not measured there). Over a fused input: every kind on SwiftShader, only
    /// log-sum-exp on lavapipe. See `bench/notes/2026-12-07-webgpu-reductions-rendered.md`.
    #[default]
    Auto,
    /// `kernels/reduce.wgsl`: a workgroup tree in workgroup memory over long axes, serial
    /// chunks of 64 over short ones.
    HandWritten,
    /// Passes of the programs rendered from their one definition
    /// (`pixelgrad_core::kernel::reductions`): one invocation per output and group of up to
    /// 1024 elements, a tree of passes over longer axes.
    Rendered,
}

/// How to pick and drive the adapter.
#[derive(Clone, Debug)]
pub struct WgpuOptions {
    /// Discrete or integrated GPU preference.
    pub power_preference: wgpu::PowerPreference,
    /// Which native APIs to try (ignored in browsers, where it is always WebGPU).
    pub backends: wgpu::Backends,
    /// Launches recorded before an automatic submission (bounds latency and the parameter
    /// ring; reads and `flush` submit earlier).
    pub max_ops_per_submit: usize,
    /// Longest a native blocking read waits for the GPU before giving up with an error.
    pub read_timeout: std::time::Duration,
    /// Matmul kernel choice (by adapter type unless forced; the environment variable
    /// `PIXELGRAD_WGPU_MATMUL=tiled|registers` forces it too).
    pub matmul: MatmulKernel,
    /// Use subgroup operations where a native CPU adapter offers them (the shared-A register
    /// matmul); `false` runs that adapter without them, for comparisons.
    pub subgroups: bool,
    /// Fuse chains of elementwise ops into one kernel (one launch per chain); `false` runs
    /// every op as its own launch (for comparisons and tests).
    pub fuse: bool,
    /// Compute the pending elementwise results a step (or a flush) ends with in grouped
    /// launches, several outputs per launch (the optimizer's updates of every parameter, the
    /// running sums); `false` gives each its own launch (for comparisons and tests). Needs
    /// `fuse`.
    pub group: bool,
    /// Run [`Tensor::matmul_i8_packed`](pixelgrad_core::Tensor::matmul_i8_packed) on WGSL's
    /// `dot4I8Packed` where the instance has the `packed_4x8_integer_dot_product` language
    /// feature; `false` runs the unpacked-i32 kernels instead (for comparisons and tests). The
    /// environment variable `PIXELGRAD_WGPU_NO_DOT4` (any value but `0` or empty) turns it
    /// off as well, for tools that build the backend with default options (the CLI).
    pub int8_dot4: bool,
    /// Let [`pixelgrad_core::Op::MatMul`] read one f16-stored operand directly
    /// (`Caps::f16_matmul`, what the ONNX importer's f16 weights use) where the
    /// matmuls run on the tiled kernels ([`MatmulKernel::Tiled`], every GPU; the f16 kernel
    /// is the tiled one with f16 tile loads). On CPU adapters (lavapipe, SwiftShader), whose
    /// register-blocked f32 kernels are 3-5x faster than the tiled ones, f16 weights keep
    /// being widened first (one widen pass is cheaper there) unless
    /// [`WgpuOptions::matmul`] forces `Tiled`. `false` reports no support anywhere, so f16
    /// weights are widened to f32 before their products (the earlier path, for comparisons). The environment variable
    /// `PIXELGRAD_WGPU_NO_F16_MATMUL` (any value but `0` or empty) turns it off as well.
    pub f16_matmul: bool,
    /// Compute those products in f16 (`matmul_f16h.wgsl`, f32 accumulation) where the
    /// adapter offers `shader-f16`, requesting the feature at device creation. Off by
    /// default: the f32 operand (the activations) is rounded to f16 too, and activations
    /// above 65504 overflow to infinity (the squeezenet and resnet50 test fixtures do: their
    /// outputs become inf; the PP-OCR classifier stays within 1e-2 of onnxruntime);
    /// off keeps f32 arithmetic on the unpacked halves (the tiled f16-storage matmul), which is exact
    /// to f32 rounding. The environment variable `PIXELGRAD_WGPU_F16_ARITH` (any value but
    /// `0` or empty) turns it on, for tools that build the backend with default options.
    pub f16_arithmetic: bool,
    /// Most bytes of free buffers the pool keeps for reuse
    /// ([`DEFAULT_POOL_BUDGET`](crate::pool::DEFAULT_POOL_BUDGET), 256 MiB); past it the least
    /// recently returned ones whose work has completed are destroyed. `0` keeps nothing
    /// (every allocation is a new buffer); [`WgpuBackend::set_pool_budget`] changes it later.
    pub pool_budget: u64,
    /// Which kernel reduces a tensor ([`ReduceKernel`]; by adapter, op and input unless
    /// forced).
    pub reductions: ReduceKernel,
}

impl Default for WgpuOptions {
    fn default() -> Self {
        WgpuOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            backends: wgpu::Backends::PRIMARY,
            max_ops_per_submit: 1024,
            read_timeout: std::time::Duration::from_secs(120),
            matmul: MatmulKernel::Auto,
            subgroups: true,
            fuse: true,
            group: true,
            int8_dot4: true,
            f16_matmul: true,
            f16_arithmetic: false,
            pool_budget: crate::pool::DEFAULT_POOL_BUDGET,
            reductions: ReduceKernel::Auto,
        }
    }
}

/// The WebGPU backend. Not `Send`: tensors share it through `Rc`, as everywhere in pixelgrad.
pub struct WgpuBackend {
    pub(crate) gpu: Rc<Gpu>,
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    read_timeout: std::time::Duration,
    /// Whether the instance's WGSL offers `packed_4x8_integer_dot_product` (see
    /// [`WgpuBackend::wgsl_packed_4x8_integer_dot_product`]).
    packed_4x8_dot: bool,
    /// What this device can do, measured in [`WgpuBackend::new_async`] (`caps_of`).
    caps: Caps,
}

/// Whether `PIXELGRAD_WGPU_NO_DOT4` asks for the unpacked int8 kernels (see
/// [`WgpuOptions::int8_dot4`]). Browsers have no environment: never there.
fn dot4_disabled_by_env() -> bool {
    env_flag("PIXELGRAD_WGPU_NO_DOT4")
}

/// Whether `PIXELGRAD_WGPU_NO_F16_MATMUL` turns off [`WgpuOptions::f16_matmul`] (never in
/// browsers).
fn f16_matmul_disabled_by_env() -> bool {
    env_flag("PIXELGRAD_WGPU_NO_F16_MATMUL")
}

/// `PIXELGRAD_WGPU_MATMUL=tiled|registers` overriding [`WgpuOptions::matmul`] (for tools
/// that build the backend with default options: benchmarks of the tiled and f16 kernels on
/// CPU adapters); never in browsers.
fn matmul_from_env() -> Option<MatmulKernel> {
    env_choice("PIXELGRAD_WGPU_MATMUL", &[("tiled", MatmulKernel::Tiled), ("registers", MatmulKernel::Registers)])
}

/// `PIXELGRAD_WGPU_REDUCE=rendered|handwritten` overriding [`WgpuOptions::reductions`] (for
/// benchmarks of tools that build the backend with default options); never in browsers.
fn reduce_from_env() -> Option<ReduceKernel> {
    env_choice("PIXELGRAD_WGPU_REDUCE", &[("rendered", ReduceKernel::Rendered), ("handwritten", ReduceKernel::HandWritten)])
}

/// The value environment variable `name` names among `choices`, if it is set to one of them
/// (never in browsers).
fn env_choice<T: Copy>(name: &str, choices: &[(&str, T)]) -> Option<T> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let v = std::env::var(name).ok()?;
        choices.iter().find(|(n, _)| *n == v).map(|&(_, t)| t)
    }
    #[cfg(target_arch = "wasm32")]
    {
        let _ = (name, choices);
        None
    }
}

/// Whether `PIXELGRAD_WGPU_F16_ARITH` turns on [`WgpuOptions::f16_arithmetic`].
fn f16_arith_enabled_by_env() -> bool {
    env_flag("PIXELGRAD_WGPU_F16_ARITH")
}

/// Whether environment variable `name` is set to anything but `0` or empty (never in browsers).
fn env_flag(name: &str) -> bool {
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
    }
    #[cfg(target_arch = "wasm32")]
    {
        let _ = name;
        false
    }
}

fn unavailable(reason: impl Into<String>) -> Error {
    Error::Unavailable { backend: BACKEND.into(), reason: reason.into() }
}

impl WgpuBackend {
    /// Finds an adapter and opens a device with the adapter's full limits. Works in wasm (in
    /// a browser with WebGPU) and natively. No adapter → [`Error::Unavailable`].
    pub async fn new_async(opts: WgpuOptions) -> Result<WgpuBackend> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = opts.backends | wgpu::Backends::BROWSER_WEBGPU;
        let instance = wgpu::Instance::new(desc);
        let packed_4x8_dot = instance.wgsl_language_features().contains(wgpu::WgslLanguageFeatures::Packed4x8IntegerDotProduct);
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: opts.power_preference,
                force_fallback_adapter: false,
                compatible_surface: None,
                apply_limit_buckets: false,
            })
            .await
            .map_err(|e| unavailable(format!("no GPU adapter: {e}")))?;
        let info = adapter.get_info();
        let shader_f16 = adapter.features().contains(wgpu::Features::SHADER_F16);
        // Ask for everything the adapter offers: large tensors need the larger binding sizes.
        let limits = adapter.limits();
        // Subgroups for the shared-A register matmul on native CPU adapters (lavapipe); not
        // requested in browsers, where that kernel is never chosen.
        let mut features = if info.device_type == wgpu::DeviceType::Cpu && info.backend != wgpu::Backend::BrowserWebGpu && opts.subgroups {
            adapter.features() & wgpu::Features::SUBGROUP
        } else {
            wgpu::Features::empty()
        };
        // shader-f16 for the f16-product matmul on f16 weights.
        let matmul = matmul_from_env().unwrap_or(opts.matmul);
        let cpu_matmul = match matmul {
            MatmulKernel::Auto => info.device_type == wgpu::DeviceType::Cpu,
            MatmulKernel::Tiled => false,
            MatmulKernel::Registers => true,
        };
        let f16_matmul = opts.f16_matmul && !cpu_matmul && !f16_matmul_disabled_by_env();
        let f16_arith = shader_f16 && f16_matmul && (opts.f16_arithmetic || f16_arith_enabled_by_env());
        if f16_arith {
            features |= wgpu::Features::SHADER_F16;
        }
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("pixelgrad"),
                required_features: features,
                required_limits: limits,
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| unavailable(format!("adapter {} refused a device: {e}", info.name)))?;
        let gpu = Gpu::new(device, queue, info, opts.max_ops_per_submit, cpu_matmul, opts.read_timeout, opts.fuse);
        gpu.group.set(opts.group);
        gpu.set_pool_budget(opts.pool_budget);
        gpu.int8_dot4.set(packed_4x8_dot && opts.int8_dot4 && !dot4_disabled_by_env());
        gpu.f16_arith.set(f16_arith);
        gpu.reductions.set(reduce_from_env().unwrap_or(opts.reductions));
        let mut b = WgpuBackend { gpu, read_timeout: opts.read_timeout, packed_4x8_dot, caps: Caps::F32_ONLY };
        b.caps = b.caps_of(shader_f16, f16_matmul);
        Ok(b)
    }

    /// The [`Caps`] of a started device: 8-bit and f16 storage and f16 narrowing always
    /// (packed words, integer unpacking: no adapter feature needed); `shader_f16` as the
    /// adapter offers it; f16 products on an f16 operand as [`WgpuOptions::f16_matmul`] (the
    /// environment and the register kernel considered) left them; the int8 and f16 kernels
    /// the options and the adapter chose ([`WgpuBackend::int8_path`],
    /// [`WgpuBackend::f16_matmul_path`], fixed before this is called). No
    /// single-op convolution (im2col + matmul), full precision (IEEE f32 buffers and WGSL
    /// f32 arithmetic). The largest texture side is `maxTextureDimension2D` (image inputs);
    /// the largest tensor what one storage binding and buffer hold
    /// (`min(maxStorageBufferBindingSize, maxBufferSize) / 4` elements).
    fn caps_of(&self, shader_f16: bool, f16_matmul: bool) -> Caps {
        let limits = &self.gpu.limits;
        Caps {
            conv: false,
            int8: true,
            int8_storage: true,
            int8_kernel: Some(self.int8_path()),
            f16_storage: true,
            shader_f16: Some(shader_f16),
            f16_matmul,
            f16_matmul_arithmetic: f16_matmul.then(|| self.f16_matmul_path()),
            narrow_f16: true,
            reduced_precision: None,
            max_texture_side: Some(limits.max_texture_dimension_2d),
            max_tensor_elements: limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) / 4,
            ..Caps::F32_ONLY
        }
    }

    /// Blocking constructor (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new(opts: WgpuOptions) -> Result<WgpuBackend> {
        pollster::block_on(Self::new_async(opts))
    }

    /// Starts (or stops) logging every launch: op, kernel name and grid, one line each; a launch
    /// of a replayed trace ends in `(replayed)`.
    pub fn set_launch_log(&self, on: bool) {
        *self.gpu.launch_log.borrow_mut() = if on { Some(Vec::new()) } else { None };
    }

    /// The launches logged since the last call (see [`WgpuBackend::set_launch_log`]).
    pub fn take_launch_log(&self) -> Vec<String> {
        self.gpu.launch_log.borrow_mut().as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Which kernel runs [`Tensor::matmul_i8_packed`](pixelgrad_core::Tensor::matmul_i8_packed)
    /// ([`Op::MatMulI8`] with `b_i8`, what the ONNX importer's quantised products use):
    /// `"dot4I8Packed"` where [`WgpuBackend::wgsl_packed_4x8_integer_dot_product`] is true and
    /// [`WgpuOptions::int8_dot4`] left it on (`b` packed to bytes by a prologue launch, then
    /// four products and their sum per `dot4I8Packed`), else `"unpacked-i32"` (weights
    /// unpacked from their packed words with shifts, sign-extended for i8, multiplied and
    /// summed as i32). Plain [`Tensor::matmul_i8`](pixelgrad_core::Tensor::matmul_i8), whose
    /// `b` may exceed 8 bits, always runs unpacked-i32. Both give the same exact result.
    pub fn int8_path(&self) -> &'static str {
        if self.gpu.int8_dot4.get() {
            ops::matmul_i8::PATH_DOT4
        } else {
            ops::matmul_i8::PATH
        }
    }

    /// The arithmetic of a matmul on an f16 operand ([`Op::MatMul`] on f16 storage, what
    /// the ONNX importer's f16 weights run on): `"f16 products (shader-f16)"` where the
    /// device has `shader-f16` and [`WgpuOptions::f16_arithmetic`] is on (tiles staged in
    /// f16, each product in f16, sums in f32), else `"f32 (f16 weights read directly)"` (the
    /// halves unpacked to f32 where the kernel loads its tiles).
    pub fn f16_matmul_path(&self) -> &'static str {
        if self.gpu.f16_arith.get() {
            ops::matmul::F16_PATH_F16
        } else {
            ops::matmul::F16_PATH_F32
        }
    }

    /// Whether the adapter offers `shader-f16` (as `Caps::shader_f16`, without the trait).
    pub fn shader_f16_offered(&self) -> Option<bool> {
        self.caps.shader_f16
    }

    /// True if the WGSL of this instance has the `packed_4x8_integer_dot_product` language
    /// extension (`dot4I8Packed`, `unpack4xI8`, ...): always natively, where naga implements it;
    /// in a browser when the browser reports it. Where it is true [`WgpuBackend::int8_path`]
    /// is `"dot4I8Packed"` unless [`WgpuOptions::int8_dot4`] turned it off.
    pub fn wgsl_packed_4x8_integer_dot_product(&self) -> bool {
        self.packed_4x8_dot
    }

    /// Destroys pooled buffers that no tensor or step plan uses; returns the bytes released.
    /// Natively it submits queued work and waits for the GPU first, so the pool is empty
    /// afterwards; in a browser buffers that in-flight work may still use stay (use
    /// [`WgpuBackend::trim_async`]). [`Backend::trim`] is the same without the byte count.
    pub fn trim_pool(&self) -> Result<u64> {
        self.gpu.trim()
    }

    /// [`WgpuBackend::trim_pool`] that waits for the GPU without blocking (the browser's way):
    /// submits queued work, awaits its completion, then destroys every pooled buffer.
    pub async fn trim_async(&self) -> Result<u64> {
        self.gpu.check("trim")?;
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.gpu.trim()
        }
        #[cfg(target_arch = "wasm32")]
        {
            self.gpu.flush()?;
            let serial = self.gpu.submitted();
            if crate::completion::WorkDone::new(&self.gpu.queue).await {
                self.gpu.mark_completed(serial);
            }
            Ok(self.gpu.trim_completed())
        }
    }

    /// The pool budget in bytes (see [`WgpuOptions::pool_budget`]).
    pub fn pool_budget(&self) -> u64 {
        self.gpu.pool_budget()
    }

    /// Sets the pool budget; free buffers past it are destroyed at once where their work has
    /// completed (the rest at a later call).
    pub fn set_pool_budget(&self, bytes: u64) {
        self.gpu.set_pool_budget(bytes)
    }

    /// Buffers released by tensors but not yet reusable: work recorded before their release
    /// has not been submitted.
    pub fn pending_buffers(&self) -> usize {
        self.gpu.pending_buffers()
    }

    /// Destroys the device, as a driver reset would (for testing device-loss handling).
    /// Every later call returns [`Error::DeviceLost`].
    pub fn simulate_device_loss(&self) {
        self.gpu.device.destroy();
        if let Ok(mut h) = self.gpu.health.lock() {
            h.lost.get_or_insert_with(|| "device destroyed".into());
        }
    }

    /// Why the device was lost (`device.lost` fired, or [`WgpuBackend::simulate_device_loss`]),
    /// or `None` while it works. Lets a caller notice a loss without issuing an op.
    pub fn lost_reason(&self) -> Option<String> {
        self.gpu.health.lock().ok().and_then(|h| h.lost.clone())
    }

    /// Our storage inside `s` (computing it first if it is a pending fused computation), or
    /// an error naming the op.
    pub(crate) fn tensor<'a>(&self, op: &'static str, s: &'a Storage) -> Result<&'a GpuTensor> {
        fusion::tensor(&self.gpu, op, s)
    }

    /// Our buffer if `s` is one already (not pending, not another backend's).
    fn memory<'a>(&self, s: &'a Storage) -> Option<&'a GpuTensor> {
        pixelgrad_core::fusion::FusionDevice::memory(&fusion::Device(&self.gpu), "execute", s).ok()
    }
}

impl WgpuBackend {
    /// [`Op::MatMulI8`]: never deferred; a pending (fused) `b` is computed first, like every
    /// input of a non-elementwise op ([`WgpuBackend::tensor`]).
    fn matmul_i8(&self, b_i8: bool, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        let op = Op::MatMulI8 { b_i8 };
        let ins: Vec<&GpuTensor> = inputs.iter().map(|s| self.tensor(op.name(), s)).collect::<Result<_>>()?;
        let lens: Vec<usize> = ins.iter().map(|t| t.len).collect();
        pixelgrad_core::check_execute(&op, &lens, shapes, out, &self.name())?;
        let type_err = |i: usize, d: DType, want: &str| Error::Shape {
            op: op.name(),
            shapes: shapes.iter().map(|s| s.0.clone()).collect(),
            backend: self.name(),
            msg: format!("input {i} has {d} storage; it must be {want}"),
        };
        if !ins[0].is_8bit() {
            return Err(type_err(0, ins[0].dtype, "8-bit (i8 or u8)"));
        }
        if ins[1].is_packed() {
            return Err(type_err(1, ins[1].dtype, "f32"));
        }
        self.gpu.check_size(op.name(), out.numel() as u64 * 4)?;
        let res = ops::execute(&self.gpu, &op, &ins, shapes, out)?;
        Ok(Storage::new(res))
    }

    /// [`Op::MatMul`] with an f16 operand (stored weights): never deferred and never fused
    /// (the epilogue kernels read f32); a pending (fused) f32 operand is computed first
    /// ([`WgpuBackend::tensor`]). Exactly one operand must be f16, the other f32.
    fn matmul_f16(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        let ins: Vec<&GpuTensor> = inputs.iter().map(|s| self.tensor(op.name(), s)).collect::<Result<_>>()?;
        let lens: Vec<usize> = ins.iter().map(|t| t.len).collect();
        pixelgrad_core::check_execute(op, &lens, shapes, out, &self.name())?;
        let halves = ins.iter().filter(|t| t.dtype == DType::F16).count();
        if halves != 1 || ins.iter().any(|t| t.is_8bit()) {
            return Err(Error::Shape {
                op: op.name(),
                shapes: shapes.iter().map(|s| s.0.clone()).collect(),
                backend: self.name(),
                msg: "a matmul takes at most one f16 operand, the other f32".into(),
            });
        }
        self.gpu.check_size(op.name(), out.numel() as u64 * 4)?;
        let res = ops::execute(&self.gpu, op, &ins, shapes, out)?;
        Ok(Storage::new(res))
    }

    /// [`Op::MatMulNBits`]: never deferred; its packed weight (input 1) is u8 storage, read
    /// as uploaded; pending (fused) f32 inputs are computed first ([`WgpuBackend::tensor`]).
    fn matmul_nbits(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        let ins: Vec<&GpuTensor> = inputs.iter().map(|s| self.tensor(op.name(), s)).collect::<Result<_>>()?;
        let lens: Vec<usize> = ins.iter().map(|t| t.len).collect();
        pixelgrad_core::check_execute(op, &lens, shapes, out, &self.name())?;
        self.gpu.check_size(op.name(), out.numel() as u64 * 4)?;
        let res = ops::execute(&self.gpu, op, &ins, shapes, out)?;
        Ok(Storage::new(res))
    }

    /// [`Op::Widen`]: packed 8-bit or f16 storage to f32, never deferred. Its input is stored
    /// data (an upload), so nothing pending is computed first except, through
    /// [`WgpuBackend::tensor`], what a direct caller might pass.
    fn widen(&self, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        let op = Op::Widen;
        let ins: Vec<&GpuTensor> = inputs.iter().map(|s| self.tensor(op.name(), s)).collect::<Result<_>>()?;
        let lens: Vec<usize> = ins.iter().map(|t| t.len).collect();
        pixelgrad_core::check_execute(&op, &lens, shapes, out, &self.name())?;
        if !ins[0].is_packed() {
            return Err(Error::Shape {
                op: op.name(),
                shapes: shapes.iter().map(|s| s.0.clone()).collect(),
                backend: self.name(),
                msg: format!("input 0 has {} storage; it must be i8, u8 or f16", ins[0].dtype),
            });
        }
        self.gpu.check_size(op.name(), out.numel() as u64 * 4)?;
        let res = ops::execute(&self.gpu, &op, &ins, shapes, out)?;
        Ok(Storage::new(res))
    }
}

impl Backend for WgpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::WebGpu
    }

    fn name(&self) -> String {
        self.gpu.backend_name()
    }

    fn upload(&self, data: &[f32]) -> Result<Storage> {
        self.gpu.check("upload")?;
        let t = GpuTensor::new(&self.gpu, "upload", data.len())?;
        if !data.is_empty() {
            // No recorded-but-unsubmitted command uses the buffer (fresh, recycled after the
            // submission that last used it, or a free plan entry), and a queue write runs
            // after every earlier submission: it cannot race with older reads of it.
            self.gpu.queue.write_buffer(t.buffer(), 0, bytemuck::cast_slice(data));
        }
        Ok(Storage::new(t))
    }

    /// Measured when the device started (`caps_of`). 8-bit storage: four
    /// elements per u32 word; f16 storage: two per word (element `2i` in the low half of word
    /// `i`), buffers rounded up to whole words; [`Op::NarrowF16`] writes the same layout; an
    /// f16 [`Op::MatMul`] operand is read directly (the tiled f16-storage matmul, `src/ops/matmul_tiled_src.rs`) unless
    /// [`WgpuOptions::f16_matmul`] is off.
    fn caps(&self) -> &Caps {
        &self.caps
    }

    /// False: `Tensor::attention` composes the op here. `kernels/attention.wgsl` runs it
    /// (`Tensor::attention_fused`, head sizes up to 256) and passes
    /// the conformance family, but measured 3-9x slower than the composition on lavapipe
    /// (`bench/notes/2026-12-07-fused-attention.md`), so it is not chosen until it is faster.
    /// (It runs no options beyond the scale either.)
    fn fused_attention(&self, _head: usize, _value_head: usize, _opts: &pixelgrad_core::AttentionOpts) -> bool {
        false
    }

    fn upload_int8(&self, data: &[u8], dtype: DType) -> Result<Storage> {
        self.gpu.check("upload_int8")?;
        if !matches!(dtype, DType::I8 | DType::U8) {
            return Err(Error::backend("upload_int8", self.name(), format!("{dtype} is not an 8-bit type (i8 or u8)")));
        }
        let t = GpuTensor::new_packed(&self.gpu, "upload_int8", data.len(), dtype)?;
        if !data.is_empty() {
            // Little-endian words: element 4i + j is byte j of word i. Queue writes need whole
            // words, so the tail is padded with zeros. Safe to write now as in `upload`.
            let mut words = data.to_vec();
            words.resize(t.data_bytes(data.len()) as usize, 0);
            self.gpu.queue.write_buffer(t.buffer(), 0, &words);
        }
        Ok(Storage::new(t))
    }

    fn upload_f16(&self, bits: &[u16]) -> Result<Storage> {
        self.gpu.check("upload_f16")?;
        let t = GpuTensor::new_packed(&self.gpu, "upload_f16", bits.len(), DType::F16)?;
        if !bits.is_empty() {
            // Little-endian halves, the tail padded with zeros to a whole word; safe to write
            // now as in `upload`.
            let mut bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
            bytes.resize(t.data_bytes(bits.len()) as usize, 0);
            self.gpu.queue.write_buffer(t.buffer(), 0, &bytes);
        }
        Ok(Storage::new(t))
    }

    fn execute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        self.gpu.check(op.name())?;
        if let Op::Reshape(_) = op {
            return match inputs.first() {
                Some(s) => Ok((*s).clone()),
                None => Err(Error::backend("reshape", BACKEND, "missing input")),
            };
        }
        if let Op::MatMulI8 { b_i8 } = op {
            return self.matmul_i8(*b_i8, inputs, shapes, out);
        }
        if let Op::Widen = op {
            return self.widen(inputs, shapes, out);
        }
        if let Op::MatMulNBits { .. } = op {
            return self.matmul_nbits(op, inputs, shapes, out);
        }
        if let Op::MatMul { .. } = op {
            if inputs.iter().any(|s| self.memory(s).is_some_and(|t| t.dtype == DType::F16)) {
                return self.matmul_f16(op, inputs, shapes, out);
            }
        }
        // Only matmul_i8, matmul_nbits and widen read packed (8-bit / f16) storage (core checks this;
        // `execute` is public, so a direct caller gets the error here instead of bytes read
        // as floats).
        if inputs.iter().any(|s| self.memory(s).is_some_and(|t| t.is_packed())) {
            return Err(Error::Shape {
                op: op.name(),
                shapes: shapes.iter().map(|s| s.0.clone()).collect(),
                backend: self.name(),
                msg: "an input has 8-bit or f16 storage, which only matmul_i8 (8-bit weights), matmul_nbits and widen take".into(),
            });
        }
        if self.gpu.fuse {
            if let Some((launch, name)) = fusion::elementwise(op)? {
                return fusion::defer(&self.gpu, op, &launch, name, inputs, shapes, out);
            }
            if let Some(s) = fusion::reduce(&self.gpu, op, inputs, shapes, out)? {
                return Ok(s);
            }
            if let Some(s) = fusion::defer_matmul(&self.gpu, op, inputs, shapes, out)? {
                return Ok(s);
            }
        }
        // Core validated these already; a direct caller may not have, and the launchers index
        // shapes freely, so re-check (the shared check) rather than risk a panic.
        let ins: Vec<&GpuTensor> = inputs.iter().map(|s| self.tensor(op.name(), s)).collect::<Result<_>>()?;
        let lens: Vec<usize> = ins.iter().map(|t| t.len).collect();
        pixelgrad_core::check_execute(op, &lens, shapes, out, &self.name())?;
        if let Op::Random { .. } = op {
            // A replay would draw the same numbers again.
            self.gpu.break_trace("random numbers were drawn");
        }
        let res = ops::execute(&self.gpu, op, &ins, shapes, out)?;
        Ok(Storage::new(res))
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn read(&self, storage: &Storage, len: usize) -> Result<Vec<f32>> {
        // A read ends an iteration of eager code: later ops start a new fusion generation.
        self.gpu.fusion.new_generation();
        let t = self.tensor("read", storage)?;
        readback::read_blocking(&self.gpu, t, len, self.read_timeout)
    }

    #[cfg(target_arch = "wasm32")]
    fn read(&self, _storage: &Storage, _len: usize) -> Result<Vec<f32>> {
        Err(Error::WouldBlock {
            op: "read",
            backend: self.name(),
            msg: "the browser cannot block on the GPU; use read_async (Tensor::to_vec_async)".into(),
        })
    }

    fn read_async<'a>(&'a self, storage: &'a Storage, len: usize) -> LocalFuture<'a, Result<Vec<f32>>> {
        Box::pin(async move {
            self.gpu.fusion.new_generation();
            let t = self.tensor("read", storage)?;
            #[cfg(not(target_arch = "wasm32"))]
            {
                // Natively nothing drives wgpu's callbacks but polling, so wait here.
                readback::read_blocking(&self.gpu, t, len, self.read_timeout)
            }
            #[cfg(target_arch = "wasm32")]
            {
                readback::read_async(&self.gpu, t, len).await
            }
        })
    }

    fn flush(&self) -> Result<()> {
        self.gpu.check("flush")?;
        fusion::settle(&self.gpu)?;
        self.gpu.flush()?;
        Ok(())
    }

    fn counters(&self) -> Counters {
        self.gpu.counters()
    }

    fn begin_step(&self, key: u64) -> Result<()> {
        self.gpu.check("begin_step")?;
        // Work pending from before the step belongs before it.
        fusion::settle(&self.gpu)?;
        self.gpu.begin_step(key)
    }

    fn end_step(&self) -> Result<()> {
        // Everything the step computed that is still held is computed inside it, so the
        // plan records (and later replays) those launches too.
        let settled = fusion::settle(&self.gpu);
        let ended = self.gpu.end_step();
        settled?;
        self.gpu.check("end_step")?;
        ended
    }

    fn drop_plans(&self) {
        self.gpu.drop_plans()
    }

    fn trace_begin(&self, inputs: &[&Storage]) -> bool {
        replay::begin(&self.gpu, inputs)
    }

    fn trace_end(&self, outputs: &[&Storage]) -> Option<Trace> {
        replay::end(&self.gpu, outputs)
    }

    fn trace_abort(&self) {
        let open = self.gpu.tracing.borrow_mut().take();
        if let Some(r) = open {
            self.gpu.unpin(r.pinned);
        }
    }

    fn trace_replay(&self, trace: &Trace, inputs: &[&Storage]) -> Result<Vec<Storage>> {
        replay::replay(&self.gpu, trace, inputs)
    }

    /// [`WgpuBackend::trim_pool`]: natively waits for the GPU, then empties the pool.
    fn trim(&self) -> Result<()> {
        self.gpu.trim().map(|_| ())
    }

    fn describe_storage(&self, storage: &Storage, len: usize) -> Option<pixelgrad_core::StorageLayout> {
        // A pending fused result is computed first: its buffer exists only then.
        let t = self.tensor("describe_storage", storage).ok()?;
        let (slots, format, layout) = if t.is_8bit() {
            (t.size(), t.dtype.name(), "row-major, contiguous, four per u32 word (pool size class)")
        } else if t.is_packed() {
            (t.size() / 2, t.dtype.name(), "row-major, contiguous, two per u32 word (pool size class)")
        } else {
            (t.size() / 4, "f32", "row-major, contiguous (pool size class)")
        };
        Some(pixelgrad_core::StorageLayout {
            container: "buffer",
            width: slots,
            height: 1,
            format: format.into(),
            used: (len.min(t.len)) as u64,
            allocated: slots,
            layout: layout.into(),
            bytes: t.size(),
        })
    }
}
