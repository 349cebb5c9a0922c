//! The `webgl1` mode's side of the backend (the programs are in `gl1.rs`): what it measures at
//! init, the one-buffer full-screen triangle, float textures created with `texImage2D`, and the
//! render check that decides whether float render targets really work.
//!
//! WebGL1 stores float tensors through OES_texture_float and renders into them through
//! WEBGL_color_buffer_float. A device that renders only half floats (OES_texture_half_float +
//! EXT_color_buffer_half_float, as many phones and older GPUs) gets half-float textures
//! instead (the RGBA16F storage of the WebGL2 fallback, with the same optimizer measures):
//! uploaded as 16-bit halves converted on the host ([`half_type`]; WebGL1 takes only a
//! `Uint16Array` for `HALF_FLOAT_OES`) and read back with `readPixels(RGBA, FLOAT)`, which
//! EXT_color_buffer_half_float makes valid for a half-float framebuffer (the read path of the
//! 32-bit textures, unchanged). An extension string is not trusted: init builds a framebuffer
//! around a float (or half-float) texture, draws a constant into it and reads it back.

use glow::HasContext;
use pixelgrad_core::{Error, Result};

use crate::options::{TexelFormat, WebGlOptions, WebGlReport};

/// Backend name of this mode, in errors and reports.
pub const NAME: &str = "webgl1";

fn has_ext(gl: &glow::Context, name: &str) -> bool {
    let e = gl.supported_extensions();
    e.contains(name) || e.contains(&format!("GL_{name}"))
}

/// True for a WebGL1 / OpenGL ES 2 context (its VERSION string): there textures take unsized
/// formats (`RGBA` with type `FLOAT`); an ES 3 / WebGL2 context takes sized ones (`RGBA32F`).
pub(crate) fn is_legacy_context(version: &str) -> bool {
    version.starts_with("WebGL 1") || version.starts_with("OpenGL ES 2")
}

/// The internal format `texImage2D` is given for float tensors.
pub(crate) fn internal_format(legacy: bool) -> i32 {
    if legacy {
        glow::RGBA as i32
    } else {
        glow::RGBA32F as i32
    }
}

/// The internal format `texImage2D` is given for half-float tensors: unsized `RGBA` in a WebGL1 /
/// ES 2 context (the type, [`half_type`], makes it half float), `RGBA16F` in an ES 3 one.
pub(crate) fn half_internal_format(legacy: bool) -> i32 {
    if legacy {
        glow::RGBA as i32
    } else {
        glow::RGBA16F as i32
    }
}

/// The pixel type of half-float texture data: `HALF_FLOAT_OES` (0x8D61, OES_texture_half_float)
/// in a WebGL1 / ES 2 context, `HALF_FLOAT` (0x140B) in an ES 3 one. The data is IEEE half
/// bit patterns in both.
pub(crate) fn half_type(legacy: bool) -> u32 {
    if legacy {
        glow::HALF_FLOAT_OES
    } else {
        glow::HALF_FLOAT
    }
}

/// As [`float_texture`] with half floats (see [`half_type`]): the storage of a device that
/// renders only half floats.
///
/// # Safety
/// The context must be current.
pub(crate) unsafe fn half_texture(gl: &glow::Context, legacy: bool, w: u32, h: u32) -> std::result::Result<glow::Texture, String> {
    texture(gl, half_internal_format(legacy), half_type(legacy), w, h)
}

/// Creates a float texture of `w` x `h` texels with `texImage2D` (no `texStorage2D` in WebGL1),
/// NEAREST and CLAMP_TO_EDGE (what texel-centre sampling and non-power-of-two sizes need), and
/// leaves it bound.
///
/// # Safety
/// The context must be current.
pub(crate) unsafe fn float_texture(gl: &glow::Context, legacy: bool, w: u32, h: u32) -> std::result::Result<glow::Texture, String> {
    texture(gl, internal_format(legacy), glow::FLOAT, w, h)
}

/// As [`float_texture`] with one byte per channel (`RGBA` / `UNSIGNED_BYTE`, core WebGL1): the
/// 8-bit storage of this mode, four elements per texel, sampled as `byte / 255` and decoded
/// by the `PG_ES100` section of `shaders/widen.glsl`.
///
/// # Safety
/// The context must be current.
pub(crate) unsafe fn byte_texture(gl: &glow::Context, legacy: bool, w: u32, h: u32) -> std::result::Result<glow::Texture, String> {
    texture(gl, if legacy { glow::RGBA as i32 } else { glow::RGBA8 as i32 }, glow::UNSIGNED_BYTE, w, h)
}

