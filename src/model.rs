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

    /// How training went.
    fn training(&self) -> &TrainingSummary;
}
