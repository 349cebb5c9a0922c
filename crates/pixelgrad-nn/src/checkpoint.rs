//! Host checkpoints of a model and its optimizer: every parameter, buffer, optimizer state
//! tensor and scalar, and the layers' counters (dropout's draw count), copied to host memory.
//!
//! A GPU can vanish under a running program (a WebGL context loss, a WebGPU device loss, a
//! driver reset); everything on it is gone. [`crate::train::fit`] keeps a checkpoint every
//! `checkpoint_every` steps and, when the device is lost, restores it onto a new device and
//! redoes the steps since. The same checkpoints give `stop_on_nan` its last good weights and
//! the browser package its IndexedDB autosave ([`Checkpoint::to_bytes`]).
//!
//! Taking one is one device op (every tensor flattened and concatenated) and one readback;
//! [`Capture`] splits that so a browser can read asynchronously.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};

use pixelgrad_core::{no_grad, Device, Error, Result, Tensor};
use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;

use crate::optim::{Optimizer, OptimizerState};
use crate::Module;

/// A named tensor copied to the host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub name: String,
    pub dims: Vec<usize>,
    pub values: Vec<f32>,
}

/// Parameters, buffers, optimizer state and counters of one moment of training, on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// Training steps done when it was taken (0: before the first).
    pub step: usize,
    /// Parameters then buffers, in the model's visiting order.
    pub weights: Vec<HostTensor>,
    /// Optimizer state tensors (`m/0.weight`, ...).
    pub optimizer: Vec<HostTensor>,
    /// Optimizer scalars (Adam's step count).
    pub scalars: Vec<(String, f64)>,
    /// Layer counters (dropout draws) by name.
    pub counters: Vec<(String, u64)>,
}

/// The device tensors of a checkpoint being taken, captured at one moment (tensors are
/// immutable, so training may go on while they are read).
pub struct Capture {
    step: usize,
    names: Vec<(bool, String, Vec<usize>)>,
    tensors: Vec<Tensor>,
    scalars: Vec<(String, f64)>,
    counters: Vec<(String, u64)>,
}

impl Capture {
    /// Captures `model` and `opt` after `step` training steps.
    pub fn of(model: &dyn Module, opt: &dyn Optimizer, step: usize) -> Capture {
        let mut names = Vec::new();
        let mut tensors = Vec::new();
        for (n, t) in crate::io::named_tensors(model) {
            names.push((false, n, t.dims().to_vec()));
            tensors.push(t.detach());
        }
        let st = opt.state();
        for (n, t) in st.tensors {
            names.push((true, n, t.dims().to_vec()));
            tensors.push(t.detach());
        }
        let mut counters = Vec::new();
        model.visit_counters(&mut |n, c| counters.push((n.to_string(), c.get())));
        Capture { step, names, tensors, scalars: st.scalars, counters }
    }

