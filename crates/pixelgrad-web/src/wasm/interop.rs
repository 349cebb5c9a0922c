//! GPU interop on the WebGPU runtime: the `GPUDevice` it runs on, and tensors to and from a
//! page's `GPUBuffer` (`web/js/interop.js` checks the buffer and records the copy; the engine
//! side is `pixelgrad-wgpu/src/interop.rs`). Both directions are one copy on the device.

use js_sys::{Function, Object, Reflect};
use pixelgrad::Error;
use wasm_bindgen::prelude::*;

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
