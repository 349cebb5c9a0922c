//! Images into model inputs on the device (`pg.fromPixels` on WebGL2): 8-bit RGBA pixels in a
//! texture (filled by `texSubImage2D` from a canvas, image, video or `VideoFrame` in the
//! browser, or from bytes) are resampled, normalised and laid out into the tensor's float
//! texture by one fragment pass (`shaders/from_pixels.glsl`), as `pixelgrad_image`
//! defines. Nothing goes through the host.

use std::rc::Rc;

use glow::HasContext;
use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Device, Error, Result, Storage, Tensor};
use pixelgrad_image::host::Rgba8;
use pixelgrad_image::yuv::{YuvMatrix, YuvPlanes};
use pixelgrad_image::{Geometry, Layout, PixelSpec};

use crate::backend::WebGlBackend;
use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

const OP: &str = "fromPixels";

/// An RGBA8 texture that [`WebGlBackend::from_pixels_texture`] reads (the source of one frame).
/// Keep it and reuse it while the source size stays the same; dropping it deletes the texture.
pub struct PixelTexture {
    tex: glow::Texture,
    width: u32,
    height: u32,
    shared: Rc<Shared>,
    /// Held while a pass reads the texture through a [`GlTensor`] view, so that view's drop
    /// leaves the texture alone (see `GlTensor::drop`).
    keep: Rc<()>,
    /// `fromYUV`'s sample textures, made on its first use: the luma (`R8UI`, the texture's
    /// size) and the interleaved chroma (`RG8UI`, half the size rounded up).
    planes: std::cell::Cell<Option<[glow::Texture; 2]>>,
}

impl PixelTexture {
    /// The GL texture (bind it to `TEXTURE_2D` and `texSubImage2D` into it).
    pub fn texture(&self) -> glow::Texture {
        self.tex
    }
    /// Size in pixels.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// A tensor-shaped view for binding the texture as a pass input; never returned to the
    /// pool (the `keep` token outlives it).
    fn view(&self) -> GlTensor {
        self.view_of(self.tex, self.width, self.height, DType::F32)
    }

    fn view_of(&self, tex: glow::Texture, w: u32, h: u32, dtype: DType) -> GlTensor {
        GlTensor { tex, w, h, len: 4 * w as usize * h as usize, shared: self.shared.dev.clone(), token: Some(self.keep.clone()), dtype }
    }

    /// The chroma textures' size.
    fn chroma_size(&self) -> (u32, u32) {
        (self.width.div_ceil(2), self.height.div_ceil(2))
    }

    /// `fromYUV`'s luma and chroma textures, made on the first call.
    fn planes(&self, op: &'static str) -> Result<[glow::Texture; 2]> {
        if let Some(p) = self.planes.get() {
            return Ok(p);
        }
        let (cw, ch) = self.chroma_size();
        let luma = integer_texture(&self.shared, op, glow::R8UI, self.width, self.height)?;
        let chroma = integer_texture(&self.shared, op, glow::RG8UI, cw, ch).inspect_err(|_| {
            // SAFETY: the luma texture was just made on this context and nothing uses it.
            unsafe { self.shared.gl.delete_texture(luma) };
        })?;
        self.planes.set(Some([luma, chroma]));
        Ok([luma, chroma])
    }
}

impl std::fmt::Debug for PixelTexture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PixelTexture({}x{})", self.width, self.height)
    }
}

impl Drop for PixelTexture {
    fn drop(&mut self) {
        if self.shared.current().is_ok() {
            self.shared.forget_gl_state();
            // SAFETY: the textures belong to this context; GL keeps them alive for draws still
            // queued that read them.
            unsafe {
                self.shared.gl.delete_texture(self.tex);
                for t in self.planes.get().into_iter().flatten() {
                    self.shared.gl.delete_texture(t);
                }
            }
        }
    }
}

