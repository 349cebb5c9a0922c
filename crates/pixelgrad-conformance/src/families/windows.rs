//! Windows far larger than the image (2^15, the largest an ONNX model may ask for, with the
//! padding just below the window) on every backend. Each window kernel visits only the taps
//! that lie inside the image, and a gather (col2im, the max-pool gradient) only the windows that
//! cover its pixel, so these run as fast as their outputs are small. A kernel that looped over
//! every tap ran up to 2^15 iterations per window row here, 2^30 per output of a tall image:
//! minutes on the CPU, a GPU reset in a browser, and on lavapipe and llvmpipe a wrong result
//! (Mesa's software rasterizers stop a shader invocation's loops after 65535 iterations in
//! all). Results must match the f64 reference, and [`pixelgrad_core::budget::op_work`] must
//! charge them little: they run inside a run scope of 2^23 steps.
//!
//! That loop limit also bounds what a gather may do per pixel in these tests: the gradient of
//! the tall pooling below (2^15 windows cover each pixel, each recomputing its maximum) needs
//! more than 65535 loop iterations per pixel however it is written, so it is checked with a
//! coarser row stride (32 windows per pixel), and the tall pooling forward only.

use pixelgrad_core::budget::RunLimits;
use pixelgrad_core::composite::avg_pool2d;
use pixelgrad_core::{Device, Error, Result, Tensor, Window};

use crate::harness::{check_all_with, compare, read_f64, reference_device, seed_of, Case, Gen, Read};
use crate::tolerance::{accumulate, EXACT, GRAD_FACTOR};

type Outcome = std::result::Result<(), String>;

/// The largest window side an ONNX model may ask for.
const BIG: usize = 1 << 15;
/// Work the explicit max-pool pair below may spend in all (it needs about 2^19.6).
const RUN_WORK: u64 = 1 << 23;

/// A 2^15 window at stride 1 down the rows and stride 2^15 across, on a 2 x 3 image: 2^15 + 1
/// output rows, each window holding at most the image's 6 pixels.
fn tall() -> Window {
    Window { kh: BIG, kw: BIG, stride_h: 1, stride_w: BIG, pad_h: BIG - 1, pad_w: BIG - 1 }
}

/// As [`tall`] with a row stride of 2^10: 33 output rows, each pixel covered by 32 windows.
fn rows() -> Window {
    Window { stride_h: 1 << 10, ..tall() }
}

