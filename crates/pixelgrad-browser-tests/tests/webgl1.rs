//! The conformance suite on WebGL1 (`getContext('webgl')`, the webgl backend's GLSL ES 1.00
//! mode) against the f64 reference, in a page of its own: run in the same page after the
//! WebGL2 families, its device's textures and programs pushed SwiftShader past what one page
//! holds, and a later WebGL2 family stalled until the runner's timeout. Run with
//! `scripts/browser-tests.sh` (it runs this binary after `tests/web`).
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// Named `conformance::webgl1::<family>`, as when it shared the page with the other backends.
mod conformance {
    use pixelgrad_browser_tests::browser::shared_webgl1_device;
    use pixelgrad_core::{Device, Result};

    async fn webgl1() -> Result<Device> {
        shared_webgl1_device()
    }

    pixelgrad_conformance::conformance_tests_async!(webgl1, super::webgl1, wasm_bindgen_test::wasm_bindgen_test);
}
