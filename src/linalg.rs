//! Dense linear algebra on nalgebra buffers, run by `faer`'s blocked, multithreaded kernels.
//!
//! nalgebra's `DMatrix<f64>` is the public currency of this crate; its column-major buffer is
//! viewed in place as a faer matrix, so nothing is copied. Why faer: nalgebra's own `Cholesky`
//! and triangular solves are unblocked (4–14× slower on the matrices the models factor) and its
//! `tr_mul` is a loop of dot products (15–20× slower than a packed gemm on this machine).
//!
//! Conventions: Cholesky factors are **lower** triangular, A = L Lᵀ, stored in the lower triangle
//! (the strict upper triangle is zeroed).

use crate::error::{Error, Result};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::matmul::triangular::BlockStructure;
use faer::prelude::{Reborrow, ReborrowMut};
use faer::{Accum, MatMut, MatRef, Par};
use nalgebra::DMatrix;

/// The parallelism for faer kernels from a thread count: 1 runs sequentially, 0 means "all of
/// rayon's threads" (by default one per core).
pub fn par(threads: usize) -> Par {
    if threads == 1 {
        Par::Seq
    } else {
        Par::rayon(threads)
    }
}

/// Clears the upper halves of the AVX registers (`vzeroupper`) on x86-64 CPUs with AVX.
///
/// faer's kernels use 256/512-bit AVX and can return with the upper register halves dirty; the
/// SSE-encoded code that follows (this crate's loops, libm's `exp`, `sin`, `cos`) then pays a state
/// transition on every instruction — measured here at 140 ns instead of 7 ns per `exp`. Every
/// wrapper below calls this after its faer kernel, and parallel loops call it at the start of each
/// task (rayon's workers run faer's kernels too).
#[inline]
pub(crate) fn clear_avx_upper() {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: `vzeroupper` only zeroes the upper halves of the vector registers, which no
            // live Rust value occupies across this point; the CPU supports AVX (checked above).
            unsafe { std::arch::asm!("vzeroupper", options(nomem, nostack, preserves_flags)) };
        }
    }
}

/// Views a whole nalgebra matrix as a faer matrix.
pub(crate) fn view(m: &DMatrix<f64>) -> MatRef<'_, f64> {
    MatRef::from_column_major_slice(m.as_slice(), m.nrows(), m.ncols())
}

/// Mutable faer view of a whole nalgebra matrix.
pub(crate) fn view_mut(m: &mut DMatrix<f64>) -> MatMut<'_, f64> {
    let (r, c) = m.shape();
    MatMut::from_column_major_slice_mut(m.as_mut_slice(), r, c)
}

/// Views rows `start .. start + len` of a column-major matrix (all columns).
pub(crate) fn rows_view(m: &DMatrix<f64>, start: usize, len: usize) -> MatRef<'_, f64> {
    let n = m.nrows();
    let c = m.ncols();
    if c == 0 || len == 0 {
        return MatRef::from_column_major_slice(&[], len, c);
    }
    MatRef::from_column_major_slice_with_stride(&m.as_slice()[start..], len, c, n)
}

/// `dst ← [dst +] alpha · lhs · rhs` (a gemm; transposes are free: pass `.transpose()` views).
pub(crate) fn gemm(
    dst: MatMut<'_, f64>,
    accumulate: bool,
    lhs: MatRef<'_, f64>,
    rhs: MatRef<'_, f64>,
    alpha: f64,
    par: Par,
) {
    let beta = if accumulate {
        Accum::Add
    } else {
        Accum::Replace
    };
    faer::linalg::matmul::matmul(dst, beta, lhs, rhs, alpha, par);
    clear_avx_upper();
}

/// Column-block width of the blocked symmetric and triangular kernels below.
const BLOCK: usize = 32;