unsafe fn texture(gl: &glow::Context, internal: i32, ty: u32, w: u32, h: u32) -> std::result::Result<glow::Texture, String> {
    let t = gl.create_texture()?;
    gl.bind_texture(glow::TEXTURE_2D, Some(t));
    gl.tex_image_2d(glow::TEXTURE_2D, 0, internal, w as i32, h as i32, 0, glow::RGBA, ty, glow::PixelUnpackData::Slice(None));
    gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MIN_FILTER, glow::NEAREST as i32);
    gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MAG_FILTER, glow::NEAREST as i32);
    gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_WRAP_S, glow::CLAMP_TO_EDGE as i32);
    gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_WRAP_T, glow::CLAMP_TO_EDGE as i32);
    Ok(t)
}

/// True if a 3x3 float texture (`half`: half-float texture) makes a complete framebuffer.
fn float_framebuffer(gl: &glow::Context, legacy: bool, half: bool) -> bool {
    // SAFETY: temporary objects on the current context, deleted before returning.
    unsafe {
        // Only this check's own errors count (a refused texture type is INVALID_ENUM).
        while gl.get_error() != glow::NO_ERROR {}
        let Ok(f) = gl.create_framebuffer() else { return false };
        let t = if half { half_texture(gl, legacy, 3, 3) } else { float_texture(gl, legacy, 3, 3) };
        let Ok(t) = t else {
            gl.delete_framebuffer(f);
            return false;
        };
        gl.bind_framebuffer(glow::FRAMEBUFFER, Some(f));
        gl.framebuffer_texture_2d(glow::FRAMEBUFFER, glow::COLOR_ATTACHMENT0, glow::TEXTURE_2D, Some(t), 0);
        let ok = gl.get_error() == glow::NO_ERROR && gl.check_framebuffer_status(glow::FRAMEBUFFER) == glow::FRAMEBUFFER_COMPLETE;
        gl.bind_framebuffer(glow::FRAMEBUFFER, None);
        gl.bind_texture(glow::TEXTURE_2D, None);
        gl.delete_framebuffer(f);
        gl.delete_texture(t);
        while gl.get_error() != glow::NO_ERROR {}
        ok
    }
}

pub(crate) fn unavailable(reason: String) -> Error {
    Error::Unavailable { backend: NAME.into(), reason }
}

/// Queries the context for the `webgl1` mode and picks the format (RGBA32F; half floats where
/// only those render, or where `force_half_float` asks) or explains why it cannot run.
pub(crate) fn measure(gl: &glow::Context, opts: &WebGlOptions) -> Result<WebGlReport> {
    // SAFETY: plain queries on the current context.
    let (renderer, version, vendor, max_tex, highp) = unsafe {
        (
            gl.get_parameter_string(glow::RENDERER),
            gl.get_parameter_string(glow::VERSION),
            gl.get_parameter_string(glow::VENDOR),
            gl.get_parameter_i32(glow::MAX_TEXTURE_SIZE).max(1) as u32,
            gl.get_shader_precision_format(glow::FRAGMENT_SHADER, glow::HIGH_FLOAT),
        )
    };
    let legacy = is_legacy_context(&version);
    let draw_buffers_ext = has_ext(gl, "WEBGL_draw_buffers") || has_ext(gl, "EXT_draw_buffers");
    // MAX_DRAW_BUFFERS is an invalid enum on WebGL1 without WEBGL_draw_buffers. This mode draws
    // into one target only, so the value is only reported.
    let max_draw_buffers = if !legacy || draw_buffers_ext {
        // SAFETY: a plain query; an error it may record is cleared.
        unsafe {
            let v = gl.get_parameter_i32(glow::MAX_DRAW_BUFFERS).max(1) as u32;
            while gl.get_error() != glow::NO_ERROR {}
            v
        }
    } else {
        1
    };
    let fragment_highp = crate::emulation::reported_highp(highp, opts);
    if let Some(p) = fragment_highp {
        if p.precision < 23 {
            return Err(unavailable(format!(
                "fragment shaders have no 32-bit highp float ({} bits of precision): the webgl1 \
                 backend does all index arithmetic in floats and needs 23 bits; use the cpu backend",
                p.precision
            )));
        }
    }
    let oes_texture_float = has_ext(gl, "OES_texture_float");
    let oes_texture_half_float = has_ext(gl, "OES_texture_half_float");
    let webgl_color_buffer_float = has_ext(gl, "WEBGL_color_buffer_float");
    let ext_color_buffer_half_float = has_ext(gl, "EXT_color_buffer_half_float");
    // A WebGL1 context takes float (half-float) texture data only with OES_texture_float
    // (OES_texture_half_float); an ES 3 context has both formats in core.
    let float_render_target = (!legacy || oes_texture_float) && float_framebuffer(gl, legacy, false);
    let half_render_target = (!legacy || oes_texture_half_float) && float_framebuffer(gl, legacy, true);
    let mut warnings: Vec<String> = crate::emulation::emulation_warning(opts).into_iter().collect();
    let format = if float_render_target && !opts.force_half_float {
        TexelFormat::Rgba32F
    } else if half_render_target {
        warnings.push(if opts.force_half_float {
            "half-float storage forced by options: tensors keep ~11 bits of mantissa (relative error ~1e-3)".to_string()
        } else {
            "no float render targets (OES_texture_float + WEBGL_color_buffer_float): storing tensors in \
             half floats (OES_texture_half_float + EXT_color_buffer_half_float); tensors keep ~11 bits \
             of mantissa (relative error ~1e-3), training uses the half-precision measures"
                .to_string()
        });
        TexelFormat::Rgba16F
    } else {
        let seen = |name: &str, present: bool| format!("{name} {}", if present { "present" } else { "missing" });
        return Err(unavailable(format!(
            "the GPU ({renderer}) cannot render into float textures: a framebuffer around an RGBA \
             FLOAT texture ({}, {}) and one around a half-float texture ({}, {}) are both \
             incomplete{}; use the cpu backend",
            seen("OES_texture_float", oes_texture_float || !legacy),
            seen("WEBGL_color_buffer_float", webgl_color_buffer_float),
            seen("OES_texture_half_float", oes_texture_half_float || !legacy),
            seen("EXT_color_buffer_half_float", ext_color_buffer_half_float),
            if opts.force_half_float { " (half-float storage was forced by options)" } else { "" },
        )));
    };
    let effective = opts.max_texture_size.map_or(max_tex, |m| m.clamp(1, max_tex));
    Ok(WebGlReport {
        renderer,
        version,
        vendor,
        ext_color_buffer_float: has_ext(gl, "EXT_color_buffer_float"),
        ext_color_buffer_half_float,
        ext_float_blend: has_ext(gl, "EXT_float_blend"),
        webgl1: true,
        oes_texture_float,
        webgl_color_buffer_float,
        float_render_target,
        half_render_target,
        fragment_highp,
        max_texture_size: max_tex,
        effective_max_texture_size: effective,
        max_draw_buffers,
        format,
        emulated_precision: opts.emulate_precision,
        warnings,
        self_test: None,
    })
}

