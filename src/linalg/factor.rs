//! Cholesky factorisation (A = LLᵀ, L lower) with the crate's one jitter policy, log-determinants,
//! triangular solves and inverses.

use super::blas3::{
    multiply_right_lower, solve_left_lower, solve_left_lower_transpose,
    solve_right_lower_transpose, split_point, syrk_lower,
};
use super::leaf::{self, BLOCK};
use super::views::{MatMut, MatRef};
use super::{join, view, view_mut, Par};
use crate::error::{Error, Result};
use nalgebra::DMatrix;

/// Cholesky factorisation in place: on success the lower triangle of `a` holds L with A = L Lᵀ and
/// the strict upper triangle is zeroed. Only the lower triangle of `a` is read.
///
/// Recursive (k³/3 flops, nearly all in gemms): L₁₁ = chol(A₁₁), L₂₁ = A₂₁L₁₁⁻ᵀ,
/// L₂₂ = chol(A₂₂ − L₂₁L₂₁ᵀ), down to blocks of at most 32 columns factorised by a plain loop.
///
/// # Errors
/// [`Error::DimensionMismatch`] if `a` is not square, [`Error::NotPositiveDefinite`] (naming
/// `what`) if a pivot is not positive (or not finite).
pub fn cholesky_in_place_lower(a: &mut DMatrix<f64>, what: &'static str, par: Par) -> Result<()> {
    let k = a.nrows();
    if k != a.ncols() {
        return Err(Error::DimensionMismatch {
            what: "a matrix to factorise (columns; it must be square)",
            expected: k,
            found: a.ncols(),
        });
    }
    cholesky_recursive(view_mut(a), par).map_err(|pivot| Error::NotPositiveDefinite {
        what,
        dim: k,
        pivot,
        max_jitter: 0.0,
    })?;
    for j in 1..k {
        for i in 0..j {
            a[(i, j)] = 0.0;
        }
    }
    Ok(())
}

/// The recursion of [`cholesky_in_place_lower`] on a view; the error is the first failed pivot.
fn cholesky_recursive(mut a: MatMut<'_>, par: Par) -> std::result::Result<(), usize> {
    let k = a.nrows();
    if k <= BLOCK {
        return leaf::cholesky(a);
    }
    let h = split_point(k);
    cholesky_recursive(a.rb_mut().submatrix_mut(0, 0, h, h), par)?;
    let (l11, mut l21, mut a22) = a.lower_blocks(h);
    solve_right_lower_transpose(l21.rb_mut(), l11.rb(), par);
    syrk_lower(a22.rb_mut(), true, l21.rb().transpose(), -1.0, par);
    cholesky_recursive(a22, par).map_err(|p| p + h)
}

/// The diagonal jitter a Cholesky factorisation of a covariance matrix may add — the one policy
/// of the crate.
///
/// Attempt 0 adds `initial`; while the factorisation fails, attempt k = 1 … `retries` adds
/// `retry_base`·10^(k−1). With `relative`, both are multiplied by the matrix's scale (the signal
/// variance σ0², whose multiple sits on a covariance's diagonal), which makes the model invariant
/// to the scale of the targets; otherwise they are absolute.
///
/// - the full GP uses [`Jitter::ladder`]: nothing at first, then 1e-10·σ0² … 1e-6·σ0²;
/// - FITC uses [`Jitter::relative`]`(1e-6)` on K_uu by default (Snelson's code adds an absolute
///   1e-6, [`Jitter::absolute`], which makes the model depend on the scale of the targets);
/// - SSGP needs none: A = ΦᵀΦ + (mσn²/σ0²)I is regularised by construction.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct Jitter {
    /// Added to the diagonal on the first attempt.
    pub initial: f64,
    /// Retries after a failed factorisation.
    pub retries: u32,
    /// The jitter of the first retry (multiplied by 10 at each further one).
    pub retry_base: f64,
    /// Whether the amounts are multiplied by the matrix's scale (σ0²).
    pub relative: bool,
}