pub async fn huge_windows(dev: &Device, read: Read) -> Outcome {
    let sym = Gen::Uniform(-1.0, 1.0);
    let mut cases = Vec::new();
    // (name, image, window, windows covering a pixel, whether the gradient is checked)
    let corners = Window::square(BIG, BIG, BIG - 1);
    for (name, dims, w, fan, grad) in
        [("tall", [1, 2, 2, 3], tall(), BIG, false), ("rows", [1, 2, 3, 2], rows(), 32, true), ("corners", [2, 1, 3, 2], corners, 1, true)]
    {
        for (suffix, gen) in [("", sym.clone()), ("_ties", Gen::Indices(3))] {
            let case = Case::new("huge_windows", format!("max_pool_{name}{suffix}"), move |_, x| x[0].max_pool(w))
                .input(dims, gen)
                .tol(EXACT)
                .grad_tol(accumulate(fan));
            cases.push(if grad { case } else { case.forward_only() });
        }
    }
    // Depthwise convolutions (their weights are the window's size, so smaller windows): a
    // stride wider than the image (every output sums its own pixels), and a stride of one
    // across with a window 8 times the image's width (outputs share their columns). The
    // gradients run through im2col and col2im of the same windows.
    let strided = Window::square(256, 256, 255);
    let wide = Window { kh: 64, kw: 40, stride_h: 64, stride_w: 1, pad_h: 63, pad_w: 39 };
    for (name, dims, w) in [("strided", [1, 2, 3, 2], strided), ("wide", [1, 2, 2, 5], wide)] {
        let c = dims[1];
        cases.push(
            Case::new("huge_windows", format!("depthwise_{name}"), move |_, x| x[0].depthwise_conv(&x[1], w))
                .input(dims, sym.clone())
                .input([c, 1, w.kh, w.kw], sym.clone())
                // At most 6 taps inside the image per output; 88 outputs per weight's gradient.
                .tol(accumulate(16))
                .grad_tol(accumulate(256).scaled(GRAD_FACTOR)),
        );
    }
    // im2col and col2im of a 128 x 128 window at stride 128 on a 2 x 2 image: every pixel lies
    // in one window, so both directions are copies.
    let cols = Window::square(128, 128, 127);
    cases.push(
        Case::new("huge_windows", "im2col_k128", move |_, x| x[0].im2col(cols)).input([1, 3, 2, 2], sym.clone()).tol(EXACT).grad_tol(EXACT),
    );
    cases.push(
        Case::new("huge_windows", "col2im_k128", move |_, x| x[0].col2im(cols, 2, 2))
            .input([1, 3 * 128 * 128, 4], sym.clone())
            .tol(EXACT)
            .grad_tol(EXACT),
    );
    let mut errs: Vec<String> = Vec::new();
    if let Err(e) = check_all_with(dev, &cases, read).await {
        errs.push(e);
    }
    if let Err(e) = bounded_work(dev, read).await {
        errs.push(format!("huge_windows/max_pool_work: {e}"));
    }
    // Average pooling is im2col + a sum: a 2^15 window's columns (2^32 values here) are
    // refused before anything is allocated: over the element cap, or (wasm32) past what usize
    // counts.
    let x = Tensor::from_f64(dev, &[1.0; 6], [1, 1, 2, 3]).map_err(|e| e.to_string())?;
    match avg_pool2d(&x, BIG, BIG, BIG - 1) {
        Err(Error::Budget { what, .. }) if what.contains("elements") => {}
        Err(Error::Shape { op: "im2col", .. }) if usize::BITS < 64 => {}
        other => errs.push(format!("huge_windows/avg_pool: expected Error::Budget (elements), got {:?}", other.map(|t| t.dims().to_vec()))),
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("\n  "))
    }
}

/// The max pool of [`tall`] and the gradient of [`rows`], inside a run scope of [`RUN_WORK`]
/// steps (`op_work` charges the taps inside the image and the windows covering each pixel:
/// about 2^19.6 and 2^11.2), against the reference.
async fn bounded_work(dev: &Device, read: Read) -> Result<()> {
    let oh = rows().out_hw(3, 2).map_or(0, |(oh, _)| oh);
    let xv = Gen::Uniform(-1.0, 1.0).values(seed_of("huge_windows/work/x"), 12);
    let dyv = Gen::Uniform(-1.0, 1.0).values(seed_of("huge_windows/work/dy"), 2 * oh * 2);
    let run = |d: &Device| -> Result<(Tensor, Tensor, u64)> {
        let x = Tensor::from_f64(d, &xv, [1, 2, 2, 3])?;
        let x2 = Tensor::from_f64(d, &xv, [1, 2, 3, 2])?;
        let dy = Tensor::from_f64(d, &dyv, [1, 2, oh, 2])?;
        let scope = d.run_scope(RunLimits { max_work: Some(RUN_WORK), cancel: None });
        let y = x.max_pool(tall())?;
        let dx = x2.max_pool_grad(&dy, rows())?;
        Ok((y, dx, scope.work()))
    };
    let (y, dx, work) = run(dev)?;
    let (ry, rdx, _) = run(&reference_device())?;
    let fail = |msg: String| Error::invalid("huge_windows", msg);
    compare("huge_windows/work", "max_pool", &read_f64(&y, read).await?, &read_f64(&ry, read).await?, EXACT).map_err(fail)?;
    let (got, want) = (read_f64(&dx, read).await?, read_f64(&rdx, read).await?);
    compare("huge_windows/work", "max_pool_grad", &got, &want, accumulate(32)).map_err(fail)?;
    if work == 0 || work > RUN_WORK {
        return Err(fail(format!("the pair was charged {work} steps of work")));
    }
    Ok(())
}
