//! `pixelgrad check`: the cross-check (`pixelgrad_nn::crosscheck`) of a backend against the
//! f64 CPU reference, as a table or JSON; exit status 1 when a tensor is outside tolerance.
//! `pixelgrad backends --check` runs it on every backend that starts, `--layouts` prints the
//! layout table of a small model on each.

use clap::Args;
use pixelgrad::cpu::CpuBackend;
use pixelgrad::nn::crosscheck::{self, with_fault, CheckActivation, CheckConfig, CheckReport, Fault};
use pixelgrad::nn::layouts::{format_table, layout_table};
use pixelgrad::nn::presets::{ModelSpec, Preset};
use pixelgrad::nn::train::{fit, FitOptions, NoCallbacks, Samples};
use pixelgrad::nn::{Loss, OptimizerKind};
use pixelgrad::Device;

use crate::{backend, CliResult, Context};

#[derive(Args)]
pub struct CheckArgs {
    /// cpu | webgpu | webgl (auto picks as `train` does)
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Layer widths, input first
    #[arg(long, default_value = "4,4,2")]
    pub layers: String,
    /// sigmoid | tanh | relu (every layer)
    #[arg(long, default_value = "sigmoid")]
    pub activation: String,
    /// Training steps to compare
    #[arg(long, default_value_t = 3)]
    pub steps: usize,
    #[arg(long, default_value_t = 8)]
    pub batch: usize,
    /// SGD learning rate
    #[arg(long, default_value_t = 0.5)]
    pub lr: f32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Multiplies every tolerance
    #[arg(long, default_value_t = 1.0)]
    pub tolerance_scale: f64,
    /// Print the report as one JSON object instead of the table
    #[arg(long)]
    pub json: bool,
    /// Test-only: corrupt results of an op on the checked backend, OP[@N][+OFFSET] (e.g.
    /// `sigmoid`, `matmul@2+0.5`), to see the check fail and name the tensor
    #[arg(long, hide = true)]
    pub inject_fault: Option<String>,
}

impl CheckArgs {
    fn config(&self) -> CliResult<CheckConfig> {
        let layers = self
            .layers
            .split(',')
            .map(|w| w.trim().parse::<usize>().map_err(|_| format!("--layers: '{w}' is not a width (expected e.g. 4,4,2)")))
            .collect::<CliResult<Vec<_>>>()?;
        Ok(CheckConfig {
            layers,
            activation: CheckActivation::parse(&self.activation).ctx()?,
            steps: self.steps,
            batch: self.batch,
            lr: self.lr,
            seed: self.seed,
            tolerance_scale: self.tolerance_scale,
        })
    }
}

/// The check of `dev` (with the fault, if any) against a fresh f64 reference.
pub fn check_device(dev: &Device, cfg: &CheckConfig, fault: Option<&str>) -> CliResult<CheckReport> {
    let subject = match fault {
        Some(f) => with_fault(dev, Fault::parse(f).ctx()?),
        None => dev.clone(),
    };
    crosscheck::run(cfg, &subject, &Device::new(CpuBackend::reference())).ctx()
}

pub fn run(a: CheckArgs) -> CliResult<()> {
    let cfg = a.config()?;
    let sel = backend::select(&a.backend)?;
    let report = check_device(&sel.device, &cfg, a.inject_fault.as_deref())?;
    if a.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.table());
    }
    if report.passed() {
        Ok(())
    } else {
        Err(format!("cross-check failed: {}", report.summary().trim_start_matches("FAIL: ")))
    }
}

/// The layout table of the mlp preset (digits-sized, Adam state after one step) on `dev`.
pub fn layouts(dev: &Device) -> CliResult<String> {
    let (input, classes) = ([1, 8, 8], 10);
    let model = ModelSpec { preset: Preset::Mlp, input, classes }.build(dev, 0).ctx()?;
    let mut opt = OptimizerKind::parse("adam").ctx()?.build(1e-3);
    let x = vec![0.5f32; 32 * 64];
    let y: Vec<u32> = (0..32).map(|i| i % 10).collect();
    let s = Samples::new(&x, &input, &y).ctx()?;
    let opts = FitOptions { batch_size: 32, checkpoint_every: Some(0), ..Default::default() };
    fit(&model, opt.as_mut(), Loss::CrossEntropy, dev, s, None, &opts, &mut NoCallbacks).ctx()?;
    Ok(format_table(&layout_table(&model, Some(&*opt))))
}
