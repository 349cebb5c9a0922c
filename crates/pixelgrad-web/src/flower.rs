//! The browser package's model as a Flower node's [`Learner`]: the [`Net`] that `model.fit`
//! drives, trained one batch at a time with a read of the sums whenever a slice of time has
//! passed ([`Pacer`]: a fraction of the heartbeat period, however slow the device), yielding to
//! the event loop after each read (so heartbeats and the page keep running). Platform-independent;
//! `wasm::flower` binds it to `fetch`.

use pixelgrad::flower::node::{EvalStats, FitStats, Learner, RoundConfig};
use pixelgrad::flower::pace::Pacer;
use pixelgrad::flower::transport::{wall_clock, yield_now};
use pixelgrad::flower::{FlowerError, Result};
use pixelgrad::nn::Module;
use pixelgrad::{Device, Tensor};

use crate::net::Net;

/// Host samples: `x` is `n * prod(sample)` values, `y` class indices as f32.
#[derive(Clone, Debug, Default)]
pub struct HostData {
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    pub sample: Vec<usize>,
}

impl HostData {
    pub fn new(x: Vec<f32>, y: Vec<f32>, sample: Vec<usize>) -> Result<Self> {
        let per: usize = sample.iter().product();
        if per == 0 || x.len() != per * y.len() {
            return Err(FlowerError::Invalid(format!("{} values do not hold {} samples of shape {sample:?}", x.len(), y.len())));
        }
        Ok(HostData { x, y, sample })
    }
    pub fn len(&self) -> usize {
        self.y.len()
    }
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }
    fn batch(&self, idx: &[usize]) -> (Vec<f32>, Vec<usize>, Vec<f32>) {
        let per: usize = self.sample.iter().product();
        let mut x = Vec::with_capacity(idx.len() * per);
        let mut y = Vec::with_capacity(idx.len());
        for &i in idx {
            x.extend_from_slice(&self.x[i * per..(i + 1) * per]);
            y.push(self.y[i]);
        }
        let mut shape = vec![idx.len()];
        shape.extend_from_slice(&self.sample);
        (x, shape, y)
    }
}

/// A [`Net`] with its optimizer choice and the node's data.
pub struct NetLearner {
    pub net: Net,
    pub optimizer: String,
    pub momentum: f32,
    pub loss: String,
    pub train: HostData,
    pub test: HostData,
    pub seed: u64,
    /// Most batches between two reads of the training sums (each read yields to the event loop).
    pub read_every: usize,
    /// Seconds of training between two turns of the event loop (see
    /// [`pixelgrad::flower::pace::slice_for`]); a read ends a slice sooner after `read_every`
    /// batches.
    pub slice_s: f64,
}

fn engine(op: &'static str) -> impl FnOnce(pixelgrad::Error) -> FlowerError {
    move |source| FlowerError::Engine { op, source }
}

async fn read_sums(taken: Option<(Tensor, usize)>) -> Result<(f64, f64, usize)> {
    let Some((t, n)) = taken else {
        return Ok((0.0, 0.0, 0));
    };
    let v = t.to_vec_async().await.map_err(engine("readback"))?;
    Ok((v.first().copied().unwrap_or(f32::NAN) as f64, v.get(1).copied().unwrap_or(f32::NAN) as f64, n))
}

