//! Backend-specific behaviour: texture layout, pool reuse, Philox bit-exactness, sizes crossing
//! texel boundaries, async readback, pass log, capability report.

use pixelgrad_core::{rng, Backend, Device, Error, Tensor};
use pixelgrad_webgl::{layout, WebGlBackend, WebGlOptions};

fn backend(opts: WebGlOptions) -> WebGlBackend {
    WebGlBackend::new_headless(WebGlOptions { self_test: false, ..opts }).expect("headless WebGL (EGL) context")
}

fn default_backend() -> WebGlBackend {
    backend(WebGlOptions::default())
}

/// Blocks on a future that never waits for anything but the GL fence (polled natively with a
/// bounded wait), so a trivial executor suffices.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
    fn raw() -> RawWaker {
        fn clone(_: *const ()) -> RawWaker {
            raw()
        }
        fn noop(_: *const ()) {}
        static VT: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
        RawWaker::new(std::ptr::null(), &VT)
    }
    // SAFETY: the vtable's functions do nothing, so any data pointer is fine.
    let waker = unsafe { Waker::from_raw(raw()) };
    let mut cx = Context::from_waker(&waker);
    let mut f = Box::pin(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn layout_is_near_square_and_avoids_powers_of_two() {
    assert_eq!(layout(1, 16384, "t", "b").unwrap(), (3, 3));
    // 1000 elements = 250 texels, rounded up to the size grid: 256 = 16 x 16; widths from 8
    // on are multiples of 4 that are not powers of two: 20 wide, 13 high.
    assert_eq!(layout(1000, 16384, "t", "b").unwrap(), (20, 13));
    // Nearby sizes share one texture size (the grid has 8 steps per octave)...
    assert_eq!(layout(961, 16384, "t", "b").unwrap(), (20, 13));
    // ...and one texel more takes the next grid point: 288 texels (steps of 32 above 256).
    assert_eq!(layout(1025, 16384, "t", "b").unwrap(), (20, 15));
    for n in [1usize, 3, 4, 5, 17, 255, 1 << 12, 99_999, 1 << 20] {
        let (w, h) = layout(n, 16384, "t", "b").unwrap();
        let texels = n.div_ceil(4).max(1);
        assert!((w as usize * h as usize) * 4 >= n, "{n}: {w}x{h}");
        // At most 1/8 more texels than the data needs, plus a few rows and columns.
        assert!(w as usize * h as usize <= texels + texels / 8 + 4 * (w + h) as usize, "{n}: {w}x{h}");
        assert!(!w.is_power_of_two() && !h.is_power_of_two(), "{n}: {w}x{h}");
        assert!(w < 8 || w % 4 == 0, "{n}: {w}x{h}");
        assert!(w.abs_diff(h) <= 9 + (w / 8), "{n}: {w}x{h} not near square");
    }
    // Too big for the limit: a Limit error naming MAX_TEXTURE_SIZE.
    match layout(4 * 9 * 9, 8, "upload", "webgl") {
        Err(Error::Limit { limit_name, limit, .. }) => assert_eq!((limit_name, limit), ("MAX_TEXTURE_SIZE", 8)),
        r => panic!("expected a limit error, got {r:?}"),
    }
}

#[test]
fn sizes_crossing_texel_boundaries_round_trip() {
    let b = default_backend();
    let dev = Device::new(b.clone());
    for n in [1usize, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1023, 4097] {
        let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
        let t = Tensor::from_vec(&dev, &data, [n]).unwrap();
        assert_eq!(t.to_vec().unwrap(), data, "upload/read n={n}");
        let y = t.affine(2.0, 1.0).unwrap().to_vec().unwrap();
        let want: Vec<f32> = data.iter().map(|v| v * 2.0 + 1.0).collect();
        assert_eq!(y, want, "affine n={n}");
        let s = t.sum_all().unwrap().item().unwrap() as f64;
        let ws: f64 = data.iter().map(|&v| v as f64).sum();
        assert!((s - ws).abs() <= 1e-5 * ws.abs().max(1.0), "sum n={n}: {s} vs {ws}");
    }
}

#[test]
fn rows_wrap_under_a_small_texture_limit() {
    // With MAX_TEXTURE_SIZE forced to 7, a 150-element tensor (38 texels) is 7 wide and 6 high:
    // element indices wrap across texture rows, and every op must still line up.
    let b = backend(WebGlOptions { max_texture_size: Some(7), ..Default::default() });
    assert_eq!(b.report().effective_max_texture_size, 7);
    let dev = Device::new(b.clone());
    let (m, k, n) = (10, 15, 6);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let c: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 9) as f32 - 4.0).collect();
    let ta = Tensor::from_vec(&dev, &a, [m, k]).unwrap();
    assert_eq!(b.texture_size(ta.storage()), Some((7, 6)));
    let tc = Tensor::from_vec(&dev, &c, [k, n]).unwrap();
    let got = ta.matmul(&tc).unwrap().to_vec().unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k).map(|p| a[i * k + p] * c[p * n + j]).sum();
            assert_eq!(got[i * n + j], want, "({i}, {j})");
        }
    }
    let t = ta.transpose(0, 1).unwrap().to_vec().unwrap();
    for r in 0..k {
        for c in 0..m {
            assert_eq!(t[r * m + c], a[c * k + r], "transpose ({r}, {c})");
        }
    }
    // 7 x 7 texels = 196 elements at most.
    let too_big = Tensor::from_vec(&dev, &vec![0.0; 197], [197]);
    assert!(matches!(too_big, Err(Error::Limit { limit_name: "MAX_TEXTURE_SIZE", .. })), "{too_big:?}");
}

