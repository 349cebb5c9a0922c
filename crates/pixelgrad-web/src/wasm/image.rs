//! `pg.fromPixels` on each backend. `web/js/image.js` works out the source's size and passes
//! the options as JSON ([`crate::pixels::parse_spec`]); here the pixels go to the device:
//!
//! - WebGPU: `copyExternalImageToTexture` from the source into a reused RGBA8 texture, then
//!   the `from_pixels` kernel (`pixelgrad-wgpu/src/image.rs`);
//! - WebGL2: `texSubImage2D` from the source into a reused RGBA8 texture, then one fragment
//!   pass (`pixelgrad-webgl/src/image.rs`);
//! - CPU (and `ImageData` on every backend): the RGBA bytes (`getImageData` in JS) through
//!   the host reference `pixelgrad_image::host` (CPU) or the same device kernels.
//!
//! The browser calls are made through `Function.apply`, so a SecurityError (a tainted,
//! cross-origin source) or a TypeError (a closed `VideoFrame`) comes back as a JS `Error`
//! naming the problem instead of a panic.

use js_sys::{Array, Function, Object, Reflect};
use pixelgrad::image::host::{to_tensor_values, Rgba8};
use pixelgrad::image::Geometry;
use pixelgrad::webgl::PixelTexture;
use pixelgrad::wgpu::wgpu;
use pixelgrad::{Error, Result, Tensor};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::runtime::{Backing, Runtime};
use super::{js_err, DeviceTensor};
use crate::pixels::{finish_float, geometry_json, parse_options, u8_from_values, PixelDtype};

const OP: &str = "fromPixels";

/// The message of a thrown JS value (an Error's `name: message`, or its string form).
fn thrown(e: &JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return format!("{}: {}", String::from(err.name()), String::from(err.message()));
    }
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}

