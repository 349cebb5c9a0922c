//! A tensor that lives on a runtime's device (what `model.predict` returns).

use js_sys::{Float32Array, Promise};
use pixelgrad::Tensor;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::js_err;

#[wasm_bindgen]
pub struct DeviceTensor {
    t: Tensor,
}

impl DeviceTensor {
    pub(crate) fn new(t: Tensor) -> Self {
        DeviceTensor { t }
    }

    pub(crate) fn tensor(&self) -> &Tensor {
        &self.t
    }
}

#[wasm_bindgen]
impl DeviceTensor {
    /// Dimensions (row-major).
    #[wasm_bindgen(getter)]
    pub fn shape(&self) -> Vec<u32> {
        self.t.dims().iter().map(|&d| d as u32).collect()
    }

    /// Copies the values to a `Float32Array` without blocking (the only read WebGPU allows).
    pub fn data(&self) -> Promise {
        let t = self.t.clone();
        future_to_promise(async move {
            let v = t.to_vec_async().await.map_err(js_err)?;
            Ok(Float32Array::from(&v[..]).into())
        })
    }
}
