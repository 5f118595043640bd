//! The interface every model shares: SSGP, FITC, the full GP and the wrappers around them.
//!
//! - [`Fit`]: a configuration that trains into a concrete fitted type (generic code keeps the
//!   type: a standardised SSGP still samples functions);
//! - [`Regressor`] / [`FittedRegressor`]: the object-safe forms, so benchmarks can loop over
//!   `Vec<Box<dyn Regressor>>`; every [`Fit`] is a [`Regressor`], and `Box<dyn Regressor>` is
//!   itself a [`Fit`];
//! - [`TrainingSummary`]: how a training run went, the same for every model.

use crate::data::{Dataset, InputColumns};
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::optim::OptimReport;
use crate::predictive::{JointPredictive, JointSamples, Predictive};
use crate::termination::TrainingSummary;
use nalgebra::{DMatrix, DVector};

impl TrainingSummary {
    /// The summary of an optimiser run on data whose used input columns are `columns`.
    pub fn new(report: &OptimReport, columns: &InputColumns) -> Self {
        Self {
            initial_neg_log_evidence: report.initial_value,
            neg_log_evidence: report.value,
            iterations: report.iterations,
            evaluations: report.evaluations,
            termination: report.termination.clone(),
            ignored_inputs: columns.ignored(),
            diagnostic: None,
        }
    }
}

/// What every fitted model of the crate holds besides its posterior.
#[derive(Debug, Clone)]
pub(crate) struct FitRecord {
    /// θ in the model's layout ([`crate::hyperparameters`]), for the used input columns.
    pub(crate) theta: DVector<f64>,
    /// ȳ, the training targets' mean, added back to every predictive mean.
    pub(crate) y_mean: f64,
    /// −log p(y|θ) of the centred training targets at θ.
    pub(crate) neg_log_evidence: f64,
    /// How training went.
    pub(crate) training: TrainingSummary,
    /// The noise floor θ's noise entry is decoded with (σn² = floor + e^{2p}).
    pub(crate) noise_floor: f64,
    /// The thread count the model's predictions run with.
    pub(crate) threads: usize,
    /// The input columns used (the others were constant on the training data).
    pub(crate) columns: InputColumns,
}

/// A configured model that trains into a concrete fitted type.
pub trait Fit: Send + Sync {
    /// What training returns.
    type Fitted: FittedRegressor + 'static;

    /// A short name: `ssgp`, `ssgp-fixed`, `fitc`, `full`, `mixture` or `best-of`.
    fn name(&self) -> &'static str;

    /// Learns the hyperparameters on `data` and returns the fitted model.
    ///
    /// # Errors
    /// Whatever the model's validation and training return (bad settings, constant inputs, a
    /// failed Cholesky, …).
    fn fit(&self, data: &Dataset) -> Result<Self::Fitted>;
}

/// A configured model, ready to be fitted (the object-safe form of [`Fit`]).
pub trait Regressor: Send + Sync {
    /// A short name: `ssgp`, `ssgp-fixed`, `fitc`, `full`, `mixture` or `best-of`.
    fn name(&self) -> &'static str;

    /// Learns the hyperparameters on `data` and returns the fitted model.
    ///
    /// # Errors
    /// As [`Fit::fit`].
    fn fit_boxed(&self, data: &Dataset) -> Result<Box<dyn FittedRegressor>>;
}

impl<T: Fit> Regressor for T {
    fn name(&self) -> &'static str {
        Fit::name(self)
    }

    fn fit_boxed(&self, data: &Dataset) -> Result<Box<dyn FittedRegressor>> {
        Ok(Box::new(self.fit(data)?))
    }
}

impl Fit for Box<dyn Regressor> {
    type Fitted = Box<dyn FittedRegressor>;

    fn name(&self) -> &'static str {
        self.as_ref().name()
    }

    fn fit(&self, data: &Dataset) -> Result<Box<dyn FittedRegressor>> {
        self.as_ref().fit_boxed(data)
    }
}

/// A fitted model.
pub trait FittedRegressor: Send + Sync {
    /// The same name as the [`Regressor`] it came from.
    fn name(&self) -> &'static str;

