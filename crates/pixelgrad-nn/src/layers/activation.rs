use pixelgrad_core::{Result, Tensor};

use crate::{Mode, Module};

/// Elementwise activations (and softmax along the last axis) as layers. Any shape in, same out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    Relu,
    LeakyRelu(f32),
    Sigmoid,
    Tanh,
    Gelu,
    /// Softmax over the last axis.
    Softmax,
}

impl Activation {
    /// Parses `relu`, `leaky_relu`, `sigmoid`, `tanh`, `gelu`, `softmax` (`linear` gives `None`).
    pub fn parse(name: &str) -> Option<Option<Activation>> {
        Some(match name {
            "linear" | "none" | "" => None,
            "relu" => Some(Activation::Relu),
            "leaky_relu" | "leakyRelu" => Some(Activation::LeakyRelu(0.01)),
            "sigmoid" => Some(Activation::Sigmoid),
            "tanh" => Some(Activation::Tanh),
            "gelu" => Some(Activation::Gelu),
            "softmax" => Some(Activation::Softmax),
            _ => return None,
        })
    }
    pub fn apply(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Activation::Relu => x.relu(),
            Activation::LeakyRelu(s) => x.leaky_relu(*s),
            Activation::Sigmoid => x.sigmoid(),
            Activation::Tanh => x.tanh(),
            Activation::Gelu => x.gelu(),
            Activation::Softmax => x.softmax(-1),
        }
    }
}

impl Module for Activation {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, _mode: Mode) -> Result<Tensor> {
        self.apply(x)
    }
    fn describe(&self) -> String {
        format!("{self:?}")
    }
}
