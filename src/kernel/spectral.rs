//! Spectral densities p_S(s) of stationary kernels (paper eq. 9–12), from which SSGP draws its
//! spectral points.
//!
//! ```
//! use ssgp::kernel::{SpectralDensity, SquaredExponential};
//! use ssgp::rand::{rngs::StdRng, SeedableRng};
//!
//! let mut rng = StdRng::seed_from_u64(1);
//! let w = SquaredExponential.sample_unit_frequencies(20_000, 2, &mut rng); // W ~ N(0, I)
//! let var = w.column(0).map(|v| v * v).mean();
//! assert_eq!(w.shape(), (20_000, 2));
//! assert!((var - 1.0).abs() < 0.05);
//! println!("{}", SquaredExponential.name());
//! ```

use nalgebra::DMatrix;
use rand::RngCore;
use rand_distr::{ChiSquared, Distribution, StandardNormal};

/// The normalised spectral density p_S(s) of a stationary kernel (paper eq. 10), in a
/// lengthscale-free form.
///
/// Implementors draw **unit frequencies** w (one row of an m×D matrix W per spectral point) such
/// that the spectral points of the kernel with lengthscales ℓ are s_r = w_r ⊘ (2πℓ) — the
/// parametrisation in which SSGP optimises them (§4.2). For the squared exponential, w ~ N(0, I);
/// a Matérn-ν kernel draws w from a multivariate Student-t with 2ν degrees of freedom
/// ([`Matern`]).
pub trait SpectralDensity: std::fmt::Debug + Send + Sync {
    /// Draws W (m×D), one unit frequency per row.
    ///
    /// # Panics
    /// The crate's densities panic if m·D overflows `usize` (the models check m·D's bytes
    /// before they draw: an error there).
    fn sample_unit_frequencies(&self, m: usize, dim: usize, rng: &mut dyn RngCore) -> DMatrix<f64>;

    /// A short name for reports.
    fn name(&self) -> &'static str;
}

/// Panics if an m×D matrix has more entries than `usize` counts: nalgebra would allocate the
/// wrapped product and write past it.
fn check_size(m: usize, dim: usize) {
    assert!(
        m.checked_mul(dim).is_some(),
        "{m}×{dim} unit frequencies: m·D overflows usize"
    );
}

/// The squared-exponential (Gaussian, RBF) kernel: $k(τ) = σ_0^2 \exp(-\tfrac12 τ^⊤Λ^{-1}τ)$, whose
/// spectral density (eq. 12) is the Gaussian N(0, (4π²Λ)⁻¹), i.e. w = 2πℓ ⊙ s ~ N(0, I).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SquaredExponential;

impl SpectralDensity for SquaredExponential {
    fn sample_unit_frequencies(&self, m: usize, dim: usize, rng: &mut dyn RngCore) -> DMatrix<f64> {
        check_size(m, dim);
        // Column-major fill, matching the original code's randn(m, D).
        DMatrix::from_fn(m, dim, |_, _| StandardNormal.sample(rng))
    }

    fn name(&self) -> &'static str {
        "squared exponential"
    }
}

/// The Matérn kernel with ν = `dof`/2 (½, 3/2, 5/2 for 1, 3, 5 degrees of freedom): its
/// spectral density in unit frequencies is the multivariate Student-t with 2ν degrees of
/// freedom, w = z·√(2ν/u) with z ~ N(0, I_D) and u ~ χ²(2ν) — whose characteristic function
/// E[cos(wᵀτ)] is the Matérn-ν correlation at r = ‖τ‖.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matern {
    dof: u32,
}

impl Matern {
    /// Matérn ν = `dof`/2; `dof` is 1, 3 or 5 for the kernels of [`super::Kernel`].
    pub(crate) fn new(dof: u32) -> Self {
        Self { dof }
    }
}

impl SpectralDensity for Matern {
    fn sample_unit_frequencies(&self, m: usize, dim: usize, rng: &mut dyn RngCore) -> DMatrix<f64> {
        let dof = f64::from(self.dof);
        // χ²(k) with k ∈ {1, 3, 5} is a valid distribution: the constructor cannot fail.
        let chi = ChiSquared::new(dof).ok();
        check_size(m, dim);
        let mut w = DMatrix::zeros(m, dim);
        for r in 0..m {
            let u: f64 = chi.map_or(dof, |c| c.sample(rng));
            let scale = (dof / u).sqrt();
            for d in 0..dim {
                let z: f64 = StandardNormal.sample(rng);
                w[(r, d)] = z * scale;
            }
        }
        w
    }

    fn name(&self) -> &'static str {
        match self.dof {
            1 => "matern12",
            3 => "matern32",
            _ => "matern52",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// An m×D whose entries overflow `usize` is refused before nalgebra allocates the wrapped
    /// product (and writes past it).
    #[test]
    #[should_panic(expected = "m·D overflows usize")]
    fn an_overflowing_size_panics_before_allocating() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        SquaredExponential.sample_unit_frequencies(1 << 32, 1 << 32, &mut rng);
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

    #[test]
    fn student_t_frequencies_give_the_matern_kernels() {
        // E[cos(wᵀτ)] = k(‖τ‖)/σ0² for every Matérn kernel; 200 000 draws: standard error of
        // the mean ≤ √(½/200 000) ≈ 0.0016, so 0.01 is six standard errors.
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        for kernel in [
            super::super::Kernel::Matern12,
            super::super::Kernel::Matern32,
            super::super::Kernel::Matern52,
        ] {
            let w = kernel
                .spectral_density()
                .sample_unit_frequencies(200_000, 2, &mut rng);
            for tau in [[0.3, -0.2], [0.9, 0.7], [2.0, 0.1]] {
                let mc: f64 = w
                    .row_iter()
                    .map(|r| (r[0] * tau[0] + r[1] * tau[1]).cos())
                    .sum::<f64>()
                    / 200_000.0;
                let exact = kernel.shape(tau[0] * tau[0] + tau[1] * tau[1]);
                assert!(
                    (mc - exact).abs() < 0.01,
                    "{kernel:?} at {tau:?}: {mc} vs {exact}"
                );
            }
        }
    }
}
