//! The `webgl1` mode (GLSL ES 1.00 programs, WebGL1's feature set) natively: every program is
//! compiled by the driver (Mesa accepts `#version 100` shaders in its ES 3 context), the
//! conformance families pass, the MLP presets train to the CPU's losses with
//! every optimizer, and what WebGL1 cannot do fails with a typed error.

use std::ops::ControlFlow;

use pixelgrad_core::{Device, Error, Tensor, Window};
use pixelgrad_cpu::CpuBackend;
mod support;

use pixelgrad_nn::presets::Preset;
use pixelgrad_nn::train::{fit, Callbacks, FitOptions, Samples, StepLog};
use pixelgrad_nn::OptimizerKind;
use pixelgrad_webgl::dialect::{self, ProgramSpec};
use pixelgrad_webgl::{HeatmapOptions, WebGlBackend, WebGlOptions};

fn backend() -> WebGlBackend {
    WebGlBackend::new_headless(WebGlOptions { webgl1: true, self_test: false, ..Default::default() })
        .expect("headless webgl1 (EGL) context")
}

fn make_device() -> Device {
    Device::new(backend())
}

// Every family (the shared list, so a new family runs here too): each op (conv's im2col /
// col2im and the depthwise convolution included), the IEEE edge cases (NaN tested
// arithmetically, `x * u_zero`, see shaders/header.glsl), the composites, the image
// transforms (tensor ops; GPU pixel import itself does not exist in this mode) and both
// training curves.
pixelgrad_conformance::conformance_tests!(make_device);

#[test]
fn reports_the_mode_and_names_the_backend_webgl1() {
    let b = backend();
    let r = b.report();
    assert!(r.webgl1, "{r:?}");
    assert!(r.float_render_target);
    assert!(pixelgrad_core::Backend::name(&b).starts_with("webgl1 ("), "{}", pixelgrad_core::Backend::name(&b));
}

#[test]
fn every_gl1_program_compiles_and_links() {
    // warm_up compiles every body in every config and every elementwise definition.
    let b = backend();
    let n = b.warm_up().expect("every GLSL ES 1.00 program compiles");
    assert!(n > 20, "{n} programs");
    for (label, src) in pixelgrad_webgl::gl1::all_sources().unwrap() {
        assert!(src.starts_with("#version 100\n"), "{label}");
        // The code without comments and without its GLSL ES 3.00 sections uses none of what
        // GLSL ES 1.00 lacks.
        let code: String = without_es300_sections(&src).iter().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        for banned in ["texelFetch", "textureSize", "layout(", "gl_VertexID", "gl_FragData", " % ", " & ", ">>", "<<", "uint", "out vec4"] {
            assert!(!code.contains(banned), "{label} uses {banned}:\n{src}");
        }
    }
}

/// The lines of `src` outside its `#ifdef PG_ES300` groups (up to their `#else`), the sections
/// a source shared by both GLSL versions keeps for GLSL ES 3.00 (`glsl::Table::flag`).
fn without_es300_sections(src: &str) -> Vec<&str> {
    let mut out = Vec::new();
    // Nesting depth of conditionals, and the depth of the ES 3.00 group being skipped.
    let (mut depth, mut skip) = (0usize, None);
    for line in src.lines() {
        let t = line.trim_start();
        if t.starts_with("#if") {
            depth += 1;
            if skip.is_none() && t.split_whitespace().collect::<Vec<_>>() == ["#ifdef", "PG_ES300"] {
                skip = Some(depth);
                continue;
            }
        } else if t.starts_with("#endif") {
            depth -= 1;
            if skip == Some(depth + 1) {
                skip = None;
                continue;
            }
        } else if (t.starts_with("#else") || t.starts_with("#elif")) && skip == Some(depth) {
            skip = None;
            continue;
        }
        if skip.is_none() {
            out.push(line);
        }
    }
    out
}

#[test]
fn es300_sections_are_left_out_of_the_gl1_check() {
    let src = "a\n#ifdef PG_ES300\nb\n#if X\nc\n#endif\n#else\nd\n#endif\ne\n#ifdef PG_ES300\nf\n#endif\ng";
    assert_eq!(without_es300_sections(src), ["a", "d", "#endif", "e", "g"]);
}

