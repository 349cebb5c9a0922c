//! Public configuration and report types.

/// Free pooled bytes kept for reuse by default: 256 MiB, the WebGPU backend's default too.
/// Above what one training step of the models pixelgrad targets recycles (an eager loop keeps
/// reusing its textures and allocates nothing in its steady state) and small next to the GPU
/// memory browsers let a page use before they lose its context. Configurable
/// ([`crate::WebGlOptions::pool_budget`], [`crate::WebGlBackend::set_pool_budget`]).
pub const DEFAULT_POOL_BUDGET: u64 = 256 << 20;

/// How to create a [`crate::WebGlBackend`].
#[derive(Clone, Debug)]
pub struct WebGlOptions {
    /// Store tensors in RGBA16F even when RGBA32F render targets work (for testing the
    /// fallback path; half precision is far less accurate).
    pub force_half_float: bool,
    /// Use at most this MAX_TEXTURE_SIZE (a smaller value than the device's; tests use it to
    /// exercise row wrapping and the size limit without huge textures).
    pub max_texture_size: Option<u32>,
    /// Run the precision self-test while creating the backend (its result is in the report).
    pub self_test: bool,
    /// Fuse chains of elementwise ops into one draw; `false` draws every op on its own (for
    /// comparisons and tests).
    pub fuse: bool,
    /// Compile fragment shaders with `precision mediump float` (integers stay highp): with
    /// `force_half_float`, the precision-limited mode of phones whose GPUs compute mediump in
    /// 16 bits, for tests of what training does there.
    pub mediump: bool,
    /// The `webgl1` mode: GLSL ES 1.00 programs and only what WebGL1 (with OES_texture_float
    /// and a float render target, or half-float textures on a device that renders only those)
    /// offers: no texelFetch, integer bit operations, VAOs, multiple
    /// render targets, pixel-pack buffers or fences. Required for a WebGL1 context; on an
    /// OpenGL ES 3 / WebGL2 context it runs the same programs (how the native tests check it).
    pub webgl1: bool,
    /// Draw pending results of the same size together at the end of a step (or a flush), one
    /// draw with several render targets instead of one draw each (`group.rs`); `false` draws
    /// each alone (for comparisons and tests). Only with `fuse`, and never in the `webgl1`
    /// mode (WebGL1 has no multiple render targets).
    pub group: bool,
    /// Most bytes of free textures the pool keeps for reuse ([`crate::DEFAULT_POOL_BUDGET`],
    /// 256 MiB); past it the least recently returned are deleted. `0` keeps none;
    /// [`crate::WebGlBackend::set_pool_budget`] changes it later.
    pub pool_budget: u64,
    /// Test mode: make the fragment stage compute as a device of lower precision would (see
    /// [`EmulatedPrecision`]). The shaders are the same; a `#define` turns the rounding on.
    pub emulate_precision: Option<EmulatedPrecision>,
    /// Test mode: pretend `getShaderPrecisionFormat(FRAGMENT_SHADER, HIGH_FLOAT)` reported no
    /// highp (range and precision 0, what the WebGL specification has a device without highp
    /// fragment floats report), so init takes the branch such a device takes. GL drivers offer
    /// no switch for this (Mesa's `MESA_EXTENSION_OVERRIDE` hides extensions, not precisions).
    pub emulate_no_highp: bool,
    /// Which kernel computes [`pixelgrad_core::Op::MatMul`] ([`MatMulKernel`]; by mode and
    /// shape unless forced).
    pub matmul: MatMulKernel,
}

/// The kernels of [`pixelgrad_core::Op::MatMul`] ([`WebGlOptions::matmul`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MatMulKernel {
    /// Whichever measured faster on llvmpipe
    /// (`bench/notes/2026-12-07-webgl-matmul-from-one-definition.md`): on WebGL2 the
    /// hand-written kernels (6x to 56x faster at every shape measured), in the `webgl1` mode
    /// the rendered program (its only matmul).
    #[default]
    Auto,
    /// On WebGL2 the hand-written kernels: `shaders/matmul.glsl` (a texel of 4 outputs per
    /// fragment, operands repacked by `matmul_pack.glsl` where needed, or read through their
    /// strides) and the 4x4-block kernel for large products (`matmul_block*.glsl`,
    /// `matmul_unblock.glsl`). The `webgl1` mode has none (they compute a texel per fragment,
    /// which its GLSL ES 1.00 programs do not): the rendered program there too.
    HandWritten,
    /// The program rendered from its one definition (`pixelgrad_core::kernel::products`): one
    /// output per fragment, a loop over `k` reading both operands through their strides. A
    /// product summed over its batch is the batched product, then a reduction; a fused
    /// elementwise epilogue is drawn after it.
    Rendered,
}

/// Arithmetic a test device computes in ([`WebGlOptions::emulate_precision`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EmulatedPrecision {
    /// A fragment stage that computes floats in IEEE half precision (a `mediump` device whose
    /// mediump is 16-bit): every value of a kernel program (each input read, parameter,
    /// constant and intermediate result), every value a window program loads or binds, and
    /// every value a float program writes is rounded to the nearest half (ties to even, 10
    /// mantissa bits). Finite values beyond the half range saturate at +-65504 (where RGBA16F
    /// storage would give an infinity: the device may do either); infinities and NaN pass
    /// unchanged; half subnormals are kept (steps of 2^-24, as the `half` crate and RGBA16F
    /// storage do) and smaller values round to a signed zero. Loop accumulators of the
    /// hand-written bodies (matmul's dot products, reductions) and of window programs keep
    /// f32 between the values rounded, so the emulation is slightly kinder than a device
    /// accumulating in half. GLSL ES 3.00 rounds with `floatBitsToUint`; GLSL ES 1.00, with no
    /// bit casts, with `exp2`/`floor` of `log2` (corrected where `log2` is approximate):
    /// `tests/emulation.rs` shows both equal the `half` crate on a sweep of values.
    Half,
}

