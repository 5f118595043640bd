//! The VFE configuration: a builder and its validated twin (training is `train.rs`).

use super::posterior::FittedVfe;
use crate::error::{Error, Result};
use crate::hyperparameters::check_block;
use crate::init::{self, LengthscaleInit};
use crate::linalg::Jitter;
use crate::params::{impl_fit, training_builder, TrainingSettings};
use nalgebra::DMatrix;

/// The default jitter on $K_{uu}$: δ = 1e-6, relative to σ0² (FITC's default too).
pub const DEFAULT_JITTER: f64 = 1e-6;

/// Where the inducing inputs start when none are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InducingStart {
    /// m distinct training inputs drawn at random with the seed (FITC's start).
    #[default]
    Subset,
    /// Lloyd's k-means centres of the training inputs (in inputs scaled by their standard
    /// deviations) after at most this many rounds, started from [`InducingStart::Subset`]:
    /// O(nmD) per round.
    KMeans(usize),
}

/// Validated VFE settings (from [`VfeParams`] by [`ParamGuard::check`](crate::ParamGuard::check)).
///
/// Defaults: seed 0, [`crate::OptimConfig::default`], all cores, no noise floor, jitter
/// [`Jitter::relative`]`(`[`DEFAULT_JITTER`]`)` on $K_{uu}$, inducing inputs m distinct training
/// inputs drawn at random (the seed's) and learned, lengthscales from a full GP on 1024 points
/// ([`crate::init::DEFAULT_START`]).
#[derive(Debug, Clone)]
pub struct ValidVfeParams {
    pub(crate) m: usize,
    pub(crate) training: TrainingSettings,
    pub(crate) jitter: Jitter,
    pub(crate) inducing_inputs: Option<DMatrix<f64>>,
    pub(crate) fixed_inducing_inputs: bool,
    pub(crate) start: InducingStart,
}

/// A VFE configuration (Titsias' collapsed variational bound, GPflow's `SGPR`), built by
/// [`super::Vfe::params`]; [`VfeParams::fit`] validates it and trains.
#[derive(Debug, Clone)]
#[must_use]
pub struct VfeParams(pub(crate) ValidVfeParams);

impl VfeParams {
    pub(super) fn new(m: usize) -> Self {
        Self(ValidVfeParams {
            m,
            training: TrainingSettings {
                lengthscales: init::DEFAULT_START,
                ..TrainingSettings::default()
            },
            jitter: Jitter::relative(DEFAULT_JITTER),
            inducing_inputs: None,
            fixed_inducing_inputs: false,
            start: InducingStart::default(),
        })
    }

    /// An absolute jitter δ on the diagonal of $K_{uu}$ (the default is relative: 1e-6·σ0², see
    /// [`DEFAULT_JITTER`]); 0 for none.
    pub fn jitter(self, jitter: f64) -> Self {
        self.jitter_policy(Jitter::absolute(jitter))
    }

    /// The jitter policy for $K_{uu}$ (see [`Jitter`]).
    pub fn jitter_policy(mut self, jitter: Jitter) -> Self {
        self.0.jitter = jitter;
        self
    }

    /// Starting inducing inputs X̄ (m×D, one per row) instead of a random subset of the training
    /// inputs.
    pub fn inducing_inputs(mut self, inducing_inputs: DMatrix<f64>) -> Self {
        self.0.inducing_inputs = Some(inducing_inputs);
        self
    }

    /// Where the inducing inputs start when none are given (default
    /// [`InducingStart::Subset`]).
    pub fn inducing_start(mut self, start: InducingStart) -> Self {
        self.0.start = start;
        self
    }

    /// Keeps the inducing inputs at their starting values and learns only the D + 2
    /// hyperparameters.
    pub fn fixed_inducing_inputs(mut self, fixed: bool) -> Self {
        self.0.fixed_inducing_inputs = fixed;
        self
    }

    /// Starting lengthscales learned by a full GP on a seeded random subset of `subset` training
    /// points (all if fewer).
    pub fn initial_lengthscales_from_full_gp(self, subset: usize) -> Self {
        self.lengthscale_init(LengthscaleInit::FullGpSubset(subset))
    }
}

training_builder!(VfeParams);
impl_fit!(VfeParams, ValidVfeParams, FittedVfe);

impl ValidVfeParams {
    /// Validates the configuration (the parts that do not depend on the data).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for m = 0, a negative or non-finite noise floor or jitter, a bad
    /// optimiser budget, user inducing inputs without m rows, or bad initial lengthscales;
    /// [`Error::NonFinite`] for a NaN or infinity in the user inducing inputs.
    fn validate(&self) -> Result<()> {
        if self.m == 0 {
            return Err(Error::InvalidParameter {
                name: "m",
                reason: "VFE needs at least one inducing input".into(),
            });
        }
        self.training.validate()?;
        self.jitter.validate()?;
        if let Some(p) = &self.inducing_inputs {
            if p.nrows() != self.m {
                return Err(Error::InvalidParameter {
                    name: "inducing_inputs",
                    reason: format!("{} rows, but m = {}", p.nrows(), self.m),
                });
            }
            check_block(
                p,
                (self.m, "inducing inputs (rows, m)"),
                (p.ncols(), "inducing inputs (columns, D)"),
                "inducing inputs",
            )?;
        }
        Ok(())
    }

    /// `vfe`.
    pub fn name(&self) -> &'static str {
        "vfe"
    }

    /// The number of inducing inputs m.
    pub fn m(&self) -> usize {
        self.m
    }

    /// The settings shared with the other models (seed, optimiser, threads, noise floor, ℓ start).
    pub fn training(&self) -> &TrainingSettings {
        &self.training
    }
}
