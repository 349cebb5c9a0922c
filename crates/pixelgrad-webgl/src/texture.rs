//! Tensor storage: one RGBA texture per tensor, 4 consecutive elements per texel, texels in
//! row-major order over a near-square texture whose size is bucketed ([`layout`]). Textures
//! come from a pool keyed by (width, height, internal format) and go back to it when the
//! tensor's last handle drops, unless a step plan owns them (see `plan.rs`); the pool keeps
//! them within a byte budget (`pool.rs`).
//!
//! f32 tensors (every op's result) use the backend's float format ([`crate::TexelFormat`]).
//! Narrow storage (WebGL2, see [`narrow_format`]; the `webgl1` mode keeps 8-bit values in byte
//! textures, `RGBA` / `UNSIGNED_BYTE`, read by `widen` only) keeps the same layout in integer
//! textures: 8-bit weights one byte per element (`RGBA8I` for i8, `RGBA8UI` for u8), f16 two
//! bytes per element (`RGBA16UI` holding the IEEE half bit patterns). Integer textures are
//! uploaded and sampled (`texelFetch` on `isampler2D` / `usampler2D`) bit for bit on every
//! driver; a half-float (`RGBA16F`) texture would leave the half-to-float conversion (f16
//! subnormals, NaN payloads) to the sampler, which GLSL ES allows to flush. Only `widen` and
//! `matmul_i8` read them, and only `narrow_f16` (`RGBA16UI`) and `narrow8` (`RGBA8I` /
//! `RGBA8UI`: `Op::Narrow8` and `fromPixels`' uint8 results) draw into one; reading one back
//! widens it first.

use std::rc::Rc;

use glow::HasContext;
use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Error, Result, Storage};

use crate::bytes::{f32_bytes, f32_bytes_mut, u16_bytes_mut};
use crate::device::GlDevice;
use crate::options::TexelFormat;
use crate::pool::PoolKey;

/// Texture width and height (in texels) for `len` elements: near-square, neither side above
/// `max_tex`. Fails with [`Error::Limit`] naming MAX_TEXTURE_SIZE when the tensor cannot fit.
///
/// **Size grid.** The texel count is first rounded up to a geometric grid of
/// 8 steps per octave (`grid_texels`; counts up to `EXACT_TEXELS` stay
/// exact), so tensors of nearby sizes get textures of one size and share the pool's textures
/// (a model fed images of many sizes would otherwise leave one texture per exact size). That
/// costs at most 1/8 more texels (about 5% on average). Where the rounded count does not fit
/// MAX_TEXTURE_SIZE the exact count is laid out instead. Elements still fill texels from the
/// first, row-major over the texture's real width: shaders read widths with `textureSize`
/// (the `webgl1` mode: from size uniforms) and readbacks read `width x height` texels and keep
/// the first `len` values, so nothing assumes a texture holds exactly its tensor.
///
/// **Width.** About ceil(sqrt(texels)), rounded up to a multiple of 4 from 8 texels on (the
/// block matmul reads 4 neighbouring texels and must never straddle a row), then the height
/// is what the texels need. The `webgl1` mode lays out without that rounding
/// (`GlDevice::layout`): it has no block matmul, and its fragment coordinates are exact only
/// for sides up to 1025 (`shaders/header.glsl`, `out_base`), which rounding could pass.
///
/// Sides that are powers of two are nudged (4 -> 5, 1 -> 3, 8 -> 12): software rasterisers
/// such as llvmpipe specialise (JIT-compile) each program for whether every bound texture's
/// sides are powers of two, so mixing both kinds compiles each program up to 2^(2*inputs)
/// times, at tens to hundreds of milliseconds each. Keeping every side non-power-of-two costs
/// a few rows or columns and gives one variant per program.
pub fn layout(len: usize, max_tex: u32, op: &'static str, backend: &str) -> Result<(u32, u32)> {
    layout_in(len, max_tex, true, op, backend)
}