#[test]
fn one_file_serves_both_versions() {
    // Every program of the webgl1 mode that has no ES 1.00 body of its own is drawn from the
    // GLSL ES 3.00 file, text for text, after the same header.
    let header = pixelgrad_webgl::glsl::HEADER;
    for (name, configs) in pixelgrad_webgl::gl1::PROGRAMS {
        let es100 = pixelgrad_webgl::gl1::fragment_source(&ProgramSpec::new(name, configs[0])).unwrap();
        assert!(es100.contains(header), "{name}");
        let body = dialect::BODIES.iter().find(|(n, _)| n == name).unwrap().1;
        assert!(es100.contains(body), "{name}: not the shared file");
        let es300 = dialect::fragment_source(&ProgramSpec::new(name, configs[0])).unwrap();
        assert!(es300.contains(body) && es300.contains(header), "{name}");
    }
    let frag = |s: &str| s.lines().next().unwrap().to_string();
    assert_eq!(frag(&pixelgrad_webgl::gl1::vertex_source()), "#version 100");
    assert_eq!(frag(&dialect::vertex_source()), "#version 300 es");
}

#[test]
fn no_body_is_written_for_gl1_alone() {
    // Every program of this mode is a file shared with GLSL ES 3.00 or rendered from the
    // kernel IR (the reductions were the last, in shaders/gl1/).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/shaders/gl1");
    assert!(!dir.exists(), "{} is back", dir.display());
    for (name, _) in pixelgrad_webgl::gl1::PROGRAMS {
        assert!(dialect::BODIES.iter().any(|(n, _)| n == name), "{name}");
    }
}

#[test]
fn float_index_arithmetic_is_exact_at_the_size_limit() {
    // Element indices up to 2^22 - 1 go through pg_divmod and texel-centre coordinates: a
    // strided copy (permute) of a tensor near the limit must move every element exactly.
    let dev = make_device();
    let (r, c) = (2047, 2047);
    let data: Vec<f32> = (0..r * c).map(|i| i as f32).collect();
    let x = Tensor::from_vec(&dev, &data, [r, c]).unwrap();
    let t = x.transpose(0, 1).unwrap().to_vec().unwrap();
    for (k, &v) in t.iter().enumerate() {
        let (i, j) = (k / r, k % r);
        assert_eq!(v, (j * c + i) as f32, "element {k}");
    }
    // Past the limit: a typed error naming it, not wrong indices.
    let err = Tensor::zeros(&dev, [(1 << 22) + 1]).and_then(|t| t.to_vec()).unwrap_err();
    assert!(matches!(err, Error::Limit { limit: 4194304, .. }), "{err:?}");
    assert!(err.to_string().contains("webgl1"), "{err}");
}

#[test]
fn what_webgl1_cannot_do_is_a_typed_error() {
    let b = backend();
    let dev = Device::new(b.clone());
    // A K longer than the matmul loop's constant bound.
    let k = pixelgrad_webgl::gl1::MAX_LOOP + 1;
    let a = Tensor::ones(&dev, [1, k]).unwrap();
    let w = Tensor::ones(&dev, [k, 1]).unwrap();
    let err = a.matmul(&w).and_then(|t| t.to_vec()).unwrap_err();
    assert!(matches!(err, Error::Limit { op: "matmul", limit: 65536, .. }), "{err:?}");
    // More taps inside the image than the window loops' constant bound: the window and the
    // image both wider than MAX_WINDOW. (A 2^15 window on a small image runs: the loops visit
    // only the taps inside the image; see the conformance family huge_windows.)
    let side = pixelgrad_webgl::gl1::MAX_WINDOW + 1;
    let img = Tensor::ones(&dev, [1, 1, 2, side]).unwrap();
    let wide = Window { kh: 1, kw: side, stride_h: 1, stride_w: 1, pad_h: 0, pad_w: 0 };
    for r in [img.max_pool(wide), img.depthwise_conv(&Tensor::ones(&dev, [1, 1, 1, side]).unwrap(), wide)] {
        let err = r.and_then(|t| t.to_vec()).unwrap_err();
        assert!(matches!(err, Error::Limit { limit: 64, .. }), "{err:?}");
    }
    // The heatmap renderer (RGBA8 targets, its own main) does not exist in this mode.
    let t = Tensor::ones(&dev, [2, 2]).unwrap();
    let err = b.render_heatmap_tensor(&t, HeatmapOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Backend { .. }) && err.to_string().contains("webgl1"), "{err}");
    // Half-float storage on request (the storage of a device that renders only half floats).
    let half = WebGlBackend::new_headless(WebGlOptions { webgl1: true, force_half_float: true, ..Default::default() }).unwrap();
    assert_eq!(half.report().format, pixelgrad_webgl::TexelFormat::Rgba16F);
    assert!(half.report().warnings.iter().any(|w| w.contains("half-float storage forced")), "{:?}", half.report().warnings);
}

