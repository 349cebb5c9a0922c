//! The fast path of [`pixelgrad_core::Op::MatMulI8`] when every activation fits in i16 (the
//! usual case: 8-bit activations minus their zero point lie in `[-255, 255]`): an integer GEMM
//! on i16 pairs with i32 accumulation, exact for every K (products and sums in wrapping `i32`,
//! as the op defines). The micro-kernel is AVX2's `vpmaddwd` on x86_64 CPUs that have it
//! (`crate::igemm_avx2`, chosen at run time), else `crate::simd_int`'s lanes (wasm
//! `i32x4_dot_i16x8`, x86_64 SSE2 `pmaddwd`, plain arrays elsewhere): the same products and
//! the same wrapping sums, so every kernel gives the same bits.
//!
//! - `b` `[K, N]` is converted (`as i32`, as the direct loops do) and packed once per call into
//!   panels of [`NR`] columns: step `p` of panel `s` holds, for each of its columns `j`, the
//!   pair `b(2p, j), b(2p+1, j)` (16 i16 values: two SSE2 / wasm vectors, one AVX2 vector). A
//!   value outside i16 refuses the packing: the caller then takes the other paths
//!   (`crate::int8`).
//! - `a` `[M, K]` (8-bit) is packed into tiles of [`MR`] rows: step `p` of tile `t` holds each
//!   row's pair `a(r, 2p), a(r, 2p+1)` as one i32 word, which the micro-kernel broadcasts.
//! - Rows and columns past M and N, and an odd K's last step, are zeros in the packs, so the
//!   micro-kernel has no edge cases; only the copy into the output skips them.
//! - Each tile's sums stay in registers over all of K and go straight to the output (the
//!   convolutions of the int8 bench models have K of 8 to a few hundred: one panel of `b`,
//!   32 bytes a step, stays in L1 while every row tile of a chunk reads it). Runs of output
//!   rows ([`chunk_rows`]) are independent ([`for_chunks`]: rayon threads natively, the
//!   worker pool in a threaded wasm build).

use crate::byte::Byte;
use crate::element::Element;
use crate::par::for_chunks;
use crate::simd_int::{pair_word, Acc, Pairs};

/// Rows of a micro-tile.
const MR: usize = 4;
/// Columns of a panel: two vectors of four i32 sums (one of eight on AVX2).
const NR: usize = 8;
/// Most output rows per independent chunk (a multiple of [`MR`]).
const CHUNK_ROWS: usize = 32;

/// The sums of one `MR x NR` tile, row by row.
type Sums = [[i32; NR]; MR];

/// `b` `[K, N]` (one batch entry) packed into [`NR`]-column panels of i16 pairs (module docs).
pub(crate) struct PackedB {
    data: Vec<i16>,
    k2: usize,
    panels: usize,
}

/// Packs `b` (`k * n` values, row-major); `None` when a value, converted as `as i32` converts
/// it, lies outside i16. Each row is converted into a run of i16 first (a contiguous loop the
/// compiler vectorises, the range checked without stopping early), then two rows' runs are
/// interleaved into the panels' steps.
pub(crate) fn pack_b<T: Element>(b: &[T], k: usize, n: usize) -> Option<PackedB> {
    let k2 = k.div_ceil(2);
    let panels = n.div_ceil(NR);
    let mut data = vec![0i16; panels * k2 * NR * 2];
    // Two converted rows, each padded with zeros to whole panels.
    let mut rows = vec![0i16; 2 * panels * NR];
    let (r0, r1) = rows.split_at_mut(panels * NR);
    let mut fits = true;
    for p in 0..k2 {
        for (h, run) in [&mut *r0, &mut *r1].into_iter().enumerate() {
            if 2 * p + h < k {
                fits &= convert_row(&b[(2 * p + h) * n..][..n], &mut run[..n]);
            } else {
                run.fill(0); // an odd K's last step: zeros
            }
        }
        for (s, (c0, c1)) in r0.chunks_exact(NR).zip(r1.chunks_exact(NR)).enumerate() {
            let step = &mut data[(s * k2 + p) * NR * 2..][..NR * 2];
            for ((pair, &v0), &v1) in step.chunks_exact_mut(2).zip(c0).zip(c1) {
                pair[0] = v0;
                pair[1] = v1;
            }
        }
    }
    fits.then_some(PackedB { data, k2, panels })
}

