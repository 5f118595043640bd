//! Sparse Spectrum Gaussian Process regression (Lázaro-Gredilla et al., JMLR 2010).
//!
//! The model (eq. 5): f(x) = Σ_r a_r cos(2π s_rᵀx) + b_r sin(2π s_rᵀx) with a_r, b_r ~ N(0, σ0²/m),
//! i.e. a GP with the stationary covariance k(x, x') = (σ0²/m) Σ_r cos(2π s_rᵀ(x − x')) (eq. 6),
//! a Monte Carlo approximation of the SE-ARD kernel when the spectral points s_r are drawn from
//! its spectral density (eq. 12). Training maximises the evidence (eq. 8) over the spectral
//! points, the lengthscales, σ0² and σn² jointly (§4.2); prediction is eq. 7.
//!
//! - [`features`]: the spectral points and the design matrix Φ (`trig.rs`: its sines and cosines);
//! - `params.rs`: the configuration ([`SsgpParams`] → [`ValidSsgpParams`]); `train.rs` the
//!   evidence, training and conditioning it gives ([`ValidSsgpParams::fit`]);
//! - `remedy.rs`: the calibration check ([`CalibrationGuard`], [`Remedy`](crate::Remedy)) and
//!   `multi_remedy.rs` its multi-output form;
//! - `evidence.rs`: −log p(y|θ) and its gradient ([`SsgpEvidence`]), a pure function of
//!   (data, θ), computed over row chunks (`chunks.rs`);
//! - `posterior.rs`: the fitted model ([`FittedSsgp`]), its predictions and posterior samples;
//! - [`multi`]: P outputs on shared spectral points (one factor of A), `multi_posterior.rs` the
//!   fitted model ([`FittedMultiSsgp`]);
//! - `online.rs`: online updates of the posterior ([`FittedSsgp::update`], Incremental SSGP);
//! - `standardized.rs`: posterior samples of an SSGP behind a scaler ([`StandardizedSample`]);
//! - `saved.rs`: (feature `serde`) the fitted models' saved forms.
//!
//! ```
//! use ssgp::{data::sinc_data, metrics, ssgp::Ssgp};
//! use ssgp::rand::{rngs::StdRng, SeedableRng};      // re-exported: no rand of your own needed
//!
//! let mut rng = StdRng::seed_from_u64(0);
//! let train = sinc_data(100, false, 0.05, &mut rng)?;
//! let test = sinc_data(200, true, 0.05, &mut rng)?;
//! let fitted = Ssgp::params(10).seed(1).fit(&train)?;
//! let pred = fitted.predict(test.x())?;
//! let nmse = metrics::nmse(test.y(), &pred, train.y_mean())?;
//! assert!(nmse < 0.05);
//! # Ok::<(), ssgp::Error>(())
//! ```

mod chunks;
pub(crate) mod evidence;
pub mod features;
pub mod multi;
mod multi_posterior;
mod multi_remedy;
mod online;
mod params;
pub(crate) mod posterior;
pub(crate) mod remedy;
#[cfg(feature = "serde")]
mod saved;
mod standardized;
mod train;
mod trig;

pub use chunks::{DEFAULT_CACHE_BYTES, DEFAULT_CHUNK_ROWS};
pub use evidence::SsgpEvidence;
pub use multi::{MultiSsgpEvidence, MultiSsgpHyperparameters};
pub use multi_posterior::FittedMultiSsgp;
pub use params::{NoiseBound, SsgpParams, ValidSsgpParams};
pub use posterior::{FittedSsgp, PosteriorSample};
pub use remedy::CalibrationGuard;
pub use standardized::StandardizedSample;
#[cfg(feature = "mpi")]
pub(crate) use train::check_ssgp_target_spread;
pub use train::TARGET_SPREAD;

use crate::hyperparameters::Hyperparameters;
use nalgebra::DMatrix;

/// Entry point: `Ssgp::params(m)` starts the configuration of an SSGP with m spectral points
/// (2m basis functions).
#[derive(Debug, Clone, Copy)]
pub struct Ssgp;

impl Ssgp {
    /// The default configuration for `m` spectral points; see [`ValidSsgpParams`].
    pub fn params(m: usize) -> SsgpParams {
        SsgpParams::new(m)
    }
}

/// SSGP's hyperparameters in natural units: the shared ℓ, σ0², σn² and the unit frequencies W.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SsgpHyperparameters {
    /// Lengthscales ℓ (D), signal variance σ0², noise variance σn².
    pub hyper: Hyperparameters,
    /// Unit frequencies W (m×D); spectral points s_r = W_r ⊘ (2πℓ).
    pub unit_frequencies: DMatrix<f64>,
}
