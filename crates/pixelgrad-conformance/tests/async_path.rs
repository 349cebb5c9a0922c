//! The async read path (what the browser suite runs) on the CPU backends, natively: every
//! family passes with `Read::Async` too, and the async macro's family list is the native one.

use pixelgrad_conformance::{block_on_ready, families::awaitable, Read, FAMILIES};
use pixelgrad_core::Device;
use pixelgrad_cpu::CpuBackend;

/// Runs every family through `awaitable` with `Read::Async` on a fresh CPU device; CPU reads
/// complete at once, so one poll finishes each family. Returns the names it ran.
macro_rules! run_all_async {
    (; $($family:ident),* $(,)?) => {{
        let mut ran = Vec::new();
        $(
            let dev = Device::new(CpuBackend::new());
            match block_on_ready(awaitable::$family(&dev, Read::Async)) {
                Some(Ok(())) => {}
                Some(Err(e)) => panic!("{} with Read::Async: {e}", stringify!($family)),
                None => panic!("{} with Read::Async did not complete on the CPU", stringify!($family)),
            }
            ran.push(stringify!($family));
        )*
        ran
    }};
}

#[test]
fn every_family_passes_with_async_reads_on_the_cpu() {
    let ran = pixelgrad_conformance::__with_family_list!([run_all_async]);
    assert_eq!(ran, FAMILIES);
    assert_eq!(FAMILIES.len(), 29);
}

#[test]
fn loss_curves_are_the_same_with_either_read() {
    let dev = Device::new(CpuBackend::new());
    let blocking = pixelgrad_conformance::families::loss_curve(&dev).unwrap();
    let async_ = block_on_ready(awaitable::loss_curve(&dev, Read::Async)).unwrap().unwrap();
    assert_eq!(blocking, async_);
    assert!(blocking[pixelgrad_conformance::families::STEPS - 1] < blocking[0]);
}
