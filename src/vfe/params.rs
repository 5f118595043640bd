//! The VFE configuration: a builder and its validated twin (training is `train.rs`).

use super::posterior::FittedVfe;
pub use crate::inducing::InducingStart;
use crate::inducing::{inducing_params, kind, Kind, Settings};
#[cfg(doc)]
use crate::linalg::Jitter;
use crate::optim::Method;
use crate::params::TrainingSettings;

/// The default jitter on $K_{uu}$: δ = 1e-6, relative to σ0² (FITC's default too).
pub const DEFAULT_JITTER: f64 = 1e-6;

/// VFE's optimiser by default: L-BFGS keeping 50 pairs ([`Method::Lbfgs`], GPflow's optimiser with
/// a longer memory; the other models' default is [`Method::ConjugateGradient`]). The bound's
/// mD + D + 2 parameters are dominated by the m×D inducing inputs, coupled through $K_{uu}$:
/// conjugate gradients and L-BFGS with scipy's 10 pairs are still improving it at the default
/// budget of 1000 evaluations, and 50 pairs get further in the same evaluations. On Kin-40k with
/// the default start and budget, seeds 1–3, test NMSE / MNLP / −F:
///
/// | m | conjugate gradients | L-BFGS, 50 pairs |
/// |---|---|---|
/// | 50 | 0.1069 / 0.1101 / 0.1083, +0.360 / +0.374 / +0.363 | 0.1045 / 0.1050 / 0.1031, +0.352 / +0.353 / +0.346 |
/// | 100 | 0.0791 / 0.0795 / 0.0802, +0.211 / +0.212 / +0.216 | 0.0767 / 0.0786 / 0.0776, +0.200 / +0.208 / +0.204 |
/// | 200 | 0.0571 / 0.0571 / 0.0568, +0.049 / +0.049 / +0.048 | 0.0559 / 0.0555 / 0.0559, +0.041 / +0.039 / +0.041 |
///
/// (at m = 100, −F 4910 / 4911 / 4921 against 4870 / 4884 / 4877; 10, 20, 30 and 100 pairs gave
/// 0.0783, 0.0783, 0.0773 and 0.0775 on seed 1). An evaluation costs the same either way. Set
/// another with [`VfeParams::optimizer`] (or an [`crate::optim::OptimConfig`] whose `method` is
/// `Some`; its default `None` leaves VFE on this one).
pub const DEFAULT_OPTIMIZER: Method = Method::Lbfgs { memory: 50 };

/// Where VFE's inducing inputs start by default: the k-means centres of the training inputs
/// after at most 20 Lloyd rounds from the seed's random subset (O(nmD) a round, well under one
/// evaluation of the bound). On Kin-40k with 100 inducing inputs and the default budget (with
/// conjugate gradients, before [`DEFAULT_OPTIMIZER`]) it gives
/// test NMSE 0.0794 / 0.0794 / 0.0801 and MNLP +0.213 / +0.212 / +0.215 for seeds 1–3, against
/// 0.0799 / 0.0806 / 0.0837 and +0.214 / +0.218 / +0.232 from the random subset (at 50 and 200
/// inducing inputs it is about 1 % worse in NMSE instead: [`InducingStart::Subset`] is the
/// alternative). The greedy conditional-variance start ([`InducingStart::Greedy`]) gives 0.0807 /
/// 0.0806 / 0.0802 and +0.218 / +0.218 / +0.215 there.
pub const DEFAULT_INDUCING_START: InducingStart = InducingStart::KMeans(20);

/// VFE to the code it shares with FITC.
pub(super) const VFE: Kind = kind!(
    Vfe,
    DEFAULT_OPTIMIZER,
    "VFE",
    "inducing input",
    "inducing inputs",
    "inducing_inputs",
    "−F"
);

/// Validated VFE settings (from [`VfeParams`] by [`ParamGuard::check`](crate::ParamGuard::check)).
///
/// Defaults: seed 0, [`crate::OptimConfig::default`] but L-BFGS ([`DEFAULT_OPTIMIZER`]), all cores, the noise floor
/// [`crate::params::DEFAULT_RELATIVE_NOISE_FLOOR`]·var(y), jitter
/// [`Jitter::relative`]`(`[`DEFAULT_JITTER`]`)` on $K_{uu}$, inducing inputs started at the k-means
/// centres of the inputs ([`DEFAULT_INDUCING_START`]) and learned, lengthscales from a full GP on
/// 1024 points ([`crate::init::DEFAULT_START`]).
#[derive(Debug, Clone)]
pub struct ValidVfeParams {
    pub(crate) training: TrainingSettings,
    /// m, the jitter, the given inducing inputs, whether they are fixed, and their start.
    pub(crate) inducing: Settings,
}

/// A VFE configuration (Titsias' collapsed variational bound, GPflow's `SGPR`), built by
/// [`super::Vfe::params`]; [`VfeParams::fit`] validates it and trains.
#[derive(Debug, Clone)]
#[must_use]
pub struct VfeParams(pub(crate) ValidVfeParams);

inducing_params! {
    VfeParams, ValidVfeParams => FittedVfe, VFE, DEFAULT_JITTER, DEFAULT_INDUCING_START;
    "vfe", "inducing inputs", inducing_inputs, fixed_inducing_inputs;
    jitter:
    /// An absolute jitter δ on the diagonal of $K_{uu}$ (the default is relative: 1e-6·σ0², see
    /// [`DEFAULT_JITTER`]); 0 for none.
    initial_lengthscales_from_full_gp:
    /// Starting lengthscales learned by a full GP on a seeded random subset of `subset` training
    /// points (all if fewer).
}

impl VfeParams {
    /// Where the inducing inputs start when none are given (default
    /// [`DEFAULT_INDUCING_START`], k-means).
    pub fn inducing_start(mut self, start: InducingStart) -> Self {
        self.0.inducing.start = start;
        self
    }
}
