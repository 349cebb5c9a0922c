//! A compiled model and its training state, driven one batch at a time.
//!
//! The JavaScript `fit` loop owns the schedule (epochs, shuffling, callbacks, yielding to the
//! event loop); each step here only records device work. Loss and correct-prediction sums stay
//! on the device in [`Sums`] until the caller takes them ([`Net::take_train`]) and reads the
//! two numbers with one asynchronous readback, as `pixelgrad_nn::train` does natively.

use pixelgrad_core::composite::accuracy_count;
use pixelgrad_core::{no_grad, Device, Error, Result, Tensor};
use pixelgrad_nn::optim::{Adam, Optimizer, RmsProp, Sgd};
use pixelgrad_nn::train::{train_batch, Sums};
use pixelgrad_nn::{Loss, Mode, Module};
use serde_json::Value;

use crate::spec::{self, Built, Shape};

/// Rows per forward pass in [`Net::predict`] (bounds texture and buffer sizes on the GPU).
const PREDICT_CHUNK: usize = 1024;

/// A network plus what `compile` chose and the running training/evaluation sums.
pub struct Net {
    pub dev: Device,
    pub built: Built,
    /// The config it was built from (saved with the weights).
    pub config: Value,
    opt: Option<Box<dyn Optimizer>>,
    loss: Loss,
    train: Sums,
    eval: Sums,
}

impl Net {
    /// Builds the layers of `config` (see [`spec::build`]) on `dev`.
    pub fn new(dev: &Device, config: Value) -> Result<Net> {
        let built = spec::build(dev, &config)?;
        Ok(Net { dev: dev.clone(), built, config, opt: None, loss: Loss::CrossEntropy, train: Sums::new(), eval: Sums::new() })
    }

    /// Chooses the optimizer (fresh state) and the loss. The model must end in `[N, classes]`.
    pub fn compile(&mut self, optimizer: &str, lr: f32, momentum: f32, loss: &str) -> Result<()> {
        if !(lr.is_finite() && lr > 0.0) {
            return Err(Error::invalid("compile", format!("learning rate must be a positive number, got {lr}")));
        }
        let opt: Box<dyn Optimizer> = match optimizer {
            "adam" => Box::new(Adam::new(lr)),
            "sgd" => Box::new(Sgd::new(lr).momentum(momentum)),
            "rmsprop" => Box::new(RmsProp::new(lr)),
            other => return Err(Error::invalid("compile", format!("unknown optimizer '{other}' (adam, sgd, rmsprop)"))),
        };
        self.loss = Loss::parse(loss)?;
        self.classes()?;
        self.opt = Some(opt);
        Ok(())
    }

    pub fn is_compiled(&self) -> bool {
        self.opt.is_some()
    }

    /// Number of outputs (classes); an error if the model does not end flat.
    pub fn classes(&self) -> Result<usize> {
        match self.built.output {
            Shape::Flat(c) if c > 0 => Ok(c),
            other => Err(Error::invalid(
                "compile",
                format!("the model's output is {:?} per sample; end with layers.flatten() and a dense layer giving [N, classes]", other.user_dims()),
            )),
        }
    }

    /// Checks `shape` = `[n, ..input]` and `x.len()`, uploads the batch.
    fn input(&self, op: &'static str, x: &[f32], shape: &[usize]) -> Result<Tensor> {
        self.check_input(op, x, shape)?;
        Tensor::from_vec(&self.dev, x, shape.to_vec())
    }

    fn check_input(&self, op: &'static str, x: &[f32], shape: &[usize]) -> Result<()> {
        let ok = shape.len() == self.built.input.len() + 1 && shape[1..] == self.built.input[..] && shape[0] > 0;
        if !ok {
            let want: Vec<String> = self.built.input.iter().map(|d| d.to_string()).collect();
            return Err(Error::Shape {
                op,
                shapes: vec![shape.to_vec()],
                backend: self.dev.name(),
                msg: format!("the model expects input [N, {}]", want.join(", ")),
            });
        }
        if x.len() != shape.iter().product::<usize>() {
            return Err(Error::invalid(op, format!("{} values do not fill shape {shape:?}", x.len())));
        }
        Ok(())
    }

    /// Checks that `y` holds `n` whole-number class indices below the model's output count.
    fn labels(&self, op: &'static str, y: &[f32], n: usize) -> Result<Tensor> {
        self.check_labels(op, y, n)?;
        Tensor::from_vec(&self.dev, y, [n])
    }

    fn check_labels(&self, op: &'static str, y: &[f32], n: usize) -> Result<()> {
        let classes = self.classes()?;
        if y.len() != n {
            return Err(Error::invalid(op, format!("{} labels for {n} samples", y.len())));
        }
        if let Some((i, v)) = y.iter().enumerate().find(|(_, v)| !(v.fract() == 0.0 && **v >= 0.0 && (**v as usize) < classes)) {
            return Err(Error::invalid(op, format!("label {v} of sample {i} is not a class index in 0..{classes} (the model has {classes} outputs)")));
        }
        Ok(())
    }

