//! [`WebGlBackend`]: construction (headless EGL natively, or any existing glow context such as a
//! WebGL2 canvas) and the [`Backend`] implementation.

use std::rc::Rc;

use glow::HasContext;
use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Arithmetic, Backend, BackendKind, Caps, Counters, Error, LocalFuture, Op, Result, Shape, Storage, Trace};

use crate::context::Shared;
use crate::fusion::tensor_of;
use crate::glsl::GlslVersion;
use crate::options::{WebGlOptions, WebGlReport};
use crate::texture::texture_of;

/// The WebGL2 backend: "training as rendering". Every tensor is an RGBA float texture (4
/// elements per texel) and every op is one or more full-screen draws into a fresh texture.
/// On WebGL2, 8-bit and f16 tensors (`Tensor::from_i8`, `from_u8`, `from_f16`) are integer
/// textures in the same layout, read by `widen` and `matmul_i8` (see the crate docs); the
/// `webgl1` mode stores them as f32.
///
/// Tensors are immutable, so an in-place-looking update (an optimizer step, an accumulation)
/// always renders into a new texture taken from the pool while the old one is still bound as
/// input; when the old tensor drops, its texture returns to the pool and becomes the next
/// step's target. Parameters therefore ping-pong between two textures with no extra machinery,
/// and no texture is ever sampled and rendered to in the same draw.
///
/// Cheap to clone (shared handle); single-threaded like the GL context it owns.
#[derive(Clone)]
pub struct WebGlBackend {
    pub(crate) shared: Rc<Shared>,
    /// Pending results and when to draw them (`fusion.rs`): the backend's, not the device's.
    pub(crate) fusion: Rc<crate::fusion::Fusion>,
    /// What this context can do, measured once in `build` ([`caps_of`]).
    caps: Rc<Caps>,
}

