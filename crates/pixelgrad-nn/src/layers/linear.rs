use pixelgrad_core::{Device, Param, Result, Tensor};

use super::bad_input;
use crate::init::{Init, WeightInit};
use crate::{Mode, Module};

/// Fully connected layer `y = x W + b`.
///
/// Input `[N, in]`, output `[N, out]`. Weight `[in, out]`, bias `[out]`.
pub struct Linear {
    pub weight: Param,
    pub bias: Option<Param>,
    in_features: usize,
    out_features: usize,
}

impl Linear {
    /// Glorot-uniform weights, zero bias.
    pub fn new(dev: &Device, in_features: usize, out_features: usize, init: &mut Init) -> Result<Self> {
        Self::with_init(dev, in_features, out_features, WeightInit::Glorot, true, init)
    }

    pub fn with_init(dev: &Device, in_features: usize, out_features: usize, w: WeightInit, bias: bool, init: &mut Init) -> Result<Self> {
        let shape = [in_features, out_features];
        let weight = match w {
            WeightInit::Glorot => init.glorot_uniform(dev, shape, in_features, out_features)?,
            WeightInit::He => init.he_uniform(dev, shape, in_features)?,
        };
        let bias = if bias { Some(Param::new(Tensor::zeros(dev, [out_features])?)) } else { None };
        Ok(Linear { weight: Param::new(weight), bias, in_features, out_features })
    }

    pub fn in_features(&self) -> usize {
        self.in_features
    }
    pub fn out_features(&self) -> usize {
        self.out_features
    }
}

impl Module for Linear {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, _mode: Mode) -> Result<Tensor> {
        if x.rank() != 2 || x.dims()[1] != self.in_features {
            return Err(bad_input("linear", x, format!("expects [N, {}]", self.in_features)));
        }
        let y = x.matmul(&self.weight.tensor())?;
        match &self.bias {
            Some(b) => y.add(&b.tensor()),
            None => Ok(y),
        }
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        f("weight", &self.weight);
        if let Some(b) = &self.bias {
            f("bias", b);
        }
    }
    fn describe(&self) -> String {
        format!("Linear({} -> {})", self.in_features, self.out_features)
    }
}
