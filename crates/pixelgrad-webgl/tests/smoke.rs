use pixelgrad_core::{Backend, Device, Tensor};
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

#[test]
fn smoke() {
    let b = WebGlBackend::new_headless(WebGlOptions::default()).unwrap();
    println!("{}\n{:#?}", b.name(), b.report());
    let dev = Device::new(b.clone());
    let x = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0, 4.0, 5.0], [5]).unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    let y = x.exp().unwrap();
    println!("{:?}", y.to_vec().unwrap());
    println!("{:?}", b.counters());
}
