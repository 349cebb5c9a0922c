//! The precision emulation (`WebGlOptions::emulate_precision`, a test mode): both GLSL
//! dialects round to half exactly as the `half` crate does, in the fragment programs of a real
//! driver (Mesa llvmpipe); the emulated device without highp is refused in both modes; and
//! emulated half arithmetic changes what training computes.

use pixelgrad_core::{Device, Error, Tensor};
use pixelgrad_webgl::{EmulatedPrecision, WebGlBackend, WebGlOptions};

fn backend(webgl1: bool, emulate: Option<EmulatedPrecision>) -> WebGlBackend {
    WebGlBackend::new_headless(WebGlOptions { webgl1, self_test: false, emulate_precision: emulate, ..Default::default() })
        .expect("headless WebGL (EGL) context")
}

/// `x` as the emulation holds it: the nearest half (ties to even), finite values past the half
/// range saturated at +-65504.
fn reference(x: f32) -> f32 {
    let c = if x.is_finite() { x.clamp(-65504.0, 65504.0) } else { x };
    half::f16::from_f32(c).to_f32()
}

/// Values of every half binade and beyond, random mantissas, exact ties between neighbouring
/// halves (normal and subnormal) and the edges of the range.
fn sweep() -> Vec<f32> {
    let mut out = Vec::new();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for e in -30i32..=18 {
        for _ in 0..64 {
            let m = (next() >> 41) as u32 & 0x7f_ffff;
            let bits = (((e + 127) as u32) << 23) | m;
            let v = f32::from_bits(bits);
            out.push(v);
            out.push(-v);
        }
    }
    // Ties: the midpoint of two neighbouring halves is exact in f32 and must round to even.
    for h in (0u16..0x7bff).step_by(97) {
        let (a, b) = (half::f16::from_bits(h).to_f32(), half::f16::from_bits(h + 1).to_f32());
        let mid = (a + b) / 2.0;
        out.extend([mid, -mid, f32::from_bits(mid.to_bits() + 1), f32::from_bits(mid.to_bits() - 1)]);
    }
    let two = |e: i32| 2f32.powi(e);
    out.extend([
        0.0,
        -0.0,
        1.0,
        -1.0,
        65504.0,
        65519.0,
        65520.0,
        -65520.0,
        1e6,
        -3e38,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        two(-14),
        two(-24),
        two(-25),
        1.5 * two(-25),
        3.0 * two(-26),
        two(-26),
        1e-8,
        two(-14) - two(-25),
        2049.0,
        2051.0,
        4097.0,
    ]);
    out
}

fn assert_rounds_like_half(webgl1: bool) {
    let xs = sweep();
    let d = Device::new(backend(webgl1, Some(EmulatedPrecision::Half)));
    let got = Tensor::from_vec(&d, &xs, [xs.len()]).unwrap().neg().unwrap().to_vec().unwrap();
    let mut bad = Vec::new();
    for (&x, &g) in xs.iter().zip(&got) {
        let want = -reference(x);
        if g.to_bits() != want.to_bits() {
            bad.push(format!("{x:e} ({:#010x}): got {g:e}, want {want:e}", x.to_bits()));
        }
    }
    assert!(
        bad.is_empty(),
        "webgl1 {webgl1}: {} of {} values differ from the half crate, e.g. {:?}",
        bad.len(),
        xs.len(),
        &bad[..bad.len().min(8)]
    );
    // Without the emulation the same program is exact in f32 (so the sweep does test rounding).
    let d = Device::new(backend(webgl1, None));
    let plain = Tensor::from_vec(&d, &xs, [xs.len()]).unwrap().neg().unwrap().to_vec().unwrap();
    let rounded = xs.iter().zip(&plain).filter(|(&x, &g)| g.to_bits() != (-x).to_bits()).count();
    assert_eq!(rounded, 0, "webgl1 {webgl1}: f32 negation changed {rounded} values");
    assert!(xs.iter().filter(|&&x| reference(x) != x).count() > xs.len() / 2);
}

#[test]
fn glsl_es_300_rounds_every_value_like_the_half_crate() {
    assert_rounds_like_half(false);
}

#[test]
fn glsl_es_100_rounds_every_value_like_the_half_crate() {
    assert_rounds_like_half(true);
}

/// The rounding applies to the intermediates of a kernel too: `(x + 1) - 1` keeps x exactly
/// in f32, but in half `x + 1` has steps of 2^-10 near 1, so small x vanish.
#[test]
fn intermediates_are_rounded_too() {
    for webgl1 in [false, true] {
        let xs = [1e-4f32, 3e-4, 0.25, 0.3];
        let go = |e| {
            let d = Device::new(backend(webgl1, e));
            Tensor::from_vec(&d, &xs, [4]).unwrap().add_scalar(1.0).unwrap().add_scalar(-1.0).unwrap().to_vec().unwrap()
        };
        let (full, half) = (go(None), go(Some(EmulatedPrecision::Half)));
        let want: Vec<f32> = xs.iter().map(|&x| reference(reference(1.0 + reference(x)) - 1.0)).collect();
        assert_eq!(half, want, "webgl1 {webgl1}: full {full:?}");
        assert_eq!(half[0], 0.0, "1 + 1e-4 is 1 in half");
        assert!((full[0] - 1e-4).abs() < 1e-7, "webgl1 {webgl1}: f32 result {full:?}");
    }
}

