use std::collections::HashMap;

use pixelgrad_core::{Param, Result, Tensor};

use super::half::{adam_direction, compensated_add, root_mean_square, HalfDevices};
use super::{Optimizer, OptimizerState};

/// Adam (Kingma & Ba 2015), with L2 weight decay added to the gradient, or AdamW (decoupled
/// decay `p -= lr wd p`, Loshchilov & Hutter 2019).
///
/// On a device whose tensors are really halves (measured per device, see [`super::half`])
/// the state is `m`, `r = sqrt(v)` and `lo`, the compensation of the weight; elsewhere `m`
/// and `v`. A state of the other form (a checkpoint moved between devices) is converted at
/// the parameter's next update.
pub struct Adam {
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    decoupled: bool,
    t: i32,
    m: HashMap<String, Tensor>,
    v: HashMap<String, Tensor>,
    r: HashMap<String, Tensor>,
    lo: HashMap<String, Tensor>,
    half: HalfDevices,
}

impl Adam {
    pub fn new(lr: f32) -> Self {
        Adam {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
            t: 0,
            m: HashMap::new(),
            v: HashMap::new(),
            r: HashMap::new(),
            lo: HashMap::new(),
            half: HalfDevices::default(),
        }
    }
    /// AdamW with decoupled weight decay.
    pub fn adamw(lr: f32, weight_decay: f32) -> Self {
        Adam { weight_decay, decoupled: true, ..Adam::new(lr) }
    }
    pub fn betas(mut self, b1: f32, b2: f32) -> Self {
        self.beta1 = b1;
        self.beta2 = b2;
        self
    }
    pub fn weight_decay(mut self, wd: f32) -> Self {
        self.weight_decay = wd;
        self
    }
}

fn ema(prev: Option<&Tensor>, x: &Tensor, beta: f32) -> Result<Tensor> {
    match prev {
        Some(p) => p.mul_scalar(beta)?.add(&x.mul_scalar(1.0 - beta)?),
        None => x.mul_scalar(1.0 - beta),
    }
}

impl Adam {
    /// The update on a device whose tensors are really halves ([`super::half`]).
    fn update_reduced(&mut self, name: &str, p: &Param, g: &Tensor) -> Result<()> {
        let w = p.tensor();
        let mut g = g.clone();
        if self.weight_decay != 0.0 && !self.decoupled {
            g = g.add(&w.mul_scalar(self.weight_decay)?)?;
        }
        let r_prev = match self.v.get(name) {
            Some(v) => Some(v.sqrt()?),
            None => self.r.get(name).cloned(),
        };
        let m = ema(self.m.get(name), &g, self.beta1)?;
        let r = root_mean_square(r_prev.as_ref(), &g, self.beta2)?;
        let t = self.t.max(1);
        let c1 = 1.0 - self.beta1.powi(t);
        let c2 = 1.0 - self.beta2.powi(t);
        let mut delta = adam_direction(&m, &r, self.eps, c1, c2)?.mul_scalar(-self.lr)?;
        if self.weight_decay != 0.0 && self.decoupled {
            delta = delta.add(&w.mul_scalar(-self.lr * self.weight_decay)?)?;
        }
        let (hi, lo) = compensated_add(&w, self.lo.get(name), &delta)?;
        self.v.remove(name);
        self.m.insert(name.to_string(), m);
        self.r.insert(name.to_string(), r);
        self.lo.insert(name.to_string(), lo);
        p.set(&hi)
    }
}

