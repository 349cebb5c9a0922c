//! Images into model inputs on the device (`pg.fromPixels` on WebGPU): 8-bit RGBA pixels in a
//! texture (filled by `copyExternalImageToTexture` in the browser, or `write_texture`) are
//! copied into a storage buffer, then one kernel (`kernels/from_pixels.wgsl`) resamples,
//! normalises and lays them out into the tensor, as `pixelgrad_image` defines. Nothing
//! goes through the host.

use std::borrow::Cow;
use std::rc::Rc;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Device, Error, Result, Storage, Tensor};
use pixelgrad_image::host::Rgba8;
use pixelgrad_image::yuv::{YuvMatrix, YuvPlanes};
use pixelgrad_image::{Geometry, Layout, PixelSpec};

use crate::context::{Gpu, GpuTensor};
use crate::ops::{f, u};
use crate::pipelines::{Kernel, PARAM_WORDS};
use crate::{WgpuBackend, BACKEND};

pub(crate) const FROM_PIXELS: Kernel = Kernel {
    name: Cow::Borrowed("from_pixels"),
    source: Cow::Borrowed(include_str!("kernels/from_pixels.wgsl")),
    inputs: 1,
    outputs: 1,
    overrides: &[],
    status: false,
};

pub(crate) const YUV_TO_RGBA: Kernel = Kernel {
    name: Cow::Borrowed("yuv_to_rgba"),
    source: Cow::Borrowed(include_str!("kernels/yuv_to_rgba.wgsl")),
    inputs: 1,
    outputs: 1,
    overrides: &[],
    status: false,
};

/// The texture format sources are copied into: what `copyExternalImageToTexture` writes and
/// `copy_texture_to_buffer` reads back byte for byte (R, G, B, A).
pub const PIXEL_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// Bytes per row of a texture copy: a multiple of 256 (WebGPU's `bytesPerRow` alignment).
fn row_bytes(width: u32) -> u32 {
    (width * 4).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT
}

impl WgpuBackend {
    /// A texture that [`WgpuBackend::from_pixels_texture`] reads: `width` x `height`
    /// [`PIXEL_FORMAT`], with the usages `copyExternalImageToTexture` needs (copy destination
    /// and render attachment), copy source and texture binding. Keep it and reuse it while the
    /// source size stays the same.
    pub fn pixel_texture(&self, width: u32, height: u32) -> Result<wgpu::Texture> {
        let max = self.gpu.limits.max_texture_dimension_2d;
        if width == 0 || height == 0 {
            return Err(Error::invalid("fromPixels", format!("the source is {width}x{height} pixels; it has nothing to copy")));
        }
        if width > max || height > max {
            return Err(Error::Limit {
                op: "fromPixels",
                backend: BACKEND.into(),
                limit_name: "maxTextureDimension2D",
                limit: max as u64,
                requested: width.max(height) as u64,
            });
        }
        Ok(self.gpu.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("pixelgrad pixels"),
            size: wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: PIXEL_FORMAT,
            usage: wgpu::TextureUsages::COPY_DST
                | wgpu::TextureUsages::COPY_SRC
                | wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        }))
    }

    /// The model input for the pixels in `texture` (from [`WgpuBackend::pixel_texture`]; its
    /// top-left `width` x `height` pixels are the source) under `spec`, as a tensor on `dev`
    /// (a device of this backend). `fill` is called first, with the queue and the texture, to
    /// put the pixels there (`copyExternalImageToTexture` in the browser): work queued
    /// earlier is submitted before it, so the texture can be reused frame after frame.
    pub fn from_pixels_texture(
        &self,
        dev: &Device,
        texture: &wgpu::Texture,
        width: u32,
        height: u32,
        spec: &PixelSpec,
        fill: impl FnOnce(&wgpu::Queue, &wgpu::Texture) -> Result<()>,
    ) -> Result<(Tensor, Geometry)> {
        let op = "fromPixels";
        self.gpu.check(op)?;
        let g = Geometry::new(width as usize, height as usize, spec, op)?;
        let size = texture.size();
        if texture.format() != PIXEL_FORMAT || size.width < width || size.height < height {
            return Err(Error::invalid(op, format!("the texture is not a {width}x{height} pixel_texture")));
        }
        // The previous frame's copy out of the texture is submitted before `fill` overwrites it
        // (queue writes and copies run at once, ahead of commands not yet submitted).
        self.gpu.flush()?;
        fill(&self.gpu.queue, texture)?;
        let bpr = row_bytes(width);
        let words = (bpr / 4) as usize * height as usize;
        let px = GpuTensor::new(&self.gpu, op, words)?;
        let mut enc = self.gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("pixelgrad pixels") });
        enc.copy_texture_to_buffer(
            texture.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: px.buffer(),
                layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(bpr), rows_per_image: Some(height) },
            },
            wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
        );
        self.gpu.queue.submit([enc.finish()]);
        let out = launch(&self.gpu, &px, bpr / 4, &g, spec)?;
        self.gpu.check(op)?;
        Ok((Tensor::from_storage(dev, Storage::new(out), spec.out_dims(&g).to_vec()), g))
    }

    /// [`WgpuBackend::from_pixels_texture`] for pixels on the host (ImageData, decoded files).
    pub fn from_pixels_host(&self, dev: &Device, img: Rgba8<'_>, spec: &PixelSpec) -> Result<(Tensor, Geometry)> {
        let op = "fromPixels";
        self.gpu.check(op)?;
        img.check(op)?;
        let g = Geometry::new(img.width, img.height, spec, op)?;
        let packed: Vec<u8> = if img.stride == 4 * img.width {
            img.pixels[..4 * img.width * img.height].to_vec()
        } else {
            (0..img.height).flat_map(|y| img.pixels[y * img.stride..y * img.stride + 4 * img.width].iter().copied()).collect()
        };
        let px = GpuTensor::new(&self.gpu, op, img.width * img.height)?;
        self.gpu.queue.write_buffer(px.buffer(), 0, &packed);
        let out = launch(&self.gpu, &px, u(op, img.width)?, &g, spec)?;
        Ok((Tensor::from_storage(dev, Storage::new(out), spec.out_dims(&g).to_vec()), g))
    }
}

