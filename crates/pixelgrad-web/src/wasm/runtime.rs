//! Starting a backend in a page or a worker. Backend *selection* (the `auto` order, skipping
//! software adapters, the report of what was tried) is policy and lives in `web/js/index.js`;
//! here each constructor either gives a working device with its self-test result or an error
//! saying why not.

use std::cell::RefCell;
use std::rc::Rc;

use pixelgrad::cpu::CpuBackend;
use pixelgrad::webgl::{glow, EmulatedPrecision, WebGlBackend, WebGlOptions};
use pixelgrad::wgpu::{WgpuBackend, WgpuOptions};
use pixelgrad::{is_software_renderer, Device, Error, Limits, Tensor, SELF_TEST_TOL};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::{js_err, DeviceTensor};

/// True if an adapter or renderer description names a software rasteriser (the engine's one
/// list, `pixelgrad_core::backend::SOFTWARE_RASTERISERS`): `auto` in `web/js` asks this
/// before starting a backend.
#[wasm_bindgen(js_name = isSoftwareRenderer)]
pub fn is_software_renderer_js(description: &str) -> bool {
    is_software_renderer(description)
}

/// Largest self-test relative error `auto` accepts (`pixelgrad_core::SELF_TEST_TOL`, the
/// same bound as the native CLI's).
#[wasm_bindgen(js_name = selfTestTolerance)]
pub fn self_test_tolerance() -> f64 {
    SELF_TEST_TOL
}

/// A started backend: the device every model and tensor of this runtime uses.
#[wasm_bindgen]
pub struct Runtime {
    pub(crate) dev: Device,
    /// The backend itself, for what goes past the `Backend` trait (`fromPixels`).
    pub(crate) backing: Backing,
    backend: &'static str,
    adapter: String,
    max_rel_error: f64,
    software: bool,
    format: String,
    warnings: Vec<String>,
}

/// A runtime's concrete backend and what `fromPixels` keeps between frames: the RGBA8 texture
/// sources are copied into (reused while the source size stays the same).
pub(crate) enum Backing {
    Cpu,
    Wgpu {
        b: Rc<WgpuBackend>,
        tex: RefCell<Option<pixelgrad::wgpu::wgpu::Texture>>,
    },
    WebGl {
        b: WebGlBackend,
        ctx: web_sys::WebGl2RenderingContext,
        tex: RefCell<Option<pixelgrad::webgl::PixelTexture>>,
    },
    /// The webgl1 mode: pixels are imported on the host (no GPU import programs in GLSL ES 1.00).
    WebGl1 {
        b: WebGlBackend,
        ctx: web_sys::WebGlRenderingContext,
    },
}

impl Runtime {
    pub(crate) fn device(&self) -> &Device {
        &self.dev
    }

    /// The pool budget of the backend (0 for the CPU backend, which keeps no pool).
    fn pool_budget(&self) -> u64 {
        match &self.backing {
            Backing::Wgpu { b, .. } => b.pool_budget(),
            Backing::WebGl { b, .. } | Backing::WebGl1 { b, .. } => b.pool_budget(),
            Backing::Cpu => 0,
        }
    }
}

/// `Runtime.memory()`'s object for `dev`'s counters.
fn memory_of(dev: &Device, pool_budget: u64) -> Result<JsValue, JsValue> {
    let c = dev.counters();
    let o = js_sys::Object::new();
    for (k, v) in [
        ("bytesInUse", c.bytes_in_use),
        ("liveBytes", c.bytes_in_use.saturating_sub(c.pooled_bytes)),
        ("pooledBytes", c.pooled_bytes),
        ("poolBudget", pool_budget),
        ("allocations", c.allocations),
        ("compiles", c.compiles),
        ("launches", c.launches),
        ("submissions", c.submissions),
        ("readbacks", c.readbacks),
    ] {
        js_sys::Reflect::set(&o, &k.into(), &(v as f64).into())?;
    }
    Ok(o.into())
}

