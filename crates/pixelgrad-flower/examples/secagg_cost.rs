//! What a SecAgg+ node's masking costs on the CPU, per model size: the update scaled by its
//! weight, quantised with stochastic rounding (one ChaCha20 draw per value), the private mask
//! and one pairwise mask per neighbour added (numpy's MT19937 streams, as `secaggplus_mod`),
//! reduced modulo the mask range and encoded as the int64 arrays that go to the SuperLink.
//! The same arithmetic as `SecAggClient::mask`, timed part by part, on flwr 1.42's default
//! ranges (clipping 8, quantisation 2^22, modulus 2^32). Numbers for the federated design doc:
//!
//! ```text
//! cargo run --release -p pixelgrad-flower --example secagg_cost [-- NEIGHBOURS...]
//! ```
//! Prints one JSON line per (model, neighbours).

use std::time::Instant;

use pixelgrad_core::Device;
use pixelgrad_flower::npy;
use pixelgrad_flower::secagg::{prg, quantize, Entropy, OsEntropy};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::Module;

const CLIP: f64 = 8.0;
const TARGET: u64 = 1 << 22;
const MODULUS: u64 = 1 << 32;

fn sizes(preset: Preset, input: [usize; 3], classes: usize) -> Vec<usize> {
    let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
    let m = ModelSpec {
        preset,
        input,
        classes,
    }
    .build(&dev, 1)
    .expect("model");
    let mut v = Vec::new();
    m.visit_params(&mut |_, p| v.push(p.tensor().dims().iter().product()));
    v
}

/// Best of `reps` runs of `f`, in milliseconds.
fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let neighbours: Vec<usize> = {
        let a: Vec<usize> = std::env::args()
            .skip(1)
            .filter_map(|s| s.parse().ok())
            .collect();
        if a.is_empty() {
            vec![2, 4, 7]
        } else {
            a
        }
    };
    let models = [
        ("digits mlp (64-256-10)", sizes(Preset::Mlp, [1, 8, 8], 10)),
        (
            "mnist mlp (784-256-10)",
            sizes(Preset::Mlp, [1, 28, 28], 10),
        ),
        ("mnist cnn", sizes(Preset::Cnn, [1, 28, 28], 10)),
    ];
    let mut entropy = OsEntropy::new().expect("entropy");
    for (name, arrays) in &models {
        let n: usize = arrays.iter().sum();
        let values: Vec<Vec<f32>> = arrays
            .iter()
            .map(|&k| (0..k).map(|i| ((i % 97) as f32 - 48.0) * 1e-3).collect())
            .collect();
        let (_, dq) = quantize::weight(180.0, 1000.0, TARGET);
        let mut q: Vec<Vec<i64>> = Vec::new();
        let quantise_ms = best(5, || {
            q = values
                .iter()
                .map(|v| {
                    let s = quantize::scale(v, dq);
                    let mut out = Vec::with_capacity(s.len());
                    let mut u = || entropy.uniform();
                    quantize::quantize_into(&s, CLIP, TARGET, &mut u, &mut out).expect("quantise");
                    out
                })
                .collect();
        });
        let one_mask_ms = best(5, || {
            prg::visit_masks(&[7u8; 32], MODULUS, arrays, |i, j, m| {
                q[i][j] = q[i][j].wrapping_add(m as i64)
            })
            .expect("mask");
        });
        let encode_ms = best(5, || {
            let bytes: usize = q
                .iter()
                .zip(arrays)
                .map(|(v, &k)| {
                    let r: Vec<i64> = v.iter().map(|x| x.rem_euclid(MODULUS as i64)).collect();
                    npy::encode_i64(&[k], &r).len()
                })
                .sum();
            std::hint::black_box(bytes);
        });
        for &k in &neighbours {
            // the private mask plus one pairwise mask per neighbour
            let masks_ms = one_mask_ms * (k + 1) as f64;
            println!(
                "{}",
                serde_json::json!({
                    "model": name, "params": n, "neighbours": k,
                    "quantise_ms": quantise_ms, "mask_stream_ms": one_mask_ms,
                    "masks_ms": masks_ms, "encode_ms": encode_ms,
                    "total_ms": quantise_ms + masks_ms + encode_ms,
                    "f32_update_bytes": n * 4, "masked_int64_bytes": n * 8,
                })
            );
        }
    }
}
