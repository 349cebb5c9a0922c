//! Precision self-test: a few ops on this backend against host f64 arithmetic. Each check's
//! error is max |got - want| / max |want| (normalised by the largest reference value, so values
//! near zero do not blow it up); the report keeps the worst. Also the start-up probes that float
//! render targets really keep floats and how many mantissa bits a stored value keeps.

use pixelgrad_core::{rng, Device, Result, Tensor};

use crate::backend::WebGlBackend;
use crate::options::SelfTest;

fn host(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f32> {
    (0..n).map(|i| (lo + (hi - lo) * rng::uniform(seed, i as u64) as f64) as f32).collect()
}

fn rel_error(got: &[f32], want: &[f64]) -> f64 {
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-30);
    got.iter().zip(want).fold(0.0f64, |m, (&g, &w)| m.max((g as f64 - w).abs())) / scale
}

impl WebGlBackend {
    /// Runs a small matmul, exp, log, sigmoid and a 100k-element sum against host f64 and
    /// reports the relative errors (about 1e-6 with RGBA32F, 1e-3 with RGBA16F).
    pub fn self_test(&self) -> Result<SelfTest> {
        let dev = Device::new(self.clone());
        let mut details = Vec::new();

        let (m, k, n) = (24, 48, 20);
        let a = host(1, m * k, -1.0, 1.0);
        let b = host(2, k * n, -1.0, 1.0);
        let mut want = vec![0.0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                want[i * n + j] = (0..k).map(|p| a[i * k + p] as f64 * b[p * n + j] as f64).sum();
            }
        }
        let ta = Tensor::from_vec(&dev, &a, [m, k])?;
        let tb = Tensor::from_vec(&dev, &b, [k, n])?;
        details.push(("matmul 24x48x20".to_string(), rel_error(&ta.matmul(&tb)?.to_vec()?, &want)));

        let x = host(3, 1000, -4.0, 4.0);
        let tx = Tensor::from_vec(&dev, &x, [1000])?;
        let want: Vec<f64> = x.iter().map(|&v| (v as f64).exp()).collect();
        details.push(("exp on [-4, 4]".to_string(), rel_error(&tx.exp()?.to_vec()?, &want)));
        let want: Vec<f64> = x.iter().map(|&v| 1.0 / (1.0 + (-(v as f64)).exp())).collect();
        details.push(("sigmoid on [-4, 4]".to_string(), rel_error(&tx.sigmoid()?.to_vec()?, &want)));

        let p = host(4, 1000, 0.01, 10.0);
        let tp = Tensor::from_vec(&dev, &p, [1000])?;
        let want: Vec<f64> = p.iter().map(|&v| (v as f64).ln()).collect();
        details.push(("log on [0.01, 10]".to_string(), rel_error(&tp.log()?.to_vec()?, &want)));

        let s = host(5, 100_000, 0.0, 1.0);
        let ts = Tensor::from_vec(&dev, &s, [100_000])?;
        let want = s.iter().map(|&v| v as f64).sum::<f64>();
        details.push(("sum of 100k in [0, 1)".to_string(), rel_error(&ts.sum_all()?.to_vec()?, &[want])));

        let max_rel_error = details.iter().fold(0.0f64, |m, (_, e)| if e.is_nan() { f64::INFINITY } else { m.max(*e) });
        Ok(SelfTest { max_rel_error, details })
    }
}

impl WebGlBackend {
    /// Really renders into a float target: fills 12 elements with values a clamping or 8-bit
    /// target could not hold and reads them back (the check WEBGL_color_buffer_float is only
    /// a promise of).
    pub(crate) fn probe_float_rendering(&self) -> Result<()> {
        // Under the precision emulation, or in half-float storage, the device holds halves: a
        // value exact in half (still one no clamping or 8-bit target could hold).
        let halves = self.shared.emulate_half || self.shared.format == crate::TexelFormat::Rgba16F;
        let want = if halves { -1234.0_f32 } else { -12345.678_f32 };
        let t = crate::ops::elementwise::fill(&self.shared, want, 12)?;
        let got = self.shared.read_raw(&t, 12)?;
        if got.iter().any(|&v| v != want) {
            return Err(crate::legacy::unavailable(format!(
                "rendering into an {} target does not keep floats (drew {want}, read back {:?}): \
                 float render targets do not work on {}; use the cpu backend",
                self.shared.format.as_str(),
                got.first(),
                self.shared.report.borrow().renderer
            )));
        }
        Ok(())
    }
}