/// Lower triangle of `dst ← [dst +] phiᵀ phi` for `phi` n×k: a symmetric rank-k update at about
/// half a gemm's flops. faer's triangular product computes the whole square here, so the
/// triangle is halved recursively by hand: the off-diagonal block is one gemm
/// (dst₂₁ = phi₂ᵀ phi₁) and the two diagonal blocks recurse, down to 64×64 blocks done as full
/// gemms (n·k·32 flops of waste in all). Entries above the diagonal inside those 64×64 blocks are
/// written too; nothing else above the diagonal is touched.
pub(crate) fn syrk_lower(
    mut dst: MatMut<'_, f64>,
    accumulate: bool,
    phi: MatRef<'_, f64>,
    par: Par,
) {
    let k = phi.ncols();
    if k <= BLOCK {
        gemm(dst, accumulate, phi.transpose(), phi, 1.0, par);
        return;
    }
    let h = split_point(k);
    let (p1, p2) = (phi.subcols(0, h), phi.subcols(h, k - h));
    gemm(
        dst.rb_mut().submatrix_mut(h, 0, k - h, h),
        accumulate,
        p2.transpose(),
        p1,
        1.0,
        par,
    );
    syrk_lower(dst.rb_mut().submatrix_mut(0, 0, h, h), accumulate, p1, par);
    syrk_lower(dst.submatrix_mut(h, h, k - h, k - h), accumulate, p2, par);
}

/// Right-side triangular solves on a tall matrix: X ← X L⁻ᵀ, then X ← X L⁻¹, so that on return
/// X = X₀ A⁻¹ for A = LLᵀ (X: n×k, L: k×k lower). Nothing is inverted.
///
/// Recursive halving of the triangle: each level is one gemm with an inner dimension of half the
/// remaining block, down to 64×64 triangles solved by faer. 2·n·k² flops, all but about n·k·64 of
/// them in large gemms (faer's own solve, on this shape, recurses to 4×4 blocks whose updates
/// are memory bound).
pub(crate) fn right_solve_cholesky(x: &mut DMatrix<f64>, l: &DMatrix<f64>, par: Par) {
    let lv = view(l);
    solve_right_lower_transpose(view_mut(x), lv, par);
    solve_right_lower(view_mut(x), lv, par);
}

/// X ← X L⁻ᵀ (i.e. solves Z Lᵀ = X) by recursive halving.
fn solve_right_lower_transpose(mut x: MatMut<'_, f64>, l: MatRef<'_, f64>, par: Par) {
    let k = l.nrows();
    if k <= BLOCK {
        faer::linalg::triangular_solve::solve_lower_triangular_in_place(l, x.transpose_mut(), par);
        clear_avx_upper();
        return;
    }
    let h = split_point(k);
    let (mut left, mut right) = x.rb_mut().split_at_col_mut(h);
    solve_right_lower_transpose(left.rb_mut(), l.submatrix(0, 0, h, h), par);
    gemm(
        right.rb_mut(),
        true,
        left.rb(),
        l.submatrix(h, 0, k - h, h).transpose(),
        -1.0,
        par,
    );
    solve_right_lower_transpose(right, l.submatrix(h, h, k - h, k - h), par);
}

/// X ← X L⁻¹ (i.e. solves B L = X) by recursive halving, last block first.
fn solve_right_lower(mut x: MatMut<'_, f64>, l: MatRef<'_, f64>, par: Par) {
    let k = l.nrows();
    if k <= BLOCK {
        faer::linalg::triangular_solve::solve_upper_triangular_in_place(
            l.transpose(),
            x.transpose_mut(),
            par,
        );
        clear_avx_upper();
        return;
    }
    let h = split_point(k);
    let (mut left, mut right) = x.rb_mut().split_at_col_mut(h);
    solve_right_lower(right.rb_mut(), l.submatrix(h, h, k - h, k - h), par);
    gemm(
        left.rb_mut(),
        true,
        right.rb(),
        l.submatrix(h, 0, k - h, h),
        -1.0,
        par,
    );
    solve_right_lower(left, l.submatrix(0, 0, h, h), par);
}

/// Where to halve a triangle of size k > BLOCK: a multiple of BLOCK near k/2.
fn split_point(k: usize) -> usize {
    (k / 2).div_ceil(BLOCK).max(1) * BLOCK
}

