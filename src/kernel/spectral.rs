//! Spectral densities p_S(s) of stationary kernels (paper eq. 9–12), from which SSGP draws its
//! spectral points.

use nalgebra::DMatrix;
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

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