    /// Floats the checkpoint holds.
    pub fn len(&self) -> usize {
        self.tensors.iter().map(|t| t.numel()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every tensor flattened and joined into one device tensor (one readback), or `None` when
    /// there is nothing to read.
    pub fn joined(&self) -> Result<Option<Tensor>> {
        let _g = no_grad();
        if self.is_empty() {
            return Ok(None);
        }
        let flat: Vec<Tensor> = self.tensors.iter().filter(|t| t.numel() > 0).map(|t| t.reshape([t.numel()])).collect::<Result<_>>()?;
        let refs: Vec<&Tensor> = flat.iter().collect();
        Ok(Some(if refs.len() == 1 { refs[0].clone() } else { Tensor::concat(&refs, 0)? }))
    }

    /// Blocking read (native).
    pub fn read(self) -> Result<Checkpoint> {
        let values = match self.joined()? {
            Some(t) => t.to_vec()?,
            None => Vec::new(),
        };
        self.finish(values)
    }

    /// Asynchronous read (the browser's only kind).
    pub async fn read_async(self) -> Result<Checkpoint> {
        let values = match self.joined()? {
            Some(t) => t.to_vec_async().await?,
            None => Vec::new(),
        };
        self.finish(values)
    }

    /// The checkpoint from the values of [`Capture::joined`], as read.
    pub fn finish(self, values: Vec<f32>) -> Result<Checkpoint> {
        if values.len() != self.len() {
            return Err(Error::invalid("checkpoint", format!("read {} values, expected {}", values.len(), self.len())));
        }
        let (mut weights, mut optimizer) = (Vec::new(), Vec::new());
        let mut at = 0;
        for (opt, name, dims) in self.names {
            let n: usize = dims.iter().product();
            let t = HostTensor { name, dims, values: values[at..at + n].to_vec() };
            at += n;
            if opt {
                optimizer.push(t);
            } else {
                weights.push(t);
            }
        }
        Ok(Checkpoint { step: self.step, weights, optimizer, scalars: self.scalars, counters: self.counters })
    }
}

impl Checkpoint {
    /// Copies `model` and `opt` to the host now (blocking read).
    pub fn take(model: &dyn Module, opt: &dyn Optimizer, step: usize) -> Result<Checkpoint> {
        Capture::of(model, opt, step).read()
    }

    /// True if every value is finite (a checkpoint holding NaN or infinity is not a good one).
    pub fn is_finite(&self) -> bool {
        self.weights.iter().chain(&self.optimizer).all(|t| t.values.iter().all(|v| v.is_finite()))
    }

    /// Bytes of host memory it holds.
    pub fn bytes(&self) -> usize {
        self.weights.iter().chain(&self.optimizer).map(|t| t.values.len() * 4).sum()
    }

    /// Uploads the checkpoint to `dev` (the model's device, or a new one after a device loss)
    /// and puts it into `model` and `opt`: every parameter and buffer must be present with
    /// its shape; gradients are cleared.
    pub fn restore(&self, model: &dyn Module, opt: &mut dyn Optimizer, dev: &Device) -> Result<()> {
        let _g = no_grad();
        let by_name: HashMap<&str, &HostTensor> = self.weights.iter().map(|t| (t.name.as_str(), t)).collect();
        // Upload everything first, so a failure leaves the model as it was.
        let mut params = Vec::new();
        let mut missing = None;
        model.visit_params(&mut |n, p| match by_name.get(n) {
            Some(h) if h.dims == p.shape().dims() => params.push((n.to_string(), h)),
            Some(h) => {
                missing.get_or_insert(format!("'{n}' has shape {:?} in the checkpoint but {:?} in the model", h.dims, p.shape().dims()));
            }
            None => {
                missing.get_or_insert(format!("'{n}' is missing"));
            }
        });
        let mut buffers = Vec::new();
        model.visit_buffers(&mut |n, b| match by_name.get(n) {
            Some(h) if h.dims == b.get().dims() => buffers.push((n.to_string(), h)),
            Some(_) | None => {
                missing.get_or_insert(format!("buffer '{n}' is missing or has another shape"));
            }
        });
        if let Some(m) = missing {
            return Err(Error::invalid("restore checkpoint", m));
        }
        let upload = |h: &HostTensor| Tensor::from_vec(dev, &h.values, h.dims.clone());
        let p_up: HashMap<String, Tensor> = params.iter().map(|(n, h)| Ok((n.clone(), upload(h)?))).collect::<Result<_>>()?;
        let b_up: HashMap<String, Tensor> = buffers.iter().map(|(n, h)| Ok((n.clone(), upload(h)?))).collect::<Result<_>>()?;
        let state = OptimizerState {
            tensors: self.optimizer.iter().map(|h| Ok((h.name.clone(), upload(h)?))).collect::<Result<_>>()?,
            scalars: self.scalars.clone(),
        };
        opt.set_state(state)?;
        let mut result = Ok(());
        model.visit_params(&mut |n, p| {
            p.zero_grad();
            if let (Ok(()), Some(t)) = (&result, p_up.get(n)) {
                result = p.set(t);
            }
        });
        result?;
        model.visit_buffers(&mut |n, b| {
            if let Some(t) = b_up.get(n) {
                b.set(t);
            }
        });
        let counters: HashMap<&str, u64> = self.counters.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        model.visit_counters(&mut |n, c: &Cell<u64>| {
            if let Some(v) = counters.get(n) {
                c.set(*v);
            }
        });
        Ok(())
    }

    /// The checkpoint as safetensors bytes: weights under their names, optimizer state under
    /// `optimizer/...`, and the step, scalars, counters and `metadata` in the header.
    pub fn to_bytes(&self, metadata: &HashMap<String, String>) -> Result<Vec<u8>> {
        let mut data: BTreeMap<String, (Vec<usize>, Vec<u8>)> = BTreeMap::new();
        for t in &self.weights {
            data.insert(t.name.clone(), (t.dims.clone(), t.values.iter().flat_map(|v| v.to_le_bytes()).collect()));
        }
        for t in &self.optimizer {
            data.insert(format!("{OPT_PREFIX}{}", t.name), (t.dims.clone(), t.values.iter().flat_map(|v| v.to_le_bytes()).collect()));
        }
        let mut views = Vec::with_capacity(data.len());
        for (name, (shape, bytes)) in &data {
            let v = TensorView::new(Dtype::F32, shape.clone(), bytes)
                .map_err(|e| Error::invalid(format!("checkpoint tensor {name}"), e.to_string()))?;
            views.push((name.clone(), v));
        }
        let mut meta = metadata.clone();
        meta.insert(META_STEP.into(), self.step.to_string());
        meta.insert(META_SCALARS.into(), serde_json::to_string(&self.scalars).map_err(|e| Error::invalid("checkpoint", e.to_string()))?);
        meta.insert(META_COUNTERS.into(), serde_json::to_string(&self.counters).map_err(|e| Error::invalid("checkpoint", e.to_string()))?);
        let bytes = safetensors::tensor::serialize(views, Some(meta)).map_err(|e| Error::invalid("checkpoint", e.to_string()))?;
        crate::io::canonical_header(bytes)
    }

    /// Reads bytes written by [`Checkpoint::to_bytes`]: the checkpoint and the header's other
    /// metadata. Weight order follows the file (sorted by name); [`Checkpoint::restore`] goes
    /// by name.
    pub fn from_bytes(bytes: &[u8]) -> Result<(Checkpoint, HashMap<String, String>)> {
        let bad = |m: String| Error::invalid("checkpoint file", m);
        let st = SafeTensors::deserialize(bytes).map_err(|e| bad(format!("not a safetensors file: {e}")))?;
        let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| bad(format!("not a safetensors file: {e}")))?;
        let mut meta = header.metadata().clone().unwrap_or_default();
        let step = meta.remove(META_STEP).ok_or_else(|| bad(format!("no '{META_STEP}' in the header (not a checkpoint)")))?;
        let step = step.parse::<usize>().map_err(|_| bad(format!("bad step '{step}'")))?;
        let scalars: Vec<(String, f64)> = match meta.remove(META_SCALARS) {
            Some(s) => serde_json::from_str(&s).map_err(|e| bad(format!("bad scalars: {e}")))?,
            None => Vec::new(),
        };
        let counters: Vec<(String, u64)> = match meta.remove(META_COUNTERS) {
            Some(s) => serde_json::from_str(&s).map_err(|e| bad(format!("bad counters: {e}")))?,
            None => Vec::new(),
        };
        let (mut weights, mut optimizer) = (Vec::new(), Vec::new());
        let mut names: Vec<String> = st.names().into_iter().map(|s| s.to_string()).collect();
        names.sort();
        for name in names {
            let view = st.tensor(&name).map_err(|e| bad(format!("tensor '{name}': {e}")))?;
            if view.dtype() != Dtype::F32 {
                return Err(bad(format!("tensor '{name}' has dtype {:?}, expected F32", view.dtype())));
            }
            let values = view.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            let dims = view.shape().to_vec();
            match name.strip_prefix(OPT_PREFIX) {
                Some(n) => optimizer.push(HostTensor { name: n.to_string(), dims, values }),
                None => weights.push(HostTensor { name, dims, values }),
            }
        }
        Ok((Checkpoint { step, weights, optimizer, scalars, counters }, meta))
    }
}

const OPT_PREFIX: &str = "optimizer/";
const META_STEP: &str = "pixelgrad.checkpoint.step";
const META_SCALARS: &str = "pixelgrad.checkpoint.scalars";
const META_COUNTERS: &str = "pixelgrad.checkpoint.counters";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::{Activation, Dropout, Linear};
    use crate::{Init, Mode, OptimizerKind, Sequential};
    use pixelgrad_cpu::CpuBackend;