#[test]
fn self_test_passes_in_webgl1_mode() {
    let b = WebGlBackend::new_headless(WebGlOptions { webgl1: true, ..Default::default() }).unwrap();
    let st = b.report().self_test.unwrap();
    assert!(st.max_rel_error < 1e-4, "{st:?}");
}

struct Losses(Vec<f32>);
impl Callbacks for Losses {
    fn on_step(&mut self, log: &StepLog) -> ControlFlow<()> {
        self.0.push(log.loss);
        ControlFlow::Continue(())
    }
}

/// Trains `preset` on the digits for `epochs` with `opt` and returns the logged losses and the
/// final test accuracy.
fn train(dev: &Device, preset: Preset, opt: &str, epochs: usize) -> (Vec<f32>, f32) {
    let (train, test, model) = support::digits_for(dev, preset);
    let shape = train.shape();
    let lr = match opt {
        "sgd" | "momentum" | "nesterov" => 0.05,
        _ => 0.003,
    };
    let mut o = OptimizerKind::parse(opt).unwrap().build(lr);
    let s = Samples::new(train.images(), &shape, train.labels()).unwrap();
    let t = Samples::new(test.images(), &shape, test.labels()).unwrap();
    let opts = FitOptions { epochs, batch_size: 32, read_every: 1, seed: 5, checkpoint_every: Some(0), ..Default::default() };
    let mut losses = Losses(Vec::new());
    let h = fit(&model, o.as_mut(), preset.loss(), dev, s, Some(t), &opts, &mut losses).unwrap();
    let acc = h.epochs.last().and_then(|e| e.test_accuracy).unwrap();
    (losses.0, acc)
}

fn assert_matches_cpu(preset: Preset, opt: &str, epochs: usize) {
    let (gl, gl_acc) = train(&make_device(), preset, opt, epochs);
    let (cpu, cpu_acc) = train(&Device::new(CpuBackend::new()), preset, opt, epochs);
    assert_eq!(gl.len(), cpu.len());
    for (i, (a, b)) in gl.iter().zip(&cpu).take(50).enumerate() {
        let rel = (a - b).abs() / b.abs().max(1e-6);
        assert!(rel < 1e-3, "{preset:?}/{opt}: step {} loss {a} on webgl1, {b} on cpu (relative {rel:.2e})", i + 1);
    }
    assert!((gl_acc - cpu_acc).abs() <= 0.005, "{preset:?}/{opt}: accuracy {gl_acc} on webgl1, {cpu_acc} on cpu");
    assert!(gl.last().unwrap() < gl.first().unwrap(), "{preset:?}/{opt} did not learn: {gl:?}");
}

#[test]
fn mlp_preset_trains_like_the_cpu_with_sgd_and_adam() {
    assert_matches_cpu(Preset::Mlp, "sgd", 1);
    assert_matches_cpu(Preset::Mlp, "adam", 1);
}

#[test]
fn seed_mlp_preset_trains_like_the_cpu() {
    assert_matches_cpu(Preset::SeedMlp, "sgd", 1);
}

#[test]
fn every_optimizer_trains_like_the_cpu() {
    for opt in ["momentum", "nesterov", "adamw", "rmsprop"] {
        assert_matches_cpu(Preset::Mlp, opt, 1);
    }
}

