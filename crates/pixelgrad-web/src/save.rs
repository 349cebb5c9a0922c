//! safetensors bytes from host copies of the tensors. `pixelgrad_nn::io::to_bytes` reads with
//! the blocking `to_vec`, which WebGPU in a browser refuses; the browser reads every tensor with
//! `to_vec_async` first and serialises here. Loading needs no reads and uses
//! `pixelgrad_nn::io::load_bytes` directly.

use std::collections::HashMap;

use pixelgrad::{Error, Result};
use safetensors::tensor::{Dtype, TensorView};

/// One tensor read back: name, shape, values.
pub type HostTensor = (String, Vec<usize>, Vec<f32>);

/// Serialises `tensors` (F32, little-endian) with `metadata`.
pub fn to_bytes(tensors: &[HostTensor], metadata: &HashMap<String, String>) -> Result<Vec<u8>> {
    let bytes: Vec<Vec<u8>> = tensors.iter().map(|(_, _, v)| v.iter().flat_map(|x| x.to_le_bytes()).collect()).collect();
    let mut views = Vec::with_capacity(tensors.len());
    for ((name, shape, _), b) in tensors.iter().zip(&bytes) {
        let v = TensorView::new(Dtype::F32, shape.clone(), b)
            .map_err(|e| Error::invalid(format!("safetensors tensor {name}"), e.to_string()))?;
        views.push((name.clone(), v));
    }
    let meta = if metadata.is_empty() { None } else { Some(metadata.clone()) };
    safetensors::tensor::serialize(views, meta).map_err(|e| Error::invalid("safetensors", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Net;
    use pixelgrad::cpu::CpuBackend;
    use pixelgrad::Device;

    #[test]
    fn round_trip_restores_predictions() {
        let dev = Device::new(CpuBackend::new());
        let cfg = serde_json::json!({"seed": 3, "layers": [
            {"type": "dense", "units": 5, "inputShape": [4], "activation": "tanh"},
            {"type": "batchNormalization"},
            {"type": "dense", "units": 3}
        ]});
        let a = Net::new(&dev, cfg.clone()).unwrap();
        let host: Vec<HostTensor> = a.named_tensors().into_iter().map(|(n, t)| (n, t.dims().to_vec(), t.to_vec().unwrap())).collect();
        let meta = HashMap::from([("config".to_string(), cfg.to_string())]);
        let bytes = to_bytes(&host, &meta).unwrap();
        let mut cfg_b = cfg.clone();
        cfg_b["seed"] = serde_json::json!(99);
        let b = Net::new(&dev, cfg_b).unwrap();
        b.load_bytes(&bytes).unwrap();
        let x = [0.1, -0.2, 0.3, 0.4, 1.0, 2.0, -1.0, 0.0];
        assert_eq!(a.predict(&x, &[2, 4]).unwrap().to_vec().unwrap(), b.predict(&x, &[2, 4]).unwrap().to_vec().unwrap());
        assert_eq!(pixelgrad::nn::io::read_metadata(&bytes).unwrap()["config"], cfg.to_string());
    }
}