#[test]
fn pool_reuses_textures_when_tensors_drop() {
    // Unfused, so every op below is a draw into a pooled texture.
    let b = backend(WebGlOptions { fuse: false, ..WebGlOptions::default() });
    let dev = Device::new(b.clone());
    let x = Tensor::from_vec(&dev, &[1.0; 1000], [1000]).unwrap();
    // One step of the pattern below allocates its two textures...
    let y = x.exp().unwrap();
    let _ = y.neg().unwrap();
    drop(y);
    let before = b.counters();
    // ...after which every step renders into the two textures the previous step returned.
    for _ in 0..10 {
        let y = x.exp().unwrap();
        let _ = y.neg().unwrap();
    }
    let after = b.counters();
    assert_eq!(after.allocations, before.allocations, "no new textures for same-size results");
    assert_eq!(after.bytes_in_use, before.bytes_in_use);
    assert_eq!(after.launches - before.launches, 20);
    b.trim_pool().unwrap();
    assert!(b.counters().bytes_in_use < after.bytes_in_use);
}

#[test]
fn philox_uniform_is_bit_exact_and_normal_is_close() {
    let b = default_backend();
    let dev = Device::new(b.clone());
    for seed in [0u64, 1, 0xDEAD_BEEF_0123_4567, u64::MAX] {
        let n = 1001;
        let got = Tensor::rand_uniform(&dev, [n], 0.0, 1.0, seed).unwrap().to_vec().unwrap();
        for (i, g) in got.iter().enumerate() {
            let want = rng::uniform(seed, i as u64);
            assert_eq!(g.to_bits(), want.to_bits(), "seed {seed} element {i}");
        }
        let got = Tensor::rand_normal(&dev, [n], 0.0, 1.0, seed).unwrap().to_vec().unwrap();
        for (i, g) in got.iter().enumerate() {
            let want = rng::normal(seed, i as u64);
            assert!((g - want).abs() <= 1e-4 * want.abs().max(1.0), "seed {seed} element {i}: {g} vs {want}");
        }
    }
}