/// WebGL1 has no integer textures. 8-bit tensors are stored in byte textures (one byte per
/// element) and widened exactly, but there is no 8-bit arithmetic (`caps.int8` false, true
/// for a WebGL2 context); f16 storage falls back to f32 tensors of the same values; the narrow
/// entry points without a WebGL1 form are typed errors naming the missing feature.
#[test]
fn narrow_storage_falls_back_to_f32_and_errors_name_the_missing_feature() {
    use pixelgrad_core::half::f16;
    use pixelgrad_core::kernel::DType;
    use pixelgrad_core::{Backend, Op, Shape};
    let b = backend();
    assert!(!b.caps().f16_storage && !b.caps().int8 && b.caps().int8_storage);
    let gl2 = WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).unwrap();
    assert!(gl2.caps().f16_storage && gl2.caps().int8, "the answers are per context");
    let dev = Device::new(b.clone());
    let h: Vec<f16> = [1.5f32, -0.0, 65504.0, f32::INFINITY].iter().map(|&v| f16::from_f32(v)).collect();
    let t = Tensor::from_f16(&dev, &h, [4]).unwrap();
    assert_eq!(t.storage_dtype(), DType::F32);
    let launches = dev.counters().launches;
    let w = t.widen().unwrap();
    assert_eq!((w.id(), dev.counters().launches), (t.id(), launches));
    let got = w.to_vec().unwrap();
    assert_eq!(got, vec![1.5, -0.0, 65504.0, f32::INFINITY]);
    assert!(got[1].is_sign_negative());
    // 8-bit values in byte textures, every value of both types (odd lengths: a partial last
    // texel), read back and widened exactly.
    let i8s: Vec<i8> = (0..=255u8).map(|v| v as i8).chain([5, -7, 0]).collect();
    let q = Tensor::from_i8(&dev, &i8s, [i8s.len()]).unwrap();
    assert_eq!(q.storage_dtype(), DType::I8);
    let want: Vec<f32> = i8s.iter().map(|&v| v as f32).collect();
    assert_eq!(q.to_vec().unwrap(), want);
    let qw = q.widen().unwrap();
    assert_eq!(qw.storage_dtype(), DType::F32);
    assert_eq!(qw.add(&qw).unwrap().to_vec().unwrap(), want.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
    let u8s: Vec<u8> = (0..=255u8).chain([9]).collect();
    let u = Tensor::from_u8(&dev, &u8s, [u8s.len()]).unwrap();
    assert_eq!(u.storage_dtype(), DType::U8);
    assert_eq!(u.widen().unwrap().to_vec().unwrap(), u8s.iter().map(|&v| v as f32).collect::<Vec<_>>());
    // No 8-bit arithmetic: matmul_i8 and narrow8 are typed errors naming what is missing.
    let bm = Tensor::from_vec(&dev, &[1.0, 2.0], [2, 1]).unwrap();
    let u2 = Tensor::from_u8(&dev, &[0, 255], [1, 2]).unwrap();
    match u2.matmul_i8(&bm) {
        Err(e @ Error::Backend { op: "matmul_i8", .. }) => assert!(e.to_string().contains("WebGL1"), "{e}"),
        r => panic!("expected a typed matmul_i8 error, got {:?}", r.err()),
    }
    assert!(matches!(bm.narrow8(true), Err(Error::Backend { op: "narrow8", .. })));
    let x = b.upload(&[1.0, 2.0]).unwrap();
    let s = Shape::from([2]);
    assert!(matches!(b.execute(&Op::Widen, &[&x], &[&s], &s), Err(Error::Shape { op: "widen", .. })));
    match b.upload_f16(&[0x3c00]) {
        Err(e @ Error::Backend { op: "upload_f16", .. }) => {
            let m = e.to_string();
            assert!(m.contains("RGBA16UI") && m.contains("WebGL1"), "{m}");
        }
        r => panic!("expected a typed upload_f16 error, got {:?}", r.err()),
    }
    // No f16 results either: mixed precision is not offered (it keeps its f32 path), and
    // narrow_f16 is a typed error, in core and called directly.
    assert!(!b.caps().narrow_f16 && gl2.caps().narrow_f16);
    assert!(!pixelgrad_core::mixed_precision_available(&dev));
    let f = Tensor::from_vec(&dev, &[1.0, 2.0], [2]).unwrap();
    assert!(matches!(f.narrow_f16(), Err(Error::Backend { op: "narrow_f16", .. })));
    match b.execute(&Op::NarrowF16, &[&x], &[&s], &s) {
        Err(e @ Error::Backend { op: "narrow_f16", .. }) => {
            let m = e.to_string();
            assert!(m.contains("RGBA16UI") && m.contains("WebGL1"), "{m}");
        }
        r => panic!("expected a typed narrow_f16 error, got {:?}", r.err()),
    }
    // The device still works.
    assert_eq!(Tensor::from_vec(&dev, &[1.0, 2.0], [2]).unwrap().exp().unwrap().dims(), &[2]);
}

#[test]
fn fused_reductions_scan_elements_only() {
    // A fused reduction in this mode reads each element through pg_load in one loop: no
    // pg_load4 and no texel loop (with them, some top-k prologues took SwiftShader minutes to
    // compile: bench/notes/2026-12-07-reductions-texel-loop.md), in every form of the read.
    let mut seen = 0;
    for (label, src) in pixelgrad_webgl::gl1::all_sources().unwrap() {
        if !label.starts_with("reduce") || label.starts_with("reduce_") {
            continue;
        }
        seen += 1;
        // The texel loop is kept only under `#ifdef PG_LOAD4` (glsl::fused_program_body).
        assert!(!src.contains("#define PG_LOAD4") && !src.contains("vec4 pg_load4("), "{label}");
        let kept = src.split_once("#ifdef PG_LOAD4\n").and_then(|(_, rest)| rest.split_once("#else\n")).map(|(_, e)| e).unwrap();
        let kept = kept.split_once("#endif\n").unwrap().0;
        assert_eq!(kept.matches("for (float d_v").count(), 1, "{label}:\n{kept}");
    }
    assert!(seen > 0);
}
