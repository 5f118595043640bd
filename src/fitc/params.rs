//! The FITC configuration: a builder and its validated twin (training is `train.rs`).

use super::posterior::FittedFitc;
use crate::inducing::{inducing_params, kind, InducingStart, Kind, Settings};
#[cfg(doc)]
use crate::linalg::Jitter;
use crate::params::TrainingSettings;

/// The default jitter on $K_{uu}$: δ = 1e-6·σ0², relative to the signal variance (Snelson's
/// code adds an absolute 1e-6, which makes the model depend on the targets' scale; set
/// [`FitcParams::jitter`] for that).
pub const DEFAULT_JITTER: f64 = 1e-6;

/// FITC to the code it shares with VFE.
pub(super) const FITC: Kind = kind!(
    Fitc,
    crate::optim::Method::ConjugateGradient,
    "FITC",
    "pseudo-input",
    "pseudo-inputs",
    "pseudo_inputs",
    "−log p(y|θ)"
);

/// Validated FITC settings (from [`FitcParams`] by [`ParamGuard::check`](crate::ParamGuard::check)).
///
/// Defaults: seed 0, [`crate::OptimConfig::default`], all cores, the noise floor
/// [`crate::params::DEFAULT_RELATIVE_NOISE_FLOOR`]·var(y), jitter
/// [`Jitter::relative`]`(`[`DEFAULT_JITTER`]`)` on $K_{uu}$, pseudo-inputs m distinct training
/// inputs drawn at random and learned, lengthscales from a full GP on 1024 points
/// ([`crate::init::DEFAULT_START`]).
#[derive(Debug, Clone)]
pub struct ValidFitcParams {
    pub(crate) training: TrainingSettings,
    /// m, the jitter, the given pseudo-inputs and whether they are fixed (the start is always
    /// the seed's random subset).
    pub(crate) inducing: Settings,
}

/// A FITC configuration (Snelson & Ghahramani's sparse pseudo-input GP), built by
/// [`super::Fitc::params`]; [`FitcParams::fit`] validates it and trains.
#[derive(Debug, Clone)]
#[must_use]
pub struct FitcParams(pub(crate) ValidFitcParams);

inducing_params! {
    FitcParams, ValidFitcParams => FittedFitc, FITC, DEFAULT_JITTER, InducingStart::Subset;
    "fitc", "pseudo-inputs", pseudo_inputs, fixed_pseudo_inputs;
    jitter:
    /// An absolute jitter δ on the diagonal of $K_{uu}$, as in Snelson's code (the default is
    /// relative: 1e-6·σ0², see [`DEFAULT_JITTER`]).
    initial_lengthscales_from_full_gp:
    /// Starting lengthscales learned by a full GP on a seeded random subset of `subset` training
    /// points (all if fewer), as the paper does for Pumadyn-32nm (§5.2).
}
