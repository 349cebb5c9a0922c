//! Forward time of scaled dot-product attention, the fused op (`Tensor::attention_fused`:
//! online softmax over key tiles, no `S × T` scores) against the composition it replaces
//! (`Tensor::attention_composed`: batched products and a softmax), side by side in one run:
//! the two alternate, rep after rep, and the medians are compared. Self-attention with B·N =
//! 8 heads of H = Hv = 64 and S = T in {128, 512, 1024}, plus a decoder's next token (S = 1,
//! T = 1024), on the CPU and on WebGPU (whatever adapter wgpu finds: lavapipe in CI). Then,
//! on the CPU, causal self-attention (the `causal` option: the fused kernel skips the key
//! tiles above the diagonal, the composition adds the exclusions to the full scores) for
//! S = T in {256, 1024}, and the fused op given the same exclusions as a mask tensor instead
//! (what the ONNX importer passed before the option: every key tile walked). Benchmark, not a test: it asserts nothing. Times include reading
//! the result back.
//!
//! `cargo run --release -p pixelgrad --features webgpu --example attention_bench -- [reps]`

use std::time::Instant;

use pixelgrad::cpu::CpuBackend;
use pixelgrad::wgpu::{WgpuBackend, WgpuOptions};
use pixelgrad::{AttentionOpts, Device, Result, Tensor};

fn once(f: &dyn Fn() -> Result<Tensor>) -> Result<f64> {
    let t = Instant::now();
    f()?.to_vec()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn bench(dev: &Device, reps: usize, shapes: &[(usize, usize)], causal: bool) -> Result<()> {
    println!("{}{}", dev.name(), if causal { ", causal" } else { "" });
    println!("{:<24} {:>12} {:>12} {:>8} {:>12}", "shape", "fused ms", "composed ms", "ratio", "scores MiB");
    if causal {
        println!("{:<24} {:>12} {:>12} {:>8}", "", "", "mask ms", "ratio");
    }
    let (b, n, h) = (1, 8, 64);
    for &(s, t) in shapes {
        let q = Tensor::rand_uniform(dev, vec![b, n, s, h], -1.0, 1.0, 1)?;
        let k = Tensor::rand_uniform(dev, vec![b, n, t, h], -1.0, 1.0, 2)?;
        let v = Tensor::rand_uniform(dev, vec![b, n, t, h], -1.0, 1.0, 3)?;
        let mut opts = AttentionOpts::scaled(1.0 / (h as f32).sqrt());
        if causal {
            opts = opts.causal(t - s);
        }
        let fused = || q.attention_fused(&k, &v, None, opts);
        let composed = || q.attention_composed(&k, &v, None, opts);
        // the exclusions as an additive [1, 1, S, T] mask, made once
        let mask = pixelgrad::composite::attention_exclusions(dev, s, t, &opts)?;
        let plain = AttentionOpts::scaled(opts.scale);
        let masked = || q.attention_fused(&k, &v, mask.as_ref(), plain);
        // warm up all (pipelines compiled, pools filled)
        once(&fused)?;
        once(&composed)?;
        once(&masked)?;
        let (mut tf, mut tc, mut tm) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            tf.push(once(&fused)?);
            tc.push(once(&composed)?);
            if causal {
                tm.push(once(&masked)?);
            }
        }
        let (mf, mc) = (median(tf), median(tc));
        let scores = (b * n * s * t * 4) as f64 / (1 << 20) as f64;
        println!("{:<24} {:>12.3} {:>12.3} {:>8.2} {:>12.1}", format!("S={s} T={t}"), mf, mc, mc / mf, scores);
        if causal {
            let mm = median(tm);
            println!("{:<24} {:>12} {:>12.3} {:>8.2}", "", "", mm, mm / mf);
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let reps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(7);
    println!("ratio = composed / fused (above 1: the fused op is faster); medians of {reps} alternating reps");
    let plain = [(128, 128), (512, 512), (1024, 1024), (1, 1024)];
    let cpu = Device::new(CpuBackend::new());
    if std::env::var_os("ATTENTION_BENCH_CAUSAL_ONLY").is_none() {
        bench(&cpu, reps, &plain, false)?;
        bench(&Device::new(WgpuBackend::new(WgpuOptions::default())?), reps, &plain, false)?;
    }
    bench(&cpu, reps, &[(256, 256), (1024, 1024)], true)?;
    Ok(())
}