impl Jitter {
    /// The most retries a policy may have: each costs a factorisation, and by then the jitter has
    /// grown by 10³⁰.
    pub const MAX_RETRIES: u32 = 30;

    /// A fixed jitter δ·σ0², relative to the matrix's scale, no retries (FITC's K_uu by default).
    pub fn relative(delta: f64) -> Self {
        Self {
            initial: delta,
            retries: 0,
            retry_base: 0.0,
            relative: true,
        }
    }

    /// A fixed absolute jitter δ, no retries (FITC's K_uu in Snelson's code).
    pub fn absolute(delta: f64) -> Self {
        Self {
            initial: delta,
            retries: 0,
            retry_base: 0.0,
            relative: false,
        }
    }

    /// No jitter at first; on failure 1e-10·σ0², then ×10 up to 1e-6·σ0² (five retries).
    pub fn ladder() -> Self {
        Self {
            initial: 0.0,
            retries: 5,
            retry_base: 1e-10,
            relative: true,
        }
    }

    /// The jitter of attempt `attempt` for a matrix of scale `scale`.
    fn amount(&self, attempt: u32, scale: f64) -> f64 {
        let s = if self.relative { scale } else { 1.0 };
        if attempt == 0 {
            self.initial * s
        } else {
            self.retry_base * s * 10f64.powi(attempt as i32 - 1)
        }
    }

    /// Checks the amounts and the number of retries.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite amount, or more than
    /// [`Jitter::MAX_RETRIES`] retries.
    pub fn validate(&self) -> Result<()> {
        if self.retries > Self::MAX_RETRIES {
            return Err(Error::InvalidParameter {
                name: "jitter",
                reason: format!(
                    "{} retries; at most {} are allowed (the jitter grows tenfold at each)",
                    self.retries,
                    Self::MAX_RETRIES
                ),
            });
        }
        for v in [self.initial, self.retry_base] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(Error::InvalidParameter {
                    name: "jitter",
                    reason: format!("{v} is not a finite non-negative number"),
                });
            }
        }
        Ok(())
    }
}

/// Factorises a symmetric matrix in place in `factor` under a [`Jitter`] policy: `fill` writes (at
/// least) its lower triangle into `factor`, `diagonal` plus the attempt's jitter is added to the
/// diagonal, and the blocked Cholesky runs; on failure the next attempt refills and retries.
/// `scale` is the matrix's scale for a relative policy (σ0²). Returns the jitter that was added
/// (0 when none was needed), so callers can report it. No extra n×n buffer is used.
///
/// # Errors
/// [`Error::NotPositiveDefinite`] (naming `what`, with the largest jitter tried) if the last
/// attempt fails.
pub(crate) fn factorize_with_jitter(
    factor: &mut DMatrix<f64>,
    fill: impl Fn(&mut DMatrix<f64>),
    diagonal: f64,
    jitter: &Jitter,
    scale: f64,
    what: &'static str,
    par: Par,
) -> Result<f64> {
    let n = factor.nrows();
    let mut pivot = 0;
    let mut added = 0.0;
    for attempt in 0..=jitter.retries {
        added = jitter.amount(attempt, scale);
        fill(factor);
        for i in 0..n {
            factor[(i, i)] += diagonal + added;
        }
        match cholesky_in_place_lower(factor, what, par) {
            Ok(()) => return Ok(added),
            Err(Error::NotPositiveDefinite { pivot: p, .. }) => pivot = p,
            Err(e) => return Err(e),
        }
    }
    Err(Error::NotPositiveDefinite {
        what,
        dim: n,
        pivot,
        max_jitter: added,
    })
}

/// log|A| = 2 Σ log L_ii from a Cholesky factor L (k×k; of another shape, its diagonal's
/// min(rows, columns) entries are summed — a tall matrix indexed past its columns and panicked).
pub fn log_det_from_cholesky(l: &DMatrix<f64>) -> f64 {
    let k = l.nrows().min(l.ncols());
    2.0 * (0..k).map(|i| l[(i, i)].ln()).sum::<f64>()
}

