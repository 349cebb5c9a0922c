//! The conformance suite on the fast f32 CPU backend.

fn make_device() -> pixelgrad_core::Device {
    pixelgrad_core::Device::new(pixelgrad_cpu::CpuBackend::new())
}

pixelgrad_conformance::conformance_tests!(make_device);
