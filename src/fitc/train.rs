//! Training FITC: its evidence on the data, the start (lengthscales, variances, pseudo-inputs),
//! the optimiser, and the conditioning on the learned θ.

use super::evidence::FitcEvidence;
#[cfg(doc)]
use super::params::FitcParams;
use super::params::ValidFitcParams;
use super::posterior::FittedFitc;
#[cfg(doc)]
use crate::error::Error;
use crate::inducing::trained_methods;
#[cfg(doc)]
use crate::termination::TrainingSummary;

trained_methods! {
    ValidFitcParams => FitcEvidence, FittedFitc;
    evidence:
    /// The evidence of this configuration on `data`: θ ↦ (−log p(y|θ), ∇θ). With fixed
    /// pseudo-inputs they are the given ones, or the seed's random subset of the training inputs.
    ///
    /// Every input column of `data` is an input here, constant ones included, where `fit` leaves
    /// constant columns out: a fitted model's θ is for its `input_columns().used()`, so evaluate
    /// it on a `Dataset` of those columns (`Dataset::new(x.select_columns(used), y)`).
    ///
    /// # Errors
    /// With [`FitcParams::fixed_pseudo_inputs`](crate::fitc::FitcParams::fixed_pseudo_inputs)
    /// (only then are pseudo-inputs taken here): [`Error::DimensionMismatch`] if given ones do
    /// not have D columns, [`Error::InvalidParameter`] if m > n and none are given.
    /// [`Error::InvalidParameter`] naming `noise_floor` for a floor above
    /// [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO)·var(y);
    /// [`Error::Scale`] for an input column whose spread f64 cannot fit
    /// (a standard deviation outside 10⁻¹⁵²…10¹⁵²);
    /// [`Error::Allocation`] if an evaluation's buffers for this m cannot be allocated.
    fit:
    /// Learns θ on `data` by minimising −log p(y|θ) (targets centred by their mean) from the
    /// start values of [`crate::init`] (ℓ by the lengthscale strategy, σ0² = var(y),
    /// σn² = σ0²/4, pseudo-inputs a seeded random subset of m training inputs or the given ones).
    /// The returned model never has a worse evidence than θ₀.
    ///
    /// Input columns constant on `data` are left out (as if their lengthscale were infinite) and
    /// named in the training summary; given initial lengthscales are then for the remaining
    /// columns (given pseudo-inputs have all D columns).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `noise_floor` for a floor above
    /// [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO)·var(y);
    /// [`Error::DimensionMismatch`] if the given pseudo-inputs or lengthscales do not have D
    /// columns (used entries); [`Error::EmptyData`] if every input column is constant,
    /// [`Error::ConstantTargets`]; [`Error::InvalidParameter`] naming `m` if m > n and no
    /// pseudo-inputs are given; [`Error::Scale`] for an input column whose spread f64 cannot fit
    /// (a standard deviation outside 10⁻¹⁵²…10¹⁵²); the start's errors (as
    /// [`crate::full_gp::lengthscales_from_subset`]'s by default); [`Error::NotPositiveDefinite`] if the initial θ cannot be
    /// factored; [`Error::TrainingFailed`] if training failed (unless best effort was asked for);
    /// [`Error::Allocation`] if the n×m kernel matrices and m×m factors of an evaluation cannot
    /// be allocated (checked before anything else is computed).
    condition:
    /// A fitted model at given parameters, without training: conditions on `data` (targets
    /// centred by their mean) at θ in the **full** layout (`[log ℓ, log σ0, p_noise,
    /// vec(X̄ − 1cᵀ)]`, the pseudo-inputs relative to the column means c of `data`'s inputs,
    /// length D + 2 + mD, whatever [`FitcParams::fixed_pseudo_inputs`](crate::fitc::FitcParams::fixed_pseudo_inputs) says), using this
    /// configuration's jitter, noise floor and threads. The training summary is
    /// [`TrainingSummary::untrained`].
    ///
    /// Every input column of `data` is an input here, constant ones included, where `fit` leaves
    /// constant columns out: a fitted model's θ is for its `input_columns().used()`, so condition
    /// it on a `Dataset` of those columns (`Dataset::new(x.select_columns(used), y)`).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for a θ of the wrong length, [`Error::NonFinite`] for a NaN or
    /// infinity in θ, [`Error::NotPositiveDefinite`] if θ cannot be factored;
    /// [`Error::Allocation`] if the buffers for this m cannot be allocated.
}
