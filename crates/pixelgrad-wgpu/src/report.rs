//! What the adapter is and how precise it is: the backend report and the self-test that
//! backend selection (e.g. the CLI's `--backend auto`) uses to explain its choice.

use std::fmt;

use pixelgrad_core::{Backend, Op, ReduceOp, Result, Shape, UnaryOp};

use crate::WgpuBackend;

/// Adapter identity and the limits this backend depends on.
#[derive(Clone, Debug, PartialEq)]
pub struct WgpuReport {
    pub adapter: String,
    /// Graphics API under wgpu: Vulkan, Metal, Dx12 or BrowserWebGpu.
    pub backend_api: String,
    /// DiscreteGpu, IntegratedGpu, Cpu (lavapipe, SwiftShader)...
    pub device_type: String,
    pub driver: String,
    pub driver_info: String,
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroups_per_dimension: u32,
    pub max_compute_invocations_per_workgroup: u32,
    pub max_compute_workgroup_storage_size: u32,
}

impl WgpuReport {
    /// True for software adapters (lavapipe, SwiftShader, WARP): correct but slow. Decided by
    /// the device type, or by the names in [`pixelgrad_core::backend::SOFTWARE_RASTERISERS`]
    /// (browsers may report another type, or none).
    pub fn is_software(&self) -> bool {
        self.device_type == "Cpu"
            || [&self.adapter, &self.driver, &self.driver_info].iter().any(|s| pixelgrad_core::is_software_renderer(s))
    }
}

impl fmt::Display for WgpuReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "adapter: {} ({}, {})", self.adapter, self.backend_api, self.device_type)?;
        writeln!(f, "driver: {} {}", self.driver, self.driver_info)?;
        writeln!(f, "maxStorageBufferBindingSize: {}", self.max_storage_buffer_binding_size)?;
        writeln!(f, "maxBufferSize: {}", self.max_buffer_size)?;
        writeln!(f, "maxComputeWorkgroupsPerDimension: {}", self.max_compute_workgroups_per_dimension)?;
        writeln!(f, "maxComputeInvocationsPerWorkgroup: {}", self.max_compute_invocations_per_workgroup)?;
        write!(f, "maxComputeWorkgroupStorageSize: {}", self.max_compute_workgroup_storage_size)
    }
}

/// Result of [`WgpuBackend::self_test`]: the largest relative error over all checks, and each
/// check's own.
#[derive(Clone, Debug, PartialEq)]
pub struct SelfTest {
    pub max_rel_error: f64,
    pub details: Vec<(String, f64)>,
}

impl SelfTest {
    /// True if every check stayed within `tol` relative error.
    pub fn passes(&self, tol: f64) -> bool {
        self.max_rel_error.is_finite() && self.max_rel_error <= tol
    }
}

/// max |got - want| / |want| over the elements (NaN counts as infinitely wrong).
fn rel_error(got: &[f32], want: &[f64]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    got.iter()
        .zip(want)
        .map(|(&g, &w)| {
            let e = (g as f64 - w).abs() / w.abs().max(1e-30);
            if e.is_nan() {
                f64::INFINITY
            } else {
                e
            }
        })
        .fold(0.0, f64::max)
}

/// Deterministic test values in [-1, 1).
fn values(n: usize, salt: u64) -> Vec<f32> {
    (0..n).map(|i| pixelgrad_core::rng::uniform(salt, i as u64) * 2.0 - 1.0).collect()
}

impl WgpuBackend {
    /// The adapter and its relevant limits.
    pub fn report(&self) -> WgpuReport {
        let info = &self.gpu.info;
        let l = &self.gpu.limits;
        WgpuReport {
            adapter: self.gpu.adapter_name(),
            backend_api: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
            max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
            max_buffer_size: l.max_buffer_size,
            max_compute_workgroups_per_dimension: l.max_compute_workgroups_per_dimension,
            max_compute_invocations_per_workgroup: l.max_compute_invocations_per_workgroup,
            max_compute_workgroup_storage_size: l.max_compute_workgroup_storage_size,
        }
    }

