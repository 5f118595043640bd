//! The trigonometric design matrix of paper eq. 5–6.
//!
//! Spectral points are held in the paper's over-parametrisation (§4.2): unit frequencies W (m×D)
//! and lengthscales ℓ (D), with s_r = W_r ⊘ (2πℓ). The **scaled frequencies** Ω = W ⊘ ℓ (m×D,
//! Ω_rd = W_rd/ℓ_d) turn an input x into the phases θ_r = 2π s_rᵀx = Ω_rᵀx.
//!
//! This crate stores the design matrix **one row per point**, n×2m: Φ = [cos(XΩᵀ) | sin(XΩᵀ)],
//! the first m columns the cosines, the last m the sines (the transpose of the paper's 2m×n Φ_f,
//! with its interleaved pairs regrouped; the model is invariant to that order). Hence
//! A = ΦᵀΦ + λI and K = (σ0²/m)ΦΦᵀ.
//!
//! ```
//! use ssgp::linalg::Par;
//! use ssgp::nalgebra::{DMatrix, DVector};
//! use ssgp::ssgp::features::{design_matrix, scaled_frequencies};
//!
//! let w = DMatrix::from_row_slice(2, 1, &[1.0, 2.0]);     // m = 2 unit frequencies, D = 1
//! let omega = scaled_frequencies(&w, &DVector::from_element(1, 0.5)); // Ω = W ⊘ ℓ = [2, 4]
//! let x = DMatrix::from_row_slice(3, 1, &[0.0, 0.25, 1.0]);
//! let phi = design_matrix(&x, &omega, Par::Seq);           // n×2m: [cos(XΩᵀ) | sin(XΩᵀ)]
//! assert_eq!(phi.shape(), (3, 4));
//! assert!((phi[(1, 0)] - 0.5f64.cos()).abs() < 1e-15 && (phi[(1, 3)] - 1f64.sin()).abs() < 1e-15);
//! ```
//!
//! # Panics
//! [`scaled_frequencies`] and [`design_matrix`] take W or Ω with as many columns as ℓ has
//! entries and x has columns, and panic otherwise (as nalgebra's products do); the models
//! check these shapes first.

use crate::error::{Error, Result};
use crate::linalg;
use crate::linalg::{MatRef, Par};
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

/// Ω = W ⊘ ℓ: row r, column d holds W_rd / ℓ_d (m×D).
pub fn scaled_frequencies(w: &DMatrix<f64>, lengthscales: &DVector<f64>) -> DMatrix<f64> {
    let mut omega = w.clone();
    for (d, mut col) in omega.column_iter_mut().enumerate() {
        col /= lengthscales[d];
    }
    omega
}

/// Spectral points s_r = Ω_r / (2π) (m×D), as in φ(x) = [cos(2π s_rᵀx), sin(2π s_rᵀx)].
pub fn spectral_points(omega: &DMatrix<f64>) -> DMatrix<f64> {
    omega / (2.0 * std::f64::consts::PI)
}

/// The largest phase |θ_r| = |Ω_rᵀ(x − c)| at which f64 still resolves a feature: 2⁴², where
/// neighbouring f64 numbers are 2⁻¹⁰ radians apart. Beyond, the computed phase is off by more
/// than that and its cosine and sine are noise — an input in other units than the training
/// inputs' (nanoseconds for seconds), or some 10¹² lengthscales away from them.
pub const PHASE_LIMIT: f64 = 4_398_046_511_104.0;

/// Checks that every row of `centred` (len×D, inputs less the training inputs' centre; row i is
/// the caller's row `first_row` + i) keeps its phases within [`PHASE_LIMIT`], by the bound
/// Σ_d max_r |Ω_rd|·|x_d − c_d| ≥ max_r |θ_r| (O(mD + len·D)).
///
/// # Errors
/// [`Error::Scale`] naming the first row beyond it, its bound and the remedy.
pub(crate) fn check_phases(
    centred: &DMatrix<f64>,
    omega: &DMatrix<f64>,
    first_row: usize,
) -> Result<()> {
    let largest: Vec<f64> = omega
        .column_iter()
        .map(|c| c.iter().fold(0.0, |a: f64, v| a.max(v.abs())))
        .collect();
    for (i, row) in centred.row_iter().enumerate() {
        let bound: f64 = row.iter().zip(&largest).map(|(x, w)| x.abs() * w).sum();
        if bound > PHASE_LIMIT {
            return Err(Error::Scale {
                what: format!(
                    "input row {} lies so far from the training inputs that the phases of its \
                     spectral features reach {bound:e} radians, beyond the {PHASE_LIMIT:e} at \
                     which f64 resolves them: an SSGP has nothing to say there (its features \
                     would be noise); check that the inputs are in the training inputs' units",
                    first_row + i
                ),
            });
        }
    }
    Ok(())
}

