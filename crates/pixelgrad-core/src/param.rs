//! [`Param`]: a trainable tensor, the leaf whose gradients optimizers read.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::shape::Shape;
use crate::tensor::{next_id, GradSink, Tensor};
use crate::{Device, Error, Result};

/// A trainable tensor: its value is replaced by optimizer steps, and gradients from every
/// `backward()` that used it accumulate until [`Param::zero_grad`]. A frozen parameter
/// ([`Param::set_trainable`]`(false)`) hands out its value without a gradient sink, so no
/// gradient reaches it and optimizers leave it alone; it is still saved and loaded.
pub struct Param {
    value: RefCell<Tensor>,
    grad: GradSink,
    trainable: Cell<bool>,
    id: u64,
}

impl Param {
    pub fn new(value: Tensor) -> Param {
        let grad: GradSink = Rc::new(RefCell::new(None));
        let v = Tensor::wrap_typed(
            value.0.storage.clone(),
            value.0.dtype,
            value.0.shape.clone(),
            value.0.device.clone(),
            None,
            Some(grad.clone()),
        );
        Param { value: RefCell::new(v), grad, trainable: Cell::new(true), id: next_id() }
    }
    /// Unique id of this parameter, kept for its whole life whatever values it is given (a
    /// model's identity for step plans: see `pixelgrad_nn::step_key`).
    pub fn id(&self) -> u64 {
        self.id
    }
    /// The current value, as a leaf that collects gradients (a plain constant when frozen).
    pub fn tensor(&self) -> Tensor {
        let v = self.value.borrow();
        if self.trainable.get() {
            v.clone()
        } else {
            v.detach()
        }
    }
    /// Freezes (`false`) or unfreezes the parameter; freezing drops any accumulated gradient.
    pub fn set_trainable(&self, trainable: bool) {
        self.trainable.set(trainable);
        if !trainable {
            self.zero_grad();
        }
    }
    pub fn is_trainable(&self) -> bool {
        self.trainable.get()
    }
    pub fn shape(&self) -> Shape {
        self.value.borrow().shape().clone()
    }
    pub fn device(&self) -> Device {
        self.value.borrow().device().clone()
    }
    /// Replaces the value (same shape required); the graph behind `t` is dropped.
    pub fn set(&self, t: &Tensor) -> Result<()> {
        let cur = self.value.borrow().shape().clone();
        if t.shape() != &cur {
            return Err(Error::Shape {
                op: "param_set",
                shapes: vec![cur.0, t.dims().to_vec()],
                backend: t.device().name(),
                msg: "new value has a different shape".into(),
            });
        }
        let v = Tensor::wrap_typed(t.0.storage.clone(), t.0.dtype, cur, t.0.device.clone(), None, Some(self.grad.clone()));
        *self.value.borrow_mut() = v;
        Ok(())
    }
    /// The accumulated gradient, if any backward pass reached this parameter.
    pub fn grad(&self) -> Option<Tensor> {
        self.grad.borrow().clone()
    }
    pub fn zero_grad(&self) {
        *self.grad.borrow_mut() = None;
    }
}

impl std::fmt::Debug for Param {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Param({})", self.shape())
    }
}
