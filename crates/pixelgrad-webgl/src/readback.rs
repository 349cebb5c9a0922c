//! Non-blocking readback: readPixels into a pixel-pack buffer, a fence, polling the fence with
//! a zero timeout (yielding to the event loop between polls in the browser, where the fence
//! only signals once control returns to it), then one copy out of the buffer.

use std::rc::Rc;

use glow::HasContext;
use pixelgrad_core::Result;

use crate::bytes::f32_bytes_mut;
use crate::context::Shared;
use crate::texture::GlTensor;

/// Blocking readback with readPixels (RGBA / FLOAT), trimmed to `len` elements, after the
/// pending run-time checks (see `checks.rs`) have passed.
pub(crate) fn read_blocking(sh: &Rc<Shared>, t: &GlTensor, len: usize) -> Result<Vec<f32>> {
    sh.current()?;
    crate::submit::verify_checks(sh)?;
    if t.dtype != pixelgrad_core::kernel::DType::F32 {
        // Narrow storage reads as its exact f32 values: widened on the GPU first.
        let wide = crate::ops::widen(sh, t, len)?;
        return sh.read_raw(&wide, len);
    }
    sh.read_raw(t, len)
}

/// Reads `t` after the pending run-time checks (see `checks.rs`) have passed.
pub(crate) async fn read_async(sh: &Rc<Shared>, t: &GlTensor, len: usize) -> Result<Vec<f32>> {
    sh.current()?;
    if !sh.features.async_readback {
        // WebGL1 has no pixel-pack buffers or fences: readPixels is the only read. Yield to the
        // event loop first, so a page (and a test runner polling it) keeps getting turns
        // between reads instead of one task running until training or a suite ends.
        yield_now().await;
        sh.current()?;
        return read_blocking(sh, t, len);
    }
    if let Some(c) = crate::submit::merge_checks(sh)? {
        let flag = read_async_raw(sh, &c.flag, 1).await?;
        c.verdict(flag[0], sh)?;
    }
    if t.dtype != pixelgrad_core::kernel::DType::F32 {
        // Narrow storage reads as its exact f32 values: widened on the GPU first.
        let wide = crate::ops::widen(sh, t, len)?;
        return read_async_raw(sh, &wide, len).await;
    }
    read_async_raw(sh, t, len).await
}

async fn read_async_raw(sh: &Shared, t: &GlTensor, len: usize) -> Result<Vec<f32>> {
    sh.current()?;
    if len > t.len {
        return Err(sh.err("read_async", format!("asked for {len} elements of a tensor of {}", t.len)));
    }
    let size = t.w as usize * t.h as usize * 16;
    sh.attach(t.tex, "read_async")?;
    let gl = &sh.gl;
    // SAFETY: the pack buffer is sized for w*h RGBA f32 texels; objects are deleted below.
    let (buf, fence) = unsafe {
        let buf = gl.create_buffer().map_err(|e| sh.err("read_async", format!("create_buffer: {e}")))?;
        gl.bind_buffer(glow::PIXEL_PACK_BUFFER, Some(buf));
        gl.buffer_data_size(glow::PIXEL_PACK_BUFFER, size as i32, glow::STREAM_READ);
        gl.pixel_store_i32(glow::PACK_ALIGNMENT, 4);
        gl.read_pixels(0, 0, t.w as i32, t.h as i32, glow::RGBA, glow::FLOAT, glow::PixelPackData::BufferOffset(0));
        gl.bind_buffer(glow::PIXEL_PACK_BUFFER, None);
        let fence = match gl.fence_sync(glow::SYNC_GPU_COMMANDS_COMPLETE, 0) {
            Ok(f) => f,
            Err(e) => {
                gl.delete_buffer(buf);
                return Err(sh.err("read_async", format!("fence_sync: {e}")));
            }
        };
        gl.flush();
        (buf, fence)
    };
    loop {
        sh.current()?;
        // Browser: poll with a zero timeout and yield to the event loop in between. Natively a
        // short bounded wait is kinder than spinning.
        let timeout = if cfg!(target_arch = "wasm32") { 0 } else { 1_000_000 };
        // SAFETY: waiting on a live fence with a bounded timeout.
        let status = unsafe { gl.client_wait_sync(fence, glow::SYNC_FLUSH_COMMANDS_BIT, timeout) };
        match status {
            glow::ALREADY_SIGNALED | glow::CONDITION_SATISFIED => break,
            glow::WAIT_FAILED => {
                // SAFETY: releasing this call's objects.
                unsafe {
                    gl.delete_sync(fence);
                    gl.delete_buffer(buf);
                }
                return Err(sh.err("read_async", "waiting for the readback fence failed"));
            }
            _ => yield_now().await,
        }
    }
    let mut out = vec![0f32; size / 4];
    // SAFETY: the fence has signalled, so the copy into the buffer is complete; the mapped
    // range is `size` bytes and unmapped before the buffer is deleted.
    let copied = unsafe {
        gl.delete_sync(fence);
        gl.bind_buffer(glow::PIXEL_PACK_BUFFER, Some(buf));
        let ok = copy_out(gl, f32_bytes_mut(&mut out));
        gl.bind_buffer(glow::PIXEL_PACK_BUFFER, None);
        gl.delete_buffer(buf);
        ok
    };
    if !copied {
        return Err(sh.err("read_async", "could not map the pixel-pack buffer"));
    }
    sh.check_gl("read_async", "get_buffer_sub_data")?;
    sh.count(|c| c.readbacks += 1);
    out.truncate(len);
    Ok(out)
}

/// WebGL2 has getBufferSubData.
#[cfg(target_arch = "wasm32")]
unsafe fn copy_out(gl: &glow::Context, bytes: &mut [u8]) -> bool {
    gl.get_buffer_sub_data(glow::PIXEL_PACK_BUFFER, 0, bytes);
    true
}

/// OpenGL ES 3 has no glGetBufferSubData: map the range instead.
#[cfg(not(target_arch = "wasm32"))]
unsafe fn copy_out(gl: &glow::Context, bytes: &mut [u8]) -> bool {
    let p = gl.map_buffer_range(glow::PIXEL_PACK_BUFFER, 0, bytes.len() as i32, glow::MAP_READ_BIT);
    if p.is_null() {
        return false;
    }
    std::ptr::copy_nonoverlapping(p, bytes.as_mut_ptr(), bytes.len());
    gl.unmap_buffer(glow::PIXEL_PACK_BUFFER);
    true
}

/// Natively the bounded wait above already paused; nothing more to do.
#[cfg(not(target_arch = "wasm32"))]
async fn yield_now() {}

/// In the browser: wait for a `setTimeout(0)` tick so the event loop runs and the fence can
/// signal (works in windows and workers alike).
#[cfg(target_arch = "wasm32")]
async fn yield_now() {
    use wasm_bindgen::{JsCast, JsValue};
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        let global = js_sys::global();
        let set_timeout =
            js_sys::Reflect::get(&global, &JsValue::from_str("setTimeout")).ok().and_then(|f| f.dyn_into::<js_sys::Function>().ok());
        match set_timeout {
            Some(f) => {
                let _ = f.call2(&global, &resolve, &JsValue::from(0));
            }
            None => {
                let _ = resolve.call0(&JsValue::NULL);
            }
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}