/// [`layout`], with widths rounded to multiples of 4 only when `align`.
pub(crate) fn layout_in(len: usize, max_tex: u32, align: bool, op: &'static str, backend: &str) -> Result<(u32, u32)> {
    let texels = len.div_ceil(4).max(1) as u64;
    let max = max_tex as u64;
    let grid = grid_texels(texels);
    if grid != texels {
        let (w, h) = fold(grid, max, align);
        if h <= max {
            return Ok((w as u32, h as u32));
        }
    }
    let (w, h) = fold(texels, max, align);
    if h > max {
        return Err(Error::Limit {
            op,
            backend: backend.to_string(),
            limit_name: "MAX_TEXTURE_SIZE",
            limit: max,
            requested: texels.div_ceil(w),
        });
    }
    Ok((w as u32, h as u32))
}

/// Texel counts up to this stay exact (tiny tensors: at most 64 elements).
pub const EXACT_TEXELS: u64 = 16;
/// Steps of the texel-count grid per octave: counts round up to `k * 2^e / 8`.
pub const GRID_STEPS: u64 = 8;

/// `texels` rounded up to the size grid (see [`layout`]).
pub fn grid_texels(texels: u64) -> u64 {
    if texels <= EXACT_TEXELS {
        return texels;
    }
    let octave = 1u64 << (63 - texels.leading_zeros());
    let step = (octave / GRID_STEPS).max(1);
    texels.div_ceil(step) * step
}

/// Width and height for exactly `texels` (the height may pass `max`: the caller checks).
fn fold(texels: u64, max: u64, align: bool) -> (u64, u64) {
    let mut w = (texels as f64).sqrt().ceil() as u64;
    // Guard against float rounding on huge sizes.
    while w * w < texels {
        w += 1;
    }
    let w = if align { width(w.clamp(1, max), max) } else { npot(w.clamp(1, max), max) };
    let h0 = texels.div_ceil(w);
    // Never shrink the height below what the data needs.
    (w, npot(h0, max).max(h0))
}

/// The width for a near-square side `w`: from 8 on a multiple of 4 that is not a power of
/// two, else (or where that passes `max`) the nearest non-power-of-two.
fn width(w: u64, max: u64) -> u64 {
    if w >= 8 {
        let mut a = w.div_ceil(4) * 4;
        if a.is_power_of_two() {
            a += 4;
        }
        if a <= max {
            return a;
        }
    }
    npot(w, max)
}

/// The nearest size >= x that is not a power of two (or x - 1 at the limit, or x itself when
/// the limit leaves no choice).
fn npot(x: u64, max: u64) -> u64 {
    if !x.is_power_of_two() || x > max {
        return x;
    }
    let up = if x == 1 { 3 } else { x + 1 };
    if up <= max {
        up
    } else if x >= 4 {
        x - 1
    } else {
        x
    }
}

/// The backend's [`Storage`] payload: a texture holding `len` elements.
pub struct GlTensor {
    pub(crate) tex: glow::Texture,
    pub(crate) w: u32,
    pub(crate) h: u32,
    pub(crate) len: usize,
    pub(crate) shared: Rc<GlDevice>,
    /// Set when a step plan handed out the texture: the plan keeps the other clone while the
    /// texture is one of its entries (see `plan.rs`).
    pub(crate) token: Option<Rc<()>>,
    /// Element type: [`DType::F32`] in the backend's float format, or narrow storage in an
    /// integer texture ([`narrow_format`]).
    pub(crate) dtype: DType,
}

/// The internal format of narrow storage: `RGBA8I` (i8), `RGBA8UI` (u8), `RGBA16UI` (f16 bit
/// patterns); `None` for f32, which uses the backend's float format.
pub(crate) fn narrow_format(dtype: DType) -> Option<u32> {
    match dtype {
        DType::I8 => Some(glow::RGBA8I),
        DType::U8 => Some(glow::RGBA8UI),
        DType::F16 => Some(glow::RGBA16UI),
        _ => None,
    }
}

/// Device bytes of a pooled texture: the backend's float format, or a narrow integer format
/// (RGBA8 heatmap targets are not pooled).
pub(crate) fn texture_bytes(key: PoolKey, format: TexelFormat) -> u64 {
    let texel = narrow_texel(key.2).map_or(format.texel_bytes(), |(_, b)| b);
    key.0 as u64 * key.1 as u64 * texel
}

