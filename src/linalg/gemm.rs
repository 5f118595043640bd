//! The matrix product $D ← [D +]\ α\,A B$ on strided views — the one kernel every O(nm²) and
//! O(n³) operation of the crate ends in.
//!
//! Dispatch by shape: a matrix-vector product (one output row or column: memory bound, a plain
//! loop), a tiny product (at most 16³ multiply-adds: a plain loop), and otherwise a packed,
//! cache-blocked gemm — `private-gemm-x86`'s AVX2/AVX-512 kernels on x86-64 CPUs with AVX2 and
//! FMA (the kernels faer runs there), `gemm-f64`'s on every other CPU (SSE2, NEON, …).
//!
//! Every output entry is summed in the same order on any number of threads: a packed product on
//! t threads is split into t blocks of output columns (or rows, whichever are more), each run on
//! one thread (never the inner sum), and the vector shapes run on one thread.

use super::views::{view, view_mut, MatMut, MatRef};
use super::{clear_avx_upper, Par};
use crate::error::{Error, Result};
use nalgebra::DMatrix;

/// At most this many multiply-adds (m·n·k) run as a plain loop.
const TINY: usize = 16 * 16 * 16;

/// Below this many multiply-adds (128³) a product runs on one thread: the recursive kernels issue
/// many small gemms, and each parallel one costs a synchronisation of the threads. The full GP's
/// evidence + gradient at n = 2 000 on 2 threads took 0.21–0.23 s with faer's threshold (32·1024),
/// 0.16–0.18 s with 128³, 0.18–0.19 s with 64³ or 256³ (three interleaved quick runs each).
pub(crate) const PARALLEL_FROM: usize = 128 * 128 * 128;

/// `dst ← [dst +] alpha · lhs · rhs` for `dst` m×n, `lhs` m×k, `rhs` k×n (2mnk flops); transposes
/// are free: pass `.transpose()` views. With `accumulate` false, `dst` is not read (it may hold
/// anything, NaN included).
pub(crate) fn gemm(
    mut dst: MatMut<'_>,
    accumulate: bool,
    lhs: MatRef<'_>,
    rhs: MatRef<'_>,
    alpha: f64,
    par: Par,
) {
    let (m, n, k) = (dst.nrows(), dst.ncols(), lhs.ncols());
    assert!(
        lhs.nrows() == m && rhs.nrows() == k && rhs.ncols() == n,
        "gemm of a {m}×{n} output from {}×{} and {}×{}",
        lhs.nrows(),
        k,
        rhs.nrows(),
        rhs.ncols()
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            dst.fill(0.0);
        }
        return;
    }
    if n == 1 {
        matvec(dst, accumulate, lhs, rhs, alpha);
    } else if m == 1 {
        matvec(
            dst.transpose_mut(),
            accumulate,
            rhs.transpose(),
            lhs.transpose(),
            alpha,
        );
    } else if m * n * k <= TINY {
        plain(dst, accumulate, lhs, rhs, alpha);
    } else {
        let threads = if m.saturating_mul(n).saturating_mul(k) >= PARALLEL_FROM {
            par.degree()
        } else {
            1
        };
        packed(dst, accumulate, lhs, rhs, alpha, threads);
        clear_avx_upper();
    }
}

/// `out ← aᵀ b` (a: n×k, b: n×r, out: k×r; 2nkr flops) through the crate's packed gemm — the
/// kernel every blocked operation of the crate ends in, multithreaded with `par` — like
/// nalgebra's `tr_mul_to` but packed and blocked (nalgebra's is a loop of dot products). The
/// reference rate of the crate's benchmark (`benches/objectives.rs`).
///
/// # Errors
/// [`Error::DimensionMismatch`] if the shapes do not agree.
///
/// # Example
/// ```
/// use nalgebra::DMatrix;
/// use ssgp::linalg::{tr_mul_to, Par};
/// let a = DMatrix::from_fn(300, 20, |i, j| (i as f64 + j as f64).sin());
/// let mut gram = DMatrix::zeros(20, 20);
/// tr_mul_to(&a, &a, &mut gram, Par::Seq)?;
/// assert!((gram.clone() - a.tr_mul(&a)).amax() < 1e-10);
/// # Ok::<(), ssgp::Error>(())
/// ```
pub fn tr_mul_to(
    a: &DMatrix<f64>,
    b: &DMatrix<f64>,
    out: &mut DMatrix<f64>,
    par: Par,
) -> Result<()> {
    for (what, expected, found) in [
        (
            "tr_mul_to: rows of b (as many as a's)",
            a.nrows(),
            b.nrows(),
        ),
        (
            "tr_mul_to: rows of out (a's columns)",
            a.ncols(),
            out.nrows(),
        ),
        (
            "tr_mul_to: columns of out (b's columns)",
            b.ncols(),
            out.ncols(),
        ),
    ] {
        if expected != found {
            return Err(Error::DimensionMismatch {
                what,
                expected,
                found,
            });
        }
    }
    gemm(view_mut(out), false, view(a).transpose(), view(b), 1.0, par);
    Ok(())
}