/// Calls `obj[method](...args)`, a thrown exception becoming an error that says what was read.
fn call(obj: &JsValue, method: &str, args: &Array) -> Result<()> {
    let f = Reflect::get(obj, &method.into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .ok_or_else(|| Error::invalid(OP, format!("{method} is missing")))?;
    f.apply(obj, args).map(|_| ()).map_err(|e| {
        let msg = thrown(&e);
        let hint = if msg.starts_with("SecurityError") {
            " (the source is tainted: a canvas, image or video from another origin without CORS cannot be read)"
        } else {
            ""
        };
        Error::invalid(OP, format!("the browser could not copy the source: {msg}{hint}"))
    })
}

fn set(o: &Object, k: &str, v: &JsValue) -> Result<()> {
    Reflect::set(o, &k.into(), v).map(|_| ()).map_err(|e| Error::invalid(OP, thrown(&e)))
}

/// `{ tensor, geometry, dtype }` for JavaScript.
fn result(t: Tensor, g: &Geometry, source: (u32, u32), dtype: PixelDtype) -> std::result::Result<JsValue, JsValue> {
    let o = Object::new();
    set(&o, "dtype", &dtype.name().into()).map_err(js_err)?;
    let geo = geometry_json(g, (source.0 as usize, source.1 as usize)).to_string();
    set(&o, "tensor", &DeviceTensor::new(t).into()).map_err(js_err)?;
    set(&o, "geometry", &geo.into()).map_err(js_err)?;
    Ok(o.into())
}

fn wgpu_copy(q: &wgpu::Queue, t: &wgpu::Texture, source: &JsValue, w: u32, h: u32) -> Result<()> {
    let (Some(q), Some(t)) = (q.as_webgpu(), t.as_webgpu()) else {
        return Err(Error::invalid(OP, "the WebGPU queue is not a browser GPUQueue"));
    };
    let src = Object::new();
    set(&src, "source", source)?;
    let dst = Object::new();
    set(&dst, "texture", t.as_ref())?;
    let size = Array::of2(&w.into(), &h.into());
    call(q.as_ref(), "copyExternalImageToTexture", &Array::of3(&src, &dst, &size))
}

impl Runtime {
    /// A float32 fromPixels result `t` as `dtype`: float16 through `narrow_f16` where the
    /// backend stores f16 results; uint8 by the `narrow8` kernel (WebGPU) or pass (WebGL2),
    /// or from the values on the CPU; an error naming the backend and what it lacks elsewhere
    /// (never a silent f32).
    fn finish(&self, t: Tensor, dtype: PixelDtype) -> Result<Tensor> {
        if dtype != PixelDtype::U8 {
            return finish_float(t, dtype);
        }
        if t.storage_dtype() == pixelgrad::kernel::DType::U8 {
            return Ok(t); // made from the host values already (the CPU's fromPixelsBytes)
        }
        match &self.backing {
            Backing::Wgpu { b, .. } => b.pixels_to_u8(&self.dev, &t),
            Backing::Cpu => u8_from_values(&self.dev, &t.to_vec()?, t.dims()),
            Backing::WebGl1 { .. } => u8_from_values(&self.dev, &[], &[0]),
            Backing::WebGl { b, .. } => b.pixels_to_u8(&self.dev, &t),
        }
    }
}

#[wasm_bindgen]
impl Runtime {
    /// The model input for a DOM image source (`HTMLCanvasElement`, `OffscreenCanvas`,
    /// `ImageBitmap`, `HTMLImageElement`, `HTMLVideoElement`, `VideoFrame`) of `width` x
    /// `height` pixels, under the options `opts` (JSON), on a GPU runtime: `{ tensor,
    /// geometry }` (geometry as JSON). The GPU work is queued; nothing is read back.
    #[wasm_bindgen(js_name = fromPixelsSource)]
    pub fn from_pixels_source(&self, source: &JsValue, width: u32, height: u32, opts: &str) -> std::result::Result<JsValue, JsValue> {
        let (spec, dtype) = parse_options(opts).map_err(js_err)?;
        let (t, g) = match &self.backing {
            Backing::Cpu | Backing::WebGl1 { .. } => {
                let msg = format!("the {} runtime takes RGBA bytes (fromPixelsBytes), not a DOM source", self.backend());
                return Err(js_err(Error::invalid(OP, msg)));
            }
            Backing::Wgpu { b, tex } => {
                let mut slot = tex.borrow_mut();
                let texture = match slot.take() {
                    Some(t) if t.width() == width && t.height() == height => t,
                    _ => b.pixel_texture(width, height).map_err(js_err)?,
                };
                let texture = slot.insert(texture);
                b.from_pixels_texture(&self.dev, texture, width, height, &spec, |q, t| wgpu_copy(q, t, source, width, height))
            }
            Backing::WebGl { b, ctx, tex } => {
                let mut slot = tex.borrow_mut();
                let texture = match slot.take() {
                    Some(t) if t.size() == (width, height) => t,
                    _ => b.pixel_texture(width, height).map_err(js_err)?,
                };
                let texture: &PixelTexture = slot.insert(texture);
                b.from_pixels_texture(&self.dev, texture, width, height, &spec, |_| {
                    // texSubImage2D(target, level, x, y, format, type, source) into the texture
                    // bound to TEXTURE_2D (the source's own size, which the texture has).
                    let args = Array::new();
                    for v in [glow_consts::TEXTURE_2D, 0, 0, 0, glow_consts::RGBA, glow_consts::UNSIGNED_BYTE] {
                        args.push(&v.into());
                    }
                    args.push(source);
                    call(ctx.as_ref(), "texSubImage2D", &args)
                })
            }
        }
        .map_err(js_err)?;
        result(self.finish(t, dtype).map_err(js_err)?, &g, (width, height), dtype)
    }

    /// The model input for RGBA bytes (`ImageData.data`, rows `4 * width` apart) on any
    /// runtime: `{ tensor, geometry }`.
    #[wasm_bindgen(js_name = fromPixelsBytes)]
    pub fn from_pixels_bytes(&self, data: &[u8], width: u32, height: u32, opts: &str) -> std::result::Result<JsValue, JsValue> {
        let (spec, dtype) = parse_options(opts).map_err(js_err)?;
        let img = Rgba8::packed(data, width as usize, height as usize).map_err(js_err)?;
        let (t, g) = match &self.backing {
            Backing::Cpu | Backing::WebGl1 { .. } => to_tensor_values(img, &spec, OP).and_then(|(v, dims, g)| {
                // uint8 straight from the host values (nothing to convert on a device).
                if dtype == PixelDtype::U8 {
                    let t = u8_from_values(&self.dev, &v, &dims)?;
                    return Ok((t, g));
                }
                Ok((Tensor::from_vec(&self.dev, &v, dims.to_vec())?, g))
            }),
            Backing::Wgpu { b, .. } => b.from_pixels_host(&self.dev, img, &spec),
            Backing::WebGl { b, .. } => b.from_pixels_host(&self.dev, img, &spec),
        }
        .map_err(js_err)?;
        result(self.finish(t, dtype).map_err(js_err)?, &g, (width, height), dtype)
    }

    /// The model input for raw 4:2:0 planes (`format` I420 or NV12; for NV12 `u` holds the
    /// interleaved chroma and `v` is unused), converted with the colour `matrix`
    /// (`bt601`/`smpte170m`/`bt470bg` or `bt709`) to 8-bit RGBA and preprocessed as
    /// `fromPixelsBytes` would those pixels: on the device on WebGPU and WebGL2, on the host
    /// on the CPU and in the WebGL1 mode (`crate::yuv`). `{ tensor, geometry }`.
    #[allow(clippy::too_many_arguments)]
    #[wasm_bindgen(js_name = fromYuvPlanes)]
    pub fn from_yuv_planes(
        &self,
        format: &str,
        width: u32,
        height: u32,
        y: &[u8],
        y_stride: u32,
        u: &[u8],
        u_stride: u32,
        v: &[u8],
        v_stride: u32,
        matrix: &str,
        full_range: bool,
        opts: &str,
    ) -> std::result::Result<JsValue, JsValue> {
        use pixelgrad::image::yuv::{YuvMatrix, YuvPlanes};
        let (spec, dtype) = parse_options(opts).map_err(js_err)?;
        let format = crate::yuv::parse_format(format).map_err(js_err)?;
        let m = YuvMatrix::parse(matrix, full_range).map_err(js_err)?;
        let planes = YuvPlanes {
            format,
            width: width as usize,
            height: height as usize,
            y,
            y_stride: y_stride as usize,
            u,
            u_stride: u_stride as usize,
            v,
            v_stride: v_stride as usize,
        };
        let (t, g) = match &self.backing {
            Backing::Cpu | Backing::WebGl1 { .. } => {
                let rgba = crate::yuv::host_rgba(&planes, &m, &spec).map_err(js_err)?;
                return self.from_pixels_bytes(&rgba, width, height, opts);
            }
            Backing::Wgpu { b, .. } => crate::yuv::check(&planes, &spec).and_then(|_| b.from_yuv(&self.dev, &planes, &m, &spec)),
            Backing::WebGl { b, tex, .. } => crate::yuv::check(&planes, &spec).and_then(|_| {
                // The pixel texture fromPixelsSource fills, reused while the size stays.
                let mut slot = tex.borrow_mut();
                let texture = match slot.take() {
                    Some(t) if t.size() == (width, height) => t,
                    _ => b.pixel_texture(width, height)?,
                };
                b.from_yuv_texture(&self.dev, slot.insert(texture), &planes, &m, &spec)
            }),
        }
        .map_err(js_err)?;
        result(self.finish(t, dtype).map_err(js_err)?, &g, (width, height), dtype)
    }
}

/// The GL enums used here (glow's values, as WebGL2 numbers them).
mod glow_consts {
    pub const TEXTURE_2D: u32 = pixelgrad::webgl::glow::TEXTURE_2D;
    pub const RGBA: u32 = pixelgrad::webgl::glow::RGBA;
    pub const UNSIGNED_BYTE: u32 = pixelgrad::webgl::glow::UNSIGNED_BYTE;
}
