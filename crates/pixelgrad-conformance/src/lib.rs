//! pixelgrad-conformance: one suite for every pixelgrad backend.
//!
//! Each op family is run on the backend under test (f32) and on the f64 CPU reference
//! ([`pixelgrad_cpu::CpuBackend::reference`]) from the same seeded inputs; outputs and input
//! gradients (of `loss = sum(op(x) * r)` for a fixed random `r`) are compared element by
//! element with the per-op tolerances of [`tolerance`]. A failure names the family, the case,
//! the first bad index and the values.
//!
//! A backend crate instantiates the whole suite with one line in `tests/conformance.rs`:
//!
//! ```ignore
//! fn make_device() -> pixelgrad_core::Device {
//!     pixelgrad_core::Device::new(my_backend::MyBackend::new().unwrap())
//! }
//! pixelgrad_conformance::conformance_tests!(make_device);
//! ```
//!
//! which expands into a module `conformance` with one `#[test]` per family
//! (`cargo test conformance::matmul`, ...): `fill`, `random`, `unary`, `binary` (with
//! broadcasting), `where_`, `edges` (every elementwise function on ±0, ±inf, NaN, tiny and
//! huge inputs, to per-function tolerances and exact IEEE classes), `reduce`, `matmul` (all four transpose combinations, batched,
//! batch-broadcast, square operands; exact `matmul_i8` cases where the backend stores 8-bit weights, and `widen` of i8, u8 and f16 storage), `im2col`, `col2im`, `depthwise`, `max_pool` (ties included, with its gradient), `gather`, `scatter_add`, `reshape`,
//! `permute`, `expand`, `slice`, `pad`, `concat`, `composites` (activations, softmax,
//! log_softmax, conv2d, max/avg pooling, losses), `images` (resize, the fromPixels
//! preprocessing as tensor ops, Y'CbCr to RGB, top-k, non-maximum suppression), `training_curve` (a fixed-seed MLP trained 30
//! SGD steps; the loss sequence must match the reference to 1e-3 relative), `training_curve_cnn`
//! (the same for a tiny conv net: conv, relu, max pool, linear), `errors`
//! (bad input gives typed errors, never a panic), `budget` (caps on elements and work, and
//! cancellation) and `huge_windows` (2^15 windows on tiny images run quickly: window kernels
//! visit only the taps inside the image).
//!
//! Besides the families, [`random_nets::random_architectures`] trains seeded random stacks of
//! the `pixelgrad-nn` layers (convolutions of any kernel, stride and padding, pools, batch
//! norms, activations, dense layers) three steps on the backend, on the f32 CPU backend and on
//! the reference, and compares every loss and parameter. The GPU backends' `tests/conformance.rs`
//! run 40 of them.
//!
//! A backend that is not ready for every family can call families one by one instead:
//!
//! ```ignore
//! #[test]
//! fn unary() {
//!     pixelgrad_conformance::run_family("unary", pixelgrad_conformance::families::unary, make_device);
//! }
//! ```
//!
//! In the browser, where WebGPU cannot block on a readback, the same families run as `async fn`s
//! reading with `Tensor::to_vec_async` ([`families::awaitable`], [`Read::Async`]);
//! [`conformance_tests_async!`] expands into one async test per family for a given test
//! attribute (e.g. `wasm_bindgen_test`):
//!
//! ```ignore
//! async fn make_webgpu() -> pixelgrad_core::Result<pixelgrad_core::Device> { /* ... */ }
//! pixelgrad_conformance::conformance_tests_async!(conformance_webgpu, make_webgpu, wasm_bindgen_test::wasm_bindgen_test);
//! ```
//!
//! Tolerances are per op family; see the table in [`tolerance`].
//!
//! [`check_gradients`] is the finite-difference gradient check (f64, on the reference) used by
//! this crate's own tests and by layer crates for theirs:
//!
//! ```
//! use pixelgrad_conformance::check_gradients;
//! use pixelgrad_core::Shape;
//!
//! // d/dx sum(tanh(x) * r) for a fixed random r, autodiff against central differences.
//! let err = check_gradients(|x| x[0].tanh(), &[vec![0.3, -1.2, 2.0]], &[Shape::from([3])]).unwrap();
//! assert!(err < 1e-6);
//! ```

pub mod families;
pub mod gradcheck;
pub mod harness;
pub mod mixed;
pub mod narrow;
pub mod pixels;
pub mod random_nets;
pub mod steps;
pub mod tolerance;
pub mod traces;

