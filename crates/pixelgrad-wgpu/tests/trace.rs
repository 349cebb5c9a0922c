//! Traces on WebGPU: the checks of `pixelgrad_conformance::traces` (a replay computes bit for
//! bit what the ops compute, never overwrites a held output, refuses runs that read back or draw
//! random numbers, and gives its memory back when dropped).

use pixelgrad_core::Device;
use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};

fn device() -> Device {
    Device::new(WgpuBackend::new(WgpuOptions::default()).expect("a WebGPU adapter (Debian: mesa-vulkan-drivers gives lavapipe)"))
}

pixelgrad_conformance::trace_tests!(device);
