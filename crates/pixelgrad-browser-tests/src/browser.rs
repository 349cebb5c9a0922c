//! Creating the GPU devices inside a browser page (wasm32 only).

use pixelgrad_core::{Device, Error, Result};
use pixelgrad_webgl::{glow, WebGlBackend, WebGlOptions};
use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};
use wasm_bindgen::JsCast;

fn unavailable(backend: &str, reason: impl Into<String>) -> Error {
    Error::Unavailable { backend: backend.to_string(), reason: reason.into() }
}

/// A WebGPU device from `navigator.gpu` (in headless Chromium: SwiftShader, which needs
/// `--enable-unsafe-webgpu --enable-unsafe-swiftshader`).
pub async fn webgpu_device() -> Result<Device> {
    let backend = WgpuBackend::new_async(WgpuOptions::default()).await?;
    Ok(Device::new(backend))
}

/// A WebGL2 device on a fresh, detached `<canvas>` (no need to attach it: nothing is displayed).
pub fn webgl_device() -> Result<Device> {
    let window = web_sys::window().ok_or_else(|| unavailable("webgl", "no window (not running in a page)"))?;
    let document = window.document().ok_or_else(|| unavailable("webgl", "the window has no document"))?;
    let canvas = document
        .create_element("canvas")
        .map_err(|e| unavailable("webgl", format!("create_element(canvas): {e:?}")))?
        .dyn_into::<web_sys::HtmlCanvasElement>()
        .map_err(|_| unavailable("webgl", "created element is not a canvas"))?;
    let ctx = canvas
        .get_context("webgl2")
        .map_err(|e| unavailable("webgl", format!("getContext(webgl2) threw: {e:?}")))?
        .ok_or_else(|| unavailable("webgl", "getContext(webgl2) returned null (WebGL2 disabled or no GPU/SwiftShader)"))?
        .dyn_into::<web_sys::WebGl2RenderingContext>()
        .map_err(|_| unavailable("webgl", "getContext(webgl2) is not a WebGl2RenderingContext"))?;
    let gl = glow::Context::from_webgl2_context(ctx);
    let backend = WebGlBackend::from_glow(gl, WebGlOptions::default())?;
    Ok(Device::new(backend))
}

/// Writes a line to the browser console (wasm-bindgen-test-runner prints it with the test's
/// output when the test fails).
pub fn log(msg: &str) {
    web_sys::console::log_1(&msg.into());
}
