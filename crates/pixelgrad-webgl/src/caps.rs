//! Capabilities measured at init and the storage format chosen from them. Extensions are
//! looked up under both their WebGL and native (`GL_`-prefixed) names; float render support is
//! not taken on trust but tested by building a framebuffer around a 1x1 texture.

use glow::HasContext;
use pixelgrad_core::{Error, Result};

use crate::options::{TexelFormat, WebGlOptions, WebGlReport};

fn has_ext(gl: &glow::Context, name: &str) -> bool {
    let e = gl.supported_extensions();
    e.contains(name) || e.contains(&format!("GL_{name}"))
}

/// True if a 1x1 texture of `internal` makes a complete framebuffer.
fn renderable(gl: &glow::Context, internal: u32) -> bool {
    // SAFETY: temporary objects on the current context, deleted before returning.
    unsafe {
        let (Ok(t), Ok(f)) = (gl.create_texture(), gl.create_framebuffer()) else {
            return false;
        };
        gl.bind_texture(glow::TEXTURE_2D, Some(t));
        gl.tex_storage_2d(glow::TEXTURE_2D, 1, internal, 1, 1);
        gl.bind_framebuffer(glow::FRAMEBUFFER, Some(f));
        gl.framebuffer_texture_2d(glow::FRAMEBUFFER, glow::COLOR_ATTACHMENT0, glow::TEXTURE_2D, Some(t), 0);
        let ok = gl.check_framebuffer_status(glow::FRAMEBUFFER) == glow::FRAMEBUFFER_COMPLETE;
        gl.bind_framebuffer(glow::FRAMEBUFFER, None);
        gl.bind_texture(glow::TEXTURE_2D, None);
        gl.delete_framebuffer(f);
        gl.delete_texture(t);
        while gl.get_error() != glow::NO_ERROR {}
        ok
    }
}

/// Queries everything and picks the format (or explains why the backend cannot run).
pub(crate) fn measure(gl: &glow::Context, opts: &WebGlOptions) -> Result<WebGlReport> {
    if opts.webgl1 {
        return crate::legacy::measure(gl, opts);
    }
    // SAFETY: plain queries on the current context.
    let (renderer, version, vendor, max_tex, max_db, highp) = unsafe {
        (
            gl.get_parameter_string(glow::RENDERER),
            gl.get_parameter_string(glow::VERSION),
            gl.get_parameter_string(glow::VENDOR),
            gl.get_parameter_i32(glow::MAX_TEXTURE_SIZE).max(1) as u32,
            gl.get_parameter_i32(glow::MAX_DRAW_BUFFERS).max(0) as u32,
            gl.get_shader_precision_format(glow::FRAGMENT_SHADER, glow::HIGH_FLOAT),
        )
    };
    let fragment_highp = crate::emulation::reported_highp(highp, opts);
    let float_render_target = renderable(gl, glow::RGBA32F);
    let half_render_target = renderable(gl, glow::RGBA16F);
    let mut warnings = Vec::new();
    let unavailable = |reason: String| Error::Unavailable { backend: "webgl".into(), reason };
    if let Some(p) = fragment_highp {
        if p.precision < 16 {
            return Err(unavailable(format!(
                "fragment shaders have no highp float ({} bits of precision): index arithmetic and \
                 training need 32-bit floats; use the cpu or webgpu backend",
                p.precision
            )));
        }
    }
    warnings.extend(crate::emulation::emulation_warning(opts));
    if opts.mediump {
        warnings.push("mediump forced by options: fragment shaders compute in mediump float (16-bit on GPUs that honour it)".to_string());
    }
    let format = if float_render_target && !opts.force_half_float {
        TexelFormat::Rgba32F
    } else if half_render_target {
        warnings.push(if opts.force_half_float {
            "RGBA16F forced by options: tensors keep ~11 bits of mantissa (relative error ~1e-3)".to_string()
        } else {
            "no float render targets (EXT_color_buffer_float): falling back to RGBA16F \
             (EXT_color_buffer_half_float); tensors keep ~11 bits of mantissa (relative error \
             ~1e-3), training is less accurate"
                .to_string()
        });
        TexelFormat::Rgba16F
    } else {
        return Err(unavailable(format!(
            "the GPU ({renderer}) cannot render into float textures: neither EXT_color_buffer_float \
             (RGBA32F) nor EXT_color_buffer_half_float (RGBA16F) works, and WebGL training stores \
             every tensor in a float render target; use the webgpu backend if the browser has \
             WebGPU, otherwise the cpu backend"
        )));
    };
    let effective = opts.max_texture_size.map_or(max_tex, |m| m.clamp(1, max_tex));
    Ok(WebGlReport {
        renderer,
        version,
        vendor,
        ext_color_buffer_float: has_ext(gl, "EXT_color_buffer_float"),
        ext_color_buffer_half_float: has_ext(gl, "EXT_color_buffer_half_float"),
        ext_float_blend: has_ext(gl, "EXT_float_blend"),
        webgl1: false,
        oes_texture_float: has_ext(gl, "OES_texture_float"),
        webgl_color_buffer_float: has_ext(gl, "WEBGL_color_buffer_float"),
        float_render_target,
        half_render_target,
        fragment_highp,
        max_texture_size: max_tex,
        effective_max_texture_size: effective,
        max_draw_buffers: max_db,
        format,
        emulated_precision: opts.emulate_precision,
        warnings,
        self_test: None,
    })
}
