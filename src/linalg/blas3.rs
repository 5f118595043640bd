//! Level-3 kernels: gemm, and the recursive symmetric rank-k update and right-side triangular
//! solves that SSGP's evidence spends its time in.

use super::{clear_avx_upper, invariant, view, view_mut};
use faer::linalg::matmul::triangular::BlockStructure;
use faer::prelude::{Reborrow, ReborrowMut};
use faer::{Accum, MatMut, MatRef, Par};
use nalgebra::DMatrix;

/// `dst ← [dst +] alpha · lhs · rhs` (a gemm; transposes are free: pass `.transpose()` views).
pub(crate) fn gemm(
    dst: MatMut<'_, f64>,
    accumulate: bool,
    lhs: MatRef<'_, f64>,
    rhs: MatRef<'_, f64>,
    alpha: f64,
    par: Par,
) {
    let par = invariant(par, dst.nrows(), dst.ncols());
    let beta = if accumulate {
        Accum::Add
    } else {
        Accum::Replace
    };
    faer::linalg::matmul::matmul(dst, beta, lhs, rhs, alpha, par);
    clear_avx_upper();
}

/// `dst ← dst + alpha·VᵀV` for `v` k×n and `dst` n×n, the whole square (one gemm, 2·k·n² flops):
/// the Gram update of every joint predictive covariance.
pub(crate) fn add_gram(dst: &mut DMatrix<f64>, v: &DMatrix<f64>, alpha: f64, par: Par) {
    gemm(
        view_mut(dst),
        true,
        view(v).transpose(),
        view(v),
        alpha,
        par,
    );
}

/// Column-block width of the blocked symmetric and triangular kernels below.
const BLOCK: usize = 32;

/// Lower triangle of `dst ← [dst +] phiᵀ phi` for `phi` n×k: a symmetric rank-k update at about
/// half a gemm's flops. faer's triangular product computes the whole square here, so the
/// triangle is halved recursively by hand: the off-diagonal block is one gemm
/// (dst₂₁ = phi₂ᵀ phi₁) and the two diagonal blocks recurse, down to blocks of at most
/// [`BLOCK`] = 32 columns done as full gemms (about n·k·32 flops of waste in all). Entries
/// above the diagonal inside those diagonal blocks are written too; nothing else above the
/// diagonal is touched.
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
/// remaining block, down to triangles of at most [`BLOCK`] = 32 solved by faer. 2·n·k² flops,
/// all but about 2·n·k·32 of them in large gemms (faer's own solve, on this shape, recurses to
/// 4×4 blocks whose updates are memory bound).
pub(crate) fn right_solve_cholesky(x: &mut DMatrix<f64>, l: &DMatrix<f64>, par: Par) {
    let lv = view(l);
    solve_right_lower_transpose(view_mut(x), lv, par);
    solve_right_lower(view_mut(x), lv, par);
}

/// X ← X L⁻ᵀ (i.e. solves Z Lᵀ = X) by recursive halving.
fn solve_right_lower_transpose(mut x: MatMut<'_, f64>, l: MatRef<'_, f64>, par: Par) {
    let k = l.nrows();
    if k <= BLOCK {
        let par = invariant(par, x.nrows(), x.ncols());
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
pub(crate) fn solve_right_lower(mut x: MatMut<'_, f64>, l: MatRef<'_, f64>, par: Par) {
    let k = l.nrows();
    if k <= BLOCK {
        let par = invariant(par, x.nrows(), x.ncols());
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

/// X ← L⁻¹X for X k×r (a left-side solve), by the recursive halving of
/// [`right_solve_cholesky`] on Xᵀ: gemms down to triangles of [`BLOCK`] = 32.
pub(crate) fn solve_left_lower(x: MatMut<'_, f64>, l: MatRef<'_, f64>, par: Par) {
    solve_right_lower_transpose(x.transpose_mut(), l, par);
}

/// X ← L⁻ᵀX for X k×r (a left-side solve with the transpose), as [`solve_left_lower`].
pub(crate) fn solve_left_lower_transpose(x: MatMut<'_, f64>, l: MatRef<'_, f64>, par: Par) {
    solve_right_lower(x.transpose_mut(), l, par);
}

/// Where to halve a triangle of size k > BLOCK: a multiple of BLOCK near k/2.
fn split_point(k: usize) -> usize {
    (k / 2).div_ceil(BLOCK).max(1) * BLOCK
}

/// `dst ← A B` for a symmetric A (k×k) of which only the **lower** triangle is read (the strict
/// upper triangle may hold anything), B k×r, dst k×r: tril(A)·B + strict_tril(A)ᵀ·B, two
/// triangular gemms (2k²r flops) with no need to mirror A.
pub(crate) fn symm_lower(dst: MatMut<'_, f64>, a: MatRef<'_, f64>, b: MatRef<'_, f64>, par: Par) {
    use faer::linalg::matmul::triangular::matmul;
    let par = invariant(par, dst.nrows(), dst.ncols());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::factor::tests::spd;
    use crate::linalg::{cholesky_in_place_lower, par, rows_view};
    use approx::assert_relative_eq;

    #[test]
    fn syrk_and_row_views() {
        let phi = DMatrix::from_fn(50, 150, |i, j| ((i + 2 * j) as f64).cos());
        let mut a = DMatrix::zeros(150, 150);
        syrk_lower(view_mut(&mut a), false, rows_view(&phi, 0, 20), Par::Seq);
        syrk_lower(view_mut(&mut a), true, rows_view(&phi, 20, 30), Par::Seq);
        let expected = phi.transpose() * &phi;
        for j in 0..150 {
            for i in j..150 {
                assert_relative_eq!(a[(i, j)], expected[(i, j)], epsilon = 1e-12);
            }
        }
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
    fn symmetric_product_reads_only_the_lower_triangle() {
        let a = spd(41);
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