/// Solves L X = B in place (B: k×r, any r), L lower triangular (only its lower triangle is
/// read): recursive halving into gemms (k²r flops).
pub(crate) fn solve_lower(l: MatRef<'_>, b: MatMut<'_>, par: Par) {
    solve_left_lower(b, l, par);
}

/// Solves Lᵀ X = B in place (B: k×r, any r), L lower triangular, as [`solve_lower`].
pub(crate) fn solve_lower_transpose(l: MatRef<'_>, b: MatMut<'_>, par: Par) {
    solve_left_lower_transpose(b, l, par);
}

/// Solves A X = B in place with A = L Lᵀ (B: k×r, any r).
pub(crate) fn cholesky_solve_in_place(l: &DMatrix<f64>, mut b: MatMut<'_>, par: Par) {
    solve_lower(view(l), b.rb_mut(), par);
    solve_lower_transpose(view(l), b, par);
}

/// L⁻¹ of a lower-triangular L (k³/3 flops); used for traces such as tr(A⁻¹) = ‖L⁻¹‖²_F.
pub(crate) fn invert_lower(l: &DMatrix<f64>, par: Par) -> DMatrix<f64> {
    let mut inv = DMatrix::zeros(0, 0);
    invert_lower_in(&mut inv, l, par);
    inv
}

/// `inv` ← L⁻¹ of a lower-triangular L (k×k, its strict upper triangle zero), in `inv`'s own
/// buffer when it is k×k already: a buffer kept for the next evaluation. A fresh k×k buffer is
/// fresh pages to fault in and clear when it is large (k = 500: 2 MB, about 500 page faults), as
/// SSGP's evidence found at every evaluation.
pub(crate) fn invert_lower_in(inv: &mut DMatrix<f64>, l: &DMatrix<f64>, par: Par) {
    let k = l.nrows();
    super::resize(inv, k, k);
    for (j, column) in inv.as_mut_slice().chunks_mut(k.max(1)).enumerate() {
        column[..j].fill(0.0);
    }
    invert_lower_into(view_mut(inv), view(l), par);
}

/// The lower triangle of `dst` ← L⁻¹ (k³/3 flops), reading only the lower triangle of `l` and
/// writing only that of `dst`. Recursive: with L = [L₁₁ 0; L₂₁ L₂₂],
/// L⁻¹ = [L₁₁⁻¹ 0; −(L₂₂⁻¹L₂₁)L₁₁⁻¹ L₂₂⁻¹], the off-diagonal block by a triangular solve and a
/// triangular product (nothing else is inverted).
fn invert_lower_into(dst: MatMut<'_>, l: MatRef<'_>, par: Par) {
    let k = l.nrows();
    if k <= BLOCK {
        leaf::invert_lower(dst, l);
        return;
    }
    let h = split_point(k);
    let (mut x11, mut x21, x22) = dst.lower_blocks(h);
    // Multiply-adds: about (k − h)³/6 for the smaller triangle's inverse.
    join(
        par,
        (k - h).pow(3) / 6,
        || invert_lower_into(x11.rb_mut(), l.submatrix(0, 0, h, h), par),
        || invert_lower_into(x22, l.submatrix(h, h, k - h, k - h), par),
    );
    let l21 = l.submatrix(h, 0, k - h, h);
    for j in 0..h {
        for i in 0..k - h {
            x21.set(i, j, -l21.at(i, j));
        }
    }
    // The solve first, then the product: L₂₂⁻¹L₂₁ stays representable where L₂₁L₁₁⁻¹ of a badly
    // scaled factor may overflow.
    solve_left_lower(x21.rb_mut(), l.submatrix(h, h, k - h, k - h), par);
    multiply_right_lower(x21, x11.rb(), par);
}