/// Layout-table name and bytes per texel of an internal format (`None`: not one of the narrow
/// formats).
pub(crate) fn narrow_texel(internal: u32) -> Option<(&'static str, u64)> {
    match internal {
        glow::RGBA8 => Some(("RGBA8 (i8 / u8 bytes, webgl1)", 4)),
        glow::RGBA8I => Some(("RGBA8I (i8)", 4)),
        glow::RGBA8UI => Some(("RGBA8UI (u8)", 4)),
        glow::RGBA16UI => Some(("RGBA16UI (f16 bits)", 8)),
        _ => None,
    }
}

impl GlTensor {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True for a 0-element tensor.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Texture size in texels.
    pub fn texture_size(&self) -> (u32, u32) {
        (self.w, self.h)
    }
    /// Element type of the storage (f32, or narrow: i8, u8, f16).
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub(crate) fn key(&self) -> PoolKey {
        (self.w, self.h, self.shared.internal_format(self.dtype))
    }
}

impl Drop for GlTensor {
    fn drop(&mut self) {
        if self.token.as_ref().is_some_and(|t| Rc::strong_count(t) > 1) {
            // A plan still holds the texture: it stays there, free for the plan's next step.
            return;
        }
        let key = self.key();
        self.shared.release(self.tex, key, texture_bytes(key, self.shared.format));
    }
}

/// The layout-table row of a texture holding `len` elements (see [`layout`]): elements fill
/// texels in order, 4 per texel (R, G, B, A), texels row by row; the last texel and the rows
/// past the data are padding.
pub(crate) fn describe(t: &GlTensor, len: usize, format: crate::TexelFormat) -> pixelgrad_core::StorageLayout {
    let allocated = t.w as u64 * t.h as u64;
    let (name, texel) = narrow_texel(t.key().2).unwrap_or((format.as_str(), format.texel_bytes()));
    pixelgrad_core::StorageLayout {
        container: "texture",
        width: t.w as u64,
        height: t.h as u64,
        format: name.into(),
        used: (len.min(t.len) as u64).div_ceil(4),
        allocated,
        layout: "row-major fold, 4 elements per texel".into(),
        bytes: allocated * texel,
    }
}

/// Downcasts a storage to this backend's texture. Storage knows nothing of pending values: a
/// pending (fused) result is realised by the fusion layer first (`fusion::tensor_of`).
pub(crate) fn texture_of<'a>(s: &'a Storage, shared: &Rc<GlDevice>, op: &'static str) -> Result<&'a GlTensor> {
    s.downcast::<GlTensor>().filter(|t| Rc::ptr_eq(&t.shared, shared)).ok_or_else(|| Error::BackendMismatch {
        op,
        a: shared.name.clone(),
        b: "another backend".into(),
    })
}

/// Texture storage on the device: layout, allocation outside step plans, uploads and raw reads.
impl GlDevice {
    /// The texture size of a tensor of `len` elements on this backend ([`layout`]; widths
    /// are not rounded to multiples of 4 in the `webgl1` mode).
    pub fn layout(&self, len: usize, op: &'static str) -> Result<(u32, u32)> {
        layout_in(len, self.max_tex, self.features.aligned_widths, op, &self.name)
    }

    /// The internal format of a texture holding `dtype` elements.
    pub fn internal_format(&self, dtype: DType) -> u32 {
        if !self.features.integer_textures && matches!(dtype, DType::I8 | DType::U8) {
            // The webgl1 mode's byte textures (the pool key names them RGBA8 in both modes).
            return glow::RGBA8;
        }
        narrow_format(dtype).unwrap_or_else(|| self.format.internal_format())
    }

    /// The pool key (size and internal format) of a texture for `len` elements of `dtype`
    /// (narrow storage: WebGL2 only), or the limit it breaks.
    pub fn texture_key(&self, len: usize, dtype: DType, op: &'static str) -> Result<PoolKey> {
        if let Some(max) = self.features.max_elements.filter(|&m| len > m) {
            return Err(Error::Limit {
                op,
                backend: self.name.clone(),
                limit_name: "elements per tensor (webgl1: float index arithmetic exact below 2^24)",
                limit: max as u64,
                requested: len as u64,
            });
        }
        if !self.features.integer_textures && dtype == DType::F16 {
            return Err(crate::legacy::no_narrow(op, &self.name, dtype));
        }
        let (w, h) = self.layout(len, op)?;
        Ok((w, h, self.internal_format(dtype)))
    }

