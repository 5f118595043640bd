//! The exact ("full") Gaussian process (the SE-ARD covariance by default, or any kernel of
//! [`crate::kernel`]): the baseline of the paper's
//! experiments (§2, eq. 2–4).
//!
//! Training maximises the evidence p(y|θ) (eq. 4) over θ = [log ℓ, log σ0, p] (the shared head
//! of [`crate::hyperparameters`]) with the crate's conjugate-gradient optimiser, from the start
//! values of [`crate::init`] — from half ranges, and again from shorter lengthscales
//! ([`SHORTER_STARTS`]) while the fit calls more than half of the targets' variance noise, and
//! from √D times the half ranges where the fit's kernel connects no training rows (wide tables,
//! [`DISCONNECTED_R2`]).
//! Targets are centred by their mean, which is added back to the
//! predictions. Every evaluation costs O(n³) time and 24·n² bytes; for large n,
//! [`FullGpParams::hyperparameter_subset`] learns θ on a random subset and then conditions on all
//! the data (one Cholesky factorisation, 8·n² bytes), which is how the paper's Kin-40k baseline is
//! run on 10 000 points.
//!
//! - `params.rs`: the configuration ([`FullGpParams`] → [`ValidFullGpParams`]); `train.rs` its
//!   evidence, learning and conditioning; `start.rs` the §5.2 start the other models take;
//! - `evidence.rs`: −log p(y|θ) and its gradient ([`FullGpEvidence`]);
//! - `posterior.rs`: the conditioned model ([`FittedFullGp`]) and its predictions;
//! - `online.rs`: new samples added to a conditioned model ([`FittedFullGp::update`]);
//! - `saved.rs`: (feature `serde`) the fitted model's saved form.
//!
//! ```
//! use ssgp::{data::sinc_data, metrics, FullGp};
//! use ssgp::rand::{rngs::StdRng, SeedableRng};      // re-exported: no rand of your own needed
//!
//! let mut rng = StdRng::seed_from_u64(0);
//! let train = sinc_data(200, false, 0.05, &mut rng)?;
//! let test = sinc_data(200, true, 0.05, &mut rng)?;
//! // θ learned on 100 of the 200 points, then conditioned on all of them.
//! let fitted = FullGp::params().hyperparameter_subset(Some(100)).fit(&train)?;
//! let pred = fitted.predict(test.x())?;
//! assert!(metrics::nmse(test.y(), &pred, train.y_mean())? < 0.05);
//! # Ok::<(), ssgp::Error>(())
//! ```

mod evidence;
mod online;
mod params;
mod posterior;
#[cfg(feature = "serde")]
mod saved;
mod start;
mod train;

pub use evidence::{Evaluation, FullGpEvidence};
pub use params::{FullGpParams, ValidFullGpParams};
pub use posterior::FittedFullGp;
#[cfg(feature = "mpi")]
pub(crate) use start::lengthscales_on_gathered_rows;
pub(crate) use start::start;
pub use start::{lengthscales_from_subset, START_TOLERANCE};
pub use train::{
    LearnedHyperparameters, DISCONNECTED_R2, LONGER_START_ROWS_PER_HYPERPARAMETER, SHORTER_STARTS,
};

/// The full GP; start from [`FullGp::params`].
#[derive(Debug, Clone, Copy, Default)]
pub struct FullGp;

impl FullGp {
    /// Default settings (see [`ValidFullGpParams`]).
    pub fn params() -> FullGpParams {
        FullGpParams::default()
    }
}
