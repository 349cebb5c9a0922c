//! Traces on a backend (`Backend::trace_begin` / `trace_end` / `trace_replay`, the recording
//! concept of `pixelgrad_core::recording`), one check per function, each called by a one-line
//! test per backend (`crates/pixelgrad-wgpu/tests/trace.rs`,
//! `crates/pixelgrad-webgl/tests/trace.rs`, `crates/pixelgrad-cpu/tests/trace.rs`): a replay computes bit for bit what the ops compute
//! on new inputs, never overwrites an output a caller holds, refuses runs that read back or draw
//! random numbers, and gives its memory back when dropped. They panic on failure (test code).

use pixelgrad_core::{Device, Tensor};

/// relu(x · w + 1) * 0.5: a product, then a fused elementwise pass.
fn net(x: &Tensor, w: &Tensor) -> Tensor {
    x.matmul(w).unwrap().add_scalar(1.0).unwrap().max_scalar(0.0).unwrap().mul_scalar(0.5).unwrap()
}

fn data(n: usize, k: f32) -> Vec<f32> {
    (0..n).map(|i| ((i as f32 + 1.0) * k).sin()).collect()
}

/// Memory held by live tensors and traces (not pooled).
fn held(dev: &Device) -> u64 {
    let c = dev.backend().counters();
    c.bytes_in_use - c.pooled_bytes
}

pub fn replay_computes_what_the_ops_compute_and_never_overwrites_held_outputs(dev: &Device) {
    let b = dev.backend();
    let x = Tensor::from_vec(dev, &data(12, 0.3), [3, 4]).unwrap();
    let w = Tensor::from_vec(dev, &data(8, 0.7), [4, 2]).unwrap();
    assert!(b.trace_begin(&[x.storage()]));
    assert!(!b.trace_begin(&[x.storage()]), "a second recording while one is open");
    let y = net(&x, &w);
    let trace = b.trace_end(&[y.storage()]).expect("a trace");
    assert!(trace.launches() >= 1);
    let want_y = y.to_vec().unwrap();

    let x2 = Tensor::from_vec(dev, &data(12, 1.1), [3, 4]).unwrap();
    let before = b.counters();
    let out = b.trace_replay(&trace, &[x2.storage()]).unwrap();
    let after = b.counters();
    assert_eq!(after.launches - before.launches, trace.launches() as u64);
    assert_eq!(after.replayed - before.replayed, trace.launches() as u64);
    let first = Tensor::from_storage(dev, out[0].clone(), [3, 2]);
    let want2 = net(&x2, &w).to_vec().unwrap();
    assert_eq!(first.to_vec().unwrap(), want2, "bit for bit what the ops compute");
    assert_ne!(want2, want_y);
    // The recorded run's output, still held, kept its values.
    assert_eq!(y.to_vec().unwrap(), want_y);
    // So does the first replay's, held through a second replay.
    let x3 = Tensor::from_vec(dev, &data(12, 2.3), [3, 4]).unwrap();
    let out3 = b.trace_replay(&trace, &[x3.storage()]).unwrap();
    assert_eq!(Tensor::from_storage(dev, out3[0].clone(), [3, 2]).to_vec().unwrap(), net(&x3, &w).to_vec().unwrap());
    assert_eq!(first.to_vec().unwrap(), want2);

    // An input of another length is refused, naming it.
    let short = Tensor::from_vec(dev, &data(8, 1.0), [2, 4]).unwrap();
    let Err(err) = b.trace_replay(&trace, &[short.storage()]) else { panic!("a short input was taken") };
    assert!(err.to_string().contains("input 0 holds 8 elements"), "{err}");
    assert!(b.trace_replay(&trace, &[]).is_err());
}

pub fn reads_and_random_numbers_make_a_run_unreplayable(dev: &Device) {
    let b = dev.backend();
    let x = Tensor::from_vec(dev, &data(6, 0.3), [6]).unwrap();
    assert!(b.trace_begin(&[x.storage()]));
    let y = x.exp().unwrap();
    y.to_vec().unwrap();
    let z = y.add_scalar(1.0).unwrap();
    assert!(b.trace_end(&[z.storage()]).is_none());

    assert!(b.trace_begin(&[x.storage()]));
    let r = Tensor::rand_uniform(dev, [6], 0.0, 1.0, 7).unwrap();
    let z = x.add(&r).unwrap();
    assert!(b.trace_end(&[z.storage()]).is_none());

    // Nothing is open after either: a new recording starts.
    assert!(b.trace_begin(&[x.storage()]));
    b.trace_abort();
    assert!(b.trace_end(&[x.storage()]).is_none());
    assert!(!b.trace_begin(&[x.storage(), x.storage()]), "one storage given twice");
}

pub fn a_dropped_trace_gives_its_memory_back(dev: &Device) {
    let b = dev.backend();
    let x = Tensor::from_vec(dev, &data(64, 0.3), [8, 8]).unwrap();
    let w = Tensor::from_vec(dev, &data(64, 0.9), [8, 8]).unwrap();
    let base = held(dev);
    assert!(b.trace_begin(&[x.storage()]));
    let y = net(&net(&x, &w), &w);
    let trace = b.trace_end(&[y.storage()]).unwrap();
    let want = y.to_vec().unwrap();
    drop(y);
    // The weight dropped by its tensor stays: the trace reads it.
    drop(w);
    let out = b.trace_replay(&trace, &[x.storage()]).unwrap();
    assert_eq!(Tensor::from_storage(dev, out[0].clone(), [8, 8]).to_vec().unwrap(), want);
    assert!(held(dev) > base);
    drop((out, trace));
    dev.backend().flush().unwrap();
    assert!(held(dev) < base, "the weight and every intermediate went back to the pool: {} vs {base}", held(dev));
}
