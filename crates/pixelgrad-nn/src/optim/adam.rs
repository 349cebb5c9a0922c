use std::collections::HashMap;

use pixelgrad_core::{Param, Result, Tensor};

use super::{Optimizer, OptimizerState};

/// Adam (Kingma & Ba 2015), with L2 weight decay added to the gradient, or AdamW (decoupled
/// decay `p -= lr wd p`, Loshchilov & Hutter 2019).
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
}

impl Adam {
    pub fn new(lr: f32) -> Self {
        Adam { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0, decoupled: false, t: 0, m: HashMap::new(), v: HashMap::new() }
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

impl Optimizer for Adam {
    fn begin_step(&mut self) {
        self.t += 1;
    }
    fn update(&mut self, name: &str, p: &Param, g: &Tensor) -> Result<()> {
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
        let mut maps = state.maps(self.name(), &["m", "v"])?.into_iter();
        self.m = maps.next().unwrap_or_default();
        self.v = maps.next().unwrap_or_default();
        self.t = t;
        Ok(())
    }
}

/// RMSprop: `s = rho s + (1 - rho) g^2; p -= lr g / (sqrt(s) + eps)`.
pub struct RmsProp {
    lr: f32,
    rho: f32,
    eps: f32,
    s: HashMap<String, Tensor>,
}

impl RmsProp {
    pub fn new(lr: f32) -> Self {
        RmsProp { lr, rho: 0.9, eps: 1e-7, s: HashMap::new() }
    }
}

impl Optimizer for RmsProp {
    fn update(&mut self, name: &str, p: &Param, g: &Tensor) -> Result<()> {
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
        s
    }
    fn set_state(&mut self, state: OptimizerState) -> Result<()> {
        if let Some((n, _)) = state.scalars.first() {
            return Err(pixelgrad_core::Error::invalid("optimizer state", format!("rmsprop has no scalar '{n}'")));
        }
        self.s = state.maps("rmsprop", &["s"])?.into_iter().next().unwrap_or_default();
        Ok(())
    }
}
