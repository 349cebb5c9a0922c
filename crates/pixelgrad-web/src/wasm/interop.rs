//! GPU interop on the WebGPU runtime: the `GPUDevice` it runs on, and tensors to and from a
//! page's `GPUBuffer` (`web/js/interop.js` checks the buffer and records the copy; the engine
//! side is `pixelgrad-wgpu/src/interop.rs`). Both directions are one copy on the device.

use js_sys::{Function, Object, Reflect};
use pixelgrad::Error;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::runtime::{Backing, Runtime};
use super::{js_err, DeviceTensor};

impl Runtime {
    fn wgpu_backing(&self, op: &'static str) -> Result<&pixelgrad::wgpu::WgpuBackend, JsValue> {
        match &self.backing {
            Backing::Wgpu { b, .. } => Ok(b),
            _ => Err(js_err(Error::invalid(
                op,
                format!(
                    "the {} runtime has no GPUBuffer: GPU buffers are a WebGPU feature (init({{ backend: 'webgpu' }}))",
                    self.backend()
                ),
            ))),
        }
    }
}

#[wasm_bindgen]
impl Runtime {
    /// The `GPUDevice` this WebGPU runtime runs on; `undefined` on other backends.
    #[wasm_bindgen(getter, js_name = gpuDevice)]
    pub fn gpu_device(&self) -> JsValue {
        match &self.backing {
            Backing::Wgpu { b, .. } => b.wgpu_device().as_webgpu().map(|d| JsValue::from(d.clone())).unwrap_or(JsValue::UNDEFINED),
            _ => JsValue::UNDEFINED,
        }
    }

    /// A float32 tensor of `shape` whose values `copy(buffer, bytes)` puts into its fresh
    /// `GPUBuffer` (by a copy it submits on this runtime's queue); an exception `copy` throws
    /// comes back as this call's error and no tensor is made.
    #[wasm_bindgen(js_name = importGpuBuffer)]
    pub fn import_gpu_buffer(&self, shape: Vec<u32>, copy: &Function) -> Result<DeviceTensor, JsValue> {
        let op = "fromGPUBuffer";
        let b = self.wgpu_backing(op)?;
        let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        let mut thrown = None;
        let t = b.import_buffer(&self.dev, &dims, |buf, bytes| {
            let Some(dst) = buf.as_webgpu() else {
                return Err(Error::invalid(op, "the tensor's buffer is not a browser GPUBuffer"));
            };
            copy.call2(&JsValue::NULL, dst.as_ref(), &JsValue::from(bytes as f64)).map(|_| ()).map_err(|e| {
                thrown = Some(e);
                Error::invalid(op, "the copy failed")
            })
        });
        match (t, thrown) {
            (_, Some(e)) => Err(e),
            (t, None) => t.map(DeviceTensor::new).map_err(js_err),
        }
    }

    /// `{ buffer, bytes }`: the `GPUBuffer` holding `t`'s float32 values from offset 0 (it may
    /// be longer) with every launch recorded so far submitted. The buffer stays the tensor's
    /// (pooled): copy out of it at once.
    #[wasm_bindgen(js_name = exportGpuBuffer)]
    pub fn export_gpu_buffer(&self, t: &DeviceTensor) -> Result<JsValue, JsValue> {
        let op = "gpuBuffer";
        let b = self.wgpu_backing(op)?;
        if !t.tensor().device().same(&self.dev) {
            return Err(js_err(Error::invalid(op, "the tensor belongs to another runtime's device")));
        }
        let (buf, bytes) = b.export_buffer(t.tensor()).map_err(js_err)?;
        let Some(gb) = buf.as_webgpu() else {
            return Err(js_err(Error::invalid(op, "the tensor's buffer is not a browser GPUBuffer")));
        };
        let o = Object::new();
        Reflect::set(&o, &"buffer".into(), gb.as_ref())?;
        Reflect::set(&o, &"bytes".into(), &JsValue::from(bytes as f64))?;
        Ok(o.into())
    }
}