/// Copies the lower triangle of a square matrix onto its upper triangle.
#[cfg(test)]
pub(crate) fn symmetrize_from_lower(a: &mut DMatrix<f64>) {
    let k = a.nrows();
    for j in 0..k {
        for i in (j + 1)..k {
            a[(j, i)] = a[(i, j)];
        }
    }
}

/// Cholesky factorisation in place: on success the lower triangle of `a` holds L with A = L Lᵀ and
/// the strict upper triangle is zeroed. Only the lower triangle of `a` is read.
///
/// # Errors
/// [`Error::NotPositiveDefinite`] (naming `what`) if a pivot is not positive.
pub fn cholesky_in_place_lower(a: &mut DMatrix<f64>, what: &'static str, par: Par) -> Result<()> {
    let k = a.nrows();
    if k != a.ncols() {
        return Err(Error::DimensionMismatch {
            what,
            expected: k,
            found: a.ncols(),
        });
    }
    let mut buf = MemBuffer::new(cholesky_in_place_scratch::<f64>(k, par, Default::default()));
    let stack = MemStack::new(&mut buf);
    let res = cholesky_in_place(
        view_mut(a),
        Default::default(),
        par,
        stack,
        Default::default(),
    );
    clear_avx_upper();
    match res {
        Ok(_) => {
            for j in 1..k {
                for i in 0..j {
                    a[(i, j)] = 0.0;
                }
            }
            if (0..k).any(|i| !a[(i, i)].is_finite()) {
                return Err(Error::NotPositiveDefinite {
                    what,
                    dim: k,
                    pivot: (0..k).find(|&i| !a[(i, i)].is_finite()).unwrap_or(0),
                    max_jitter: 0.0,
                });
            }
            Ok(())
        }
        Err(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }) => {
            Err(Error::NotPositiveDefinite {
                what,
                dim: k,
                pivot: index,
                max_jitter: 0.0,
            })
        }
    }
}

/// Cholesky factor of a symmetric matrix (lower triangle read), retrying with a growing diagonal
/// jitter when it is not numerically positive definite.
///
/// Tries jitter 0, then `base · mean(diag)` multiplied by 10 each time, `tries` times. Returns the
/// factor and the jitter that was added (0 when none was needed), so callers can report it.
///
/// # Errors
/// [`Error::NotPositiveDefinite`] if the last jitter still fails.
pub fn cholesky_with_jitter(
    a: &DMatrix<f64>,
    what: &'static str,
    base: f64,
    tries: usize,
    par: Par,
) -> Result<(DMatrix<f64>, f64)> {
    let k = a.nrows();
    let scale = if k == 0 {
        1.0
    } else {
        (0..k).map(|i| a[(i, i)].abs()).sum::<f64>() / k as f64
    };
    let mut jitter = 0.0;
    let mut last_err = None;
    for attempt in 0..=tries {
        if attempt > 0 {
            jitter = base * scale.max(f64::MIN_POSITIVE) * 10f64.powi(attempt as i32 - 1);
        }
        let mut l = a.clone();
        for i in 0..k {
            l[(i, i)] += jitter;
        }
        match cholesky_in_place_lower(&mut l, what, par) {
            Ok(()) => return Ok((l, jitter)),
            Err(Error::NotPositiveDefinite { pivot, .. }) => last_err = Some(pivot),
            Err(e) => return Err(e),
        }
    }
    Err(Error::NotPositiveDefinite {
        what,
        dim: k,
        pivot: last_err.unwrap_or(0),
        max_jitter: jitter,
    })
}

/// log|A| = 2 Σ log L_ii from a Cholesky factor.
pub fn log_det_from_cholesky(l: &DMatrix<f64>) -> f64 {
    2.0 * (0..l.nrows()).map(|i| l[(i, i)].ln()).sum::<f64>()
}

/// Solves L X = B in place (B: k×r, any r), L lower triangular.
pub(crate) fn solve_lower(l: MatRef<'_, f64>, b: MatMut<'_, f64>, par: Par) {
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(l, b, par);
    clear_avx_upper();
}