    fn net(dev: &Device) -> Sequential {
        let mut init = Init::new(3);
        Sequential::new()
            .push(Linear::new(dev, 3, 4, &mut init).unwrap())
            .push(Activation::Relu)
            .push(Dropout::new(0.2, 9).unwrap())
            .push(Linear::new(dev, 4, 2, &mut init).unwrap())
    }

    fn step(m: &Sequential, opt: &mut dyn Optimizer, dev: &Device) {
        let x = Tensor::from_vec(dev, &[0.5, -1.0, 2.0, 1.0, 0.0, -0.5], [2, 3]).unwrap();
        let y = Tensor::from_vec(dev, &[1.0, 0.0], [2]).unwrap();
        let l = crate::Loss::CrossEntropy.compute(&m.forward(&x, Mode::Train).unwrap(), &y).unwrap();
        l.backward().unwrap();
        opt.step(m).unwrap();
    }

    fn host(m: &Sequential) -> Vec<Vec<f32>> {
        crate::io::named_tensors(m).iter().map(|(_, t)| t.to_vec().unwrap()).collect()
    }

    #[test]
    fn restoring_replays_training_exactly_on_another_device() {
        for name in ["adam", "momentum", "rmsprop", "sgd"] {
            let dev = Device::new(CpuBackend::new());
            let m = net(&dev);
            let mut opt = OptimizerKind::parse(name).unwrap().build(0.05);
            for _ in 0..3 {
                step(&m, opt.as_mut(), &dev);
            }
            let ck = Checkpoint::take(&m, opt.as_ref(), 3).unwrap();
            assert!(ck.is_finite());
            assert_eq!(ck.counters, vec![("2.calls".to_string(), 3)]);
            if name != "sgd" {
                assert!(!ck.optimizer.is_empty(), "{name} keeps state");
            }
            for _ in 0..2 {
                step(&m, opt.as_mut(), &dev);
            }
            let want = host(&m);
            // a fresh model and optimizer on a new device, restored, redo the same two steps
            let dev2 = Device::new(CpuBackend::new());
            let m2 = net(&dev2);
            let mut opt2 = OptimizerKind::parse(name).unwrap().build(0.05);
            ck.restore(&m2, opt2.as_mut(), &dev2).unwrap();
            assert_eq!(Checkpoint::take(&m2, opt2.as_ref(), 3).unwrap(), ck, "{name}: restored state equals the checkpoint");
            for _ in 0..2 {
                step(&m2, opt2.as_mut(), &dev2);
            }
            assert_eq!(host(&m2), want, "{name}: the redone steps give the same weights");
        }
    }