    /// One training step on a batch: forward, loss, backward, optimizer update. Sums stay on
    /// the device; nothing is read back.
    pub fn train_step(&mut self, x: &[f32], shape: &[usize], y: &[f32]) -> Result<()> {
        self.check_input("fit", x, shape)?;
        self.check_labels("fit", y, shape[0])?;
        let Some(opt) = self.opt.as_mut() else {
            return Err(Error::invalid("fit", "the model is not compiled; call model.compile({ optimizer, loss }) first"));
        };
        let (dev, seq, loss, train) = (&self.dev, &self.built.seq, self.loss, &mut self.train);
        // One step plan per batch size: from the third step on, the GPU backends replay
        // prepared buffers and bind groups / framebuffers. The step ends with one submission,
        // so GPU queues never grow between reads.
        dev.step(shape[0] as u64, || {
            let xb = Tensor::from_vec(dev, x, shape.to_vec())?;
            let yb = Tensor::from_vec(dev, y, [shape[0]])?;
            train_batch(seq, opt.as_mut(), loss, &xb, &yb, train)
        })
    }

    /// Adds one batch to the evaluation sums (inference mode, no gradients).
    pub fn eval_step(&mut self, x: &[f32], shape: &[usize], y: &[f32]) -> Result<()> {
        let _g = no_grad();
        let xb = self.input("evaluate", x, shape)?;
        let yb = self.labels("evaluate", y, shape[0])?;
        let out = self.built.seq.forward(&xb, Mode::Eval)?;
        let l = self.loss.compute(&out, &yb)?;
        self.eval.add(&l, &accuracy_count(&out, &yb)?, shape[0])
    }

    /// Takes the training sums since the last take: `([loss sum, correct], samples)`.
    pub fn take_train(&mut self) -> Result<Option<(Tensor, usize)>> {
        self.train.take()
    }

    /// Takes the evaluation sums.
    pub fn take_eval(&mut self) -> Result<Option<(Tensor, usize)>> {
        self.eval.take()
    }

    /// Outputs `[n, classes]` for `x` (inference mode), on the device.
    pub fn predict(&self, x: &[f32], shape: &[usize]) -> Result<Tensor> {
        let _g = no_grad();
        // Validate the whole input first so the error names the caller's shape.
        let per: usize = self.built.input.iter().product();
        let all = self.input("predict", x, shape)?;
        if shape[0] <= PREDICT_CHUNK {
            return self.built.seq.forward(&all, Mode::Eval);
        }
        drop(all);
        let mut outs = Vec::new();
        for start in (0..shape[0]).step_by(PREDICT_CHUNK) {
            let end = (start + PREDICT_CHUNK).min(shape[0]);
            let mut s = shape.to_vec();
            s[0] = end - start;
            let xb = Tensor::from_vec(&self.dev, &x[start * per..end * per], s)?;
            outs.push(self.built.seq.forward(&xb, Mode::Eval)?);
        }
        let refs: Vec<&Tensor> = outs.iter().collect();
        Tensor::concat(&refs, 0)
    }

    /// Every parameter and buffer with its name (what a save writes).
    pub fn named_tensors(&self) -> Vec<(String, Tensor)> {
        pixelgrad_nn::io::named_tensors(&self.built.seq)
    }

    /// Loads safetensors bytes written by a save of the same architecture.
    pub fn load_bytes(&self, bytes: &[u8]) -> Result<()> {
        pixelgrad_nn::io::load_bytes(&self.built.seq, bytes)
    }

    /// The summary table.
    pub fn summary(&self) -> String {
        spec::summary(&self.built)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad_cpu::CpuBackend;

    fn read(t: Option<(Tensor, usize)>) -> (f32, f32) {
        let (t, n) = t.unwrap();
        let v = t.to_vec().unwrap();
        (v[0] / n as f32, v[1] / n as f32)
    }

    #[test]
    fn digits_mlp_learns_and_errors_are_clear() {
        let dev = Device::new(CpuBackend::new());
        let cfg = serde_json::json!({"seed": 1, "layers": [
            {"type": "dense", "units": 32, "inputShape": [64], "activation": "relu"},
            {"type": "dense", "units": 10}
        ]});
        let mut net = Net::new(&dev, cfg).unwrap();
        let e = net.train_step(&[0.0; 64], &[1, 64], &[0.0]).unwrap_err();
        assert!(e.to_string().contains("compile"), "{e}");
        net.compile("adam", 1e-2, 0.0, "softmaxCrossEntropy").unwrap();
        let split = pixelgrad_data::digits_split(0.2, 42).unwrap();
        let (x, y) = (split.train.images(), split.train.labels());
        let yf: Vec<f32> = y.iter().map(|&v| v as f32).collect();
        let mut first = None;
        for epoch in 0..3 {
            for b in (0..y.len()).step_by(64) {
                let e = (b + 64).min(y.len());
                net.train_step(&x[b * 64..e * 64], &[e - b, 64], &yf[b..e]).unwrap();
            }
            let (l, _) = read(net.take_train().unwrap());
            if epoch == 0 {
                first = Some(l);
            }
        }
        let (tx, ty) = (split.test.images(), split.test.labels());
        let tyf: Vec<f32> = ty.iter().map(|&v| v as f32).collect();
        net.eval_step(tx, &[ty.len(), 64], &tyf).unwrap();
        let (l, acc) = read(net.take_eval().unwrap());
        assert!(l < first.unwrap(), "loss {l} vs first epoch {first:?}");
        assert!(acc > 0.85, "test accuracy {acc}");
        assert_eq!(net.predict(tx, &[ty.len(), 64]).unwrap().dims(), &[ty.len(), 10]);

        let e = net.predict(&[0.0; 100], &[1, 100]).unwrap_err().to_string();
        assert!(e.contains("predict") && e.contains("[1, 100]") && e.contains("[N, 64]"), "{e}");
        let e = net.train_step(&[0.0; 64], &[1, 64], &[10.0]).unwrap_err().to_string();
        assert!(e.contains("label 10"), "{e}");
    }
}