/// Dot products taken together by [`matvec`] when `lhs`'s rows are contiguous.
const DOT_GROUP: usize = 8;

/// `dst ← [dst +] alpha · lhs · x` for one output column (`dst` m×1, `x` k×1): a sum of scaled
/// columns when `lhs` is column-major and `dst` contiguous, dot products otherwise — each summed
/// over p in order, and [`DOT_GROUP`] of them at a time when `lhs`'s rows and `x` are contiguous
/// (SSGP's b = Φᵀy: the independent sums overlap instead of waiting on one another's additions;
/// every sum still has the bits of the one-at-a-time loop).
fn matvec(mut dst: MatMut<'_>, accumulate: bool, lhs: MatRef<'_>, x: MatRef<'_>, alpha: f64) {
    let (m, k) = (lhs.nrows(), lhs.ncols());
    if lhs.row_stride() == 1 && dst.row_stride() == 1 {
        // SAFETY: `dst` is an m×1 view with unit row stride over a buffer it borrows exclusively.
        let out = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr(), m) };
        if !accumulate {
            out.fill(0.0);
        }
        for p in 0..k {
            let c = alpha * x.at(p, 0);
            // SAFETY: column p of `lhs` is m contiguous entries (unit row stride) of its buffer.
            let col = unsafe {
                std::slice::from_raw_parts(lhs.as_ptr().offset(p as isize * lhs.col_stride()), m)
            };
            for (o, a) in out.iter_mut().zip(col) {
                *o += c * a;
            }
        }
    } else {
        let mut first = 0;
        if lhs.col_stride() == 1 && x.row_stride() == 1 {
            // SAFETY: `x` is a k×1 view with unit row stride, so its k entries are contiguous.
            let xs = unsafe { std::slice::from_raw_parts(x.as_ptr(), k) };
            // SAFETY: with unit column stride, row i of `lhs` is the k contiguous entries from
            // `as_ptr() + i·row_stride`, inside its buffer for every i < m.
            let row = |i: usize| unsafe {
                std::slice::from_raw_parts(lhs.as_ptr().offset(i as isize * lhs.row_stride()), k)
            };
            while first + DOT_GROUP <= m {
                let rows: [&[f64]; DOT_GROUP] = std::array::from_fn(|j| row(first + j));
                // The neutral element `Iterator::sum` starts from, so the bits agree with it.
                let mut sums = [-0.0; DOT_GROUP];
                for (p, &xp) in xs.iter().enumerate() {
                    for (s, r) in sums.iter_mut().zip(&rows) {
                        *s += r[p] * xp;
                    }
                }
                for (j, s) in sums.into_iter().enumerate() {
                    let v = if accumulate {
                        dst.at(first + j, 0)
                    } else {
                        0.0
                    };
                    dst.set(first + j, 0, v + alpha * s);
                }
                first += DOT_GROUP;
            }
        }
        for i in first..m {
            let s: f64 = (0..k).map(|p| lhs.at(i, p) * x.at(p, 0)).sum();
            let v = if accumulate { dst.at(i, 0) } else { 0.0 };
            dst.set(i, 0, v + alpha * s);
        }
    }
}

/// The textbook triple loop, for tiny products.
fn plain(mut dst: MatMut<'_>, accumulate: bool, lhs: MatRef<'_>, rhs: MatRef<'_>, alpha: f64) {
    for j in 0..dst.ncols() {
        for i in 0..dst.nrows() {
            let s: f64 = (0..lhs.ncols()).map(|p| lhs.at(i, p) * rhs.at(p, j)).sum();
            let v = if accumulate { dst.at(i, j) } else { 0.0 };
            dst.set(i, j, v + alpha * s);
        }
    }
}

