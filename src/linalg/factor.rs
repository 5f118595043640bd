//! Cholesky factorisation (A = LLᵀ, L lower) with the crate's one jitter policy, log-determinants,
//! triangular solves and inverses.

use super::{clear_avx_upper, invariant, view, view_mut};
use crate::error::{Error, Result};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::matmul::triangular::BlockStructure;
use faer::{Accum, MatMut, MatRef, Par};
use nalgebra::DMatrix;

/// Cholesky factorisation in place: on success the lower triangle of `a` holds L with A = L Lᵀ and
/// the strict upper triangle is zeroed. Only the lower triangle of `a` is read.
///
/// # Errors
/// [`Error::DimensionMismatch`] if `a` is not square, [`Error::NotPositiveDefinite`] (naming
/// `what`) if a pivot is not positive.
pub fn cholesky_in_place_lower(a: &mut DMatrix<f64>, what: &'static str, par: Par) -> Result<()> {
    let k = a.nrows();
    if k != a.ncols() {
        return Err(Error::DimensionMismatch {
            what: "a matrix to factorise (columns; it must be square)",
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
/// diagonal, and faer's blocked Cholesky runs; on failure the next attempt refills and retries.
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

/// log|A| = 2 Σ log L_ii from a Cholesky factor.
pub fn log_det_from_cholesky(l: &DMatrix<f64>) -> f64 {
    2.0 * (0..l.nrows()).map(|i| l[(i, i)].ln()).sum::<f64>()
}

/// Solves L X = B in place (B: k×r, any r), L lower triangular.
pub(crate) fn solve_lower(l: MatRef<'_, f64>, b: MatMut<'_, f64>, par: Par) {
    let par = invariant(par, b.nrows(), b.ncols());
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(l, b, par);
    clear_avx_upper();
}

/// Solves Lᵀ X = B in place (B: k×r, any r), L lower triangular.
pub(crate) fn solve_lower_transpose(l: MatRef<'_, f64>, b: MatMut<'_, f64>, par: Par) {
    let par = invariant(par, b.nrows(), b.ncols());
    faer::linalg::triangular_solve::solve_upper_triangular_in_place(l.transpose(), b, par);
    clear_avx_upper();
}

/// Solves A X = B in place with A = L Lᵀ (B: k×r, any r).
pub(crate) fn cholesky_solve_in_place(l: &DMatrix<f64>, mut b: MatMut<'_, f64>, par: Par) {
    use faer::prelude::ReborrowMut;
    solve_lower(view(l), b.rb_mut(), par);
    solve_lower_transpose(view(l), b, par);
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
pub(crate) mod tests {
    use super::*;
    use crate::linalg::par;
    use approx::assert_relative_eq;

    /// A symmetric positive definite k×k test matrix.
    pub(crate) fn spd(k: usize) -> DMatrix<f64> {
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
        let mut x = b.clone();
        cholesky_solve_in_place(&l, view_mut(&mut x), par(1));
        assert_relative_eq!(x, chol.solve(&b), epsilon = 1e-10);
        let inv = invert_lower(&l, par(1));
        assert_relative_eq!(&inv * &l, DMatrix::identity(37, 37), epsilon = 1e-12);
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