/// Writes the design matrix of the rows `x` (len×D), centred on `centre` (D), into `phi`
/// (len×2m, resized if needed): the rows x − c into `centred` (len×D, resized if needed), phases
/// (X − 1cᵀ)Ωᵀ by one gemm into the cosine block, then cos and sin of each phase, in parallel over
/// blocks of entries. `omega` is m×D.
///
/// Centring changes nothing in the model — a shift of the inputs rotates each cosine/sine pair,
/// which leaves the evidence and the predictions unchanged — but keeps the phases small when the
/// inputs sit far from the origin (an offset of 10⁸ with a spread of 10⁻⁶ would otherwise leave
/// no significant digit in them).
pub(crate) fn design_matrix_into(
    x: MatRef<'_>,
    centre: &DVector<f64>,
    omega: &DMatrix<f64>,
    phi: &mut DMatrix<f64>,
    centred: &mut DMatrix<f64>,
    par: Par,
) {
    let len = x.nrows();
    let m = omega.nrows();
    linalg::resize(phi, len, 2 * m);
    centre_rows(x, centre, centred);
    {
        let buf = phi.as_mut_slice();
        let phases =
            crate::linalg::MatMut::from_column_major_slice_mut(&mut buf[..len * m], len, m);
        linalg::gemm(
            phases,
            false,
            linalg::view(centred),
            linalg::view(omega).transpose(),
            1.0,
            par,
        );
    }
    let (cos_part, sin_part) = phi.as_mut_slice().split_at_mut(len * m);
    const BLOCK: usize = 4096;
    let trig = |(c, s): (&mut [f64], &mut [f64])| {
        linalg::clear_avx_upper();
        super::trig::sin_cos_in_place(c, s);
    };
    if matches!(par, Par::Seq) {
        trig((cos_part, sin_part));
    } else {
        linalg::on_pool(par, || {
            cos_part
                .par_chunks_mut(BLOCK)
                .zip(sin_part.par_chunks_mut(BLOCK))
                .for_each(trig)
        });
    }
}

/// Writes the rows `x` (len×D) minus `centre` (D) into `out` (len×D, resized if needed).
pub(crate) fn centre_rows(x: MatRef<'_>, centre: &DVector<f64>, out: &mut DMatrix<f64>) {
    let (len, dim) = (x.nrows(), x.ncols());
    linalg::resize(out, len, dim);
    for d in 0..dim {
        let c = centre[d];
        for (i, o) in out.column_mut(d).iter_mut().enumerate() {
            *o = x.at(i, d) - c;
        }
    }
}

/// The design matrix Φ (n×2m) of inputs `x` (n×D) for scaled frequencies `omega` (m×D): row i is
/// [cos(Ωx_i), sin(Ωx_i)] (no centring).
pub fn design_matrix(x: &DMatrix<f64>, omega: &DMatrix<f64>, par: Par) -> DMatrix<f64> {
    let mut phi = DMatrix::zeros(x.nrows(), 2 * omega.nrows());
    let origin = DVector::zeros(x.ncols());
    let mut scratch = DMatrix::zeros(0, 0);
    design_matrix_into(linalg::view(x), &origin, omega, &mut phi, &mut scratch, par);
    phi
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn design_matrix_matches_eq5() {
        let x = DMatrix::from_fn(7, 2, |i, j| i as f64 * 0.3 - j as f64 * 0.7);
        let w = DMatrix::from_fn(3, 2, |r, d| (r as f64 + 1.0) * 0.4 - d as f64);
        let ell = [0.5, 2.0];
        // Spectral points by the paper's definition (eq. 5 with s_r = w_r ⊘ (2πℓ), §4.2), not by
        // the functions under test.
        let two_pi = 2.0 * std::f64::consts::PI;
        let s_by_hand = DMatrix::from_fn(3, 2, |r, d| w[(r, d)] / (two_pi * ell[d]));
        let omega = scaled_frequencies(&w, &DVector::from_column_slice(&ell));
        assert_relative_eq!(spectral_points(&omega), s_by_hand, epsilon = 1e-15);
        let centre = DVector::from_vec(vec![0.4, -1.3]);
        for par in [Par::Seq, linalg::par(2)] {
            let phi = design_matrix(&x, &omega, par);
            let (mut centred_phi, mut scratch) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
            design_matrix_into(
                linalg::view(&x),
                &centre,
                &omega,
                &mut centred_phi,
                &mut scratch,
                par,
            );
            for i in 0..7 {
                for r in 0..3 {
                    let at = |c0: f64, c1: f64| {
                        two_pi
                            * (s_by_hand[(r, 0)] * (x[(i, 0)] - c0)
                                + s_by_hand[(r, 1)] * (x[(i, 1)] - c1))
                    };
                    let ph = at(0.0, 0.0);
                    assert_relative_eq!(phi[(i, r)], ph.cos(), epsilon = 1e-14);
                    assert_relative_eq!(phi[(i, 3 + r)], ph.sin(), epsilon = 1e-14);
                    let ph = at(centre[0], centre[1]);
                    assert_relative_eq!(centred_phi[(i, r)], ph.cos(), epsilon = 1e-14);
                    assert_relative_eq!(centred_phi[(i, 3 + r)], ph.sin(), epsilon = 1e-14);
                }
            }
        }
    }
}
