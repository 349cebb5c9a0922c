//! The random-architecture check: the f32 CPU backend passes against the f64 reference, and a
//! backend with one wrong kernel result fails it.

use pixelgrad_conformance::random_nets::random_architectures;
use pixelgrad_core::Device;
use pixelgrad_cpu::CpuBackend;
use pixelgrad_nn::crosscheck::{with_fault, Fault};

#[test]
fn the_cpu_backend_trains_random_architectures_as_the_reference() {
    random_architectures(&Device::new(CpuBackend::new()), 30).unwrap();
}

#[test]
fn a_wrong_kernel_fails_the_check() {
    let cpu = Device::new(CpuBackend::new());
    let e = random_architectures(&with_fault(&cpu, Fault::parse("tanh").unwrap()), 30).unwrap_err();
    assert!(e.contains("random_nets/") && e.contains("Tanh"), "{e}");
}