impl Optimizer for Adam {
    fn begin_step(&mut self) {
        self.t += 1;
    }
    fn update(&mut self, name: &str, p: &Param, g: &Tensor) -> Result<()> {
        if self.half.reduced(p)? {
            return self.update_reduced(name, p, g);
        }
        if let Some(r) = self.r.get(name) {
            let v = r.square()?;
            self.v.insert(name.to_string(), v);
            self.r.remove(name);
        }
        self.lo.remove(name);
        let mut w = p.tensor();
        let mut g = g.clone();
        if self.weight_decay != 0.0 {
            if self.decoupled {
                w = w.mul_scalar(1.0 - self.lr * self.weight_decay)?;
            } else {
                g = g.add(&w.mul_scalar(self.weight_decay)?)?;
            }
        }
        let m = ema(self.m.get(name), &g, self.beta1)?;
        let v = ema(self.v.get(name), &g.square()?, self.beta2)?;
        let t = self.t.max(1);
        let c1 = 1.0 - self.beta1.powi(t);
        let c2 = 1.0 - self.beta2.powi(t);
        // p -= lr * (m / c1) / (sqrt(v / c2) + eps)
        let denom = v.mul_scalar(1.0 / c2)?.sqrt()?.add_scalar(self.eps)?;
        let step = m.div(&denom)?.mul_scalar(self.lr / c1)?;
        self.m.insert(name.to_string(), m);
        self.v.insert(name.to_string(), v);
        p.set(&w.sub(&step)?)
    }
    fn lr(&self) -> f32 {
        self.lr
    }
    fn set_lr(&mut self, lr: f32) {
        self.lr = lr;
    }
    fn name(&self) -> &'static str {
        if self.decoupled {
            "adamw"
        } else {
            "adam"
        }
    }
    fn state(&self) -> OptimizerState {
        let mut s = OptimizerState { scalars: vec![("t".into(), self.t as f64)], ..Default::default() };
        s.push_map("m", &self.m);
        s.push_map("v", &self.v);
        s.push_map("r", &self.r);
        s.push_map("lo", &self.lo);
        s
    }
    fn set_state(&mut self, state: OptimizerState) -> Result<()> {
        let mut t = 0;
        for (n, v) in &state.scalars {
            match n.as_str() {
                "t" if v.fract() == 0.0 && (0.0..=i32::MAX as f64).contains(v) => t = *v as i32,
                _ => return Err(pixelgrad_core::Error::invalid("optimizer state", format!("{}: bad scalar {n} = {v}", self.name()))),
            }
        }
        let mut maps = state.maps(self.name(), &["m", "v", "r", "lo"])?.into_iter();
        self.m = maps.next().unwrap_or_default();
        self.v = maps.next().unwrap_or_default();
        self.r = maps.next().unwrap_or_default();
        self.lo = maps.next().unwrap_or_default();
        self.t = t;
        Ok(())
    }
}

/// RMSprop: `s = rho s + (1 - rho) g^2; p -= lr g / (sqrt(s) + eps)`. On a device below full
/// precision the state is `r = sqrt(s)` and the weight's compensation `lo`, as for [`Adam`].
pub struct RmsProp {
    lr: f32,
    rho: f32,
    eps: f32,
    s: HashMap<String, Tensor>,
    r: HashMap<String, Tensor>,
    lo: HashMap<String, Tensor>,
    half: HalfDevices,
}

impl RmsProp {
    pub fn new(lr: f32) -> Self {
        RmsProp { lr, rho: 0.9, eps: 1e-7, s: HashMap::new(), r: HashMap::new(), lo: HashMap::new(), half: HalfDevices::default() }
    }

    /// The update on a device whose tensors are really halves ([`super::half`]).
    fn update_reduced(&mut self, name: &str, p: &Param, g: &Tensor) -> Result<()> {
        let r_prev = match self.s.get(name) {
            Some(s) => Some(s.sqrt()?),
            None => self.r.get(name).cloned(),
        };
        let r = root_mean_square(r_prev.as_ref(), g, self.rho)?;
        // No bias correction: both corrections 1.
        let delta = adam_direction(g, &r, self.eps, 1.0, 1.0)?.mul_scalar(-self.lr)?;
        let (hi, lo) = compensated_add(&p.tensor(), self.lo.get(name), &delta)?;
        self.s.remove(name);
        self.r.insert(name.to_string(), r);
        self.lo.insert(name.to_string(), lo);
        p.set(&hi)
    }
}

impl Optimizer for RmsProp {
    fn update(&mut self, name: &str, p: &Param, g: &Tensor) -> Result<()> {
        if self.half.reduced(p)? {
            return self.update_reduced(name, p, g);
        }
        if let Some(r) = self.r.get(name) {
            let s = r.square()?;
            self.s.insert(name.to_string(), s);
            self.r.remove(name);
        }
        self.lo.remove(name);
        let s = ema(self.s.get(name), &g.square()?, self.rho)?;
        let step = g.div(&s.sqrt()?.add_scalar(self.eps)?)?.mul_scalar(self.lr)?;
        self.s.insert(name.to_string(), s);
        p.set(&p.tensor().sub(&step)?)
    }
    fn lr(&self) -> f32 {
        self.lr
    }
    fn set_lr(&mut self, lr: f32) {
        self.lr = lr;
    }
    fn name(&self) -> &'static str {
        "rmsprop"
    }
    fn state(&self) -> OptimizerState {
        let mut s = OptimizerState::default();
        s.push_map("s", &self.s);
        s.push_map("r", &self.r);
        s.push_map("lo", &self.lo);
        s
    }
    fn set_state(&mut self, state: OptimizerState) -> Result<()> {
        if let Some((n, _)) = state.scalars.first() {
            return Err(pixelgrad_core::Error::invalid("optimizer state", format!("rmsprop has no scalar '{n}'")));
        }
        let mut maps = state.maps("rmsprop", &["s", "r", "lo"])?.into_iter();
        self.s = maps.next().unwrap_or_default();
        self.r = maps.next().unwrap_or_default();
        self.lo = maps.next().unwrap_or_default();
        Ok(())
    }
}