/// Outputs of more rows than this are computed on one thread in blocks of at most this many rows
/// (of near-equal size). `private-gemm-x86` packs the whole lhs panel (rows × min(k, 512)) of an
/// output with fewer rows than its L2 bound (512 on a 2 MiB L2) and sweeps it once per four
/// output columns: past 256 rows the panel outgrows half the L2 and the sweep runs from L3 —
/// measured on one core of an AVX-512 Xeon (family 6 model 167, 2 MiB L2), (4096×r)ᵀ(4096×r) at
/// 62–66 GFLOP/s for r ≤ 256 and 640, falling to 60 at r = 300, 52 at 375 and 35–38 at 496–508;
/// in two halves 61–66 throughout. Taller outputs go to the library's own blocking, which ran the
/// triangular solves' updates (4096 × r outputs, r = 50–250, a column-major lhs) at 46–57 GFLOP/s
/// and at 56–66 in blocks of 256 rows (1 000 × 1 000 × 1 000: 48 → 60). Each output entry is the
/// same sum either way: the same bits (`tests::row_blocks_keep_the_bits`).
const PANEL_ROWS: usize = 256;

/// The packed gemm of this CPU on `threads` threads: the output split in two blocks of columns
/// (or of rows, if it has more rows), `rayon::join`ed on the current pool, until each block has
/// one thread. The library's own threading split the output too but ran 8–22 % slower on two
/// cores of that Xeon at (4096 × r)ᵀ(4096 × r), r = 240–1 000 (100–109 GFLOP/s against
/// 110–141), below OpenBLAS's 107–142. On one thread an output of more than `PANEL_ROWS` rows
/// (the rows as the kernel walks them: the columns of a row-major output) runs in blocks of at
/// most `PANEL_ROWS`.
fn packed(
    dst: MatMut<'_>,
    accumulate: bool,
    lhs: MatRef<'_>,
    rhs: MatRef<'_>,
    alpha: f64,
    threads: usize,
) {
    if threads > 1 {
        let (first, second) = (threads / 2, threads - threads / 2);
        if dst.ncols() >= dst.nrows() {
            let half = dst.ncols() * first / threads;
            let (left, right) = dst.split_at_col_mut(half);
            let rest = rhs.ncols() - half;
            rayon::join(
                || {
                    packed(left, accumulate, lhs, rhs.subcols(0, half), alpha, first);
                    clear_avx_upper();
                },
                || {
                    packed(
                        right,
                        accumulate,
                        lhs,
                        rhs.subcols(half, rest),
                        alpha,
                        second,
                    );
                    clear_avx_upper();
                },
            );
        } else {
            let half = dst.nrows() * first / threads;
            let (top, bottom) = dst.split_at_row_mut(half);
            let rest = lhs.nrows() - half;
            rayon::join(
                || {
                    packed(top, accumulate, lhs.subrows(0, half), rhs, alpha, first);
                    clear_avx_upper();
                },
                || {
                    packed(
                        bottom,
                        accumulate,
                        lhs.subrows(half, rest),
                        rhs,
                        alpha,
                        second,
                    );
                    clear_avx_upper();
                },
            );
        }
        return;
    }
    let row_major = dst.row_stride().unsigned_abs() > dst.col_stride().unsigned_abs();
    let rows = if row_major { dst.ncols() } else { dst.nrows() };
    let blocks = rows.div_ceil(PANEL_ROWS);
    if blocks <= 1 {
        packed_whole(dst, accumulate, lhs, rhs, alpha, 1);
        return;
    }
    let mut dst = dst;
    let (nrows, ncols) = (dst.nrows(), dst.ncols());
    let mut start = 0;
    for block in 1..=blocks {
        let end = rows * block / blocks;
        let len = end - start;
        if row_major {
            let part = dst.rb_mut().submatrix_mut(0, start, nrows, len);
            packed_whole(part, accumulate, lhs, rhs.subcols(start, len), alpha, 1);
        } else {
            let part = dst.rb_mut().submatrix_mut(start, 0, len, ncols);
            packed_whole(part, accumulate, lhs.subrows(start, len), rhs, alpha, 1);
        }
        start = end;
    }
}

