// The `.npy` reader of the Flower client (`pixelgrad_flower::npy::decode`): the bytes of every
// array a Fleet server sends (`np.save` buffers, float32 or float64).
//
// Shared by the cargo-fuzz target `fuzz/fuzz_targets/flower_npy.rs` and the stable test that
// runs the seed corpus and regressions (`crates/pixelgrad-web/tests/fuzz_corpora.rs`): any
// panic is a bug, and an array read must hold exactly its shape's values.

pub fn run(data: &[u8]) {
    if let Ok(a) = pixelgrad_flower::npy::decode(data) {
        let n = a.shape.iter().try_fold(1usize, |x, &d| x.checked_mul(d));
        assert_eq!(n, Some(a.data.len()), "shape {:?} vs {} values", a.shape, a.data.len());
        // what was read writes back to the same shape and values
        let again = pixelgrad_flower::npy::decode(&pixelgrad_flower::npy::encode_f32(&a.shape, &a.data)).expect("re-encoded array reads");
        assert_eq!(again.shape, a.shape);
        assert_eq!(again.data.len(), a.data.len());
    }
}
