//! Traces on WebGL: the checks of `pixelgrad_conformance::traces` (a replay computes bit for
//! bit what the ops compute, never overwrites a held output, refuses runs that read back or draw
//! random numbers, and gives its memory back when dropped).

use pixelgrad_conformance::traces;
use pixelgrad_core::Device;
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

fn device() -> Device {
    let opts = WebGlOptions { self_test: false, ..WebGlOptions::default() };
    Device::new(WebGlBackend::new_headless(opts).expect("headless WebGL (EGL) context"))
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
