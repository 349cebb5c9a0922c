//! Kernel replay on and off, side by side in one run: each model fixture on each backend, two
//! sessions on one device (replay on, replay off), their runs interleaved, each run's outputs
//! read back (so the device finished). Prints a Markdown table of median ms per run and
//! launches per run; asserts nothing (timings are noisy: read the ratios).
//!
//! ```text
//! cargo run --release -p pixelgrad-onnx --example replay_bench -- [RUNS] [BACKENDS] [MODELS]
//! ```
//!
//! RUNS defaults to 20; BACKENDS is a comma list of `cpu`, `webgpu`, `webgl` (default all
//! three); MODELS a comma list of fixture names under `target/onnx-fixtures/models` (default
//! `ppocr_cls,squeezenet,gpt_fp32`).

use std::error::Error;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use pixelgrad_core::Device;
use pixelgrad_onnx::{npy, HostTensor, Input, Model, Session};

type Res<T> = std::result::Result<T, Box<dyn Error>>;

fn device(name: &str) -> Res<Device> {
    Ok(match name {
        "cpu" => Device::new(pixelgrad_cpu::CpuBackend::new()),
        "webgpu" => Device::new(pixelgrad_wgpu::WgpuBackend::new(pixelgrad_wgpu::WgpuOptions::default())?),
        "webgl" => {
            let opts = pixelgrad_webgl::WebGlOptions { self_test: false, ..pixelgrad_webgl::WebGlOptions::default() };
            Device::new(pixelgrad_webgl::WebGlBackend::new_headless(opts)?)
        }
        other => return Err(format!("unknown backend {other}").into()),
    })
}

/// A fixture's inputs, by the names its manifest gives them.
fn inputs(fixtures: &Path, model: &str) -> Res<Vec<(String, HostTensor)>> {
    let text = std::fs::read_to_string(fixtures.join("manifest.json"))?;
    let j: serde_json::Value = serde_json::from_str(&text)?;
    let case = j["cases"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["kind"] == "models" && c["name"] == model))
        .ok_or_else(|| format!("no model fixture {model}"))?;
    let dir = fixtures.join(case["dir"].as_str().unwrap_or_default());
    let mut out = Vec::new();
    for e in case["inputs"].as_array().into_iter().flatten() {
        let (name, file) = (e["name"].as_str().unwrap_or_default(), e["file"].as_str().unwrap_or_default());
        out.push((name.to_string(), npy::load(&dir.join(file))?));
    }
    Ok(out)
}

/// One timed run: ms until `run` returned (the host's part: graph walk or replay, encoding;
/// a GPU may still be computing), ms until the outputs were read back, and the launches.
fn run(dev: &Device, s: &Session, feeds: &[(&str, Input)]) -> Res<(f64, f64, u64)> {
    let before = dev.backend().counters().launches;
    let t = Instant::now();
    let outs = s.run(feeds)?;
    let host = t.elapsed().as_secs_f64() * 1e3;
    for (_, v) in outs {
        v.to_host()?;
    }
    Ok((host, t.elapsed().as_secs_f64() * 1e3, dev.backend().counters().launches - before))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs: usize = args.first().map(|a| a.parse()).transpose()?.unwrap_or(20).max(1);
    let backends = args.get(1).map(String::as_str).unwrap_or("cpu,webgpu,webgl");
    let models = args.get(2).map(String::as_str).unwrap_or("ppocr_cls,squeezenet,gpt_fp32");
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/onnx-fixtures");
    let _g = pixelgrad_core::no_grad();
    println!("{runs} runs each, replay off / on interleaved; median ms per run until `run` returned (host) and until the outputs were read (total), launches per run\n");
    println!("| backend | model | host off | host on | off / on | total off | total on | off / on | launches off / on | replays |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for b in backends.split(',') {
        let dev = device(b)?;
        for m in models.split(',') {
            let model = Rc::new(Model::load(fixtures.join("models").join(m).join("model.onnx"))?);
            let ins = inputs(&fixtures, m)?;
            let feeds: Vec<(&str, Input)> = ins.iter().map(|(n, t)| (n.as_str(), Input::Host(t.clone()))).collect();
            let on = Session::from_rc(model.clone(), &dev)?;
            let off = Session::from_rc(model, &dev)?;
            off.set_kernel_replay(false);
            // The first runs compile and (on) record.
            run(&dev, &on, &feeds)?;
            run(&dev, &off, &feeds)?;
            let (mut h_on, mut h_off, mut t_on, mut t_off, mut l_on, mut l_off) = (vec![], vec![], vec![], vec![], 0, 0);
            for _ in 0..runs {
                let (h, t, l) = run(&dev, &off, &feeds)?;
                h_off.push(h);
                t_off.push(t);
                l_off = l;
                let (h, t, l) = run(&dev, &on, &feeds)?;
                h_on.push(h);
                t_on.push(t);
                l_on = l;
            }
            let (ha, hc, ta, tc) = (median(h_off), median(h_on), median(t_off), median(t_on));
            println!(
                "| {b} | {m} | {ha:.2} | {hc:.2} | {:.2}x | {ta:.2} | {tc:.2} | {:.2}x | {l_off} / {l_on} | {} |",
                ha / hc,
                ta / tc,
                on.kernel_replays()
            );
        }
    }
    Ok(())
}
