//! A compiled model and its training state, driven one batch at a time.
//!
//! The JavaScript `fit` loop owns the schedule (epochs, shuffling, callbacks, yielding to the
//! event loop); each step here only records device work. Loss and correct-prediction sums stay
//! on the device in [`Sums`] until the caller takes them ([`Net::take_train`]) and reads the
//! two numbers with one asynchronous readback, as `pixelgrad_nn::train` does natively.

use pixelgrad::nn::loss::TargetKind;
use pixelgrad::nn::mixed::{train_batch_mixed, LossScaler, Precision, ScaleOptions};
use pixelgrad::nn::optim::{Optimizer, OptimizerKind};
use pixelgrad::nn::train::{train_batch, Sums};
use pixelgrad::nn::{Loss, Mode, Module};
use pixelgrad::{no_grad, Device, Error, Result, Tensor};
use serde_json::Value;
use std::rc::Rc;

use crate::spec::{self, Built, Shape};

mod checkpoint;

/// Rows per forward pass in [`Net::predict`] (bounds texture and buffer sizes on the GPU).
const PREDICT_CHUNK: usize = 1024;

/// A network plus what `compile` chose and the running training/evaluation sums.
pub struct Net {
    pub dev: Device,
    pub built: Built,
    /// The config it was built from (saved with the weights).
    pub config: Value,
    /// Imported models used by `onnx` layers (kept for export).
    pub onnx: Vec<Rc<pixelgrad::onnx::Model>>,
    opt: Option<Box<dyn Optimizer>>,
    loss: Loss,
    train: Sums,
    eval: Sums,
    /// What `set_precision` asked for, and the loss scaler where mixed precision runs.
    precision: Precision,
    scaler: Option<LossScaler>,
}

impl Net {
    /// Builds the layers of `config` (see [`spec::build`]) on `dev`.
    pub fn new(dev: &Device, config: Value) -> Result<Net> {
        Net::new_with(dev, config, Vec::new())
    }

    /// [`Net::new`] with the imported models that `onnx` layers of `config` refer to.
    pub fn new_with(dev: &Device, config: Value, onnx: Vec<Rc<pixelgrad::onnx::Model>>) -> Result<Net> {
        let built = spec::build_with(dev, &config, &onnx)?;
        Ok(Net {
            dev: dev.clone(),
            built,
            config,
            onnx,
            opt: None,
            loss: Loss::CrossEntropy,
            train: Sums::new(),
            eval: Sums::new(),
            precision: Precision::F32,
            scaler: None,
        })
    }

    /// Chooses the optimizer (fresh state; a name of `OptimizerKind::parse`, with `momentum`
    /// overriding the momentum of the SGD family when nonzero) and the loss. The model must
    /// end in `[N, classes]`.
    pub fn compile(&mut self, optimizer: &str, lr: f32, momentum: f32, loss: &str) -> Result<()> {
        if !(lr.is_finite() && lr > 0.0) {
            return Err(Error::invalid("compile", format!("learning rate must be a positive number, got {lr}")));
        }
        if !(momentum.is_finite() && (0.0..1.0).contains(&momentum)) {
            return Err(Error::invalid("compile", format!("momentum must be in [0, 1), got {momentum}")));
        }
        let mut kind = OptimizerKind::parse(optimizer)?;
        if let OptimizerKind::Sgd { momentum: m, .. } = &mut kind {
            if momentum > 0.0 {
                *m = momentum;
            }
        }
        let opt = kind.build(lr);
        self.loss = Loss::parse(loss)?;
        self.classes()?;
        self.opt = Some(opt);
        Ok(())
    }

    /// Training precision, `f32` or `mixed` (f16 activations and gradients, f32 master
    /// weights, dynamic loss scaling; see `pixelgrad_nn::mixed`). The loss scale starts afresh.
    /// Where the device cannot run mixed precision, training stays f32 and
    /// [`Net::precision_info`] says why.
    pub fn set_precision(&mut self, name: &str) -> Result<()> {
        let p = Precision::parse(name).map_err(|e| Error::invalid("compile", e.to_string()))?;
        self.scaler = pixelgrad::nn::mixed::scaler_for(p, &self.dev, ScaleOptions::default())?;
        self.precision = p;
        Ok(())
    }

    /// `(asked, running, fallback reason)`: the precision `set_precision` asked for, the one
    /// training runs in, and why they differ (`None` when they do not).
    pub fn precision_info(&self) -> (&'static str, &'static str, Option<String>) {
        match (self.precision, &self.scaler) {
            (Precision::F32, _) => ("f32", "f32", None),
            (Precision::Mixed, Some(_)) => ("mixed", "mixed", None),
            (Precision::Mixed, None) => ("mixed", "f32", Some(pixelgrad::nn::mixed::fallback_reason(&self.dev))),
        }
    }

    /// The network and its optimizer, lent to a training run (`pixelgrad_nn::train::Parts`).
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn fit_parts(&mut self) -> Result<(&dyn Module, &mut dyn Optimizer)> {
        let Some(opt) = self.opt.as_deref_mut() else {
            return Err(Error::invalid("fit", "the model is not compiled; call model.compile({ optimizer, loss }) first"));
        };
        Ok((&self.built.seq, opt))
    }

