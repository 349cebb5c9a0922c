//! `Op::MatMul` with one operand in f16 storage, read directly by the tiled f16-storage matmul (no widen
//! launch): against the CPU's f64 product of the widened values, for A or B in f16, rank 2
//! and 3 (batched and broadcast), every transpose, odd sizes; pending fused f32 operands; step
//! plans; and the typed errors where f16 cannot go.

mod common;

use common::{close, data};
use pixelgrad_core::half::f16;
use pixelgrad_core::kernel::DType;
use pixelgrad_core::{Backend, Device, Error, Tensor};
use pixelgrad_wgpu::{MatmulKernel, WgpuBackend, WgpuOptions};

/// The tiled matmul kernels, where the f16 one runs (CPU adapters such as lavapipe otherwise
/// take the register kernels and widen f16 weights first).
fn tiled(opts: WgpuOptions) -> WgpuBackend {
    WgpuBackend::new(WgpuOptions { matmul: MatmulKernel::Tiled, ..opts }).expect("a WebGPU adapter (lavapipe in CI)")
}

fn backend() -> WgpuBackend {
    tiled(WgpuOptions::default())
}

trait ShaderF16 {
    fn backend_shader_f16(&self) -> bool;
}
impl ShaderF16 for WgpuBackend {
    fn backend_shader_f16(&self) -> bool {
        self.caps().shader_f16 == Some(true)
    }
}

fn halves(n: usize, salt: u64) -> Vec<f16> {
    data(n, salt, -2.0, 2.0).iter().map(|&x| f16::from_f32(x)).collect()
}

/// The f64 product of `a` [ba?, m, k] (or [k, m] when `ta`) and `b`, batch 1 broadcasting.
#[allow(clippy::too_many_arguments)]
fn reference(a: &[f32], b: &[f32], ba: usize, bb: usize, m: usize, n: usize, k: usize, ta: bool, tb: bool) -> Vec<f64> {
    reference_abs(a, b, ba, bb, m, n, k, ta, tb, false)
}

/// [`reference`], or with `abs` the sums of |a·b| (what bounds f16 rounding of each product).
#[allow(clippy::too_many_arguments)]
fn reference_abs(a: &[f32], b: &[f32], ba: usize, bb: usize, m: usize, n: usize, k: usize, ta: bool, tb: bool, abs: bool) -> Vec<f64> {
    let batch = ba.max(bb);
    let mut out = vec![0.0; batch * m * n];
    for z in 0..batch {
        let (ao, bo) = (if ba > 1 { z * m * k } else { 0 }, if bb > 1 { z * k * n } else { 0 });
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0f64;
                for p in 0..k {
                    let av = if ta { a[ao + p * m + i] } else { a[ao + i * k + p] };
                    let bv = if tb { b[bo + j * k + p] } else { b[bo + p * n + j] };
                    let p = av as f64 * bv as f64;
                    s += if abs { p.abs() } else { p };
                }
                out[z * m * n + i * n + j] = s;
            }
        }
    }
    out
}

fn dims(batch: usize, r: usize, c: usize) -> Vec<usize> {
    if batch == 0 {
        vec![r, c]
    } else {
        vec![batch, r, c]
    }
}

/// Every case: f16 A or B, transposes, rank 2 (batch 0) or 3, broadcast batches; with f32
/// arithmetic (`f16_arithmetic: false`): f32 rounding of the exact widened values; with f16
/// products where the adapter has shader-f16: within two f16 roundings per product (the f32
/// operand's and the product's), 2^-10 of the sum of |a·b|.
#[test]
fn f16_operand_matches_the_f32_product_of_the_widened_values() {
    for f16_arithmetic in [false, true] {
        let b = tiled(WgpuOptions { f16_arithmetic, ..WgpuOptions::default() });
        let f16_products = f16_arithmetic && b.backend_shader_f16();
        let want = if f16_products { "f16 products (shader-f16)" } else { "f32 (f16 weights read directly)" };
        assert_eq!(b.f16_matmul_path(), want);
        println!("{}", b.f16_matmul_path());
        check_products(Device::new(b), f16_products);
    }
}

