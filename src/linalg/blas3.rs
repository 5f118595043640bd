//! Level-3 kernels by recursive halving into gemms: the symmetric rank-k update, triangular
//! solves and products, and the symmetric product. Each halves its triangle until it has at most
//! [`BLOCK`] = 32 columns, where a [`leaf`](super::leaf) kernel finishes; everything above the
//! leaves is large gemms.

use super::gemm::gemm;
use super::leaf::{self, RightOp, BLOCK};
use super::views::{MatMut, MatRef};
use super::{join, view, view_mut, Par};
use nalgebra::DMatrix;

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

/// Lower triangle of `dst ← [dst +] alpha·phiᵀ phi` for `phi` n×k: a symmetric rank-k update at
/// about half a gemm's flops (n·k²). The off-diagonal block is one gemm (dst₂₁ = phi₂ᵀ phi₁)
/// and the two diagonal blocks recurse, down to blocks of at most [`BLOCK`] = 32 columns
/// computed whole into a local buffer (about n·k·32 flops of waste in all), of which the lower
/// triangle is added. Nothing above the diagonal is read or written.
pub(crate) fn syrk_lower(
    mut dst: MatMut<'_>,
    accumulate: bool,
    phi: MatRef<'_>,
    alpha: f64,
    par: Par,
) {
    let k = phi.ncols();
    if k <= BLOCK {
        let mut block = [0.0; BLOCK * BLOCK];
        let local = MatMut::from_column_major_slice_mut(&mut block[..k * k], k, k);
        gemm(local, false, phi.transpose(), phi, alpha, par);
        for j in 0..k {
            for i in j..k {
                let v = block[j * k + i] + if accumulate { dst.at(i, j) } else { 0.0 };
                dst.set(i, j, v);
            }
        }
        return;
    }
    let h = split_point(k);
    let (p1, p2) = (phi.subcols(0, h), phi.subcols(h, k - h));
    let (d11, d21, d22) = dst.lower_blocks(h);
    // Multiply-adds: the off-diagonal block n·h·(k − h), each diagonal block about n·h²/2.
    let n = phi.nrows();
    join(
        par,
        n * h * (k - h),
        || gemm(d21, accumulate, p2.transpose(), p1, alpha, par),
        || {
            join(
                par,
                n * (k - h) * (k - h) / 2,
                || syrk_lower(d11, accumulate, p1, alpha, par),
                || syrk_lower(d22, accumulate, p2, alpha, par),
            );
        },
    );
}

/// Right-side triangular solves on a tall matrix: X ← X L⁻ᵀ, then X ← X L⁻¹, so that on return
/// X = X₀ A⁻¹ for A = LLᵀ (X: n×k, L: k×k lower). Nothing is inverted; 2·n·k² flops, all but
/// about 2·n·k·32 of them in large gemms.
pub(crate) fn right_solve_cholesky(x: &mut DMatrix<f64>, l: &DMatrix<f64>, par: Par) {
    let lv = view(l);
    solve_right_lower_transpose(view_mut(x), lv, par);
    solve_right_lower(view_mut(x), lv, par);
}

/// X ← X L⁻ᵀ (i.e. solves Z Lᵀ = X) by recursive halving: Z₁ = X₁L₁₁⁻ᵀ, then
/// Z₂ = (X₂ − Z₁L₂₁ᵀ)L₂₂⁻ᵀ; X's rows in halves at once where [`by_row_halves`] allows.
pub(crate) fn solve_right_lower_transpose(x: MatMut<'_>, l: MatRef<'_>, par: Par) {
    by_row_halves(x, l.nrows(), par, &|x, par| {
        solve_right_lower_transpose_rows(x, l, par);
    });
}

