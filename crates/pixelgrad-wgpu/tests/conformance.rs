//! The shared conformance suite on the WebGPU backend (Mesa lavapipe in CI).

use pixelgrad_core::Device;
use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};

fn make_device() -> Device {
    match WgpuBackend::new(WgpuOptions::default()) {
        Ok(b) => Device::new(b),
        Err(e) => panic!(
            "no WebGPU adapter, so the wgpu backend cannot be tested: {e}\n\
             Install Mesa's Vulkan drivers (Debian: mesa-vulkan-drivers, which provides lavapipe)."
        ),
    }
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