/// The packed gemm of this CPU on the whole output: `private-gemm-x86` with AVX2 and FMA
/// (AVX-512 where present), else [`portable`].
fn packed_whole(
    dst: MatMut<'_>,
    accumulate: bool,
    lhs: MatRef<'_>,
    rhs: MatRef<'_>,
    alpha: f64,
    threads: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        use private_gemm_x86::{Accum, DType, DstKind, IType, InstrSet};
        let instr = if std::arch::is_x86_feature_detected!("avx512f") {
            Some(InstrSet::Avx512)
        } else if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
        {
            Some(InstrSet::Avx256)
        } else {
            None
        };
        if let Some(instr) = instr {
            let mut dst = dst;
            let (m, n, k) = (dst.nrows(), dst.ncols(), lhs.ncols());
            let null = std::ptr::null::<()>();
            // SAFETY: the three views are in bounds of their buffers (checked when they were
            // made), `dst` is borrowed exclusively and overlaps neither input (the borrow checker
            // forbids it), and the CPU has the instruction set passed.
            unsafe {
                private_gemm_x86::gemm(
                    DType::F64,
                    IType::U64,
                    instr,
                    m,
                    n,
                    k,
                    dst.as_mut_ptr().cast(),
                    dst.row_stride(),
                    dst.col_stride(),
                    null,
                    null,
                    DstKind::Full,
                    if accumulate {
                        Accum::Add
                    } else {
                        Accum::Replace
                    },
                    lhs.as_ptr().cast(),
                    lhs.row_stride(),
                    lhs.col_stride(),
                    false,
                    null,
                    0,
                    rhs.as_ptr().cast(),
                    rhs.row_stride(),
                    rhs.col_stride(),
                    false,
                    (&raw const alpha).cast(),
                    threads,
                );
            }
            return;
        }
    }
    portable(dst, accumulate, lhs, rhs, alpha, threads);
}