    /// The compiled loss.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn loss(&self) -> Loss {
        self.loss
    }

    /// The precision `set_precision` asked for.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn precision(&self) -> Precision {
        self.precision
    }

    /// The loss scaler a training run ends with (it goes on from there).
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn set_scaler(&mut self, s: LossScaler) {
        self.scaler = Some(s);
    }

    /// The loss scaler of mixed-precision training (`None` in f32).
    pub fn scaler(&self) -> Option<&LossScaler> {
        self.scaler.as_ref()
    }

    pub fn is_compiled(&self) -> bool {
        self.opt.is_some()
    }

    /// Number of outputs (classes), of the sample or of every position of a sequence output
    /// `[seq, classes]` (a decoder's next token); an error if the model ends in an image.
    pub fn classes(&self) -> Result<usize> {
        match self.built.output {
            Shape::Flat(c) | Shape::Sequence(_, c) if c > 0 => Ok(c),
            other => Err(Error::invalid(
                "compile",
                format!(
                    "the model's output is {:?} per sample; end with layers.flatten() and a dense layer giving [N, classes]",
                    other.user_dims(self.built.format)
                ),
            )),
        }
    }

    /// Checks `shape` = `[n, ..input]` and `x.len()`, uploads the batch.
    fn input(&self, op: &'static str, x: &[f32], shape: &[usize]) -> Result<Tensor> {
        self.check_input(op, x, shape)?;
        Tensor::from_vec(&self.dev, x, shape.to_vec())
    }

    pub(crate) fn check_input(&self, op: &'static str, x: &[f32], shape: &[usize]) -> Result<()> {
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
        self.check_ids(op, x)
    }

    /// The vocabulary of the model's first layer where it is an embedding (its input is token ids).
    fn vocab(&self) -> Option<usize> {
        let first = self.built.seq.layers().first()?;
        first.as_any()?.downcast_ref::<pixelgrad::nn::layers::Embedding>().map(|e| e.vocab())
    }

    /// Token ids for a model that starts with an embedding are whole numbers in `0..vocab`,
    /// checked here on the host: WebGPU in the browser cannot read them back for the embedding
    /// to check (it then leaves the check to whoever uploaded them).
    fn check_ids(&self, op: &'static str, x: &[f32]) -> Result<()> {
        let Some(v) = self.vocab() else { return Ok(()) };
        if let Some((i, id)) = x.iter().enumerate().find(|(_, id)| !(id.fract() == 0.0 && **id >= 0.0 && (**id as usize) < v)) {
            return Err(Error::invalid(
                op,
                format!("token id {id} at flat index {i} is not a whole number in 0..{v} (the embedding's inputDim)"),
            ));
        }
        Ok(())
    }

    /// [`Net::check_ids`] of a device tensor: read back where the device can block; where it
    /// cannot (WebGPU in the browser), ids must come as host values.
    fn check_device_ids(&self, op: &'static str, x: &Tensor) -> Result<()> {
        if self.vocab().is_none() {
            return Ok(());
        }
        match x.to_vec() {
            Ok(v) => self.check_ids(op, &v),
            Err(Error::WouldBlock { .. }) => Err(Error::invalid(
                op,
                format!(
                    "the model starts with an embedding: on {} give its token ids as a host tensor (pg.tensor), which can be checked",
                    self.dev.name()
                ),
            )),
            Err(e) => Err(e),
        }
    }

    /// Checks the targets `y` of shape `y_shape` for `n` samples and uploads them: class
    /// indices `[n]` (whole numbers below the model's output count), or float targets of the
    /// model's output shape `[n, C]`, used as given (a `[n]` vector for a model with one output
    /// counts as `[n, 1]`). Anything else is an error naming both shapes.
    fn targets(&self, op: &'static str, y: &[f32], y_shape: &[usize], n: usize) -> Result<Tensor> {
        let dims = self.check_targets(op, y, y_shape, n)?;
        Tensor::from_vec(&self.dev, y, dims)
    }

    /// The shape the targets are uploaded with (see [`Net::targets`]).
    pub(crate) fn check_targets(&self, op: &'static str, y: &[f32], y_shape: &[usize], n: usize) -> Result<Vec<usize>> {
        let classes = self.classes()?;
        if y.len() != y_shape.iter().product::<usize>() {
            return Err(Error::invalid(op, format!("{} target values do not fill shape {y_shape:?}", y.len())));
        }
        if y_shape.first() != Some(&n) {
            return Err(Error::Shape {
                op,
                shapes: vec![vec![n], y_shape.to_vec()],
                backend: self.dev.name(),
                msg: format!("targets of shape {y_shape:?} do not match {n} samples (class indices [{n}] or targets [{n}, {classes}])"),
            });
        }
        let output = [classes];
        if let Shape::Sequence(s, _) = self.built.output {
            // a sequence output [n, s, classes] takes a class index at every position
            if y_shape != [n, s] {
                return Err(Error::Shape {
                    op,
                    shapes: vec![vec![n, s, classes], y_shape.to_vec()],
                    backend: self.dev.name(),
                    msg: format!("the model's output is a sequence [{n}, {s}, {classes}]: give class indices at every position [{n}, {s}]"),
                });
            }
            self.loss.check(op, &output, TargetKind::Classes).map_err(|e| e.with_backend(&self.dev.name()))?;
            if let Some((i, v)) = y.iter().enumerate().find(|(_, v)| !(v.fract() == 0.0 && **v >= 0.0 && (**v as usize) < classes)) {
                return Err(Error::invalid(
                    op,
                    format!("label {v} at position {} of sample {} is not a class index in 0..{classes}", i % s, i / s),
                ));
            }
            return Ok(vec![n, s]);
        }
        let dims = match y_shape {
            [_] if classes == 1 => vec![n, 1],
            [_] => {
                self.loss.check(op, &output, TargetKind::Classes).map_err(|e| e.with_backend(&self.dev.name()))?;
                if let Some((i, v)) = y.iter().enumerate().find(|(_, v)| !(v.fract() == 0.0 && **v >= 0.0 && (**v as usize) < classes)) {
                    return Err(Error::invalid(
                        op,
                        format!(
                            "label {v} of sample {i} is not a class index in 0..{classes} (the model has {classes} outputs; \
                             float targets need the output's shape [{n}, {classes}])"
                        ),
                    ));
                }
                return Ok(vec![n]);
            }
            _ => y_shape.to_vec(),
        };
        self.loss.check(op, &output, TargetKind::Values(&dims[1..])).map_err(|e| e.with_backend(&self.dev.name()))?;
        Ok(dims)
    }

    /// Whether the loss reports an accuracy for targets of `y_shape` (not for MSE on float
    /// targets: a regression has none).
    pub fn has_accuracy(&self, y_shape: &[usize]) -> bool {
        let classes = self.classes().unwrap_or(0);
        let kind = if y_shape.len() == 1 && classes != 1 { TargetKind::Classes } else { TargetKind::Values(&[]) };
        self.loss.has_accuracy(kind)
    }

    /// One training step on a batch: forward, loss, backward, optimizer update. Sums stay on
    /// the device; nothing is read back. `y` holds class indices `[n]` or float targets
    /// `[n, C]` (`y_shape`).
    pub fn train_step(&mut self, x: &[f32], shape: &[usize], y: &[f32], y_shape: &[usize]) -> Result<()> {
        self.check_input("fit", x, shape)?;
        let y_dims = self.check_targets("fit", y, y_shape, shape[0])?;
        let Some(opt) = self.opt.as_mut() else {
            return Err(Error::invalid("fit", "the model is not compiled; call model.compile({ optimizer, loss }) first"));
        };
        let (dev, seq, loss, train, scaler) = (&self.dev, &self.built.seq, self.loss, &mut self.train, &mut self.scaler);
        // One step plan per model, optimizer, input shape and precision: from the third step
        // on, the GPU backends replay prepared buffers and bind groups / framebuffers. The step
        // ends with one submission, so GPU queues never grow between reads.
        let mut key_dims = shape.to_vec();
        key_dims.push(scaler.is_some() as usize);
        let key = pixelgrad::nn::step_key(seq, &**opt, &key_dims);
        dev.step(key, || {
            let xb = Tensor::from_vec(dev, x, shape.to_vec())?;
            let yb = Tensor::from_vec(dev, y, y_dims.clone())?;
            match scaler.as_mut() {
                Some(s) => train_batch_mixed(seq, opt.as_mut(), loss, &xb, &yb, train, s),
                None => train_batch(seq, opt.as_mut(), loss, &xb, &yb, train),
            }
        })
    }

    /// [`Net::train_step`] on rows `rows` of `x` (`[N, ..input]`, already on the device: a
    /// fromPixels result or features joined with `pg.concat`), gathered into the batch on the
    /// device, so the training set is never read back or uploaded again. `y` holds the
    /// batch's targets (host values, as in `train_step`).
    pub fn train_step_rows(&mut self, x: &Tensor, rows: &[u32], y: &[f32], y_shape: &[usize]) -> Result<()> {
        self.check_tensor("fit", x)?;
        let n = x.dims()[0];
        if rows.is_empty() {
            return Err(Error::invalid("fit", "a batch needs at least one row"));
        }
        if let Some(&r) = rows.iter().find(|&&r| r as usize >= n) {
            return Err(Error::invalid("fit", format!("row {r} is out of range: x has {n} samples")));
        }
        let m = rows.len();
        let y_dims = self.check_targets("fit", y, y_shape, m)?;
        let Some(opt) = self.opt.as_mut() else {
            return Err(Error::invalid("fit", "the model is not compiled; call model.compile({ optimizer, loss }) first"));
        };
        let (dev, seq, loss, train, scaler) = (&self.dev, &self.built.seq, self.loss, &mut self.train, &mut self.scaler);
        let per: usize = x.dims()[1..].iter().product();
        let mut shape = x.dims().to_vec();
        shape[0] = m;
        // The batch: rows gathered along axis 0 of x seen as [N, per] (indices as f32, exact
        // below 2^24), with no gradient (x is data).
        let xb = {
            let _g = no_grad();
            let idx: Vec<f32> = rows.iter().map(|&r| r as f32).collect();
            let idx = Tensor::from_vec(dev, &idx, vec![m, 1])?.broadcast_to(vec![m, per])?;
            x.reshape(vec![n, per])?.gather(0, &idx)?.reshape(shape)?
        };
        let yb = Tensor::from_vec(dev, y, y_dims)?;
        match scaler.as_mut() {
            Some(s) => train_batch_mixed(seq, opt.as_mut(), loss, &xb, &yb, train, s),
            None => train_batch(seq, opt.as_mut(), loss, &xb, &yb, train),
        }
    }

    /// Adds one batch to the evaluation sums (inference mode, no gradients).
    pub fn eval_step(&mut self, x: &[f32], shape: &[usize], y: &[f32], y_shape: &[usize]) -> Result<()> {
        let _g = no_grad();
        let xb = self.input("evaluate", x, shape)?;
        let yb = self.targets("evaluate", y, y_shape, shape[0])?;
        let out = self.built.seq.forward(&xb, Mode::Eval)?;
        let l = self.loss.compute(&out, &yb)?;
        self.eval.add(&l, self.loss.correct(&out, &yb)?.as_ref(), shape[0])
    }

    /// Takes the training sums since the last take: `([loss sum, correct], samples)`, or
    /// `([loss sum], samples)` where there is no accuracy.
    pub fn take_train(&mut self) -> Result<Option<(Tensor, usize)>> {
        self.train.take()
    }

    /// Takes the evaluation sums.
    pub fn take_eval(&mut self) -> Result<Option<(Tensor, usize)>> {
        self.eval.take()
    }

    /// Layer `layer`'s output (counting layers as listed in `sequential`) for `x [N, ..input]`
    /// on the device, inference mode, in the user's layout (`[N, h, w, c]` for images).
    pub fn activations(&self, x: &Tensor, layer: usize) -> Result<Tensor> {
        let t = self.activations_internal(x, layer)?;
        if t.rank() == 4 {
            t.permute(&[0, 2, 3, 1])
        } else {
            Ok(t)
        }
    }

    /// [`Net::activations`] in the engine's layout (`[N, c, h, w]` for images).
    pub fn activations_internal(&self, x: &Tensor, layer: usize) -> Result<Tensor> {
        let _g = no_grad();
        let infos = &self.built.layers;
        let info = infos.get(layer).ok_or_else(|| {
            Error::invalid("activations", format!("layer index {layer} is out of range: the model has {} layers", infos.len()))
        })?;
        self.check_tensor("activations", x)?;
        let mut t = x.clone();
        for m in &self.built.seq.layers()[..info.end] {
            t = m.forward(&t, Mode::Eval)?;
        }
        Ok(t)
    }

    pub(crate) fn check_tensor(&self, op: &'static str, x: &Tensor) -> Result<()> {
        let shape = x.dims();
        if !(shape.len() == self.built.input.len() + 1 && shape[1..] == self.built.input[..] && shape[0] > 0) {
            let want: Vec<String> = self.built.input.iter().map(|d| d.to_string()).collect();
            return Err(Error::Shape {
                op,
                shapes: vec![shape.to_vec()],
                backend: self.dev.name(),
                msg: format!("the model expects input [N, {}]", want.join(", ")),
            });
        }
        self.check_device_ids(op, x)
    }

    /// Outputs for a tensor already on the device (`pg.fromPixels`, another model's output):
    /// inference mode, nothing uploaded or read back. `x` must be `[N, ..input]`.
    pub fn predict_tensor(&self, x: &Tensor) -> Result<Tensor> {
        let _g = no_grad();
        self.check_tensor("predict", x)?;
        self.built.seq.forward(x, Mode::Eval)
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

    /// The layout table of the model's live tensors: parameters, buffers, optimizer state.
    pub fn layouts(&self) -> Vec<pixelgrad::nn::layouts::LayoutRow> {
        pixelgrad::nn::layouts::layout_table(&self.built.seq, self.opt.as_deref())
    }

    /// Every parameter and buffer with its name (what a save writes).
    pub fn named_tensors(&self) -> Vec<(String, Tensor)> {
        pixelgrad::nn::io::named_tensors(&self.built.seq)
    }

    /// Replaces the weight (parameter or buffer) called `name` with host values of the same
    /// shape.
    pub fn set_weight(&self, name: &str, data: &[f32], shape: &[usize]) -> Result<()> {
        let mut known = Vec::new();
        let mut found: Option<Result<()>> = None;
        let upload = |cur: &[usize]| -> Result<Tensor> {
            if cur != shape {
                return Err(Error::invalid("setWeights", format!("weight '{name}' has shape {cur:?}, got {shape:?}")));
            }
            Tensor::from_vec(&self.dev, data, shape.to_vec())
        };
        self.built.seq.visit_params(&mut |n, p| {
            known.push(n.to_string());
            if n == name && found.is_none() {
                found = Some(upload(p.shape().dims()).and_then(|t| p.set(&t)));
            }
        });
        self.built.seq.visit_buffers(&mut |n, b| {
            known.push(n.to_string());
            if n == name && found.is_none() {
                found = Some(upload(b.get().dims()).map(|t| b.set(&t)));
            }
        });
        found
            .unwrap_or_else(|| Err(Error::invalid("setWeights", format!("the model has no weight '{name}' (it has {})", known.join(", ")))))
    }

    /// ONNX bytes of the network of `config` with `weights` (host copies of every named
    /// tensor, as the caller read them): the network is rebuilt on the CPU, so export needs no
    /// blocking GPU read.
    pub fn onnx_bytes(config: &Value, onnx: &[Rc<pixelgrad::onnx::Model>], weights: &[(String, Vec<usize>, Vec<f32>)]) -> Result<Vec<u8>> {
        let cpu = Device::new(pixelgrad::cpu::CpuBackend::new());
        let copy = Net::new_with(&cpu, config.clone(), onnx.to_vec())?;
        for (n, shape, v) in weights {
            copy.set_weight(n, v, shape)?;
        }
        pixelgrad::onnx::export::to_onnx(&copy.built.seq, &copy.built.input).map_err(Error::from)
    }

    /// Loads safetensors bytes written by a save of the same architecture.
    pub fn load_bytes(&self, bytes: &[u8]) -> Result<()> {
        pixelgrad::nn::io::load_bytes(&self.built.seq, bytes)
    }

    /// The summary table.
    pub fn summary(&self) -> String {
        spec::summary(&self.built)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad::cpu::CpuBackend;

    fn read(t: Option<(Tensor, usize)>) -> (f32, f32) {
        let (t, n) = t.unwrap();
        let v = t.to_vec().unwrap();
        (v[0] / n as f32, v[1] / n as f32)
    }

    #[test]
    fn predict_tensor_takes_device_tensors_of_the_input_shape() {
        let dev = Device::new(CpuBackend::new());
        let cfg = serde_json::json!({"seed": 2, "layers": [
            {"type": "conv2d", "filters": 2, "kernelSize": 3, "inputShape": [4, 4, 3]},
            {"type": "flatten"},
            {"type": "dense", "units": 3}
        ]});
        let net = Net::new(&dev, cfg).unwrap();
        let x: Vec<f32> = (0..2 * 48).map(|i| (i % 7) as f32 / 7.0).collect();
        let want = net.predict(&x, &[2, 4, 4, 3]).unwrap().to_vec().unwrap();
        let got = net.predict_tensor(&Tensor::from_vec(&dev, &x, [2, 4, 4, 3]).unwrap()).unwrap().to_vec().unwrap();
        assert_eq!(got, want);
        let e = net.predict_tensor(&Tensor::zeros(&dev, [1, 3, 4, 4]).unwrap()).unwrap_err().to_string();
        assert!(e.contains("expects input [N, 4, 4, 3]"), "{e}");
    }

    /// Training on rows of a device tensor is the same computation as training on the host
    /// batch of those rows: the same weights after the same steps.
    #[test]
    fn train_step_rows_matches_train_step_on_the_same_rows() {
        let dev = Device::new(CpuBackend::new());
        let cfg = serde_json::json!({"seed": 3, "layers": [
            {"type": "flatten", "inputShape": [2, 2, 3]},
            {"type": "dense", "units": 2}
        ]});
        let n = 6;
        let x: Vec<f32> = (0..n * 12).map(|i| ((i * 5) % 13) as f32 / 13.0).collect();
        let y: Vec<f32> = (0..n).map(|i| (i % 2) as f32).collect();
        let rows = [4u32, 1, 3];
        let mut a = Net::new(&dev, cfg.clone()).unwrap();
        let mut b = Net::new(&dev, cfg).unwrap();
        for m in [&mut a, &mut b] {
            m.compile("adam", 1e-2, 0.0, "softmaxCrossEntropy").unwrap();
        }
        let xb: Vec<f32> = rows.iter().flat_map(|&r| x[r as usize * 12..(r as usize + 1) * 12].iter().copied()).collect();
        let yb: Vec<f32> = rows.iter().map(|&r| y[r as usize]).collect();
        let all = Tensor::from_vec(&dev, &x, [n, 2, 2, 3]).unwrap();
        for _ in 0..3 {
            a.train_step(&xb, &[3, 2, 2, 3], &yb, &[3]).unwrap();
            b.train_step_rows(&all, &rows, &yb, &[3]).unwrap();
        }
        let probe = Tensor::from_vec(&dev, &x[..12], [1, 2, 2, 3]).unwrap();
        let (pa, pb) = (a.predict_tensor(&probe).unwrap().to_vec().unwrap(), b.predict_tensor(&probe).unwrap().to_vec().unwrap());
        for (u, v) in pa.iter().zip(&pb) {
            assert!((u - v).abs() < 1e-6, "{pa:?} vs {pb:?}");
        }
        assert!(b.train_step_rows(&all, &[6], &[0.0], &[1]).unwrap_err().to_string().contains("row 6 is out of range"));
    }

    #[test]
    fn activations_of_each_layer_end_in_the_model_output() {
        let dev = Device::new(CpuBackend::new());
        let cfg = serde_json::json!({"seed": 4, "layers": [
            {"type": "conv2d", "filters": 2, "kernelSize": 3, "inputShape": [5, 5, 1], "activation": "relu"},
            {"type": "flatten"},
            {"type": "dense", "units": 3}
        ]});
        let net = Net::new(&dev, cfg).unwrap();
        let x = Tensor::from_vec(&dev, &(0..25).map(|i| (i % 5) as f32 - 2.0).collect::<Vec<_>>(), [1, 5, 5, 1]).unwrap();
        let a0 = net.activations(&x, 0).unwrap();
        assert_eq!(a0.dims(), &[1, 3, 3, 2]);
        assert!(a0.to_vec().unwrap().iter().all(|&v| v >= 0.0), "relu is part of layer 0");
        assert_eq!(net.activations_internal(&x, 0).unwrap().dims(), &[1, 2, 3, 3]);
        assert_eq!(net.activations(&x, 1).unwrap().dims(), &[1, 18]);
        assert_eq!(net.activations(&x, 2).unwrap().to_vec().unwrap(), net.predict_tensor(&x).unwrap().to_vec().unwrap());
        let e = net.activations(&x, 3).unwrap_err().to_string();
        assert!(e.contains("layer index 3 is out of range"), "{e}");
    }

    #[test]
    fn mixed_precision_trains_and_reports_what_runs() {
        let cfg = serde_json::json!({"seed": 1, "layers": [
            {"type": "dense", "units": 16, "inputShape": [8], "activation": "relu"},
            {"type": "dense", "units": 2}
        ]});
        let x: Vec<f32> = (0..64).map(|i| ((i * 7) % 11) as f32 / 11.0).collect();
        let y: Vec<f32> = (0..8).map(|i| (i % 2) as f32).collect();
        // (the f32 fallback of devices without f16 is tested in pixelgrad-nn and in Chromium)
        for (dev, runs) in [(Device::new(CpuBackend::new()), "mixed")] {
            let mut net = Net::new(&dev, cfg.clone()).unwrap();
            net.compile("adam", 1e-2, 0.0, "softmaxCrossEntropy").unwrap();
            assert_eq!(net.precision_info(), ("f32", "f32", None));
            net.set_precision("mixed").unwrap();
            let (asked, running, why) = net.precision_info();
            assert_eq!((asked, running), ("mixed", runs));
            assert_eq!(why.is_some(), runs == "f32", "{why:?}");
            for _ in 0..4 {
                net.train_step(&x, &[8, 8], &y, &[8]).unwrap();
            }
            assert_eq!(net.scaler().is_some(), runs == "mixed");
            let (l, _) = read(net.take_train().unwrap());
            assert!(l.is_finite());
        }
        let mut net = Net::new(&Device::new(CpuBackend::new()), cfg).unwrap();
        let e = net.set_precision("bf16").unwrap_err().to_string();
        assert!(e.contains("f32 or mixed"), "{e}");
    }

    #[test]
    fn digits_mlp_learns_and_errors_are_clear() {
        let dev = Device::new(CpuBackend::new());
        let cfg = serde_json::json!({"seed": 1, "layers": [
            {"type": "dense", "units": 32, "inputShape": [64], "activation": "relu"},
            {"type": "dense", "units": 10}
        ]});
        let mut net = Net::new(&dev, cfg).unwrap();
        let e = net.train_step(&[0.0; 64], &[1, 64], &[0.0], &[1]).unwrap_err();
        assert!(e.to_string().contains("compile"), "{e}");
        net.compile("adam", 1e-2, 0.0, "softmaxCrossEntropy").unwrap();
        let split = pixelgrad::data::digits_split(0.2, 42).unwrap();
        let (x, y) = (split.train.images(), split.train.labels());
        let yf: Vec<f32> = y.iter().map(|&v| v as f32).collect();
        let mut first = None;
        for epoch in 0..3 {
            for b in (0..y.len()).step_by(64) {
                let e = (b + 64).min(y.len());
                net.train_step(&x[b * 64..e * 64], &[e - b, 64], &yf[b..e], &[e - b]).unwrap();
            }
            let (l, _) = read(net.take_train().unwrap());
            if epoch == 0 {
                first = Some(l);
            }
        }
        let (tx, ty) = (split.test.images(), split.test.labels());
        let tyf: Vec<f32> = ty.iter().map(|&v| v as f32).collect();
        net.eval_step(tx, &[ty.len(), 64], &tyf, &[ty.len()]).unwrap();
        let (l, acc) = read(net.take_eval().unwrap());
        assert!(l < first.unwrap(), "loss {l} vs first epoch {first:?}");
        assert!(acc > 0.85, "test accuracy {acc}");
        assert_eq!(net.predict(tx, &[ty.len(), 64]).unwrap().dims(), &[ty.len(), 10]);

        let e = net.predict(&[0.0; 100], &[1, 100]).unwrap_err().to_string();
        assert!(e.contains("predict") && e.contains("[1, 100]") && e.contains("[N, 64]"), "{e}");
        let e = net.train_step(&[0.0; 64], &[1, 64], &[10.0], &[1]).unwrap_err().to_string();
        assert!(e.contains("label 10"), "{e}");
    }
}

#[cfg(test)]
mod target_tests {
    use super::*;
    use pixelgrad::cpu::CpuBackend;

    /// The seed network (48-64-2, sigmoid, MSE, SGD, batch 1) on float targets: the targets
    /// are used as given (no argmax), so the loss goes well below what class indices give.
    #[test]
    fn a_decoder_trains_on_class_indices_at_every_position_and_checks_its_token_ids() {
        let dev = Device::new(CpuBackend::new());
        let cfg = serde_json::json!({"seed": 4, "layers": [
            {"type": "embedding", "inputDim": 5, "outputDim": 8, "inputShape": [4]},
            {"type": "positionEmbedding", "sequenceLength": 4},
            {"type": "transformerBlock", "numHeads": 2, "intermediateDim": 16},
            {"type": "dense", "units": 5}
        ]});
        let mut net = Net::new(&dev, cfg).unwrap();
        net.compile("adam", 0.01, 0.0, "softmaxCrossEntropy").unwrap();
        assert_eq!(net.classes().unwrap(), 5);
        // copy the previous token: ids [n, 4], the next token at every position [n, 4]
        let n = 16;
        let x: Vec<f32> = (0..n * 4).map(|i| ((i * 7 + i / 4) % 5) as f32).collect();
        let y: Vec<f32> = x.chunks(4).flat_map(|r| [r[0], r[0], r[1], r[2]]).collect();
        assert!(net.has_accuracy(&[n, 4]));
        let mut losses = Vec::new();
        for _ in 0..30 {
            net.train_step(&x, &[n, 4], &y, &[n, 4]).unwrap();
            let (t, k) = net.take_train().unwrap().unwrap();
            let v = t.to_vec().unwrap();
            assert_eq!(v.len(), 2, "a loss and an accuracy sum");
            assert!(v[1] / k as f32 <= 1.0, "accuracy is a share of positions: {v:?}");
            losses.push(v[0] / k as f32);
        }
        assert!(losses[29] < 0.5 * losses[0], "{losses:?}");
        assert_eq!(net.predict(&x, &[n, 4]).unwrap().dims(), &[n, 4, 5]);
        // class indices per sample, or a label out of range, name what is wrong
        let e = net.train_step(&x, &[n, 4], &y[..n], &[n]).unwrap_err().to_string();
        assert!(e.contains("every position"), "{e}");
        let mut bad = y.clone();
        bad[5] = 5.0;
        let e = net.train_step(&x, &[n, 4], &bad, &[n, 4]).unwrap_err().to_string();
        assert!(e.contains("label 5 at position 1 of sample 1"), "{e}");
        // token ids out of the vocabulary, or not whole, are refused on the host
        for id in [5.0, -1.0, 0.5, f32::NAN] {
            let mut ids = x[..4].to_vec();
            ids[2] = id;
            let e = net.predict(&ids, &[1, 4]).unwrap_err().to_string();
            assert!(e.contains("token id") && e.contains("0..5"), "{e}");
            let dev_ids = Tensor::from_vec(&dev, &ids, vec![1, 4]).unwrap();
            assert!(net.predict_tensor(&dev_ids).unwrap_err().to_string().contains("token id"));
        }
    }

    #[test]
    fn float_targets_train_a_regression_and_bad_targets_name_both_shapes() {
        let dev = Device::new(CpuBackend::new());
        let cfg = serde_json::json!({"seed": 2, "layers": [
            {"type": "dense", "units": 64, "inputShape": [48], "activation": "sigmoid"},
            {"type": "dense", "units": 2, "activation": "sigmoid"}
        ]});
        let mut net = Net::new(&dev, cfg).unwrap();
        net.compile("sgd", 0.5, 0.0, "meanSquaredError").unwrap();
        let n = 32;
        let x: Vec<f32> = (0..n * 48).map(|i| ((i * 31) % 23) as f32 / 23.0).collect();
        let y: Vec<f32> = (0..n).flat_map(|i| [0.1 + 0.8 * (i % 4) as f32 / 3.0, 0.3]).collect();
        assert!(!net.has_accuracy(&[n, 2]) && net.has_accuracy(&[n]));
        let mut losses = Vec::new();
        for _ in 0..20 {
            for i in 0..n {
                net.train_step(&x[i * 48..(i + 1) * 48], &[1, 48], &y[i * 2..(i + 1) * 2], &[1, 2]).unwrap();
            }
            let (t, k) = net.take_train().unwrap().unwrap();
            let v = t.to_vec().unwrap();
            assert_eq!(v.len(), 1, "no accuracy sum for a regression");
            losses.push(v[0] / k as f32);
        }
        assert!(losses[19] < 0.8 * losses[0] && losses.windows(2).all(|w| w[1] < w[0]), "{losses:?}");
        net.eval_step(&x, &[n, 48], &y, &[n, 2]).unwrap();
        let (t, k) = net.take_eval().unwrap().unwrap();
        assert!(t.to_vec().unwrap()[0] / (k as f32) < losses[0]);
        // targets of another shape: an error naming both, and the next valid call works
        let e = net.train_step(&x[..48], &[1, 48], &[0.1, 0.2, 0.3], &[1, 3]).unwrap_err().to_string();
        assert!(e.contains("[N, 3]") && e.contains("[N, 2]") && e.contains("mse"), "{e}");
        let e = net.train_step(&x[..48], &[1, 48], &[0.1, 0.2], &[2]).unwrap_err().to_string();
        assert!(e.contains("do not match 1 samples"), "{e}");
        let e = net.eval_step(&x[..48], &[1, 48], &[0.5], &[1]).unwrap_err().to_string();
        assert!(e.contains("label 0.5") && e.contains("[1, 2]"), "{e}");
        net.train_step(&x[..48], &[1, 48], &y[..2], &[1, 2]).unwrap();
        // one output: a [n] vector is the [n, 1] regression target, not class indices
        let one = serde_json::json!({"layers": [{"type": "dense", "units": 1, "inputShape": [48]}]});
        let mut net1 = Net::new(&dev, one).unwrap();
        net1.compile("sgd", 0.1, 0.0, "meanSquaredError").unwrap();
        net1.train_step(&x[..96], &[2, 48], &[0.25, 0.75], &[2]).unwrap();
        assert!(!net1.has_accuracy(&[2]));
    }
}

#[cfg(test)]
mod export_tests {
    use super::*;
    use pixelgrad::onnx::{Input, Model, Session};

    #[test]
    fn weights_by_name_and_onnx_export_of_an_nhwc_conv_net() {
        let dev = Device::new(pixelgrad::cpu::CpuBackend::new());
        let cfg = serde_json::json!({"layers": [
            {"type": "conv2d", "filters": 3, "kernelSize": 3, "padding": "same", "activation": "relu", "inputShape": [6, 6, 2]},
            {"type": "maxPooling2d", "poolSize": 2},
            {"type": "flatten"},
            {"type": "dense", "units": 4}
        ], "seed": 3});
        let net = Net::new(&dev, cfg.clone()).unwrap();
        let host: Vec<(String, Vec<usize>, Vec<f32>)> =
            net.named_tensors().iter().map(|(n, t)| (n.clone(), t.dims().to_vec(), t.to_vec().unwrap())).collect();
        let (n0, s0, v0) = &host[0];
        assert!(net.set_weight(n0, v0, s0).is_ok());
        assert!(net.set_weight(n0, &v0[1..], &[v0.len() - 1]).unwrap_err().to_string().contains("has shape"));
        assert!(net.set_weight("nope", v0, s0).unwrap_err().to_string().contains("no weight 'nope'"));
        // export, re-import: the same predictions on NHWC input
        let bytes = Net::onnx_bytes(&cfg, &[], &host).unwrap();
        let x: Vec<f32> = (0..2 * 6 * 6 * 2).map(|i| ((i * 7) % 11) as f32 / 10.0 - 0.5).collect();
        let want = net.predict(&x, &[2, 6, 6, 2]).unwrap().to_vec().unwrap();
        let s = Session::new(Model::from_bytes(&bytes).unwrap(), &dev).unwrap();
        let xt = Tensor::from_vec(&dev, &x, [2, 6, 6, 2]).unwrap();
        let got = s.run(&[("input", Input::Tensor(xt))]).unwrap()[0].1.to_host().unwrap().to_f32();
        assert_eq!(got.len(), want.len());
        assert!(got.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5), "{got:?} vs {want:?}");
    }

    #[test]
    fn an_imported_model_is_a_layer_frozen_or_not() {
        let dev = Device::new(pixelgrad::cpu::CpuBackend::new());
        // an ONNX file made by our own export: 3 -> 5 dense with relu
        let mut init = pixelgrad::nn::Init::new(4);
        let inner = pixelgrad::nn::Sequential::new()
            .push(pixelgrad::nn::layers::Linear::new(&dev, 3, 5, &mut init).unwrap())
            .push(pixelgrad::nn::layers::Activation::Relu);
        let bytes = pixelgrad::onnx::export::to_onnx(&inner, &[3]).unwrap();
        let model = Rc::new(Model::from_bytes(&bytes).unwrap());
        let cfg = serde_json::json!({"layers": [
            {"type": "onnx", "model": 0, "inputShape": [3], "trainable": false},
            {"type": "dense", "units": 2}
        ]});
        let mut net = Net::new_with(&dev, cfg.clone(), vec![model.clone()]).unwrap();
        assert_eq!(net.built.seq.num_trainable(), 5 * 2 + 2);
        assert_eq!(net.built.seq.num_params(), 3 * 5 + 5 + 5 * 2 + 2);
        assert!(net.summary().contains("onnx"), "{}", net.summary());
        net.compile("sgd", 0.1, 0.0, "softmaxCrossEntropy").unwrap();
        let before: Vec<f32> = net.named_tensors()[0].1.to_vec().unwrap();
        let x: Vec<f32> = (0..12).map(|i| i as f32 / 6.0 - 1.0).collect();
        net.train_step(&x, &[4, 3], &[0.0, 1.0, 1.0, 0.0], &[4]).unwrap();
        assert_eq!(net.named_tensors()[0].1.to_vec().unwrap(), before, "the frozen imported layer changed");
        // no model for index 0 / a bad output name: errors naming the layer
        assert!(Net::new(&dev, cfg.clone()).err().unwrap().to_string().contains("no imported model 0"));
        let bad = serde_json::json!({"layers": [{"type": "onnx", "model": 0, "output": "nope", "inputShape": [3]}]});
        assert!(Net::new_with(&dev, bad, vec![model.clone()]).err().unwrap().to_string().contains("'nope'"));
        // export keeps the imported graph
        let host: Vec<(String, Vec<usize>, Vec<f32>)> =
            net.named_tensors().iter().map(|(n, t)| (n.clone(), t.dims().to_vec(), t.to_vec().unwrap())).collect();
        let out = Net::onnx_bytes(&cfg, &[model], &host).unwrap();
        let s = Session::new(Model::from_bytes(&out).unwrap(), &dev).unwrap();
        let got = s.run(&[("input", Input::Tensor(Tensor::from_vec(&dev, &x, [4, 3]).unwrap()))]).unwrap()[0].1.to_host().unwrap().to_f32();
        let want = net.predict(&x, &[4, 3]).unwrap().to_vec().unwrap();
        assert!(got.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5));
    }
}
