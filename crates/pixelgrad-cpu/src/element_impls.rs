//! [`Element`] for the two element types: `f32`, the fast path (threads, the optimised GEMM,
//! SIMD depthwise, Winograd, recycled buffers), and `f64`, the reference (plain loops, fresh
//! zeroed buffers). Kernels are written against the trait in `crate::element`; this file picks
//! the kernels each type runs, so it sits above them.

use std::cell::RefCell;

use crate::blocks::Scratch;
use crate::element::Element;

macro_rules! float_element {
    ($t:ty, $fast:expr, $gemm:path, $depthwise:path, $conv:path, $output:expr, $recycle:expr) => {
        impl Element for $t {
            const FAST: bool = $fast;
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_usize(v: usize) -> Self {
                v as $t
            }
            fn gemm(
                m: usize,
                k: usize,
                n: usize,
                a: &[Self],
                rsa: usize,
                csa: usize,
                b: &[Self],
                rsb: usize,
                csb: usize,
                c: &mut [Self],
            ) -> pixelgrad_core::Result<()> {
                $gemm(m, k, n, a, rsa, csa, b, rsb, csb, c)
            }
            fn depthwise(
                x: &[Self],
                dims: &[usize],
                k: &[Self],
                w: &pixelgrad_core::Window,
                oh: usize,
                ow: usize,
            ) -> pixelgrad_core::Result<Vec<Self>> {
                $depthwise(x, dims, k, w, oh, ow)
            }
            fn conv(
                x: &[Self],
                dims: &[usize],
                k: &[Self],
                m: usize,
                w: &pixelgrad_core::Window,
                oh: usize,
                ow: usize,
            ) -> pixelgrad_core::Result<Vec<Self>> {
                $conv(x, dims, k, m, w, oh, ow)
            }
            fn output(n: usize) -> Vec<Self> {
                $output(n)
            }
            fn recycle(v: Vec<Self>) {
                $recycle(v)
            }
            fn with_scratch<R>(f: impl FnOnce(&mut Scratch<Self>) -> R) -> R {
                thread_local! {
                    static SCRATCH: RefCell<Scratch<$t>> = RefCell::new(Scratch::default());
                }
                // A nested call (none today) would get fresh buffers rather than a borrow panic.
                SCRATCH.with(|s| match s.try_borrow_mut() {
                    Ok(mut s) => f(&mut s),
                    Err(_) => f(&mut Scratch::default()),
                })
            }
        }
    };
}

float_element!(
    f32,
    true,
    crate::matmul::gemm_f32,
    crate::depthwise::depthwise_f32,
    crate::winograd::conv_f32,
    crate::pool::take,
    crate::pool::give
);
// The reference never recycles: a kernel that missed an element shows zeros there, not old values.
float_element!(f64, false, crate::matmul::gemm_loops, crate::window::depthwise, crate::winograd::conv_im2col, |n| vec![0.0f64; n], drop);