/// The lower triangle of `dst` ← XᵀX for a lower-triangular X (LAPACK's `lauum`; k³/3 flops),
/// reading only the lower triangle of `x` and writing only that of `dst`. Recursive: with
/// X = [X₁₁ 0; X₂₁ X₂₂], XᵀX = [X₁₁ᵀX₁₁ + X₂₁ᵀX₂₁ ·; X₂₂ᵀX₂₁ X₂₂ᵀX₂₂].
fn lower_gram_into(dst: MatMut<'_>, x: MatRef<'_>, par: Par) {
    let k = x.nrows();
    if k <= BLOCK {
        leaf::lower_gram(dst, x);
        return;
    }
    let h = split_point(k);
    let (x11, x21, x22) = (
        x.submatrix(0, 0, h, h),
        x.submatrix(h, 0, k - h, h),
        x.submatrix(h, h, k - h, k - h),
    );
    let (mut d11, mut d21, d22) = dst.lower_blocks(h);
    // Multiply-adds: (k − h)³/6 for the smaller of the three blocks, X₂₂ᵀX₂₂'s lower triangle.
    let work = (k - h).pow(3) / 6;
    join(
        par,
        work,
        || {
            lower_gram_into(d11.rb_mut(), x11, par);
            syrk_lower(d11, true, x21, 1.0, par);
        },
        || {
            join(
                par,
                work,
                || lower_gram_into(d22, x22, par),
                || {
                    // dst₂₁ = X₂₂ᵀX₂₁, i.e. dst₂₁ᵀ = X₂₁ᵀX₂₂: X₂₁ᵀ times a lower triangle, in
                    // place.
                    for j in 0..h {
                        for i in 0..k - h {
                            d21.set(i, j, x21.at(i, j));
                        }
                    }
                    multiply_right_lower(d21.transpose_mut(), x22, par);
                },
            );
        },
    );
}