/// Solves Lᵀ X = B in place (B: k×r, any r), L lower triangular.
pub(crate) fn solve_lower_transpose(l: MatRef<'_, f64>, b: MatMut<'_, f64>, par: Par) {
    faer::linalg::triangular_solve::solve_upper_triangular_in_place(l.transpose(), b, par);
    clear_avx_upper();
}

/// Solves A X = B with A = L Lᵀ, returning X (B: k×r).
pub fn cholesky_solve(l: &DMatrix<f64>, b: &DMatrix<f64>, par: Par) -> DMatrix<f64> {
    let mut x = b.clone();
    solve_lower(view(l), view_mut(&mut x), par);
    solve_lower_transpose(view(l), view_mut(&mut x), par);
    x
}

/// L⁻¹ of a lower-triangular L (k³/3 flops); used for traces such as tr(A⁻¹) = ‖L⁻¹‖²_F.
pub(crate) fn invert_lower(l: &DMatrix<f64>, par: Par) -> DMatrix<f64> {
    let k = l.nrows();
    let mut inv = DMatrix::zeros(k, k);
    faer::linalg::triangular_inverse::invert_lower_triangular(view_mut(&mut inv), view(l), par);
    clear_avx_upper();
    for j in 1..k {
        for i in 0..j {
            inv[(i, j)] = 0.0;
        }
    }
    inv
}

/// `dst ← A B` for a symmetric A (k×k) of which only the **lower** triangle is read (the strict
/// upper triangle may hold anything), B k×r, dst k×r: tril(A)·B + strict_tril(A)ᵀ·B, two
/// triangular gemms (2k²r flops) with no need to mirror A.
pub(crate) fn symm_lower(dst: MatMut<'_, f64>, a: MatRef<'_, f64>, b: MatRef<'_, f64>, par: Par) {
    use faer::linalg::matmul::triangular::matmul;
    let mut dst = dst;
    matmul(
        dst.rb_mut(),
        BlockStructure::Rectangular,
        Accum::Replace,
        a,
        BlockStructure::TriangularLower,
        b,
        BlockStructure::Rectangular,
        1.0,
        par,
    );
    matmul(
        dst,
        BlockStructure::Rectangular,
        Accum::Add,
        a.transpose(),
        BlockStructure::StrictTriangularUpper,
        b,
        BlockStructure::Rectangular,
        1.0,
        par,
    );
    clear_avx_upper();
}