/// `gemm-f64`'s packed gemm (its SSE2, AVX2, AVX-512 or NEON kernels, chosen at run time).
fn portable(
    mut dst: MatMut<'_>,
    accumulate: bool,
    lhs: MatRef<'_>,
    rhs: MatRef<'_>,
    alpha: f64,
    threads: usize,
) {
    use gemm_common::Parallelism;
    let parallelism = if threads > 1 {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    };
    let (m, n, k) = (dst.nrows(), dst.ncols(), lhs.ncols());
    let (drs, dcs) = (dst.row_stride(), dst.col_stride());
    let kernel = gemm_f64::gemm::f64::get_gemm_fn();
    // gemm-f64 computes dst ← a·dst + b·lhs·rhs (dst read only when asked) and prefers a
    // column-oriented dst: a row-oriented one is handled as the transposed product.
    // SAFETY: as in `packed`; the kernel reads and writes only inside the views' shapes.
    unsafe {
        if dcs.abs() < drs.abs() {
            kernel(
                n,
                m,
                k,
                dst.as_mut_ptr(),
                drs,
                dcs,
                accumulate,
                rhs.as_ptr(),
                rhs.row_stride(),
                rhs.col_stride(),
                lhs.as_ptr(),
                lhs.row_stride(),
                lhs.col_stride(),
                1.0,
                alpha,
                false,
                false,
                false,
                parallelism,
            );
        } else {
            kernel(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                dcs,
                drs,
                accumulate,
                lhs.as_ptr(),
                lhs.col_stride(),
                lhs.row_stride(),
                rhs.as_ptr(),
                rhs.col_stride(),
                rhs.row_stride(),
                1.0,
                alpha,
                false,
                false,
                false,
                parallelism,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(r: usize, c: usize, salt: usize) -> DMatrix<f64> {
        DMatrix::from_fn(r, c, |i, j| ((i * 3 + j * 7 + salt) as f64).sin())
    }

    /// A product kernel under test: (dst, lhs, rhs).
    type Kernel<'k> = dyn Fn(MatMut<'_>, MatRef<'_>, MatRef<'_>) + 'k;

    /// `kernel` on a copy of `c0` (through its transposed view when `tc`) with `a` and `b`
    /// (through their transposed views when flagged); the copy as stored.
    fn run_on(
        c0: &DMatrix<f64>,
        (a, ta): (&DMatrix<f64>, bool),
        (b, tb): (&DMatrix<f64>, bool),
        tc: bool,
        kernel: &Kernel<'_>,
    ) -> DMatrix<f64> {
        let mut c = c0.clone();
        let cv = if tc {
            view_mut(&mut c).transpose_mut()
        } else {
            view_mut(&mut c)
        };
        let av = if ta { view(a).transpose() } else { view(a) };
        let bv = if tb { view(b).transpose() } else { view(b) };
        kernel(cv, av, bv);
        c
    }

    /// Every path (vector, tiny, packed, the portable packed kernel) against nalgebra's product,
    /// with transposed operands and outputs, replacing and accumulating.
    #[test]
    fn every_path_computes_the_product() {
        for (m, n, k) in [
            (1, 1, 7),
            (9, 1, 30),
            (1, 9, 30),
            (5, 6, 7),
            (70, 50, 90),
            (3, 200, 2),
        ] {
            for t in 0..8 {
                let (ta, tb, tc) = (t & 1 == 1, t & 2 == 2, t & 4 == 4);
                let a = if ta { filled(k, m, 1) } else { filled(m, k, 1) };
                let b = if tb { filled(n, k, 2) } else { filled(k, n, 2) };
                let a_op = if ta { a.transpose() } else { a.clone() };
                let b_op = if tb { b.transpose() } else { b.clone() };
                let c0 = if tc { filled(n, m, 3) } else { filled(m, n, 3) };
                let expected = (if tc { c0.transpose() } else { c0.clone() }) + &a_op * &b_op * 0.5;
                let run = |kernel: &Kernel<'_>| {
                    let c = run_on(&c0, (&a, ta), (&b, tb), tc, kernel);
                    if tc {
                        c.transpose()
                    } else {
                        c
                    }
                };
                let got = run(&|c, a, b| gemm(c, true, a, b, 0.5, Par::rayon(2)));
                approx::assert_relative_eq!(got, expected, epsilon = 1e-12);
                let got = run(&|c, a, b| portable(c, true, a, b, 0.5, 1));
                approx::assert_relative_eq!(got, expected, epsilon = 1e-12);
            }
        }
        // The grouped dot products of a row-contiguous lhs have the bits of the plain loop,
        // signed zeros included.
        for (m, k) in [(8, 2), (21, 300), (64, 7)] {
            let mut a = filled(k, m, 4);
            a[(0, 0)] = -0.0;
            let x = filled(k, 1, 5).map(|v| if v > 0.9 { -0.0 } else { v });
            for accumulate in [false, true] {
                let mut got = filled(m, 1, 6);
                let mut expected = got.clone();
                gemm(
                    view_mut(&mut got),
                    accumulate,
                    view(&a).transpose(),
                    view(&x),
                    0.7,
                    Par::Seq,
                );
                plain(
                    view_mut(&mut expected),
                    accumulate,
                    view(&a).transpose(),
                    view(&x),
                    0.7,
                );
                assert_eq!(got, expected, "m {m}, k {k}");
            }
        }
        // Replacing ignores what dst held, NaN included; an empty inner dimension zeroes dst.
        let mut c = DMatrix::from_element(40, 30, f64::NAN);
        let (a, b) = (filled(40, 20, 1), filled(20, 30, 2));
        gemm(view_mut(&mut c), false, view(&a), view(&b), 1.0, Par::Seq);
        approx::assert_relative_eq!(c, &a * &b, epsilon = 1e-12);
        let mut c = DMatrix::from_element(4, 3, f64::NAN);
        let (a, b) = (DMatrix::zeros(4, 0), DMatrix::zeros(0, 3));
        gemm(view_mut(&mut c), false, view(&a), view(&b), 1.0, Par::Seq);
        assert_eq!(c, DMatrix::zeros(4, 3));
    }

    /// An output of more than 256 rows computed in row blocks (or a row-major one in column
    /// blocks), and any output split among threads, has the bits of the whole product on one
    /// thread, replacing and accumulating — blocks of at most 48 rows included, which the
    /// library computes with another microkernel (24×8 instead of 48×4).
    #[test]
    fn row_blocks_keep_the_bits() {
        for (m, n, k, ta, tc) in [
            (300, 40, 600, false, false),
            (511, 9, 300, true, false),
            (40, 300, 1000, true, true),
            (400, 400, 70, false, true),
            (96, 40, 5000, true, false),
            (700, 90, 800, false, false),
            (1100, 37, 300, true, false),
            (45, 1300, 90, false, true),
        ] {
            let a = if ta { filled(k, m, 1) } else { filled(m, k, 1) };
            let b = filled(k, n, 2);
            let c0 = if tc { filled(n, m, 3) } else { filled(m, n, 3) };
            for accumulate in [false, true] {
                let run = |kernel: &Kernel<'_>| run_on(&c0, (&a, ta), (&b, false), tc, kernel);
                let whole = run(&|c, a, b| packed_whole(c, accumulate, a, b, 0.3, 1));
                for threads in [1, 2, 3] {
                    let split = run(&|c, a, b| packed(c, accumulate, a, b, 0.3, threads));
                    assert_eq!(
                        split, whole,
                        "{m}×{n}×{k}, accumulate {accumulate}, {threads}"
                    );
                }
                let halves = run(&|c, a, b| packed(c, accumulate, a, b, 0.3, 1));
                let base = if tc { c0.transpose() } else { c0.clone() };
                let expected = base.map(|v| if accumulate { v } else { 0.0 })
                    + (if ta { a.transpose() } else { a.clone() }) * &b * 0.3;
                let expected = if tc { expected.transpose() } else { expected };
                approx::assert_relative_eq!(halves, expected, epsilon = 1e-10);
            }
        }
    }
}