    /// Predictive distribution at test inputs `x` (n*×D).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `x` has not D columns, [`Error::NonFinite`]
    /// for a NaN or infinity in `x` or a prediction that overflows there (never a NaN or ∞ in
    /// the result), [`Error::EmptyData`] for no rows.
    fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive>;

    /// The predictive means alone at `x` (n*×D): `predict(x)?.mean` bit for bit, without the
    /// variance work (the crate's models skip their triangular solves; the default calls
    /// `predict`).
    ///
    /// # Errors
    /// As [`FittedRegressor::predict`].
    fn predict_mean(&self, x: &DMatrix<f64>) -> Result<DVector<f64>> {
        Ok(self.predict(x)?.mean)
    }

    /// The joint predictive at `x` (n*×D, n* ≤ [`crate::predictive::MAX_JOINT_POINTS`]): the
    /// means and the n*×n* latent covariance Σ_f, whose diagonal is `predict`'s `f_variance`;
    /// Σ_f + σn²I ([`JointPredictive::y_covariance`]) is the covariance of the noisy targets.
    ///
    /// # Errors
    /// As [`FittedRegressor::predict`]; [`Error::InvalidParameter`] (naming `x`) for more
    /// than [`crate::predictive::MAX_JOINT_POINTS`] test points; [`Error::Allocation`] if
    /// the covariance cannot be allocated; [`Error::Numerical`] for a non-finite entry.
    fn predict_covariance(&self, x: &DMatrix<f64>) -> Result<JointPredictive>;

    /// `draws` joint posterior samples of the latent values f_* at `x` (n*×D), seeded: draws of
    /// N(μ_*, Σ_f) from [`FittedRegressor::predict_covariance`] by Cholesky
    /// ([`JointPredictive::sample`], which reports any jitter); a mixture draws a member for each
    /// sample, then from that member's Gaussian.
    ///
    /// # Errors
    /// As [`FittedRegressor::predict_covariance`] and [`JointPredictive::sample`].
    fn sample_joint(&self, x: &DMatrix<f64>, draws: usize, seed: u64) -> Result<JointSamples> {
        self.predict_covariance(x)?.sample(draws, seed)
    }

    /// −log p(y|θ) of the training targets (centred by their mean) at the fitted θ.
    fn neg_log_evidence(&self) -> f64;

    /// The noise variance σn² in the predictive variances: `y_variance` − `f_variance`.
    fn noise_variance(&self) -> f64;

    /// How training went.
    fn training(&self) -> &TrainingSummary;

    /// The model's saved form (feature `serde`), which [`crate::persist`] writes (`to_json`,
    /// `save_json`) and reads back as the model or as a `persist::SavedModel`. Every fitted
    /// model of the crate implements it (standardised models and ensembles when what they hold
    /// does).
    ///
    /// # Errors
    /// [`Error::NotPersistable`] for a model implemented outside the crate (the default).
    #[cfg(feature = "serde")]
    fn saved_form(&self) -> Result<crate::schema::SavedForm> {
        Err(crate::error::Error::NotPersistable { name: self.name() })
    }
}

impl FittedRegressor for Box<dyn FittedRegressor> {
    fn name(&self) -> &'static str {
        self.as_ref().name()
    }

    fn predict(&self, x: &DMatrix<f64>) -> Result<Predictive> {
        self.as_ref().predict(x)
    }

    fn predict_mean(&self, x: &DMatrix<f64>) -> Result<DVector<f64>> {
        self.as_ref().predict_mean(x)
    }

    fn predict_covariance(&self, x: &DMatrix<f64>) -> Result<JointPredictive> {
        self.as_ref().predict_covariance(x)
    }

    fn sample_joint(&self, x: &DMatrix<f64>, draws: usize, seed: u64) -> Result<JointSamples> {
        self.as_ref().sample_joint(x, draws, seed)
    }

    fn neg_log_evidence(&self) -> f64 {
        self.as_ref().neg_log_evidence()
    }

    fn noise_variance(&self) -> f64 {
        self.as_ref().noise_variance()
    }

    fn training(&self) -> &TrainingSummary {
        self.as_ref().training()
    }

    #[cfg(feature = "serde")]
    fn saved_form(&self) -> Result<crate::schema::SavedForm> {
        self.as_ref().saved_form()
    }
}
