//! The [`Module`] trait, [`Sequential`], and the parameter visitor.

use std::cell::{Cell, RefCell};

use pixelgrad_core::{Param, Result, Tensor};

/// Training or inference: dropout and batch norm behave differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Train,
    Eval,
}

/// Non-trainable state saved with the model (batch-norm running statistics).
pub struct Buffer(RefCell<Tensor>);

impl Buffer {
    pub fn new(t: Tensor) -> Self {
        Buffer(RefCell::new(t.detach()))
    }
    pub fn get(&self) -> Tensor {
        self.0.borrow().clone()
    }
    pub fn set(&self, t: &Tensor) {
        *self.0.borrow_mut() = t.detach();
    }
}

/// A layer or a network: a config plus state, with a forward pass and visitors over its
/// parameters and buffers (names are dot-separated paths such as `0.weight`).
pub trait Module {
    /// Runs the layer. Shapes are documented per layer.
    fn forward(&self, x: &Tensor, mode: Mode) -> Result<Tensor>;

    /// Calls `f` with every trainable parameter and its name relative to this module.
    fn visit_params(&self, _f: &mut dyn FnMut(&str, &Param)) {}

    /// Calls `f` with every buffer (saved, not trained) and its name.
    fn visit_buffers(&self, _f: &mut dyn FnMut(&str, &Buffer)) {}

    /// Calls `f` with every counter the layer keeps between calls (dropout's draw count, which
    /// seeds its next mask), so a checkpoint restores training exactly.
    fn visit_counters(&self, _f: &mut dyn FnMut(&str, &Cell<u64>)) {}

    /// Short description, e.g. `Linear(784 -> 128)`.
    fn describe(&self) -> String;

    /// Number of trainable scalars.
    fn num_params(&self) -> usize {
        let mut n = 0;
        self.visit_params(&mut |_, p| n += p.shape().numel());
        n
    }

    /// Clears the accumulated gradients of every parameter.
    fn zero_grad(&self) {
        self.visit_params(&mut |_, p| p.zero_grad());
    }

    /// Freezes (`false`) or unfreezes every parameter of this module: a frozen layer still runs
    /// and is saved, but gets no gradients and no optimizer updates (gradients still flow
    /// through it to the layers before it).
    fn set_trainable(&self, trainable: bool) {
        self.visit_params(&mut |_, p| p.set_trainable(trainable));
    }

    /// Number of scalars in parameters that are currently trainable.
    fn num_trainable(&self) -> usize {
        let mut n = 0;
        self.visit_params(&mut |_, p| {
            if p.is_trainable() {
                n += p.shape().numel()
            }
        });
        n
    }

    /// The concrete layer, for code that inspects models (ONNX export); `None` for layers that
    /// do not expose themselves.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// Layers applied in order.
#[derive(Default)]
pub struct Sequential {
    layers: Vec<Box<dyn Module>>,
}

impl Sequential {
    pub fn new() -> Self {
        Sequential { layers: Vec::new() }
    }
    /// Appends a layer (builder style).
    pub fn push(mut self, layer: impl Module + 'static) -> Self {
        self.layers.push(Box::new(layer));
        self
    }
    pub fn add(&mut self, layer: Box<dyn Module>) {
        self.layers.push(layer);
    }
    pub fn layers(&self) -> &[Box<dyn Module>] {
        &self.layers
    }
    pub fn len(&self) -> usize {
        self.layers.len()
    }
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
}

impl Module for Sequential {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, mode: Mode) -> Result<Tensor> {
        let mut h = x.clone();
        for l in &self.layers {
            h = l.forward(&h, mode)?;
        }
        Ok(h)
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        for (i, l) in self.layers.iter().enumerate() {
            l.visit_params(&mut |name, p| f(&format!("{i}.{name}"), p));
        }
    }
    fn visit_buffers(&self, f: &mut dyn FnMut(&str, &Buffer)) {
        for (i, l) in self.layers.iter().enumerate() {
            l.visit_buffers(&mut |name, b| f(&format!("{i}.{name}"), b));
        }
    }
    fn visit_counters(&self, f: &mut dyn FnMut(&str, &Cell<u64>)) {
        for (i, l) in self.layers.iter().enumerate() {
            l.visit_counters(&mut |name, c| f(&format!("{i}.{name}"), c));
        }
    }
    fn describe(&self) -> String {
        let inner: Vec<String> = self.layers.iter().map(|l| l.describe()).collect();
        format!("Sequential[{}]", inner.join(", "))
    }
}