#[wasm_bindgen]
impl Runtime {
    /// The CPU backend compiled to wasm (always available; exact f32, so no self-test error).
    pub fn cpu() -> Runtime {
        Runtime {
            dev: Device::new(CpuBackend::new()),
            backing: Backing::Cpu,
            backend: "cpu",
            adapter: "wasm32 (single thread)".into(),
            max_rel_error: 0.0,
            software: false,
            format: "f32".into(),
            warnings: Vec::new(),
        }
    }

    /// WebGPU through `navigator.gpu` (page or worker), with the precision self-test.
    pub async fn webgpu() -> Result<Runtime, JsValue> {
        let b = WgpuBackend::new_async(WgpuOptions::default()).await.map_err(js_err)?;
        let report = b.report();
        let st = b.self_test_async().await.map_err(js_err)?;
        let adapter = format!("{} ({}, {})", report.adapter, report.device_type, report.driver).trim().to_string();
        let software = report.is_software();
        let b = Rc::new(b);
        Ok(Runtime {
            dev: Device::from_rc(b.clone()),
            backing: Backing::Wgpu { b, tex: RefCell::new(None) },
            backend: "webgpu",
            adapter,
            max_rel_error: st.max_rel_error,
            software,
            format: "f32".into(),
            warnings: Vec::new(),
        })
    }

    /// WebGL2 on a context the caller created (`canvas.getContext('webgl2')` on a detached
    /// canvas or an `OffscreenCanvas` in a worker). The backend runs its self-test.
    pub fn webgl(ctx: JsValue) -> Result<Runtime, JsValue> {
        Runtime::webgl_with(ctx, WebGlOptions::default())
    }

    /// WebGL2 in the precision-limited mode (RGBA16F storage, mediump fragment shaders) that
    /// `init({ precision: 'low' })` selects for tests.
    #[wasm_bindgen(js_name = webglLowPrecision)]
    pub fn webgl_low_precision(ctx: JsValue) -> Result<Runtime, JsValue> {
        Runtime::webgl_with(ctx, WebGlOptions { force_half_float: true, mediump: true, ..WebGlOptions::default() })
    }
}

impl Runtime {
    fn webgl_with(ctx: JsValue, opts: WebGlOptions) -> Result<Runtime, JsValue> {
        let ctx = ctx
            .dyn_into::<web_sys::WebGl2RenderingContext>()
            .map_err(|_| js_err("backend webgl is not available: the context is not a WebGL2RenderingContext"))?;
        let gl = glow::Context::from_webgl2_context(ctx.clone());
        let b = WebGlBackend::from_glow(gl, opts).map_err(js_err)?;
        let report = b.report();
        let max_rel_error = report.self_test.as_ref().map(|s| s.max_rel_error).unwrap_or(f64::NAN);
        Ok(Runtime {
            dev: Device::new(b.clone()),
            backing: Backing::WebGl { b, ctx, tex: RefCell::new(None) },
            backend: "webgl",
            software: is_software_renderer(&report.renderer),
            adapter: format!("{} ({})", report.renderer, report.version),
            max_rel_error,
            format: report.format.as_str().to_string(),
            warnings: report.warnings.clone(),
        })
    }
}

#[wasm_bindgen]
impl Runtime {
    /// WebGL1 on a `canvas.getContext('webgl')` context: the backend's `webgl1` mode (GLSL ES
    /// 1.00 programs, OES_texture_float storage, or half-float storage on a device that renders
    /// only half floats; render targets checked by rendering), with the self-test. Pixels are imported on the host (`fromPixelsBytes`).
    pub fn webgl1(ctx: JsValue) -> Result<Runtime, JsValue> {
        Runtime::webgl1_with(ctx, WebGlOptions { webgl1: true, ..WebGlOptions::default() })
    }