/// The full-screen triangle's corners, attribute 0 of every draw in this mode.
pub(crate) fn triangle_buffer(gl: &glow::Context) -> std::result::Result<glow::Buffer, String> {
    let corners: [f32; 6] = [-1.0, -1.0, 3.0, -1.0, -1.0, 3.0];
    // SAFETY: a new buffer on the current context, filled with 6 floats.
    unsafe {
        let b = gl.create_buffer()?;
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(b));
        gl.buffer_data_u8_slice(glow::ARRAY_BUFFER, crate::bytes::f32_bytes(&corners), glow::STATIC_DRAW);
        gl.bind_buffer(glow::ARRAY_BUFFER, None);
        Ok(b)
    }
}

/// The error for a feature the `webgl1` mode does not have.
pub(crate) fn unsupported(op: &'static str, what: &str) -> Error {
    Error::backend(op, NAME, format!("{what} is not available on the webgl1 backend (GLSL ES 1.00); use the webgl, webgpu or cpu backend"))
}

/// The error for narrow storage (8-bit or f16) in the `webgl1` mode, naming the missing
/// feature. WebGL1 has no integer textures (`RGBA8I` / `RGBA8UI` / `RGBA16UI`, `isampler2D`,
/// `texelFetch`), no integer bit operations in GLSL ES 1.00, and half-float render targets only
/// through an optional extension, so it stores no narrow tensors:
/// [`Caps::int8`](pixelgrad_core::Caps::int8) and
/// [`Caps::f16_storage`](pixelgrad_core::Caps::f16_storage) are false there and
/// `Tensor::from_i8` / `from_u8` / `from_f16` make f32 tensors of the same values.
pub(crate) fn no_narrow(op: &'static str, backend: &str, dtype: pixelgrad_core::kernel::DType) -> Error {
    use pixelgrad_core::kernel::DType;
    let what = match dtype {
        DType::F16 => "f16 storage needs 16-bit integer textures (RGBA16UI) and GLSL ES 3.00 bit operations, which WebGL1 does not have; this mode stores f16 tensors as f32 (Tensor::from_f16 does so where caps.f16_storage is false)",
        _ => "8-bit arithmetic and 8-bit results need integer textures (RGBA8I / RGBA8UI, isampler2D) and GLSL ES 3.00 integer arithmetic, which WebGL1 does not have; this mode stores 8-bit tensors in byte textures and only widens them (caps.int8 is false, caps.int8_storage true)",
    };
    Error::backend(op, backend.to_string(), format!("{what} ({dtype})"))
}
