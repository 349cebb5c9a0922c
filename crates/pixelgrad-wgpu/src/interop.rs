//! Buffers in and out for pages that share the device (`pg.fromGPUBuffer`,
//! `tensor.gpuBuffer()` in `web/js/interop.js`). wgpu wraps no foreign `GPUBuffer` (wgpu 30
//! wraps foreign textures only), so both directions are one buffer-to-buffer copy on the
//! device, never a readback: [`WgpuBackend::import_buffer`] gives the caller a fresh tensor's
//! buffer to copy into, [`WgpuBackend::export_buffer`] the buffer holding a tensor's values
//! with every recorded launch submitted, so a copy the caller submits next sees them.

use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Device, Error, Result, Storage, Tensor};

use crate::context::GpuTensor;
use crate::{WgpuBackend, BACKEND};

impl WgpuBackend {
    /// A float32 tensor of `dims` on `dev` (a device of this backend) whose buffer `fill` fills
    /// with `dims`' product of f32 values (its first `bytes` bytes). Work recorded before is
    /// submitted first, and the buffer is one no recorded command uses, so whatever `fill`
    /// submits on the queue lands before the tensor's first use.
    pub fn import_buffer(&self, dev: &Device, dims: &[usize], fill: impl FnOnce(&wgpu::Buffer, u64) -> Result<()>) -> Result<Tensor> {
        let op = "fromGPUBuffer";
        self.gpu.check(op)?;
        let n = dims
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| Error::invalid(op, format!("shape {dims:?} has more elements than this machine can count")))?;
        self.gpu.check_size(op, n as u64 * 4)?;
        let t = GpuTensor::new(&self.gpu, op, n)?;
        self.gpu.flush()?;
        if n > 0 {
            fill(t.buffer(), n as u64 * 4)?;
        }
        self.gpu.check(op)?;
        Ok(Tensor::from_storage(dev, Storage::new(t), dims.to_vec()))
    }

    /// The buffer holding `t`'s values (computed first if pending) and their byte length: f32,
    /// row-major, from offset 0 (the buffer may be longer: pool size classes). Every launch
    /// recorded so far is submitted, so a copy submitted next on the queue reads the values.
    /// The buffer stays the tensor's: copy out of it before the tensor is dropped.
    pub fn export_buffer(&self, t: &Tensor) -> Result<(wgpu::Buffer, u64)> {
        let op = "gpuBuffer";
        self.gpu.check(op)?;
        let g = self.tensor(op, t.storage())?;
        if g.dtype != DType::F32 {
            return Err(Error::Shape {
                op,
                shapes: vec![t.dims().to_vec()],
                backend: BACKEND.into(),
                msg: format!("the tensor has {} storage; gpuBuffer exports float32 tensors", g.dtype),
            });
        }
        if g.len != t.numel() {
            return Err(Error::backend(op, BACKEND, format!("the buffer holds {} values for {} elements", g.len, t.numel())));
        }
        self.gpu.flush()?;
        self.gpu.check(op)?;
        Ok((g.buffer().clone(), t.numel() as u64 * 4))
    }
}

impl WgpuBackend {
    /// The wgpu device this backend runs on (in a browser, `as_webgpu()` gives the page's
    /// `GPUDevice`: the one `init({ device })` shared, or the backend's own).
    pub fn wgpu_device(&self) -> &wgpu::Device {
        &self.gpu.device
    }
}
