//! The "Quantised tensors" example of the book (docs/src/guides/quantised.md), kept true: quantise activations and weights,
//! multiply with i32 accumulation, compare with the f32 product.

use pixelgrad::kernel::DType;
use pixelgrad::quant::{QTensor, QuantParams};
use pixelgrad::{Device, Tensor};

#[test]
fn readme_quantised_tensors_example() -> pixelgrad::Result<()> {
    let dev = Device::new(pixelgrad::cpu::CpuBackend::new());
    let x = Tensor::from_vec(&dev, &[0.5, -1.0, 2.0, 0.25, 1.5, 0.0, -0.5, 1.0], [2, 4])?;
    let w = Tensor::from_vec(&dev, &[0.2, -0.1, 0.4, 0.3, 0.0, -0.2, 0.1, 0.5, 0.25, -0.4, 0.1, 0.05], [4, 3])?;
    // u8 activations per tensor, i8 weights per output channel (axis 1), from their ranges
    let xq = QTensor::quantize(&x, QuantParams::calibrate(&x, DType::U8, None, false)?)?;
    let wq = QTensor::quantize(&w, QuantParams::calibrate(&w, DType::I8, Some(1), true)?)?;
    assert_eq!(wq.values().storage_dtype(), DType::I8); // one byte per weight
    assert_eq!(wq.storage_bytes(), 12);
    let y = xq.matmul(&wq)?; // Σ (x - zx)(w - zw) in i32, times the scales
    let exact = x.matmul(&w)?.to_vec()?;
    for (a, b) in y.to_vec()?.iter().zip(&exact) {
        assert!((a - b).abs() < 0.05, "{a} vs {b}");
    }
    // and back: every value within half a step of the original
    let back = wq.dequantize()?.to_vec()?;
    for (i, (a, b)) in back.iter().zip(w.to_vec()?).enumerate() {
        assert!((a - b).abs() <= wq.params().scale[i % 3] / 2.0 + 1e-6);
    }
    Ok(())
}
