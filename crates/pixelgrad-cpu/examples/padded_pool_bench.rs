//! Max pooling with windows that reach into the padding, old loops against new, side by side in
//! one run (`cargo run --release -p pixelgrad-cpu --example padded_pool_bench`). The old loops
//! (before issue 38) visited every tap of a window and skipped those in the padding one by one;
//! the backend's loops now compute each window's range of taps inside the image and visit only
//! those. "old" below is that earlier per-tap loop, kept here only to be timed; "new" is the
//! backend's `max_pool` / `max_pool_grad`. Both run on one thread (a one-thread rayon pool), so
//! the ratio compares the loops, not the scheduling. Prints, asserts nothing (the results are
//! compared, and a mismatch is an error).

use std::time::Instant;

use pixelgrad_core::{Device, Error, Result, Tensor, Window};
use pixelgrad_cpu::CpuBackend;

/// Input coordinate of output position `o` at kernel offset `k`, or `None` in the padding (the
/// old loops' per-tap test).
fn src_coord(o: usize, stride: usize, k: usize, pad: usize, size: usize) -> Option<usize> {
    let p = o * stride + k;
    (p >= pad && p - pad < size).then(|| p - pad)
}

/// The old window scan: every tap of the window, those in the padding skipped one by one.
fn old_window_max(plane: &[f32], h: usize, wd: usize, w: &Window, oy: usize, ox: usize) -> (f32, usize) {
    let mut best: Option<(f32, usize)> = None;
    for i in 0..w.kh {
        let Some(y) = src_coord(oy, w.stride_h, i, w.pad_h, h) else { continue };
        for j in 0..w.kw {
            let Some(x) = src_coord(ox, w.stride_w, j, w.pad_w, wd) else { continue };
            let v = plane[y * wd + x];
            best = match best {
                None => Some((v, 1)),
                Some((m, _)) if v > m => Some((v, 1)),
                Some((m, n)) if v == m => Some((m, n + 1)),
                keep => keep,
            };
        }
    }
    best.unwrap_or((0.0, 1))
}

/// Image planes, their sides and the pooled sides.
#[derive(Clone, Copy)]
struct Geom {
    planes: usize,
    h: usize,
    wd: usize,
    oh: usize,
    ow: usize,
}

/// The old max pooling of windows that all reach into the padding (the benchmarked windows
/// have no window wholly inside the image, so the old kernel ran `old_window_max` everywhere).
fn old_max_pool(x: &[f32], g: &Geom, w: &Window) -> Vec<f32> {
    let Geom { planes, h, wd, oh, ow } = *g;
    let mut out = vec![0.0; planes * oh * ow];
    for (p, dst) in out.chunks_mut(oh * ow).enumerate() {
        let src = &x[p * h * wd..(p + 1) * h * wd];
        for oy in 0..oh {
            for ox in 0..ow {
                dst[oy * ow + ox] = old_window_max(src, h, wd, w, oy, ox).0;
            }
        }
    }
    out
}

/// The old max-pool gradient: per window, the old scan, then every tap again, skipping the
/// padding one by one.
fn old_max_pool_grad(x: &[f32], dy: &[f32], g: &Geom, w: &Window) -> Vec<f32> {
    let Geom { planes, h, wd, oh, ow } = *g;
    let mut out = vec![0.0; x.len()];
    for p in 0..planes {
        let src = &x[p * h * wd..(p + 1) * h * wd];
        let dst = &mut out[p * h * wd..(p + 1) * h * wd];
        for oy in 0..oh {
            for ox in 0..ow {
                let (m, ties) = old_window_max(src, h, wd, w, oy, ox);
                let share = dy[(p * oh + oy) * ow + ox] / ties as f32;
                for i in 0..w.kh {
                    let Some(y) = src_coord(oy, w.stride_h, i, w.pad_h, h) else { continue };
                    for j in 0..w.kw {
                        let Some(xx) = src_coord(ox, w.stride_w, j, w.pad_w, wd) else { continue };
                        if src[y * wd + xx] == m {
                            dst[y * wd + xx] += share;
                        }
                    }
                }
            }
        }
    }
    out
}

/// Mean milliseconds of `reps` runs of `f` after one warm-up run, and the last result.
fn time<T>(reps: usize, mut f: impl FnMut() -> Result<T>) -> Result<(f64, T)> {
    let mut last = f()?;
    let t = Instant::now();
    for _ in 0..reps {
        last = f()?;
    }
    Ok((t.elapsed().as_secs_f64() * 1e3 / reps as f64, last))
}

fn same(name: &str, old: &[f32], new: &[f32]) -> Result<()> {
    if old.len() != new.len() || old.iter().zip(new).any(|(a, b)| (a - b).abs() > 1e-5 * a.abs().max(1.0)) {
        return Err(Error::invalid("padded_pool_bench", format!("{name}: old and new results differ")));
    }
    Ok(())
}

fn bench(d: &Device, name: &str, dims: [usize; 4], w: Window, reps: usize) -> Result<()> {
    let [n, c, h, wd] = dims;
    let (oh, ow) = w.out_hw(h, wd).ok_or_else(|| Error::invalid("padded_pool_bench", "window does not fit"))?;
    let x = Tensor::rand_uniform(d, dims, -1.0, 1.0, 11)?;
    let dy = Tensor::rand_uniform(d, [n, c, oh, ow], -1.0, 1.0, 12)?;
    let (xv, dyv) = (x.to_vec()?, dy.to_vec()?);
    let g = Geom { planes: n * c, h, wd, oh, ow };
    let (old_f, of) = time(reps, || Ok(old_max_pool(&xv, &g, &w)))?;
    let (new_f, nf) = time(reps, || x.max_pool(w)?.to_vec())?;
    same(name, &of, &nf)?;
    let (old_g, og) = time(reps, || Ok(old_max_pool_grad(&xv, &dyv, &g, &w)))?;
    let (new_g, ng) = time(reps, || x.max_pool_grad(&dy, w)?.to_vec())?;
    same(name, &og, &ng)?;
    println!("{name:<44} max_pool      old {old_f:>10.3} ms  new {new_f:>8.3} ms  old/new {:>7.1}x", old_f / new_f);
    println!("{name:<44} max_pool_grad old {old_g:>10.3} ms  new {new_g:>8.3} ms  old/new {:>7.1}x", old_g / new_g);
    Ok(())
}

fn main() -> Result<()> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().map_err(|e| Error::invalid("padded_pool_bench", e.to_string()))?;
    pool.install(|| {
        let d = Device::new(CpuBackend::new());
        // A "same" pooling with a window as large as the image: every window reaches into
        // the padding, about half its taps there.
        bench(&d, "[8,16,28,28] k29 s1 p14 (same size out)", [8, 16, 28, 28], Window::square(29, 1, 14), 3)?;
        // A large window at a coarse stride with padding just below it (what a hostile model
        // may ask for): almost every tap lies in the padding.
        bench(&d, "[8,16,28,28] k1024 s64 p1023", [8, 16, 28, 28], Window::square(1024, 64, 1023), 3)
    })
}