#[test]
fn async_read_matches_blocking_read() {
    let b = default_backend();
    let x = b.upload(&(0..777).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let want = b.read(&x, 777).unwrap();
    let got = block_on(b.read_async(&x, 777)).unwrap();
    assert_eq!(got, want);
    assert_eq!(block_on(b.read_async(&x, 5)).unwrap(), vec![0.0, 1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn pass_log_names_programs_and_sizes() {
    let b = default_backend();
    let dev = Device::new(b.clone());
    let x = Tensor::from_vec(&dev, &[1.0; 64], [8, 8]).unwrap();
    b.set_pass_log(true);
    // The matmul and the sigmoid stay pending until read; the read draws both in one pass,
    // the sigmoid as the matmul's epilogue.
    let y = x.matmul(&x).unwrap().sigmoid().unwrap().neg().unwrap();
    assert!(b.take_pass_log().is_empty(), "nothing is drawn before the read");
    y.to_vec().unwrap();
    let log = b.take_pass_log();
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(log[0].starts_with("matmul.nn + fused sigmoid+neg"), "{log:?}");
    b.set_pass_log(false);
    let _ = x.exp().unwrap();
    assert!(b.take_pass_log().is_empty());
}

/// A permute that moves only size-1 axes (a one-channel NHWC batch turned NCHW, as every
/// image model built from a layer list starts) is a reshape: its consumer reads the input
/// texture as it is, with no copy drawn. A real permutation still draws its copy.
#[test]
fn permuting_only_unit_axes_draws_no_copy() {
    let b = default_backend();
    let dev = Device::new(b.clone());
    let v: Vec<f32> = (0..2 * 6 * 5).map(|i| i as f32).collect();
    let x = Tensor::from_vec(&dev, &v, [2, 6, 5, 1]).unwrap();
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    let xc = Tensor::from_vec(&cpu, &v, [2, 6, 5, 1]).unwrap();
    for (perm, copies) in [([0, 3, 1, 2], 0), ([0, 3, 2, 1], 1)] {
        b.set_pass_log(true);
        let y = x.permute(&perm).unwrap().neg().unwrap();
        let got = y.to_vec().unwrap();
        let log = b.take_pass_log();
        b.set_pass_log(false);
        let want = xc.permute(&perm).unwrap().neg().unwrap().to_vec().unwrap();
        assert_eq!(y.dims(), perm.iter().map(|&p| [2, 6, 5, 1][p]).collect::<Vec<_>>());
        assert_eq!(got, want, "{perm:?}");
        let drawn = log.iter().filter(|l| !l.starts_with("fused neg") && !l.starts_with("neg")).count();
        assert_eq!(drawn, copies, "{perm:?}: {log:?}");
    }
}

#[test]
fn report_and_name() {
    let b = default_backend();
    let r = b.report();
    assert!(b.name().starts_with("webgl ("), "{}", b.name());
    assert!(r.max_texture_size >= 2048);
    assert!(r.float_render_target || r.half_render_target);
    assert!(r.max_draw_buffers >= 1);
    assert_eq!(b.kind(), pixelgrad_core::BackendKind::WebGl);
}

#[test]
fn foreign_storage_is_a_typed_error() {
    let b = default_backend();
    let other = default_backend();
    let s = other.upload(&[1.0, 2.0]).unwrap();
    assert!(matches!(b.read(&s, 2), Err(Error::BackendMismatch { .. })));
}

/// Plain loops: out[b, m, n] = sum_k A[b, m, k] * B[b, k, n] with optional transposes and a
/// batch of 1 broadcasting.
#[allow(clippy::too_many_arguments)]
fn matmul_ref(a: &[f32], b: &[f32], ba: usize, bb: usize, m: usize, k: usize, n: usize, ta: bool, tb: bool) -> Vec<f64> {
    let batch = ba.max(bb);
    let mut out = vec![0.0; batch * m * n];
    for z in 0..batch {
        let (za, zb) = (if ba == 1 { 0 } else { z }, if bb == 1 { 0 } else { z });
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0f64;
                for p in 0..k {
                    let av = if ta { a[za * m * k + p * m + i] } else { a[za * m * k + i * k + p] };
                    let bv = if tb { b[zb * k * n + j * k + p] } else { b[zb * k * n + p * n + j] };
                    s += av as f64 * bv as f64;
                }
                out[(z * m + i) * n + j] = s;
            }
        }
    }
    out
}

#[test]
fn matmul_fast_paths_transposes_and_batch_broadcast_match_loops() {
    let b = default_backend();
    let dev = Device::new(b.clone());
    let gen = |n: usize, seed: u64| -> Vec<f32> { (0..n).map(|i| rng::uniform(seed, i as u64) * 2.0 - 1.0).collect() };
    // (batch a, batch b, m, k, n): k and n multiples of 4 hit the vec4 paths, the rest the
    // general one.
    for (ba, bb, m, k, n) in [(3, 1, 5, 12, 16), (1, 2, 7, 8, 4), (2, 2, 3, 5, 6), (1, 1, 9, 16, 8), (4, 4, 1, 3, 1)] {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let av = gen(ba * m * k, 1);
            let bv = gen(bb * k * n, 2);
            let sa = if ta { [ba, k, m] } else { [ba, m, k] };
            let sb = if tb { [bb, n, k] } else { [bb, k, n] };
            let x = Tensor::from_vec(&dev, &av, sa).unwrap();
            let y = Tensor::from_vec(&dev, &bv, sb).unwrap();
            let got = x.matmul_t(&y, ta, tb).unwrap().to_vec().unwrap();
            let want = matmul_ref(&av, &bv, ba, bb, m, k, n, ta, tb);
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((*g as f64 - w).abs() <= 1e-5 * (k as f64).sqrt(), "{ba}x{bb} {m}x{k}x{n} t=({ta},{tb}) [{i}]: {g} vs {w}");
            }
        }
    }
}