impl Learner for NetLearner {
    fn device(&self) -> &Device {
        &self.net.dev
    }
    fn params(&self) -> Vec<Tensor> {
        let mut v = Vec::new();
        self.net.built.seq.visit_params(&mut |_, p| v.push(p.tensor()));
        v
    }
    fn set_params(&mut self, values: &[Tensor]) -> Result<()> {
        let mut i = 0;
        let mut result = Ok(());
        self.net.built.seq.visit_params(&mut |_, p| {
            if result.is_ok() {
                result = match values.get(i) {
                    Some(v) => p.set(v),
                    None => Err(pixelgrad::Error::invalid("set_params", "fewer values than parameters")),
                };
            }
            i += 1;
        });
        result.map_err(engine("parameter update"))
    }
    async fn fit(&mut self, cfg: &RoundConfig) -> Result<FitStats> {
        if self.train.is_empty() {
            return Err(FlowerError::Invalid("this node has no training samples".into()));
        }
        // A fresh optimizer per round, as a Flower ClientApp builds one per message.
        self.net.compile(&self.optimizer, cfg.lr, self.momentum, &self.loss).map_err(engine("compile"))?;
        let (mut loss, mut correct, mut seen) = (0.0, 0.0, 0usize);
        let mut pace = Pacer::new(wall_clock, self.slice_s, self.read_every);
        for epoch in 0..cfg.epochs {
            let seed = pixelgrad::rng::mix(self.seed, cfg.server_round * 1000 + epoch as u64);
            let order = pixelgrad::nn::train::shuffled(self.train.len(), seed);
            let (mut el, mut ec, mut en) = (0.0, 0.0, 0usize);
            for idx in order.chunks(cfg.batch_size) {
                let (x, shape, y) = self.train.batch(idx);
                self.net.train_step(&x, &shape, &y, &[y.len()]).map_err(engine("training"))?;
                if pace.batch_done() {
                    // the read waits for the device's queued batches: the slice's real length
                    let (l, c, n) = read_sums(self.net.take_train().map_err(engine("training"))?).await?;
                    (el, ec, en) = (el + l, ec + c, en + n);
                    yield_now().await;
                    pace.turned();
                }
            }
            let (l, c, n) = read_sums(self.net.take_train().map_err(engine("training"))?).await?;
            (el, ec, en) = (el + l, ec + c, en + n);
            // The last epoch's means, as `fit` reports them natively.
            (loss, correct, seen) = (el, ec, en);
            yield_now().await;
            pace.turned();
        }
        let n = seen.max(1) as f64;
        Ok(FitStats { examples: self.train.len(), loss: loss / n, accuracy: correct / n })
    }
    async fn evaluate(&mut self) -> Result<EvalStats> {
        if self.test.is_empty() {
            return Err(FlowerError::Invalid("this node has no test samples".into()));
        }
        let idx: Vec<usize> = (0..self.test.len()).collect();
        for chunk in idx.chunks(256) {
            let (x, shape, y) = self.test.batch(chunk);
            self.net.eval_step(&x, &shape, &y, &[y.len()]).map_err(engine("evaluation"))?;
        }
        let (l, c, n) = read_sums(self.net.take_eval().map_err(engine("evaluation"))?).await?;
        let d = n.max(1) as f64;
        Ok(EvalStats { examples: self.test.len(), loss: l / d, accuracy: c / d })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad::cpu::CpuBackend;

    #[test]
    fn trains_and_evaluates_on_digits() {
        let dev = Device::new(CpuBackend::new());
        let cfg = serde_json::json!({"seed": 1, "layers": [
            {"type": "dense", "units": 32, "inputShape": [64], "activation": "relu"},
            {"type": "dense", "units": 10}
        ]});
        let split = pixelgrad::data::digits_split(0.2, 42).unwrap();
        let f = |d: &pixelgrad::data::Dataset| {
            HostData::new(d.images().to_vec(), d.labels().iter().map(|&v| v as f32).collect(), vec![64]).unwrap()
        };
        let mut l = NetLearner {
            net: Net::new(&dev, cfg).unwrap(),
            optimizer: "adam".into(),
            momentum: 0.0,
            loss: "softmaxCrossEntropy".into(),
            train: f(&split.train),
            test: f(&split.test),
            seed: 3,
            read_every: 10,
            slice_s: 0.5,
        };
        let before = pollster::block_on(l.evaluate()).unwrap();
        let st = pollster::block_on(l.fit(&RoundConfig { server_round: 1, epochs: 3, batch_size: 32, lr: 0.01 })).unwrap();
        let after = pollster::block_on(l.evaluate()).unwrap();
        assert_eq!(st.examples, split.train.len());
        assert!(after.accuracy > 0.85 && after.accuracy > before.accuracy, "{before:?} -> {after:?}");
        let p = l.params();
        assert_eq!(p.len(), 4);
        let e = l.set_params(&p[..1]).unwrap_err().to_string();
        assert!(e.contains("fewer values"), "{e}");
    }
}
