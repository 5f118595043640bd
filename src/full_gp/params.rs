//! The full GP's configuration: a builder, its validated twin, hyperparameter learning (on all
//! the data or a subset) and conditioning.

use super::evidence::{condition, Conditioned, FullGpEvidence};
use super::posterior::FittedFullGp;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::hyperparameters;
use crate::init::{self, LengthscaleInit};
use crate::kernel::{self, SeArd};
use crate::linalg::{self, Jitter};
use crate::model::TrainingSummary;
use crate::optim::{minimize, OptimReport};
use crate::params::{impl_fit, training_builder, TrainingSettings};
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;

/// Validated full-GP settings (from [`FullGpParams`] by [`ParamGuard::check`](crate::ParamGuard::check)).
///
/// Defaults: the default [`crate::OptimConfig`], all cores, no noise floor, the paper's initial
/// lengthscales (half ranges), θ learned on all the data, seed 0, [`Jitter::ladder`].
#[derive(Debug, Clone)]
pub struct ValidFullGpParams {
    pub(crate) training: TrainingSettings,
    pub(crate) hyperparameter_subset: Option<usize>,
    pub(crate) jitter: Jitter,
}

/// Settings of a full GP, built by [`super::FullGp::params`]; [`FullGpParams::fit`] validates
/// and trains.
#[derive(Debug, Clone)]
#[must_use]
pub struct FullGpParams(pub(crate) ValidFullGpParams);

impl Default for FullGpParams {
    fn default() -> Self {
        Self(ValidFullGpParams {
            training: TrainingSettings::default(),
            hyperparameter_subset: None,
            jitter: Jitter::ladder(),
        })
    }
}

impl FullGpParams {
    /// Learn θ on a random subset of this many points (drawn with the seed), then condition on
    /// all the data; `None` (the default) learns on all of it.
    pub fn hyperparameter_subset(mut self, size: Option<usize>) -> Self {
        self.0.hyperparameter_subset = size;
        self
    }
}

training_builder!(FullGpParams);
impl_fit!(FullGpParams, ValidFullGpParams, FittedFullGp);

impl ValidFullGpParams {
    /// Checks the settings that do not depend on the data.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a bad optimiser budget or tolerance, a negative or
    /// non-finite noise floor, bad initial lengthscales, a start from a full GP (this is one), or
    /// a subset of size 0.
    fn validate(&self) -> Result<()> {
        self.training.validate()?;
        self.jitter.validate()?;
        if let LengthscaleInit::FullGpSubset(_) = self.training.lengthscales {
            return Err(Error::InvalidParameter {
                name: "lengthscale_init",
                reason: "a full GP cannot start from another full GP's lengthscales; use \
                         hyperparameter_subset"
                    .into(),
            });
        }
        if self.hyperparameter_subset == Some(0) {
            return Err(Error::InvalidParameter {
                name: "hyperparameter_subset",
                reason: "a subset needs at least one point".into(),
            });
        }
        Ok(())
    }

    /// `full`.
    pub fn name(&self) -> &'static str {
        "full"
    }

    /// The settings shared with the other models (seed, optimiser, threads, noise floor, ℓ start).
    pub fn training(&self) -> &TrainingSettings {
        &self.training
    }

    /// The evidence of this configuration on `data` (all of it, whatever the subset setting).
    pub fn evidence(&self, data: &Dataset) -> FullGpEvidence {
        FullGpEvidence::new(data, self)
    }

    /// Learns θ by maximising the evidence (on the subset, if one is set), then conditions on all
    /// of `data` ([`Self::condition`]).
    ///
    /// The returned model's [`FittedFullGp::training`] describes the optimisation (on the subset,
    /// if any), its [`FittedFullGp::neg_log_evidence`] is on all of `data`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a subset larger than the data;
    /// [`Error::DimensionMismatch`] if the initial lengthscales have not D entries;
    /// [`Error::ConstantInput`] / [`Error::ConstantTargets`] from the start values; the
    /// evidence's errors at the initial θ; as [`Self::condition`].
    pub fn fit(&self, data: &Dataset) -> Result<FittedFullGp> {
        let report = self.learn(data)?;
        let mut fitted = self.condition(data, &report.theta)?;
        fitted.training = TrainingSummary::from(&report);
        Ok(fitted)
    }

    /// Learns the hyperparameters only (on the configured subset, or all of `data`), without
    /// conditioning on all the data: what [`ValidFullGpParams::fit`] does before its final
    /// Cholesky. The returned report's `theta` is in the layout of [`crate::hyperparameters`].
    ///
    /// # Errors
    /// As [`ValidFullGpParams::fit`], but for the conditioning.
    pub fn learn(&self, data: &Dataset) -> Result<OptimReport> {
        let subset;
        let train = match self.hyperparameter_subset {
            Some(size) if size > data.len() => {
                return Err(Error::InvalidParameter {
                    name: "hyperparameter_subset",
                    reason: format!("{size} points asked for, but the data has {}", data.len()),
                })
            }
            Some(size) if size < data.len() => {
                let mut rng = rand::rngs::StdRng::seed_from_u64(self.training.seed);
                let mut rows = rand::seq::index::sample(&mut rng, data.len(), size).into_vec();
                rows.sort_unstable();
                subset = data.subset(&rows)?;
                &subset
            }
            _ => data,
        };
        let start = init::start(train, &self.training)?;
        let theta0 = hyperparameters::pack(&start, self.training.noise(), None);
        minimize(&self.evidence(train), theta0, &self.training.optim)
    }

    /// The posterior of a full GP on all of `data` at hyperparameters θ (layout in
    /// [`crate::hyperparameters`]), without training: one Cholesky factorisation of K + σn² I
    /// (n³/3 flops, 8·n² bytes), with the jitter ladder if needed ([`FittedFullGp::jitter`]).
    /// The [`FittedFullGp::training`] summary is [`TrainingSummary::untrained`].
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a θ without D + 2 entries, [`Error::NonFinite`] for a NaN
    /// or infinity in it, [`Error::InvalidParameter`] for extreme values;
    /// [`Error::NotPositiveDefinite`] if K + σn² I cannot be factorised even with jitter.
    pub fn condition(&self, data: &Dataset, theta: &DVector<f64>) -> Result<FittedFullGp> {
        let h = self.evidence(data).unpack(theta)?;
        let par = linalg::par(self.training.threads);
        let n = data.len();
        let (centred, input_means) = kernel::centre_columns(data.x());
        let z = kernel::scale_inputs(&centred, &h.lengthscales);
        let y_mean = data.y_mean();
        let y = data.y().add_scalar(-y_mean);
        let mut factor = DMatrix::zeros(n, n);
        let kernel = SeArd {
            lengthscales: &h.lengthscales,
            signal_variance: h.signal_variance,
        };
        let Conditioned {
            jitter,
            alpha,
            neg_log_evidence,
        } = condition(
            &mut factor,
            |k| kernel.lower_scaled(&z, k, par),
            &y,
            &h,
            &self.jitter,
            par,
        )?;
        Ok(FittedFullGp {
            z,
            input_means,
            y_mean,
            alpha,
            factor,
            theta: theta.clone(),
            hyperparameters: h,
            jitter,
            neg_log_evidence,
            training: TrainingSummary::untrained(neg_log_evidence),
            par,
        })
    }
}