impl WebGlBackend {
    /// A `width` x `height` RGBA8 texture for [`WebGlBackend::from_pixels_texture`].
    pub fn pixel_texture(&self, width: u32, height: u32) -> Result<PixelTexture> {
        let sh = &self.shared;
        sh.current()?;
        if !sh.features.image_programs {
            return Err(crate::legacy::unsupported(OP, "pixel import on the GPU"));
        }
        if width == 0 || height == 0 {
            return Err(Error::invalid(OP, format!("the source is {width}x{height} pixels; it has nothing to copy")));
        }
        let max = sh.report.borrow().max_texture_size;
        if width > max || height > max {
            return Err(Error::Limit {
                op: OP,
                backend: sh.name.clone(),
                limit_name: "MAX_TEXTURE_SIZE",
                limit: max as u64,
                requested: width.max(height) as u64,
            });
        }
        sh.forget_gl_state();
        let gl = &sh.gl;
        // SAFETY: creating and configuring a texture on the current context.
        let tex = unsafe {
            let t = gl.create_texture().map_err(|e| sh.err(OP, format!("create_texture: {e}")))?;
            gl.bind_texture(glow::TEXTURE_2D, Some(t));
            gl.tex_storage_2d(glow::TEXTURE_2D, 1, glow::RGBA8, width as i32, height as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MIN_FILTER, glow::NEAREST as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MAG_FILTER, glow::NEAREST as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_WRAP_S, glow::CLAMP_TO_EDGE as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_WRAP_T, glow::CLAMP_TO_EDGE as i32);
            gl.bind_texture(glow::TEXTURE_2D, None);
            t
        };
        sh.check_gl(OP, "pixel texture allocation")?;
        Ok(PixelTexture { tex, width, height, shared: sh.clone(), keep: Rc::new(()), planes: Default::default() })
    }

    /// The model input for the pixels of `texture` (its top-left `width` x `height` pixels are
    /// the source) under `spec`, as a tensor on `dev` (a device of this backend). `fill` is
    /// called first, with the context and the texture bound to `TEXTURE_2D` on the active
    /// unit, to put the pixels there (`texSubImage2D` from a DOM source in the browser).
    pub fn from_pixels_texture(
        &self,
        dev: &Device,
        texture: &PixelTexture,
        width: u32,
        height: u32,
        spec: &PixelSpec,
        fill: impl FnOnce(&glow::Context) -> Result<()>,
    ) -> Result<(Tensor, Geometry)> {
        let sh = &self.shared;
        sh.current()?;
        let g = Geometry::new(width as usize, height as usize, spec, OP)?;
        if !Rc::ptr_eq(&texture.shared, sh) || texture.width < width || texture.height < height {
            return Err(Error::invalid(OP, format!("the texture is not a {width}x{height} pixel_texture of this backend")));
        }
        sh.forget_gl_state();
        // SAFETY: binding a live texture of this context; unbound again below.
        unsafe {
            sh.gl.bind_texture(glow::TEXTURE_2D, Some(texture.tex));
            sh.gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 1);
        }
        let filled = fill(&sh.gl);
        // SAFETY: as above.
        unsafe { sh.gl.bind_texture(glow::TEXTURE_2D, None) };
        filled?;
        sh.check_gl(OP, "texSubImage2D")?;
        sh.mark_unflushed();
        let out = draw(sh, &texture.view(), &g, spec)?;
        Ok((Tensor::from_storage(dev, Storage::new(out), spec.out_dims(&g).to_vec()), g))
    }

    /// [`WebGlBackend::from_pixels_texture`] for pixels on the host (ImageData, decoded files),
    /// through a texture made for the call.
    pub fn from_pixels_host(&self, dev: &Device, img: Rgba8<'_>, spec: &PixelSpec) -> Result<(Tensor, Geometry)> {
        img.check(OP)?;
        spec.validate(OP)?;
        let tex = self.pixel_texture(img.width as u32, img.height as u32)?;
        let row = 4 * img.width;
        let packed: Vec<u8> = if img.stride == row {
            img.pixels[..row * img.height].to_vec()
        } else {
            (0..img.height).flat_map(|y| img.pixels[y * img.stride..y * img.stride + row].iter().copied()).collect()
        };
        let (w, h) = (img.width as i32, img.height as i32);
        self.from_pixels_texture(dev, &tex, img.width as u32, img.height as u32, spec, |gl| {
            // SAFETY: the bound texture is w x h RGBA8 and `packed` holds exactly w*h pixels
            // (UNPACK_ALIGNMENT is 1).
            unsafe {
                gl.tex_sub_image_2d(
                    glow::TEXTURE_2D,
                    0,
                    0,
                    0,
                    w,
                    h,
                    glow::RGBA,
                    glow::UNSIGNED_BYTE,
                    glow::PixelUnpackData::Slice(Some(&packed)),
                );
            }
            Ok(())
        })
    }
}

