//! Reading tensors back: copy into a MAP_READ staging buffer at the end of the recorded work,
//! submit, `map_async`, then copy out. Natively `read` waits by polling the device; in wasm
//! only the asynchronous path exists (the browser resolves the map from its event loop).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use pixelgrad_core::{Error, Result};

use crate::context::{Gpu, GpuTensor};
use crate::pool::Kind;
use crate::BACKEND;

#[derive(Default)]
struct MapState {
    result: Option<std::result::Result<(), wgpu::BufferAsyncError>>,
    waker: Option<Waker>,
}

/// Resolves when wgpu calls the `map_async` callback.
#[derive(Clone, Default)]
pub(crate) struct MapSignal(Arc<Mutex<MapState>>);

impl MapSignal {
    fn callback(&self) -> impl FnOnce(std::result::Result<(), wgpu::BufferAsyncError>) + Send + 'static {
        let s = self.0.clone();
        move |r| {
            if let Ok(mut st) = s.lock() {
                st.result = Some(r);
                if let Some(w) = st.waker.take() {
                    w.wake();
                }
            }
        }
    }

    /// The result if the callback already ran.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub(crate) fn try_take(&self) -> Option<std::result::Result<(), wgpu::BufferAsyncError>> {
        self.0.lock().ok().and_then(|mut s| s.result.take())
    }
}

impl Future for MapSignal {
    type Output = std::result::Result<(), wgpu::BufferAsyncError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Ok(mut st) = self.0.lock() else {
            return Poll::Ready(Err(wgpu::BufferAsyncError));
        };
        if let Some(r) = st.result.take() {
            return Poll::Ready(r);
        }
        st.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// A readback in flight.
pub(crate) struct PendingRead {
    pub staging: wgpu::Buffer,
    pub size: u64,
    pub bytes: u64,
    pub len: usize,
    /// Element type of the tensor read (8-bit and f16 data is unpacked to f32).
    pub dtype: pixelgrad_core::kernel::DType,
    /// Where the status word was copied, if it was.
    pub status: Option<u64>,
    pub signal: MapSignal,
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub submission: Option<wgpu::SubmissionIndex>,
    /// Its serial: once the map resolves, every submission up to it has completed.
    pub serial: u64,
}

/// Records the copy, submits everything recorded so far and requests the map.
pub(crate) fn begin(gpu: &Gpu, t: &GpuTensor, len: usize) -> Result<PendingRead> {
    gpu.check("read")?;
    if len > t.len {
        return Err(Error::backend("read", BACKEND, format!("asked for {len} elements of a tensor of {}", t.len)));
    }
    let data_bytes = t.data_bytes(len).max(4);
    // Room for the status word behind the data (copy offsets: multiples of 4; map: of 8).
    let status_at = data_bytes.div_ceil(8) * 8;
    let bytes = status_at + 8;
    let (staging, size) = gpu.alloc("read", Kind::Staging, bytes)?;
    gpu.copy(t.buffer(), &staging, data_bytes);
    let status = gpu.copy_status(&staging, status_at).then_some(status_at);
    let submission = gpu.flush()?;
    let serial = gpu.submitted();
    let signal = MapSignal::default();
    staging.slice(0..bytes).map_async(wgpu::MapMode::Read, signal.callback());
    gpu.count_readback();
    Ok(PendingRead { staging, size, bytes, len, dtype: t.dtype, status, signal, submission, serial })
}

/// Copies the mapped data out and returns the staging buffer to the pool.
pub(crate) fn finish(gpu: &Gpu, p: PendingRead, mapped: std::result::Result<(), wgpu::BufferAsyncError>) -> Result<Vec<f32>> {
    if let Err(e) = mapped {
        return Err(gpu.failure("read", format!("mapping the staging buffer failed: {e}")));
    }
    gpu.mark_completed(p.serial);
    let mut word = 0u32;
    let out = {
        let view = p.staging.slice(0..p.bytes).get_mapped_range();
        let view = view.map_err(|e| gpu.failure("read", format!("mapped range unavailable: {e}")))?;
        let bytes: &[u8] = &view;
        let out: Vec<f32> = match p.dtype {
            pixelgrad_core::kernel::DType::I8 => bytes[..p.len].iter().map(|&v| v as i8 as f32).collect(),
            pixelgrad_core::kernel::DType::U8 => bytes[..p.len].iter().map(|&v| v as f32).collect(),
            // Two little-endian halves per word, widened exactly.
            pixelgrad_core::kernel::DType::F16 => bytes[..p.len * 2]
                .chunks_exact(2)
                .map(|h| pixelgrad_core::half::f16::from_bits(u16::from_le_bytes([h[0], h[1]])).to_f32())
                .collect(),
            _ => {
                let mut out = vec![0f32; p.len];
                bytemuck::cast_slice_mut::<f32, u8>(&mut out).copy_from_slice(&bytes[..p.len * 4]);
                out
            }
        };
        if let Some(at) = p.status {
            let at = at as usize;
            word = u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        }
        out
    };
    p.staging.unmap();
    gpu.release_staging(p.size, p.staging);
    gpu.recycle();
    gpu.take_status(word)?;
    Ok(out)
}

/// Blocking read (native only): waits for the submission, with a timeout so a wedged device
/// gives an error instead of a hang.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn read_blocking(gpu: &Gpu, t: &GpuTensor, len: usize, timeout: std::time::Duration) -> Result<Vec<f32>> {
    let p = begin(gpu, t, len)?;
    let poll = gpu.device.poll(wgpu::PollType::Wait { submission_index: p.submission.clone(), timeout: Some(timeout) });
    if let Err(e) = poll {
        return Err(gpu.failure("read", format!("waiting for the GPU failed: {e}")));
    }
    // The map callback fires from the poll that saw the submission complete; poll once more
    // in case it was queued behind it.
    let mapped = match p.signal.try_take() {
        Some(r) => r,
        None => {
            let _ = gpu.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: Some(timeout) });
            p.signal.try_take().ok_or_else(|| gpu.failure("read", "the staging buffer was never mapped".into()))?
        }
    };
    finish(gpu, p, mapped)
}

/// Asynchronous read: awaits the map callback (the wasm path; natively nothing would poll).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) async fn read_async(gpu: &Gpu, t: &GpuTensor, len: usize) -> Result<Vec<f32>> {
    let p = begin(gpu, t, len)?;
    let mapped = p.signal.clone().await;
    finish(gpu, p, mapped)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use pixelgrad_core::Backend;

    /// The browser path (`read_async`) natively: the map future stays pending until something
    /// drives wgpu's callbacks (the browser's event loop; here an explicit poll), then resolves.
    #[test]
    fn async_read_resolves_once_callbacks_run() {
        let b =
            crate::WgpuBackend::new(crate::WgpuOptions::default()).expect("a WebGPU adapter (install mesa-vulkan-drivers for lavapipe)");
        let s = b.upload(&[1.0, 2.0, 3.0]).unwrap();
        let t = s.downcast::<GpuTensor>().unwrap();
        let mut fut = Box::pin(read_async(&b.gpu, t, 3));
        let mut cx = Context::from_waker(Waker::noop());
        // The first poll records, submits and requests the map; nothing has completed it yet.
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        b.gpu.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(r) => assert_eq!(r.unwrap(), vec![1.0, 2.0, 3.0]),
            Poll::Pending => panic!("map callback did not resolve the read"),
        }
    }
}
