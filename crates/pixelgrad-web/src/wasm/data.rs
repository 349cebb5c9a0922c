//! Data helpers: the embedded digits set, MNIST IDX parsing, seeded shuffling.

use js_sys::{Array, Float32Array, Int32Array, Object, Reflect};
use pixelgrad::data::Dataset;
use wasm_bindgen::prelude::*;

use super::js_err;

fn set(o: &Object, k: &str, v: impl Into<JsValue>) -> Result<(), JsValue> {
    Reflect::set(o, &JsValue::from_str(k), &v.into()).map(|_| ())
}

fn shape(dims: &[usize]) -> Array {
    dims.iter().map(|&d| JsValue::from(d as u32)).collect()
}

/// `{ x: Float32Array, y: Int32Array, n }` of a data set (images flattened, values in [0, 1]).
fn split_obj(d: &Dataset) -> Result<Object, JsValue> {
    let o = Object::new();
    set(&o, "x", Float32Array::from(d.images()))?;
    let y: Vec<i32> = d.labels().iter().map(|&v| v as i32).collect();
    set(&o, "y", Int32Array::from(&y[..]))?;
    set(&o, "n", d.len() as u32)?;
    Ok(o)
}

/// The embedded 8x8 digits set split 80/20 (seed 42): `{ train, test, inputShape: [64],
/// imageShape: [8, 8, 1] }`.
#[wasm_bindgen(js_name = digits)]
pub fn digits() -> Result<Object, JsValue> {
    let split = pixelgrad::data::digits_split(0.2, 42).map_err(js_err)?;
    let o = Object::new();
    set(&o, "train", split_obj(&split.train)?)?;
    set(&o, "test", split_obj(&split.test)?)?;
    set(&o, "inputShape", shape(&[64]))?;
    set(&o, "imageShape", shape(&[8, 8, 1]))?;
    set(&o, "classes", 10u32)?;
    Ok(o)
}

/// MNIST-style IDX image and label files (gzipped or not): `{ x, y, n, imageShape }`.
#[wasm_bindgen(js_name = parseMnist)]
pub fn parse_mnist(images: Vec<u8>, labels: Vec<u8>) -> Result<Object, JsValue> {
    let images = pixelgrad::data::maybe_gunzip(images, "images").map_err(js_err)?;
    let labels = pixelgrad::data::maybe_gunzip(labels, "labels").map_err(js_err)?;
    let img = pixelgrad::data::parse_idx_images(&images, "images").map_err(js_err)?;
    let lab = pixelgrad::data::parse_idx_labels(&labels, "labels").map_err(js_err)?;
    if lab.len() != img.n {
        return Err(js_err(format!("parseMnist: {} images but {} labels", img.n, lab.len())));
    }
    let o = Object::new();
    set(&o, "x", Float32Array::from(&img.pixels[..]))?;
    let y: Vec<i32> = lab.iter().map(|&v| v as i32).collect();
    set(&o, "y", Int32Array::from(&y[..]))?;
    set(&o, "n", img.n as u32)?;
    set(&o, "imageShape", shape(&[img.rows, img.cols, 1]))?;
    Ok(o)
}

/// The order of epoch `epoch` for `n` samples: the same permutation as the native trainer
/// (`pixelgrad_nn::train::shuffled` seeded with `rng::mix(seed, epoch)`).
#[wasm_bindgen(js_name = shuffledIndices)]
pub fn shuffled_indices(n: u32, seed: u32, epoch: u32) -> Vec<u32> {
    let s = pixelgrad::rng::mix(seed as u64, epoch as u64);
    pixelgrad::nn::train::shuffled(n as usize, s).into_iter().map(|i| i as u32).collect()
}
