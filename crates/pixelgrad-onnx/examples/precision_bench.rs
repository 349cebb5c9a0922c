//! Native CPU timings of the browser inference benchmark's models in their f32, f16 and int8
//! forms, side by side, with one thread and with all threads (issue 45, item 2). Prints a
//! Markdown table; asserts nothing.
//!
//! ```text
//! cargo run --release -p pixelgrad-onnx --example precision_bench -- [MODELS_DIR]
//! ```
//!
//! `MODELS_DIR` (default `web/bench/models`) is what `web/bench/make_models.py` writes (`cargo
//! xtask bench --inference` runs it). The forms are those of the browser benchmark: f32 is the
//! float file, f16 the same file with `WeightStorage::F16` (f16 weights, widened where read,
//! as pixelgrad loads it with `{ precision: 'f16' }`), int8 the QDQ file from onnxruntime's
//! quantiser. Each thread count runs in a child process of this binary, because rayon and
//! matrixmultiply read `RAYON_NUM_THREADS` / `MATMUL_NUM_THREADS` once per process.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;
use std::time::{Duration, Instant};

use pixelgrad_core::Device;
use pixelgrad_cpu::CpuBackend;
use pixelgrad_onnx::{HostTensor, Input, Model, Session, WeightStorage};

type Res<T> = std::result::Result<T, Box<dyn Error>>;

/// (benchmark name, file stem, input shape, raw f32 input file if the model has one), as
/// `web/bench/make_models.py` lists them in `models.json`.
type Entry = (&'static str, &'static str, &'static [usize], Option<&'static str>);
const MODELS: &[Entry] = &[
    ("mobilenet-v1-0.5-128", "mobilenet_v1_050_128", &[1, 3, 128, 128], None),
    ("ppocr-cls", "ppocr_cls", &[1, 3, 48, 192], Some("ppocr_cls.input.f32")),
];

/// One timed form: (form, file suffix, weight storage).
const FORMS: &[(&str, &str, WeightStorage)] =
    &[("f32", "", WeightStorage::F32), ("f16", "", WeightStorage::F16), ("int8", "_int8", WeightStorage::Auto)];

/// The model's input: the file's values, or the page's deterministic noise (`bench_input`).
fn input(dir: &Path, s: &Session, shape: &[usize], file: Option<&str>) -> Res<(String, HostTensor)> {
    let info = &s.inputs()[0];
    let n: usize = shape.iter().product();
    let values: Vec<f32> = match file {
        Some(f) => std::fs::read(dir.join(f))?.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
        None => (0..n)
            .map(|i| {
                let v = (i as f64 * 12.9898).sin() * 43758.5453;
                (v - v.floor()) as f32
            })
            .collect(),
    };
    if values.len() != n {
        return Err(format!("input of {} values for shape {shape:?}", values.len()).into());
    }
    Ok((info.name.clone(), HostTensor::f32(shape.to_vec(), values)))
}

/// Runs every model and form on this process's thread count; prints one tab-separated row
/// each: name, form, fastest and median ms, largest |difference| from the f32 form's output.
/// The forms of a model run in turns (one run of each per round) so that a change in the
/// machine's load touches all of them alike; the fastest run is the figure least moved by
/// other processes on a shared machine.
fn child(dir: &Path, only: Option<&str>) -> Res<()> {
    for &(name, stem, shape, file) in MODELS {
        let mut runs = Vec::new();
        for &(form, suffix, storage) in FORMS {
            if only.is_some_and(|o| o != format!("{name}/{form}")) {
                continue;
            }
            let model = Model::load(dir.join(format!("{stem}{suffix}.onnx")))?;
            let dev = Device::new(CpuBackend::new());
            let s = Session::with_storage(Rc::new(model), &dev, storage)?;
            let (in_name, x) = input(dir, &s, shape, file)?;
            runs.push((form, s, in_name, x));
        }
        if runs.is_empty() {
            continue;
        }
        let run = |(_, s, in_name, x): &(&str, Session, String, HostTensor)| -> Res<Vec<f32>> {
            let out = s.run(&[(in_name.as_str(), Input::Host(x.clone()))])?;
            Ok(out[0].1.to_host()?.to_f32())
        };
        let mut outs = Vec::new();
        for r in &runs {
            outs.push(run(r)?);
            run(r)?;
            run(r)?;
        }
        let mut times = vec![Vec::new(); runs.len()];
        let start = Instant::now();
        while times[0].len() < 5 || (start.elapsed() < Duration::from_secs(6) && times[0].len() < 200) {
            for (r, t) in runs.iter().zip(&mut times) {
                let at = Instant::now();
                run(r)?;
                t.push(at.elapsed().as_secs_f64() * 1e3);
            }
        }
        for ((r, t), y) in runs.iter().zip(&mut times).zip(&outs) {
            t.sort_by(f64::total_cmp);
            let diff = outs[0].iter().zip(y).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            println!("ROW\t{name}\t{}\t{:.3}\t{:.3}\t{diff:.3e}", r.0, t[0], t[t.len() / 2]);
        }
    }
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        // `--child DIR [MODEL/FORM]`: one form only, for profiling (its difference column is then 0).
        return child(Path::new(&args[1]), args.get(2).map(String::as_str));
    }
    let dir = PathBuf::from(args.first().map(String::as_str).unwrap_or("web/bench/models"));
    if !dir.join("mobilenet_v1_050_128_int8.onnx").exists() {
        return Err(format!("no benchmark models in {} (run web/bench/make_models.py)", dir.display()).into());
    }
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut columns = Vec::new();
    for threads in [1, all] {
        let out = Command::new(std::env::current_exe()?)
            .arg("--child")
            .arg(&dir)
            .env("RAYON_NUM_THREADS", threads.to_string())
            .env("MATMUL_NUM_THREADS", threads.to_string())
            .output()?;
        if !out.status.success() {
            return Err(format!("child with {threads} threads failed: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        let rows: Vec<Vec<String>> = String::from_utf8(out.stdout)?
            .lines()
            .filter_map(|l| l.strip_prefix("ROW\t"))
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect();
        columns.push(rows);
    }
    println!("| model | form | 1 thread: fastest (median) ms | {all} threads: fastest (median) ms | f32 time / this, fastest (1 thread) | f32 time / this, fastest ({all} threads) | max abs diff from f32 output |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    let ms = |c: &Vec<Vec<String>>, i: usize, col: usize| c[i][col].parse::<f64>().unwrap_or(f64::NAN);
    for i in 0..columns[0].len() {
        let r = &columns[0][i];
        let base = i - i % FORMS.len();
        println!(
            "| {} | {} | {:.2} ({:.2}) | {:.2} ({:.2}) | {:.2}x | {:.2}x | {} |",
            r[0],
            r[1],
            ms(&columns[0], i, 2),
            ms(&columns[0], i, 3),
            ms(&columns[1], i, 2),
            ms(&columns[1], i, 3),
            ms(&columns[0], base, 2) / ms(&columns[0], i, 2),
            ms(&columns[1], base, 2) / ms(&columns[1], i, 2),
            r[4]
        );
    }
    Ok(())
}