impl WebGlBackend {
    /// `fromYUV`: a 4:2:0 frame (I420 or NV12 planes, any row strides) converted with `matrix`
    /// and preprocessed under `spec`, through `texture` (a [`WebGlBackend::pixel_texture`] of
    /// at least the frame's size; reuse it frame after frame): the samples are uploaded as packed
    /// NV12 ([`YuvPlanes::to_nv12`]; 1.5 bytes a pixel, against 4 for RGBA) into two integer
    /// textures the texture keeps, luma `R8UI` and chroma `RG8UI`, one pass (`shaders/yuv_to_rgba.glsl`)
    /// draws them into the texture as 8-bit RGBA, converted as [`YuvPlanes::to_rgba8`] does on
    /// the host, and the from_pixels pass resamples them. The result equals `fromPixels` of the
    /// host's RGBA conversion of the frame, up to a byte where f32 and f64 round a half step
    /// differently. Needs WebGL2 (integer textures).
    pub fn from_yuv_texture(
        &self,
        dev: &Device,
        texture: &PixelTexture,
        planes: &YuvPlanes<'_>,
        matrix: &YuvMatrix,
        spec: &PixelSpec,
    ) -> Result<(Tensor, Geometry)> {
        let op = "fromYUV";
        let sh = &self.shared;
        sh.current()?;
        if !sh.features.integer_textures {
            return Err(crate::legacy::unsupported(op, "YUV conversion on the GPU"));
        }
        planes.check(op)?;
        let (w, h) = (planes.width, planes.height);
        let g = Geometry::new(w, h, spec, op)?;
        if !Rc::ptr_eq(&texture.shared, sh) || (texture.width as usize) < w || (texture.height as usize) < h {
            return Err(Error::invalid(op, format!("the texture is not a {w}x{h} pixel_texture of this backend")));
        }
        let nv12 = planes.to_nv12(op)?;
        let (luma, chroma) = nv12.split_at(w * h);
        let [lt, ct] = texture.planes(op)?;
        sh.forget_gl_state();
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        // SAFETY: both textures are at least the frame's (and its chroma's) size, and the
        // slices hold exactly w*h samples and cw*ch pairs (UNPACK_ALIGNMENT 1).
        unsafe {
            let gl = &sh.gl;
            gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 1);
            for (t, fmt, (tw, th), data) in [(lt, glow::RED_INTEGER, (w, h), luma), (ct, glow::RG_INTEGER, (cw, ch), chroma)] {
                gl.bind_texture(glow::TEXTURE_2D, Some(t));
                let px = glow::PixelUnpackData::Slice(Some(data));
                gl.tex_sub_image_2d(glow::TEXTURE_2D, 0, 0, 0, tw as i32, th as i32, fmt, glow::UNSIGNED_BYTE, px);
            }
            gl.bind_texture(glow::TEXTURE_2D, None);
        }
        sh.check_gl(op, "texSubImage2D")?;
        let (tcw, tch) = texture.chroma_size();
        let (luma, chroma) = (texture.view_of(lt, texture.width, texture.height, DType::U8), texture.view_of(ct, tcw, tch, DType::U8));
        let [a, b, c, kr, kb] = matrix.constants();
        let pass = Pass::new(op, "yuv_to_rgba", 0)
            .input("u_luma", &luma)
            .input("u_chroma", &chroma)
            .float("u_a", a)
            .float("u_b", b)
            .float("u_c", c)
            .float("u_kr", kr)
            .float("u_kb", kb);
        sh.draw(&pass, texture.tex, w as u32, h as u32, 4 * w * h)?;
        let out = draw(sh, &texture.view(), &g, spec)?;
        Ok((Tensor::from_storage(dev, Storage::new(out), spec.out_dims(&g).to_vec()), g))
    }

    /// [`WebGlBackend::from_yuv_texture`] through a pixel texture made for the call.
    pub fn from_yuv(&self, dev: &Device, planes: &YuvPlanes<'_>, matrix: &YuvMatrix, spec: &PixelSpec) -> Result<(Tensor, Geometry)> {
        planes.check("fromYUV")?;
        let tex = self.pixel_texture(planes.width as u32, planes.height as u32)?;
        self.from_yuv_texture(dev, &tex, planes, matrix, spec)
    }

    /// `fromPixels` with dtype `'uint8'`: `t` (an f32 tensor of this backend holding pixel
    /// values in `[0, 1]`, as [`WebGlBackend::from_pixels_texture`] makes with mean 0 and std 1)
    /// as 8-bit storage ([`DType::U8`] in an `RGBA8UI` texture, four per texel) of the values
    /// `floor(clamp(v * 255, 0, 255) + 0.5)`, by one pass (`shaders/narrow8.glsl`, CONFIG 2); nothing is
    /// read back. Needs WebGL2 integer textures and true f32 tensors: in the `webgl1` mode and
    /// the `RGBA16F` fallback (where `t` holds half-precision values, so bytes near a tie could
    /// differ) it fails with an error naming what is missing.
    pub fn pixels_to_u8(&self, dev: &Device, t: &Tensor) -> Result<Tensor> {
        let sh = &self.shared;
        sh.current()?;
        if !sh.features.integer_textures {
            return Err(crate::legacy::no_narrow(OP, &sh.name, DType::U8));
        }
        if sh.format != crate::TexelFormat::Rgba32F {
            return Err(sh.err(
                OP,
                format!(
                    "dtype 'uint8' needs true f32 tensors to round from; this context stores them in {} (half precision): \
                     use dtype 'float32'",
                    sh.format.as_str()
                ),
            ));
        }
        let x = crate::fusion::tensor_of(t.storage(), sh, OP)?;
        if x.dtype != DType::F32 {
            return Err(Error::invalid(OP, format!("pixels_to_u8 takes f32 values, got {} storage", x.dtype)));
        }
        let n = t.numel();
        let out = sh.run_typed(Pass::new(OP, "narrow8", 2).input("u_x", x), n, DType::U8)?;
        Ok(Tensor::from_storage_typed(dev, Storage::new(out), DType::U8, t.dims().to_vec()))
    }
}

