//! The full GP's configuration: a builder and its validated twin (training is `train.rs`).

use super::posterior::FittedFullGp;
use crate::error::{Error, Result};
use crate::init::LengthscaleInit;
use crate::linalg::Jitter;
use crate::params::{impl_fit, training_builder, TrainingSettings};

/// Validated full-GP settings (from [`FullGpParams`] by [`ParamGuard::check`](crate::ParamGuard::check)).
///
/// Defaults: the default [`crate::OptimConfig`], all cores, the noise floor
/// [`crate::params::DEFAULT_RELATIVE_NOISE_FLOOR`]·var(y), the paper's initial lengthscales (half
/// ranges), θ learned on all the data, seed 0, [`Jitter::ladder`].
#[derive(Debug, Clone)]
pub struct ValidFullGpParams {
    pub(crate) training: TrainingSettings,
    pub(crate) hyperparameter_subset: Option<usize>,
    pub(crate) jitter: Jitter,
    pub(crate) held_out_check: bool,
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
            held_out_check: true,
        })
    }
}

impl FullGpParams {
    /// Learn θ on a random subset of this many points (drawn with the seed), then condition on
    /// all the data; `None` (the default) learns on all of it. At least 2 points: fewer is an
    /// [`Error::InvalidParameter`] when the settings are checked.
    pub fn hyperparameter_subset(mut self, size: Option<usize>) -> Self {
        self.0.hyperparameter_subset = size;
        self
    }

    /// Whether the fit is judged by refits on 3/4 of the rows, each scored on the other 1/4
    /// ([`Remedy::HeldOutRefit`](crate::Remedy::HeldOutRefit); default true): from
    /// [`Remedy::MIN_CHECKED_INPUTS`](crate::Remedy::MIN_CHECKED_INPUTS) distinct inputs up to
    /// [`Remedy::HELD_OUT_CHECK_MAX_ROWS`](crate::Remedy::HELD_OUT_CHECK_MAX_ROWS) rows, at the
    /// cost of one to four more trainings on 3/4 of the rows (from the fit's θ). Off, the fit is
    /// judged by its LOO alone, which is optimistic with few rows per hyperparameter. The model
    /// is the same either way.
    pub fn held_out_check(mut self, check: bool) -> Self {
        self.0.held_out_check = check;
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
    /// a subset of fewer than 2 points.
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
        if let Some(size @ (0 | 1)) = self.hyperparameter_subset {
            return Err(Error::InvalidParameter {
                name: "hyperparameter_subset",
                reason: format!(
                    "a subset of {size} point(s) has nothing to learn from (no input varies on \
                     it); give at least 2 points, or `None` to learn on all the data"
                ),
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
}
