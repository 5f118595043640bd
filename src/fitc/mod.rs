//! FITC, the sparse pseudo-input Gaussian process of Snelson & Ghahramani (2006): the paper's
//! sparse baseline.
//!
//! m pseudo-inputs X̄ (m×D) summarise the n training points. The prior covariance of the training
//! targets is replaced by $Q_{ff} + \mathrm{diag}(K_{ff} - Q_{ff}) + σ_n^2 I$ with
//! $Q_{ff} = K_{fu}K_{uu}^{-1}K_{uf}$; the pseudo-inputs are learned together with the SE-ARD
//! hyperparameters by maximising the evidence ([`objective`] has the equations, the parameter
//! layout and the O(nm²) computation). Prediction costs O(m²) per test point.
//!
//! ```no_run
//! # fn main() -> ssgp::Result<()> {
//! use ssgp::{Dataset, Fitc};
//! let data = Dataset::from_csv("data/kin40k/train.csv")?;
//! let model = Fitc::params(50).seed(1).fit(&data)?;
//! let pred = model.predict(data.x())?;
//! # Ok(()) }
//! ```

pub mod objective;
mod params;

pub use objective::FitcObjective;
pub use params::FitcParams;

use crate::data::check_inputs;
use crate::error::{Error, Result};
use crate::kernel;
use crate::linalg::{self, par};
use crate::model::{FittedRegressor, TrainingSummary};
use crate::predictive::Predictive;
use nalgebra::{DMatrix, DVector};
use objective::{Factors, Hyper};

/// Entry point of the FITC builder: `Fitc::params(m)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fitc;

impl Fitc {
    /// A FITC configuration with `m` pseudo-inputs and default settings (see [`FitcParams`]).
    pub fn params(m: usize) -> FitcParams {
        FitcParams::new(m)
    }
}

/// Test points per block in [`FittedFitc::predict`] (bounds the working memory to O(m·block)).
const PREDICT_BLOCK: usize = 4096;

/// A FITC model conditioned on its training data at fixed parameters.
///
/// Caches $L_u$ ($K_{uu} = L_uL_u^⊤$, jitter included), $L_A$ ($A = I + VΛ^{-1}V^⊤ = L_AL_A^⊤$,
/// $V = L_u^{-1}K_{uf}$) and the weights $β = L_u^{-⊤}L_A^{-⊤}L_A^{-1}VΛ^{-1}y$ (m), so that at a
/// test input x* with $k_* = k(X̄, x_*)$ (m):
/// $$μ_* = \bar y + k_*^⊤β, \qquad
///   σ^2_{f*} = σ_0^2 - \|L_u^{-1}k_*\|^2 + \|L_A^{-1}L_u^{-1}k_*\|^2,$$
/// i.e. $k_{**} - Q_{**} + k_{*u}(K_{uu} + K_{uf}Λ^{-1}K_{fu})^{-1}k_{u*}$, and
/// $σ^2_* = σ^2_{f*} + σ_n^2$.
#[derive(Debug, Clone)]
pub struct FittedFitc {
    theta: DVector<f64>,
    lengthscales: DVector<f64>,
    signal_variance: f64,
    noise_variance: f64,
    pseudo: DMatrix<f64>,
    l_u: DMatrix<f64>,
    l_a: DMatrix<f64>,
    weights: DVector<f64>,
    y_mean: f64,
    neg_log_evidence: f64,
    training: TrainingSummary,
    threads: usize,
}

impl FittedFitc {
    fn from_factors(
        theta: DVector<f64>,
        hyper: &Hyper<'_>,
        f: Factors,
        y_mean: f64,
        training: TrainingSummary,
        threads: usize,
    ) -> Self {
        let p = par(threads);
        let mut weights = DMatrix::from_column_slice(f.by.len(), 1, f.by.as_slice());
        linalg::solve_lower_transpose(linalg::view(&f.l_a), linalg::view_mut(&mut weights), p);
        linalg::solve_lower_transpose(linalg::view(&f.l_u), linalg::view_mut(&mut weights), p);
        Self {
            theta,
            lengthscales: hyper.lengthscales.clone(),
            signal_variance: hyper.signal_variance,
            noise_variance: hyper.noise_variance,
            pseudo: hyper.pseudo.as_ref().clone(),
            l_u: f.l_u,
            l_a: f.l_a,
            weights: weights.column(0).into_owned(),
            y_mean,
            neg_log_evidence: f.neg_log_evidence,
            training,
            threads,
        }
    }

