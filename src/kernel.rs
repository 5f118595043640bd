//! The squared-exponential ARD covariance (paper eq. 3) and its spectral density (eq. 12).
//!
//! Shared by every model: the full GP and FITC evaluate the covariance, SSGP samples spectral points
//! from its spectral density.

use crate::linalg;
use faer::Par;
use nalgebra::{DMatrix, DVector};
use rand::RngCore;
use rand_distr::{Distribution, StandardNormal};

/// The normalised spectral density p_S(s) of a stationary kernel (paper eq. 10), in a
/// lengthscale-free form.
///
/// Implementors draw **unit frequencies** w (one row of an m×D matrix W per spectral point) such
/// that the spectral points of the kernel with lengthscales ℓ are s_r = w_r ⊘ (2πℓ) — the
/// parametrisation in which SSGP optimises them (§4.2). For the squared exponential, w ~ N(0, I);
/// a Matérn-ν kernel would draw w from a multivariate Student-t with 2ν degrees of freedom.
pub trait SpectralDensity: std::fmt::Debug + Send + Sync {
    /// Draws W (m×D), one unit frequency per row.
    fn sample_unit_frequencies(&self, m: usize, dim: usize, rng: &mut dyn RngCore) -> DMatrix<f64>;

    /// A short name for reports.
    fn name(&self) -> &'static str;
}

/// The squared-exponential (Gaussian, RBF) kernel: $k(τ) = σ_0^2 \exp(-\tfrac12 τ^⊤Λ^{-1}τ)$, whose
/// spectral density (eq. 12) is the Gaussian N(0, (4π²Λ)⁻¹), i.e. w = 2πℓ ⊙ s ~ N(0, I).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SquaredExponential;

impl SpectralDensity for SquaredExponential {
    fn sample_unit_frequencies(&self, m: usize, dim: usize, rng: &mut dyn RngCore) -> DMatrix<f64> {
        // Column-major fill, matching the original code's randn(m, D).
        DMatrix::from_fn(m, dim, |_, _| StandardNormal.sample(rng))
    }

    fn name(&self) -> &'static str {
        "squared exponential"
    }
}

/// Divides every column d of `x` (n×D) by ℓ_d.
pub fn scale_inputs(x: &DMatrix<f64>, lengthscales: &DVector<f64>) -> DMatrix<f64> {
    let mut z = x.clone();
    for (d, mut col) in z.column_iter_mut().enumerate() {
        col /= lengthscales[d];
    }
    z
}

/// Squared distances ‖a_i − b_j‖² between the rows of `a` (n×D) and `b` (p×D), n×p, through one gemm
/// (‖a‖² + ‖b‖² − 2abᵀ), clamped at 0 against cancellation.
pub fn squared_distances(a: &DMatrix<f64>, b: &DMatrix<f64>, par: Par) -> DMatrix<f64> {
    let mut d2 = DMatrix::zeros(a.nrows(), b.nrows());
    linalg::gemm(
        linalg::view_mut(&mut d2),
        false,
        linalg::view(a),
        linalg::view(b).transpose(),
        -2.0,
        par,
    );
    let na: Vec<f64> = a.row_iter().map(|r| r.norm_squared()).collect();
    let nb: Vec<f64> = b.row_iter().map(|r| r.norm_squared()).collect();
    for j in 0..b.nrows() {
        for i in 0..a.nrows() {
            let v = d2[(i, j)] + na[i] + nb[j];
            d2[(i, j)] = v.max(0.0);
        }
    }
    d2
}

/// SE-ARD covariance matrix K with K_ij = σ0² exp(−½ Σ_d (a_id − b_jd)²/ℓ_d²), for `a` n×D and
/// `b` p×D (eq. 3). Returns n×p.
///
/// Both input sets are centred on the mean of `b` before the distances are expanded as
/// ‖a‖² + ‖b‖² − 2abᵀ, so inputs far from the origin (offsets of 10⁹ and more) do not cancel
/// catastrophically.
pub fn se_ard(
    a: &DMatrix<f64>,
    b: &DMatrix<f64>,
    lengthscales: &DVector<f64>,
    signal_variance: f64,
    par: Par,
) -> DMatrix<f64> {
    let center = b.row_mean();
    let shifted = |x: &DMatrix<f64>| {
        let mut z = x.clone();
        for (d, mut col) in z.column_iter_mut().enumerate() {
            col.add_scalar_mut(-center[d]);
        }
        scale_inputs(&z, lengthscales)
    };
    let mut k = squared_distances(&shifted(a), &shifted(b), par);
    k.apply(|v| *v = signal_variance * (-0.5 * *v).exp());
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use rand::SeedableRng;

    #[test]
    fn se_ard_matches_definition() {
        let a = DMatrix::from_fn(5, 3, |i, j| (i as f64 * 0.7 - j as f64).sin());
        let b = DMatrix::from_fn(4, 3, |i, j| (i as f64 * 0.3 + j as f64).cos());
        let ell = DVector::from_vec(vec![0.5, 1.5, 2.0]);
        let k = se_ard(&a, &b, &ell, 1.7, Par::Seq);
        for i in 0..5 {
            for j in 0..4 {
                let s: f64 = (0..3)
                    .map(|d| ((a[(i, d)] - b[(j, d)]) / ell[d]).powi(2))
                    .sum();
                assert_relative_eq!(k[(i, j)], 1.7 * (-0.5 * s).exp(), epsilon = 1e-13);
            }
        }
    }

    #[test]
    fn se_ard_is_accurate_far_from_the_origin() {
        let a = DMatrix::from_fn(6, 2, |i, j| (i as f64 * 0.7 - j as f64).sin());
        let b = DMatrix::from_fn(5, 2, |i, j| (i as f64 * 0.3 + j as f64).cos());
        let ell = DVector::from_vec(vec![0.5, 1.5]);
        let near = se_ard(&a, &b, &ell, 1.0, Par::Seq);
        let far = se_ard(&a.add_scalar(1e9), &b.add_scalar(1e9), &ell, 1.0, Par::Seq);
        assert_relative_eq!(near, far, epsilon = 1e-5);
    }

    #[test]
    fn spectral_average_approaches_the_kernel() {
        // (1/m) Σ_r cos(w_rᵀ τ/ℓ) → exp(−½‖τ/ℓ‖²) as m grows (eq. 11 by Monte Carlo).
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let w = SquaredExponential.sample_unit_frequencies(200_000, 2, &mut rng);
        let tau = [0.6, -0.3];
        let ell = [0.8, 0.5];
        let mc: f64 = w
            .row_iter()
            .map(|r| (r[0] * tau[0] / ell[0] + r[1] * tau[1] / ell[1]).cos())
            .sum::<f64>()
            / 200_000.0;
        let exact = (-0.5 * ((tau[0] / ell[0]).powi(2) + (tau[1] / ell[1]).powi(2))).exp();
        assert!((mc - exact).abs() < 0.01, "{mc} vs {exact}");
    }
}
