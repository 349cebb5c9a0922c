//! Host checkpoints for the JavaScript `fit` (`web/js/recovery.js` drives them), and what it
//! needs to notice and simulate a lost device.

use std::collections::HashMap;

use js_sys::{Float32Array, Object, Promise, Reflect, Uint8Array};
use pixelgrad::nn::checkpoint::Checkpoint;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::runtime::Backing;
use super::{js_err, Model, Runtime};

/// Parameters, buffers, optimizer state and counters of a model at one step, in host memory
/// (`pixelgrad_nn::checkpoint::Checkpoint`). It outlives the device it was read from.
#[wasm_bindgen]
pub struct HostCheckpoint {
    ck: Checkpoint,
}

impl HostCheckpoint {
    pub(crate) fn new(ck: Checkpoint) -> HostCheckpoint {
        HostCheckpoint { ck }
    }

    pub(crate) fn into_inner(self) -> Checkpoint {
        self.ck
    }
}

#[wasm_bindgen]
impl HostCheckpoint {
    /// Training steps done when it was taken.
    #[wasm_bindgen(getter)]
    pub fn step(&self) -> u32 {
        self.ck.step as u32
    }

    /// Bytes of host memory it holds.
    #[wasm_bindgen(getter)]
    pub fn bytes(&self) -> f64 {
        self.ck.bytes() as f64
    }

    /// True if every value is finite.
    #[wasm_bindgen(getter, js_name = isFinite)]
    pub fn is_finite(&self) -> bool {
        self.ck.is_finite()
    }

    /// Every parameter and buffer: `{ name: Float32Array }` (copies).
    pub fn weights(&self) -> Result<Object, JsValue> {
        let o = Object::new();
        for t in &self.ck.weights {
            Reflect::set(&o, &t.name.as_str().into(), &Float32Array::from(&t.values[..]))?;
        }
        Ok(o)
    }

    /// The checkpoint as safetensors bytes (optimizer state under `optimizer/...`), with
    /// `metadata` (a JSON object of strings) in the header.
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self, metadata: &str) -> Result<Uint8Array, JsValue> {
        let meta: HashMap<String, String> = serde_json::from_str(metadata).map_err(|e| js_err(format!("checkpoint: bad metadata: {e}")))?;
        let bytes = self.ck.to_bytes(&meta).map_err(js_err)?;
        Ok(Uint8Array::from(&bytes[..]))
    }

    /// A checkpoint from `toBytes` output (its metadata is dropped; `web/js` keeps its own).
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(bytes: &[u8]) -> Result<HostCheckpoint, JsValue> {
        Checkpoint::from_bytes(bytes).map(|(ck, _)| HostCheckpoint { ck }).map_err(js_err)
    }
}

#[wasm_bindgen]
impl Model {
    /// Captures the model and its optimizer after `step` steps and reads them (async): a
    /// promise of a `HostCheckpoint`. One device op and one readback.
    pub fn checkpoint(&self, step: u32) -> Result<Promise, JsValue> {
        let cap = self.net.capture(step as usize).map_err(js_err)?;
        Ok(future_to_promise(async move {
            let ck = cap.read_async().await.map_err(js_err)?;
            Ok(HostCheckpoint { ck }.into())
        }))
    }

    /// Restores `ck` onto this model's device (all or nothing); drops pending sums.
    pub fn restore(&mut self, ck: &HostCheckpoint) -> Result<(), JsValue> {
        self.net.restore(&ck.ck).map_err(js_err)
    }
}

#[wasm_bindgen]
impl Runtime {
    /// Why the device is gone (WebGPU: `device.lost` fired or it was destroyed; WebGL2: the
    /// context is lost), or `undefined` while it works.
    #[wasm_bindgen(getter, js_name = lostReason)]
    pub fn lost_reason(&self) -> Option<String> {
        match &self.backing {
            Backing::Cpu => None,
            Backing::Wgpu { b, .. } => b.lost_reason(),
            Backing::WebGl { ctx, .. } => ctx.is_context_lost().then(|| "the WebGL2 context was lost".to_string()),
            Backing::WebGl1 { ctx, .. } => ctx.is_context_lost().then(|| "the WebGL context was lost".to_string()),
        }
    }

    /// After a loss, before the lost backend's objects are freed: WebGL (2 and 1) deletes nothing on the
    /// context any more (it may be restored with a new generation of objects) and every call
    /// on it fails with `DeviceLost`. A no-op on the other backends.
    pub fn abandon(&self) {
        if let Backing::WebGl { b, .. } | Backing::WebGl1 { b, .. } = &self.backing {
            b.abandon();
        }
    }

    /// WebGPU: destroys the device (`device.destroy()`), as a driver reset would. WebGL2 is
    /// lost from JavaScript (`WEBGL_lose_context`); the CPU cannot be lost.
    #[wasm_bindgen(js_name = destroyDevice)]
    pub fn destroy_device(&self) -> bool {
        match &self.backing {
            Backing::Wgpu { b, .. } => {
                b.simulate_device_loss();
                true
            }
            _ => false,
        }
    }
}
