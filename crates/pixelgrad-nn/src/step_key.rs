//! Keys for step plans. The GPU backends record a training step once and replay it
//! (`Device::step`); the key says which recording a step may replay. It must tell apart every
//! step that launches different kernels on different memory: two models trained on one device,
//! one model with different batch shapes, a model with some layers frozen and then unfrozen.
//! A replayed launch is checked against the recording either way, so a key that is too coarse
//! never changes results, it only makes the steps re-record instead of replaying.

use crate::{Module, Optimizer};

/// FNV-1a over 64-bit words.
fn mix(h: u64, v: u64) -> u64 {
    v.to_le_bytes().iter().fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The plan key of a training step of `model` updated by `opt` on inputs of dims `input`:
/// the identity and trainability of every parameter, the optimizer instance and the input
/// dims.
///
/// ```
/// use pixelgrad_core::Device;
/// use pixelgrad_nn::{layers::Linear, step_key, Init, Module, OptimizerKind};
/// # fn main() -> pixelgrad_core::Result<()> {
/// let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
/// let mut init = Init::new(1);
/// let a = Linear::new(&dev, 4, 2, &mut init)?;
/// let b = Linear::new(&dev, 4, 2, &mut init)?;
/// let opt = OptimizerKind::parse("sgd")?.build(0.1);
/// assert_ne!(step_key(&a, &*opt, &[8, 4]), step_key(&b, &*opt, &[8, 4]));
/// assert_ne!(step_key(&a, &*opt, &[8, 4]), step_key(&a, &*opt, &[5, 4]));
/// assert_eq!(step_key(&a, &*opt, &[8, 4]), step_key(&a, &*opt, &[8, 4]));
/// # Ok(()) }
/// ```
pub fn step_key(model: &dyn Module, opt: &dyn Optimizer, input: &[usize]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325;
    model.visit_params(&mut |_, p| {
        h = mix(h, p.id());
        h = mix(h, p.is_trainable() as u64);
    });
    // The optimizer's address: its state (moments, step counts) lives in it.
    h = mix(h, opt as *const dyn Optimizer as *const () as usize as u64);
    h = mix(h, input.len() as u64);
    input.iter().fold(h, |h, &d| mix(h, d as u64))
}