impl WebGlBackend {
    /// How many mantissa bits a stored f32 tensor keeps, measured at start (the caps'
    /// `storage_mantissa_bits`): uploads `1 + 2^-k` for k = 1..=23 into a tensor texture,
    /// reads the texture back and counts the leading values that survive. 23 with RGBA32F
    /// textures, 10 with RGBA16F (the texture rounds what it holds). No program is drawn (the
    /// arithmetic is reported apart), and the counters and the texture pool are left as they
    /// were, so the probe is invisible to what callers measure.
    pub(crate) fn probe_storage_bits(&self) -> Result<u8> {
        let before = self.shared.counters();
        let want: Vec<f32> = (1..=i32::from(pixelgrad_core::caps::F32_MANTISSA_BITS)).map(|k| 1.0 + f32::powi(2.0, -k)).collect();
        let got = {
            let t = self.shared.upload(&want)?;
            self.shared.read_raw(&t, want.len())?
        };
        self.shared.trim_pool()?;
        self.shared.set_counters(before);
        Ok(got.iter().zip(&want).take_while(|(g, w)| g == w).count() as u8)
    }
}

/// Stored values of the arithmetic probe are `2^(ARITHMETIC_PROBE_SHIFT - k)`, all normal
/// halves for k = 1..=23 (a half-float texture, or a sampler, may flush the subnormals that
/// `2^-k` itself would be past k = 14); the program scales them back by a uniform.
const ARITHMETIC_PROBE_SHIFT: i32 = 12;

impl WebGlBackend {
    /// How many mantissa bits the fragment stage's float arithmetic keeps, measured at start
    /// (the caps' `arithmetic_mantissa_bits`) rather than taken from the driver's
    /// `getShaderPrecisionFormat`: one elementwise program computes, for `e = 2^-k`
    /// (k = 1..=23, read from a tensor so no compiler can fold it), `fract(1 + e) / e` as
    /// `(x - floor(x)) / e` with `x = 1 + e`. The quotient is 1 exactly while `1 + 2^-k` is a
    /// number of the arithmetic, 0 once it rounds to 1 (or 2); the leading 1s are the bits: 23
    /// for IEEE f32, 10 for half (mediump on GPUs that honour it, the half emulation). `floor`
    /// stops a compiler from simplifying `(1 + e) - 1` to `e`, and the whole expression is one
    /// draw, so no value passes through storage (whose precision
    /// `probe_storage_bits` measures apart). Like that probe it leaves the
    /// counters and the texture pool as they were.
    pub fn probe_arithmetic_bits(&self) -> Result<u8> {
        use pixelgrad_core::kernel::{Builder, DType, Launch};
        let before = self.shared.counters();
        let bits = i32::from(pixelgrad_core::caps::F32_MANTISSA_BITS);
        let stored: Vec<f32> = (1..=bits).map(|k| f32::powi(2.0, ARITHMETIC_PROBE_SHIFT - k)).collect();
        let kernel = {
            let b = Builder::new(&[DType::F32], 2);
            let e = b.input(0) * b.param(0);
            let x = b.param(1) + e;
            b.finish((x - x.floor()) / e)?
        };
        let launch = Launch { kernel, params: vec![f32::powi(2.0, -ARITHMETIC_PROBE_SHIFT), 1.0] };
        let got = {
            let shape = pixelgrad_core::Shape::from([stored.len()]);
            let t = self.shared.upload(&stored)?;
            let out =
                crate::ops::elementwise::map_labelled(&self.shared, "probe_arithmetic_bits", &launch, &[&t], &[&shape], &shape, || {
                    "probe.arithmetic_bits".to_string()
                })?;
            self.shared.read_raw(&out, stored.len())?
        };
        self.shared.trim_pool()?;
        self.shared.set_counters(before);
        Ok(got.iter().take_while(|&&q| q == 1.0).count() as u8)
    }
}