/// The inverse of a symmetric positive definite A = L Lᵀ from its Cholesky factor (as LAPACK's
/// `potri`): L⁻¹ by a recursive triangular inversion (k³/3 flops), then A⁻¹ = L⁻ᵀ L⁻¹ by a
/// recursive triangular product (k³/3 flops).
///
/// On entry the lower triangle of `factor` (k×k) holds L; on exit it holds the lower triangle of
/// A⁻¹. `work` (k×k) receives L⁻¹ in its lower triangle. Strict upper triangles are neither read
/// nor written, so no third k×k matrix is needed.
pub(crate) fn spd_inverse_lower(factor: &mut DMatrix<f64>, work: &mut DMatrix<f64>, par: Par) {
    invert_lower_into(view_mut(work), view(factor), par);
    lower_gram_into(view_mut(factor), view(work), par);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::linalg::blas3::solve_right_lower;
    use crate::linalg::par;
    use approx::assert_relative_eq;

    /// A symmetric positive definite k×k test matrix.
    pub(crate) fn spd(k: usize) -> DMatrix<f64> {
        let b = DMatrix::from_fn(k, k, |i, j| ((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.4);
        &b * b.transpose() + DMatrix::identity(k, k)
    }

    /// The log determinant sums the diagonal it has: a tall matrix panicked (row 2 of a 3×2
    /// indexed column 2), and a square factor's value is the sum over its k entries.
    #[test]
    fn log_det_sums_the_diagonal_of_any_shape() {
        let l = DMatrix::from_row_slice(2, 2, &[2.0, 0.0, 5.0, 3.0]);
        assert_relative_eq!(
            log_det_from_cholesky(&l),
            2.0 * 6f64.ln(),
            max_relative = 1e-15
        );
        let tall = DMatrix::from_row_slice(3, 2, &[2.0, 0.0, 5.0, 3.0, 1.0, 1.0]);
        assert_relative_eq!(
            log_det_from_cholesky(&tall),
            2.0 * 6f64.ln(),
            max_relative = 1e-15
        );
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
        let mut x = b.clone();
        cholesky_solve_in_place(&l, view_mut(&mut x), par(1));
        assert_relative_eq!(x, chol.solve(&b), epsilon = 1e-10);
        let inv = invert_lower(&l, par(1));
        assert_relative_eq!(&inv * &l, DMatrix::identity(37, 37), epsilon = 1e-12);
    }

    /// L⁻¹ written over a kept buffer is the fresh inverse bit for bit, whatever the buffer held
    /// (its strict upper triangle is zeroed, so ‖L⁻¹‖²_F is the same too), and a buffer of
    /// another shape is replaced.
    #[test]
    fn an_inverse_over_a_kept_buffer_is_the_fresh_one() {
        for (k, kept) in [(37, 37), (37, 12), (1, 1), (100, 100)] {
            let mut l = spd(k);
            cholesky_in_place_lower(&mut l, "test", par(1)).unwrap();
            let fresh = invert_lower(&l, par(1));
            let mut inv = DMatrix::from_element(kept, kept, f64::NAN);
            invert_lower_in(&mut inv, &l, par(1));
            assert_eq!(inv, fresh, "k = {k}, kept {kept}×{kept}");
            assert_eq!(inv.norm_squared().to_bits(), fresh.norm_squared().to_bits());
        }
    }

    /// The recursive kernels at sizes one, two and three halvings deep, against dense
    /// definitions (nalgebra's unblocked Cholesky and inverse), with NaN in every strict upper
    /// triangle they must not read, and solves with one, a few and many right-hand sides.
    #[test]
    fn recursive_kernels_match_dense_definitions_at_several_depths() {
        for k in [33, 100, 257] {
            let a = spd(k);
            let with_nan_above = |m: &DMatrix<f64>| {
                DMatrix::from_fn(k, k, |i, j| if i < j { f64::NAN } else { m[(i, j)] })
            };
            let mut l = with_nan_above(&a);
            cholesky_in_place_lower(&mut l, "test", par(2)).unwrap();
            let dense = a.clone().cholesky().unwrap();
            assert_relative_eq!(l, dense.l(), epsilon = 1e-10);
            let l_nan = with_nan_above(&l);
            let inv_l = l.clone().try_inverse().unwrap();
            let mut x = DMatrix::from_element(k, k, -3.0);
            invert_lower_into(view_mut(&mut x), view(&l_nan), par(2));
            assert_relative_eq!(x.lower_triangle(), inv_l, epsilon = 1e-10);
            assert!(
                (0..k).all(|j| (0..j).all(|i| x[(i, j)] == -3.0)),
                "upper written"
            );
            let (mut f, mut work) = (l_nan.clone(), DMatrix::from_element(k, k, f64::NAN));
            spd_inverse_lower(&mut f, &mut work, par(2));
            let a_inv = a.clone().try_inverse().unwrap();
            assert_relative_eq!(f.lower_triangle(), a_inv.lower_triangle(), epsilon = 1e-10);
            for r in [1, 5, 300] {
                let b = DMatrix::from_fn(k, r, |i, j| ((i * 3 + j) as f64 * 0.37).sin());
                let mut x = b.clone();
                solve_lower(view(&l_nan), view_mut(&mut x), par(2));
                assert_relative_eq!(&l * &x, b, epsilon = 1e-10);
                let mut x = b.clone();
                solve_lower_transpose(view(&l_nan), view_mut(&mut x), par(2));
                assert_relative_eq!(l.transpose() * &x, b, epsilon = 1e-10);
                let mut x = b.transpose();
                multiply_right_lower(view_mut(&mut x), view(&l_nan), par(2));
                assert_relative_eq!(x, b.transpose() * &l, epsilon = 1e-10);
            }
        }
    }

    /// On two threads the recursive kernels split their work (independent blocks at once, a
    /// right-side operation's rows in halves) and must give the same bits as on one: factor,
    /// inverse and solves at sizes that halve down to triangles of 8 columns and at sizes that
    /// do not, on X of 256 to 1 024 rows. (At k = 266 = 256 + 10 on 512 rows, the triangle of 10
    /// columns at the bottom of the recursion has a product of 2 columns by 8: on halves of 256
    /// rows it would fall to the plain loop for tiny products, whose sums are not fused, where
    /// the whole does not — this test fails if such a k is halved.)
    #[test]
    fn recursive_kernels_give_the_same_bits_on_one_and_two_threads() {
        let same = |a: &DMatrix<f64>, b: &DMatrix<f64>| {
            a.iter()
                .zip(b.iter())
                .all(|(x, y)| x.to_bits() == y.to_bits())
        };
        for (k, rows) in [(12, 256), (266, 512), (300, 256), (520, 1024), (777, 1024)] {
            let a = spd(k) + DMatrix::identity(k, k) * k as f64;
            let x0 = DMatrix::from_fn(rows, k, |i, j| ((i * 5 + j * 3) as f64 * 0.11).sin());
            let run = |threads: usize| {
                let p = par(threads);
                let mut l = a.clone();
                cholesky_in_place_lower(&mut l, "test", p).unwrap();
                let (mut inverse, mut work) = (l.clone(), DMatrix::zeros(k, k));
                spd_inverse_lower(&mut inverse, &mut work, p);
                let mut x = x0.clone();
                solve_right_lower_transpose(view_mut(&mut x), view(&l), p);
                let mut y = x0.clone();
                solve_right_lower(view_mut(&mut y), view(&l), p);
                let mut z = x0.clone();
                multiply_right_lower(view_mut(&mut z), view(&l), p);
                let mut w = x0.transpose();
                solve_left_lower(view_mut(&mut w), view(&l), p);
                [l, inverse, work, x, y, z, w]
            };
            let (one, two) = (run(1), run(2));
            for (what, (a, b)) in ["L", "A⁻¹", "L⁻¹", "XL⁻ᵀ", "XL⁻¹", "XL", "L⁻¹Xᵀ"]
                .iter()
                .zip(one.iter().zip(two.iter()))
            {
                assert!(same(a, b), "k = {k}: {what} differs on two threads");
            }
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
        let mut l = DMatrix::zeros(3, 3);
        let fill = |f: &mut DMatrix<f64>| f.copy_from(&singular);
        let jitter =
            factorize_with_jitter(&mut l, fill, 0.0, &Jitter::ladder(), 1.0, "test", Par::Seq)
                .unwrap();
        assert!(jitter > 0.0 && jitter <= 1e-6);
        assert!(l.iter().all(|v| v.is_finite()));
        // Without retries the singular matrix fails, naming the jitter tried.
        assert!(matches!(
            factorize_with_jitter(&mut l, fill, 0.0, &Jitter::absolute(0.0), 1.0, "test", Par::Seq),
            Err(Error::NotPositiveDefinite { max_jitter, .. }) if max_jitter == 0.0
        ));
        let bad = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.0, -1.0]);
        let mut l = DMatrix::zeros(2, 2);
        assert!(factorize_with_jitter(
            &mut l,
            |f| f.copy_from(&bad),
            0.0,
            &Jitter::ladder(),
            1.0,
            "test",
            Par::Seq
        )
        .is_err());
        // A relative jitter scales with the matrix; an absolute one does not.
        assert_eq!(Jitter::ladder().amount(3, 1e-8), 1e-10 * 1e-8 * 100.0);
        assert_eq!(Jitter::absolute(1e-6).amount(0, 1e-8), 1e-6);
        assert!(Jitter::absolute(-1.0).validate().is_err());
        assert!(Jitter::absolute(f64::NAN).validate().is_err());
        let many = Jitter {
            retries: Jitter::MAX_RETRIES + 1,
            ..Jitter::ladder()
        };
        assert!(matches!(
            many.validate(),
            Err(Error::InvalidParameter { name: "jitter", .. })
        ));
    }

    #[test]
    fn spd_inverse_reads_only_the_lower_triangle() {
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
    }
}
