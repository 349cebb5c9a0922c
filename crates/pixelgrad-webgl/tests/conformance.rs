//! The shared conformance suite on the WebGL backend (headless EGL, Mesa llvmpipe in CI).

use pixelgrad_core::Device;
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

fn make_device() -> Device {
    // The self-test has its own test; skip it here to keep the suite fast.
    let opts = WebGlOptions { self_test: false, ..WebGlOptions::default() };
    Device::new(WebGlBackend::new_headless(opts).expect("headless WebGL (EGL) context"))
}

pixelgrad_conformance::conformance_tests!(make_device);

/// Random layer stacks trained with every optimizer, against the f64 reference
/// (`pixelgrad_conformance::random_nets`).
#[test]
fn random_architectures_train_as_the_reference() {
    if let Err(e) = pixelgrad_conformance::random_nets::random_architectures(&make_device(), 40) {
        panic!("{e}");
    }
}