pub use gradcheck::{check_gradients, check_gradients_eps, grad_error, FD_EPS};
pub use harness::{block_on_ready, check_all, check_all_with, compare, read_f64, reference_device, seed_of, Case, Gen, Read};
pub use tolerance::Tol;

use pixelgrad_core::Device;

/// Runs one family on a fresh device from `make`, panicking with the family's report on
/// failure (this is what the generated `#[test]`s call).
pub fn run_family(name: &str, family: fn(&Device) -> std::result::Result<(), String>, make: impl Fn() -> Device) {
    let dev = make();
    if let Err(e) = family(&dev) {
        panic!("conformance family `{name}` on backend {}: {e}", dev.name());
    }
}

/// The outcome of one family on `dev`, awaited by the tests [`conformance_tests_async!`]
/// generates: panics with the family's report on failure (a test failure, in a test only).
pub fn report_family(name: &str, dev: &Device, outcome: std::result::Result<(), String>) {
    if let Err(e) = outcome {
        panic!("conformance family `{name}` on backend {}: {e}", dev.name());
    }
}

/// Every family's name, in the order the suite runs them.
pub const FAMILIES: &[&str] = &__with_family_list!([family_names]);

macro_rules! family_names {
    (; $($family:ident),* $(,)?) => { [$(stringify!($family)),*] };
}
use family_names;

/// The single list of families: calls the macro in brackets with its extra tokens, then `;` and
/// the family names. Internal to the macros below.
#[doc(hidden)]
#[macro_export]
macro_rules! __with_family_list {
    ([$($callback:tt)*] $($pre:tt)*) => {
        $($callback)*! { $($pre)* ;
            fill, random, unary, binary, where_, edges, reduce, matmul, im2col, col2im, depthwise, conv, max_pool, gather,
            scatter_add, reshape, permute, expand, slice, pad, concat, composites, images,
            training_curve, training_curve_cnn, errors, budget, huge_windows, attention
        }
    };
}

/// Expands into `mod conformance { #[test] fn fill() .. #[test] fn training_curve() }`, one
/// test per op family, each running on a fresh device from `$make: fn() -> Device`.
#[macro_export]
macro_rules! conformance_tests {
    ($make:path) => {
        $crate::__with_family_list!([$crate::conformance_tests] @families $make);
    };
    (@families $make:path; $($family:ident),* $(,)?) => {
        #[cfg(test)]
        mod conformance {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $family() {
                    $crate::run_family(stringify!($family), $crate::families::$family, || $make());
                }
            )*
        }
    };
}

/// Expands into the three `#[test]`s of [`traces`] (a replay equals the ops and spares held
/// outputs; reads and random numbers make a run unreplayable; a dropped trace gives its memory
/// back), each on a fresh device from `$make: fn() -> Device`: one line per backend's
/// `tests/trace.rs`.
#[macro_export]
macro_rules! trace_tests {
    ($make:path) => {
        #[test]
        fn replay_computes_what_the_ops_compute_and_never_overwrites_held_outputs() {
            $crate::traces::replay_computes_what_the_ops_compute_and_never_overwrites_held_outputs(&$make());
        }

        #[test]
        fn reads_and_random_numbers_make_a_run_unreplayable() {
            $crate::traces::reads_and_random_numbers_make_a_run_unreplayable(&$make());
        }

        #[test]
        fn a_dropped_trace_gives_its_memory_back() {
            $crate::traces::a_dropped_trace_gives_its_memory_back(&$make());
        }
    };
}

/// Expands into `mod $module { #[$test] async fn fill() .. }`: one async test per op family,
/// each on a fresh device from `$make: async fn() -> pixelgrad_core::Result<Device>`, reading
/// results with [`Read::Async`] (so it works on WebGPU in the browser). `$test` is the test
/// attribute's path, e.g. `wasm_bindgen_test::wasm_bindgen_test`. A device that cannot be
/// created fails every test of the module with the reason.
#[macro_export]
macro_rules! conformance_tests_async {
    ($module:ident, $make:path, $test:path) => {
        $crate::__with_family_list!([$crate::conformance_tests_async] @families $module, $make, $test);
    };
    (@families $module:ident, $make:path, $test:path; $($family:ident),* $(,)?) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[$test]
                async fn $family() {
                    let dev = match $make().await {
                        Ok(dev) => dev,
                        Err(e) => panic!("conformance family `{}`: no device: {e}", stringify!($family)),
                    };
                    let outcome = $crate::families::awaitable::$family(&dev, $crate::Read::Async).await;
                    $crate::report_family(stringify!($family), &dev, outcome);
                }
            )*
        }
    };
}