/// A `w` x `h` unsigned-integer texture of `format` (`R8UI`, `RG8UI`) for `fromYUV`'s samples.
fn integer_texture(sh: &Shared, op: &'static str, format: u32, w: u32, h: u32) -> Result<glow::Texture> {
    sh.forget_gl_state();
    let gl = &sh.gl;
    // SAFETY: creating and configuring a texture on the current context.
    let tex = unsafe {
        let t = gl.create_texture().map_err(|e| sh.err(op, format!("create_texture: {e}")))?;
        gl.bind_texture(glow::TEXTURE_2D, Some(t));
        gl.tex_storage_2d(glow::TEXTURE_2D, 1, format, w as i32, h as i32);
        gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MIN_FILTER, glow::NEAREST as i32);
        gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MAG_FILTER, glow::NEAREST as i32);
        gl.bind_texture(glow::TEXTURE_2D, None);
        t
    };
    sh.check_gl(op, "sample texture allocation")?;
    Ok(tex)
}

/// The uniforms both from_pixels passes read: the source `px`, its size and the horizontal
/// filter of the content columns.
fn source_and_columns<'a>(pass: Pass<'a>, px: &'a GlTensor, g: &Geometry) -> Pass<'a> {
    pass.input("u_px", px)
        .int("u_src_w", g.x.src)
        .int("u_src_h", g.y.src)
        .int("u_xs", g.x.start)
        .int("u_xl", g.x.len)
        .float("u_xscale", g.x.scale as f32)
        .float("u_xoff", g.x.offset as f32)
        .float("u_xsup", g.x.support as f32)
}

