//! The training check of the precision-limited mode (`init({ precision: 'low' })`): the seed
//! article's network (48-64-2, sigmoid, MSE, SGD, batch 1) trained for a few steps on this
//! runtime's device and on the f32 CPU from the same initial weights. `web/js/runtime.js`
//! refuses the backend, with these measured numbers, when the device's loss does not go down
//! as the CPU's does (updates lost below the half-float spacing, gradients flushed to zero in
//! 16-bit arithmetic): never a silently flat loss.

use js_sys::{Object, Promise, Reflect};
use pixelgrad::cpu::CpuBackend;
use pixelgrad::{Device, Result};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::{js_err, Runtime};
use crate::net::Net;

const SAMPLES: usize = 32;
const EPOCHS: usize = 2;
const LR: f32 = 0.5;

fn data() -> (Vec<f32>, Vec<f32>) {
    let x = (0..SAMPLES * 48).map(|i| ((i * 31) % 23) as f32 / 23.0).collect();
    let y = (0..SAMPLES).flat_map(|i| [0.1 + 0.8 * (i % 4) as f32 / 3.0, 0.3]).collect();
    (x, y)
}

fn net(dev: &Device) -> Result<Net> {
    let cfg = serde_json::json!({"seed": 2, "layers": [
        {"type": "dense", "units": 64, "inputShape": [48], "activation": "sigmoid"},
        {"type": "dense", "units": 2, "activation": "sigmoid"}
    ]});
    let mut n = Net::new(dev, cfg)?;
    n.compile("sgd", LR, 0.0, "meanSquaredError")?;
    Ok(n)
}

async fn mean_loss(n: &mut Net, x: &[f32], y: &[f32]) -> Result<f64> {
    n.eval_step(x, &[SAMPLES, 48], y, &[SAMPLES, 2])?;
    let Some((t, k)) = n.take_eval()? else { return Ok(f64::NAN) };
    Ok(t.to_vec_async().await?[0] as f64 / k as f64)
}

/// `[loss before, loss after]` of the check on `dev`.
async fn run(dev: &Device) -> Result<[f64; 2]> {
    let (x, y) = data();
    let mut n = net(dev)?;
    let before = mean_loss(&mut n, &x, &y).await?;
    for _ in 0..EPOCHS {
        for i in 0..SAMPLES {
            n.train_step(&x[i * 48..(i + 1) * 48], &[1, 48], &y[i * 2..(i + 1) * 2], &[1, 2])?;
        }
    }
    drop(n.take_train()?);
    let after = mean_loss(&mut n, &x, &y).await?;
    Ok([before, after])
}

#[wasm_bindgen]
impl Runtime {
    /// The precision-limited mode's training check: a promise of `{ steps, device: [before,
    /// after], cpu: [before, after] }` (mean MSE over the check's samples).
    #[wasm_bindgen(js_name = trainingCheck)]
    pub fn training_check(&self) -> Promise {
        let dev = self.dev.clone();
        future_to_promise(async move {
            let d = run(&dev).await.map_err(js_err)?;
            let c = run(&Device::new(CpuBackend::new())).await.map_err(js_err)?;
            let o = Object::new();
            Reflect::set(&o, &"steps".into(), &((SAMPLES * EPOCHS) as u32).into())?;
            Reflect::set(&o, &"device".into(), &js_sys::Float64Array::from(&d[..]))?;
            Reflect::set(&o, &"cpu".into(), &js_sys::Float64Array::from(&c[..]))?;
            Ok(o.into())
        })
    }
}
