//! Steady-state training allocates and compiles nothing: a small MLP is trained for a few SGD
//! steps while the backend's [`Counters`] are recorded after every phase of every step. After
//! the warm-up steps (the first uses fresh buffers and compiles every kernel; the second may
//! still fill pools, e.g. gradient and optimizer temporaries of the first update) no phase may
//! add an allocation or a compile. A failure names the step, the phase and the counter.
//!
//! Reads go through `to_vec_async` (WebGPU in the browser cannot block).

use pixelgrad_core::{Counters, Device, Result, Tensor};
use pixelgrad_nn::optim::Sgd;
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::{Mode, Module, Optimizer};

use crate::smoke::host_values;

/// Steps not checked: the first compiles every kernel and allocates every buffer; the second
/// may still grow pools (buffers released during step one are only reusable from then on) and
/// compiles the fused kernels of the repeating structure (step one's chains differ: they start
/// from freshly uploaded parameters); the third may still grow a pool by a buffer, since a
/// pending fused chain keeps its inputs alive until it runs, which moves the pools' high-water
/// mark. From the fourth step on nothing may be allocated or compiled.
pub const WARMUP_STEPS: usize = 3;

/// What one step of the loop did, phase by phase.
pub const PHASES: [&str; 5] = ["upload batch", "forward + loss", "backward", "sgd step", "read loss"];

/// The counters after each of [`PHASES`], for one step.
#[derive(Clone, Debug, PartialEq)]
pub struct StepCounters {
    /// Counters before the step.
    pub start: Counters,
    /// Counters after each phase, in [`PHASES`] order.
    pub after: Vec<Counters>,
    /// The loss the step read back.
    pub loss: f32,
}

/// Trains the `mlp` preset (16 → 256 ReLU → 4 logits, cross-entropy; batch 8) for `steps`
/// plain SGD steps on `dev`, uploading a new batch every step (rotating over three, as a data
/// loader would) and reading the loss every step, recording the counters around each phase.
pub async fn train_with_counters(dev: &Device, steps: usize) -> Result<Vec<StepCounters>> {
    let spec = ModelSpec { preset: Preset::Mlp, input: [1, 4, 4], classes: 4 };
    let batch = 8;
    let model = spec.build(dev, 7)?;
    let loss_fn = spec.preset.loss();
    let mut opt = Sgd::new(0.1);
    let inputs: Vec<Vec<f32>> = (0..3).map(|i| host_values(batch * 16, 10 + i)).collect();
    let labels: Vec<f32> = (0..batch).map(|i| (i % spec.classes) as f32).collect();
    let mut out = Vec::with_capacity(steps);
    for step in 0..steps {
        let start = dev.counters();
        let mut after = Vec::with_capacity(PHASES.len());
        let x = Tensor::from_vec(dev, &inputs[step % inputs.len()], [batch, 1, 4, 4])?;
        let y = Tensor::from_vec(dev, &labels, [batch])?;
        after.push(dev.counters());
        let loss = loss_fn.compute(&model.forward(&x, Mode::Train)?, &y)?;
        after.push(dev.counters());
        loss.backward()?;
        after.push(dev.counters());
        opt.step(&model)?;
        after.push(dev.counters());
        let value = loss.to_vec_async().await?.first().copied().unwrap_or(f32::NAN);
        after.push(dev.counters());
        out.push(StepCounters { start, after, loss: value });
    }
    Ok(out)
}

/// Every allocation or compile after the warm-up steps, one line each (`step 3, backward:
/// allocations +2`), or `Ok` if there is none.
pub fn check_steady(record: &[StepCounters], warmup: usize) -> std::result::Result<(), String> {
    let mut errs = Vec::new();
    for (i, step) in record.iter().enumerate().skip(warmup) {
        let mut prev = step.start;
        for (phase, now) in PHASES.iter().zip(&step.after) {
            for (name, grew) in [
                ("allocations", now.allocations.saturating_sub(prev.allocations)),
                ("compiles", now.compiles.saturating_sub(prev.compiles)),
            ] {
                if grew != 0 {
                    errs.push(format!("step {} (1-based), phase `{phase}`: {name} +{grew}", i + 1));
                }
            }
            prev = *now;
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!("steady-state training step allocated or compiled:\n  {}", errs.join("\n  ")))
    }
}

/// Per-step totals for the log: `allocations +a, compiles +c` of each step.
pub fn summary(record: &[StepCounters]) -> String {
    record
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let end = s.after.last().copied().unwrap_or(s.start);
            format!(
                "step {}: loss {:.4}, allocations +{}, compiles +{}, launches +{}",
                i + 1,
                s.loss,
                end.allocations.saturating_sub(s.start.allocations),
                end.compiles.saturating_sub(s.start.compiles),
                end.launches.saturating_sub(s.start.launches)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad_cpu::CpuBackend;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn ready<T>(f: impl Future<Output = T>) -> T {
        match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("a CPU read did not complete at once"),
        }
    }

    #[test]
    fn records_every_phase_and_the_loss_falls_on_cpu() {
        let rec = ready(train_with_counters(&Device::new(CpuBackend::new()), 5)).unwrap();
        assert_eq!(rec.len(), 5);
        assert!(rec.iter().all(|s| s.after.len() == PHASES.len() && s.loss.is_finite()));
        assert!(rec[4].loss < rec[0].loss, "{}", summary(&rec));
        // Every step launches work, so the counters really move.
        assert!(rec.iter().all(|s| s.after[4].launches > s.start.launches));
    }

    #[test]
    fn check_steady_names_step_phase_and_counter() {
        let c = |allocations, compiles| Counters { allocations, compiles, ..Counters::default() };
        let step = |base: u64, extra: u64| StepCounters {
            start: c(base, 5),
            after: vec![c(base, 5), c(base, 5), c(base + extra, 5), c(base + extra, 5), c(base + extra, 5)],
            loss: 1.0,
        };
        // Warm-up steps may allocate; later ones may not.
        let ok = vec![step(0, 7), step(7, 3), step(10, 0), step(10, 0)];
        assert!(check_steady(&ok, WARMUP_STEPS).is_ok());
        let bad = vec![step(0, 7), step(7, 3), step(10, 0), step(10, 2)];
        let err = check_steady(&bad, WARMUP_STEPS).unwrap_err();
        assert!(err.contains("step 4") && err.contains("`backward`") && err.contains("allocations +2"), "{err}");
        let mut compiles = ok.clone();
        compiles[3].after[3].compiles = 6;
        compiles[3].after[4].compiles = 6;
        let err = check_steady(&compiles, WARMUP_STEPS).unwrap_err();
        assert!(err.contains("`sgd step`: compiles +1"), "{err}");
    }
}
