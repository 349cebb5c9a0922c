//! Creating the GPU devices inside a browser page (wasm32 only).

use std::cell::RefCell;

use pixelgrad_core::{BackendKind, Device, Error, Result};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_webgl::{glow, WebGlBackend, WebGlOptions};
use pixelgrad_wgpu::{ReduceKernel, WgpuBackend, WgpuOptions};
use wasm_bindgen::JsCast;

fn unavailable(backend: &str, reason: impl Into<String>) -> Error {
    Error::Unavailable { backend: backend.to_string(), reason: reason.into() }
}

/// The reduction kernel the WebGPU pages launch: `ReduceKernel::Auto` unless the build sets
/// `PIXELGRAD_BROWSER_REDUCTIONS=rendered|handwritten` (a compile-time variable: a page has no
/// environment), so the whole browser suite can run either launch.
pub fn browser_reductions() -> Result<ReduceKernel> {
    match option_env!("PIXELGRAD_BROWSER_REDUCTIONS") {
        None | Some("") | Some("auto") => Ok(ReduceKernel::Auto),
        Some("rendered") => Ok(ReduceKernel::Rendered),
        Some("handwritten") => Ok(ReduceKernel::HandWritten),
        Some(other) => Err(unavailable("webgpu", format!("PIXELGRAD_BROWSER_REDUCTIONS={other}: expected auto, rendered or handwritten"))),
    }
}

/// A WebGPU device from `navigator.gpu` (in headless Chromium: SwiftShader, which needs
/// `--enable-unsafe-webgpu --enable-unsafe-swiftshader`), reducing as [`browser_reductions`]
/// says.
pub async fn webgpu_device() -> Result<Device> {
    let opts = WgpuOptions { reductions: browser_reductions()?, ..WgpuOptions::default() };
    let backend = WgpuBackend::new_async(opts).await?;
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

/// A fresh device of `kind` in the page (`Cpu`: the fast f32 CPU backend compiled to wasm),
/// checked to really be that backend, so that no silent fallback can pass a test meant for a
/// GPU. Logs the device's name.
pub async fn device_of_kind(kind: BackendKind) -> Result<Device> {
    let dev = match kind {
        BackendKind::WebGpu => webgpu_device().await?,
        BackendKind::WebGl => webgl_device()?,
        BackendKind::Cpu => Device::new(CpuBackend::new()),
    };
    if dev.kind() != kind {
        return Err(unavailable(kind.as_str(), format!("asked for a {} device, got {}", kind.as_str(), dev.name())));
    }
    log(&format!("device: {}", dev.name()));
    Ok(dev)
}

thread_local! {
    /// Devices handed out by [`shared_device`], one per kind.
    static SHARED: RefCell<Vec<Device>> = const { RefCell::new(Vec::new()) };
}

/// One device of `kind` per page, created on first use by [`device_of_kind`] and shared by
/// every caller after that. Why: the conformance suite natively takes a fresh device per
/// family, but in headless Chromium ~20 WebGPU devices plus ~20 WebGL2 contexts that nothing
/// destroys (they go when JavaScript's garbage collector gets to them) killed the page a few
/// tests later; one device per backend keeps the page alive.
pub async fn shared_device(kind: BackendKind) -> Result<Device> {
    if let Some(dev) = SHARED.with(|s| s.borrow().iter().find(|d| d.kind() == kind).cloned()) {
        return Ok(dev);
    }
    let dev = device_of_kind(kind).await?;
    SHARED.with(|s| s.borrow_mut().push(dev.clone()));
    Ok(dev)
}

/// A WebGL1 device (the webgl backend's GLSL ES 1.00 mode) on a fresh `<canvas>`'s
/// `getContext('webgl')`, checked to run in that mode; one per page, like [`shared_device`]'s
/// (its kind is `WebGl` too, so it has its own slot).
pub fn shared_webgl1_device() -> Result<Device> {
    if let Some(dev) = WEBGL1.with(|s| s.borrow().clone()) {
        return Ok(dev);
    }
    let un = |r: String| unavailable("webgl1", r);
    let document = web_sys::window().and_then(|w| w.document()).ok_or_else(|| un("no document (not running in a page)".into()))?;
    let canvas = document
        .create_element("canvas")
        .map_err(|e| un(format!("create_element(canvas): {e:?}")))?
        .dyn_into::<web_sys::HtmlCanvasElement>()
        .map_err(|_| un("created element is not a canvas".into()))?;
    let ctx = canvas
        .get_context("webgl")
        .map_err(|e| un(format!("getContext(webgl) threw: {e:?}")))?
        .ok_or_else(|| un("getContext(webgl) returned null".into()))?
        .dyn_into::<web_sys::WebGlRenderingContext>()
        .map_err(|_| un("getContext(webgl) is not a WebGlRenderingContext".into()))?;
    let backend =
        WebGlBackend::from_glow(glow::Context::from_webgl1_context(ctx), WebGlOptions { webgl1: true, ..WebGlOptions::default() })?;
    if !backend.report().webgl1 || !backend.report().version.starts_with("WebGL 1") {
        return Err(un(format!("not a WebGL1 context in webgl1 mode: {:?}", backend.report().version)));
    }
    let dev = Device::new(backend);
    log(&format!("device: {}", dev.name()));
    WEBGL1.with(|s| *s.borrow_mut() = Some(dev.clone()));
    Ok(dev)
}

thread_local! {
    static WEBGL1: RefCell<Option<Device>> = const { RefCell::new(None) };
}