/// The recursion of [`solve_right_lower_transpose`] on all of X's rows.
fn solve_right_lower_transpose_rows(mut x: MatMut<'_>, l: MatRef<'_>, par: Par) {
    let k = l.nrows();
    if k <= LEAF {
        leaf::right_triangular(x, l, RightOp::SolveTransposed);
        return;
    }
    let h = triangle_split(k);
    let (mut left, mut right) = x.rb_mut().split_at_col_mut(h);
    solve_right_lower_transpose_rows(left.rb_mut(), l.submatrix(0, 0, h, h), par);
    gemm(
        right.rb_mut(),
        true,
        left.rb(),
        l.submatrix(h, 0, k - h, h).transpose(),
        -1.0,
        par,
    );
    solve_right_lower_transpose_rows(right, l.submatrix(h, h, k - h, k - h), par);
}

/// X ← X L⁻¹ (i.e. solves B L = X) by recursive halving, last block first:
/// B₂ = X₂L₂₂⁻¹, then B₁ = (X₁ − B₂L₂₁)L₁₁⁻¹; X's rows in halves at once where
/// [`by_row_halves`] allows.
pub(crate) fn solve_right_lower(x: MatMut<'_>, l: MatRef<'_>, par: Par) {
    by_row_halves(x, l.nrows(), par, &|x, par| {
        solve_right_lower_rows(x, l, par)
    });
}

/// The recursion of [`solve_right_lower`] on all of X's rows.
fn solve_right_lower_rows(mut x: MatMut<'_>, l: MatRef<'_>, par: Par) {
    let k = l.nrows();
    if k <= LEAF {
        leaf::right_triangular(x, l, RightOp::Solve);
        return;
    }
    let h = triangle_split(k);
    let (mut left, mut right) = x.rb_mut().split_at_col_mut(h);
    solve_right_lower_rows(right.rb_mut(), l.submatrix(h, h, k - h, k - h), par);
    gemm(
        left.rb_mut(),
        true,
        right.rb(),
        l.submatrix(h, 0, k - h, h),
        -1.0,
        par,
    );
    solve_right_lower_rows(left, l.submatrix(0, 0, h, h), par);
}

/// M ← M L for a lower-triangular L (k×k; only its lower triangle is read) and M n×k, in place,
/// by recursive halving: M₁ ← M₁L₁₁ + M₂L₂₁, M₂ ← M₂L₂₂ (n·k² flops); M's rows in halves at
/// once where [`by_row_halves`] allows.
pub(crate) fn multiply_right_lower(m: MatMut<'_>, l: MatRef<'_>, par: Par) {
    by_row_halves(m, l.nrows(), par, &|m, par| {
        multiply_right_lower_rows(m, l, par);
    });
}

/// The recursion of [`multiply_right_lower`] on all of M's rows.
fn multiply_right_lower_rows(mut m: MatMut<'_>, l: MatRef<'_>, par: Par) {
    let k = l.nrows();
    if k <= LEAF {
        leaf::right_triangular(m, l, RightOp::Multiply);
        return;
    }
    let h = triangle_split(k);
    let (mut left, right) = m.rb_mut().split_at_col_mut(h);
    multiply_right_lower_rows(left.rb_mut(), l.submatrix(0, 0, h, h), par);
    gemm(
        left.rb_mut(),
        true,
        right.rb(),
        l.submatrix(h, 0, k - h, h),
        1.0,
        par,
    );
    multiply_right_lower_rows(right, l.submatrix(h, h, k - h, k - h), par);
}

/// From this many rows of X, a right-side triangular operation on several threads runs on the
/// two halves of X's rows at once ([`by_row_halves`]).
const HALVES_FROM_ROWS: usize = 256;