impl EmulatedPrecision {
    pub fn as_str(&self) -> &'static str {
        match self {
            EmulatedPrecision::Half => "half",
        }
    }
}

impl Default for WebGlOptions {
    fn default() -> Self {
        WebGlOptions {
            force_half_float: false,
            max_texture_size: None,
            self_test: true,
            fuse: true,
            mediump: false,
            webgl1: false,
            group: true,
            pool_budget: DEFAULT_POOL_BUDGET,
            emulate_precision: None,
            emulate_no_highp: false,
            matmul: MatMulKernel::Auto,
        }
    }
}

/// Storage format of every tensor texture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TexelFormat {
    /// 4 x f32 per texel (needs EXT_color_buffer_float to render into).
    Rgba32F,
    /// 4 x f16 per texel (EXT_color_buffer_half_float): ~3 decimal digits.
    Rgba16F,
}

impl TexelFormat {
    pub fn as_str(&self) -> &'static str {
        match self {
            TexelFormat::Rgba32F => "RGBA32F",
            TexelFormat::Rgba16F => "RGBA16F",
        }
    }
    /// Bytes per texel on the device.
    pub fn texel_bytes(&self) -> u64 {
        match self {
            TexelFormat::Rgba32F => 16,
            TexelFormat::Rgba16F => 8,
        }
    }
    pub(crate) fn internal_format(&self) -> u32 {
        match self {
            TexelFormat::Rgba32F => glow::RGBA32F,
            TexelFormat::Rgba16F => glow::RGBA16F,
        }
    }
}

/// Fragment-shader float precision as reported by `getShaderPrecisionFormat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrecisionFormat {
    /// log2 of the representable range (127 for IEEE f32).
    pub range_max: i32,
    /// Bits of mantissa precision (23 for IEEE f32, 0 when unsupported).
    pub precision: i32,
}

/// Capabilities measured at init, plus the decisions taken from them.
#[derive(Clone, Debug)]
pub struct WebGlReport {
    pub renderer: String,
    pub version: String,
    pub vendor: String,
    /// Extension advertised.
    pub ext_color_buffer_float: bool,
    pub ext_color_buffer_half_float: bool,
    pub ext_float_blend: bool,
    /// The `webgl1` mode (GLSL ES 1.00 programs) is in use.
    pub webgl1: bool,
    /// OES_texture_float (WebGL1 float textures) and WEBGL_color_buffer_float (WebGL1 float
    /// render targets) advertised.
    pub oes_texture_float: bool,
    pub webgl_color_buffer_float: bool,
    /// Measured: an RGBA32F texture makes a complete framebuffer.
    pub float_render_target: bool,
    /// Measured: an RGBA16F texture (the `webgl1` mode: a `HALF_FLOAT_OES` texture) makes a
    /// complete framebuffer.
    pub half_render_target: bool,
    /// Fragment-shader `highp float` as the driver states it (None if the query failed); the
    /// caps' arithmetic bits are measured instead (`WebGlBackend::probe_arithmetic_bits`), and
    /// a warning says when the two differ.
    pub fragment_highp: Option<PrecisionFormat>,
    /// The device's MAX_TEXTURE_SIZE.
    pub max_texture_size: u32,
    /// The limit actually used for layouts (smaller if forced by options).
    pub effective_max_texture_size: u32,
    pub max_draw_buffers: u32,
    /// The format chosen for tensors.
    pub format: TexelFormat,
    /// The precision the fragment stage is made to compute in (test mode,
    /// [`WebGlOptions::emulate_precision`]).
    pub emulated_precision: Option<EmulatedPrecision>,
    /// Why a fallback was taken, if one was.
    pub warnings: Vec<String>,
    /// The precision self-test run at init, if enabled.
    pub self_test: Option<SelfTest>,
}

/// Result of [`crate::WebGlBackend::self_test`]: each check against a host f64 reference.
#[derive(Clone, Debug, PartialEq)]
pub struct SelfTest {
    /// Largest relative error over all checks.
    pub max_rel_error: f64,
    /// `(check name, its max relative error)`.
    pub details: Vec<(String, f64)>,
}

/// An 8-bit RGBA image, rows top to bottom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RgbaImage {
    pub width: u32,
    pub height: u32,
    /// `width * height * 4` bytes.
    pub pixels: Vec<u8>,
}

impl RgbaImage {
    /// The RGBA of pixel (x, y), if inside.
    pub fn pixel(&self, x: u32, y: u32) -> Option<[u8; 4]> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let o = ((y * self.width + x) * 4) as usize;
        Some([self.pixels[o], self.pixels[o + 1], self.pixels[o + 2], self.pixels[o + 3]])
    }
}

/// How [`crate::WebGlBackend::render_heatmap`] draws.
#[derive(Clone, Copy, Debug)]
pub struct HeatmapOptions {
    /// Pixels per element along each side.
    pub pixel_size: u32,
    /// Grey pixels between (and around) tiles of a filter bank.
    pub border: u32,
    /// Tile columns for a `[n, c, h, w]` bank (default: `c`, i.e. one row of tiles per filter).
    pub columns: Option<u32>,
}

impl Default for HeatmapOptions {
    fn default() -> Self {
        HeatmapOptions { pixel_size: 4, border: 1, columns: None }
    }
}