    /// A texture of `key` for `len` elements of `dtype` outside step plans: one from the pool
    /// when one of the same key is free, else a new one.
    pub fn alloc_eager(self: &Rc<Self>, key: PoolKey, len: usize, dtype: DType, op: &'static str) -> Result<GlTensor> {
        let tex = self.pooled_or_new(key, op)?;
        Ok(GlTensor { tex, w: key.0, h: key.1, len, shared: self.clone(), token: None, dtype })
    }

    /// A texture from the pool, or a new one.
    pub fn pooled_or_new(&self, key: PoolKey, op: &'static str) -> Result<glow::Texture> {
        match self.take_pooled(key) {
            Some(t) => Ok(t),
            None => self.new_texture(key, op),
        }
    }

    fn new_texture(&self, key: PoolKey, op: &'static str) -> Result<glow::Texture> {
        let gl = &self.gl;
        // Binding the new texture changes the active unit's binding.
        self.forget_gl_state();
        let tex = if !self.features.texture_storage {
            // SAFETY: creating a texture on the current context; unbound below.
            unsafe {
                let t = if key.2 == glow::RGBA8 {
                    crate::legacy::byte_texture(gl, self.legacy, key.0, key.1)
                } else if self.format == TexelFormat::Rgba16F {
                    crate::legacy::half_texture(gl, self.legacy, key.0, key.1)
                } else {
                    crate::legacy::float_texture(gl, self.legacy, key.0, key.1)
                }
                .map_err(|e| self.err(op, format!("create_texture: {e}")))?;
                gl.bind_texture(glow::TEXTURE_2D, None);
                t
            }
        } else {
            // SAFETY: the context is current (every caller made it so).
            unsafe { self.new_texture_storage(key, op)? }
        };
        self.check_gl(op, "texture allocation")?;
        let bytes = texture_bytes(key, self.format);
        self.count(|c| {
            c.allocations += 1;
            c.bytes_in_use += bytes;
        });
        Ok(tex)
    }

