//! The interface every model shares: SSGP, FITC and the full GP.
//!
//! A configured model ([`Regressor`]) is fitted to a [`Dataset`] and yields a [`FittedRegressor`]
//! that predicts. Both traits are object safe, so benchmarks can loop over
//! `Vec<Box<dyn Regressor>>`.

use crate::data::Dataset;
use crate::error::Result;
use crate::optim::{OptimReport, Termination};
use crate::predictive::Predictive;
use nalgebra::DMatrix;

/// How a training run went.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TrainingSummary {
    /// −log p(y|θ) at the initial parameters (after any initial draws were compared).
    pub initial_neg_log_evidence: f64,
    /// −log p(y|θ) at the fitted parameters; never above the initial value.
    pub neg_log_evidence: f64,
    /// Optimiser iterations (line searches).
    pub iterations: u64,
    /// Objective evaluations (value and gradient), initial draws excluded.
    pub evaluations: usize,
    /// Why the optimiser stopped.
    pub termination: Termination,
}

impl From<&OptimReport> for TrainingSummary {
    fn from(r: &OptimReport) -> Self {
        Self {
            initial_neg_log_evidence: r.initial_value,
            neg_log_evidence: r.value,
            iterations: r.iterations,
            evaluations: r.evaluations,
            termination: r.termination.clone(),
        }
    }
}

/// A configured model, ready to be fitted.
pub trait Regressor: Send + Sync {
    /// A short name: `ssgp`, `ssgp-fixed`, `fitc` or `full`.
    fn name(&self) -> &'static str;

    /// Learns the hyperparameters on `data` and returns the fitted model.
    ///
    /// # Errors
    /// Whatever the model's validation and training return (constant inputs, failed Cholesky, …).
    fn fit_boxed(&self, data: &Dataset) -> Result<Box<dyn FittedRegressor>>;
}

/// A fitted model.
pub trait FittedRegressor: Send + Sync {
    /// The same name as the [`Regressor`] it came from.
    fn name(&self) -> &'static str;

    /// Predictive distribution at test inputs `x` (n*×D).
    ///
    /// # Errors
    /// [`crate::Error::DimensionMismatch`] if `x` has not D columns, [`crate::Error::NonFinite`]
    /// for a NaN or infinity, [`crate::Error::EmptyData`] for no rows.
    fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive>;

    /// −log p(y|θ) of the training targets (centred by their mean) at the fitted θ.
    fn neg_log_evidence(&self) -> f64;

    /// The noise variance σn² in the predictive variances: `variance` − `latent_variance`.
    fn noise_variance(&self) -> f64;

    /// How training went.
    fn training(&self) -> &TrainingSummary;
}

/// The paper's initial hyperparameters (§4.2, step 1), used by every model: ℓ_d = half the range of
/// input d, σ0² = var(y) (the 1/n variance), σn² = σ0²/4.
///
/// # Errors
/// [`crate::Error::ConstantInput`] for an input column with zero range (ℓ_d would be 0),
/// [`crate::Error::ConstantTargets`] if var(y) = 0.
pub fn initial_hyperparameters(data: &Dataset) -> Result<InitialHyperparameters> {
    let x = data.x();
    let mut lengthscales = nalgebra::DVector::zeros(x.ncols());
    for (d, col) in x.column_iter().enumerate() {
        let (lo, hi) = (col.min(), col.max());
        if hi - lo <= 0.0 {
            return Err(crate::Error::ConstantInput {
                column: d,
                value: lo,
            });
        }
        lengthscales[d] = 0.5 * (hi - lo);
    }
    let mean = data.y_mean();
    let var = data.y().map(|v| (v - mean).powi(2)).mean();
    if var <= 0.0 {
        return Err(crate::Error::ConstantTargets { value: mean });
    }
    Ok(InitialHyperparameters {
        lengthscales,
        signal_variance: var,
        noise_variance: var / 4.0,
    })
}

/// Starting values of the SE-ARD hyperparameters, see [`initial_hyperparameters`].
#[derive(Debug, Clone, PartialEq)]
pub struct InitialHyperparameters {
    /// ℓ (D).
    pub lengthscales: nalgebra::DVector<f64>,
    /// σ0².
    pub signal_variance: f64,
    /// σn².
    pub noise_variance: f64,
}

/// The noise variance as an unconstrained parameter p, with an optional lower bound (§5.2):
/// σn² = floor + e^{2p}. Without a floor (floor = 0), p = log σn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseParam {
    /// The lower bound on σn² (0 for none).
    pub floor: f64,
}

impl NoiseParam {
    /// σn² at parameter p.
    pub fn variance(&self, p: f64) -> f64 {
        self.floor + (2.0 * p).exp()
    }

    /// dσn²/dp at parameter p.
    pub fn variance_derivative(&self, p: f64) -> f64 {
        2.0 * (2.0 * p).exp()
    }

    /// The parameter p for a noise variance (at least twice the floor's distance is kept: a value
    /// at or below the floor starts just above it, at floor + max(v − floor, floor·1e-3)).
    pub fn param(&self, variance: f64) -> f64 {
        let excess = (variance - self.floor).max(self.floor * 1e-3);
        0.5 * excess.max(f64::MIN_POSITIVE).ln()
    }

    /// Checks the floor.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] for a negative or non-finite floor.
    pub fn validate(&self) -> Result<()> {
        if !(self.floor >= 0.0 && self.floor.is_finite()) {
            return Err(crate::Error::InvalidParameter {
                name: "noise_floor",
                reason: format!("{} is not a finite non-negative variance", self.floor),
            });
        }
        Ok(())
    }
}