    /// Precision self-test against host f64: a 33x47x29 matmul, exp and log over a range of
    /// values, and a 100k-element sum. A healthy f32 device stays around 1e-6..1e-5.
    /// Blocking (native); in wasm use [`WgpuBackend::self_test_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn self_test(&self) -> Result<SelfTest> {
        pollster::block_on(self.self_test_async())
    }

    /// [`WgpuBackend::self_test`] without blocking (works in the browser).
    pub async fn self_test_async(&self) -> Result<SelfTest> {
        let mut details = Vec::new();

        // Small matmul with awkward sizes (partial tiles on every edge).
        let (m, k, n) = (33usize, 47usize, 29usize);
        let a = values(m * k, 1);
        let b = values(k * n, 2);
        let mut want = vec![0f64; m * n];
        let mut mag = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                for p in 0..k {
                    let t = a[i * k + p] as f64 * b[p * n + j] as f64;
                    want[i * n + j] += t;
                    mag[i * n + j] += t.abs();
                }
            }
        }
        let (sa, sb) = (self.upload(&a)?, self.upload(&b)?);
        let (ha, hb, hc) = (Shape::from([m, k]), Shape::from([k, n]), Shape::from([m, n]));
        let c = self.execute(&Op::MatMul { trans_a: false, trans_b: false }, &[&sa, &sb], &[&ha, &hb], &hc)?;
        let got = self.read_async(&c, m * n).await?;
        // Relative to sum |a_ip b_pj|: entries near zero are sums that cancelled, and no f32
        // summation order can do better than that bound.
        let mm_err = got.iter().zip(want.iter().zip(&mag)).map(|(&g, (&w, &s))| (g as f64 - w).abs() / s.max(1e-30)).fold(0.0, f64::max);
        details.push(("matmul 33x47x29".to_string(), mm_err));

        // exp on [-10, 10] and log on (0, 100].
        let n = 1000;
        let xs: Vec<f32> = (0..n).map(|i| -10.0 + 20.0 * i as f32 / n as f32).collect();
        let ls: Vec<f32> = (1..=n).map(|i| 100.0 * i as f32 / n as f32).collect();
        let shape = Shape::from([n]);
        let sx = self.upload(&xs)?;
        let e = self.execute(&Op::Unary(UnaryOp::Exp), &[&sx], &[&shape], &shape)?;
        let got = self.read_async(&e, n).await?;
        let want: Vec<f64> = xs.iter().map(|&v| (v as f64).exp()).collect();
        let exp_err = got.iter().zip(&want).map(|(&g, &w)| (g as f64 - w).abs() / w.abs()).fold(0.0, f64::max);
        details.push(("exp on [-10, 10]".to_string(), exp_err));
        let sl = self.upload(&ls)?;
        let lg = self.execute(&Op::Unary(UnaryOp::Log), &[&sl], &[&shape], &shape)?;
        let got = self.read_async(&lg, n).await?;
        let want: Vec<f64> = ls.iter().map(|&v| (v as f64).ln()).collect();
        // Absolute near log(1) = 0, relative elsewhere.
        let log_err = got.iter().zip(&want).map(|(&g, &w)| (g as f64 - w).abs() / w.abs().max(1.0)).fold(0.0, f64::max);
        details.push(("log on (0, 100]".to_string(), log_err));

        // A long sum of positive values: naive f32 accumulation would drift by ~1e-3 here.
        let n = 100_000;
        let vs: Vec<f32> = (0..n).map(|i| pixelgrad_core::rng::uniform(3, i as u64)).collect();
        let want: f64 = vs.iter().map(|&v| v as f64).sum();
        let sv = self.upload(&vs)?;
        let (hs, ho) = (Shape::from([n]), Shape::from([1]));
        let s = self.execute(&Op::Reduce { op: ReduceOp::Sum, axis: 0 }, &[&sv], &[&hs], &ho)?;
        let got = self.read_async(&s, 1).await?;
        details.push(("sum of 100k".to_string(), rel_error(&got, &[want])));

        let max_rel_error = details.iter().map(|d| d.1).fold(0.0, f64::max);
        Ok(SelfTest { max_rel_error, details })
    }
}
