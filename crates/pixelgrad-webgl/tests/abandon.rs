//! A backend abandoned after a context loss (`WebGlBackend::abandon`, what the browser package
//! calls before recovering): every later call, on it and on its tensors, is a `DeviceLost`
//! error rather than GL calls on a context whose objects are gone, dropping them deletes
//! nothing, and a new backend works.

use pixelgrad_core::{Device, Error, Tensor};
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

#[test]
fn an_abandoned_backend_refuses_every_call_and_a_new_one_works() {
    let b = WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).unwrap();
    let dev = Device::new(b.clone());
    let a = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0, 4.0], [2, 2]).unwrap();
    assert_eq!(a.matmul(&a).unwrap().to_vec().unwrap(), vec![7.0, 10.0, 15.0, 22.0]);
    b.abandon();
    let e = a.matmul(&a).and_then(|t| t.to_vec()).unwrap_err();
    assert!(matches!(e, Error::DeviceLost { .. }), "{e}");
    assert!(e.to_string().contains("device lost"), "{e}");
    assert!(matches!(Tensor::from_vec(&dev, &[1.0], [1]).and_then(|t| t.to_vec()), Err(Error::DeviceLost { .. })));
    drop(a);
    drop(dev);
    drop(b);

    let fresh = Device::new(WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).unwrap());
    let c = Tensor::from_vec(&fresh, &[1.0, 2.0, 3.0, 4.0], [2, 2]).unwrap();
    assert_eq!(c.matmul(&c).unwrap().to_vec().unwrap(), vec![7.0, 10.0, 15.0, 22.0]);
}