    /// WebGL2, or WebGL1 when `webgl1`, with a precision emulation of the GLSL dialects (a test
    /// mode, `init({ emulatePrecision })`, to see on a desktop GPU what a low-end device does):
    /// `"half"` rounds every value a kernel computes or writes to half precision, as a device
    /// whose fragment shaders have only `mediump` does; `"no-highp"` makes the backend see no
    /// `highp` float in fragment shaders, so it refuses to start, as on such a device.
    #[wasm_bindgen(js_name = webglEmulated)]
    pub fn webgl_emulated(ctx: JsValue, webgl1: bool, emulate: &str) -> Result<Runtime, JsValue> {
        let opts = match emulate {
            "half" => WebGlOptions { webgl1, emulate_precision: Some(EmulatedPrecision::Half), ..WebGlOptions::default() },
            "no-highp" => WebGlOptions { webgl1, emulate_no_highp: true, ..WebGlOptions::default() },
            other => return Err(js_err(format!("emulatePrecision must be 'half' or 'no-highp', got '{other}'"))),
        };
        if webgl1 {
            Runtime::webgl1_with(ctx, opts)
        } else {
            Runtime::webgl_with(ctx, opts)
        }
    }
}

impl Runtime {
    fn webgl1_with(ctx: JsValue, opts: WebGlOptions) -> Result<Runtime, JsValue> {
        let ctx = ctx
            .dyn_into::<web_sys::WebGlRenderingContext>()
            .map_err(|_| js_err("backend webgl1 is not available: the context is not a WebGLRenderingContext"))?;
        let gl = glow::Context::from_webgl1_context(ctx.clone());
        let b = WebGlBackend::from_glow(gl, opts).map_err(js_err)?;
        let report = b.report();
        let max_rel_error = report.self_test.as_ref().map(|s| s.max_rel_error).unwrap_or(f64::NAN);
        Ok(Runtime {
            dev: Device::new(b.clone()),
            backing: Backing::WebGl1 { b, ctx },
            backend: "webgl1",
            software: is_software_renderer(&report.renderer),
            adapter: format!("{} ({})", report.renderer, report.version),
            max_rel_error,
            format: report.format.as_str().to_string(),
            warnings: report.warnings.clone(),
        })
    }
}

#[wasm_bindgen]
impl Runtime {
    /// `webgpu`, `webgl`, `webgl1` or `cpu`.
    #[wasm_bindgen(getter)]
    pub fn backend(&self) -> String {
        self.backend.to_string()
    }

    /// Adapter or renderer description.
    #[wasm_bindgen(getter)]
    pub fn adapter(&self) -> String {
        self.adapter.clone()
    }

    /// Largest relative error of the precision self-test against host f64.
    #[wasm_bindgen(getter, js_name = maxRelError)]
    pub fn max_rel_error(&self) -> f64 {
        self.max_rel_error
    }

    /// True for software rasterisers (SwiftShader, llvmpipe, lavapipe).
    #[wasm_bindgen(getter)]
    pub fn software(&self) -> bool {
        self.software
    }

    /// Tensor storage format (`f32`, `RGBA32F`, `RGBA16F`).
    #[wasm_bindgen(getter)]
    pub fn format(&self) -> String {
        self.format.clone()
    }

    /// Fallbacks the backend took while starting (e.g. half-float textures).
    #[wasm_bindgen(getter)]
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// Uploads host values as a tensor that stays on this runtime's device.
    pub fn upload(&self, data: &[f32], shape: Vec<u32>) -> Result<DeviceTensor, JsValue> {
        let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        let need = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if need != Some(data.len()) {
            return Err(js_err(Error::invalid("tensor upload", format!("{} values do not fill shape {dims:?}", data.len()))));
        }
        Tensor::from_vec(&self.dev, data, dims).map(DeviceTensor::new).map_err(js_err)
    }

    /// `a @ b` on the device (`[m, k] x [k, n]`, or batched `[b, m, k] x [b, k, n]`); both must
    /// live on this runtime (the engine refuses tensors of another device with a typed error).
    pub fn matmul(&self, a: &DeviceTensor, b: &DeviceTensor) -> Result<DeviceTensor, JsValue> {
        a.tensor().matmul(b.tensor()).map(DeviceTensor::new).map_err(js_err)
    }

    /// The backend's counters: `{ bytesInUse, liveBytes, pooledBytes, poolBudget, allocations,
    /// compiles, launches, submissions, readbacks }`. `bytesInUse` is every byte of device
    /// memory the backend holds: `liveBytes` (tensors and step plans) plus `pooledBytes` (kept
    /// for reuse, at most `poolBudget` once in-flight work is done); the rest count since start.
    pub fn memory(&self) -> Result<JsValue, JsValue> {
        memory_of(&self.dev, self.pool_budget())
    }