/// A device whose fragment stage has no highp float (it reports range and precision 0) is
/// refused with a typed error in both modes: WebGL2 needs 32-bit index arithmetic, the
/// `webgl1` mode float indices of 23 bits.
#[test]
fn a_device_without_highp_is_refused_in_both_modes() {
    for webgl1 in [false, true] {
        let r = WebGlBackend::new_headless(WebGlOptions { webgl1, emulate_no_highp: true, ..Default::default() });
        match r {
            Err(Error::Unavailable { backend, reason }) => {
                assert!(reason.contains("no highp float") || reason.contains("no 32-bit highp float"), "{reason}");
                assert!(reason.contains("0 bits of precision"), "{reason}");
                assert!(backend.starts_with("webgl"), "{backend}");
            }
            Err(e) => panic!("webgl1 {webgl1}: other error {e}"),
            Ok(b) => panic!("webgl1 {webgl1}: a device without highp was accepted: {:?}", b.report().fragment_highp),
        }
    }
}

/// Every program of both modes compiles and links in the driver with the emulation on.
#[test]
fn every_program_compiles_with_the_emulation() {
    for webgl1 in [false, true] {
        let b = backend(webgl1, Some(EmulatedPrecision::Half));
        let n = b.warm_up().unwrap();
        assert!(n > 50, "webgl1 {webgl1}: {n} programs");
    }
}

#[test]
fn the_report_names_the_emulation() {
    for webgl1 in [false, true] {
        let r = backend(webgl1, Some(EmulatedPrecision::Half)).report();
        assert_eq!(r.emulated_precision, Some(EmulatedPrecision::Half));
        assert!(r.warnings.iter().any(|w| w.contains("precision emulation (half)")), "{:?}", r.warnings);
        assert_eq!(backend(webgl1, None).report().emulated_precision, None);
    }
}

/// The caps say what will work from what the backend measured at start: a write/read-back
/// probe of `1 + 2^-k` keeps 23 mantissa bits in llvmpipe's RGBA32F textures, in both modes,
/// with or without the half emulation; the emulation's arithmetic keeps 10, so training needs
/// the half-precision measures there. Forced
/// mediump states the driver's `MEDIUM_FLOAT` precision. Largest texture and tensor follow
/// the (forced) `MAX_TEXTURE_SIZE`.
#[test]
fn the_caps_state_the_measured_precision_limits_and_training_verdict() {
    use pixelgrad_core::{Arithmetic, Backend, Training};
    for webgl1 in [false, true] {
        let b = backend(webgl1, None);
        let c = b.caps().clone();
        assert_eq!((c.storage_mantissa_bits, c.arithmetic, c.arithmetic_mantissa_bits), (23, Arithmetic::Highp, 23), "{c:?}");
        assert_eq!(c.training, Training::Reliable, "{c:?}");
        let max = b.report().effective_max_texture_size;
        assert_eq!(c.max_texture_side, Some(max));
        // The `webgl1` mode's float indices are exact only below 2^22 elements.
        let texels = u64::from(max).pow(2) * 4;
        assert_eq!(c.max_tensor_elements, if webgl1 { texels.min(1 << 22) } else { texels }, "{c:?}");

        let c = backend(webgl1, Some(EmulatedPrecision::Half)).caps().clone();
        assert_eq!((c.storage_mantissa_bits, c.arithmetic, c.arithmetic_mantissa_bits), (23, Arithmetic::EmulatedHalf, 10), "{c:?}");
        assert_eq!(c.training, Training::ReliableWithHalfMeasures, "{c:?}");
        assert!(c.training_reason.contains("emulated half arithmetic keeps 10"), "{}", c.training_reason);
    }
    let small = WebGlBackend::new_headless(WebGlOptions { self_test: false, max_texture_size: Some(100), ..Default::default() }).unwrap();
    assert_eq!((small.caps().max_texture_side, small.caps().max_tensor_elements), (Some(100), 40_000));
    let m = WebGlBackend::new_headless(WebGlOptions { self_test: false, mediump: true, ..Default::default() }).unwrap();
    let c = m.caps();
    assert_eq!(c.arithmetic, Arithmetic::Mediump, "{c:?}");
    eprintln!("forced mediump on this driver: {c:?}");
    // The verdict follows the bits the driver states for mediump and the probe measured.
    assert_eq!(c.training, pixelgrad_core::Caps::training_verdict(c.storage_mantissa_bits, c.arithmetic, c.arithmetic_mantissa_bits).0);
}

/// The arithmetic bits in the caps are measured by a start-up program (`fract(1 + 2^-k) /
/// 2^-k` for k = 1..=23, one draw), not read from `getShaderPrecisionFormat`: llvmpipe's
/// plain context keeps 23, the half emulation 10, in both modes, whether its storage is
/// RGBA32F or RGBA16F (the value never passes through a texture between the sum and the
/// quotient). The probe is invisible: running it leaves the counters and the pool as they
/// were.
#[test]
fn the_arithmetic_probe_measures_23_bits_plain_and_10_emulated() {
    use pixelgrad_core::Backend;
    for webgl1 in [false, true] {
        for (emulate, want) in [(None, 23), (Some(EmulatedPrecision::Half), 10)] {
            for force_half_float in [false, true] {
                let b = WebGlBackend::new_headless(WebGlOptions {
                    webgl1,
                    self_test: false,
                    emulate_precision: emulate,
                    force_half_float,
                    ..Default::default()
                })
                .unwrap();
                let what = format!("webgl1 {webgl1}, {emulate:?}, force_half_float {force_half_float}");
                assert_eq!(b.caps().arithmetic_mantissa_bits, want, "{what}");
                assert_eq!(b.caps().storage_mantissa_bits, if force_half_float { 10 } else { 23 }, "{what}");
                let (before, pooled) = (b.counters(), b.pooled_textures());
                assert_eq!(b.probe_arithmetic_bits().unwrap(), want, "{what}");
                assert_eq!((b.counters(), b.pooled_textures()), (before, pooled), "{what}");
            }
        }
    }
}