    /// An immutable-storage texture (WebGL2 / ES 3).
    ///
    /// # Safety
    /// The context must be current.
    unsafe fn new_texture_storage(&self, key: PoolKey, op: &'static str) -> Result<glow::Texture> {
        let gl = &self.gl;
        let tex = {
            let t = gl.create_texture().map_err(|e| self.err(op, format!("create_texture: {e}")))?;
            gl.bind_texture(glow::TEXTURE_2D, Some(t));
            gl.tex_storage_2d(glow::TEXTURE_2D, 1, key.2, key.0 as i32, key.1 as i32);
            // Data textures: never filter or wrap (texelFetch ignores both, but a sampler with
            // LINEAR on a float texture may be incomplete without OES_texture_float_linear).
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MIN_FILTER, glow::NEAREST as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MAG_FILTER, glow::NEAREST as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_WRAP_S, glow::CLAMP_TO_EDGE as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_WRAP_T, glow::CLAMP_TO_EDGE as i32);
            gl.bind_texture(glow::TEXTURE_2D, None);
            t
        };
        Ok(tex)
    }

    /// Uploads host data into the new texture `t` (padding the last texel with zeros).
    pub fn write_f32(&self, t: GlTensor, data: &[f32]) -> Result<GlTensor> {
        let texels = t.w as usize * t.h as usize;
        if !self.features.float_uploads_to_half && self.format == TexelFormat::Rgba16F {
            // The `webgl1` mode's half-float storage: the values converted on the host to IEEE
            // halves (round to nearest even; past the half range they become infinities, as a
            // half-float target stores them) and uploaded as `HALF_FLOAT_OES` (`HALF_FLOAT` in
            // an ES 3 context) data, the only form WebGL1 takes for a half-float texture (a
            // `Uint16Array`).
            let mut bits = vec![0u16; texels * 4];
            for (b, v) in bits.iter_mut().zip(data) {
                *b = half::f16::from_f32(*v).to_bits();
            }
            return self.write_texels(t, crate::legacy::half_type(self.legacy), &*u16_bytes_mut(&mut bits));
        }
        let mut padded = Vec::with_capacity(texels * 4);
        padded.extend_from_slice(data);
        padded.resize(texels * 4, 0.0);
        self.write_texels(t, glow::FLOAT, f32_bytes(&padded))
    }

    /// Uploads `bytes`, exactly `t.w * t.h` RGBA texels of the GL type `ty`, into `t`.
    fn write_texels(&self, t: GlTensor, ty: u32, bytes: &[u8]) -> Result<GlTensor> {
        self.forget_gl_state();
        // SAFETY: the callers pass exactly w*h RGBA texels of `ty`.
        unsafe {
            self.gl.bind_texture(glow::TEXTURE_2D, Some(t.tex));
            self.gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 4);
            self.gl.tex_sub_image_2d(
                glow::TEXTURE_2D,
                0,
                0,
                0,
                t.w as i32,
                t.h as i32,
                glow::RGBA,
                ty,
                glow::PixelUnpackData::Slice(Some(bytes)),
            );
            self.gl.bind_texture(glow::TEXTURE_2D, None);
        }
        self.mark_unflushed();
        self.check_gl("upload", "tex_sub_image_2d")?;
        Ok(t)
    }

    /// Uploads narrow host data (`bytes` of `dtype`: one per i8 / u8 element, two
    /// little-endian per f16 element) into the new integer texture `t`, exactly, the last
    /// texel padded with zeros.
    pub fn write_narrow(&self, op: &'static str, t: GlTensor, len: usize, dtype: DType, fill: impl FnOnce(&mut [u8])) -> Result<GlTensor> {
        let texels = t.w as usize * t.h as usize;
        let (format_ty, elem) = match dtype {
            // webgl1: byte textures, i8 as its two's-complement byte (widen decodes the sign).
            DType::I8 | DType::U8 if !self.features.integer_textures => (glow::UNSIGNED_BYTE, 1),
            DType::I8 => (glow::BYTE, 1),
            DType::U8 => (glow::UNSIGNED_BYTE, 1),
            DType::F16 => (glow::UNSIGNED_SHORT, 2),
            other => return Err(self.err(op, format!("internal: {other} is not narrow storage"))),
        };
        let format = if self.features.integer_textures { glow::RGBA_INTEGER } else { glow::RGBA };
        // A u16 buffer: in the browser glow views UNSIGNED_SHORT data as a Uint16Array, which
        // must start 2-byte aligned (see `f32_bytes`).
        let mut buf = vec![0u16; (texels * 4 * elem).div_ceil(2)];
        let bytes = u16_bytes_mut(&mut buf);
        fill(&mut bytes[..len * elem]);
        self.forget_gl_state();
        // SAFETY: the buffer holds exactly w*h RGBA texels of the format's type.
        unsafe {
            self.gl.bind_texture(glow::TEXTURE_2D, Some(t.tex));
            self.gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 4);
            self.gl.tex_sub_image_2d(
                glow::TEXTURE_2D,
                0,
                0,
                0,
                t.w as i32,
                t.h as i32,
                format,
                format_ty,
                glow::PixelUnpackData::Slice(Some(&bytes[..texels * 4 * elem])),
            );
            self.gl.bind_texture(glow::TEXTURE_2D, None);
        }
        self.mark_unflushed();
        self.check_gl(op, "tex_sub_image_2d")?;
        Ok(t)
    }

    /// Blocking readback without looking at pending checks.
    pub fn read_raw(&self, t: &GlTensor, len: usize) -> Result<Vec<f32>> {
        self.current()?;
        if len > t.len {
            return Err(self.err("read", format!("asked for {len} elements of a tensor of {}", t.len)));
        }
        self.attach(t.tex, "read")?;
        let mut out = vec![0f32; t.w as usize * t.h as usize * 4];
        // SAFETY: the buffer is exactly w*h RGBA f32 texels.
        unsafe {
            self.gl.pixel_store_i32(glow::PACK_ALIGNMENT, 4);
            self.gl.read_pixels(
                0,
                0,
                t.w as i32,
                t.h as i32,
                glow::RGBA,
                glow::FLOAT,
                glow::PixelPackData::Slice(Some(f32_bytes_mut(&mut out))),
            );
        }
        self.check_gl("read", "read_pixels")?;
        self.count(|c| c.readbacks += 1);
        out.truncate(len);
        Ok(out)
    }
}