impl WebGlBackend {
    /// A native headless backend: an OpenGL ES 3 context through EGL (Mesa's surfaceless
    /// platform, e.g. llvmpipe in CI), no display needed.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new_headless(opts: WebGlOptions) -> Result<Self> {
        let egl = crate::egl::Headless::new()?;
        // SAFETY: the EGL context is current on this thread; entry points come from EGL.
        let gl = unsafe { glow::Context::from_loader_function(|name| egl.proc_address(name)) };
        Self::build(gl, opts, Some(egl))
    }

    /// A backend over an existing context, which must be OpenGL ES 3 / WebGL2 and current on
    /// this thread for as long as the backend lives. In the browser:
    /// `glow::Context::from_webgl2_context(canvas.get_context("webgl2"))` (a canvas or an
    /// OffscreenCanvas in a worker). A WebGL1 context
    /// (`glow::Context::from_webgl1_context(canvas.get_context("webgl"))`) needs
    /// `WebGlOptions { webgl1: true, .. }` (see [`crate::gl1`]).
    pub fn from_glow(gl: glow::Context, opts: WebGlOptions) -> Result<Self> {
        #[cfg(not(target_arch = "wasm32"))]
        return Self::build(gl, opts, None);
        #[cfg(target_arch = "wasm32")]
        return Self::build(gl, opts);
    }

    fn build(gl: glow::Context, opts: WebGlOptions, #[cfg(not(target_arch = "wasm32"))] egl: Option<crate::egl::Headless>) -> Result<Self> {
        let report = crate::caps::measure(&gl, &opts)?;
        for w in &report.warnings {
            warn(w);
        }
        let name = format!(
            "{} ({}, {}{})",
            if opts.webgl1 { crate::legacy::NAME } else { "webgl" },
            report.renderer,
            report.version,
            if report.format == crate::TexelFormat::Rgba16F { ", RGBA16F" } else { "" }
        );
        let unavailable = |what: String| pixelgrad_core::Error::Unavailable { backend: name.clone(), reason: what };
        let features = crate::features::Features::of(if opts.webgl1 { GlslVersion::Es100 } else { GlslVersion::Es300 });
        // SAFETY: object creation on the current context.
        let legacy = crate::legacy::is_legacy_context(&report.version);
        let (fbo, vao, triangle) = unsafe {
            let fbo = gl.create_framebuffer().map_err(|e| unavailable(format!("create_framebuffer: {e}")))?;
            let (vao, triangle) = if !features.vertex_id {
                (None, Some(crate::legacy::triangle_buffer(&gl).map_err(|e| unavailable(format!("create_buffer: {e}")))?))
            } else {
                (Some(gl.create_vertex_array().map_err(|e| unavailable(format!("create_vertex_array: {e}")))?), None)
            };
            // Compute passes never blend, test depth or dither.
            gl.disable(glow::BLEND);
            gl.disable(glow::DEPTH_TEST);
            gl.disable(glow::DITHER);
            (fbo, vao, triangle)
        };
        let group_targets =
            if opts.group && opts.fuse && features.multiple_render_targets { crate::group::max_targets(&gl, &report) } else { 0 };
        // Matmul epilogues write a second render target (`fusion.rs`).
        let epilogues = opts.fuse && features.multiple_render_targets && crate::group::max_targets(&gl, &report) >= 2;
        let device = crate::device::GlDevice::new(crate::device::DeviceParts {
            gl,
            name: name.clone(),
            report,
            pool_budget: opts.pool_budget,
            mediump: opts.mediump,
            emulate_half: opts.emulate_precision == Some(crate::options::EmulatedPrecision::Half),
            matmul: opts.matmul,
            fbo,
            vao,
            features,
            legacy,
            triangle,
            #[cfg(not(target_arch = "wasm32"))]
            egl,
        });
        let shared = Shared::new(device);
        let fusion = crate::fusion::Fusion { fuse: opts.fuse, epilogues, group_targets, state: pixelgrad_core::fusion::FusionState::new() };
        // The caps wait for the storage probe below; nothing before it reads them.
        let mut b = WebGlBackend { shared: Rc::new(shared), fusion: Rc::new(fusion), caps: Rc::new(Caps::F32_ONLY) };
        if !features.trusted_float_targets {
            b.probe_float_rendering()?;
        }
        let storage_bits = b.probe_storage_bits()?;
        let arithmetic_bits = b.probe_arithmetic_bits()?;
        b.caps = Rc::new(caps_of(&b.shared, storage_bits, arithmetic_bits));
        if opts.self_test {
            let st = b.self_test()?;
            b.shared.report.borrow_mut().self_test = Some(st);
        }
        Ok(b)
    }

    /// After a context loss: every later call (on this backend and its tensors) returns
    /// `Error::DeviceLost`, and dropping them deletes nothing. A restored context starts a new
    /// generation of objects, and deleting the lost generation's objects on it is a GL error.
    pub fn abandon(&self) {
        self.shared.abandon();
    }

    /// Capabilities measured at init, the chosen format, warnings and the self-test result.
    pub fn report(&self) -> WebGlReport {
        self.shared.report.borrow().clone()
    }

    /// Starts (`true`) or stops recording the passes drawn: one line per draw with the
    /// program, its config and the output texture size.
    pub fn set_pass_log(&self, on: bool) {
        self.shared.set_pass_log(on);
    }

    /// The passes recorded since the last call (recording continues).
    pub fn take_pass_log(&self) -> Vec<String> {
        self.shared.take_pass_log()
    }

    /// Frees the textures waiting in the pool (those of live tensors and step plans stay).
    /// [`Backend::trim`] does the same.
    pub fn trim_pool(&self) -> Result<()> {
        self.shared.trim_pool()
    }

    /// The pool budget in bytes (see [`WebGlOptions::pool_budget`]).
    pub fn pool_budget(&self) -> u64 {
        self.shared.pool_budget()
    }

    /// Sets the pool budget; free textures past it are deleted at once, oldest first.
    pub fn set_pool_budget(&self, bytes: u64) {
        self.shared.set_pool_budget(bytes);
    }

    /// Free textures in the pool.
    pub fn pooled_textures(&self) -> usize {
        self.shared.pooled_textures()
    }

    /// Texture size (in texels) of a tensor's storage, if it belongs to this backend.
    pub fn texture_size(&self, s: &Storage) -> Option<(u32, u32)> {
        tensor_of(s, &self.shared, "texture_size").ok().map(|t| t.texture_size())
    }

    /// Compiles every program up front (e.g. before timing a training loop) and returns how
    /// many were compiled: every `shaders/*.glsl` program in every config, and every
    /// elementwise definition in its two usual forms (same-shape inputs, broadcast inputs).
    pub fn warm_up(&self) -> Result<usize> {
        self.shared.current()?;
        let mut n = 0;
        let specs = match self.shared.features.version {
            GlslVersion::Es100 => crate::gl1::all_specs(),
            GlslVersion::Es300 => crate::dialect::all_specs(),
        };
        for spec in specs {
            self.shared.program("warm_up", spec)?;
            n += 1;
        }
        for (label, k) in pixelgrad_core::kernel::defs::all()? {
            let id = self.shared.map_kernel("warm_up", &k, || label)?;
            for fast in [true, false] {
                self.shared.program("warm_up", crate::dialect::ProgramSpec::map(id, crate::dialect::map_config(fast, 0)))?;
                n += 1;
            }
        }
        Ok(n)
    }
}