/// `out[j] = row[j] as i32 as i16`; false when a value does not fit in i16 (`as` truncates
/// toward zero and saturates, NaN gives 0: whole numbers convert exactly). The range is
/// tested on the float (a value truncates into i16 exactly when it lies strictly between
/// -32769 and 32768), so the conversion itself needs no saturation and the loop vectorises
/// (the saturating `as` is a scalar convert, compare and select per value on x86_64).
#[inline(always)]
fn convert_row<T: Element>(row: &[T], out: &mut [i16]) -> bool {
    let mut fits = true;
    for (d, &v) in out.iter_mut().zip(row) {
        let x = v.to_f64();
        let inside = x > -32769.0 && x < 32768.0;
        // NaN converts to 0, which fits; anything else outside does not.
        fits &= inside | x.is_nan();
        let x = if inside { x } else { 0.0 };
        // SAFETY: `x` is finite and strictly between -32769 and 32768 (or 0), so its
        // truncation toward zero is representable in i32 (in i16, in fact).
        *d = unsafe { x.to_int_unchecked::<i32>() } as i16;
    }
    fits
}

/// Packs `a` (`m * k` 8-bit values, row-major) into [`MR`]-row tiles of pair words.
pub(crate) fn pack_a<A: Byte>(a: &[A], m: usize, k: usize) -> Vec<i32> {
    let k2 = k.div_ceil(2);
    let tiles = m.div_ceil(MR);
    let mut data = vec![0i32; tiles * k2 * MR];
    for i in 0..m {
        let (t, r) = (i / MR, i % MR);
        let row = &a[i * k..][..k];
        for p in 0..k2 {
            let lo = row[2 * p].widen() as i16;
            let hi = if 2 * p + 1 < k { row[2 * p + 1].widen() as i16 } else { 0 };
            data[(t * k2 + p) * MR + r] = pair_word(lo, hi);
        }
    }
    data
}

/// The portable micro-kernel: the sums of one tile (`a`: `k2` steps of `MR` words, `b`: `k2`
/// steps of 16 values) on `crate::simd_int`'s lanes.
#[inline(always)]
fn tile(a: &[i32], b: &[i16], k2: usize, out: &mut Sums) {
    let (a, b) = (&a[..k2 * MR], &b[..k2 * NR * 2]);
    let mut c = [[Acc::load(&[0; 4]); 2]; MR];
    for (aw, bq) in a.chunks_exact(MR).zip(b.chunks_exact(2 * NR)) {
        let b0 = Pairs::load(bq[..8].try_into().expect("8 values"));
        let b1 = Pairs::load(bq[8..16].try_into().expect("8 values"));
        for (cr, &w) in c.iter_mut().zip(aw) {
            let av = Pairs::splat(w);
            cr[0] = cr[0].dot_add(av, b0);
            cr[1] = cr[1].dot_add(av, b1);
        }
    }
    for (cr, row) in c.iter().zip(out.iter_mut()) {
        cr[0].store((&mut row[..4]).try_into().expect("4 sums"));
        cr[1].store((&mut row[4..]).try_into().expect("4 sums"));
    }
}

/// Which micro-kernel runs: AVX2 where the CPU has it (x86_64 only), else [`tile`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub(crate) fn best() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if crate::igemm_avx2::available() {
            return Kernel::Avx2;
        }
        Kernel::Portable
    }

    /// The sums of tile `a` with panels `b[0]` and, when given, `b[1]` (into `out[0]`, `out[1]`).
    #[inline(always)]
    fn run(self, a: &[i32], b: [Option<&[i16]>; 2], k2: usize, out: &mut [Sums; 2]) {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY (both calls): `Kernel::Avx2` is only chosen where the CPU has AVX2 (`best`).
            Kernel::Avx2 => match b {
                [Some(b0), Some(b1)] => unsafe { crate::igemm_avx2::tile::<MR, 2>(a, [b0, b1], k2, out) },
                [Some(b0), None] => unsafe { crate::igemm_avx2::tile::<MR, 1>(a, [b0], k2, std::array::from_mut(&mut out[0])) },
                _ => {}
            },
            Kernel::Portable => {
                for (bq, oq) in b.into_iter().zip(out.iter_mut()) {
                    if let Some(bq) = bq {
                        tile(a, bq, k2, oq);
                    }
                }
            }
        }
    }
}