fn check_products(dev: Device, f16_products: bool) {
    assert!(dev.backend().caps().f16_matmul);
    let shapes = [(1, 1, 1), (3, 5, 7), (17, 33, 9), (64, 64, 64), (65, 31, 130), (2, 129, 67)];
    let mut salt = 0;
    for &(m, n, k) in &shapes {
        for (ba, bb) in [(0, 0), (2, 2), (3, 1), (1, 3)] {
            for f16_b in [false, true] {
                for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                    salt += 1;
                    let (ad, bd) = (if ta { dims(ba, k, m) } else { dims(ba, m, k) }, if tb { dims(bb, n, k) } else { dims(bb, k, n) });
                    let (na, nb) = (ad.iter().product::<usize>(), bd.iter().product::<usize>());
                    let (a, b, av, bv);
                    if f16_b {
                        av = data(na, salt, -1.0, 1.0);
                        let h = halves(nb, salt + 1000);
                        bv = h.iter().map(|x| x.to_f32()).collect::<Vec<_>>();
                        a = Tensor::from_vec(&dev, &av, ad.clone()).unwrap();
                        b = Tensor::from_f16(&dev, &h, bd.clone()).unwrap();
                    } else {
                        let h = halves(na, salt + 1000);
                        av = h.iter().map(|x| x.to_f32()).collect::<Vec<_>>();
                        bv = data(nb, salt, -1.0, 1.0);
                        a = Tensor::from_f16(&dev, &h, ad.clone()).unwrap();
                        b = Tensor::from_vec(&dev, &bv, bd.clone()).unwrap();
                    }
                    let what = format!("{m}x{n}x{k} batches {ba}/{bb} f16_b {f16_b} trans {ta}/{tb}");
                    let y = a.matmul_t(&b, ta, tb).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(y.storage_dtype(), DType::F32);
                    let want = reference(&av, &bv, ba.max(1), bb.max(1), m, n, k, ta, tb);
                    let got = y.to_vec().unwrap();
                    if f16_products {
                        let mag = reference_abs(&av, &bv, ba.max(1), bb.max(1), m, n, k, ta, tb, true);
                        for (i, ((&g, &w), &s)) in got.iter().zip(&want).zip(&mag).enumerate() {
                            assert!(
                                (g as f64 - w).abs() <= 2f64.powi(-10) * s + 1e-6,
                                "{what}: element {i}: got {g}, want {w} (sum |ab| {s})"
                            );
                        }
                    } else {
                        // f32 arithmetic on the exact widened halves: f32 rounding only.
                        close(&got, &want, 1e-5, 1e-5 * k as f64, &what);
                    }
                }
            }
        }
    }
}

/// The f32 operand may be a pending fused computation (materialised first), the product may
/// feed fused ops, and no widen launch runs for the f16 weights.
#[test]
fn pending_inputs_and_no_widen_launch() {
    let b = backend();
    b.set_launch_log(true);
    let b = std::rc::Rc::new(b);
    let dev = Device::from_rc(b.clone());
    let (m, k, n) = (19, 40, 23);
    let h = halves(k * n, 7);
    let w = Tensor::from_f16(&dev, &h, [k, n]).unwrap();
    let xv = data(m * k, 8, -1.0, 1.0);
    let x = Tensor::from_vec(&dev, &xv, [m, k]).unwrap();
    let _ = b.take_launch_log();
    let y = x.mul_scalar(2.0).unwrap().add_scalar(0.5).unwrap().matmul(&w).unwrap().relu().unwrap();
    let got = y.to_vec().unwrap();
    let log = b.take_launch_log();
    assert!(log.iter().any(|l| l.contains("matmul_f16")), "{log:?}");
    assert!(!log.iter().any(|l| l.contains("widen")), "{log:?}");
    let x2: Vec<f32> = xv.iter().map(|&v| v * 2.0 + 0.5).collect();
    let wv: Vec<f32> = h.iter().map(|x| x.to_f32()).collect();
    let want: Vec<f64> = reference(&x2, &wv, 1, 1, m, n, k, false, false).into_iter().map(|v| v.max(0.0)).collect();
    close(&got, &want, 1e-5, 1e-4, "fused into and out of an f16 matmul");
}

