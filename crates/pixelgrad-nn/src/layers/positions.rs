use pixelgrad_core::{Device, Param, Result, Tensor};

use super::{bad_input, bad_option};
use crate::init::Init;
use crate::{Mode, Module};

/// Learned absolute positions (keras-hub `PositionEmbedding`): a trainable table
/// `[max_len, dim]` whose first `seq` rows are added to the input.
///
/// Input `[batch, seq, dim]` with `seq <= max_len`, output the same shape.
pub struct LearnedPositions {
    pub table: Param,
    max_len: usize,
    dim: usize,
}

impl LearnedPositions {
    /// Table drawn from Glorot uniform (keras-hub's default).
    pub fn new(dev: &Device, max_len: usize, dim: usize, init: &mut Init) -> Result<Self> {
        if max_len == 0 || dim == 0 {
            return Err(bad_option("position_embedding", format!("sequence length ({max_len}) and dim ({dim}) must be at least 1")));
        }
        let table = init.glorot_uniform(dev, [max_len, dim], max_len, dim)?;
        Ok(LearnedPositions { table: Param::new(table), max_len, dim })
    }
    pub fn max_len(&self) -> usize {
        self.max_len
    }
}

impl Module for LearnedPositions {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, x: &Tensor, _mode: Mode) -> Result<Tensor> {
        let d = x.dims();
        if x.rank() != 3 || d[2] != self.dim || d[1] > self.max_len {
            return Err(bad_input("position_embedding", x, format!("expects [batch, seq <= {}, {}]", self.max_len, self.dim)));
        }
        let rows = self.table.tensor().slice(0, 0, d[1])?.reshape([1, d[1], self.dim])?;
        x.add(&rows)
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        f("embeddings", &self.table);
    }
    fn describe(&self) -> String {
        format!("PositionEmbedding({} x {})", self.max_len, self.dim)
    }
}