    /// Gives back the device memory the pools keep for reuse (`Device::trim`; on WebGPU after
    /// awaiting the GPU's in-flight work, so nothing it uses is destroyed). Memory of live
    /// tensors and step plans stays. Resolves to [`Runtime::memory`] afterwards.
    pub fn trim(&self) -> js_sys::Promise {
        let dev = self.dev.clone();
        let wgpu = match &self.backing {
            Backing::Wgpu { b, .. } => Some(b.clone()),
            _ => None,
        };
        let budget = self.pool_budget();
        wasm_bindgen_futures::future_to_promise(async move {
            match wgpu {
                Some(b) => b.trim_async().await.map(|_| ()),
                None => dev.trim(),
            }
            .map_err(js_err)?;
            memory_of(&dev, budget)
        })
    }

    /// Sets the most bytes of free memory the pools keep for reuse (default 256 MiB; 0 keeps
    /// none). Past it the least recently returned buffers or textures are freed.
    #[wasm_bindgen(js_name = setPoolBudget)]
    pub fn set_pool_budget(&self, bytes: f64) -> Result<(), JsValue> {
        if !(bytes.is_finite() && bytes >= 0.0) {
            return Err(js_err(Error::invalid("setPoolBudget", format!("the budget must be a number of bytes >= 0, not {bytes}"))));
        }
        // `as` saturates: a budget past u64 is no budget.
        let bytes = bytes as u64;
        match &self.backing {
            Backing::Wgpu { b, .. } => b.set_pool_budget(bytes),
            Backing::WebGl { b, .. } | Backing::WebGl1 { b, .. } => b.set_pool_budget(bytes),
            Backing::Cpu => {}
        }
        Ok(())
    }

    /// Sets the device's caps checked before every primitive ([`Device::set_limits`]):
    /// `max_elements` elements in one result, `max_op_work` estimated steps in one primitive
    /// (`init({ limits: { maxElements, maxOpWork } })`). Each must be a positive whole number.
    #[wasm_bindgen(js_name = setLimits)]
    pub fn set_limits(&self, max_elements: f64, max_op_work: f64) -> Result<(), JsValue> {
        let whole = |v: f64, name: &str, max: f64| {
            if v.is_finite() && v >= 1.0 && v.fract() == 0.0 && v <= max {
                Ok(v)
            } else {
                Err(js_err(Error::invalid("pg.init", format!("limits.{name} must be a whole number from 1 to {max}, got {v}"))))
            }
        };
        let elements = whole(max_elements, "maxElements", usize::MAX as f64)? as usize;
        let work = whole(max_op_work, "maxOpWork", 9_007_199_254_740_992.0)? as u64;
        self.dev.set_limits(Limits { max_elements: elements, max_op_work: work });
        Ok(())
    }

    /// The device's caps: `{ maxElements, maxOpWork }`.
    pub fn limits(&self) -> Result<JsValue, JsValue> {
        let l = self.dev.limits();
        let o = js_sys::Object::new();
        js_sys::Reflect::set(&o, &"maxElements".into(), &(l.max_elements as f64).into())?;
        js_sys::Reflect::set(&o, &"maxOpWork".into(), &(l.max_op_work as f64).into())?;
        Ok(o.into())
    }

    /// Submits queued device work without waiting for it to finish.
    pub fn flush(&self) -> Result<(), JsValue> {
        self.dev.flush().map_err(js_err)
    }

    /// What the backend measured when it started (`Backend::caps`: 8-bit and f16 storage, f16
    /// products, reduced precision...), as a JSON object with camelCase names; `rt.report.caps`
    /// in `web/js` parses it for every backend started, recoveries included.
    #[wasm_bindgen(getter, js_name = capsJson)]
    pub fn caps_json(&self) -> Result<String, JsValue> {
        serde_json::to_string(self.dev.backend().caps()).map_err(|e| JsValue::from_str(&format!("caps: {e}")))
    }

    /// The engine's name for the device, e.g. `webgl (ANGLE (...), WebGL 2.0)`.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.dev.name()
    }
}