/// Output rows per independent chunk: a quarter of M (at least one tile, at most
/// [`CHUNK_ROWS`]), so that the few output channels of a small convolution still split
/// across threads. Any split gives the same sums.
fn chunk_rows(m: usize) -> usize {
    m.div_ceil(4).next_multiple_of(MR).clamp(MR, CHUNK_ROWS)
}

/// `out [m, n] = a · b` from the packs of one batch entry (`a` from [`pack_a`] of `m` rows,
/// `b` from [`pack_b`] of `n` columns, the same K), each wrapping `i32` sum rounded to the
/// nearest f32 as the other paths store it, on the fastest kernel this CPU runs.
pub(crate) fn matmul_packed<T: Element>(a: &[i32], b: &PackedB, m: usize, n: usize, out: &mut [T]) {
    matmul_packed_on(Kernel::best(), a, b, m, n, out)
}

/// [`matmul_packed`] on a given kernel (tests compare the kernels).
pub(crate) fn matmul_packed_on<T: Element>(kernel: Kernel, a: &[i32], b: &PackedB, m: usize, n: usize, out: &mut [T]) {
    let PackedB { ref data, k2, panels } = *b;
    let out = &mut out[..m * n];
    if n == 0 || m == 0 {
        return;
    }
    let rows = chunk_rows(m);
    // Two panels per call on AVX2 (eight accumulators), one on the 128-bit lanes (eight too).
    let step = if kernel == Kernel::Portable { 1 } else { 2 };
    for_chunks(out, rows * n, |chunk, dst| {
        let rows_here = dst.len() / n;
        let first_tile = chunk * rows / MR;
        let panel = |s: usize| (s < panels).then(|| &data[s * k2 * NR * 2..][..k2 * NR * 2]);
        let mut sums = [[[0i32; NR]; MR]; 2];
        for s in (0..panels).step_by(step) {
            let bs = [panel(s), if step == 2 { panel(s + 1) } else { None }];
            for t in 0..rows_here.div_ceil(MR) {
                let at = &a[(first_tile + t) * k2 * MR..][..k2 * MR];
                kernel.run(at, bs, k2, &mut sums);
                for (q, sq) in sums.iter().enumerate().take(if bs[1].is_some() { 2 } else { 1 }) {
                    let col = (s + q) * NR;
                    let w = NR.min(n - col);
                    for (r, sr) in sq.iter().enumerate().take(rows_here - t * MR) {
                        let d = &mut dst[(t * MR + r) * n + col..][..w];
                        for (d, &v) in d.iter_mut().zip(sr) {
                            // Rounded to the nearest f32 first, as every other path stores it.
                            *d = T::from_f64(v as f32 as f64);
                        }
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wrapping `i32` product computed one term at a time (the op's definition).
    fn reference(a: &[i32], b: &[i32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut out = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0i32;
                for p in 0..k {
                    s = s.wrapping_add(a[i * k + p].wrapping_mul(b[p * n + j]));
                }
                out[i * n + j] = s as f32;
            }
        }
        out
    }

    /// A small deterministic generator (xorshift).
    fn values(seed: u64, len: usize, lo: i64, hi: i64) -> Vec<i64> {
        let mut s = seed | 1;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                lo + (s % (hi - lo + 1) as u64) as i64
            })
            .collect()
    }

    /// Every kernel this CPU runs (the portable one always; AVX2 where detected).
    fn kernels() -> Vec<Kernel> {
        let mut all = vec![Kernel::Portable];
        if Kernel::best() != Kernel::Portable {
            all.push(Kernel::best());
        }
        all
    }

    /// The product on every kernel, which must agree bit for bit; returns it.
    fn run<A: Byte>(a: &[A], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let pb = pack_b(b, k, n).expect("b fits i16");
        let pa = pack_a(a, m, k);
        let outs: Vec<Vec<f32>> = kernels()
            .into_iter()
            .map(|kernel| {
                let mut out = vec![f32::NAN; m * n];
                matmul_packed_on(kernel, &pa, &pb, m, n, &mut out);
                out
            })
            .collect();
        for (kernel, out) in kernels().iter().zip(&outs) {
            assert_eq!(bits(out), bits(&outs[0]), "{kernel:?} against the portable kernel, {m}x{k}x{n}");
        }
        outs.into_iter().next().expect("the portable kernel")
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Odd M, N and K (tails of every tile, panel, pair and block), signed and unsigned
    /// weights with negative and > 127 values, activations with negative values and the i16
    /// extremes, agree bit for bit with the scalar definition.
    #[test]
    fn packed_gemm_matches_the_scalar_definition() {
        let shapes = [
            (1, 1, 1),
            (3, 5, 7),
            (4, 8, 8),
            (5, 9, 9),
            (17, 33, 13),
            (33, 257, 70),
            (64, 300, 3),
            (7, 600, 1),
            // Panels in pairs and one left over (AVX2 takes two at a time), chunks of rows.
            (8, 72, 16),
            (9, 2, 17),
            (24, 16, 25),
            (130, 27, 41),
            (200, 88, 144),
        ];
        for (case, &(m, k, n)) in shapes.iter().enumerate() {
            let seed = case as u64 * 7919 + 1;
            let bv = values(seed, k * n, -255, 255);
            let b: Vec<f32> = bv.iter().map(|&v| v as f32).collect();
            let bi: Vec<i32> = bv.iter().map(|&v| v as i32).collect();
            let ai8: Vec<i8> = values(seed + 1, m * k, -128, 127).iter().map(|&v| v as i8).collect();
            let want = reference(&ai8.iter().map(|&v| v as i32).collect::<Vec<_>>(), &bi, m, k, n);
            assert_eq!(bits(&run(&ai8, &b, m, k, n)), bits(&want), "i8 {m}x{k}x{n}");
            let au8: Vec<u8> = values(seed + 2, m * k, 0, 255).iter().map(|&v| v as u8).collect();
            let want = reference(&au8.iter().map(|&v| v as i32).collect::<Vec<_>>(), &bi, m, k, n);
            assert_eq!(bits(&run(&au8, &b, m, k, n)), bits(&want), "u8 {m}x{k}x{n}");
        }
    }

    /// Sums past i32 wrap as the op defines (255 · -32768 · 600 is far below i32::MIN), and
    /// sums past 2^24 round once from i32.
    #[test]
    fn extremes_wrap_and_round_like_the_definition() {
        let (m, k, n) = (5, 600, 9);
        let a: Vec<u8> = vec![255; m * k];
        let bi: Vec<i32> = (0..k * n).map(|i| if i % 5 == 0 { 32767 } else { -32768 }).collect();
        let b: Vec<f32> = bi.iter().map(|&v| v as f32).collect();
        let want = reference(&a.iter().map(|&v| v as i32).collect::<Vec<_>>(), &bi, m, k, n);
        assert_eq!(bits(&run(&a, &b, m, k, n)), bits(&want));
        let a: Vec<i8> = vec![-128; m * k];
        let want = reference(&a.iter().map(|&v| v as i32).collect::<Vec<_>>(), &bi, m, k, n);
        assert_eq!(bits(&run(&a, &b, m, k, n)), bits(&want));
    }

    /// Activations outside i16 (or fractional values past it) are refused by the packing, so
    /// the caller falls back to the other paths.
    #[test]
    fn activations_outside_i16_are_refused() {
        assert!(pack_b(&[1.0f32, 32767.0, -32768.0, 0.0], 2, 2).is_some());
        assert!(pack_b(&[1.0f32, 32768.0, 0.0, 0.0], 2, 2).is_none());
        assert!(pack_b(&[1.0f32, -32769.0, 0.0, 0.0], 2, 2).is_none());
        assert!(pack_b(&[f32::INFINITY], 1, 1).is_none());
    }
}
