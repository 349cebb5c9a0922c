//! Textures in and out for pages that share the WebGL2 context (`pg.fromTexture`,
//! `tensor.texture()` in `web/js/texture.js`). A tensor's layout is the backend's own (see
//! `texture.rs`): 4 consecutive elements per texel, texels row-major over a texture of
//! [`WebGlBackend::texture_layout`]'s size in the backend's float format. Both directions
//! copy the texels with one `blitFramebuffer` (NEAREST) through framebuffers of their own, so
//! the backend's framebuffer and its draw-buffer state are left alone; nothing is read back.

use glow::HasContext;
use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Device, Error, Result, Storage, Tensor};

use crate::fusion::tensor_of;
use crate::WebGlBackend;

impl WebGlBackend {
    /// `(width, height, internal format)` of the texture a float32 tensor of `len` elements has
    /// on this backend (WebGL2 only).
    pub fn texture_layout(&self, len: usize, op: &'static str) -> Result<(u32, u32, u32)> {
        let sh = &self.shared;
        if !sh.features.texture_blit {
            return Err(sh.err(op, "textures in and out need WebGL2; the webgl1 mode has no framebuffer blit"));
        }
        let (w, h) = sh.layout(len, op)?;
        Ok((w, h, sh.internal_format(DType::F32)))
    }

    /// The raw GL context (to wrap a page's texture as a `glow::Texture`, and back).
    pub fn glow_context(&self) -> &glow::Context {
        &self.shared.gl
    }

    /// Copies the `w` x `h` texels at the origin of `src` into `dst` (both of this context).
    fn blit(&self, src: glow::Texture, dst: glow::Texture, w: u32, h: u32, op: &'static str) -> Result<()> {
        let sh = &self.shared;
        let gl = &sh.gl;
        // SAFETY: GL calls on the backend's current context; the framebuffers made here are
        // deleted before returning, and the backend's own framebuffer is bound again.
        let r = unsafe {
            while gl.get_error() != glow::NO_ERROR {}
            let read = gl.create_framebuffer().map_err(|e| sh.err(op, format!("create_framebuffer: {e}")))?;
            let draw = gl.create_framebuffer().map_err(|e| sh.err(op, format!("create_framebuffer: {e}")))?;
            gl.bind_framebuffer(glow::READ_FRAMEBUFFER, Some(read));
            gl.framebuffer_texture_2d(glow::READ_FRAMEBUFFER, glow::COLOR_ATTACHMENT0, glow::TEXTURE_2D, Some(src), 0);
            gl.bind_framebuffer(glow::DRAW_FRAMEBUFFER, Some(draw));
            gl.framebuffer_texture_2d(glow::DRAW_FRAMEBUFFER, glow::COLOR_ATTACHMENT0, glow::TEXTURE_2D, Some(dst), 0);
            let rs = gl.check_framebuffer_status(glow::READ_FRAMEBUFFER);
            let ds = gl.check_framebuffer_status(glow::DRAW_FRAMEBUFFER);
            // a blit converts fixed-point to float silently: only float sources are taken
            let kind = if rs == glow::FRAMEBUFFER_COMPLETE {
                gl.get_framebuffer_attachment_parameter_i32(
                    glow::READ_FRAMEBUFFER,
                    glow::COLOR_ATTACHMENT0,
                    glow::FRAMEBUFFER_ATTACHMENT_COMPONENT_TYPE,
                ) as u32
            } else {
                glow::FLOAT
            };
            let r = if rs != glow::FRAMEBUFFER_COMPLETE {
                Err(sh.err(op, format!("the source texture cannot be read as a framebuffer (status 0x{rs:04X}): it must be a 2D texture of this context with a renderable float format such as RGBA32F, and storage allocated")))
            } else if kind != glow::FLOAT {
                Err(sh.err(op, format!("the source texture holds component type 0x{kind:04X}, not floats: it must have a float format such as RGBA32F (a fixed-point texture would be converted to [0, 1] silently)")))
            } else if ds != glow::FRAMEBUFFER_COMPLETE {
                Err(sh.err(op, format!("the destination texture is not renderable (status 0x{ds:04X})")))
            } else {
                gl.blit_framebuffer(0, 0, w as i32, h as i32, 0, 0, w as i32, h as i32, glow::COLOR_BUFFER_BIT, glow::NEAREST);
                match gl.get_error() {
                    glow::NO_ERROR => Ok(()),
                    e => Err(sh.err(op, format!("blitFramebuffer failed (GL error 0x{e:04X}): the texture's format must be a float format like the backend's (0x{:04X})", sh.internal_format(DType::F32)))),
                }
            };
            gl.bind_framebuffer(glow::FRAMEBUFFER, Some(sh.fbo));
            gl.delete_framebuffer(read);
            gl.delete_framebuffer(draw);
            r
        };
        sh.forget_gl_state();
        sh.mark_unflushed();
        r
    }

    /// A float32 tensor of `dims` on `dev` (a device of this backend) whose texels are copied
    /// from `src`, a texture of this context laid out as [`WebGlBackend::texture_layout`] says
    /// (at least that many texels; a float format).
    pub fn import_texture(&self, dev: &Device, src: glow::Texture, dims: &[usize]) -> Result<Tensor> {
        let op = "fromTexture";
        let n = dims
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| Error::invalid(op, format!("shape {dims:?} has more elements than this machine can count")))?;
        let (w, h, _) = self.texture_layout(n, op)?;
        let key = self.shared.texture_key(n, DType::F32, op)?;
        let t = self.shared.alloc_eager(key, n, DType::F32, op)?;
        self.blit(src, t.tex, w, h, op)?;
        Ok(Tensor::from_storage(dev, Storage::new(t), dims.to_vec()))
    }

    /// A new texture (the caller's: delete it with `deleteTexture`) holding `t`'s texels, and
    /// its `(width, height, internal format)`: the size of `t`'s own texture, 4 elements per
    /// texel row-major, the first `t.numel()` values meaningful; `t` is computed first if
    /// pending.
    pub fn export_texture(&self, t: &Tensor) -> Result<(glow::Texture, u32, u32, u32)> {
        let op = "tensor.texture";
        let g = tensor_of(t.storage(), &self.shared, op)?;
        if g.dtype != DType::F32 {
            return Err(Error::Shape {
                op,
                shapes: vec![t.dims().to_vec()],
                backend: self.shared.name.clone(),
                msg: format!("the tensor has {} storage; texture() exports float32 tensors", g.dtype),
            });
        }
        let (_, _, internal) = self.texture_layout(g.len, op)?;
        let gl = &self.shared.gl;
        // SAFETY: a new texture on the backend's current context, unbound before returning.
        let tex = unsafe {
            let tex = gl.create_texture().map_err(|e| self.shared.err(op, format!("create_texture: {e}")))?;
            gl.bind_texture(glow::TEXTURE_2D, Some(tex));
            gl.tex_storage_2d(glow::TEXTURE_2D, 1, internal, g.w as i32, g.h as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MIN_FILTER, glow::NEAREST as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MAG_FILTER, glow::NEAREST as i32);
            gl.bind_texture(glow::TEXTURE_2D, None);
            tex
        };
        self.shared.forget_gl_state();
        if let Err(e) = self.blit(g.tex, tex, g.w, g.h, op) {
            // SAFETY: the texture made above, used by nothing else.
            unsafe { gl.delete_texture(tex) };
            return Err(e);
        }
        Ok((tex, g.w, g.h, internal))
    }
}