impl WgpuBackend {
    /// `fromYUV`: a 4:2:0 frame (I420 or NV12 planes, any row strides) converted with `matrix`
    /// and preprocessed under `spec`, on the device: the samples are uploaded as packed NV12
    /// ([`YuvPlanes::to_nv12`], 1.5 bytes a pixel, against 4 for RGBA), one kernel (`kernels/yuv_to_rgba.wgsl`) converts them to
    /// 8-bit RGBA pixels as [`YuvPlanes::to_rgba8`] does on the host, and the `from_pixels`
    /// kernel resamples them. The result equals `fromPixels` of the host's RGBA conversion of
    /// the frame, up to a byte where f32 and f64 round a half step differently.
    pub fn from_yuv(&self, dev: &Device, planes: &YuvPlanes<'_>, matrix: &YuvMatrix, spec: &PixelSpec) -> Result<(Tensor, Geometry)> {
        let op = "fromYUV";
        self.gpu.check(op)?;
        let bytes = planes.to_nv12(op)?;
        let (w, h) = (planes.width, planes.height);
        let g = Geometry::new(w, h, spec, op)?;
        let src = GpuTensor::new_packed(&self.gpu, op, bytes.len(), DType::U8)?;
        let mut bytes = bytes;
        bytes.resize(src.data_bytes(bytes.len()) as usize, 0);
        self.gpu.queue.write_buffer(src.buffer(), 0, &bytes);
        let px = GpuTensor::new(&self.gpu, op, w * h)?;
        let mut p = vec![u(op, w)?, u(op, h)?];
        p.extend(matrix.constants().map(f));
        // One invocation per chroma sample: x over the chroma columns, y over its rows.
        let grid = [self.gpu.check_dim(op, w.div_ceil(2).div_ceil(256) as u64)?, self.gpu.check_dim(op, h.div_ceil(2) as u64)?, 1];
        self.gpu.launch(op, &YUV_TO_RGBA, &[], &[src.buffer()], px.buffer(), &p, grid)?;
        let out = launch(&self.gpu, &px, u(op, w)?, &g, spec)?;
        self.gpu.check(op)?;
        Ok((Tensor::from_storage(dev, Storage::new(out), spec.out_dims(&g).to_vec()), g))
    }

    /// `fromPixels` with dtype `'uint8'`: `t` (an f32 tensor of this backend holding pixel
    /// values in `[0, 1]`, as [`WgpuBackend::from_pixels_texture`] makes with mean 0 and std 1)
    /// as 8-bit storage ([`DType::U8`], four per word) of the values
    /// `floor(clamp(v * 255, 0, 255) + 0.5)`, by one kernel (`kernels/narrow8.wgsl`, KIND 2); nothing
    /// is read back.
    pub fn pixels_to_u8(&self, dev: &Device, t: &Tensor) -> Result<Tensor> {
        let op = "fromPixels";
        self.gpu.check(op)?;
        if t.storage_dtype() != DType::F32 {
            return Err(Error::invalid(op, format!("pixels_to_u8 takes f32 values, got {} storage", t.storage_dtype())));
        }
        let x = self.tensor(op, t.storage())?;
        let n = t.numel();
        let res = GpuTensor::new_packed(&self.gpu, op, n, DType::U8)?;
        if n > 0 {
            let grid = self.gpu.grid_elems(op, n.div_ceil(4))?;
            self.gpu.launch(op, &crate::ops::widen::NARROW8, &[2], &[x.buffer()], res.buffer(), &[u(op, n)?], grid)?;
        }
        Ok(Tensor::from_storage_typed(dev, Storage::new(res), DType::U8, t.dims().to_vec()))
    }
}

/// Records the kernel: `px` holds the pixels, rows `row_words` apart.
fn launch(gpu: &Rc<Gpu>, px: &GpuTensor, row_words: u32, g: &Geometry, spec: &PixelSpec) -> Result<GpuTensor> {
    let op = "fromPixels";
    let ch = spec.channels;
    let pixels = g.x.out * g.y.out;
    let out = GpuTensor::new(gpu, op, pixels * ch)?;
    let aff = spec.affine();
    let mut p = vec![
        u(op, g.x.src)?,
        u(op, g.y.src)?,
        row_words,
        u(op, g.x.out)?,
        u(op, g.y.out)?,
        ch as u32,
        u32::from(spec.layout == Layout::Nhwc),
        u(op, g.x.start)?,
        u(op, g.x.len)?,
        u(op, g.y.start)?,
        u(op, g.y.len)?,
        f(g.x.scale as f32),
        f(g.x.offset as f32),
        f(g.x.support as f32),
        f(g.y.scale as f32),
        f(g.y.offset as f32),
        f(g.y.support as f32),
    ];
    p.extend(aff.iter().map(|a| f(a.0)));
    p.extend(aff.iter().map(|a| f(a.1)));
    p.extend((0..4).map(|c| f(spec.pad[c] * aff[c].0 + aff[c].1)));
    debug_assert!(p.len() <= PARAM_WORDS);
    let grid = gpu.grid_elems(op, pixels)?;
    gpu.launch(op, &FROM_PIXELS, &[], &[px.buffer()], out.buffer(), &p, grid)?;
    Ok(out)
}
