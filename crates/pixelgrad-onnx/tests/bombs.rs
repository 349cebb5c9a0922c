//! Size bombs: models of a few hundred bytes (the two-level Concat 2.5 KB) whose shapes ask for a 16 GiB result (a
//! broadcast, a product, a `Where`, a `Concat`, a `ConstantOfShape`, a `Range`, an `Expand`, a
//! `Tile`, a padding, a resize) are refused with a typed budget error before anything that
//! size is allocated, on the host or on the device, and the session runs normally afterwards.
//!
//! A counting allocator records the largest total of host bytes allocated while each model
//! loads and runs; the device's `bytes_in_use` counter does the same for the device. One
//! test, so nothing else allocates meanwhile.

mod graphs;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use graphs::*;
use pixelgrad_core::{Device, Error as CoreError, Tensor};
use pixelgrad_onnx::{Model, OnnxError, Session};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// `[65536, 1]` and `[1, 65536]` zeros made by folded `ConstantOfShape` nodes: two 256 KiB
/// constants from a few bytes of shape.
fn col_row() -> Vec<pixelgrad_onnx::proto::NodeProto> {
    vec![node("ConstantOfShape", &["cs"], &["col"], vec![]), node("ConstantOfShape", &["rs"], &["row"], vec![])]
}

fn shapes() -> Vec<pixelgrad_onnx::proto::TensorProto> {
    vec![i64s("cs", &[2], &[65536, 1]), i64s("rs", &[2], &[1, 65536])]
}

/// Each bomb: name, model bytes, and the elements it asks for.
fn bombs() -> Vec<(&'static str, Vec<u8>)> {
    let x = [("x", &[1i64, 1, 4, 4][..])];
    let with = |extra: Vec<pixelgrad_onnx::proto::NodeProto>, inits: Vec<pixelgrad_onnx::proto::TensorProto>| {
        let mut nodes = col_row();
        nodes.extend(extra);
        let mut all = shapes();
        all.extend(inits);
        model(13, nodes, &x, &["y"], all)
    };
    vec![
        ("broadcast Add", with(vec![node("Add", &["col", "row"], &["y"], vec![])], vec![])),
        ("MatMul", with(vec![node("MatMul", &["col", "row"], &["y"], vec![])], vec![])),
        (
            "Where",
            with(vec![node("Cast", &["col"], &["c"], vec![int("to", 9)]), node("Where", &["c", "col", "row"], &["y"], vec![])], vec![]),
        ),
        ("Expand", with(vec![node("Expand", &["col", "big"], &["y"], vec![])], vec![i64s("big", &[2], &[65536, 65536])])),
        ("Tile", with(vec![node("Tile", &["col", "reps"], &["y"], vec![])], vec![i64s("reps", &[2], &[1, 65536])])),
        // 256 copies of the column (2^24 elements, under the cap) then 256 copies of that
        (
            "Concat",
            with(
                vec![
                    node("Concat", &vec!["col"; 256], &["c1"], vec![int("axis", 0)]),
                    node("Concat", &vec!["c1"; 256], &["y"], vec![int("axis", 0)]),
                ],
                vec![],
            ),
        ),
        (
            "ConstantOfShape",
            model(13, vec![node("ConstantOfShape", &["big"], &["y"], vec![])], &x, &["y"], vec![i64s("big", &[2], &[65536, 65536])]),
        ),
        (
            "Range",
            model(
                13,
                vec![node("Range", &["a", "b", "d"], &["y"], vec![])],
                &x,
                &["y"],
                vec![i64s("a", &[], &[0]), i64s("b", &[], &[1 << 32]), i64s("d", &[], &[1])],
            ),
        ),
        (
            "Pad",
            model(
                13,
                vec![node("Pad", &["x", "p"], &["y"], vec![string("mode", "reflect")])],
                &x,
                &["y"],
                vec![i64s("p", &[8], &[0, 0, 0, 0, 0, 0, 1 << 31, 1 << 31])],
            ),
        ),
        (
            "Resize",
            model(
                13,
                vec![node("Resize", &["x", "", "sc"], &["y"], vec![])],
                &x,
                &["y"],
                vec![f32s("sc", &[4], &[1.0, 1.0, 16384.0, 16384.0])],
            ),
        ),
    ]
}

fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let r = f();
    (r, PEAK.load(Ordering::SeqCst).saturating_sub(base))
}

#[test]
fn size_bombs_are_refused_before_allocating() {
    let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
    let x = || vec![("x", Tensor::ones(&dev, [1, 1, 4, 4]).unwrap().into())];
    let mut report = Vec::new();
    for (name, bytes) in bombs() {
        assert!(bytes.len() < 4096, "{name}: {} bytes", bytes.len());
        let held = dev.counters().bytes_in_use;
        let (result, peak) = peak_during(|| {
            let session = Session::new(Model::from_bytes(&bytes)?, &dev)?;
            session.run(&x()).map(|_| ())
        });
        let e = result.expect_err(name);
        let requested = match &e {
            OnnxError::Engine { source: CoreError::Budget { requested, limit, .. }, .. } => {
                assert_eq!(*limit, 1 << 28, "{name}: {e}");
                *requested
            }
            other => panic!("{name}: expected a budget error, got {other}"),
        };
        assert!(requested >= 1 << 31, "{name}: asked for {requested} elements: {e}");
        // at most the 64 MiB step of the Concat bomb and a few MiB of constants and scratch
        assert!(peak < 96 << 20, "{name}: {peak} host bytes allocated at the peak");
        assert!(dev.counters().bytes_in_use <= held + (1 << 20), "{name}: device memory grew");
        report.push(format!("{name}: {} bytes of model, {requested} elements asked, {} KiB host peak", bytes.len(), peak >> 10));
    }
    println!("{}", report.join("\n"));
    // the device and a session on it work as before
    let ok = model(13, vec![node("Relu", &["x"], &["y"], vec![])], &[("x", &[1, 1, 4, 4])], &["y"], vec![]);
    let s = Session::new(Model::from_bytes(&ok).unwrap(), &dev).unwrap();
    assert_eq!(s.run(&x()).unwrap()[0].1.to_host().unwrap().to_f32(), vec![1.0; 16]);
}
