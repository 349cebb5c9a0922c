//! Reductions on the CPU: the backend's loops (`src/reduce.rs`) against the one definition the
//! GPU backends render (`pixelgrad_core::kernel::reductions`, one pass over the whole axis)
//! evaluated by the program interpreter (`kernel::program_eval`), side by side in one run, on
//! one thread (`cargo run -p pixelgrad-cpu --example reduce_program_bench`). Decides whether
//! the CPU may run the programs instead of its loops. Prints; a max / argmax mismatch is an
//! error (sums may differ in rounding: the loops keep 8 partial sums).

use std::time::Instant;

use pixelgrad_core::kernel::program_eval::eval;
use pixelgrad_core::kernel::reductions::{reduce_params, ReduceProgram};
use pixelgrad_core::{Device, Error, ReduceOp, Result, Tensor};
use pixelgrad_cpu::CpuBackend;

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
        // (label, [outer, n, inner]), reduced over n.
        let cases = [("rows [256,1000] ax1", [256, 1000, 1]), ("cols [1024,256] ax0", [1, 1024, 256])];
        for (label, [outer, n, inner]) in cases {
            let x: Vec<f32> = (0..outer * n * inner).map(|i| ((i * 7919) % 997) as f32 * 0.01 - 5.0).collect();
            let t = Tensor::from_vec(&dev, &x, vec![outer, n, inner])?;
            let p = reduce_params(n, inner, n).map(|v| v as i64);
            for (name, op) in [("sum", ReduceOp::Sum), ("max", ReduceOp::Max), ("lse", ReduceOp::LogSumExp), ("argmax", ReduceOp::ArgMax)] {
                let (lp, a) = ms(reps, &mut || {
                    let r = match op {
                        ReduceOp::Sum => t.sum_axis(1, false),
                        ReduceOp::Max => t.max_axis(1, false),
                        ReduceOp::LogSumExp => t.logsumexp(1, false),
                        _ => t.argmax(1, false),
                    };
                    r?.to_vec()
                })?;
                let (pp, b) = ms(reps.div_ceil(4), &mut || eval(&ReduceProgram::of(op).program(), &[&x], &p, outer * inner))?;
                if matches!(op, ReduceOp::Max | ReduceOp::ArgMax) && a != b {
                    return Err(Error::invalid("bench", format!("{label} {name}: the program and the loops disagree")));
                }
                println!("{label:<20} {name:<7} loops {lp:>9.3} ms  program {pp:>9.3} ms  ({:.1}x)", pp / lp);
            }
        }
        Ok(())
    })
}