    #[test]
    fn bytes_round_trip_and_bad_checkpoints_are_errors() {
        let dev = Device::new(CpuBackend::new());
        let m = net(&dev);
        let mut opt = OptimizerKind::parse("adam").unwrap().build(0.05);
        step(&m, opt.as_mut(), &dev);
        let ck = Checkpoint::take(&m, opt.as_ref(), 1).unwrap();
        let meta = HashMap::from([("k".to_string(), "v".to_string())]);
        let (back, meta2) = Checkpoint::from_bytes(&ck.to_bytes(&meta).unwrap()).unwrap();
        assert_eq!(meta2, meta);
        assert_eq!(back.step, 1);
        let m2 = net(&dev);
        let mut opt2 = OptimizerKind::parse("adam").unwrap().build(0.05);
        back.restore(&m2, opt2.as_mut(), &dev).unwrap();
        assert_eq!(host(&m2), host(&m));
        // wrong architecture, wrong optimizer, not a checkpoint: errors, the model unchanged
        let other = Sequential::new().push(Linear::new(&dev, 3, 5, &mut Init::new(1)).unwrap());
        let e = ck.restore(&other, opt2.as_mut(), &dev).unwrap_err().to_string();
        assert!(e.contains("0.weight") && e.contains("shape"), "{e}");
        let mut sgd = OptimizerKind::parse("sgd").unwrap().build(0.1);
        assert!(ck.restore(&m2, sgd.as_mut(), &dev).unwrap_err().to_string().contains("sgd"));
        assert!(Checkpoint::from_bytes(b"nope").is_err());
        let plain = crate::io::to_bytes(&m, &HashMap::new()).unwrap();
        assert!(Checkpoint::from_bytes(&plain).unwrap_err().to_string().contains("not a checkpoint"));
    }
}
