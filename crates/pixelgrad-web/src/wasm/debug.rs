//! `rt.crossCheck(opts)` and `model.layouts()`: bindings over `crate::debug` and
//! `pixelgrad_nn::{crosscheck, layouts}`.

use js_sys::Promise;
use pixelgrad::cpu::CpuBackend;
use pixelgrad::nn::crosscheck::{self, with_fault};
use pixelgrad::Device;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::{js_err, Model, Runtime};

#[wasm_bindgen]
impl Runtime {
    /// Cross-checks this runtime's backend against the f64 CPU reference (options JSON, see
    /// `crate::debug::check_options`); resolves to the report as a JSON string.
    #[wasm_bindgen(js_name = crossCheck)]
    pub fn cross_check(&self, options: &str) -> Promise {
        let dev = self.device().clone();
        let options = options.to_string();
        future_to_promise(async move {
            let v: serde_json::Value = serde_json::from_str(&options).map_err(|e| js_err(format!("crossCheck: bad options: {e}")))?;
            let (cfg, fault) = crate::debug::check_options(&v).map_err(js_err)?;
            let subject = match fault {
                Some(f) => with_fault(&dev, f),
                None => dev,
            };
            let reference = Device::new(CpuBackend::reference());
            let report = crosscheck::run_async(&cfg, &subject, &reference).await.map_err(js_err)?;
            Ok(JsValue::from_str(&report.to_json().to_string()))
        })
    }
}

#[wasm_bindgen]
impl Model {
    /// The layout table of the model's live tensors (JSON string of an array of rows).
    pub fn layouts(&self) -> String {
        pixelgrad::nn::layouts::to_json(&self.net.layouts()).to_string()
    }
}