/// Runs `op`, a right-side operation with a k×k triangle (X's rows are independent), under
/// [`Par::Rayon`]`(t)` on the two halves of X's rows at once, each on t/2 threads, when X has
/// at least [`HALVES_FROM_ROWS`] rows, each half at least [`super::gemm::PARALLEL_FROM`]
/// multiply-adds (about rows·k²/4) and k is a multiple of [`LEAF`]; otherwise on all of X.
/// The recursion's small gemms and leaves run on one thread, so on halves the second core
/// shares them (the full GP's evidence at n = 1 024 on 2 threads took as long as on one before).
///
/// The same bits either way: the packed gemm computes each output entry from its row of the left
/// factor in the same order whatever the number of rows or threads (measured to the bit on
/// shapes from 64×512×8 to 2 000×1 000×512), the leaves treat every row alike, and with k a
/// multiple of 8 every product in the recursion has n·k ≥ 64 multiply-adds per row, so on a
/// half of more than 64 rows none falls to [`gemm`]'s plain loop for tiny products (at most
/// 4 096 multiply-adds; its sums are not fused) where the whole would not.
fn by_row_halves(x: MatMut<'_>, k: usize, par: Par, op: &(dyn Fn(MatMut<'_>, Par) + Sync)) {
    let rows = x.nrows();
    let half_work = rows / 2 * k * k / 2;
    match par {
        Par::Rayon(t)
            if rows >= HALVES_FROM_ROWS
                && k.is_multiple_of(LEAF)
                && half_work >= super::gemm::PARALLEL_FROM =>
        {
            let (top, bottom) = x.split_at_row_mut((rows / 2).div_ceil(LEAF) * LEAF);
            join(
                par,
                half_work,
                || op(top, super::par(t / 2)),
                || op(bottom, super::par(t - t / 2)),
            );
        }
        _ => op(x, par),
    }
}

/// X ← L⁻¹X for X k×r (a left-side solve, any r): the recursive right-side solve on Xᵀ.
pub(crate) fn solve_left_lower(x: MatMut<'_>, l: MatRef<'_>, par: Par) {
    on_transpose(x, |xt| solve_right_lower_transpose(xt, l, par));
}

/// X ← L⁻ᵀX for X k×r (a left-side solve with the transpose, any r), as [`solve_left_lower`].
pub(crate) fn solve_left_lower_transpose(x: MatMut<'_>, l: MatRef<'_>, par: Par) {
    on_transpose(x, |xt| solve_right_lower(xt, l, par));
}

/// Up to this many rows, a column-major X is transposed into a column-major copy for a left-side
/// solve (see [`on_transpose`]).
const TRANSPOSE_ROWS: usize = 1024;

/// Runs `solve` on Xᵀ (r×k). For a column-major X with several columns and at most
/// [`TRANSPOSE_ROWS`] rows (FITC's and VFE's predictions, m×batch), Xᵀ is copied into a
/// column-major buffer first and copied back after, so that the right-side kernels run on
/// contiguous columns and their gemms write column-major blocks (2kr copies against k²r flops;
/// FITC's evaluation, when it solved on m×chunk blocks, measured about 5 % faster at m = 50–200
/// than through the transposed view, whose leaves pack their rows anyway). Larger or
/// single-column X are solved through the transposed view.
fn on_transpose(mut x: MatMut<'_>, solve: impl FnOnce(MatMut<'_>)) {
    let (k, r) = (x.nrows(), x.ncols());
    if r <= 1 || k > TRANSPOSE_ROWS || x.row_stride() != 1 {
        solve(x.transpose_mut());
        return;
    }
    let ld = x.col_stride() as usize;
    let xp = x.as_mut_ptr();
    let mut t: Vec<f64> = Vec::with_capacity(r * k);
    // SAFETY: X is k×r with unit row stride and column stride `ld`, borrowed exclusively, so
    // (i, j) ↦ xp + i + j·ld stays inside it; `t` has capacity r·k, and (i, j) ↦ j + i·r writes
    // each of its r·k entries once before its length is set.
    unsafe {
        transpose_tiles(xp, ld, t.as_mut_ptr(), r, k, r);
        t.set_len(r * k);
    }
    solve(MatMut::from_column_major_slice_mut(&mut t, r, k));
    // SAFETY: as above, back from `t` (r×k, column stride r) into X.
    unsafe { transpose_tiles(t.as_ptr(), r, xp, ld, r, k) };
}