#[test]
fn concat_of_many_inputs_runs_in_passes() {
    let b = default_backend();
    let dev = Device::new(b.clone());
    let parts: Vec<Vec<f32>> = (0..9).map(|j| (0..2 * (j + 1) * 3).map(|i| (100 * j + i) as f32).collect()).collect();
    let ts: Vec<Tensor> = parts.iter().enumerate().map(|(j, p)| Tensor::from_vec(&dev, p, [2, j + 1, 3]).unwrap()).collect();
    let refs: Vec<&Tensor> = ts.iter().collect();
    b.set_pass_log(true);
    let out = Tensor::concat(&refs, 1).unwrap();
    let passes = b.take_pass_log();
    assert_eq!(passes.iter().filter(|p| p.starts_with("concat")).count(), 4, "3 groups + 1 join: {passes:?}");
    let got = out.to_vec().unwrap();
    let mut want = Vec::new();
    for o in 0..2 {
        for (j, p) in parts.iter().enumerate() {
            want.extend_from_slice(&p[o * (j + 1) * 3..(o + 1) * (j + 1) * 3]);
        }
    }
    assert_eq!(got, want);
}

#[test]
fn direct_execute_with_wrong_arguments_is_an_error() {
    use pixelgrad_core::{Op, Shape, UnaryOp};
    let b = default_backend();
    let x = b.upload(&[1.0, 2.0]).unwrap();
    let s = Shape::from([2]);
    let r = b.execute(&Op::Binary(pixelgrad_core::BinaryOp::Add), &[&x], &[&s], &s);
    assert!(matches!(r, Err(Error::Shape { .. })));
    let r = b.execute(&Op::Unary(UnaryOp::Exp), &[&x], &[&s], &Shape::from([3]));
    assert!(matches!(r, Err(Error::Shape { .. })));
    let r = b.execute(&Op::Unary(UnaryOp::Exp), &[], &[&s], &s);
    assert!(matches!(r, Err(Error::Shape { .. })));
}

#[test]
fn bad_indices_surface_at_the_next_read_even_downstream() {
    let b = default_backend();
    let dev = Device::new(b.clone());
    let x = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3]).unwrap();
    let good = Tensor::from_vec(&dev, &[2.0, 0.0], [2, 1]).unwrap();
    assert_eq!(x.gather(1, &good).unwrap().to_vec().unwrap(), vec![3.0, 4.0]);
    // A bad index, then more work on the result: the error comes with the read of the loss.
    let bad = Tensor::from_vec(&dev, &[1.0, 3.0], [2, 1]).unwrap();
    let loss = x.gather(1, &bad).unwrap().exp().unwrap().sum_all().unwrap();
    match loss.to_vec() {
        Err(e @ Error::Backend { op: "gather", .. }) => assert!(e.to_string().contains("out of range 0..3"), "{e}"),
        r => panic!("expected a gather error, got {r:?}"),
    }
    // Reported once; the backend stays usable.
    assert_eq!(x.sum_all().unwrap().item().unwrap(), 21.0);
    // Many checks queued without a read are folded, and a good run still reads fine.
    for _ in 0..40 {
        let _ = x.gather(1, &good).unwrap();
    }
    assert_eq!(x.gather(1, &good).unwrap().to_vec().unwrap(), vec![3.0, 4.0]);
}
