//! Training VFE: its bound on the data, the start (lengthscales, variances, inducing inputs),
//! the optimiser on −F, and the optimal variational posterior at the learned θ.

use super::evidence::VfeEvidence;
use super::params::ValidVfeParams;
#[cfg(doc)]
use super::params::VfeParams;
use super::posterior::FittedVfe;
#[cfg(doc)]
use crate::error::Error;
use crate::inducing::trained_methods;
#[cfg(doc)]
use crate::termination::TrainingSummary;

trained_methods! {
    ValidVfeParams => VfeEvidence, FittedVfe;
    evidence:
    /// The bound of this configuration on `data`: θ ↦ (−F(θ), ∇θ). With fixed inducing inputs
    /// they are the given ones, or their start ([`VfeParams::inducing_start`]: by default the
    /// k-means centres from the seed's random subset of the training inputs).
    ///
    /// Every input column of `data` is an input here, constant ones included, where `fit` leaves
    /// constant columns out: a fitted model's θ is for its `input_columns().used()`, so evaluate
    /// it on a `Dataset` of those columns (`Dataset::new(x.select_columns(used), y)`).
    ///
    /// # Errors
    /// With [`VfeParams::fixed_inducing_inputs`] (only then are inducing inputs taken here):
    /// [`Error::DimensionMismatch`] if given ones do not have D columns,
    /// [`Error::InvalidParameter`] if m > n and none are given.
    /// [`Error::InvalidParameter`] naming `noise_floor` for a floor above
    /// [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO)·var(y);
    /// [`Error::Scale`] for an input column whose spread f64 cannot fit
    /// (a standard deviation outside 10⁻¹⁵²…10¹⁵²); for
    /// fixed inducing inputs started by [`crate::vfe::InducingStart::Greedy`], the errors of the
    /// start's hyperparameters (as [`crate::full_gp::lengthscales_from_subset`] by default);
    /// [`Error::Allocation`] if an evaluation's buffers for this m cannot be allocated.
    fit:
    /// Learns θ on `data` by minimising −F(θ) (targets centred by their mean) from the start
    /// values of [`crate::init`] (ℓ by the lengthscale strategy, σ0² = var(y), σn² = σ0²/4,
    /// inducing inputs the given ones or [`VfeParams::inducing_start`]'s: by default k-means
    /// centres from a seeded random subset of m training inputs), by default with L-BFGS
    /// ([`crate::vfe::DEFAULT_OPTIMIZER`]). The returned model never has a worse bound than θ₀.
    ///
    /// Input columns constant on `data` are left out (as if their lengthscale were infinite) and
    /// named in the training summary; given initial lengthscales are then for the remaining
    /// columns (given inducing inputs have all D columns).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `noise_floor` for a floor above
    /// [`MAX_NOISE_FLOOR_RATIO`](crate::params::MAX_NOISE_FLOOR_RATIO)·var(y);
    /// [`Error::DimensionMismatch`] if the given inducing inputs or lengthscales do not have D
    /// columns (used entries); [`Error::EmptyData`] if every input column is constant,
    /// [`Error::ConstantTargets`]; [`Error::InvalidParameter`] naming `m` if m > n and no
    /// inducing inputs are given; [`Error::Scale`] for an input column whose spread f64 cannot
    /// fit (a standard deviation outside 10⁻¹⁵²…10¹⁵²); the start's errors (as
    /// [`crate::full_gp::lengthscales_from_subset`]'s by default); [`Error::NotPositiveDefinite`] if the initial θ cannot be
    /// factored; [`Error::TrainingFailed`] if training failed (unless best effort was asked for);
    /// [`Error::Allocation`] if the n×m kernel matrices and m×m factors of an evaluation cannot
    /// be allocated (checked before anything else is computed).
    condition:
    /// A fitted model at given parameters, without training: conditions on `data` (targets
    /// centred by their mean) at θ in the **full** layout (`[log ℓ, log σ0, p_noise,
    /// vec(X̄ − 1cᵀ)]`, the inducing inputs relative to the column means c of `data`'s inputs,
    /// length D + 2 + mD, whatever [`VfeParams::fixed_inducing_inputs`] says), using this
    /// configuration's jitter, noise floor and threads. The training summary is
    /// [`TrainingSummary::untrained`] at −F(θ).
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
