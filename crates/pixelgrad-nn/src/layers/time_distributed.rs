use pixelgrad_core::{Param, Result, Tensor};

use super::bad_input;
use crate::module::Buffer;
use crate::{Mode, Module};

/// Applies a layer to every position of a sequence (Keras `TimeDistributed`): `[batch, seq, ..]`
/// runs as `[batch · seq, ..]` through the inner layer and comes back as `[batch, seq, ..]`.
/// A dense layer on a sequence is one of these. Parameter names are the inner layer's.
pub struct TimeDistributed {
    pub inner: Box<dyn Module>,
}

impl TimeDistributed {
    pub fn new(inner: Box<dyn Module>) -> Self {
        TimeDistributed { inner }
    }
}

impl Module for TimeDistributed {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, mode: Mode) -> Result<Tensor> {
        let d = x.dims();
        if x.rank() < 3 {
            return Err(bad_input("time_distributed", x, "expects [batch, seq, ..] (rank 3 or more)".into()));
        }
        let mut flat = vec![d[0] * d[1]];
        flat.extend_from_slice(&d[2..]);
        let y = self.inner.forward(&x.reshape(flat)?, mode)?;
        let mut out = vec![d[0], d[1]];
        out.extend_from_slice(&y.dims()[1..]);
        y.reshape(out)
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        self.inner.visit_params(f);
    }
    fn visit_buffers(&self, f: &mut dyn FnMut(&str, &Buffer)) {
        self.inner.visit_buffers(f);
    }
    fn visit_counters(&self, f: &mut dyn FnMut(&str, &std::cell::Cell<u64>)) {
        self.inner.visit_counters(f);
    }
    fn describe(&self) -> String {
        format!("TimeDistributed({})", self.inner.describe())
    }
}