/// The uniforms of the output's geometry and the vertical filter (every pass but the rows'
/// horizontal sums).
fn output_and_rows<'a>(pass: Pass<'a>, g: &Geometry) -> Pass<'a> {
    pass.int("u_ow", g.x.out)
        .int("u_oh", g.y.out)
        .int("u_ys", g.y.start)
        .int("u_yl", g.y.len)
        .float("u_yscale", g.y.scale as f32)
        .float("u_yoff", g.y.offset as f32)
        .float("u_ysup", g.y.support as f32)
}

/// The pass (two for a wider filter): `px` (the pixel texture's view) into a new tensor
/// texture.
fn draw(sh: &Rc<Shared>, px: &GlTensor, g: &Geometry, spec: &PixelSpec) -> Result<GlTensor> {
    let aff = spec.affine();
    let len = g.x.out * g.y.out * spec.channels;
    const MUL: [&str; 4] = ["u_mul0", "u_mul1", "u_mul2", "u_mul3"];
    const ADD: [&str; 4] = ["u_add0", "u_add1", "u_add2", "u_add3"];
    const PAD: [&str; 4] = ["u_pad0", "u_pad1", "u_pad2", "u_pad3"];
    // Config 1: plain bilinear on both axes, its four taps without the general loops.
    // Config 2: a wider filter (an antialiased shrink), each content column's horizontal sums
    // per source row first (from_pixels_rows.glsl CONFIG 0), then the vertical taps.
    // Config 3: 3 or 4 channels, every channel of an output pixel at once
    // (from_pixels_rows.glsl CONFIG 1 bilinear, CONFIG 2 over the horizontal sums), then laid
    // out: the taps and weights once per pixel instead of once per channel.
    let bilinear = g.x.support == 1.0 && g.y.support == 1.0;
    let sums = if bilinear || g.x.len == 0 {
        None
    } else {
        let pass = source_and_columns(Pass::new(OP, "from_pixels_rows", 0), px, g);
        Some(sh.run(pass, 4 * g.x.len * g.y.src)?)
    };
    fn affine<'a>(mut pass: Pass<'a>, aff: &[(f32, f32)], pad: &[f32]) -> Pass<'a> {
        for c in 0..4 {
            pass = pass.float(MUL[c], aff[c].0).float(ADD[c], aff[c].1).float(PAD[c], pad[c] * aff[c].0 + aff[c].1);
        }
        pass
    }
    let per_pixel = spec.channels >= 3 && sh.features.texel_programs && (bilinear || sums.is_some());
    let rows = if per_pixel {
        let config = if bilinear { 1 } else { 2 };
        let mut pass = output_and_rows(source_and_columns(Pass::new(OP, "from_pixels_rows", config), px, g), g);
        if let Some(t) = &sums {
            pass = pass.input("u_rows", t);
        }
        Some(sh.run(affine(pass, &aff, &spec.pad), 4 * g.x.out * g.y.out)?)
    } else {
        sums
    };
    let config = if per_pixel {
        3
    } else if bilinear {
        1
    } else if rows.is_some() {
        2
    } else {
        0
    };
    let mut pass = output_and_rows(source_and_columns(Pass::new(OP, "from_pixels", config), px, g), g)
        .int("u_ch", spec.channels)
        .int("u_nhwc", usize::from(spec.layout == Layout::Nhwc));
    pass = affine(pass, &aff, &spec.pad);
    if let Some(r) = &rows {
        pass = pass.input("u_rows", r);
    }
    sh.run(pass, len)
}
