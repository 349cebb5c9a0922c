//! Sanity check of the suite itself: the f64 reference against itself must pass everything.

fn make_reference() -> pixelgrad_core::Device {
    pixelgrad_conformance::reference_device()
}

pixelgrad_conformance::conformance_tests!(make_reference);