/// Inside repeated steps the f16 matmul is recorded and replayed like any launch.
#[test]
fn works_inside_step_plans() {
    let dev = Device::new(backend());
    let (m, k, n) = (9, 70, 33);
    let h = halves(m * k, 3);
    let w = Tensor::from_f16(&dev, &h, [m, k]).unwrap();
    let wv: Vec<f32> = h.iter().map(|x| x.to_f32()).collect();
    for step in 0..6u64 {
        let xv = data(k * n, 100 + step, -1.0, 1.0);
        let before = dev.counters();
        let y = dev.step(5, || w.matmul(&Tensor::from_vec(&dev, &xv, [k, n])?)).unwrap();
        let after = dev.counters();
        close(&y.to_vec().unwrap(), &reference(&wv, &xv, 1, 1, m, n, k, false, false), 1e-5, 1e-4, &format!("step {step}"));
        if step >= 4 {
            assert_eq!(after.allocations, before.allocations, "step {step} allocated");
            assert!(after.replayed > before.replayed, "step {step}: {before:?} -> {after:?}");
        }
        drop(y);
    }
}

fn shape_err(r: pixelgrad_core::Result<Tensor>, what: &str) -> String {
    match r {
        Err(Error::Shape { msg, .. }) => msg,
        Err(e) => panic!("{what}: wrong error {e}"),
        Ok(_) => panic!("{what}: accepted"),
    }
}

/// Both operands f16, an f16 operand that asks for a gradient, f16 into other ops, and any
/// f16 matmul on a backend without support: typed errors.
#[test]
fn typed_errors_where_f16_cannot_go() {
    let dev = Device::new(backend());
    let h = halves(12, 1);
    let a = Tensor::from_f16(&dev, &h, [3, 4]).unwrap();
    let b = Tensor::from_f16(&dev, &h, [4, 3]).unwrap();
    let msg = shape_err(a.matmul(&b), "two f16 operands");
    assert!(msg.contains("at most one"), "{msg}");
    let x = Tensor::from_vec(&dev, &data(12, 2, -1.0, 1.0), [4, 3]).unwrap().with_grad();
    // The f32 side may want a gradient (the f16 one is a constant) ...
    let y = a.matmul(&x).unwrap().sum_all().unwrap();
    y.backward().unwrap();
    assert_eq!(x.grad().unwrap().dims(), &[4, 3]);
    // ... the f16 one may not.
    let msg = shape_err(a.with_grad().matmul(&x), "f16 with grad");
    assert!(msg.contains("gradient"), "{msg}");
    shape_err(a.add(&a), "f16 into add");
    // With f16_matmul off WebGPU reports no support and refuses, as the CPU does.
    let off = Device::new(tiled(WgpuOptions { f16_matmul: false, ..WgpuOptions::default() }));
    // The register kernels (CPU adapters' default) have no f16 variant: no support there.
    let regs = WgpuBackend::new(WgpuOptions { matmul: MatmulKernel::Registers, ..WgpuOptions::default() }).unwrap();
    assert!(!regs.caps().f16_matmul);
    assert!(!off.backend().caps().f16_matmul);
    let a_off = Tensor::from_f16(&off, &h, [3, 4]).unwrap();
    let x_off = Tensor::from_vec(&off, &data(12, 2, -1.0, 1.0), [4, 3]).unwrap();
    let msg = shape_err(a_off.matmul(&x_off), "webgpu f16 matmul turned off");
    assert!(msg.contains("widen it first"), "{msg}");
    assert_eq!(a_off.widen().unwrap().matmul(&x_off).unwrap().dims(), &[3, 3]);
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    assert!(!cpu.backend().caps().f16_matmul);
    if cpu.backend().caps().f16_storage {
        let a = Tensor::from_f16(&cpu, &h, [3, 4]).unwrap();
        let x = Tensor::from_vec(&cpu, &data(12, 2, -1.0, 1.0), [4, 3]).unwrap();
        let msg = shape_err(a.matmul(&x), "cpu f16 matmul");
        assert!(msg.contains("widen it first"), "{msg}");
    }
}