impl Runtime {
    fn webgl_backing(&self, op: &'static str) -> Result<&pixelgrad::webgl::WebGlBackend, JsValue> {
        match &self.backing {
            Backing::WebGl { b, .. } => Ok(b),
            _ => Err(js_err(Error::invalid(
                op,
                format!(
                    "the {} runtime has no WebGL2 textures: textures in and out are a WebGL2 feature (init({{ backend: 'webgl' }}))",
                    self.backend()
                ),
            ))),
        }
    }
}

/// `{ width, height, internalFormat }` as a JS object.
fn layout_object(w: u32, h: u32, internal: u32) -> Result<Object, JsValue> {
    let o = Object::new();
    Reflect::set(&o, &"width".into(), &w.into())?;
    Reflect::set(&o, &"height".into(), &h.into())?;
    Reflect::set(&o, &"internalFormat".into(), &internal.into())?;
    Ok(o)
}

#[wasm_bindgen]
impl Runtime {
    /// WebGL2: `{ width, height, internalFormat }` of the texture a float32 tensor of `shape`
    /// has (4 elements per texel, row-major): what `importTexture` reads.
    #[wasm_bindgen(js_name = textureLayout)]
    pub fn texture_layout(&self, shape: Vec<u32>) -> Result<JsValue, JsValue> {
        let op = "textureLayout";
        let b = self.webgl_backing(op)?;
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d as usize));
        let n = n.ok_or_else(|| js_err(Error::invalid(op, format!("shape {shape:?} has more elements than this machine can count"))))?;
        let (w, h, f) = b.texture_layout(n, op).map_err(js_err)?;
        Ok(layout_object(w, h, f)?.into())
    }

    /// WebGL2: a float32 tensor of `shape` whose texels are copied (one framebuffer blit) from
    /// `texture`, a `WebGLTexture` of this runtime's context laid out as `textureLayout` says.
    #[wasm_bindgen(js_name = importTexture)]
    pub fn import_texture(&self, texture: JsValue, shape: Vec<u32>) -> Result<DeviceTensor, JsValue> {
        let op = "fromTexture";
        let b = self.webgl_backing(op)?;
        let tex = texture.dyn_into::<web_sys::WebGlTexture>().map_err(|v| {
            js_err(Error::invalid(op, format!("texture must be a WebGLTexture, got {}", String::from(js_sys::Object::from(v).to_string()))))
        })?;
        let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        let gl = b.glow_context();
        // SAFETY: the key is used only for this copy and dropped right after; a texture of
        // another context fails the framebuffer check (WebGL refuses it) instead of being used.
        let key = unsafe { gl.register_external_texture(tex) };
        let r = b.import_texture(&self.dev, key, &dims);
        gl.unregister_external_texture(key);
        r.map(DeviceTensor::new).map_err(js_err)
    }

    /// WebGL2: `{ texture, width, height, internalFormat }`, a new `WebGLTexture` (the
    /// caller's) holding `t`'s texels.
    #[wasm_bindgen(js_name = exportTexture)]
    pub fn export_texture(&self, t: &DeviceTensor) -> Result<JsValue, JsValue> {
        let op = "tensor.texture";
        let b = self.webgl_backing(op)?;
        if !t.tensor().device().same(&self.dev) {
            return Err(js_err(Error::invalid(op, "the tensor belongs to another runtime's device")));
        }
        let (key, w, h, f) = b.export_texture(t.tensor()).map_err(js_err)?;
        // glow forgets the texture (without deleting it): from here on it is the caller's
        let tex =
            b.glow_context().unregister_external_texture(key).ok_or_else(|| js_err(Error::invalid(op, "the exported texture vanished")))?;
        let o = layout_object(w, h, f)?;
        Reflect::set(&o, &"texture".into(), tex.as_ref())?;
        Ok(o.into())
    }
}
