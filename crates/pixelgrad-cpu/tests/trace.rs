//! Traces on the CPU: the checks every backend passes (`pixelgrad_conformance::traces`): a
//! replay computes bit for bit what the ops compute, never overwrites a held output, refuses
//! runs that read back or draw random numbers, and gives its memory back when dropped.

use pixelgrad_conformance::traces;
use pixelgrad_core::Device;
use pixelgrad_cpu::CpuBackend;

fn device() -> Device {
    Device::new(CpuBackend::new())
}

pixelgrad_conformance::trace_tests!(device);

#[test]
fn unfused_runs_replay_too() {
    let dev = Device::new(CpuBackend::unfused());
    traces::replay_computes_what_the_ops_compute_and_never_overwrites_held_outputs(&dev);
    traces::a_dropped_trace_gives_its_memory_back(&dev);
}
