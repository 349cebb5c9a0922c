//! Gather and scatter-add on the CPU: the backend's loops (`src/index.rs`) against the one
//! definition the GPU backends render (`pixelgrad_core::kernel::indexing`) evaluated by the
//! program interpreter (`kernel::program_eval`), side by side in one run, on one thread
//! (`cargo run --release -p pixelgrad-cpu --example index_program_bench`). Decides whether the
//! CPU may run the programs instead of its loops (the interpreter runs once per case after a
//! warm-up: the output-driven scatter costs it seconds). Prints, asserts nothing (the results are
//! compared, and a mismatch is an error).

use std::time::Instant;

use pixelgrad_core::kernel::indexing::{gather_params, scatter_add_params, IndexProgram};
use pixelgrad_core::kernel::program_eval::eval;
use pixelgrad_core::{Device, Error, Result, Tensor};
use pixelgrad_cpu::CpuBackend;

/// A case: label, x dims, idx dims, axis, scatter size.
type Case = (&'static str, [usize; 2], [usize; 2], usize, usize);

fn ms(reps: usize, f: &mut dyn FnMut() -> Result<Vec<f32>>) -> Result<(f64, Vec<f32>)> {
    let mut out = f()?;
    let t = Instant::now();
    for _ in 0..reps {
        out = f()?;
    }
    Ok((t.elapsed().as_secs_f64() * 1e3 / reps as f64, out))
}

fn main() -> Result<()> {
    let reps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().map_err(|e| Error::invalid("bench", e.to_string()))?;
    pool.install(|| -> Result<()> {
        let dev = Device::new(CpuBackend::new());
        let cases: [Case; 2] = [("embed", [512, 64], [2048, 64], 0, 512), ("pick", [256, 1000], [256, 1], 1, 1000)];
        for (label, dx, di, axis, size) in cases {
            let nx = dx[0] * dx[1];
            let ni = di[0] * di[1];
            let x: Vec<f32> = (0..nx).map(|i| (i % 97) as f32 * 0.01).collect();
            let idx: Vec<f32> = (0..ni).map(|i| ((i / di[1].max(1) * 7919 + 13) % dx[axis]) as f32).collect();
            let src: Vec<f32> = (0..ni).map(|i| (i % 89) as f32 * 0.02).collect();
            let (tx, ti, ts) = (
                Tensor::from_vec(&dev, &x, dx.to_vec())?,
                Tensor::from_vec(&dev, &idx, di.to_vec())?,
                Tensor::from_vec(&dev, &src, di.to_vec())?,
            );
            let gp = gather_params(&dx, &di, axis).map(|v| v as i64);
            let sp = scatter_add_params(&di, axis, size).map(|v| v as i64);
            let mut so = di;
            so[axis] = size;
            let (loop_g, a) = ms(reps, &mut || tx.gather(axis, &ti)?.to_vec())?;
            let (prog_g, b) = ms(1, &mut || eval(&IndexProgram::Gather.program(), &[&x, &idx], &gp, ni))?;
            let (loop_s, c) = ms(reps, &mut || ts.scatter_add(axis, size, &ti)?.to_vec())?;
            let (prog_s, d) = ms(1, &mut || eval(&IndexProgram::ScatterAdd.program(), &[&src, &idx], &sp, so[0] * so[1]))?;
            if a != b || c != d {
                return Err(Error::invalid("bench", format!("{label}: the program and the loops disagree")));
            }
            println!("{label:<6} gather       loops {loop_g:>9.3} ms  program {prog_g:>9.3} ms  ({:.1}x)", prog_g / loop_g);
            println!("{label:<6} scatter_add  loops {loop_s:>9.3} ms  program {prog_s:>9.3} ms  ({:.1}x)", prog_s / loop_s);
        }
        Ok(())
    })
}