/// The inverse of a symmetric positive definite A = L Lᵀ from its Cholesky factor, with faer's
/// blocked routines (as LAPACK's `potri`): L⁻¹ by a recursive triangular inversion (k³/3 flops),
/// then A⁻¹ = L⁻ᵀ L⁻¹ by a triangular gemm (k³/3 flops).
///
/// On entry the lower triangle of `factor` (k×k) holds L; on exit it holds the lower triangle of
/// A⁻¹. `work` (k×k) receives L⁻¹ in its lower triangle. Strict upper triangles are neither read
/// nor written, so no third k×k matrix is needed.
pub(crate) fn spd_inverse_lower(factor: &mut DMatrix<f64>, work: &mut DMatrix<f64>, par: Par) {
    faer::linalg::triangular_inverse::invert_lower_triangular(view_mut(work), view(factor), par);
    let inv_l = view(work);
    faer::linalg::matmul::triangular::matmul(
        view_mut(factor),
        BlockStructure::TriangularLower,
        Accum::Replace,
        inv_l.transpose(),
        BlockStructure::TriangularUpper,
        inv_l,
        BlockStructure::TriangularLower,
        1.0,
        par,
    );
    clear_avx_upper();
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    fn spd(k: usize) -> DMatrix<f64> {
        let b = DMatrix::from_fn(k, k, |i, j| ((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.4);
        &b * b.transpose() + DMatrix::identity(k, k)
    }

    #[test]
    fn cholesky_solve_and_logdet_match_nalgebra() {
        let a = spd(37);
        let mut l = a.clone();
        cholesky_in_place_lower(&mut l, "test", par(0)).unwrap();
        assert_relative_eq!(&l * l.transpose(), a, epsilon = 1e-12);
        let chol = a.clone().cholesky().unwrap();
        assert_relative_eq!(
            log_det_from_cholesky(&l),
            chol.determinant().ln(),
            epsilon = 1e-10
        );
        let b = DMatrix::from_fn(37, 5, |i, j| (i as f64 - j as f64).sin());
        assert_relative_eq!(
            cholesky_solve(&l, &b, par(1)),
            chol.solve(&b),
            epsilon = 1e-10
        );
        let inv = invert_lower(&l, par(1));
        assert_relative_eq!(&inv * &l, DMatrix::identity(37, 37), epsilon = 1e-12);
    }

    #[test]
    fn syrk_and_row_views() {
        let phi = DMatrix::from_fn(50, 150, |i, j| ((i + 2 * j) as f64).cos());
        let mut a = DMatrix::zeros(150, 150);
        syrk_lower(view_mut(&mut a), false, rows_view(&phi, 0, 20), Par::Seq);
        syrk_lower(view_mut(&mut a), true, rows_view(&phi, 20, 30), Par::Seq);
        symmetrize_from_lower(&mut a);
        assert_relative_eq!(a, phi.transpose() * &phi, epsilon = 1e-12);
    }

    #[test]
    fn blocked_right_solve_gives_x_times_a_inverse() {
        for k in [5, 64, 150] {
            let a = spd(k);
            let mut l = a.clone();
            cholesky_in_place_lower(&mut l, "test", par(2)).unwrap();
            let x0 = DMatrix::from_fn(77, k, |i, j| ((i * 5 + j * 3) as f64).sin());
            let mut x = x0.clone();
            right_solve_cholesky(&mut x, &l, par(2));
            let expected = a
                .clone()
                .cholesky()
                .unwrap()
                .solve(&x0.transpose())
                .transpose();
            assert_relative_eq!(x, expected, epsilon = 1e-10);
        }
    }

    #[test]
    fn indefinite_matrix_is_a_typed_error_and_jitter_is_reported() {
        let mut a = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 2.0, 1.0]);
        assert!(matches!(
            cholesky_in_place_lower(&mut a, "test", Par::Seq),
            Err(Error::NotPositiveDefinite { pivot: 1, .. })
        ));
        let singular = DMatrix::from_element(3, 3, 1.0);
        let (l, jitter) = cholesky_with_jitter(&singular, "test", 1e-10, 6, Par::Seq).unwrap();
        assert!(jitter > 0.0);
        assert!(l.iter().all(|v| v.is_finite()));
        let bad = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.0, -1.0]);
        assert!(cholesky_with_jitter(&bad, "test", 1e-10, 2, Par::Seq).is_err());
    }

    #[test]
    fn spd_inverse_and_symmetric_product_read_only_the_lower_triangle() {
        let a = spd(41);
        let mut factor = a.clone();
        cholesky_in_place_lower(&mut factor, "test", par(0)).unwrap();
        for j in 1..41 {
            for i in 0..j {
                factor[(i, j)] = f64::NAN;
            }
        }
        let mut work = DMatrix::from_element(41, 41, f64::NAN);
        spd_inverse_lower(&mut factor, &mut work, par(0));
        let inv = a.clone().try_inverse().unwrap();
        for j in 0..41 {
            for i in j..41 {
                assert_relative_eq!(factor[(i, j)], inv[(i, j)], epsilon = 1e-12);
            }
            for i in 0..j {
                assert!(factor[(i, j)].is_nan(), "upper triangle written");
            }
        }
        let b = DMatrix::from_fn(41, 3, |i, j| (i as f64 * 0.3 + j as f64).sin());
        let mut lower = a.clone();
        for j in 1..41 {
            for i in 0..j {
                lower[(i, j)] = f64::NAN;
            }
        }
        let mut ab = DMatrix::zeros(41, 3);
        symm_lower(view_mut(&mut ab), view(&lower), view(&b), Par::Seq);
        assert_relative_eq!(ab, &a * &b, epsilon = 1e-12);
    }
}
