//! Host checkpoints of a [`Net`] for the browser's `fit`: the same
//! [`pixelgrad::nn::checkpoint`] the native `fit` keeps (parameters, buffers, optimizer state
//! and counters), captured at one moment and read asynchronously by the caller, and restored
//! onto the model's device: the same one, or a new one after a context or device loss.

use pixelgrad::nn::checkpoint::{Capture, Checkpoint};
use pixelgrad::nn::train::Sums;
use pixelgrad::{Error, Result};

use super::Net;

impl Net {
    /// Captures parameters, buffers, optimizer state and counters after `step` training
    /// steps; the caller reads it ([`Capture::read_async`] in the browser). Training may go
    /// on while it is read (tensors are immutable).
    pub fn capture(&self, step: usize) -> Result<Capture> {
        let opt =
            self.opt.as_deref().ok_or_else(|| Error::invalid("checkpoint", "the model is not compiled; call model.compile() first"))?;
        Ok(Capture::of(&self.built.seq, opt, step))
    }

    /// Puts `ck` into the model and its optimizer on this net's device (all or nothing) and
    /// drops the training and evaluation sums, which belonged to the steps being undone.
    pub fn restore(&mut self, ck: &Checkpoint) -> Result<()> {
        let opt = self
            .opt
            .as_deref_mut()
            .ok_or_else(|| Error::invalid("restore checkpoint", "the model is not compiled; call model.compile() first"))?;
        ck.restore(&self.built.seq, opt, &self.dev).map_err(|e| e.with_backend(&self.dev.name()))?;
        self.train = Sums::new();
        self.eval = Sums::new();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad::cpu::CpuBackend;
    use pixelgrad::Device;

    fn net(dev: &Device) -> Net {
        let cfg = serde_json::json!({"seed": 3, "layers": [
            {"type": "dense", "units": 16, "inputShape": [64], "activation": "relu"},
            {"type": "dropout", "rate": 0.2},
            {"type": "dense", "units": 10}
        ]});
        let mut n = Net::new(dev, cfg).unwrap();
        n.compile("adam", 1e-2, 0.0, "softmaxCrossEntropy").unwrap();
        n
    }

    fn steps(n: &mut Net, from: usize, to: usize) {
        let split = pixelgrad::data::digits_split(0.2, 42).unwrap();
        let (x, y) = (split.train.images(), split.train.labels());
        for s in from..to {
            let b = (s * 32) % (y.len() - 32);
            let yf: Vec<f32> = y[b..b + 32].iter().map(|&v| v as f32).collect();
            n.train_step(&x[b * 64..(b + 32) * 64], &[32, 64], &yf, &[32]).unwrap();
        }
    }

    fn weights(n: &Net) -> Vec<Vec<f32>> {
        n.named_tensors().iter().map(|(_, t)| t.to_vec().unwrap()).collect()
    }

    /// A checkpoint restored on a fresh device (as after a loss) gives back its weights
    /// exactly, and training from it redoes the uninterrupted run bit for bit (optimizer
    /// moments, Adam's step and dropout's counter included).
    #[test]
    fn a_checkpoint_restored_on_a_new_device_continues_the_run_exactly() {
        let dev = Device::new(CpuBackend::new());
        let mut a = net(&dev);
        steps(&mut a, 0, 5);
        let ck = a.capture(5).unwrap().read().unwrap();
        assert_eq!(ck.step, 5);
        assert!(!ck.optimizer.is_empty() && ck.is_finite());
        steps(&mut a, 5, 12);
        let want = weights(&a);

        let other = Device::new(CpuBackend::new());
        let mut b = net(&other);
        b.restore(&ck).unwrap();
        let got: Vec<Vec<f32>> = weights(&b);
        let saved: Vec<Vec<f32>> = ck.weights.iter().map(|t| t.values.clone()).collect();
        assert_eq!(got, saved, "weights after restore equal the checkpoint's");
        steps(&mut b, 5, 12);
        assert_eq!(weights(&b), want);

        // not compiled: an error naming the op, not a panic
        let cfg = serde_json::json!({"layers": [{"type": "dense", "units": 2, "inputShape": [3]}]});
        let mut c = Net::new(&dev, cfg).unwrap();
        assert!(c.capture(0).err().unwrap().to_string().contains("checkpoint: the model is not compiled"));
        assert!(c.restore(&ck).unwrap_err().to_string().contains("restore checkpoint"));
        // another architecture: refused, and the model is untouched
        c.compile("sgd", 0.1, 0.0, "softmaxCrossEntropy").unwrap();
        let before = weights(&c);
        assert!(c.restore(&ck).is_err());
        assert_eq!(weights(&c), before);
    }
}