/// B ← Aᵀ for A `rows`×`cols` column-major at `a` (column stride `lda`) into B at `b` (column
/// stride `ldb`), in 8×8 tiles.
///
/// # Safety
/// Both blocks must lie inside their buffers, `b`'s be writable and not overlap `a`'s.
unsafe fn transpose_tiles(
    a: *const f64,
    lda: usize,
    b: *mut f64,
    ldb: usize,
    rows: usize,
    cols: usize,
) {
    const TILE: usize = 8;
    for j0 in (0..cols).step_by(TILE) {
        for i0 in (0..rows).step_by(TILE) {
            for j in j0..(j0 + TILE).min(cols) {
                for i in i0..(i0 + TILE).min(rows) {
                    // SAFETY: (i, j) is inside A and (j, i) inside B (contract).
                    unsafe { *b.add(j + i * ldb) = *a.add(i + j * lda) };
                }
            }
        }
    }
}

/// Where to halve a triangle of size k > BLOCK: a multiple of BLOCK near k/2.
pub(crate) fn split_point(k: usize) -> usize {
    (k / 2).div_ceil(BLOCK).max(1) * BLOCK
}

/// The triangular solves and products halve down to triangles of at most this many columns:
/// below [`BLOCK`], gemms with an inner dimension of 16 and 8 beat the leaf kernel on a tall X
/// (SSGP's evidence at m = 50–100 measured 3–9 % faster than with leaves of 32).
const LEAF: usize = 8;

/// Where the triangular solves and products halve a triangle of size k > LEAF: as
/// [`split_point`] above [`BLOCK`], a multiple of LEAF near k/2 below it.
fn triangle_split(k: usize) -> usize {
    if k > BLOCK {
        split_point(k)
    } else {
        (k / 2).div_ceil(LEAF) * LEAF
    }
}

/// `dst ← A B` for a symmetric A (k×k) of which only the **lower** triangle is read (the strict
/// upper triangle may hold anything), B k×r, dst k×r (2k²r flops), by recursive halving:
/// dst₁ = A₁₁B₁ + A₂₁ᵀB₂, dst₂ = A₂₁B₁ + A₂₂B₂; diagonal blocks of at most [`BLOCK`] are
/// mirrored into a local buffer for one gemm.
pub(crate) fn symm_lower(mut dst: MatMut<'_>, a: MatRef<'_>, b: MatRef<'_>, par: Par) {
    let k = a.nrows();
    if k <= BLOCK {
        let mut block = [0.0; BLOCK * BLOCK];
        for j in 0..k {
            for i in j..k {
                block[j * k + i] = a.at(i, j);
                block[i * k + j] = a.at(i, j);
            }
        }
        let full = MatRef::from_column_major_slice(&block[..k * k], k, k);
        gemm(dst, false, full, b, 1.0, par);
        return;
    }
    let h = split_point(k);
    let r = b.ncols();
    let (a11, a21, a22) = (
        a.submatrix(0, 0, h, h),
        a.submatrix(h, 0, k - h, h),
        a.submatrix(h, h, k - h, k - h),
    );
    let (b1, b2) = (b.subrows(0, h), b.subrows(h, k - h));
    symm_lower(dst.rb_mut().submatrix_mut(0, 0, h, r), a11, b1, par);
    gemm(
        dst.rb_mut().submatrix_mut(0, 0, h, r),
        true,
        a21.transpose(),
        b2,
        1.0,
        par,
    );
    let mut lower = dst.submatrix_mut(h, 0, k - h, r);
    symm_lower(lower.rb_mut(), a22, b2, par);
    gemm(lower, true, a21, b1, 1.0, par);
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
        let mut a = DMatrix::from_element(150, 150, f64::NAN);
        syrk_lower(
            view_mut(&mut a),
            false,
            rows_view(&phi, 0, 20),
            1.0,
            Par::Seq,
        );
        syrk_lower(
            view_mut(&mut a),
            true,
            rows_view(&phi, 20, 30),
            1.0,
            Par::Seq,
        );
        syrk_lower(
            view_mut(&mut a),
            true,
            rows_view(&phi, 0, 50),
            -0.5,
            Par::Seq,
        );
        let expected = phi.transpose() * &phi * 0.5;
        for j in 0..150 {
            for i in j..150 {
                assert_relative_eq!(a[(i, j)], expected[(i, j)], epsilon = 1e-12);
            }
            assert!((0..j).all(|i| a[(i, j)].is_nan()), "upper triangle written");
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
