//! Traces on WebGL: the checks of `pixelgrad_conformance::traces` (a replay computes bit for
//! bit what the ops compute, never overwrites a held output, refuses runs that read back or draw
//! random numbers, and gives its memory back when dropped).

use pixelgrad_core::Device;
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

fn device() -> Device {
    let opts = WebGlOptions { self_test: false, ..WebGlOptions::default() };
    Device::new(WebGlBackend::new_headless(opts).expect("headless WebGL (EGL) context"))
}

pixelgrad_conformance::trace_tests!(device);
