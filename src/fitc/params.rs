//! The FITC configuration: a builder and its validated twin (training is `train.rs`).

use super::posterior::FittedFitc;
use crate::error::{Error, Result};
use crate::hyperparameters::check_block;
use crate::init::{self, LengthscaleInit};
use crate::linalg::Jitter;
use crate::params::{impl_fit, training_builder, TrainingSettings};
use nalgebra::DMatrix;

/// The default jitter on $K_{uu}$: δ = 1e-6·σ0², relative to the signal variance (Snelson's
/// code adds an absolute 1e-6, which makes the model depend on the targets' scale; set
/// [`FitcParams::jitter`] for that).
pub const DEFAULT_JITTER: f64 = 1e-6;

/// Validated FITC settings (from [`FitcParams`] by [`ParamGuard::check`](crate::ParamGuard::check)).
///
/// Defaults: seed 0, [`crate::OptimConfig::default`], all cores, no noise floor, jitter
/// [`Jitter::relative`]`(`[`DEFAULT_JITTER`]`)` on $K_{uu}$, pseudo-inputs m distinct training
/// inputs drawn at random and learned, lengthscales from a full GP on 1024 points
/// ([`crate::init::DEFAULT_START`]).
#[derive(Debug, Clone)]
pub struct ValidFitcParams {
    pub(crate) m: usize,
    pub(crate) training: TrainingSettings,
    pub(crate) jitter: Jitter,
    pub(crate) pseudo_inputs: Option<DMatrix<f64>>,
    pub(crate) fixed_pseudo_inputs: bool,
}

/// A FITC configuration (Snelson & Ghahramani's sparse pseudo-input GP), built by
/// [`super::Fitc::params`]; [`FitcParams::fit`] validates it and trains.
#[derive(Debug, Clone)]
#[must_use]
pub struct FitcParams(pub(crate) ValidFitcParams);

impl FitcParams {
    pub(super) fn new(m: usize) -> Self {
        Self(ValidFitcParams {
            m,
            training: TrainingSettings {
                lengthscales: init::DEFAULT_START,
                ..TrainingSettings::default()
            },
            jitter: Jitter::relative(DEFAULT_JITTER),
            pseudo_inputs: None,
            fixed_pseudo_inputs: false,
        })
    }

    /// An absolute jitter δ on the diagonal of $K_{uu}$, as in Snelson's code (the default is
    /// relative: 1e-6·σ0², see [`DEFAULT_JITTER`]).
    pub fn jitter(self, jitter: f64) -> Self {
        self.jitter_policy(Jitter::absolute(jitter))
    }

    /// The jitter policy for $K_{uu}$ (see [`Jitter`]).
    pub fn jitter_policy(mut self, jitter: Jitter) -> Self {
        self.0.jitter = jitter;
        self
    }

    /// Starting pseudo-inputs X̄ (m×D, one per row) instead of a random subset of the training inputs.
    pub fn pseudo_inputs(mut self, pseudo_inputs: DMatrix<f64>) -> Self {
        self.0.pseudo_inputs = Some(pseudo_inputs);
        self
    }

    /// Keeps the pseudo-inputs at their starting values and learns only the D + 2 hyperparameters.
    pub fn fixed_pseudo_inputs(mut self, fixed: bool) -> Self {
        self.0.fixed_pseudo_inputs = fixed;
        self
    }

    /// Starting lengthscales learned by a full GP on a seeded random subset of `subset` training
    /// points (all if fewer), as the paper does for Pumadyn-32nm (§5.2).
    pub fn initial_lengthscales_from_full_gp(self, subset: usize) -> Self {
        self.lengthscale_init(LengthscaleInit::FullGpSubset(subset))
    }
}

training_builder!(FitcParams);
impl_fit!(FitcParams, ValidFitcParams, FittedFitc);

impl ValidFitcParams {
    /// Validates the configuration (the parts that do not depend on the data).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for m = 0, a negative or non-finite noise floor or jitter, a bad
    /// optimiser budget, user pseudo-inputs without m rows, or bad initial lengthscales;
    /// [`Error::NonFinite`] for a NaN or infinity in the user pseudo-inputs.
    fn validate(&self) -> Result<()> {
        if self.m == 0 {
            return Err(Error::InvalidParameter {
                name: "m",
                reason: "FITC needs at least one pseudo-input".into(),
            });
        }
        self.training.validate()?;
        self.jitter.validate()?;
        if let Some(p) = &self.pseudo_inputs {
            if p.nrows() != self.m {
                return Err(Error::InvalidParameter {
                    name: "pseudo_inputs",
                    reason: format!("{} rows, but m = {}", p.nrows(), self.m),
                });
            }
            check_block(
                p,
                (self.m, "pseudo-inputs (rows, m)"),
                (p.ncols(), "pseudo-inputs (columns, D)"),
                "pseudo-inputs",
            )?;
        }
        Ok(())
    }

    /// `fitc`.
    pub fn name(&self) -> &'static str {
        "fitc"
    }

    /// The number of pseudo-inputs m.
    pub fn m(&self) -> usize {
        self.m
    }

    /// The settings shared with the other models (seed, optimiser, threads, noise floor, ℓ start).
    pub fn training(&self) -> &TrainingSettings {
        &self.training
    }
}