    /// Predictive means and variances at test inputs `x` (n*×D), O(m² + mD) per point.
    ///
    /// # Errors
    /// [`Error::EmptyData`] for no rows, [`Error::DimensionMismatch`] if `x` has not D columns,
    /// [`Error::NonFinite`] for a NaN or infinity.
    pub fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive> {
        check_inputs(x, self.pseudo.ncols())?;
        let n = x.nrows();
        if n == 0 {
            return Err(Error::EmptyData {
                what: "test inputs have no rows",
            });
        }
        let p = par(self.threads);
        let mut mean = DVector::zeros(n);
        let mut latent = DVector::zeros(n);
        let mut start = 0;
        while start < n {
            let len = PREDICT_BLOCK.min(n - start);
            let xs = x.rows(start, len).into_owned();
            let mut v = kernel::se_ard(
                &self.pseudo,
                &xs,
                &self.lengthscales,
                self.signal_variance,
                p,
            );
            mean.rows_mut(start, len)
                .copy_from(&v.tr_mul(&self.weights).add_scalar(self.y_mean));
            linalg::solve_lower(linalg::view(&self.l_u), linalg::view_mut(&mut v), p);
            let q: Vec<f64> = v.column_iter().map(|c| c.norm_squared()).collect();
            linalg::solve_lower(linalg::view(&self.l_a), linalg::view_mut(&mut v), p);
            for (i, col) in v.column_iter().enumerate() {
                latent[start + i] = self.signal_variance - q[i] + col.norm_squared();
            }
            start += len;
        }
        Ok(Predictive::from_latent(mean, latent, self.noise_variance))
    }

    /// The pseudo-inputs X̄, m×D (one per row).
    pub fn pseudo_inputs(&self) -> &DMatrix<f64> {
        &self.pseudo
    }

    /// The lengthscales ℓ (D).
    pub fn lengthscales(&self) -> &DVector<f64> {
        &self.lengthscales
    }

    /// The signal variance σ0².
    pub fn signal_variance(&self) -> f64 {
        self.signal_variance
    }

    /// The noise variance σn².
    pub fn noise_variance(&self) -> f64 {
        self.noise_variance
    }

    /// −log p(y|θ) of the centred training targets at the fitted θ.
    pub fn neg_log_evidence(&self) -> f64 {
        self.neg_log_evidence
    }

    /// How training went.
    pub fn training(&self) -> &TrainingSummary {
        &self.training
    }

    /// The full parameter vector θ = `[log ℓ, log σ0, p_noise, vec(X̄)]` (layout in [`objective`]),
    /// pseudo-inputs included even when they were fixed during training.
    pub fn parameters(&self) -> &DVector<f64> {
        &self.theta
    }
}

impl FittedRegressor for FittedFitc {
    fn name(&self) -> &'static str {
        "fitc"
    }

    fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive> {
        FittedFitc::predict(self, x)
    }

    fn noise_variance(&self) -> f64 {
        self.noise_variance()
    }

    fn neg_log_evidence(&self) -> f64 {
        self.neg_log_evidence
    }

    fn training(&self) -> &TrainingSummary {
        &self.training
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn prediction_in_blocks_equals_prediction_per_point() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let train = crate::data::sinc_data(60, false, 0.1, &mut rng).unwrap();
        let model = Fitc::params(8).max_iterations(5).fit(&train).unwrap();
        let n = PREDICT_BLOCK + 7;
        let xs = DMatrix::from_fn(n, 1, |i, _| -1.5 + 7.0 * i as f64 / n as f64);
        let all = model.predict(&xs).unwrap();
        for &i in &[0, PREDICT_BLOCK - 1, PREDICT_BLOCK, n - 1] {
            let one = model.predict(&xs.rows(i, 1).into_owned()).unwrap();
            assert!((one.mean[0] - all.mean[i]).abs() < 1e-13);
            assert!((one.variance[0] - all.variance[i]).abs() < 1e-13);
        }
        assert!(all.latent_variance.iter().all(|v| *v >= 0.0));
    }
}
