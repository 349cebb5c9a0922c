// The JSON model spec of the browser package (`pg.sequential` configs, saved model configs):
// build, summary, then one forward pass of a zero batch.
//
// Shared by the cargo-fuzz target `fuzz/fuzz_targets/spec.rs` and the stable test that runs
// the seed corpus and regressions (`crates/pixelgrad-web/tests/fuzz_corpora.rs`): any panic
// is a bug. The engine allows weights of up to 2^27 values each; the fuzzer explores the
// structure of configs, not their sizes, so configs with a number above 64 or more than 16
// layers are skipped (they would only measure allocation speed).
use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::{Mode, Module};

fn small(v: &serde_json::Value, depth: usize) -> bool {
    use serde_json::Value;
    depth < 8
        && match v {
            Value::Number(n) => n.as_f64().is_some_and(|x| x.abs() <= 64.0),
            Value::Array(a) => a.len() <= 16 && a.iter().all(|x| small(x, depth + 1)),
            Value::Object(o) => o.len() <= 16 && o.values().all(|x| small(x, depth + 1)),
            _ => true,
        }
}

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(cfg) = serde_json::from_str::<serde_json::Value>(text) else { return };
    if !small(&cfg, 0) {
        return;
    }
    let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
    let Ok(built) = pixelgrad_web::spec::build(&dev, &cfg) else { return };
    let _ = pixelgrad_web::spec::summary(&built);
    let mut shape = vec![1usize];
    shape.extend(built.input.iter());
    if shape.iter().product::<usize>() <= 1 << 16 {
        let x = Tensor::zeros(&dev, shape).expect("zeros");
        let _ = built.seq.forward(&x, Mode::Eval);
    }
}
