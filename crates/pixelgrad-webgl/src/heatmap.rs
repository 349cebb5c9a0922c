//! Visualisation: a tensor rendered on the GPU into an RGBA8 image with a diverging colour map
//! (blue < 0 < red, white at 0), scaled by max |value| found by a GPU reduction. Only the
//! small 8-bit image is read back.

use glow::HasContext;
use pixelgrad_core::{Error, ReduceOp, Result, Shape, Storage, Tensor, UnaryOp};

use crate::backend::WebGlBackend;
use crate::fusion::tensor_of;
use crate::launch::Pass;
use crate::options::{HeatmapOptions, RgbaImage};

impl WebGlBackend {
    /// Renders a tensor as a heatmap. Shapes: `[w]` (one row), `[h, w]`, `[c, h, w]` (c tiles)
    /// or a filter bank `[n, c, h, w]` (n*c tiles, `c` per row unless `opts.columns` says).
    pub fn render_heatmap(&self, storage: &Storage, shape: &Shape, opts: HeatmapOptions) -> Result<RgbaImage> {
        let sh = &self.shared;
        sh.current()?;
        let op = "render_heatmap";
        if !sh.features.image_programs {
            return Err(crate::legacy::unsupported(op, "the heatmap renderer"));
        }
        let bad = |msg: &str| Error::Shape { op, shapes: vec![shape.0.clone()], backend: sh.name.clone(), msg: msg.into() };
        let (tiles, default_cols, th, tw) = match shape.0.as_slice() {
            [w] => (1, 1, 1, *w),
            [h, w] => (1, 1, *h, *w),
            [c, h, w] => (*c, *c, *h, *w),
            [n, c, h, w] => (n * c, *c, *h, *w),
            _ => return Err(bad("expects a tensor of rank 1 to 4")),
        };
        if tiles == 0 || th == 0 || tw == 0 {
            return Err(bad("cannot render an empty tensor"));
        }
        let t = tensor_of(storage, sh, op)?;
        if t.len < shape.numel() {
            return Err(bad("storage is smaller than the shape"));
        }
        // Narrow storage (8-bit, f16) is drawn from its exact f32 values.
        let wide;
        let t = if t.dtype == pixelgrad_core::kernel::DType::F32 {
            t
        } else {
            wide = crate::ops::widen(sh, t, t.len)?;
            &wide
        };
        let pix = opts.pixel_size.max(1) as usize;
        let border = opts.border as usize;
        let cols = opts.columns.map_or(default_cols, |c| c as usize).clamp(1, tiles);
        let rows = tiles.div_ceil(cols);
        let width = cols * (tw * pix + border) + border;
        let height = rows * (th * pix + border) + border;
        let limit = sh.report.borrow().max_texture_size as usize;
        if width > limit || height > limit {
            return Err(Error::Limit {
                op,
                backend: sh.name.clone(),
                limit_name: "MAX_TEXTURE_SIZE",
                limit: limit as u64,
                requested: width.max(height) as u64,
            });
        }

        // max |x| on the GPU: abs pass, then a max tree down to one element.
        let n = shape.numel();
        let abs = crate::ops::elementwise::map(sh, op, "abs", &UnaryOp::Abs.launch()?, &[t], &[shape], shape)?;
        let scale = crate::ops::reduce_axis(sh, ReduceOp::Max, &abs, 1, n, 1)?;

        let gl = &sh.gl;
        // SAFETY: a temporary RGBA8 target on the current context, deleted below.
        let target = unsafe {
            let tex = gl.create_texture().map_err(|e| sh.err(op, format!("create_texture: {e}")))?;
            gl.bind_texture(glow::TEXTURE_2D, Some(tex));
            gl.tex_storage_2d(glow::TEXTURE_2D, 1, glow::RGBA8, width as i32, height as i32);
            gl.bind_texture(glow::TEXTURE_2D, None);
            tex
        };
        let pass = Pass::new(op, "heatmap", 0)
            .input("u_x", t)
            .input("u_scale", &scale)
            .int("u_th", th)
            .int("u_tw", tw)
            .int("u_cols", cols)
            .int("u_tiles", tiles)
            .int("u_pix", pix)
            .int("u_border", border);
        let drawn = sh.draw(&pass, target, width as u32, height as u32, width * height);
        let mut pixels = vec![0u8; width * height * 4];
        if drawn.is_ok() {
            // SAFETY: the target is attached; the buffer holds width*height RGBA8 pixels.
            unsafe {
                gl.pixel_store_i32(glow::PACK_ALIGNMENT, 1);
                gl.read_pixels(
                    0,
                    0,
                    width as i32,
                    height as i32,
                    glow::RGBA,
                    glow::UNSIGNED_BYTE,
                    glow::PixelPackData::Slice(Some(&mut pixels)),
                );
            }
        }
        // SAFETY: the target is no longer used.
        unsafe {
            gl.framebuffer_texture_2d(glow::FRAMEBUFFER, glow::COLOR_ATTACHMENT0, glow::TEXTURE_2D, None, 0);
            gl.delete_texture(target);
        }
        drawn?;
        sh.check_gl(op, "read_pixels")?;
        sh.count(|c| c.readbacks += 1);
        Ok(RgbaImage { width: width as u32, height: height as u32, pixels })
    }

    /// [`WebGlBackend::render_heatmap`] for a tensor on a device built from this backend.
    pub fn render_heatmap_tensor(&self, t: &Tensor, opts: HeatmapOptions) -> Result<RgbaImage> {
        self.render_heatmap(t.storage(), t.shape(), opts)
    }
}

/// Writes an image as PNG, durably (`pixelgrad_durable`: a temporary file, fsync, rename).
#[cfg(not(target_arch = "wasm32"))]
pub fn save_png(img: &RgbaImage, path: impl AsRef<std::path::Path>) -> Result<()> {
    let path = path.as_ref();
    pixelgrad_durable::write_with(path, |out| {
        let mut enc = png::Encoder::new(out, img.width, img.height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header()?;
        w.write_image_data(&img.pixels)?;
        w.finish()?;
        Ok(())
    })
    .map_err(|e| Error::io(path, e))
}
