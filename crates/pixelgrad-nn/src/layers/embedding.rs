use pixelgrad_core::{Device, Error, Param, Result, Tensor};

use super::{bad_input, bad_option};
use crate::init::Init;
use crate::{Mode, Module};

/// Token embedding (Keras `Embedding`): a trainable table `[vocab, dim]` looked up by id.
///
/// Input: token ids as f32 whole numbers, any shape (usually `[batch, seq]`); output: the
/// input's shape plus `dim`. An id that is not a whole number in `0..vocab` is a typed error
/// (the ids are read back to the host to check them; on a device that cannot block, WebGPU in
/// a browser, the caller checks them before upload, as the browser package does). The lookup is a gather on the table's
/// first axis; its gradient is a scatter-add into the rows that were used.
pub struct Embedding {
    pub table: Param,
    vocab: usize,
    dim: usize,
}

impl Embedding {
    /// Table drawn from `U(-0.05, 0.05)`, Keras' default `uniform` embedding initialiser.
    pub fn new(dev: &Device, vocab: usize, dim: usize, init: &mut Init) -> Result<Self> {
        if vocab == 0 || dim == 0 {
            return Err(bad_option("embedding", format!("vocab ({vocab}) and dim ({dim}) must be at least 1")));
        }
        let table = Tensor::rand_uniform(dev, [vocab, dim], -0.05, 0.05, init.next_seed())?;
        Ok(Embedding { table: Param::new(table), vocab, dim })
    }

    pub fn vocab(&self) -> usize {
        self.vocab
    }
    pub fn dim(&self) -> usize {
        self.dim
    }
}

impl Module for Embedding {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn forward(&self, ids: &Tensor, _mode: Mode) -> Result<Tensor> {
        let n = ids.numel();
        if n == 0 {
            return Err(bad_input("embedding", ids, "expects at least one token id".into()));
        }
        match ids.to_vec_f64() {
            Ok(values) => {
                if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| !(v.fract() == 0.0 && **v >= 0.0 && **v < self.vocab as f64))
                {
                    return Err(bad_input(
                        "embedding",
                        ids,
                        format!("token id {v} at flat index {i} is not a whole number in 0..{}", self.vocab),
                    ));
                }
            }
            // A device that cannot block (WebGPU in a browser) cannot read the ids back here:
            // whoever uploaded them checks them (the browser package checks host ids against
            // the first layer's vocabulary and refuses device-tensor ids there).
            Err(Error::WouldBlock { .. }) => {}
            Err(e) => return Err(e),
        }
        let idx = ids.detach().reshape([n, 1])?.broadcast_to([n, self.dim])?;
        let rows = self.table.tensor().gather(0, &idx)?;
        let mut out = ids.dims().to_vec();
        out.push(self.dim);
        rows.reshape(out)
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        f("embeddings", &self.table);
    }
    fn describe(&self) -> String {
        format!("Embedding({} x {})", self.vocab, self.dim)
    }
}