/// The [`Caps`] of a context, from what `build` measured ([`crate::caps::measure`]'s report:
/// version, texel format, emulation) and the options it was built with:
/// - 8-bit weights: WebGL2 stores them in integer textures (`RGBA8I` / `RGBA8UI`, one byte per
///   element, four per texel in the f32 layout), read by `matmul_i8` and `widen` with integer
///   `texelFetch`; the `webgl1` mode has no integer textures and stores them in byte textures
///   (`RGBA` / `UNSIGNED_BYTE`, core WebGL1) which only `widen` reads
///   (`shaders/widen.glsl`): `int8` false, `int8_storage` true.
/// - f16 storage: WebGL2 keeps the bit patterns in `RGBA16UI` textures, decoded exactly by
///   `widen` with integer operations; the `webgl1` mode makes f32 tensors.
/// - `narrow_f16`: WebGL2 with true f32 tensors (`RGBA32F`) draws the half bit patterns into an
///   `RGBA16UI` texture with integer operations (bit for bit the host's rounding); not in the
///   `webgl1` mode nor the `RGBA16F` fallback (f32 tensors are already half precision, in as
///   many bytes as an f16 copy).
/// - `reduced_precision`: RGBA16F tensors (forced or the fallback of a device without 32-bit
///   float render targets), mediump fragment shaders, or a precision emulation.
/// - No single-op convolution (im2col + matmul), no direct f16 matmul operand, no `shader-f16`
///   question.
/// - Precision: `storage_bits` as [`WebGlBackend::probe_storage_bits`] measured them; the
///   arithmetic the fragment stage computes in (the half emulation, forced mediump or highp)
///   and its mantissa bits as [`WebGlBackend::probe_arithmetic_bits`] measured them (the
///   driver's `getShaderPrecisionFormat` statement stays in the report, `fragment_highp`; where
///   it differs from the measurement the report's warnings say so), and the training verdict
///   from both ([`Caps::training_verdict`]).
/// - Limits: the effective `MAX_TEXTURE_SIZE` (the options may force a smaller one) and four
///   f32 elements per texel of the largest square texture, at most `gl1::MAX_ELEMENTS` (2^22)
///   in the `webgl1` mode.
fn caps_of(sh: &Shared, storage_bits: u8, arithmetic_bits: u8) -> Caps {
    let mut r = sh.report.borrow_mut();
    let mut why = Vec::new();
    if r.format == crate::options::TexelFormat::Rgba16F {
        why.push("tensors stored in RGBA16F (half floats)".to_string());
    }
    if sh.mediump {
        why.push("fragment shaders in mediump".to_string());
    }
    if let Some(p) = r.emulated_precision {
        why.push(format!("{} arithmetic emulated", p.as_str()));
    }
    // What the driver states for the precision the fragment stage computes in (none for the
    // emulation, which is not the driver's).
    let (arithmetic, stated) = if r.emulated_precision.is_some() {
        (Arithmetic::EmulatedHalf, None)
    } else if sh.mediump {
        // SAFETY: a plain query on the current context.
        let p = unsafe { sh.gl.get_shader_precision_format(glow::FRAGMENT_SHADER, glow::MEDIUM_FLOAT) };
        (Arithmetic::Mediump, p.map(|p| (p.precision, "mediump")))
    } else {
        (Arithmetic::Highp, r.fragment_highp.map(|p| (p.precision, "highp")))
    };
    if let Some((bits, name)) = stated.filter(|(bits, _)| *bits != i32::from(arithmetic_bits)) {
        let msg = format!(
            "the driver states {bits} mantissa bits for fragment {name} float; the start-up probe \
             measured {arithmetic_bits} (the caps use the measurement)"
        );
        warn(&msg);
        r.warnings.push(msg);
    }
    // Four f32 elements per texel of the largest square texture; the `webgl1` mode's float
    // indices are exact only below `gl1::MAX_ELEMENTS`.
    let texels = u64::from(sh.max_tex).pow(2) * 4;
    Caps {
        int8: sh.features.integer_textures,
        int8_storage: true,
        f16_storage: sh.features.integer_textures,
        narrow_f16: crate::ops::narrow_f16_available(sh),
        reduced_precision: (!why.is_empty()).then(|| why.join(", ")),
        storage_mantissa_bits: storage_bits,
        arithmetic,
        arithmetic_mantissa_bits: arithmetic_bits,
        max_texture_side: Some(sh.max_tex),
        max_tensor_elements: sh.features.max_elements.map_or(texels, |m| texels.min(m as u64)),
        ..Caps::F32_ONLY
    }
    .with_training_verdict()
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn warn(msg: &str) {
    eprintln!("pixelgrad-webgl: warning: {msg}");
}

#[cfg(target_arch = "wasm32")]
pub(crate) fn warn(msg: &str) {
    web_sys::console::warn_1(&format!("pixelgrad-webgl: {msg}").into());
}

impl Backend for WebGlBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::WebGl
    }

    fn name(&self) -> String {
        self.shared.name.clone()
    }

    fn upload(&self, data: &[f32]) -> Result<Storage> {
        Ok(Storage::new(self.shared.upload(data)?))
    }

    /// Measured when the context started (`caps_of`).
    fn caps(&self) -> &Caps {
        &self.caps
    }

    /// WebGL2, for products large enough for the block kernel (`ops::matmul_block`): 4, one
    /// texel. Its in-place configs then read the columns, the output gradient and the weight
    /// gradient's operands where they lie; with rows of, say, 121 columns (11x11 maps) each
    /// step repacked the columns twice and assembled the product per element.
    fn im2col_align(&self, batch: usize, out_ch: usize, k: usize, cols: usize) -> usize {
        if crate::ops::conv_block_path(&self.shared, batch, out_ch, k, cols) {
            4
        } else {
            1
        }
    }

    fn upload_int8(&self, data: &[u8], dtype: DType) -> Result<Storage> {
        if !matches!(dtype, DType::I8 | DType::U8) {
            return Err(Error::backend("upload_int8", self.name(), format!("{dtype} is not an 8-bit type (i8 or u8)")));
        }
        let t = self.shared.upload_narrow("upload_int8", data.len(), dtype, |b| b.copy_from_slice(data))?;
        Ok(Storage::new(t))
    }

    fn upload_f16(&self, bits: &[u16]) -> Result<Storage> {
        let t = self.shared.upload_narrow("upload_f16", bits.len(), DType::F16, |b| {
            for (d, v) in b.chunks_exact_mut(2).zip(bits) {
                d.copy_from_slice(&v.to_le_bytes());
            }
        })?;
        Ok(Storage::new(t))
    }

    fn execute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        self.shared.current()?;
        if let Op::Random { .. } = op {
            // A replay would draw the same numbers again.
            self.shared.steps.break_trace("random numbers were drawn");
        }
        if let Op::Reshape(_) = op {
            // No data moves: the output shares the input (of any storage type).
            return crate::fusion::execute_now(&self.shared, op, inputs, shapes, out);
        }
        // Narrow storage is read only by matmul_i8 (its weights), matmul_nbits (its packed
        // weights, u8) and widen. Core checks this; `execute` is public, so a direct caller
        // gets a typed error here instead of integer texels bound to a float sampler. Pending
        // (fused) results are f32.
        let dtypes: Vec<DType> = inputs.iter().map(|s| texture_of(s, &self.shared, op.name()).map_or(DType::F32, |t| t.dtype)).collect();
        let bad = match op {
            Op::MatMulI8 { .. } => dtypes.iter().enumerate().position(|(i, d)| (i == 0) != matches!(d, DType::I8 | DType::U8)),
            Op::Widen => dtypes.iter().position(|d| *d == DType::F32),
            Op::MatMulNBits { .. } => dtypes.iter().enumerate().position(|(i, d)| (i == 1) != (*d == DType::U8)),
            _ => dtypes.iter().position(|d| *d != DType::F32),
        };
        if let Some(i) = bad {
            let want = match (op, i) {
                (Op::MatMulI8 { .. }, 0) => "8-bit (i8 or u8)",
                (Op::Widen, _) => "i8, u8 or f16",
                (Op::MatMulNBits { .. }, 1) => "u8 (the packed bytes, `Tensor::from_u8`)",
                _ => "f32 (only matmul_i8's weights and widen take 8-bit or f16 storage)",
            };
            return Err(Error::Shape {
                op: op.name(),
                shapes: shapes.iter().map(|s| s.0.clone()).collect(),
                backend: self.name(),
                msg: format!("input {i} has {} storage; it must be {want}", dtypes[i]),
            });
        }
        if matches!(op, Op::MatMulI8 { .. } | Op::Widen | Op::MatMulNBits { .. }) {
            // Never deferred: a pending `b` is drawn first (`tensor_of`).
            return crate::fusion::execute_now(&self.shared, op, inputs, shapes, out);
        }
        if self.fusion.fuse {
            if let Some((launch, name)) = crate::fusion::elementwise(op)? {
                return crate::fusion::defer(&self.shared, &self.fusion, op, &launch, name, inputs, shapes, out);
            }
            self.shared.current()?;
            if let Some(s) = crate::fusion::reduce(&self.shared, &self.fusion, op, inputs, shapes, out)? {
                return Ok(s);
            }
            if let Some(s) = crate::fusion::defer_matmul(&self.shared, &self.fusion, op, inputs, shapes, out)? {
                return Ok(s);
            }
        }
        crate::fusion::execute_now(&self.shared, op, inputs, shapes, out)
    }

    /// Blocking readPixels. Fine natively; in the browser prefer `read_async`, which does not
    /// stall the page.
    fn read(&self, storage: &Storage, len: usize) -> Result<Vec<f32>> {
        // A read ends an iteration of eager code: later ops start a new fusion generation.
        self.fusion.state.new_generation();
        // What runs after a read may depend on the values read.
        self.shared.steps.break_trace("a value was read back");
        let t = tensor_of(storage, &self.shared, "read")?;
        crate::readback::read_blocking(&self.shared, t, len)
    }

    fn read_async<'a>(&'a self, storage: &'a Storage, len: usize) -> LocalFuture<'a, Result<Vec<f32>>> {
        Box::pin(async move {
            self.fusion.state.new_generation();
            self.shared.steps.break_trace("a value was read back");
            let t = tensor_of(storage, &self.shared, "read_async")?;
            crate::readback::read_async(&self.shared, t, len).await
        })
    }

    fn flush(&self) -> Result<()> {
        self.shared.current()?;
        crate::fusion::settle(&self.shared, &self.fusion)?;
        crate::submit::flush(&self.shared)
    }

    /// Starts a step: later steps with the same `key` replay this one's plan (textures,
    /// framebuffers, programs; see the crate docs).
    fn begin_step(&self, key: u64) -> Result<()> {
        // Work pending from before the step is drawn before it.
        self.shared.current()?;
        crate::fusion::settle(&self.shared, &self.fusion)?;
        crate::submit::begin_step(&self.shared, key)
    }

    fn end_step(&self) -> Result<()> {
        // Results of the step still held are drawn inside it, so its plan has them.
        let settled = crate::fusion::settle(&self.shared, &self.fusion);
        let ended = crate::submit::end_step(&self.shared);
        settled?;
        ended
    }

    fn drop_plans(&self) {
        self.shared.steps.drop_plans(&self.shared.dev)
    }

    fn trace_begin(&self, inputs: &[&Storage]) -> bool {
        // Work pending from before the recording is drawn before it.
        if self.shared.current().is_err() || crate::fusion::settle(&self.shared, &self.fusion).is_err() {
            return false;
        }
        crate::replay::begin(&self.shared, inputs)
    }

    fn trace_end(&self, outputs: &[&Storage]) -> Option<Trace> {
        crate::replay::end(&self.shared, outputs)
    }

    fn trace_abort(&self) {
        let open = self.shared.steps.tracing.borrow_mut().take();
        if let Some(r) = open {
            self.shared.steps.unpin(&self.shared.dev, r.pinned);
        }
    }

    fn trace_replay(&self, trace: &Trace, inputs: &[&Storage]) -> Result<Vec<Storage>> {
        crate::replay::replay(&self.shared, trace, inputs)
    }

    fn counters(&self) -> Counters {
        self.shared.counters()
    }

    /// Deletes every pooled texture ([`WebGlBackend::trim_pool`]).
    fn trim(&self) -> Result<()> {
        self.shared.trim_pool()
    }

    fn describe_storage(&self, storage: &Storage, len: usize) -> Option<pixelgrad_core::StorageLayout> {
        // A pending fused result is drawn first: its texture exists only then.
        self.shared.current().ok()?;
        let t = tensor_of(storage, &self.shared, "describe_storage").ok()?;
        Some(crate::texture::describe(t, len, self.shared.format))
    }
}
