//! `trainable: false` for every layer type: a frozen layer gets no gradient and no update,
//! stays in the saved file, and still passes gradients to the layers before it.

use pixelgrad_core::{composite::mse, Device, Tensor};
use pixelgrad_nn::layers::{Activation, BatchNorm, Conv2d, Flatten, Linear};
use pixelgrad_nn::{io, Init, Mode, Module, OptimizerKind, Sequential};

fn values(m: &dyn Module) -> Vec<Vec<f32>> {
    let mut v = Vec::new();
    m.visit_params(&mut |_, p| v.push(p.tensor().to_vec().unwrap()));
    v
}

#[test]
fn frozen_layers_keep_their_weights_and_pass_gradients_on() {
    let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
    let mut init = Init::new(1);
    let model = Sequential::new()
        .push(Conv2d::new(&dev, 1, 2, 3, 1, 1, &mut init).unwrap())
        .push(BatchNorm::new_2d(&dev, 2).unwrap())
        .push(Activation::Relu)
        .push(Flatten)
        .push(Linear::new(&dev, 2 * 4 * 4, 6, &mut init).unwrap())
        .push(Linear::new(&dev, 6, 3, &mut init).unwrap());
    let total = model.num_params();
    // freeze the batch norm and the middle Linear
    model.layers()[1].set_trainable(false);
    model.layers()[4].set_trainable(false);
    assert_eq!(model.num_trainable(), total - 2 * 2 - (2 * 16 * 6 + 6));
    let before: Vec<Vec<Vec<f32>>> = model.layers().iter().map(|l| values(l.as_ref())).collect();
    let x = Tensor::rand_uniform(&dev, [5, 1, 4, 4], -1.0, 1.0, 2).unwrap();
    let y = Tensor::zeros(&dev, [5, 3]).unwrap();
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.05);
    for _ in 0..3 {
        mse(&model.forward(&x, Mode::Train).unwrap(), &y).unwrap().backward().unwrap();
        opt.step(&model).unwrap();
    }
    let after: Vec<Vec<Vec<f32>>> = model.layers().iter().map(|l| values(l.as_ref())).collect();
    assert_eq!(after[1], before[1], "frozen batch norm changed");
    assert_eq!(after[4], before[4], "frozen linear changed");
    assert_ne!(after[0], before[0], "the conv before the frozen layers must still train");
    assert_ne!(after[5], before[5], "the last linear must train");
    // frozen parameters are still saved, and unfreezing makes them train again
    let bytes = io::to_bytes(&model, &Default::default()).unwrap();
    assert!(String::from_utf8_lossy(&bytes).contains("4.weight"));
    model.set_trainable(true);
    assert_eq!(model.num_trainable(), total);
    mse(&model.forward(&x, Mode::Train).unwrap(), &y).unwrap().backward().unwrap();
    opt.step(&model).unwrap();
    assert_ne!(values(model.layers()[4].as_ref()), before[4]);
}
