//! Traces on WebGPU: the checks of `pixelgrad_conformance::traces` (a replay computes bit for
//! bit what the ops compute, never overwrites a held output, refuses runs that read back or draw
//! random numbers, and gives its memory back when dropped).

use pixelgrad_conformance::traces;
use pixelgrad_core::Device;
use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};

fn device() -> Device {
    Device::new(WgpuBackend::new(WgpuOptions::default()).expect("a WebGPU adapter (Debian: mesa-vulkan-drivers gives lavapipe)"))
}

#[test]
fn replay_computes_what_the_ops_compute_and_never_overwrites_held_outputs() {
    traces::replay_computes_what_the_ops_compute_and_never_overwrites_held_outputs(&device());
}

#[test]
fn reads_and_random_numbers_make_a_run_unreplayable() {
    traces::reads_and_random_numbers_make_a_run_unreplayable(&device());
}

#[test]
fn a_dropped_trace_gives_its_memory_back() {
    traces::a_dropped_trace_gives_its_memory_back(&device());
}
